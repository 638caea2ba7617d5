/* refmath.h — the reference semantics of every element-wise op: one value in
 * double precision (and the exact i32 path where integer results differ from
 * rounding a double).  Used by the interpreter and by constant folding, so the
 * two can never disagree. */
#ifndef PE_EXEC_REFMATH_H
#define PE_EXEC_REFMATH_H

#include <stdbool.h>
#include <stdint.h>

#include "pe.h"
#include "../../irformat/ops.h"

/* The value of MAP op `op` on operands already converted to the compute type. */
double pe_ref_map(pe_op op, double a, double b, double c);
/* True if `op` on i32 operands follows integer rules (wrap, truncating
 * division) rather than a rounded double. */
bool pe_ref_is_integer_op(pe_op op);
/* The i32 result of an integer op (two's complement wrap). */
int32_t pe_ref_map_i32(pe_op op, int32_t a, int32_t b, int32_t c);
/* Rounds a double to what dtype `t` can hold (f32 rounding, i32 saturating
 * truncation with NaN -> 0, bool: != 0), returned as a double. */
double pe_ref_round_to(pe_dtype t, double v);
int32_t pe_ref_to_i32(double v);

/* Complex operands and results (complexmath.c): the value of an op of
 * irformat/ops_complex.def in double complex, operands already converted to
 * the compute type (a real-valued result in the real part, a comparison's
 * as 0 or 1); pe_ref_round_to_c rounds each part to dtype t's (a real t:
 * the real part alone, the imaginary part 0).  The written-out formulas
 * a code generator would emit: */
#ifndef __cplusplus
/* C11's CMPLX, where <complex.h> lacks it (glibc gives it to GCC only) */
#if !defined(CMPLX) && defined(__clang__)
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif
double _Complex pe_ref_map_c(pe_op op, double _Complex a, double _Complex b, double _Complex c);
double _Complex pe_ref_round_to_c(pe_dtype t, double _Complex v);
double _Complex pe_ref_complex_mul(double _Complex x, double _Complex y); /* (ac - bd) + (ad + bc) i */
double _Complex pe_ref_complex_div(double _Complex x, double _Complex y); /* Smith's algorithm, scaled */
#endif

#endif
