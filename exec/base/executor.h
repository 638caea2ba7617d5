/* executor.h — the interface every executor implements: the reference
 * interpreter (exec/interp/interp.h), the CPU (exec/cpu/cpu.h) and the CUDA
 * executor (exec/cuda/cuda.h), each declaring its own entry points.
 * The batch driver (jit/sched/batch.c) hands an executor a batch's program
 * sequence with its kernels linked; the executor makes every live COMPUTE
 * entry's port READY or INVALID. */
#ifndef PE_EXEC_EXECUTOR_H
#define PE_EXEC_EXECUTOR_H

#include <stddef.h>

#include "runtime.h"
#include "../../jit/kir/kir.h"
#include "../../jit/kir/program.h"

/* What a target's compiler made of some kernels (jit/codegen/target.h): a
 * shared object on disk (the CPU: libgccjit), or bytes (a GPU: a cubin; the
 * CPU: a shared object the disk cache verified, linked from memory).
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
 * nor generates programs: that is the provisioning's
 * (jit/provision/provision.c), which the batch driver (jit/sched/batch.c)
 * runs before handing it the sequence.  Every function runs under the runtime lock. */
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
     * flight (pe_sync); copies a value down.  NULL for an executor without
     * PE_EXEC_DEVICE_MEMORY. */
    void (*free_device_copy)(pe_port *p);
    void (*wait)(pe_executor *ex);
    /* Makes the host copy of a value it computed (pe_port.host_stale):
     * pe_port_host; false when it cannot, p is then INVALID with the reason. */
    bool (*host_copy)(pe_port *p);
    /* Whether it makes the library call p (a PE_PROG_INTRINSIC program)
     * itself, its libraries loaded (a GPU: cuBLAS, cuSOLVER); NULL: it
     * makes none, the batch goes to the CPU. */
    bool (*calls)(pe_executor *ex, const pe_program *p);
};

/* True if nothing can observe the port any more: no application reference,
 * no pending consumer, no map view, no read waiting for it (a hold); only
 * its own COMPUTE entry holds it. */
static inline bool pe_port_is_dead(const pe_port *p)
{
    return p->refs_app == 0 && p->refs_int <= 1 && p->maps == 0 && p->holds == 0;
}

/* deferred.c: after a kernel ran, each member that is not invalid becomes
 * a value (READY, its inputs let go) or, when it was not stored and the
 * application or a kept member still needs it, an expression (DEFERRED,
 * its inputs held). */
void pe_kernel_settle(const pe_program *prog);
/* Once a sequence ran: each view its kernels read through (PE_PROG_VIEW),
 * never computed, is an expression again where the application or an
 * expression still sees it, else nobody's (deferred.c). */
void pe_views_settle(const pe_program_seq *seq);

#endif
