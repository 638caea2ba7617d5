/* target.h — a target: how kernel IR becomes code that one executor links
 * and runs (OCANNL's compile/link split).  A target *compiles* (its code
 * generator and compiler, no runtime lock, no device): the CPU's libgccjit
 * makes a shared object, the GPU's NVRTC a cubin per architecture.  Its
 * executor *links* the result onto a place (dlopen; cuModuleLoadData) and
 * runs it.  The provisioning (provision.c) drives both for every target the
 * same way. */
#ifndef PE_KIR_TARGET_H
#define PE_KIR_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include "kir.h"
#include "../../exec/base/executor.h"

/* Which element-wise ops, in which compute type, a code generator can emit;
 * other ops end fusion and run on the interpreter. */
typedef bool (*pe_emittable_fn)(pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0);
/* Whether a code generator keeps a reduction appended to this kernel body
 * fast (NULL: always); if not, the reduction gets a kernel of its own. */
typedef bool (*pe_reduction_fusible_fn)(const kir_kernel *body);
/* An executor's fusion rules: what its code generator emits and when a
 * reduction may join a kernel body.  Two executors' rules can make
 * different sequences for one batch, so the trace cache keeps them apart by
 * `id` (which also goes to disk with the persisted traces). */
typedef struct {
    uint8_t id;
    pe_emittable_fn emittable;
    pe_reduction_fusible_fn reduction_fusible;
    /* Kernels write host memory, so members of equal value share one store
     * (exec/base/deferred.c); a GPU's results live on the device, where a
     * second member would be an expression again: each is stored. */
    bool shares_stores;
    /* Whether the code generator reads views through index maps (wrapped,
     * clamped and negative strides; gathers) and emits axis reductions:
     * where it does not, they run on the interpreter. */
    bool views;
    /* Which reductions along an axis it emits in kernels (op, compute type
     * of the operand, result dtype); NULL: none */
    bool (*axis_reduction_emittable)(pe_op op, pe_dtype ctype, pe_dtype dtype);
    /* Which reductions along the last axis leave their kernel open (NULL:
     * none): later members of the kernel's shape read the results broadcast
     * back along the axis (x - mean_axis(x, 1), softmax) in further passes
     * over each row, so the values between them are never stored. */
    bool (*row_reduction_emittable)(pe_op op, pe_dtype ctype, pe_dtype dtype);
    /* From how many bytes of outputs a streamable kernel (kir_streamable)
     * stores them past the caches (kir_kernel.stream_stores); NULL: never. */
    int64_t (*stream_min_bytes)(void);
} pe_fusion_rules;

/* The targets, by index (the provisioning keeps state per target). */
enum { PE_TARGET_HOST, PE_TARGET_DEVICE, PE_TARGETS };

typedef struct pe_target {
    int index;                    /* PE_TARGET_*: the host's, or the devices' */
    const char *name;             /* "the CPU", "the GPU": for messages */
    const char *compiler;         /* "libgccjit", "NVRTC": for messages */
    const pe_fusion_rules *rules; /* what its code generator emits, and how it fuses reductions */
    pe_executor *executor;        /* links and runs its code */
    /* Artifacts are files (a shared object: the disk cache seals and files
     * the file itself) rather than bytes (the disk cache keeps a blob). */
    bool code_in_files;
    /* Its executor runs at one place (the CPU): a kernel's code is the same
     * for every batch, so the program sequence keeps it (pe_program.code)
     * and the trace cache with it.  Code for several places (GPUs) is
     * looked up per place. */
    bool one_place;
    /* A compile of several kernels that fails is tried again kernel by
     * kernel, and a kernel the compiler rejects runs on the interpreter (the
     * CPU); else a failure loses the place for the run (a GPU: its batches
     * go to the CPU). */
    bool retry_alone;
    /* The disk cache's tag for code compiled for `arch` (a blob target:
     * architecture and compiler version). */
    void (*disk_tag)(const char *arch, char *out, size_t n);
    /* Whether it can compile at all: checked once, before its executor
     * starts; false with the reason in *why. */
    bool (*usable)(const char **why);
    /* Compiles n kernels for `arch` into one artifact, without the runtime
     * lock.  A file target writes the shared object at `path`; a blob target
     * sets a->bytes (malloc'ed: the caller frees) and a->size.  False with
     * the compiler's message in err. */
    bool (*compile)(const kir_kernel *const *kernels, size_t n, const char *arch, const char *path, pe_artifact *a,
                    char *err, size_t n_err);
    /* pe_spmv's row loops: code of the target's own, not kernel IR (a
     * gather through a sparse structure summed over rows of varying length),
     * made once per build and ISA and kept like kernels (the provisioning's
     * spmv_code.c); NULL where the target has none (spmv then runs on the
     * interpreter).  spmv_compile writes the shared object at `path`;
     * spmv_link links its bytes and sets rows[dtype] to each dtype's loop
     * (NULL for a dtype without one; the CPU kernels' ABI, pe_range_fn),
     * giving the handle to close, or NULL with err. */
    bool (*spmv_compile)(const char *path, char *err, size_t n_err);
    void *(*spmv_link)(const void *bytes, size_t size, void *rows[PE_DTYPE__COUNT], char *err, size_t n_err);
} pe_target;

/* Each backend defines its target (exec/cpu/cpu_target.c,
 * exec/cuda/cuda_target.c); exec/backends.c lists them. */

#endif
