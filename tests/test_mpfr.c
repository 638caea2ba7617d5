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
 * --target accuracy-table`). */
#define _GNU_SOURCE
#include "cuda_host_run.h"

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
    DOM_ROOT,   /* x both signs, wide; n in {2, 3, 4, 5, 7, -2, -3, 10} */
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
static void exact_root(mpfr_t y, mpfr_t *x) /* the real n-th root, n an integer here */
{
    mpfr_rootn_si(y, x[0], mpfr_get_si(x[1], MPFR_RNDN), MPFR_RNDN);
}

#define OP1(n, dom, b32, b64) {#n, 1, (void *)pe_##n##_at, PE_OP_##n, exact_##n, dom, b32, b64}
#define OP2(n, dom, b32, b64) {#n, 2, (void *)pe_##n##_at, PE_OP_##n, exact_##n, dom, b32, b64}
static const op_case cases[] = {
    {"fma", 3, (void *)pe_fma_at, PE_OP_fma, exact_fma, DOM_WIDE, 0.5, 0.5},
    OP2(add, DOM_WIDE, 0.5, 0.5),      OP2(sub, DOM_WIDE, 0.5, 0.5),      OP2(mul, DOM_WIDE, 0.5, 0.5),
    OP2(div, DOM_WIDE, 0.5, 0.5),      OP1(sqrt, DOM_POS, 0.5, 0.5),      OP1(rcp, DOM_WIDE, 0.5, 0.5),
    OP1(rsqrt, DOM_POS, 1, 1.5),       OP1(cbrt, DOM_WIDE, 1, 1),       OP2(root, DOM_ROOT, 1, 1.5),
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
    case DOM_ROOT: {
        static const double n[] = {2, 3, 4, 5, 7, -2, -3, 10};
        return j == 1 ? n[next_u64(s) % 8] : either_sign(s, log_uniform(s, tiny, wide));
    }
    case DOM_LOGB: return j == 1 ? uniform(s, 0.1, 100) : log_uniform(s, tiny, wide);
    }
    return 0;
}

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
    inputs in = {.n = n_random + (int64_t)c->arity * n_edge};
    /* the op's name picks its inputs: a row added to the catalog must not
     * change every later op's (its enum value did) */
    uint64_t seed = 0x5eed0000u + (uint64_t)f64;
    for (const char *ch = c->name; *ch; ch++) seed = (seed ^ (unsigned char)*ch) * 1099511628211ull;
    for (int j = 0; j < c->arity; j++) in.x[j] = malloc((size_t)in.n * sizeof(double));
    for (int64_t i = 0; i < in.n; i++)
        for (int j = 0; j < c->arity; j++) {
            double v;
            if (i < n_random) v = random_operand(&seed, c->dom, j, f64);
            else if ((i - n_random) / n_edge == j) v = edge[(i - n_random) % n_edge];
            else v = c->dom == DOM_ROOT && j == 1 ? 3.0 : 1.5;
            if (c->dom == DOM_ROOT && j == 1 && (i - n_random) / n_edge == j) v = 3.0; /* n stays an integer */
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
    double *lo;           /* ... and the remainder exact - hi */
} exact_job;

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

/* got's distance from the exact value hi + lo, in ulps of dtype t at it;
 * INFINITY for a wrong special value. */
static double error_ulps(double got, double rounded, double hi, double lo, pe_dtype t)
{
    int p = t == PE_F32 ? 24 : 53, emin = t == PE_F32 ? -126 : -1022;
    /* an exact value that rounds to 0 (erfc far out: below half the least
     * subnormal): a nonzero result is that many least subnormals off, not
     * a wrong special value */
    if (rounded == 0 && got != 0 && isfinite(got)) return fabs(got) / ldexp(1.0, emin - (p - 1));
    if (!isfinite(rounded) || (hi == 0 && lo == 0) || !isfinite(got)) return tu_same_value(got, rounded) ? 0 : INFINITY;
    int e = ilogb(hi);
    double ulp = ldexp(1.0, (e > emin ? e : emin) - (p - 1));
    return fabs((got - hi) - lo) / ulp;
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
            measure(ci, d ? PE_F64 : PE_F32, n_random, lib, index[ci][d] < 0 ? NULL : &l.k[index[ci][d]]);
            double bound = d ? cases[ci].bound_f64 : cases[ci].bound_f32;
            for (int ex = 0; ex < N_EX; ex++) {
                double w = results.worst[ci][d][ex];
                if (results.ran[ci][d][ex] && (w > bound || isnan(w))) {
                    const double *at = results.worst_at[ci][d][ex];
                    fprintf(stderr, "%s %s %s: %g ulp > %g, at (%.17g, %.17g, %.17g)\n", ex_names[ex], d ? "f64" : "f32",
                            cases[ci].name, w, bound, at[0], at[1], at[2]);
                    failed++;
                }
            }
        }
    write_table(stdout, n_random);
    if (table_path) {
        FILE *f = fopen(table_path, "w");
        assert_non_null(f);
        write_table(f, n_random);
        fclose(f);
    }
    dlclose(lib);
    free(src), free(l.k);
    assert_int_equal(failed, 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--table") == 0) table_path = argv[2];
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_primitives_against_mpfr)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
