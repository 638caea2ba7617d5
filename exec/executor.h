/* executor.h — the interface every executor implements (the reference
 * interpreter now; the CPU JIT and CUDA executors later).  The C-scheduler
 * hands an executor a batch of work-queue entries in queue order; the
 * executor makes every live COMPUTE entry's port READY or INVALID. */
#ifndef PE_EXEC_EXECUTOR_H
#define PE_EXEC_EXECUTOR_H

#include <stddef.h>

#include "../jit/kir.h"
#include "../jit/runtime.h"

struct pe_executor {
    const char *name;
    /* Inputs of each COMPUTE entry are READY or INVALID, or computed earlier in
     * the same batch.  Returns the number of ports it computed. */
    size_t (*run)(pe_executor *ex, const pe_batch *batch);
};

extern pe_executor pe_interp_executor;
extern pe_executor pe_cpu_executor;

/* Computes one pending port on the interpreter (or makes it invalid) and
 * drops its inputs; true if it computed a value. */
bool pe_interp_execute(pe_port *p);
/* Makes a port invalid because of input `from`, without a new error. */
void pe_port_inherit_invalid(pe_port *p, const pe_port *from);

/* The CPU executor's life: thread pool up, program cache down. */
bool pe_cpu_executor_start(int threads, const char *cache_dir, int trace_entries);
void pe_cpu_executor_stop(void);
/* The CPU JIT's target ISA ("x86-64-v3") and whether it compiles at all
 * (an assembler and a writable TMPDIR): for the compile ahead (aot.c). */
const char *pe_cpu_isa(void);
bool pe_cpu_jit_usable(void);

/* Combines a reduction kernel's per-chunk (high, low) partials in chunk
 * order (kir.h); the executors share it so they agree bit for bit. */
double pe_combine_partials(pe_op op, const double *partials, int64_t n_chunks, int64_t numel);
/* Writes a reduction's value into its (host, one-element) buffer. */
void pe_store_scalar(pe_port *p, double v);

/* The CUDA executor (cuda.c; cuda_gpu.h lists its files): takes the
 * batches it should run on a GPU and hands the others to the CPU executor.
 * Start fails quietly (no GPU). */
extern pe_executor pe_cuda_executor;
bool pe_cuda_executor_start(int ordinal);
void pe_cuda_executor_stop(void);
/* True if the executor runs work on CUDA device `ordinal`. */
bool pe_cuda_executor_serves(int ordinal);
/* Waits for the GPU's batches still in flight (pe_sync: all work done). */
void pe_cuda_executor_wait(void);
/* For the compile ahead (jit/aot.c).  Has: the GPU has kernel k compiled, in
 * memory or in the disk cache, or there is no GPU to compile for (runtime
 * lock held).  Compile ahead: NVRTC compiles the kernels for the GPU in one
 * program without the runtime lock, then, under it, the cubin is loaded
 * and the kernels filed where batches look (memory, disk); false with the
 * reason in err. */
bool pe_cuda_executor_has(const kir_kernel *k);
bool pe_cuda_compile_ahead(const kir_kernel *const *kernels, size_t n, char *err, size_t n_err);
/* Makes p's host copy (a value computed on the GPU is copied down on first
 * use); false when it cannot, p is then INVALID with the reason. */
bool pe_port_host(pe_port *p);
/* Copies a GPU result straight into dst (no host copy kept: pe_read);
 * false when it cannot, p is then INVALID with the reason. */
bool pe_port_copy_out(pe_port *p, void *dst);
/* Gives p's device copy back to the device pool. */
void pe_cuda_port_free(pe_port *p);

/* Gives a uniform constant a buffer holding its value (for pe_map); false
 * when out of memory. */
bool pe_interp_materialise(pe_port *p);

/* True if nothing can observe the port any more: no application reference,
 * no pending consumer, no map view; only its own COMPUTE entry holds it. */
static inline bool pe_port_is_dead(const pe_port *p) { return p->refs_app == 0 && p->refs_int <= 1 && p->maps == 0; }

#endif
