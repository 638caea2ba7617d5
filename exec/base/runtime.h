/* runtime.h — the ground's model, which every module of the runtime uses:
 * ports (the DAG nodes behind handles) and their table, work-queue entries
 * and batches, the global runtime state and its lock.  The ground's other
 * headers: error.h (messages, log), site.h (call sites), shape.h
 * (broadcasting and type rules), memory.h (host buffers), executor.h (the
 * executor interface).  Nothing here is public; include/pe.h is the only
 * public header. */
#ifndef PE_BASE_RUNTIME_H
#define PE_BASE_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pe.h"
#include "../../irformat/dtypes.h"
#include "../../irformat/ops.h"

/* ------------------------------------------------------------------ ports */

typedef enum {
    PE_PORT_FREE = 0, /* slot unused */
    PE_PORT_PENDING,  /* recorded, its COMPUTE entry waits in the work queue */
    PE_PORT_READY,    /* value available (buffer, or `value` for constants) */
    PE_PORT_INVALID,  /* an operation failed: err_code / err_msg say why */
    PE_PORT_DEFERRED  /* computed inside a kernel for its consumers but not stored (nothing demanded
                         it): an expression again, holding its inputs; a later use puts its COMPUTE
                         back into the queue (jit/record/demand.c) */
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
    bool unshared;       /* a constant that is a kernel parameter of its own, never one with an equal
                            scalar: a random draw's key words and draw number, whose equalities change
                            from draw to draw (they must not change the trace key) */
    uint32_t in[PE_PORT_MAX_INPUTS]; /* input port indices (held by refs_int while pending) */
    int64_t shape[PE_MAX_RANK];
    int64_t numel;
    int64_t param[2 * PE_MAX_RANK];  /* op parameters: axis, slice start, ... */
    double value;        /* PE_OP_constant: the uniform value (already rounded to dtype) */
    const pe_site *site; /* where the application asked for it */
    int32_t refs_app;    /* application references (handles) */
    int32_t refs_int;    /* runtime references: pending consumers, queue entries */
    int32_t maps;        /* outstanding pe_map views */
    int32_t holds;       /* calls working on it with the runtime lock let go meanwhile (a read waiting for
                            its batch, then copying): it is not freed under them (pe_port_hold) */
    void *buf;           /* host buffer, numel * element size bytes, or NULL */
    void *dev_buf;       /* a copy in GPU memory (CUDA executor), or NULL */
    uint8_t dev_gpu;     /* dev_buf's GPU: its ordinal among the CUDA devices */
    bool host_stale;     /* READY, computed on the GPU: buf is not made yet (pe_port_host) */
    void (*free_fn)(void *data, void *ctx); /* pe_adopt's deallocator, else NULL */
    void *free_ctx;
    pe_status err_code;  /* PE_PORT_INVALID: the error */
    bool err_raised;     /* ... raised when the call was made (a read says PE_E_INVALID), not
                            found while computing (a read is its first report: err_code) */
    char *err_msg;       /* PE_PORT_INVALID: its message, or NULL if it propagated */
    /* Diagnostics for handles of this slot after the last application release. */
    uint32_t released_gen;
    const pe_site *release_site;
    const pe_site *release_scope; /* the begin of the scope whose end released it, else NULL */
    bool released_by_ir;     /* that release was the static IR's (pecc's last-use mark), not the program's */
    bool read_once;          /* the static IR says its one handle is read once, by an operation or a read
                                that is its last use (irload.c): whichever request reads it releases it */
    uint32_t next_free;  /* free list link */
    uint32_t live_consumers; /* program generator scratch: consumers still to be computed */
    bool lazy_view;          /* program generator scratch: a view its batch's kernels read through its
                                index map, never computing it (jit/proggen/viewmap.c) */
    uint32_t queue_pos;      /* PENDING: position of its COMPUTE entry in its batch */
    uint32_t batch;          /* PENDING: the batch (epoch) its COMPUTE entry belongs to */
    bool released_in_batch;  /* its batch holds a RELEASE entry for it: invisible after the batch */
    bool demanded_in_batch;  /* its batch holds a HINT entry for it (a read, map or hint): stored */
    bool lent_keeps_handle;  /* its buffer is a reader's (pe_read), who keeps the handle: once computed
                                into it, the value is an expression again (deferred.c) */
    uint32_t lent_fills;     /* times a kernel computed it into a reader's buffer and gave that back */
    uint32_t expr_readers;   /* expressions (DEFERRED ports) holding it as an input */
    bool holds_as_expression; /* an expression: counted in its inputs' expr_readers until it is computed */
    bool store_when_held;    /* its site's values were computed again after a kernel had computed them
                                without storing (demand.c): the kernel computing this one stores it even
                                where it could stay an expression (deferred.c); part of its trace key */
    bool retained;           /* counted in pe_retention.bytes: a stored value only expressions hold */
    uint32_t visit;          /* demand.c's traversal stamp */
    uint32_t tape;           /* its node on the derivative tape plus one (jit/record/tape.c), 0: none */
    uint32_t key_epoch, key_external; /* trace key: external operand number within the key of batch key_epoch */
    uint32_t key_same_as;    /* a uniform scalar's: the external number of the first one of equal dtype and
                                value in that key (its own if none), which the key records: kernels share it */
    /* The profiler's "stored, never read" (profiler/collect.c sets both, only under PE_PROFILE): */
    bool prof_stored;        /* a program stored its value (a kernel's output, an interpreted result) */
    bool prof_read;          /* a program loaded it, or pe_read / pe_map read it */
    /* PE_CHECK (exec/interp/reference.c): the reference value, computed by the interpreter from
     * its inputs' reference values before the batch ran (NULL: none made; an input's reference is
     * its own value) */
    void *ref;
    bool ref_failed;         /* its reference could not be computed (an input's failed, out of memory) */
    double ref_floor;        /* the magnitude its operands' references give to the allowed error (add, sub, sums) */
    double ref_factors;      /* a product's factor count: its allowed relative error is that many times the scale */
} pe_port;

/* ------------------------------------------------------------- work queue */

typedef enum {
    PE_ENTRY_COMPUTE, /* compute the port */
    PE_ENTRY_RELEASE, /* the application dropped its last reference to the port */
    PE_ENTRY_HINT,    /* the application will read the port soon */
    PE_ENTRY_REVIVE   /* a RELEASE the static IR made was wrong: the application uses the port again */
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

/* The runtime's state is split by owner: each struct below is written by
 * the files its comment names and read by the others through this header
 * (it sits in the ground because readers sit in several layers: the trace
 * cache, below the recorder, reads the batch's epoch; every layer counts). */

/* The runtime: its life, configuration, port table and executor
 * (jit/api/lifecycle.c sets them up; exec/base/port.c owns the table). */
typedef struct {
    bool initialised;
    uint32_t life;          /* pe_init's count: what one runtime's life learnt is marked with it */
    /* pe_shutdown runs (calls that come in now fail with PE_E_INVALID), or
     * has run and no pe_init followed (the message says so) */
    bool shutting_down, shut_down;
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
    /* execution */
    pe_executor *executor;
} pe_runtime;

extern pe_runtime pe_rt;

/* The recording: the work queue of the batch being recorded and its trace
 * key (jit/record/queue.c owns them; jit/trace/trace.c extends the key). */
typedef struct {
    pe_entry *queue;
    size_t queue_len, queue_cap;
    pe_trace_key trace_key;
    uint32_t batch_epoch;   /* the number of the batch being recorded */
    int block_depth;        /* pe_block nesting: no flush inside */
} pe_recording;

extern pe_recording pe_rec;

/* Values on demand (exec/base/deferred.c owns them; jit/record/demand.c
 * applies the bound): the bytes of stored values that only expressions
 * hold, and the bound past which the expressions holding them are
 * computed and stored (PE_RETAIN_LIMIT); the ports that became
 * expressions (entries go stale: the list is compacted when read). */
typedef struct {
    int64_t bytes, limit;
    uint32_t relieved_epoch; /* the batch whose recording last stored them (at most once a batch) */
    bool check_held;         /* a scope is ending: its expressions go too, the bound is checked after */
    uint32_t *expressions;
    size_t n_expressions, cap_expressions, compact_at;
} pe_retention_state;

extern pe_retention_state pe_retention;

/* The run's counters (pe_stats): every layer adds to them. */
extern pe_stats pe_counters;

#define PE_PAGE_BITS 10
#define PE_PAGE_SIZE (1u << PE_PAGE_BITS)

static inline pe_port *pe_port_at(uint32_t idx) { return &pe_rt.pages[idx >> PE_PAGE_BITS][idx & (PE_PAGE_SIZE - 1)]; }
static inline pe_array pe_handle_of(uint32_t idx) { return (pe_array){((uint64_t)pe_port_at(idx)->gen << 32) | (idx + 1)}; }
static inline uint32_t pe_handle_gen(pe_array a) { return (uint32_t)(a.h >> 32); }
/* The bytes of a port's value (host or device copy). */
static inline size_t pe_port_bytes(const pe_port *p) { return (size_t)p->numel * pe_dtype_size((pe_dtype)p->dtype); }
/* A uniform constant (pe_scalar, pe_fill, a C scalar, a fold): one value,
 * a kernel parameter, never a loaded array.  The one definition for every
 * stage: the trace key records it when the request is made, the program
 * generator reads it when the batch runs, so it must not change between:
 * a buffer made for it later (an intrinsic's or a map's operand,
 * pe_interp_materialise) is a copy of its value, not another kind. */
static inline bool pe_port_is_uniform(const pe_port *p) { return p->op == PE_OP_constant && p->state == PE_PORT_READY; }

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
/* A fork by this thread whose child never calls PE (a compile in a helper
 * process) does not wait for the lock: true before the fork, false after. */
void pe_api_fork_bare(bool bare);
/* The calling thread is one of the runtime's own (E-scheduler, compile
 * ahead): its entries are not counted as the application's. */
void pe_api_internal_thread(void);
/* Application threads inside an entry point other than the caller (lock
 * held): those still running or waiting for a value. */
int pe_api_others_inside(void);
/* Waits (the lock released meanwhile) until an application thread leaves
 * an entry point; only while pe_rt.shutting_down. */
void pe_api_wait_left(void);

/* -------------------------------------------------- port.c, the port table */

/* The port behind a handle of a slot in use (its generation matches), or
 * NULL: no error raised, for callers that only act on live handles. */
pe_port *pe_port_peek(pe_array a, uint32_t *idx_out);
/* A new port slot (state PENDING, refs all zero), or UINT32_MAX when out of memory. */
uint32_t pe_port_new(void);
void pe_port_ref(uint32_t idx);   /* +1 runtime reference */
void pe_port_unref(uint32_t idx); /* -1 runtime reference; frees the port at zero */
/* A call that looked a handle up and then waits with the runtime lock let
 * go (a read waiting for its batch, an operand's producer still running)
 * holds the port meanwhile: another thread may release the handle, and a
 * port freed under the waiter would have no buffer (its slot possibly
 * another value's) when the waiter takes the lock back (issue 36: reads
 * copied zeros).  Not a runtime reference: those count consumers, which
 * the scheduler reads (pe_demand, a read lending its buffer).  Let go
 * frees the port when nothing else holds it. */
void pe_port_hold(uint32_t idx);
void pe_port_let_go(uint32_t idx);
/* A computed port's host buffer: the caller's own, lent by a pe_read (the
 * result is computed straight into it), or a new one; false when out of
 * memory.  Drop gives back all but a lent one. */
bool pe_port_result_buffer(pe_port *p);
void pe_port_result_drop(pe_port *p);
/* Lends dst to pending port p as its result buffer (free_fn marks it lent).
 * `keeps_handle`: the reader keeps its handle, so the buffer is the port's
 * only until it is computed (then given back, or copied: below); else the
 * read is the value's last use and the buffer stays until the port dies. */
void pe_port_lend_buffer(pe_port *p, void *dst, bool keeps_handle);
/* A buffer lent by a reader who keeps the handle, with the value in it. */
bool pe_port_lent_for_reader(const pe_port *p);
/* Gives it back: the port has no buffer any more (lent_fills counts it). */
void pe_port_give_back_lent(pe_port *p);
/* Replaces it by a buffer of PE's holding the same bytes (a value an
 * executor keeps stored); false when out of memory (p is then invalid). */
bool pe_port_copy_lent(pe_port *p);
/* Port p takes the host value of port `owner` (a kernel member of equal
 * value that was stored): its buffer, owner kept alive until p is freed,
 * or a copy where the buffer is the caller's (lent by a last-use read).
 * False where owner's value is not on the host (a GPU's) or out of memory. */
bool pe_port_share_value(pe_port *p, uint32_t owner);
/* Writes what a new port computes: op, types, shape, parameters, inputs
 * (their references are the caller's to take). */
void pe_port_describe(pe_port *p, pe_op op, const uint32_t *in, int n, pe_dtype dtype, pe_dtype ctype, int rank,
                      const int64_t *shape, const int64_t *params, int n_params);
void pe_port_maybe_free(uint32_t idx);
/* Who hears of a port dying with a stored value nothing read (prof_stored
 * without prof_read): the profiler registers itself (a call up turned
 * around); NULL, nobody. */
void pe_port_unread_dies_to(void (*fn)(const pe_port *p));
/* Makes p's host copy: a value computed on a GPU is copied down on first
 * use, by the executor that holds it; false when it cannot, p is then
 * INVALID with the reason. */
bool pe_port_host(pe_port *p);
void pe_port_drop_inputs(pe_port *p);
void pe_ports_free_all(void);
/* Frees the ports in slots [first, n_slots): fresh slots the caller took
 * after noting n_slots, holding nothing anyone else references; the slots
 * go back as if never handed out (the free list, and with it the reuse
 * order behind release diagnostics, is untouched). */
void pe_ports_forget_since(uint32_t first);

/* ------------------------------------------------------------ liveness.c */

/* The backward pass (the program generator's and the interpreter's):
 * counts each pending port's consumers in the batch that are still to be computed; a port the batch
 * released with none of them is dead, and so, in turn, its producers. */
void pe_find_live_consumers(const pe_entry *entries, size_t n, uint32_t epoch);
bool pe_port_dead_in_batch(const pe_port *p);
/* A member of a kernel that the batch does not release, that nothing outside
 * the kernel reads and that nothing demanded: computed for its consumers in
 * the kernel only, it gets no store and stays an expression (DEFERRED).
 * `outside_uses`: its consumers in the batch that are not in its kernel. */
bool pe_port_deferrable(const pe_port *p, uint32_t outside_uses);
/* Re-counts p in pe_retention.bytes after its references, readers or
 * state changed (deferred.c). */
void pe_port_update_retained(pe_port *p);
/* An expression lets go of its inputs (computed, or dying): their readers' counts. */
void pe_port_expression_done(pe_port *p);
/* Drops the entries of pe_retention.expressions that are no expression any more
 * (computed, freed, or a reused slot's); the next compaction is due at
 * twice what is left. */
void pe_expressions_compact(void);
/* Port idx keeps its inputs as an expression (DEFERRED): they count it as a
 * reader, the list of expressions has it (deferred.c). */
void pe_port_become_expression(uint32_t idx);
/* Port idx is DEFERRED: an expression again (above), counted in
 * pe_counters.values_deferred; what a kernel's member, a view nobody
 * stored and a library call's lent result become (settle.c, dispatch.c). */
void pe_port_defer(uint32_t idx);

#endif
