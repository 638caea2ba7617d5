/* refmath.c — the reference semantics of each element-wise op of the catalog.
 *
 * Every MAP row of ops.def must have a ref_<name> here: the table below is
 * expanded from the catalog, so a missing one is a compile error.  Values are
 * computed in double precision from operands already converted to the op's
 * compute type; the caller rounds the result to the result dtype.
 *
 * The composed ops (sec, asec, logb, clamp, ...) are written out here again
 * although irformat/ops_codegen.def's lowering column describes their
 * decomposition for the code generators (jit/kir/kir_lower.c): this file is the
 * oracle the generated kernels are tested against, and an oracle that read
 * the same column would agree with a wrong row.  So its definitions stay
 * independent, in double, each one from the op's mathematical definition. */
#define _GNU_SOURCE
#include "refmath.h"

#include <math.h>
#include <float.h>
#include <stdbool.h>

typedef double (*ref_fn)(double a, double b, double c);

#define REF(name, expr) \
    static double ref_##name(double a, double b, double c) { (void)a; (void)b; (void)c; return (expr); }

static double nan_propagating_min(double a, double b) { return (isnan(a) || isnan(b)) ? NAN : a < b ? a : (b < a ? b : (signbit(a) ? a : b)); }
static double nan_propagating_max(double a, double b) { return (isnan(a) || isnan(b)) ? NAN : a > b ? a : (b > a ? b : (signbit(a) ? b : a)); }

/* root(x, n) = x^(1/n), 1/n taken exactly (the table in docs/accuracy.md):
 * pow's special values at the exponent 1/n (1/±0 = ±inf, 1/±inf = ±0), the
 * real root -|x|^(1/n) of a negative x (and of -0) for an odd integer n, and
 * a negative x raised only where 1/n is an integer (n = ±2^-k) — elsewhere,
 * and for -inf with an even n, NaN.
 *
 * pow(x, r) with r = 1/n rounded is off by the factor x^(1/n - r) =
 * exp(e log x), e = (1 - r n) / n (1 - r n is exact by fma): |e| <= 2^-53 /
 * |n|, so up to 745 ulps where |log(x) / n| nears 745 (585 measured).  Where
 * the result is finite and nonzero |e log x| < 1e-13, so the factor is
 * 1 + e log x.  x^r and the product are formed in long double (x86-64's
 * 64-bit significand) and rounded once: within 0.501 ulp, and neither
 * overflows nor lands in the subnormals where x^(1/n) does not.  In double,
 * pow's own error (up to 0.54 ulp) and the rounding of the product added up
 * past 1 ulp (1.003 measured; root(64, -3) came out 0.25 - 2^-55).  powl
 * costs some twenty pows: pe_root over 10^6 doubles takes 0.55 s, 0.06 s in
 * double — the reference's price for 0.5 ulp.
 * (The Newton step on y^n = x used before diverged for large |n|: y^n is
 * nowhere near x even for a correctly rounded y, e.g. y = 1 gives y^n = 1 —
 * root(1e300, -DBL_MAX) came out 0.9999999944 and negative values, issue 36.) */
static bool is_odd_integer(double n) { return fabs(n) < 0x1p53 && n == trunc(n) && fmod(fabs(n), 2.0) == 1.0; }
static double real_root(double x, double n)
{
    if (signbit(x) && is_odd_integer(n)) return -real_root(-x, n); /* -0 too: cbrt(-0) = -0, root(-0, -3) = -inf */
    int k; /* a negative x otherwise only where 1/n is an integer: n = ±2^-k, an even power */
    if (x < 0 && n != 0 && !isinf(n) && (isnan(n) || frexp(n, &k) != copysign(0.5, n) || k > 0)) return NAN;
    /* -0 (a rounded 1/n may be an odd integer: not pow(-0, 3) = -0), a
     * negative x to an even power, or n = ±0, ±inf (pow(x, ±inf or ±0) = |x|'s) */
    x = fabs(x);
    double r = 1.0 / n;
    /* pow's special cases, 1/n = ±inf (|n| < 2^-1024: the result is 0, 1 or
     * inf), and |n| >= 2^1000, where |log(x) / n| < 2^-990: it is 1 */
    if (!(x > 0 && isfinite(x) && isfinite(r) && fabs(n) < 0x1p1000)) return pow(x, r);
    double c = -fma(r, n, -1.0) / n * log(x); /* log of the factor x^(1/n - r) */
    /* beyond |c| = 2^-30, |log(x) / n| > 2^22: the result is 0 or inf, and
     * 1 + c is no longer the factor (it may be negative) */
    return fabs(c) < 0x1p-30 ? (double)(powl(x, r) * (1.0L + c)) : pow(x, r);
}

/* cbrt with one Newton step on y^3 = x whose residual is formed exactly
 * (y*y = y2 + y2lo by fma; y2*y - x rounded once): glibc's cbrt is off by
 * up to 3 ulp, this is within 1 (docs/accuracy.md).  Subnormal, zero,
 * infinite and NaN x keep cbrt's value.  Both generators emit the same
 * steps for f64 (gccjit_ops.c, cuda_emit_prelude.c's pe_cbrt). */
static double accurate_cbrt(double x)
{
    double y = cbrt(x);
    if (!(fabs(x) >= DBL_MIN && fabs(x) <= DBL_MAX)) return y;
    double y2 = y * y, y2lo = fma(y, y, -y2);
    double r = fma(y2, y, -x) + y2lo * y;
    return y - r / (3.0 * y2);
}

/* asec and acsc near |x| = 1 from x*x - 1 formed with one rounding (fma):
 * acos(1/x) and asin(1/x) amplify the rounding of 1/x there (29752 and 58
 * ulp); elsewhere 1/x is at most 1/2 and they are well conditioned. */
static double accurate_asec(double x)
{
    if (!(fabs(x) < 2)) return acos(1.0 / x);
    double t = atan(sqrt(fma(x, x, -1.0)));
    return x > 0 ? t : (M_PI - t) + 1.2246467991473532e-16; /* pi - t, pi's low part added back */
}
static double accurate_acsc(double x)
{
    return fabs(x) < 2 ? copysign(atan(1.0 / sqrt(fma(x, x, -1.0))), x) : asin(1.0 / x);
}

static double sign_of(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
static bool truth(double x) { return x != 0; } /* NaN is true, as in C */

REF(add, a + b)
REF(sub, a - b)
REF(mul, a * b)
REF(div, a / b)
REF(pow, pow(a, b))
REF(mod, fmod(a, b))
REF(neg, -a)
REF(abs, fabs(a))
REF(sign, sign_of(a))
REF(fma, fma(a, b, c))
REF(min, nan_propagating_min(a, b))
REF(max, nan_propagating_max(a, b))
REF(clamp, nan_propagating_min(nan_propagating_max(a, b), c))
REF(exp, exp(a))
REF(exp2, exp2(a))
REF(exp10, exp10(a))
REF(expm1, expm1(a))
REF(log, log(a))
REF(log2, log2(a))
REF(log10, log10(a))
REF(log1p, log1p(a))
REF(logb, log(a) / log(b))
REF(sqrt, sqrt(a))
REF(rsqrt, 1.0 / sqrt(a))
REF(cbrt, accurate_cbrt(a))
REF(root, real_root(a, b))
REF(rcp, 1.0 / a)
REF(sin, sin(a))
REF(cos, cos(a))
REF(tan, tan(a))
REF(sec, 1.0 / cos(a))
REF(csc, 1.0 / sin(a))
REF(cot, 1.0 / tan(a))
REF(asin, asin(a))
REF(acos, acos(a))
REF(atan, atan(a))
REF(asec, accurate_asec(a))
REF(acsc, accurate_acsc(a))
REF(acot, atan(1.0 / a))
REF(atan2, atan2(a, b))
REF(sinh, sinh(a))
REF(cosh, cosh(a))
REF(tanh, tanh(a))
REF(sech, 1.0 / cosh(a))
REF(csch, 1.0 / sinh(a))
REF(coth, 1.0 / tanh(a))
REF(asinh, asinh(a))
REF(acosh, acosh(a))
REF(atanh, atanh(a))
REF(erf, erf(a))
REF(erfc, erfc(a))
/* in long double: in the tail erfc's slope turns the rounding of -a/sqrt(2) into
 * dozens of ulps */
REF(cdf_norm, (double)(0.5L * erfcl(-(long double)a * 0.707106781186547524400844362104849039L)))
REF(floor, floor(a))
REF(ceil, ceil(a))
REF(trunc, trunc(a))
REF(round, round(a))
REF(isnan, isnan(a) ? 1.0 : 0.0)
REF(isinf, isinf(a) ? 1.0 : 0.0)
REF(isfinite, isfinite(a) ? 1.0 : 0.0)
REF(and, truth(a) && truth(b))
REF(or, truth(a) || truth(b))
REF(not, !truth(a))
REF(nand, !(truth(a) && truth(b)))
REF(nor, !(truth(a) || truth(b)))
REF(xor, truth(a) != truth(b))
REF(lt, a < b)
REF(le, a <= b)
REF(gt, a > b)
REF(ge, a >= b)
REF(eq, a == b)
REF(ne, a != b)
REF(cond, truth(a) ? b : c)
REF(cast, a)
/* of a real operand (complex ones: complexmath.c); NumPy's values */
REF(conj, a)
REF(real, a)
REF(imag, 0.0)
REF(arg, atan2(0.0, a))
REF(complex, a) /* never asked: the result is complex (complexmath.c) */

/* Only MAP rows expand to a table entry. */
#define ENTRY_MAP(name) [PE_OP_##name] = ref_##name,
#define ENTRY_REDUCE(name)
#define ENTRY_GENERATOR(name)
#define ENTRY_VIEW(name)
#define ENTRY_INTRINSIC(name)
#define ENTRY_IO(name)
static const ref_fn ref_table[PE_OP__COUNT] = {
#define PE_OP(name, kind, arity, fusible, cost, result) ENTRY_##kind(name)
#include "../../irformat/ops.def"
};

double pe_ref_map(pe_op op, double a, double b, double c) { return ref_table[op](a, b, c); }

bool pe_ref_is_integer_op(pe_op op)
{
    switch (op) {
    case PE_OP_add: case PE_OP_sub: case PE_OP_mul: case PE_OP_div: case PE_OP_mod:
    case PE_OP_neg: case PE_OP_abs: case PE_OP_fma:
        return true;
    default:
        return false;
    }
}

int32_t pe_ref_map_i32(pe_op op, int32_t a, int32_t b, int32_t c)
{
    /* Unsigned arithmetic wraps without undefined behaviour. */
    uint32_t ua = (uint32_t)a, ub = (uint32_t)b, uc = (uint32_t)c;
    switch (op) {
    case PE_OP_add: return (int32_t)(ua + ub);
    case PE_OP_sub: return (int32_t)(ua - ub);
    case PE_OP_mul: return (int32_t)(ua * ub);
    case PE_OP_fma: return (int32_t)(ua * ub + uc);
    case PE_OP_neg: return (int32_t)(0u - ua);
    case PE_OP_abs: return a < 0 ? (int32_t)(0u - ua) : a;
    case PE_OP_div:
        if (b == 0) return 0;
        if (a == INT32_MIN && b == -1) return INT32_MIN;
        return a / b;
    case PE_OP_mod:
        if (b == 0 || b == -1) return 0;
        return a % b;
    default:
        return pe_ref_to_i32(pe_ref_map(op, a, b, c));
    }
}

int32_t pe_ref_to_i32(double v)
{
    if (isnan(v)) return 0;
    if (v >= 2147483647.0) return INT32_MAX;
    if (v <= -2147483648.0) return INT32_MIN;
    return (int32_t)v;
}

double pe_ref_round_to(pe_dtype t, double v)
{
    switch (t) {
    case PE_F32: case PE_C64: return (double)(float)v; /* c64: a part */
    case PE_I32: return (double)pe_ref_to_i32(v);
    case PE_BOOL: return v != 0 ? 1.0 : 0.0;
    default: return v;
    }
}
