/* cpu_gccjit.h — the CPU code generator: kernel IR to machine code through
 * libgccjit, all kernels of a program sequence in one compilation.  What it
 * shares with the CUDA generator (which ops it emits, libm names, kernel
 * names) is in codegen.h. */
#ifndef PE_JIT_CPU_GCCJIT_H
#define PE_JIT_CPU_GCCJIT_H

#include <stddef.h>

#include "kir.h"
#include "proggen.h"

/* A compiled kernel: computes iterations [begin, end).  args[p] points to
 * parameter p's buffer, or for a scalar parameter to a double holding it. */
typedef void (*pe_kernel_fn)(int64_t begin, int64_t end, void *const *args);

/* Owns the code of one compilation: in memory (libgccjit result) or a
 * shared object loaded from the disk cache. */
typedef struct pe_gccjit_unit {
    void *result; /* gcc_jit_result *, or NULL */
    void *dl;     /* dlopen handle, or NULL */
} pe_gccjit_unit;

/* Identifies this build of the code generator (the disk cache's key has it). */
uint32_t pe_gccjit_build_stamp(void);

/* False when a reduction appended to this body would not vectorise: gcc 12
 * rejects the loop once f32 pow's primitive (its special cases, in double)
 * feeds the double accumulators ("multiple types in fold-left reduction"),
 * 27 ns per element against 3.6 ns for pow as a map; the reduction then
 * runs as a kernel of its own over the stored values. */
bool pe_gccjit_reduction_fusible(const kir_kernel *body);
/* The CPU executor's fusion rules: pe_cpu_can_emit (codegen.h) and the
 * predicate above. */
extern const pe_fusion_rules pe_gccjit_fusion_rules;


/* Compiles n kernels together (to a shared object at `so_path` if given, for
 * the disk cache; else in memory).  On success fns[i] are their entry points
 * and *unit owns them (free with pe_gccjit_unit_free when no kernel is used
 * any more).  On failure writes the compiler's message to err. */
bool pe_gccjit_compile(const kir_kernel *const *kernels, size_t n, const char *isa, const char *so_path,
                       pe_kernel_fn *fns, pe_gccjit_unit **unit, char *err, size_t err_size);
void pe_gccjit_unit_free(pe_gccjit_unit *unit);

#endif
