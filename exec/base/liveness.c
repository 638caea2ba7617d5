/* liveness.c — the backward pass over a batch (the program generator's
 * first, and the interpreter's): which pending ports some consumer still
 * to be computed in the batch reads, and which are dead. */
#include "runtime.h"

/* Backward pass: live consumers per port within the batch, and which ports
 * are dead.  Visibility comes from the batch itself (a port without a
 * RELEASE entry is still the application's), never from reference counts,
 * which the application keeps changing while the batch waits: so the
 * decisions are a function of the batch's trace key, as the trace cache
 * needs. */
bool pe_port_dead_in_batch(const pe_port *p) { return p->released_in_batch && p->live_consumers == 0; }

void pe_find_live_consumers(const pe_entry *entries, size_t n, uint32_t epoch)
{
    for (size_t i = 0; i < n; i++)
        if (entries[i].kind == PE_ENTRY_COMPUTE) pe_port_at(entries[i].port)->live_consumers = 0;
    for (size_t i = n; i-- > 0;) {
        if (entries[i].kind != PE_ENTRY_COMPUTE) continue;
        pe_port *p = pe_port_at(entries[i].port);
        if (p->state != PE_PORT_PENDING || pe_port_dead_in_batch(p)) continue;
        for (int k = 0; k < p->n_in; k++) {
            pe_port *q = pe_port_at(p->in[k]);
            if (q->state == PE_PORT_PENDING && q->batch == epoch) q->live_consumers++;
        }
    }
}
