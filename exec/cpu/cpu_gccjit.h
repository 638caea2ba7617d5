/* cpu_gccjit.h — the CPU code generator: kernel IR to machine code through
 * libgccjit, all kernels of a program sequence in one compilation.  What it
 * shares with every generator (libm names, emission classes, kernel names)
 * is in codegen.h; which ops it emits is its own (cpu_ops.def). */
#ifndef PE_CPU_GCCJIT_H
#define PE_CPU_GCCJIT_H

#include <stddef.h>

#include "../../jit/kir/kir.h"
#include "../../jit/kir/target.h"

/* Results a reduction along an outer axis accumulates side by side, a
 * block along the last axis (gccjit_loops.c); the executor keeps a block
 * in one launch (cpu.c's launch grain). */
#define PE_GCCJIT_AXIS_BLOCK 64

/* False when a reduction appended to this body would not vectorise: gcc 12
 * rejects the loop once f32 pow's primitive (its special cases, in double)
 * feeds the double accumulators ("multiple types in fold-left reduction"),
 * 27 ns per element against 3.6 ns for pow as a map; the reduction then
 * runs as a kernel of its own over the stored values. */
bool pe_gccjit_reduction_fusible(const kir_kernel *body);
/* True if the CPU generator can emit `op` computed in `ctype` giving `dtype`
 * (operand0: the dtype of the first operand, for casts): cpu_ops.def's
 * emits column (cpu_ops.c); the fusion rules' emittable. */
bool pe_cpu_can_emit(pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0);
/* The CPU executor's fusion rules: pe_cpu_can_emit and the predicate above. */
extern const pe_fusion_rules pe_gccjit_fusion_rules;


/* A libgccjit context with the options every CPU compilation uses (-O3,
 * `isa`'s -march, no errno, no contraction into FMA, no traps; NULL with the
 * reason in err): the kernels' (below) and the library loops' (cpu_spmv.c). */
struct gcc_jit_context *pe_gccjit_context(const char *isa, char *err, size_t err_size);

/* Compiles n kernels together into a shared object at `so_path` (the CPU
 * executor links it: exec/cpu_link.c; their ABI is pe_kernel_fn there), exported
 * under kir_kernel_name.  On failure writes the compiler's message to err. */
bool pe_gccjit_compile(const kir_kernel *const *kernels, size_t n, const char *isa, const char *so_path, char *err,
                       size_t err_size);

#endif
