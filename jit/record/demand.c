/* demand.c — a deferred value used again (docs/architecture.md, "Values on
 * demand").  A kernel stores only what is demanded (exec/base/deferred.c);
 * a value the application held but nothing demanded is an expression over
 * inputs it keeps.  When a request takes it as an operand, or a read or map
 * needs it, its COMPUTE entry goes back into the batch being recorded (its
 * deferred inputs' first), so it is computed again fused with the new work.
 * Whether that batch also stores it is the cost model's choice: the work to
 * compute it once more from its expression, against a store now and a load
 * at the next use.  So a value read again and again is stored after its
 * first recompute when it is expensive, and a chain of held values deferred
 * batch after batch is cut once its expression costs more than storing it. */
#include "record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"

/* ops.def's cost units (adds per element) a CPU thread does in the time it
 * streams one byte: 1.5e10 units/s against 12e9 bytes/s (jit/sched/placement.c). */
#define UNITS_PER_BYTE 1.25

static uint32_t visit_stamp;

/* The work per element of computing p from what is stored: its deferred
 * closure's ops (f64 at half the lanes) and the loads of the values it reads;
 * each deferred port counted once (a DAG). */
static double recompute_units(pe_port *p)
{
    p->visit = visit_stamp;
    double op = pe_op_table[p->op].cost > 0 ? pe_op_table[p->op].cost : 1;
    double units = p->ctype == PE_F64 ? 2 * op : op;
    for (int k = 0; k < p->n_in; k++) {
        pe_port *q = pe_port_at(p->in[k]);
        if (q->visit == visit_stamp) continue;
        q->visit = visit_stamp;
        if (q->state == PE_PORT_DEFERRED) units += recompute_units(q);
        else if (!pe_port_is_uniform(q)) units += UNITS_PER_BYTE * pe_dtype_size((pe_dtype)q->dtype);
    }
    return units;
}

static bool worth_storing(pe_port *p)
{
    visit_stamp++;
    return recompute_units(p) > 2 * UNITS_PER_BYTE * pe_dtype_size((pe_dtype)p->dtype);
}

/* Back into the queue, producers first.  False when out of memory (p stays
 * deferred; inputs already queued are computed like any pending port). */
static bool requeue(uint32_t idx)
{
    pe_port *p = pe_port_at(idx);
    for (int k = 0; k < p->n_in; k++)
        if (pe_port_at(p->in[k])->state == PE_PORT_DEFERRED && !requeue(p->in[k])) return false;
    p->state = PE_PORT_PENDING;
    if (!pe_queue_push(PE_ENTRY_COMPUTE, idx)) {
        p->state = PE_PORT_DEFERRED;
        return false;
    }

    p->prof_stored = p->prof_read = false; /* the profiler's marks are the new computation's */
    pe_counters.values_recomputed++;
    /* No RELEASE entry, even where only expressions hold it: computed for
     * the consumer that queued it, it stays an expression for the others
     * (released in the batch, it would be a value without a buffer that
     * another expression still reads). */
    return true;
}

bool pe_demand(const pe_site *s, uint32_t idx, bool needed_stored, const char *api)
{
    pe_port *p = pe_port_at(idx);
    /* In a batch already submitted, with consumers there: whether that batch
     * stores it is the program generator's choice, known once it ran (a
     * consumer recorded now cannot be added to it).  Without consumers there
     * it is stored, and nothing waits. */
    if (p->state == PE_PORT_PENDING && p->batch != pe_rec.batch_epoch && p->refs_int > 1 && !p->demanded_in_batch &&
        !p->released_in_batch)
        pe_queue_wait_port(p);
    if (p->state == PE_PORT_DEFERRED) {
        /* computed twice: the site's next values are stored where they are
         * computed (deferred.c).  Only the value used again: its deferred
         * inputs computed again with it were means, not uses */
        pe_site_record *sr = pe_site_record_of(p->site);
        if (sr) sr->recomputed_in = pe_rt.life;
        bool store = needed_stored || worth_storing(p);
        if (!requeue(idx) || (store && !pe_queue_push(PE_ENTRY_HINT, idx))) {
            pe_raise(s, PE_E_NOMEM, api, "out of memory queueing a value to compute again");
            return false;
        }
        return true;
    }
    /* read or mapped where it is recorded: stored even if the batch consumes it too */
    if (needed_stored && p->state == PE_PORT_PENDING && p->batch == pe_rec.batch_epoch && !p->demanded_in_batch &&
        !pe_queue_push(PE_ENTRY_HINT, idx)) {
        pe_raise(s, PE_E_NOMEM, api, "out of memory queueing a read");
        return false;
    }
    return true;
}

/* Past the retain limit: every expression that reads a value only
 * expressions hold is computed and stored in the batch being recorded, so
 * that it lets go of that value. */
void pe_relieve_retained(const pe_site *s)
{
    size_t stored = 0;
    int64_t before = pe_retention.bytes;
    pe_expressions_compact();
    for (size_t i = 0; i < pe_retention.n_expressions; i++) {
        uint32_t idx = pe_retention.expressions[i];
        pe_port *p = pe_port_at(idx);
        if (p->state != PE_PORT_DEFERRED) continue; /* queued again already */
        bool reads_retained = false;
        for (int k = 0; k < p->n_in; k++) reads_retained |= pe_port_at(p->in[k])->retained;
        if (reads_retained && pe_demand(s, idx, true, "the retain limit")) stored++;
    }
    pe_retention.relieved_epoch = pe_rec.batch_epoch;
    if (stored) pe_queue_flush(); /* the values go once the batch ran */
    pe_log_message(PE_LOG_DEBUG, "%.1f MB of values only expressions hold (PE_RETAIN_LIMIT %.1f MB): %zu of them "
                   "computed and stored", before / 1e6, pe_retention.limit / 1e6, stored);
}

