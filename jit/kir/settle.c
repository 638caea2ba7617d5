/* settle.c — what a program's run makes of the ports it computed, read from
 * the program (which members its kernel stored, which share a store): each
 * becomes a value or an expression again (the rules: exec/base/deferred.c,
 * which keeps the ports' side of it).  The executors call it after a
 * kernel, and after a sequence for the views its kernels read through. */
#include "program.h"
#include "../../exec/base/runtime.h"

static bool stored(const pe_program *prog, uint32_t port)
{
    for (int i = 0; i < prog->kir->n_params; i++) {
        kir_param_kind kind = prog->kir->params[i].kind;
        if ((kind == KIR_OUT || kind == KIR_OUT_PARTIAL) && prog->bind[i] == port) return true;
    }
    return false;
}

static int member_position(const pe_program *prog, uint32_t port, int before)
{
    for (int m = before; m-- > 0;)
        if (prog->members[m] == port) return m;
    return -1;
}

void pe_kernel_settle(const pe_program *prog)
{
    bool kept[KIR_MAX_BODY] = {0};
    /* consumers come after their producers: one backward pass */
    for (int m = prog->n_members; m-- > 0;) {
        pe_port *p = pe_port_at(prog->members[m]);
        if (p->state == PE_PORT_INVALID) continue;
        int owner = prog->shares ? prog->shares[m] : -1;
        bool filled = stored(prog, prog->members[m]);
        if (!filled && owner >= 0 && pe_port_share_value(p, prog->members[owner])) {
            filled = true; /* another member's store */
            pe_counters.stores_shared++;
        }
        if (filled) {
            /* computed into a reader's buffer (no consumer in the batch: api_read.c) */
            kept[m] = pe_port_lent_for_reader(p) && !p->released_in_batch;
            if (kept[m]) pe_port_give_back_lent(p);
        } else if (!p->released_in_batch && pe_op_table[p->op].kind != PE_KIND_REDUCE) {
            kept[m] = true; /* the application holds it; nothing demanded it */
        }
        if (!kept[m]) {
            p->state = PE_PORT_READY;
            pe_port_drop_inputs(p);
            pe_port_update_retained(p); /* a value expressions of earlier batches read */
            continue;
        }
        pe_port_defer(prog->members[m]);
        for (int k = 0; k < p->n_in; k++) {
            int producer = member_position(prog, p->in[k], m);
            if (producer >= 0) kept[producer] = true;
        }
    }
}

static void view_settle(uint32_t idx)
{
    pe_port *p = pe_port_at(idx);
    if (p->state != PE_PORT_PENDING) return; /* the interpreter computed it after all (a kernel's fallback) */
    if (p->released_in_batch && p->expr_readers == 0) { /* nobody's */
        pe_port_drop_inputs(p);
        p->state = PE_PORT_READY;
        return;
    }
    pe_port_defer(idx);
}

void pe_views_settle(const pe_program_seq *seq)
{
    for (size_t i = seq->n; i-- > 0;) /* readers first: a view another view reads stays its expression */
        if (seq->progs[i].kind == PE_PROG_VIEW) view_settle(seq->progs[i].port);
}
