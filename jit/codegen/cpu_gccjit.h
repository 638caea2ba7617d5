/* cpu_gccjit.h — the CPU code generator: kernel IR to machine code through
 * libgccjit, all kernels of a program sequence in one compilation. */
#ifndef PE_JIT_CPU_GCCJIT_H
#define PE_JIT_CPU_GCCJIT_H

#include <stddef.h>

#include "../kir/kir.h"
#include "../proggen/proggen.h"

/* Identifies this build of the code generator (the disk cache's key has it). */
uint32_t pe_gccjit_build_stamp(void);

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

/* Compiles n kernels together into a shared object at `so_path` (the CPU
 * executor links it: exec/cpu_link.c; their ABI is pe_kernel_fn there), exported
 * under kir_kernel_name.  On failure writes the compiler's message to err. */
bool pe_gccjit_compile(const kir_kernel *const *kernels, size_t n, const char *isa, const char *so_path, char *err,
                       size_t err_size);

#endif
