/* target.h — a target: how kernel IR becomes code that one executor links
 * and runs (OCANNL's compile/link split).  A target *compiles* (its code
 * generator and compiler, no runtime lock, no device): the CPU's libgccjit
 * makes a shared object, the GPU's NVRTC a cubin per architecture.  Its
 * executor *links* the result onto a place (dlopen; cuModuleLoadData) and
 * runs it.  The provisioning (provision.c) drives both for every target the
 * same way. */
#ifndef PE_JIT_TARGET_H
#define PE_JIT_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include "../kir/kir.h"
#include "../proggen/proggen.h"
#include "../../exec/base/executor.h"

/* The targets, by index (the provisioning keeps state per target). */
enum { PE_TARGET_CPU, PE_TARGET_GPU, PE_TARGETS };

typedef struct pe_target {
    int index;                    /* PE_TARGET_* */
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
} pe_target;

extern const pe_target pe_cpu_target;  /* libgccjit, the CPU executor */
extern const pe_target pe_cuda_target; /* NVRTC, the CUDA executor */

#endif
