/* test_mpfr.c — every element-wise primitive against MPFR (issue 24): in
 * f32 and f64, on the CPU JIT, on the reference interpreter and on the CUDA
 * generator's code run on the host (cuda_host_run.h), over PE_MPFR_INPUTS
 * inputs per op and dtype (default 100000): random over the op's domain,
 * log-uniform where the range is wide, and an edge set (±0, subnormals,
 * ±inf, NaN, the largest finite values, values around singular and branch
 * points, sin/cos/tan up to 1e30).
 *
 * The oracle is the exact value to 160 bits.  A result's error is its
 * distance from it in units in the last place of the dtype (a correctly
 * rounded result is within 0.5).  Where the correctly rounded value is not
 * finite, or the exact value is zero, or the result is not finite, the
 * result must be that value itself (IEEE and C99 Annex F special values;
 * signed zeros too); where a nonzero exact value rounds to 0 (below half
 * the least subnormal), a nonzero result counts in least subnormals.
 * Each op's random inputs are seeded by its name (an op added to the
 * catalog once shifted every later op's inputs, and with them maxima the
 * bounds had been fitted to: the bounds of f32 tan and f64 acsc, acot,
 * sinh, acosh were raised by a quarter ulp for the maxima other inputs find).
 * The test fails when an op exceeds its bound below (floors: f32 2 ulp,
 * f64 4 ulp).  `test_mpfr --table FILE` writes the measured maxima as a
 * Markdown table (docs/accuracy.md is made so: `cmake --build build
 * --target accuracy-table`); PE_MPFR_OP=name measures that op alone (more
 * inputs in the time: PE_MPFR_OP=root PE_MPFR_INPUTS=10000000).
 *
 * root also has its values written out (test_root_values): pe.h's table of
 * special values, issue 36's cases and root(1, n) = 1 for n at every float
 * exponent, compared bit for bit. */
#define _GNU_SOURCE
#include "cuda_host_run.h"

#include <float.h>
#include <mpfr.h>
#include <pthread.h>

#include "exec/base/runtime.h"

enum { PREC = 160 };

typedef pe_array (*api1)(const pe_site *, pe_array);
typedef pe_array (*api2)(const pe_site *, pe_array, pe_array);
typedef pe_array (*api3)(const pe_site *, pe_array, pe_array, pe_array);
typedef void (*exact_fn)(mpfr_t y, mpfr_t *x); /* y = op(x[0], x[1], x[2]) to PREC bits */

/* Where an op's random inputs come from. */
typedef enum {
    DOM_WIDE,   /* both signs, magnitudes log-uniform over 1e-30 .. 1e30 (1e-300 .. 1e300 in f64) */
    DOM_TRIG,   /* both signs, up to 1e30; half of them within 4 pi */
    DOM_EXP,    /* where exp neither overflows nor underflows entirely: |x| < 100, and the edges */
    DOM_POS,    /* positive, log-uniform wide */
    DOM_UNIT,   /* [-1, 1], half of them near ±1 */
    DOM_GE1,    /* |x| >= 1, half of them within 1e-3 of ±1 */
    DOM_ACOSH,  /* [1, 1e30], half of them within 1e-3 of 1 */
    DOM_SMALL,  /* |x| < 40 (erf, erfc, cdf_norm, tanh, ...) */
    DOM_POW,    /* x positive log-uniform 1e-5 .. 1e5, y in [-40, 40]; some x < 0 with integer y */
    DOM_ROOT,   /* x both signs, every binade from the least subnormal to the largest finite;
                 * n (root_exponent) integers ±1..±64, odd ones up to 2^53, ±2^-k, every
                 * binade, fractional, and n putting x^(1/n) anywhere in range */
    DOM_LOGB,   /* x positive wide, base in [0.1, 100] */
} domain;

typedef struct {
    const char *name;
    int arity;
    void *api; /* api1 / api2 / api3 */
    pe_op op;
    exact_fn exact;
    domain dom;
    double bound_f32, bound_f64; /* ulps allowed (documented in docs/accuracy.md) */
} op_case;

/* ------------------------------------------------------------ the oracle */

#define EXACT1(name, call) \
    static void exact_##name(mpfr_t y, mpfr_t *x) { call(y, x[0], MPFR_RNDN); }
#define EXACT2(name, call) \
    static void exact_##name(mpfr_t y, mpfr_t *x) { call(y, x[0], x[1], MPFR_RNDN); }
EXACT1(exp, mpfr_exp) EXACT1(exp2, mpfr_exp2) EXACT1(exp10, mpfr_exp10) EXACT1(expm1, mpfr_expm1)
EXACT1(log, mpfr_log) EXACT1(log2, mpfr_log2) EXACT1(log10, mpfr_log10) EXACT1(log1p, mpfr_log1p)
EXACT1(sqrt, mpfr_sqrt) EXACT1(cbrt, mpfr_cbrt)
EXACT1(sin, mpfr_sin) EXACT1(cos, mpfr_cos) EXACT1(tan, mpfr_tan) EXACT1(sec, mpfr_sec) EXACT1(csc, mpfr_csc)
EXACT1(cot, mpfr_cot) EXACT1(asin, mpfr_asin) EXACT1(acos, mpfr_acos) EXACT1(atan, mpfr_atan)
EXACT1(sinh, mpfr_sinh) EXACT1(cosh, mpfr_cosh) EXACT1(tanh, mpfr_tanh) EXACT1(sech, mpfr_sech)
EXACT1(csch, mpfr_csch) EXACT1(coth, mpfr_coth) EXACT1(asinh, mpfr_asinh) EXACT1(acosh, mpfr_acosh)
EXACT1(atanh, mpfr_atanh) EXACT1(erf, mpfr_erf) EXACT1(erfc, mpfr_erfc)
EXACT2(add, mpfr_add) EXACT2(sub, mpfr_sub) EXACT2(mul, mpfr_mul) EXACT2(div, mpfr_div) EXACT2(pow, mpfr_pow)
EXACT2(mod, mpfr_fmod) EXACT2(atan2, mpfr_atan2)

static void exact_floor(mpfr_t y, mpfr_t *x) { mpfr_floor(y, x[0]); }
static void exact_ceil(mpfr_t y, mpfr_t *x) { mpfr_ceil(y, x[0]); }
static void exact_trunc(mpfr_t y, mpfr_t *x) { mpfr_trunc(y, x[0]); }
static void exact_round(mpfr_t y, mpfr_t *x) { mpfr_round(y, x[0]); }
/* IEEE 754's rSqrt(-0) is -inf (MPFR's is +inf, as its manual warns) */
static void exact_rsqrt(mpfr_t y, mpfr_t *x)
{
    if (mpfr_zero_p(x[0]) && mpfr_signbit(x[0])) mpfr_set_inf(y, -1);
    else mpfr_rec_sqrt(y, x[0], MPFR_RNDN);
}
static void exact_rcp(mpfr_t y, mpfr_t *x) { mpfr_ui_div(y, 1, x[0], MPFR_RNDN); }
static void exact_fma(mpfr_t y, mpfr_t *x) { mpfr_fma(y, x[0], x[1], x[2], MPFR_RNDN); }
/* the inverse of 1/x, 1/x exact to PREC bits first */
static void exact_asec(mpfr_t y, mpfr_t *x) { mpfr_ui_div(y, 1, x[0], MPFR_RNDN), mpfr_acos(y, y, MPFR_RNDN); }
static void exact_acsc(mpfr_t y, mpfr_t *x) { mpfr_ui_div(y, 1, x[0], MPFR_RNDN), mpfr_asin(y, y, MPFR_RNDN); }
static void exact_acot(mpfr_t y, mpfr_t *x) { mpfr_ui_div(y, 1, x[0], MPFR_RNDN), mpfr_atan(y, y, MPFR_RNDN); }
static void exact_cdf_norm(mpfr_t y, mpfr_t *x) /* erfc(-x / sqrt 2) / 2 */
{
    mpfr_t s;
    mpfr_init2(s, PREC + 32);
    mpfr_sqrt_ui(s, 2, MPFR_RNDN);
    mpfr_div(s, x[0], s, MPFR_RNDN);
    mpfr_neg(s, s, MPFR_RNDN);
    mpfr_erfc(y, s, MPFR_RNDN);
    mpfr_div_2ui(y, y, 1, MPFR_RNDN);
    mpfr_clear(s);
}
static void exact_logb(mpfr_t y, mpfr_t *x) /* log(x) / log(base) */
{
    mpfr_t b;
    mpfr_init2(b, PREC + 32);
    mpfr_log(b, x[1], MPFR_RNDN);
    mpfr_log(y, x[0], MPFR_RNDN);
    mpfr_div(y, y, b, MPFR_RNDN);
    mpfr_clear(b);
}
/* root(x, n) = x^(1/n) with 1/n exact (docs/accuracy.md's table), from its
 * definition and not from refmath.c's steps: an odd integer n (any sign of
 * x) by mpfr_rootn_ui, reciprocated for n < 0; a negative x (and -inf) with
 * any other n only where 1/n is an integer (MPFR says whether 1/n is exact),
 * else NaN; everything else |x|^(1/n) by mpfr_pow, 1/n to PREC + 64 bits
 * (its rounding moves the result by |log(x) / n| 2^-(PREC+64)), whose special
 * values (exponent ±inf for n = ±0, ±0 for n = ±inf, pow(1, NaN) = 1) are
 * the table's. */
static void exact_root(mpfr_t y, mpfr_t *x)
{
    mpfr_ptr a = x[0], n = x[1];
    mpfr_t t, h;
    mpfr_init2(t, PREC + 64), mpfr_init2(h, 64);
    bool odd = false;
    if (mpfr_integer_p(n) && mpfr_cmpabs_ui(n, 1) >= 0) {
        mpfr_div_2ui(h, n, 1, MPFR_RNDN); /* exact */
        odd = !mpfr_integer_p(h);
    }
    if (odd && !mpfr_nan_p(a)) {
        mpfr_abs(h, n, MPFR_RNDN);
        mpfr_rootn_ui(t, a, mpfr_get_ui(h, MPFR_RNDN), MPFR_RNDN); /* the real root, -0's is -0 */
        if (mpfr_sgn(n) < 0) mpfr_ui_div(y, 1, t, MPFR_RNDN);
        else mpfr_set(y, t, MPFR_RNDN);
    } else {
        int inexact = mpfr_ui_div(t, 1, n, MPFR_RNDN); /* 1/±0 = ±inf, 1/±inf = ±0 */
        if (mpfr_sgn(a) < 0 && !mpfr_inf_p(t) && !mpfr_zero_p(t) && (inexact || !mpfr_integer_p(t))) {
            mpfr_set_nan(y); /* a negative x to a power that is not an integer (nor ±inf, ±0) */
        } else if (mpfr_sgn(a) < 0 && !mpfr_inf_p(t) && !mpfr_zero_p(t)) {
            mpfr_pow(y, a, t, MPFR_RNDN); /* 1/n an even integer exactly: n = ±2^-k */
        } else {
            if (mpfr_zero_p(a)) mpfr_abs(a, a, MPFR_RNDN); /* -0 to a power that is not odd: +0's */
            mpfr_pow(y, a, t, MPFR_RNDN);
        }
    }
    mpfr_clear(t), mpfr_clear(h);
}

#define OP1(n, dom, b32, b64) {#n, 1, (void *)pe_##n##_at, PE_OP_##n, exact_##n, dom, b32, b64}
#define OP2(n, dom, b32, b64) {#n, 2, (void *)pe_##n##_at, PE_OP_##n, exact_##n, dom, b32, b64}
static const op_case cases[] = {
    {"fma", 3, (void *)pe_fma_at, PE_OP_fma, exact_fma, DOM_WIDE, 0.5, 0.5},
    OP2(add, DOM_WIDE, 0.5, 0.5),      OP2(sub, DOM_WIDE, 0.5, 0.5),      OP2(mul, DOM_WIDE, 0.5, 0.5),
    OP2(div, DOM_WIDE, 0.5, 0.5),      OP1(sqrt, DOM_POS, 0.5, 0.5),      OP1(rcp, DOM_WIDE, 0.5, 0.5),
    OP1(rsqrt, DOM_POS, 1, 1.5),       OP1(cbrt, DOM_WIDE, 1, 1),       OP2(root, DOM_ROOT, 1, 1),
    OP2(pow, DOM_POW, 1, 1),           OP1(exp, DOM_EXP, 1.5, 1),         OP1(exp2, DOM_EXP, 1, 1),
    OP1(exp10, DOM_EXP, 1, 2),         OP1(expm1, DOM_EXP, 1, 1),         OP1(log, DOM_POS, 1, 1),
    OP1(log2, DOM_POS, 1, 1),          OP1(log10, DOM_POS, 2, 1.5),       OP1(log1p, DOM_WIDE, 1, 1),
    OP2(logb, DOM_LOGB, 1, 2),         OP1(sin, DOM_TRIG, 1, 1),          OP1(cos, DOM_TRIG, 1, 1),
    OP1(tan, DOM_TRIG, 1.25, 1),          OP1(sec, DOM_TRIG, 1, 1.5),        OP1(csc, DOM_TRIG, 1, 1.5),
    OP1(cot, DOM_TRIG, 1, 1.5),        OP1(asin, DOM_UNIT, 1, 1),         OP1(acos, DOM_UNIT, 1, 1),
    OP1(atan, DOM_WIDE, 1, 1),         OP1(asec, DOM_GE1, 1, 1.5),        OP1(acsc, DOM_GE1, 1, 1.25),
    OP1(acot, DOM_WIDE, 1, 1.25),         OP2(atan2, DOM_WIDE, 1.5, 1),      OP1(sinh, DOM_SMALL, 2, 1.75),
    OP1(cosh, DOM_SMALL, 1, 1),        OP1(tanh, DOM_SMALL, 2, 2),        OP1(sech, DOM_SMALL, 1, 2.5),
    OP1(csch, DOM_SMALL, 1, 2.5),      OP1(coth, DOM_SMALL, 1, 2.5),      OP1(asinh, DOM_WIDE, 1.5, 1.5),
    OP1(acosh, DOM_ACOSH, 2, 2.25),       OP1(atanh, DOM_UNIT, 2, 2),        OP1(erf, DOM_SMALL, 1, 1),
    OP1(erfc, DOM_SMALL, 1, 3),        OP1(cdf_norm, DOM_SMALL, 1, 1.5),  OP2(mod, DOM_WIDE, 0.5, 0.5),
    OP1(floor, DOM_WIDE, 0, 0),        OP1(ceil, DOM_WIDE, 0, 0),         OP1(trunc, DOM_WIDE, 0, 0),
    OP1(round, DOM_WIDE, 0, 0),
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* ------------------------------------------------------------ the inputs */

static uint64_t next_u64(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform(uint64_t *s, double lo, double hi) { return lo + (hi - lo) * ((double)(next_u64(s) >> 11) * 0x1p-53); }
static double log_uniform(uint64_t *s, double lo, double hi) { return exp(uniform(s, log(lo), log(hi))); }
static double either_sign(uint64_t *s, double x) { return next_u64(s) & 1 ? -x : x; }

/* A magnitude in a binade drawn uniformly from the dtype's, subnormal ones
 * (2^-1074 .. 2^-1023, 2^-149 .. 2^-127) to the largest. */
static double any_binade(uint64_t *s, bool f64)
{
    int lo = f64 ? -1074 : -149, hi = f64 ? 1023 : 127;
    double v = ldexp(uniform(s, 1, 2), lo + (int)(next_u64(s) % (uint64_t)(hi - lo + 1)));
    return fmin(f64 ? v : (double)(float)v, f64 ? DBL_MAX : FLT_MAX); /* m rounded to 2 at the top: not inf */
}

/* Operand j of a random input in domain d; wide magnitudes reach 1e300 in f64. */
static double random_operand(uint64_t *s, domain d, int j, bool f64)
{
    double wide = f64 ? 1e300 : 1e30, tiny = f64 ? 1e-300 : 1e-30;
    bool near = next_u64(s) & 1;
    switch (d) {
    case DOM_WIDE: return either_sign(s, log_uniform(s, tiny, wide));
    case DOM_TRIG: return either_sign(s, near ? uniform(s, 0, 4 * M_PI) : log_uniform(s, 1e-6, 1e30));
    case DOM_EXP: return uniform(s, -100, 100);
    case DOM_POS: return log_uniform(s, tiny, wide);
    case DOM_UNIT: return either_sign(s, near ? 1 - log_uniform(s, 1e-12, 1e-3) : uniform(s, 0, 1));
    case DOM_GE1: return either_sign(s, near ? 1 + log_uniform(s, 1e-12, 1e-3) : log_uniform(s, 1, wide));
    case DOM_ACOSH: return near ? 1 + log_uniform(s, 1e-12, 1e-3) : log_uniform(s, 1, wide);
    case DOM_SMALL: return uniform(s, -40, 40);
    case DOM_POW:
        if (j == 1) return near ? (double)(int)uniform(s, -40, 40) : uniform(s, -40, 40);
        return either_sign(s, log_uniform(s, 1e-5, 1e5));
    case DOM_ROOT: return either_sign(s, any_binade(s, f64)); /* n: root_exponent */
    case DOM_LOGB: return j == 1 ? uniform(s, 0.1, 100) : log_uniform(s, tiny, wide);
    }
    return 0;
}

/* root's n for a random x: the integers ±1..±64 (the usual roots), odd
 * integers up to the largest the dtype holds, ±2^-k (1/n an even integer:
 * real for negative x), magnitudes in every binade of the dtype (subnormal
 * n, where 1/n overflows, to the largest, where x^(1/n) is 1), fractional
 * ones, and n = log|x| / u for u uniform over the result's exponent range,
 * so that x^(1/n) lands anywhere in range and |log(x) / n| is large, where
 * the rounding of 1/n costs pow(x, 1/n) most (up to 745 ulps in f64). */
static double root_exponent(uint64_t *s, double x, bool f64)
{
    double odd_max = f64 ? 0x1p53 - 1 : 0x1p24 - 1, u;
    switch (next_u64(s) % 8) {
    case 0: case 1: return either_sign(s, (double)(1 + next_u64(s) % 64));
    case 2: return either_sign(s, fmin(odd_max, 2 * floor(log_uniform(s, 1, odd_max) / 2) + 1));
    case 3: return either_sign(s, ldexp(1, -(int)(next_u64(s) % (f64 ? 1075 : 150))));
    case 4: return either_sign(s, any_binade(s, f64));
    case 5: return either_sign(s, uniform(s, 0, 40));
    default:
        u = f64 ? uniform(s, -744, 709) : uniform(s, -103, 88);
        return x == 0 || u == 0 ? 3 : log(fabs(x)) / u;
    }
}

/* root's grid: each x with each n (the issue 36 cases among them). */
static const double root_x64[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 0x1p-1074, -0x1p-1074, 0x1p-1022,
                                  -0x1p-1022, 0x1.fffffffffffffp1023, -0x1.fffffffffffffp1023, 2.0, -8.0, 0.5, -0.5,
                                  0x1.0000000000001p0, 0x1.fffffffffffffp-1, 0x1.7e43c8800759cp+996, 1e-300, -27.0};
static const double root_n64[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.5, -0.5,
                                  0.25, -0.25, 1.5, -1.5, 0x1.fffffffffffffp1023, -0x1.fffffffffffffp1023, 0x1p-1074,
                                  -0x1p-1074, 0x1p-1022, -0x1p-1022, 0x1p53 - 1, -(0x1p53 - 1), 0x1p52 + 1, 0x1p60,
                                  1e300, -1e300, 1e-300, 1e-8, 3e38, 1e-30, 0x1p24 - 1, -(0x1p24 - 1), 0x1p-126};
enum { ROOT_GRID = sizeof root_x64 / sizeof *root_x64 * (sizeof root_n64 / sizeof *root_n64) };

/* The edge set: every operand takes each of these (the others a 1.5). */
static const double edges64[] = {0.0, -0.0, 0x1p-1074, -0x1p-1074, 0x1p-1022, -0x1p-1022, 0x1.fffffffffffffp1023,
                                 -0x1.fffffffffffffp1023, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0x1.0000000000001p0,
                                 0x1.fffffffffffffp-1, -0x1.0000000000001p0, 2.0, -2.0, 0.5, M_PI_2, M_PI, -M_PI_2,
                                 1e30, -1e30, 1e22, 709.5, -745.0, 88.5, -103.0, 3.0, 0.25, 1e-8};
static const double edges32[] = {0.0, -0.0, 0x1p-149, -0x1p-149, 0x1p-126, -0x1p-126, 0x1.fffffep127, -0x1.fffffep127,
                                 INFINITY, -INFINITY, NAN, 1.0, -1.0, 0x1.000002p0, 0x1.fffffep-1, -0x1.000002p0, 2.0,
                                 -2.0, 0.5, (float)M_PI_2, (float)M_PI, -(float)M_PI_2, 1e30, -1e30, 1e22, 88.5, -103.0,
                                 3.0, 0.25, 1e-8};

typedef struct {
    int64_t n;
    double *x[3]; /* operands, already rounded to the dtype */
} inputs;

static inputs make_inputs(const op_case *c, pe_dtype t, int64_t n_random)
{
    bool f64 = t == PE_F64;
    const double *edge = f64 ? edges64 : edges32;
    int n_edge = f64 ? (int)(sizeof edges64 / sizeof *edges64) : (int)(sizeof edges32 / sizeof *edges32);
    int64_t n_grid = c->dom == DOM_ROOT ? ROOT_GRID : 0;
    inputs in = {.n = n_random + (int64_t)c->arity * n_edge + n_grid};
    /* the op's name picks its inputs: a row added to the catalog must not
     * change every later op's (its enum value did) */
    uint64_t seed = 0x5eed0000u + (uint64_t)f64;
    for (const char *ch = c->name; *ch; ch++) seed = (seed ^ (unsigned char)*ch) * 1099511628211ull;
    for (int j = 0; j < c->arity; j++) in.x[j] = malloc((size_t)in.n * sizeof(double));
    for (int64_t i = 0; i < in.n; i++)
        for (int j = 0; j < c->arity; j++) {
            double v;
            int64_t g = i - n_random - (int64_t)c->arity * n_edge, n_n = sizeof root_n64 / sizeof *root_n64;
            if (i < n_random && c->dom == DOM_ROOT && j == 1) v = root_exponent(&seed, in.x[0][i], f64);
            else if (i < n_random) v = random_operand(&seed, c->dom, j, f64);
            else if (g >= 0) v = j == 0 ? root_x64[g / n_n] : root_n64[g % n_n];
            else if ((i - n_random) / n_edge == j) v = edge[(i - n_random) % n_edge];
            else v = c->dom == DOM_ROOT && j == 1 ? 3.0 : 1.5;
            in.x[j][i] = f64 ? v : (double)(float)v;
        }
    return in;
}

static void free_inputs(inputs *in)
{
    for (int j = 0; j < 3; j++) free(in->x[j]);
}

/* ------------------------------------------------------ the exact values */

typedef struct {
    const op_case *c;
    const inputs *in;
    bool f64;
    int64_t from, to;
    double *rounded; /* the correctly rounded value in the dtype */
    double *ulp_err_base; /* the exact value, as a double pair: hi */
    double *lo;           /* ... and the remainder exact - hi, in ulps of the dtype at hi */
} exact_job;

/* The dtype's ulp in v's binade (the least subnormal's below the normal range). */
static double ulp_at(double v, bool f64)
{
    int p = f64 ? 53 : 24, emin = f64 ? -1022 : -126, e = v == 0 || !isfinite(v) ? emin : ilogb(v);
    return ldexp(1.0, (e > emin ? e : emin) - (p - 1));
}

static void *exact_values(void *arg)
{
    exact_job *j = arg;
    mpfr_t y, r, x[3];
    mpfr_init2(y, PREC), mpfr_init2(r, PREC);
    for (int k = 0; k < 3; k++) mpfr_init2(x[k], 64);
    for (int64_t i = j->from; i < j->to; i++) {
        for (int k = 0; k < j->c->arity; k++) mpfr_set_d(x[k], j->in->x[k][i], MPFR_RNDN);
        j->c->exact(y, x);
        double hi = mpfr_get_d(y, MPFR_RNDN);
        mpfr_sub_d(r, y, hi, MPFR_RNDN);
        /* in ulps: in f64 below 2^-969 the remainder itself is below 2^-1022,
         * where a double holds it only to the least subnormal (half an ulp) */
        mpfr_div_d(r, r, ulp_at(hi, j->f64), MPFR_RNDN);
        j->ulp_err_base[i] = hi;
        j->lo[i] = mpfr_get_d(r, MPFR_RNDN);
        /* mpfr_get_d and mpfr_get_flt round into the subnormals and overflow as the format does */
        j->rounded[i] = j->f64 ? hi : (double)mpfr_get_flt(y, MPFR_RNDN);
    }
    mpfr_clear(y), mpfr_clear(r);
    for (int k = 0; k < 3; k++) mpfr_clear(x[k]);
    return NULL;
}

/* ------------------------------------------------------- the executors */

enum { EX_JIT, EX_INTERP, EX_CUDA_HOST, N_EX };
static const char *const ex_names[N_EX] = {"CPU JIT", "interpreter", "CUDA C on host"};

static double *run_pe(const op_case *c, pe_dtype t, const inputs *in)
{
    void *buf[3] = {0};
    pe_array a[3];
    for (int j = 0; j < c->arity; j++) {
        buf[j] = malloc((size_t)in->n * 8);
        for (int64_t i = 0; i < in->n; i++) {
            if (t == PE_F32) ((float *)buf[j])[i] = (float)in->x[j][i];
            else ((double *)buf[j])[i] = in->x[j][i];
        }
        a[j] = pe_from_host(t, 1, &in->n, buf[j]);
    }
    pe_array r = c->arity == 1 ? ((api1)c->api)(PE_HERE, a[0])
               : c->arity == 2 ? ((api2)c->api)(PE_HERE, a[0], a[1])
                               : ((api3)c->api)(PE_HERE, a[0], a[1], a[2]);
    int64_t count;
    double *got = tu_read_as_f64(r, &count);
    pe_release(r);
    for (int j = 0; j < c->arity; j++) pe_release(a[j]), free(buf[j]);
    return got;
}

static double *run_cuda_host(void *lib, const kir_kernel *k, pe_dtype t, const inputs *in)
{
    pe_cuda_args args = {0};
    void *buf[4];
    int arity = k->n_params - 1;
    for (int j = 0; j <= arity; j++) {
        buf[j] = calloc((size_t)in->n, 8);
        for (int64_t i = 0; j < arity && i < in->n; i++) {
            if (t == PE_F32) ((float *)buf[j])[i] = (float)in->x[j][i];
            else ((double *)buf[j])[i] = in->x[j][i];
        }
        args.p[j].ptr = (unsigned long long)(uintptr_t)buf[j];
    }
    host_launch(lib, k, in->n, &args, 16, 64);
    double *got = malloc((size_t)in->n * sizeof *got);
    for (int64_t i = 0; i < in->n; i++) got[i] = t == PE_F32 ? ((float *)buf[arity])[i] : ((double *)buf[arity])[i];
    for (int j = 0; j <= arity; j++) free(buf[j]);
    return got;
}

/* ------------------------------------------------------ the measurement */

/* got's distance from the exact value hi + lo ulp, in ulps of dtype t at
 * it; INFINITY for a wrong special value. */
static double error_ulps(double got, double rounded, double hi, double lo, pe_dtype t)
{
    int p = t == PE_F32 ? 24 : 53, emin = t == PE_F32 ? -126 : -1022;
    /* an exact value that rounds to 0 (erfc far out: below half the least
     * subnormal): a nonzero result is that many least subnormals off, not
     * a wrong special value */
    if (rounded == 0 && got != 0 && isfinite(got)) return fabs(got) / ldexp(1.0, emin - (p - 1));
    if (!isfinite(rounded) || (hi == 0 && lo == 0) || !isfinite(got)) return tu_same_value(got, rounded) ? 0 : INFINITY;
    return fabs((got - hi) / ulp_at(hi, t == PE_F64) - lo); /* got - hi exact where the two are close */
}

typedef struct {
    bool ran[N_CASES][2][N_EX]; /* not: an op the CUDA generator leaves to the host */
    double worst[N_CASES][2][N_EX];
    double worst_at[N_CASES][2][N_EX][3];
} measured;

static measured results;

static void measure(int ci, pe_dtype t, int64_t n_random, void *cuda_lib, const kir_kernel *cuda_kernel)
{
    const op_case *c = &cases[ci];
    bool f64 = t == PE_F64;
    inputs in = make_inputs(c, t, n_random);
    double *rounded = malloc((size_t)in.n * 8), *hi = malloc((size_t)in.n * 8), *lo = malloc((size_t)in.n * 8);
    exact_job jobs[2];
    pthread_t th[2];
    for (int w = 0; w < 2; w++) {
        jobs[w] = (exact_job){c, &in, f64, in.n * w / 2, in.n * (w + 1) / 2, rounded, hi, lo};
        assert_int_equal(pthread_create(&th[w], NULL, exact_values, &jobs[w]), 0);
    }
    for (int w = 0; w < 2; w++) pthread_join(th[w], NULL);
    for (int ex = 0; ex < N_EX; ex++) {
        double *got;
        if (ex == EX_CUDA_HOST && !cuda_kernel) continue;
        results.ran[ci][f64][ex] = true;
        if (ex == EX_CUDA_HOST) {
            got = run_cuda_host(cuda_lib, cuda_kernel, t, &in);
        } else {
            pe_config cfg = {.device = 1, .executor = ex == EX_INTERP ? "interp" : "jit", .log_level = 1};
            assert_int_equal(pe_init(&cfg), PE_OK);
            got = run_pe(c, t, &in);
            pe_shutdown();
        }
        double *w = &results.worst[ci][f64][ex];
        for (int64_t i = 0; i < in.n; i++) {
            double err = error_ulps(got[i], rounded[i], hi[i], lo[i], t);
            if (err > *w || isnan(err)) {
                *w = err;
                for (int j = 0; j < c->arity; j++) results.worst_at[ci][f64][ex][j] = in.x[j][i];
                if (isinf(err))
                    fprintf(stderr, "%s %s %s(%.17g%s): got %.17g, want %.17g\n", ex_names[ex], f64 ? "f64" : "f32",
                            c->name, in.x[0][i], c->arity > 1 ? ", ..." : "", got[i], rounded[i]);
            }
        }
        free(got);
    }
    free(rounded), free(hi), free(lo);
    free_inputs(&in);
}

static void write_table(FILE *f, int64_t n_random)
{
    fprintf(f, "<!-- generated by tests/test_mpfr.c (`cmake --build build --target accuracy-table`); do not edit -->\n");
    fprintf(f, "# Accuracy of the element-wise primitives\n\n");
    fprintf(f, "Largest error in ulps against MPFR (160 bits) over %lld random inputs per op and dtype over\n"
               "the op's domain plus an edge set (signed zeros, subnormals, infinities, NaN, the largest finite\n"
               "values, points around singularities and branch points). A correctly rounded result is within\n"
               "0.5 ulp; `inf` would be a wrong special value (none is allowed). Bound: what the test allows.\n"
               "—: the CUDA generator does not emit the op (the GPU executor leaves it to the host).\n\n",
            (long long)n_random);
    fprintf(f, "| op | f32 JIT | f32 interp | f32 CUDA C | f32 bound | f64 JIT | f64 interp | f64 CUDA C | f64 bound |\n");
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int ci = 0; ci < N_CASES; ci++) {
        fprintf(f, "| %s", cases[ci].name);
        for (int d = 0; d < 2; d++) {
            for (int ex = 0; ex < N_EX; ex++)
                if (results.ran[ci][d][ex]) fprintf(f, " | %.3g", results.worst[ci][d][ex]);
                else fprintf(f, " | —");
            fprintf(f, " | %.3g", d ? cases[ci].bound_f64 : cases[ci].bound_f32);
        }
        fprintf(f, " |\n");
    }
    /* root's values: what exact_root computes and refmath.c's real_root implements */
    fprintf(f, "\n## root\n\n"
               "`pe_root(x, n)` is x^(1/n) with 1/n exact (not rounded to a double: pow(x, 1/n) is up to 745 ulps\n"
               "off where |log(x) / n| nears 745). It is C99's pow at the exact exponent (1/±0 = ±inf,\n"
               "1/±inf = ±0) but for negative x, which has a real root for an odd integer n (-root(-x, n)) and\n"
               "otherwise only where 1/n is an integer. The oracle (`exact_root`): odd n by `mpfr_rootn_ui`,\n"
               "the rest `mpfr_pow` with 1/n to 224 bits. Random x over every binade (subnormal to the largest),\n"
               "n: integers ±1..±64, odd integers up to 2^53 - 1 (2^24 - 1 in f32), ±2^-k, every binade, fractional,\n"
               "and n = log|x| / u with u over the result's exponent range; a grid of special x and n besides.\n"
               "Over 10^7 random inputs (`PE_MPFR_OP=root PE_MPFR_INPUTS=10000000 build/tests/test_mpfr`) the\n"
               "largest error is 0.5008 ulp in f64 and 0.5 in f32: x^r (r = 1/n rounded) and the factor\n"
               "1 + (1/n - r) log x are multiplied in long double and rounded once (`exec/interp/refmath.c`).\n"
               "`test_root_values` checks every cell bit for bit (signed zeros too) at x = ±0, 1, -1, ±64, 1/64,\n"
               "±inf, NaN and n = ±0, ±inf, NaN, ±3, ±2, ±0.5. Rows: x; columns: n.\n\n"
               "| x \\ n | > 0 odd integer | < 0 odd integer | ±2^-k (k >= 1) | other > 0 | other < 0 | +0 | -0 | ±inf | NaN |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n"
               "| > 0, finite | x^(1/n) | x^(1/n) | x^(1/n) | x^(1/n) | x^(1/n) | pow(x, +inf) | pow(x, -inf) | 1 | NaN (x = 1: 1) |\n"
               "| +0 | +0 | +inf | +0 / +inf | +0 | +inf | +0 | +inf | 1 | NaN |\n"
               "| -0 | -0 | -inf | +0 / +inf | +0 | +inf | +0 | +inf | 1 | NaN |\n"
               "| < 0, finite | -\\|x\\|^(1/n) | -\\|x\\|^(1/n) | \\|x\\|^(1/n) | NaN | NaN | pow(x, +inf) | pow(x, -inf) | 1 | NaN |\n"
               "| +inf | +inf | +0 | +inf / +0 | +inf | +0 | +inf | +0 | 1 | NaN |\n"
               "| -inf | -inf | -0 | +inf / +0 | NaN | NaN | +inf | +0 | 1 | NaN |\n"
               "| NaN | NaN | NaN | NaN | NaN | NaN | NaN | NaN | 1 | NaN |\n\n"
               "pow(x, +inf) is +inf for \\|x\\| > 1, +0 for \\|x\\| < 1, 1 for x = ±1; pow(x, -inf) the reverse.\n"
               "±2^-k: the first value for n > 0, the second for n < 0.\n");
    /* the reductions' bounds: what tests/test_reduce_mpfr.c checks */
    fprintf(f, "\n## Reductions\n\n"
               "`tests/test_reduce_mpfr.c` checks sum, mean, var, stddev, norm1, norm2 and dot, full and along\n"
               "each axis, f32 and f64, on the JIT and the interpreter, against the exact value (MPFR, 256 bits;\n"
               "integer-valued data whose sums are exact must come out exact) on uniform, log-uniform wide,\n"
               "ill-conditioned (|S| = 1e-10 of the sum of magnitudes) and offset data. f32 data is summed in\n"
               "double and rounded once; f64 sums are Neumaier-compensated per lane and combined compensated.\n"
               "With u the dtype's unit roundoff (2^-24, 2^-53), v = 2^-53, n terms, S the exact value and C the\n"
               "sum of the terms' magnitudes:\n\n"
               "| reduction | f32 | f64 |\n|---|---|---|\n"
               "| sum, norm1 | u\\|S\\| + n v C | 2u\\|S\\| + 4n u² C |\n"
               "| dot | u\\|S\\| + n v C (products exact in double) | 2u\\|S\\| + u C + 4n u² C |\n"
               "| mean | the sum's bound / n + u\\|S\\| | likewise |\n"
               "| var | 8v V + δ² + 4n v² C, then rounded to f32 | 8u V + δ² + 4n u² C |\n"
               "| stddev | var's error e as min(e / 2σ, √e), + v σ, rounded | likewise with u |\n"
               "| norm2 | (u + n v + 5v)\\|S\\| | (5u + 2n u²)\\|S\\| |\n\n"
               "δ: the mean's error, 3v\\|mean\\| + 4n v² C / n. var and stddev scale the deviations by a power\n"
               "of two and norm2 by the largest magnitude, so that no square overflows or underflows where the\n"
               "result does not. NaN and infinities as IEEE: a NaN term gives NaN, `sum([1, inf]) = inf`,\n"
               "`sum([inf, -inf])`, `var([1, inf])` and `stddev([1, inf])` are NaN, `norm2([1, -inf]) = inf`.\n");
}

static const char *table_path;

static void test_primitives_against_mpfr(void **state)
{
    (void)state;
    const char *env = getenv("PE_MPFR_INPUTS");
    int64_t n_random = env ? atoll(env) : 100000;
    const char *only = getenv("PE_MPFR_OP"); /* one op, over many inputs: no table file */
    /* the CUDA generator's kernels, one per op and dtype, in one source */
    kernel_list l = {0};
    int index[N_CASES][2];
    for (int ci = 0; ci < N_CASES; ci++)
        for (int d = 0; d < 2; d++) {
            pe_dtype t = d ? PE_F64 : PE_F32;
            index[ci][d] = -1;
            if (!pe_cuda_can_emit(cases[ci].op, t, t, t)) continue;
            add(&l, map_kernel(cases[ci].op, t, cases[ci].arity));
            index[ci][d] = (int)l.n - 1;
        }
    char *src = emit_all(&l);
    void *lib = host_build(src);
    int failed = 0;
    for (int ci = 0; ci < N_CASES; ci++)
        for (int d = 0; d < 2; d++) {
            if (only && strcmp(cases[ci].name, only) != 0) continue;
            measure(ci, d ? PE_F64 : PE_F32, n_random, lib, index[ci][d] < 0 ? NULL : &l.k[index[ci][d]]);
            double bound = d ? cases[ci].bound_f64 : cases[ci].bound_f32;
            for (int ex = 0; ex < N_EX; ex++) {
                double w = results.worst[ci][d][ex];
                if (only && results.ran[ci][d][ex])
                    fprintf(stderr, "%s %s %s: %.4g ulp at (%.17g, %.17g, %.17g)\n", ex_names[ex], d ? "f64" : "f32",
                            cases[ci].name, w, results.worst_at[ci][d][ex][0], results.worst_at[ci][d][ex][1],
                            results.worst_at[ci][d][ex][2]);
                if (results.ran[ci][d][ex] && (w > bound || isnan(w))) {
                    const double *at = results.worst_at[ci][d][ex];
                    fprintf(stderr, "%s %s %s: %g ulp > %g, at (%.17g, %.17g, %.17g)\n", ex_names[ex], d ? "f64" : "f32",
                            cases[ci].name, w, bound, at[0], at[1], at[2]);
                    failed++;
                }
            }
        }
    write_table(stdout, n_random);
    if (table_path && !only) {
        FILE *f = fopen(table_path, "w");
        assert_non_null(f);
        write_table(f, n_random);
        fclose(f);
    }
    dlclose(lib);
    free(src), free(l.k);
    assert_int_equal(failed, 0);
}

/* ------------------------------------------- root's values, written out */

/* pe_root's documented values (pe.h, docs/accuracy.md's table), spelled out
 * here rather than taken from exact_root: an oracle that read the table the
 * same wrong way as refmath.c would agree with it.  Rows x, columns n. */
static const double root_table_x[] = {0.0, -0.0, 1.0, -1.0, 64.0, -64.0, 1 / 64.0, INFINITY, -INFINITY, NAN};
static const double root_table_n[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 3, -3, 2, -2, 0.5, -0.5};
#define I INFINITY
static const double root_table[10][11] = {
    /*           +0    -0   +inf -inf  NaN    3      -3      2      -2     0.5    -0.5 */
    /* +0   */ {0.0,  I,    1,   1,    NAN,  0.0,   I,      0.0,   I,     0.0,   I},
    /* -0   */ {0.0,  I,    1,   1,    NAN,  -0.0,  -I,     0.0,   I,     0.0,   I},
    /* 1    */ {1,    1,    1,   1,    1,    1,     1,      1,     1,     1,     1},
    /* -1   */ {1,    1,    1,   1,    NAN,  -1,    -1,     NAN,   NAN,   1,     1},
    /* 64   */ {I,    0.0,  1,   1,    NAN,  4,     0.25,   8,     0.125, 4096,  0x1p-12},
    /* -64  */ {I,    0.0,  1,   1,    NAN,  -4,    -0.25,  NAN,   NAN,   4096,  0x1p-12},
    /* 1/64 */ {0.0,  I,    1,   1,    NAN,  0.25,  4,      0.125, 8,     0x1p-12, 4096},
    /* +inf */ {I,    0.0,  1,   1,    NAN,  I,     0.0,    I,     0.0,   I,     0.0},
    /* -inf */ {I,    0.0,  1,   1,    NAN,  -I,    -0.0,   NAN,   NAN,   I,     0.0},
    /* NaN  */ {NAN,  NAN,  1,   1,    NAN,  NAN,   NAN,    NAN,   NAN,   NAN,   NAN},
};
#undef I

/* Issue 36's cases and their kin, named, with what the code before gave. */
static const struct {
    double x, n, want;
    bool f64_only; /* x or n not a float */
    const char *was;
} root_regressions[] = {
    {0x1.7e43c8800759cp+996, -DBL_MAX, 1.0, true, "issue 36, was 0.99999999443731535 (2.5e7 ulp)"},
    /* n the largest float: the Newton step from y = 1 made 1 + (x - 1) / n
     * (x chosen so that it made 8.66e216, the value) */
    {0x1.91f0932c29848p+848, FLT_MAX, 1.0, true, "issue 36, was 8.66e216"},
    {0x1.fffffep127, FLT_MAX, 1.0, false, "issue 36, was 2"},
    /* a rounded 1/n that is an odd integer: pow(-0, -3) = -inf where the
     * root of -0 (n not an odd integer) is +0's, +inf */
    {-0.0, -1 / 3.0, INFINITY, true, "issue 36, was -inf"},
    {-0.0, -0.2, INFINITY, true, "issue 36, was -inf"},
    {-0.0, 1 / 3.0, 0.0, true, "issue 36, was -0"},
    {-8.0, 1 / 3.0, NAN, true, "issue 36, was -512"},
    {-8.0, -1 / 3.0, NAN, true, "issue 36, was -0.001953125"},
};
enum { N_ROOT_REGRESSIONS = sizeof root_regressions / sizeof root_regressions[0] };

/* root(1, n) = 1 for every n (NaN too): both signs of n at every float
 * exponent (the subnormal floats 2^-149 .. 2^-127 among them, where 1/n
 * overflows in float but not in double) with 32 mantissas each, and the
 * special values. */
static int64_t root_of_one_cases(double *n, int64_t cap)
{
    int64_t k = 0;
    uint64_t seed = 0x1ull;
    for (int e = -149; e <= 127; e++)
        for (int m = 0; m < 32; m++)
            for (int sign = 0; sign < 2 && k < cap; sign++) {
                double v = fmin((double)(float)ldexp(m ? uniform(&seed, 1, 2) : 1.0, e), FLT_MAX);
                n[k++] = sign ? -v : v;
            }
    static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN};
    for (int i = 0; i < 5 && k < cap; i++) n[k++] = special[i];
    return k;
}

static void test_root_values(void **state)
{
    (void)state;
    const op_case *root = NULL;
    for (int ci = 0; ci < N_CASES; ci++)
        if (strcmp(cases[ci].name, "root") == 0) root = &cases[ci];
    assert_non_null(root);
    enum { N_TABLE = 10 * 11, N_ONE = 277 * 32 * 2 + 5 };
    double *x = malloc((N_TABLE + N_ROOT_REGRESSIONS + N_ONE) * sizeof *x);
    double *n = malloc((N_TABLE + N_ROOT_REGRESSIONS + N_ONE) * sizeof *n);
    double *want = malloc((N_TABLE + N_ROOT_REGRESSIONS + N_ONE) * sizeof *want);
    const char **what = malloc((N_TABLE + N_ROOT_REGRESSIONS + N_ONE) * sizeof *what);
    int failed = 0;
    for (int ex = 0; ex < 2; ex++)
        for (int d = 0; d < 2; d++) {
            bool f64 = d;
            int64_t k = 0;
            for (int i = 0; i < 10; i++)
                for (int j = 0; j < 11; j++, k++)
                    x[k] = root_table_x[i], n[k] = root_table_n[j], want[k] = root_table[i][j], what[k] = "table";
            for (int i = 0; i < N_ROOT_REGRESSIONS; i++)
                if (f64 || !root_regressions[i].f64_only) {
                    x[k] = root_regressions[i].x, n[k] = root_regressions[i].n, want[k] = root_regressions[i].want;
                    what[k++] = root_regressions[i].was;
                }
            int64_t ones = root_of_one_cases(n + k, N_ONE);
            for (int64_t i = k; i < k + ones; i++) x[i] = 1.0, want[i] = 1.0, what[i] = "root of 1";
            k += ones;
            for (int64_t i = 0; i < k; i++) /* every value above is a float, but for f64_only's */
                if (!f64) assert_true(tu_same_value((double)(float)x[i], x[i]) && tu_same_value((double)(float)n[i], n[i]));
            inputs in = {.n = k, .x = {x, n}};
            pe_config cfg = {.device = 1, .executor = ex ? "interp" : "jit", .log_level = 1};
            assert_int_equal(pe_init(&cfg), PE_OK);
            double *got = run_pe(root, f64 ? PE_F64 : PE_F32, &in);
            pe_shutdown();
            for (int64_t i = 0; i < k; i++)
                if (!tu_same_value(got[i], want[i])) {
                    fprintf(stderr, "%s %s root(%a, %a) = %a, want %a (%s)\n", ex ? "interpreter" : "CPU JIT",
                            f64 ? "f64" : "f32", x[i], n[i], got[i], want[i], what[i]);
                    failed++;
                }
            free(got);
        }
    free(x), free(n), free(want), free(what);
    assert_int_equal(failed, 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--table") == 0) table_path = argv[2];
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_root_values), cmocka_unit_test(test_primitives_against_mpfr)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
