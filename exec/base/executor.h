/* executor.h — the interface every executor implements: the reference
 * interpreter (interp.c), the CPU (cpu.c) and the CUDA executor (cuda.c).
 * The batch driver (jit/sched/batch.c) hands an executor a batch's program
 * sequence with its kernels linked; the executor makes every live COMPUTE
 * entry's port READY or INVALID. */
#ifndef PE_EXEC_EXECUTOR_H
#define PE_EXEC_EXECUTOR_H

#include <stddef.h>

#include "runtime.h"
#include "../../jit/kir/kir.h"
#include "../../jit/kir/program.h"

/* What a target's compiler made of some kernels (jit/codegen/target.h): a shared
 * object on disk (the CPU: libgccjit), or bytes (a GPU: an NVRTC cubin).
 * An executor links it: loads it where its kernels run and keeps their
 * entry points. */
typedef struct {
    const char *path;  /* a file to load, or NULL */
    const void *bytes; /* bytes to load, or NULL */
    size_t size;
} pe_artifact;

/* Places work runs at: the CPU (0), then GPU k - 1 (k = 1..16). */
#define PE_MAX_PLACES (1 + 16)

#define PE_RUN_DECLINED ((size_t)-1)

/* What an executor is: asked, never told apart by its address. */
enum {
    PE_EXEC_RUNS_KERNELS = 1u << 0, /* runs compiled kernels (else it interprets every port) */
    PE_EXEC_DEVICE_MEMORY = 1u << 1 /* keeps values in memory of its own (pe_port.dev_buf): a GPU */
};

/* An executor links compiled code onto its places (the CPU: one; a GPU
 * executor: each GPU in use, place k = GPU k - 1), launches a program
 * sequence's kernels there, moves memory and reports.  It never compiles
 * nor generates programs: that is the provisioning's (jit/provision/provision.c),
 * which the batch driver (jit/sched/batch.c) runs before handing it the
 * sequence.  Every function runs under the runtime lock. */
struct pe_executor {
    const char *name;
    unsigned caps; /* PE_EXEC_* */
    /* Runs the batch's program sequence at `place` (code[i]: program i's
     * linked kernel, NULL where the interpreter computes it); the
     * interpreter takes seq NULL and runs the batch's entries.  Makes every
     * live COMPUTE entry's port READY or INVALID and returns the number of
     * ports it computed, or PE_RUN_DECLINED when it could not start
     * (nothing changed: the batch goes elsewhere). */
    size_t (*run)(pe_executor *ex, const pe_batch *batch, const pe_program_seq *seq, const void *const *code,
                  int place);
    /* Whether it can take work at `place` now, and the architecture code
     * for it is compiled for (the CPU's ISA level, "sm_90"). */
    bool (*usable)(pe_executor *ex, int place);
    void (*arch)(pe_executor *ex, int place, char *out, size_t n);
    /* The places it runs on now, in order (at most `max`). */
    int (*places)(pe_executor *ex, int *out, int max);
    /* Kernel k's linked code at `place`, or NULL; links an artifact holding
     * kernels [0, n) at `place` (false with the reason in err: `fatal` says
     * the place is lost, not only this code). */
    const void *(*linked)(pe_executor *ex, int place, const kir_kernel *k);
    bool (*link)(pe_executor *ex, int place, const pe_artifact *a, const kir_kernel *const *kernels, size_t n,
                 bool *fatal, char *err, size_t n_err);
    /* Gives up `place` after a failure there (one warning naming `what`):
     * later batches go elsewhere. */
    void (*fail)(pe_executor *ex, int place, const char *what);
    /* Device memory: frees a port's device copy; waits for the work in
     * flight (pe_sync); copies a value down.  NULL for an executor without PE_EXEC_DEVICE_MEMORY. */
    void (*free_device_copy)(pe_port *p);
    void (*wait)(pe_executor *ex);
    /* Makes the host copy of a value it computed (pe_port.host_stale):
     * pe_port_host; false when it cannot, p is then INVALID with the reason. */
    bool (*host_copy)(pe_port *p);
};

extern pe_executor pe_interp_executor;
extern pe_executor pe_cpu_executor;

/* Computes one pending port on the interpreter (or makes it invalid) and
 * drops its inputs; true if it computed a value. */
bool pe_interp_execute(pe_port *p);
/* Makes a port invalid because of input `from`, without a new error. */
void pe_port_inherit_invalid(pe_port *p, const pe_port *from);

/* The CPU executor's life: its thread pool. */
bool pe_cpu_executor_start(int threads);
void pe_cpu_executor_stop(void);
/* The CPU's ISA level ("x86-64-v3"): what its kernels are compiled for. */
const char *pe_cpu_isa(void);

/* Combines a reduction kernel's per-chunk (high, low) partials in chunk
 * order (kir.h); the executors share it so they agree bit for bit. */
double pe_combine_partials(pe_op op, const double *partials, int64_t n_chunks, int64_t numel);
/* Writes a reduction's value into its (host, one-element) buffer. */
void pe_store_scalar(pe_port *p, double v);

/* The CUDA executor (cuda.c; cuda_gpu.h lists its files): its places are
 * the GPUs in use.  Start fails quietly (no GPU). */
extern pe_executor pe_cuda_executor;
bool pe_cuda_executor_start(int ordinal);
void pe_cuda_executor_stop(void);
/* True if the executor runs work on CUDA device `ordinal`. */
bool pe_cuda_executor_serves(int ordinal);
/* Copies a GPU result straight into dst (no host copy kept: pe_read);
 * false when it cannot, p is then INVALID with the reason. */
bool pe_port_copy_out(pe_port *p, void *dst);

/* Gives a uniform constant a buffer holding its value (for pe_map); false
 * when out of memory. */
bool pe_interp_materialise(pe_port *p);

/* True if nothing can observe the port any more: no application reference,
 * no pending consumer, no map view; only its own COMPUTE entry holds it. */
static inline bool pe_port_is_dead(const pe_port *p) { return p->refs_app == 0 && p->refs_int <= 1 && p->maps == 0; }

#endif
