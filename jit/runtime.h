/* runtime.h — the runtime's internal model shared by jit/ and exec/: ports
 * (the DAG nodes behind handles), the work queue, the global runtime state, and
 * the entry points each jit/ module offers to the others.  Nothing here is
 * public; include/pe.h is the only public header. */
#ifndef PE_JIT_RUNTIME_H
#define PE_JIT_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pe.h"
#include "../irformat/dtypes.h"
#include "../irformat/ops.h"

/* ------------------------------------------------------------------ ports */

typedef enum {
    PE_PORT_FREE = 0, /* slot unused */
    PE_PORT_PENDING,  /* recorded, its COMPUTE entry waits in the work queue */
    PE_PORT_READY,    /* value available (buffer, or `value` for constants) */
    PE_PORT_INVALID   /* an operation failed: err_code / err_msg say why */
} pe_port_state;

#define PE_PORT_MAX_INPUTS 3

typedef struct pe_port {
    uint32_t gen;        /* generation of the slot; bumped on each reuse */
    uint8_t state;       /* pe_port_state */
    uint8_t op;          /* pe_op */
    uint8_t dtype;       /* pe_dtype of the result */
    uint8_t ctype;       /* pe_dtype operands are converted to before computing */
    uint8_t rank;
    uint8_t n_in;
    bool weak;           /* weakly typed: a C scalar, or folded from C scalars */
    bool temp;           /* a C-scalar operand: released by the op that consumes it */
    bool literal;        /* a constant the static IR says is a source literal: specialised into kernels */
    uint32_t in[PE_PORT_MAX_INPUTS]; /* input port indices (held by refs_int while pending) */
    int64_t shape[PE_MAX_RANK];
    int64_t numel;
    int64_t param[2 * PE_MAX_RANK];  /* op parameters: axis, slice start, ... */
    double value;        /* PE_OP_constant: the uniform value (already rounded to dtype) */
    const pe_site *site; /* where the application asked for it */
    int32_t refs_app;    /* application references (handles) */
    int32_t refs_int;    /* runtime references: pending consumers, queue entries */
    int32_t maps;        /* outstanding pe_map views */
    void *buf;           /* host buffer, numel * element size bytes, or NULL */
    void *dev_buf;       /* a copy in GPU memory (CUDA executor), or NULL */
    uint8_t dev_gpu;     /* dev_buf's GPU: its ordinal among the CUDA devices */
    bool host_stale;     /* READY, computed on the GPU: buf is not made yet (pe_port_host) */
    void (*free_fn)(void *data, void *ctx); /* pe_adopt's deallocator, else NULL */
    void *free_ctx;
    pe_status err_code;  /* PE_PORT_INVALID: the error */
    char *err_msg;       /* PE_PORT_INVALID: its message, or NULL if it propagated */
    /* Diagnostics for handles of this slot after the last application release. */
    uint32_t released_gen;
    const pe_site *release_site;
    uint32_t next_free;  /* free list link */
    uint32_t live_consumers; /* program generator scratch: consumers still to be computed */
    uint32_t queue_pos;      /* PENDING: position of its COMPUTE entry in its batch */
    uint32_t batch;          /* PENDING: the batch (epoch) its COMPUTE entry belongs to */
    bool released_in_batch;  /* its batch holds a RELEASE entry for it: invisible after the batch */
    uint32_t key_epoch, key_external; /* trace key: external operand number within the key of batch key_epoch */
} pe_port;

/* ------------------------------------------------------------- work queue */

typedef enum {
    PE_ENTRY_COMPUTE, /* compute the port */
    PE_ENTRY_RELEASE, /* the application dropped its last reference to the port */
    PE_ENTRY_HINT     /* the application will read the port soon */
} pe_entry_kind;

typedef struct {
    uint8_t kind;  /* pe_entry_kind */
    uint32_t port; /* port index */
} pe_entry;

/* The trace key of the batch being recorded, extended in O(1) per queue
 * entry (trace.c). */
typedef struct {
    uint8_t *bytes;
    size_t len, cap;
    uint64_t first_site;       /* bucket: the first entry's stable site id (0: none yet) */
    uint32_t *externals;       /* operands from outside the batch, numbered in the key */
    uint32_t n_externals, externals_cap;
    bool broken;               /* out of memory while building: never cached */
} pe_trace_key;

/* What the C-scheduler hands an executor: queue entries and their key. */
typedef struct {
    const pe_entry *entries;
    size_t n;
    const pe_trace_key *key;
    uint32_t epoch; /* the batch's number: its ports have port->batch == epoch */
    int device;     /* pe_rt.device when it was recorded (pe_set_device): -1 automatic, 0 CPU, k GPU k - 1 */
} pe_batch;

/* ---------------------------------------------------------- global state */

typedef struct {
    pe_array *items;
    size_t count, cap;
} pe_handle_list;

typedef struct pe_executor pe_executor;

typedef struct {
    bool initialised;
    /* configuration */
    int log_level;          /* pe_log_level */
    int threads;
    int device;             /* -1: automatic */
    int64_t queue_limit;
    /* port table: pages of stable port records */
    pe_port **pages;
    uint32_t n_pages;
    uint32_t n_slots;       /* slots handed out so far */
    uint32_t free_head, free_tail; /* FIFO free list (delays reuse, keeps release sites) */
    uint32_t n_free;               /* slots on the free list */
    /* work queue */
    pe_entry *queue;
    size_t queue_len, queue_cap;
    pe_trace_key trace_key;
    uint32_t batch_epoch;   /* the number of the batch being recorded */
    int block_depth;
    /* execution */
    pe_executor *executor;
    pe_stats stats;
} pe_runtime;

extern pe_runtime pe_rt;

#define PE_PAGE_BITS 10
#define PE_PAGE_SIZE (1u << PE_PAGE_BITS)

static inline pe_port *pe_port_at(uint32_t idx) { return &pe_rt.pages[idx >> PE_PAGE_BITS][idx & (PE_PAGE_SIZE - 1)]; }
static inline pe_array pe_handle_of(uint32_t idx) { return (pe_array){((uint64_t)pe_port_at(idx)->gen << 32) | (idx + 1)}; }
/* The bytes of a port's value (host or device copy). */
static inline size_t pe_port_bytes(const pe_port *p) { return (size_t)p->numel * pe_dtype_size((pe_dtype)p->dtype); }

/* ------------------------------------------------------------- api lock */

/* Application threads may call the API at once: every entry point holds the
 * runtime's (recursive) lock for its duration.  Error handlers run under it
 * and may call the API. */
int pe_api_lock(void);
void pe_api_unlock(int *guard);
#define PE_API_GUARD __attribute__((cleanup(pe_api_unlock), unused)) int pe__api_guard = pe_api_lock()
/* Waits on `cond` with the runtime lock released meanwhile (the caller holds it). */
void pe_api_wait(void *cond);
/* Lets go of the lock entirely (kernels run without it) and takes it back. */
int pe_api_suspend(void);
void pe_api_resume(int depth);
/* Whether the calling thread holds the lock: for assert()s of a function's
 * precondition ("runtime lock held"), checked in debug builds. */
bool pe_api_held(void);
/* Takes the lock around fork() (pe_init installs it once): a child forked
 * while another thread held it gets it free. */
void pe_api_install_fork_handlers(void);

/* --------------------------------------------------- error.c, log, sites */

/* What the runtime keeps per call site, in the site's `rt` (sites are the
 * application's static objects, one per call site, living for the process):
 * an id that is the same in every run of the program, and the static IR's
 * facts about the site (irload.c), each computed on first use. */
#define PE_SITE_MAX_LITERALS 4
typedef struct {
    uint64_t stable_id;            /* hash of file, line and function */
    int operands_seen, flush_seen; /* IR units registered when computed (dlopen adds units) */
    uint32_t release;              /* operands to release after the request */
    bool flush;                    /* the request begins a loop iteration or follows a loop */
    uint32_t literal;              /* operands that are source literals ... */
    double value[PE_SITE_MAX_LITERALS]; /* ... with these values */
} pe_site_record;
/* The site's record, made on first use; NULL when out of memory. */
pe_site_record *pe_site_record_of(const pe_site *s);
/* The site's stable id (0 for no site, or out of memory). */
uint64_t pe_site_stable_id(const pe_site *s);

/* The site of an _at call: the given one, or one made from the caller's address. */
#define PE_SITE_OR_CALLER(s) ((s) ? (s) : pe_site_from_address(__builtin_return_address(0)))
const pe_site *pe_site_from_address(void *addr);

/* Formats "FILE:LINE: FUNC: api: text", runs the handler stack; returns `code`
 * if a handler continued.  Without a handler it prints and aborts. */
pe_status pe_raise(const pe_site *s, pe_status code, const char *api, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Formats the same text into a heap string, for errors raised later (at a read). */
char *pe_format_error(const pe_site *s, const char *api, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
pe_status pe_raise_message(const pe_site *s, pe_status code, const char *message);
void pe_log_message(pe_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pe_format_shape(char *out, size_t n, int rank, const int64_t *shape);

/* ------------------------------------------------------------ handle.c */

/* The port behind a handle, or NULL after raising PE_E_HANDLE (null, foreign,
 * stale or released handle).  `api` names the entry point in the message. */
pe_port *pe_port_lookup(const pe_site *s, pe_array a, const char *api, uint32_t *idx_out);
/* The port behind a handle of a slot in use (its generation matches), or
 * NULL: no error raised, for callers that only act on live handles. */
pe_port *pe_port_peek(pe_array a, uint32_t *idx_out);
/* A new port slot (state PENDING, refs all zero), or UINT32_MAX when out of memory. */
uint32_t pe_port_new(void);
void pe_port_ref(uint32_t idx);   /* +1 runtime reference */
void pe_port_unref(uint32_t idx); /* -1 runtime reference; frees the port at zero */
void pe_port_release_app(uint32_t idx, const pe_site *s); /* -1 application reference */
/* A computed port's host buffer: the caller's own, lent by a pe_read that
 * is the value's last use (the result is computed straight into it), or a
 * new one; false when out of memory.  Drop gives back all but a lent one. */
bool pe_port_result_buffer(pe_port *p);
void pe_port_result_drop(pe_port *p);
/* Lends dst to pending port p as its result buffer (free_fn marks it lent). */
void pe_port_lend_buffer(pe_port *p, void *dst);
/* Writes what a new port computes: op, types, shape, parameters, inputs
 * (their references are the caller's to take). */
void pe_port_describe(pe_port *p, pe_op op, const uint32_t *in, int n, pe_dtype dtype, pe_dtype ctype, int rank,
                      const int64_t *shape, const int64_t *params, int n_params);
void pe_port_maybe_free(uint32_t idx);
void pe_port_drop_inputs(pe_port *p);
void pe_ports_free_all(void);
/* Frees the ports in slots [first, n_slots): fresh slots the caller took
 * after noting n_slots, holding nothing anyone else references; the slots
 * go back as if never handed out (the free list, and with it the reuse
 * order behind release diagnostics, is untouched). */
void pe_ports_forget_since(uint32_t first);
bool pe_require_init(const pe_site *s, const char *api);

/* ------------------------------------------------------------- record.c */

/* Registers a newly made port with the application: one app reference, the
 * current scope, a handle. */
pe_array pe_publish(uint32_t idx);
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
int64_t pe_shape_numel(int rank, const int64_t *shape);

/* --------------------------------------------------------------- shape.c */

pe_dtype pe_promote(pe_dtype a, pe_dtype b);
/* Promotion with weak (C-scalar) operands; see pe.h. */
pe_dtype pe_promote_operands(pe_port *const *in, int n);
pe_dtype pe_result_dtype(pe_result_rule rule, pe_dtype promoted);
pe_dtype pe_compute_dtype(pe_result_rule rule, pe_dtype promoted);
/* The result and compute types of an element-wise op with a derived type
 * (not cast) or a reduction, over its operands: the recorder's rule, which
 * the compile ahead's speculation follows too. */
void pe_op_types(pe_op op, pe_port *const *in, int n, pe_dtype *dtype, pe_dtype *ctype);
/* Broadcasts the operand shapes; false if they do not. */
bool pe_broadcast_shapes(pe_port *const *in, int n, int *rank, int64_t *shape);
/* Element strides of an operand of shape in_shape read through a broadcast to
 * an iteration space of `rank` axes: 0 on stretched and missing axes. */
void pe_broadcast_strides(int in_rank, const int64_t *in_shape, int rank, int64_t *stride);
/* Normalises a possibly negative axis; false if out of range. */
bool pe_normalise_axis(int *axis, int rank);

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

#endif
