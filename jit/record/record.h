/* record.h — the recorder's module (jit/record): requests become ports and
 * queue entries (record.c), record-time folds (fold.c), the work queue and
 * its triggers (queue.c), scopes (scope.c), the application's handles
 * (handle.c); the static IR's facts are irload.h. */
#ifndef PE_RECORD_RECORD_H
#define PE_RECORD_RECORD_H

#include "../../exec/base/runtime.h"

/* ------------------------------------------------------------ handle.c */

/* The port behind a handle, or NULL after raising PE_E_HANDLE (null, foreign,
 * stale or released handle).  `api` names the entry point in the message. */
pe_port *pe_port_lookup(const pe_site *s, pe_array a, const char *api, uint32_t *idx_out);
void pe_port_release_app(uint32_t idx, const pe_site *s); /* -1 application reference */
/* The same without a PE_MACRO body's notes: a reference the runtime's own
 * objects hold (the derivative tape's), not the body's. */
void pe_port_drop_app_ref(uint32_t idx, const pe_site *s);
/* The program contradicted a release the static IR made at release_site:
 * it used the handle again at use_site (through `api`), or released it
 * itself.  That site's marks are ignored from now on (its record's
 * release_refuted, which irload.c reads); one warning per run. */
void pe_ir_refuted(const pe_site *release_site, const pe_site *use_site, const char *api);
bool pe_require_init(const pe_site *s, const char *api);

/* ------------------------------------------------------------- record.c */

/* Registers a newly made port with the application: one app reference, the
 * current scope, a handle. */
pe_array pe_publish(uint32_t idx);
/* A new invalid array carrying an error (raised: the read says
 * PE_E_INVALID; else the read is its first report). */
pe_array pe_publish_invalid(const pe_site *s, pe_op op, pe_status code, bool raised, const char *message);
/* An invalid result for a failed request (the error was raised already). */
pe_array pe_invalid_result(const pe_site *s, pe_op op, pe_status code);
/* Looks up the operands of a request.  Returns false when a handle was bad
 * (error raised) or an operand is invalid; *result then holds the answer. */
bool pe_resolve_operands(const pe_site *s, pe_op op, const pe_array *ins, int n, const char *api,
                         pe_port **in, uint32_t *in_idx, pe_array *result);
/* Makes a pending port for `op` over the operands and queues its COMPUTE
 * entry (pe_enqueue_op: unpublished, UINT32_MAX after raising), and
 * publishes it (pe_record_op).  The caller validated everything. */
uint32_t pe_enqueue_op(const pe_site *s, pe_op op, const uint32_t *in_idx, int n, pe_dtype dtype,
                       pe_dtype ctype, int rank, const int64_t *shape, const int64_t *params, int n_params);
pe_array pe_record_op(const pe_site *s, pe_op op, const uint32_t *in_idx, int n, pe_dtype dtype,
                      pe_dtype ctype, int rank, const int64_t *shape, const int64_t *params, int n_params);
pe_array pe_record_map(const pe_site *s, pe_op op, const pe_array *ins, int n, pe_dtype explicit_dtype,
                       const char *api);
pe_array pe_record_reduce(const pe_site *s, pe_op op, const pe_array *ins, int n, int axis, bool per_axis,
                          const char *api);
/* Validates a user-given shape; raises and returns false if bad. */
bool pe_check_shape(const pe_site *s, const char *api, int rank, const int64_t *shape);
bool pe_check_dtype(const pe_site *s, const char *api, pe_dtype t);
/* Creates a constant port (not published). */
uint32_t pe_make_constant(pe_dtype t, int rank, const int64_t *shape, double v, bool weak, const pe_site *s);
void pe_release_temps(const pe_array *ins, int n);

/* -------------------------------------------------------------- demand.c */

/* Makes port idx computable by the batch being recorded: a deferred value's
 * COMPUTE goes back into the queue (its deferred inputs' first), stored too
 * when `needed_stored` (a read or map) or when the cost model says so; a
 * value pending in this batch that must be stored gets a HINT entry.
 * False after raising PE_E_NOMEM. */
bool pe_demand(const pe_site *s, uint32_t idx, bool needed_stored, const char *api);
/* Stores the expressions that hold values nothing else holds, once those
 * pass PE_RETAIN_LIMIT, and submits the batch; at most once a batch. */
void pe_relieve_retained(const pe_site *s);
static inline void pe_check_retained(const pe_site *s)
{
    if (pe_retention.bytes > pe_retention.limit && pe_retention.relieved_epoch != pe_rec.batch_epoch && !pe_retention.check_held)
        pe_relieve_retained(s);
}

/* ---------------------------------------------------------------- fold.c */

/* What a MAP request over valid operands folds into: nothing (record the
 * op), a uniform constant (value, weak), one of its operands, or another op
 * over operand 0 (pow(x, 2) -> mul(x, x), pow(x, 0.5) -> sqrt(x)).  Decides
 * only; the recorder (pe_fold_map) and the ahead-of-time speculation
 * (aot.c) act on it, so both see the same requests. */
typedef enum { PE_FOLD_NONE, PE_FOLD_CONSTANT, PE_FOLD_OPERAND, PE_FOLD_REWRITE } pe_fold_kind;
typedef struct {
    pe_fold_kind kind;
    double value; /* CONSTANT */
    bool weak;    /* CONSTANT */
    int operand;  /* OPERAND */
    pe_op op;     /* REWRITE */
} pe_fold_plan;
pe_fold_plan pe_fold_decide(pe_op op, pe_port *const *in, int n, pe_dtype dtype, pe_dtype ctype, int rank,
                            const int64_t *shape);
/* Constant folding and strength reduction of a MAP request whose operands are
 * valid.  Returns a port index to answer with (a new constant or an operand,
 * with a reference the caller publishes), or UINT32_MAX to record the op. */
uint32_t pe_fold_map(const pe_site *s, pe_op op, pe_port *const *in, const uint32_t *in_idx, int n,
                     pe_dtype dtype, pe_dtype ctype, int rank, const int64_t *shape);

/* --------------------------------------------------------------- queue.c */

bool pe_queue_push(pe_entry_kind kind, uint32_t port);
bool pe_queue_grow(void); /* room for one more entry; false when out of memory */
/* pe_queue_push without extending the batch's trace key: the caller keys
 * the entries it queued before anything else is queued (a replayed section,
 * jit/macro: pe_trace_append_piece).  Inline: a replay queues an entry per
 * operation. */
static inline bool pe_queue_push_unkeyed(pe_entry_kind kind, uint32_t port)
{
    if (pe_rec.queue_len == pe_rec.queue_cap && !pe_queue_grow()) return false;
    pe_rec.queue[pe_rec.queue_len] = (pe_entry){(uint8_t)kind, port};
    pe_port *p = pe_port_at(port);
    if (kind == PE_ENTRY_COMPUTE) {
        p->batch = pe_rec.batch_epoch;
        p->queue_pos = (uint32_t)pe_rec.queue_len;
        p->released_in_batch = false;
        p->demanded_in_batch = false;
        p->refs_int++; /* the entry's own reference */
    } else if (kind == PE_ENTRY_HINT) {
        /* a hint for a batch already submitted changes nothing */
        if (p->state == PE_PORT_PENDING && p->batch == pe_rec.batch_epoch) p->demanded_in_batch = true; /* stored */
    } else if (kind == PE_ENTRY_RELEASE) {
        p->released_in_batch = true;
    } else if (kind == PE_ENTRY_REVIVE) {
        p->released_in_batch = false; /* visible after the batch again: stored */
    }
    pe_rec.queue_len++;
    pe_counters.queued = (int64_t)pe_rec.queue_len;
    return true;
}
/* Hands the whole queue to the E-scheduler (the C-scheduler's trigger); does
 * not wait for it to run. */
void pe_queue_flush(void);
/* Waits until port p is computed (flushing the queue first if p is in it). */
void pe_queue_wait_port(pe_port *p);
/* Waits until every submitted batch has run. */
void pe_queue_wait_idle(void);
void pe_queue_maybe_flush(void);

/* --------------------------------------------------------------- scope.c */

void pe_scope_register(uint32_t idx);
void pe_scopes_free(void);
uint32_t pe_scope_depth_here(void); /* the calling thread's open scopes */
/* The creation reference of a, made in the innermost scope, is no longer
 * the scope's: the runtime object that holds a (a sparse matrix) owns it. */
void pe_scope_disown(pe_array a);

#endif
