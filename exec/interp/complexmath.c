/* complexmath.c — the reference value of each op on complex operands
 * (irformat/ops_complex.def): the interpreter's complex path and the oracle
 * of any generated complex code.
 *
 * C99 <complex.h> in double complex (cexp, clog, csqrt, cpow, carg), but for
 * the arithmetic a code generator lowers to real operations, written out so
 * that both compute the same steps:
 *   mul  (ac - bd) + (ad + bc) i, no fused multiply-add: C99 Annex G's
 *        recovery of infinities is not done (NumPy's formula too):
 *        (inf + 0i) * 1 is inf + NaN i;
 *   div  Smith's algorithm (1962) on the divisor scaled by a power of two
 *        into [1, 2) as C99 Annex G's _Cdivd does (the quotient scaled back
 *        at the end): no |divisor|^2 is formed, so nothing overflows or
 *        underflows where the quotient does not, and a subnormal divisor
 *        keeps its bits; a divisor of
 *        0 gives Annex G's infinities (x / 0 = copysign(inf, c) * x's parts,
 *        NaN where a part of x is 0), other infinite or NaN operands what the
 *        formula gives (NaN where Annex G would recover an infinity or 0);
 *   abs  hypot(re, im): no overflow of re^2 + im^2, correctly signed zero. */
#include <complex.h>
#include <math.h>

#include "refmath.h"
#include "../../irformat/dtypes.h"

double complex pe_ref_complex_mul(double complex x, double complex y)
{
    double a = creal(x), b = cimag(x), c = creal(y), d = cimag(y);
    return CMPLX(a * c - b * d, a * d + b * c);
}

double complex pe_ref_complex_div(double complex x, double complex y)
{
    double a = creal(x), b = cimag(x), c = creal(y), d = cimag(y);
    if (c == 0 && d == 0) {
        double inf = copysign(INFINITY, c);
        return CMPLX(inf * a, inf * b);
    }
    /* the divisor scaled by a power of two into [1, 2) (exact): Smith's
     * steps on a subnormal divisor would lose its low bits (2e-14 relative
     * at 1e-310), on a huge one overflow where the quotient does not */
    int scale = 0;
    double larger = fmax(fabs(c), fabs(d));
    if (isfinite(larger)) {
        scale = ilogb(larger);
        c = scalbn(c, -scale), d = scalbn(d, -scale);
    }
    double e, f;
    if (fabs(c) >= fabs(d)) {
        double r = d / c, den = c + d * r;
        e = (a + b * r) / den, f = (b - a * r) / den;
    } else {
        double r = c / d, den = c * r + d;
        e = (a * r + b) / den, f = (b * r - a) / den;
    }
    return CMPLX(scalbn(e, -scale), scalbn(f, -scale));
}

double complex pe_ref_round_to_c(pe_dtype t, double complex v)
{
    if (!pe_dtype_is_complex(t)) return CMPLX(pe_ref_round_to(t, creal(v)), 0.0);
    return CMPLX(pe_ref_round_to(t, creal(v)), pe_ref_round_to(t, cimag(v)));
}

double complex pe_ref_map_c(pe_op op, double complex a, double complex b, double complex c)
{
    switch (op) {
    case PE_OP_add: return a + b;
    case PE_OP_sub: return a - b;
    case PE_OP_mul: return pe_ref_complex_mul(a, b);
    case PE_OP_div: return pe_ref_complex_div(a, b);
    case PE_OP_pow: return cpow(a, b);
    case PE_OP_neg: return -a;
    case PE_OP_abs: return hypot(creal(a), cimag(a));
    case PE_OP_exp: return cexp(a);
    case PE_OP_log: return clog(a);
    case PE_OP_sqrt: return csqrt(a);
    case PE_OP_eq: return creal(a) == creal(b) && cimag(a) == cimag(b);
    case PE_OP_ne: return !(creal(a) == creal(b) && cimag(a) == cimag(b));
    case PE_OP_cond: return creal(a) != 0 ? b : c; /* a real condition: nonzero (NaN too) is true */
    case PE_OP_conj: return conj(a);
    case PE_OP_real: return creal(a);
    case PE_OP_imag: return cimag(a);
    case PE_OP_arg: return carg(a);
    case PE_OP_complex: return CMPLX(creal(a), creal(b));
    case PE_OP_cast: return a;
    default: return CMPLX(NAN, NAN); /* not in ops_complex.def: refused when recorded */
    }
}
