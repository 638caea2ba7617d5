/* cpu_prims.h — the primitive library: vectorisable f32 routines built as
 * always-inline libgccjit functions, one set per compilation context. */
#ifndef PE_CPU_PRIMS_H
#define PE_CPU_PRIMS_H

#include <libgccjit.h>
#include <stdbool.h>

typedef struct pe_prims pe_prims;

/* NULL on out of memory (then: libm builtins); fma: the target ISA has it */
pe_prims *pe_prims_new(gcc_jit_context *ctx, bool fma);
void pe_prims_free(pe_prims *p);
/* The always-inline routine for `name` in f32 ("exp", "log", "exp2", "log2",
 * "expm1", "log1p", "sin", "cos", "tanh", "erf", "erfc", "cdf_norm", "atan",
 * "pow" (two arguments)), built on first use, or NULL when there is none
 * (f64, other names: the caller uses the gcc builtin). */
gcc_jit_function *pe_prims_get(pe_prims *p, const char *name, bool f32);

#endif
