/* cpu_gccjit.h — the CPU code generator: kernel IR to machine code through
 * libgccjit, all kernels of a program sequence in one compilation. */
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
/* The exported name of kernel k in compiled code: "pe_k_<hash>". */
void pe_gccjit_kernel_name(const kir_kernel *k, char *out, size_t n);

/* True if the emitter can generate `op` computed in `ctype` giving `dtype`
 * (operand0: the dtype of the first operand, for casts). */
bool pe_gccjit_can_emit(pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0);
/* False when a reduction appended to this body would not vectorise: gcc 12
 * rejects the loop once f32 pow's primitive (its special cases, in double)
 * feeds the double accumulators ("multiple types in fold-left reduction"),
 * 27 ns per element against 3.6 ns for pow as a map; the reduction then
 * runs as a kernel of its own over the stored values. */
bool pe_gccjit_reduction_fusible(const kir_kernel *body);
/* The CPU executor's fusion rules: the two predicates above. */
extern const pe_fusion_rules pe_gccjit_fusion_rules;

/* Facts both code generators (this one and cuda_emit.c) emit by: the libm
 * function behind a float op ("exp", "fabs", ...; CUDA's device library has
 * the same names), or NULL; and whether an f32 op is computed in double and
 * rounded once, as the reference does (ill-conditioned compositions such as
 * 1/tan near a pole, erf, erfc, cdf_norm, rsqrt). */
const char *pe_libm_name(pe_op op);
bool pe_composed_in_double(pe_op op);

/* Compiles n kernels together (to a shared object at `so_path` if given, for
 * the disk cache; else in memory).  On success fns[i] are their entry points
 * and *unit owns them (free with pe_gccjit_unit_free when no kernel is used
 * any more).  On failure writes the compiler's message to err. */
bool pe_gccjit_compile(const kir_kernel *const *kernels, size_t n, const char *isa, const char *so_path,
                       pe_kernel_fn *fns, pe_gccjit_unit **unit, char *err, size_t err_size);
void pe_gccjit_unit_free(pe_gccjit_unit *unit);

#endif
