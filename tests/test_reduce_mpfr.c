/* test_reduce_mpfr.c — reductions against exact oracles (issue 24): sum,
 * mean, var, stddev, norm1, norm2 and dot, f32 and f64, full and per axis,
 * on whichever executor PE_EXECUTOR names (ctest runs it on the JIT and on
 * the interpreter).
 *
 * Two oracles:
 *   - integer-valued data whose sums are exact in the dtype (any order of
 *     summation gives them exactly): sum and dot must equal them bit for bit;
 *   - MPFR: the exact value of the reduction of the very values given, to
 *     256 bits (mpfr_sum is correctly rounded however the exponents spread),
 *     for random data of several kinds: uniform, wide (log-uniform
 *     magnitudes, both signs), ill-conditioned (pairs that cancel, so that
 *     the sum is 1e-10 of the sum of magnitudes) and offset (a large mean
 *     with a small spread: what a one-pass variance loses).
 *
 * The bounds checked are the ones docs/accuracy.md states for the
 * compensated sum (u: the unit roundoff of the dtype, 2^-24 or 2^-53; v:
 * that of double, 2^-53; n: the element count; C: the sum of the terms'
 * magnitudes; S: the exact value):
 *   f64 sum, norm1:  |s - S| <= 2u|S| + 4n u^2 C       (Neumaier, Higham 4.3)
 *   f32 sum, norm1:  |s - S| <= u|S| + n v C           (double accumulation, rounded once)
 *   dot: the same over the products, plus u C in f64 (each product rounded once)
 *   mean: the sum's bound over n, plus u|S/n| (the division)
 *   var:  8u V + the square of the mean's bound       (two passes, deviations squared)
 *   stddev: half var's relative bound, plus u          (and the mean's term over 2 sigma)
 *   norm2: (5u + 2n u^2)|S| in f64 (scaled sum of squares, square root),
 *          (u + n v + 5v)|S| in f32 (squares exact in double)
 * NaN and infinities as IEEE and NumPy: var([1, inf]) and stddev are NaN
 * (inf - inf), norm2([1, -inf]) is inf, anything with a NaN is NaN. */
#define _GNU_SOURCE
#include "test_util.h"

#include <mpfr.h>

enum { PREC = 256 };

typedef enum { R_SUM, R_MEAN, R_VAR, R_STDDEV, R_NORM1, R_NORM2, R_DOT, R__COUNT } reduction;
static const char *const names[R__COUNT] = {"sum", "mean", "var", "stddev", "norm1", "norm2", "dot"};

static pe_array full(reduction r, pe_array a, pe_array b)
{
    switch (r) {
    case R_SUM: return pe_sum(a);
    case R_MEAN: return pe_mean(a);
    case R_VAR: return pe_var(a);
    case R_STDDEV: return pe_stddev(a);
    case R_NORM1: return pe_norm1(a);
    case R_NORM2: return pe_norm2(a);
    default: return pe_dot(a, b);
    }
}

static pe_array along(reduction r, pe_array a, int axis)
{
    switch (r) {
    case R_SUM: return pe_sum_axis(a, axis);
    case R_MEAN: return pe_mean_axis(a, axis);
    case R_VAR: return pe_var_axis(a, axis);
    case R_STDDEV: return pe_stddev_axis(a, axis);
    case R_NORM1: return pe_norm1_axis(a, axis);
    default: return pe_norm2_axis(a, axis);
    }
}

/* ------------------------------------------------------------ the oracle */

/* The exact reduction of x[0], x[stride], ... (n of them; y likewise for
 * dot) to PREC bits, and C, the sum of the magnitudes of its terms (the
 * products for dot, the squared deviations for var). */
typedef struct {
    double exact, mean_exact;
    long double magnitudes, mean_magnitudes; /* long double: squares of 1e200 must not make the bound infinite */
} oracle;

static void mpfr_sum_of(mpfr_t out, mpfr_t *terms, int64_t n)
{
    mpfr_ptr *ptr = malloc((size_t)(n > 0 ? n : 1) * sizeof *ptr);
    for (int64_t i = 0; i < n; i++) ptr[i] = terms[i];
    mpfr_sum(out, ptr, (unsigned long)n, MPFR_RNDN);
    free(ptr);
}

static oracle exact_reduction(reduction r, const double *x, const double *y, int64_t n, int64_t stride)
{
    mpfr_t *t = malloc((size_t)(n > 0 ? n : 1) * sizeof *t);
    mpfr_t s, m;
    mpfr_inits2(PREC, s, m, (mpfr_ptr)0);
    oracle o = {0, 0, 0, 0};
    for (int64_t i = 0; i < n; i++) {
        mpfr_init2(t[i], PREC);
        double xi = x[i * stride];
        if (r == R_DOT) {
            mpfr_set_d(t[i], xi, MPFR_RNDN);
            mpfr_mul_d(t[i], t[i], y[i * stride], MPFR_RNDN); /* exact: 106 bits */
        } else if (r == R_NORM1) {
            mpfr_set_d(t[i], fabs(xi), MPFR_RNDN);
        } else if (r == R_NORM2) {
            mpfr_set_d(t[i], xi, MPFR_RNDN);
            mpfr_sqr(t[i], t[i], MPFR_RNDN);
        } else {
            mpfr_set_d(t[i], xi, MPFR_RNDN);
        }
        o.magnitudes += fabsl(mpfr_get_ld(t[i], MPFR_RNDN));
    }
    mpfr_sum_of(s, t, n);
    if (r == R_MEAN || r == R_VAR || r == R_STDDEV) {
        mpfr_div_si(m, s, (long)n, MPFR_RNDN);
        o.mean_exact = mpfr_get_d(m, MPFR_RNDN);
        o.mean_magnitudes = o.magnitudes / (long double)n;
    }
    if (r == R_VAR || r == R_STDDEV) { /* the squared deviations from the exact mean */
        o.magnitudes = 0;
        for (int64_t i = 0; i < n; i++) {
            mpfr_set_d(t[i], x[i * stride], MPFR_RNDN);
            mpfr_sub(t[i], t[i], m, MPFR_RNDN);
            mpfr_sqr(t[i], t[i], MPFR_RNDN);
            o.magnitudes += mpfr_get_ld(t[i], MPFR_RNDN);
        }
        mpfr_sum_of(s, t, n);
        mpfr_div_si(s, s, (long)n, MPFR_RNDN);
        if (r == R_STDDEV) mpfr_sqrt(s, s, MPFR_RNDN);
    } else if (r == R_MEAN) {
        mpfr_set(s, m, MPFR_RNDN);
    } else if (r == R_NORM2) {
        mpfr_sqrt(s, s, MPFR_RNDN);
    }
    o.exact = mpfr_get_d(s, MPFR_RNDN); /* the double nearest: 2^-53 relative, far inside the bounds */
    for (int64_t i = 0; i < n; i++) mpfr_clear(t[i]);
    mpfr_clears(s, m, (mpfr_ptr)0);
    free(t);
    return o;
}

/* The bound the header states, for n terms in dtype t (in long double:
 * the terms' magnitudes may be beyond double's range where the result is not). */
static double bound_of(reduction r, pe_dtype t, int64_t n, const oracle *o)
{
    const long double v = 0x1p-53L, u = t == PE_F32 ? 0x1p-24L : v;
    const long double N = (long double)n, S = fabsl((long double)o->exact);
    /* the sum of the terms (products for dot), before any division */
    long double sum_bound = t == PE_F32 ? N * v * o->magnitudes : 4 * N * u * u * o->magnitudes;
    long double rounding = t == PE_F32 ? u : 2 * u; /* of the result relative to |S| */
    long double b;
    /* 1.001: the oracle itself is the double nearest the exact value */
    switch (r) {
    case R_SUM:
    case R_NORM1: b = rounding * S + sum_bound; break;
    case R_DOT: b = rounding * S + sum_bound + (t == PE_F64 ? u * o->magnitudes : 0); break;
    case R_MEAN: b = (rounding + u) * S + (t == PE_F32 ? N * v : 4 * N * u * u) * o->mean_magnitudes; break;
    case R_NORM2: /* squares (and scaling) 3 roundings, the sum's, halved by the root, the root's, the scale's */
        b = (t == PE_F32 ? u + N * v + 5 * v : 5 * u + 2 * N * u * u) * S;
        break;
    default: {
        long double vv = t == PE_F32 ? v : u; /* var and stddev are computed in double */
        long double mean_err = 3 * vv * fabsl((long double)o->mean_exact) + 4 * N * vv * vv * o->mean_magnitudes;
        long double var = r == R_VAR ? S : S * S;
        long double var_bound = 8 * vv * var + mean_err * mean_err + 4 * N * vv * vv * o->magnitudes;
        if (r == R_VAR) {
            b = var_bound + (t == PE_F32 ? u * S : 0);
        } else { /* sqrt(V + e) - sqrt(V) <= min(e / (2 sigma), sqrt(e)), then the root's rounding */
            long double spread = S > 0 ? fminl(var_bound / (2 * S), sqrtl(var_bound)) : sqrtl(var_bound);
            b = spread + vv * S + (t == PE_F32 ? u * S : 0);
        }
    }
    }
    return (double)(1.001L * b);
}

/* ------------------------------------------------------------- the data */

typedef enum { D_UNIFORM, D_WIDE, D_CANCEL, D_OFFSET, D__COUNT } distribution;
static const char *const dist_names[D__COUNT] = {"uniform", "wide", "ill-conditioned", "offset"};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double uniform01(void) { return (double)(next_u64() >> 11) * 0x1p-53; }

/* n values of kind d, rounded to dtype t (the oracle sees what PE sees). */
static void make_data(double *x, int64_t n, distribution d, pe_dtype t)
{
    double wide_exp = t == PE_F32 ? 30 : 200;
    for (int64_t i = 0; i < n; i++) {
        double v;
        switch (d) {
        case D_UNIFORM: v = 2 * uniform01() - 1; break;
        case D_WIDE: v = (next_u64() & 1 ? -1 : 1) * pow(10, (2 * uniform01() - 1) * wide_exp); break;
        case D_CANCEL: /* pairs a, -a (a up to 1e6) in random places, and small terms */
            v = (i & 1) ? -x[i - 1] : (2 * uniform01() - 1) * 1e6;
            if ((i & 1) && uniform01() < 0.05) v += (2 * uniform01() - 1) * 1e-3;
            break;
        default: v = 1e4 + (2 * uniform01() - 1); break; /* offset */
        }
        x[i] = t == PE_F32 ? (double)(float)v : v;
    }
    if (d == D_CANCEL) /* shuffle, so that partners fall in different lanes and chunks */
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)(next_u64() % (uint64_t)(i + 1));
            double tmp = x[i];
            x[i] = x[j], x[j] = tmp;
        }
}

static pe_array upload(pe_dtype t, int rank, const int64_t *shape, const double *x, int64_t n)
{
    if (t == PE_F64) return pe_from_host(PE_F64, rank, shape, x);
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    for (int64_t i = 0; i < n; i++) f[i] = (float)x[i];
    pe_array a = pe_from_host(PE_F32, rank, shape, f);
    free(f);
    return a;
}

/* A value beyond the dtype's range must come out infinite (f32 results
 * of f32 data may overflow where the double oracle does not). */
static void check_value(double got, double exact, double bound, pe_dtype t, const char *what)
{
    double in_dtype = t == PE_F32 ? (double)(float)exact : exact;
    if (isinf(in_dtype)) {
        if (got != in_dtype) fail_msg("%s: got %.17g, exact %.17g beyond the dtype's range", what, got, exact);
        return;
    }
    if (!(fabs(got - exact) <= bound))
        fail_msg("%s: got %.17g, exact %.17g: error %.3g beyond the bound %.3g", what, got, exact, fabs(got - exact),
                 bound);
}

/* ---------------------------------------------------------------- tests */

/* Integer-valued data whose sums are exact in f32 (|partial sums| < 2^24):
 * sum and dot are exact whatever the order; the rest within their bounds. */
static void test_integer_valued_exact(void **state)
{
    (void)state;
    const int64_t sizes[] = {1, 2, 3, 17, 1000, 16384 * 3 + 5, 160003};
    const pe_dtype types[] = {PE_F32, PE_F64};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int64_t n = sizes[k];
        double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
        long long sx = 0, sxy = 0;
        for (int64_t i = 0; i < n; i++) {
            x[i] = (double)((long long)(next_u64() % 201) - 100);
            y[i] = (double)((long long)(next_u64() % 161) - 80);
            sx += (long long)x[i], sxy += (long long)x[i] * (long long)y[i];
        }
        for (int ti = 0; ti < 2; ti++) {
            pe_dtype t = types[ti];
            pe_array a = upload(t, 1, &n, x, n), b = upload(t, 1, &n, y, n);
            double got;
            assert_int_equal(pe_read_f64(pe_sum(a), &got), PE_OK);
            if (got != (double)sx) fail_msg("sum of %lld integers (%d): got %.17g want %lld", (long long)n, t, got, sx);
            /* |x.y| reaches 1.3e9: exact in f64, correctly rounded from double in f32 */
            double want_dot = t == PE_F32 ? (double)(float)sxy : (double)sxy;
            assert_int_equal(pe_read_f64(pe_dot(a, b), &got), PE_OK);
            if (got != want_dot) fail_msg("dot of %lld integers (%d): got %.17g want %.17g", (long long)n, t, got, want_dot);
            for (int r = R_MEAN; r <= R_NORM2; r++) {
                oracle o = exact_reduction((reduction)r, x, NULL, n, 1);
                assert_int_equal(pe_read_f64(full((reduction)r, a, b), &got), PE_OK);
                char what[96];
                snprintf(what, sizeof what, "%s of %lld integers (%s)", names[r], (long long)n, t == PE_F32 ? "f32" : "f64");
                check_value(got, o.exact, bound_of((reduction)r, t, n, &o), t, what);
            }
            pe_release(a), pe_release(b);
        }
        free(x), free(y);
    }
    tu_expect_no_error();
}

/* Random data of each kind, full reductions, against MPFR. */
static void test_random_against_mpfr(void **state)
{
    (void)state;
    const int64_t sizes[] = {1, 2, 7, 1000, 16384 * 3 + 5, 200003};
    const pe_dtype types[] = {PE_F32, PE_F64};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int64_t n = sizes[k];
        double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
        for (int ti = 0; ti < 2; ti++) {
            pe_dtype t = types[ti];
            for (int d = 0; d < D__COUNT; d++) {
                make_data(x, n, (distribution)d, t);
                make_data(y, n, D_UNIFORM, t);
                pe_array a = upload(t, 1, &n, x, n), b = upload(t, 1, &n, y, n);
                for (int r = 0; r < R__COUNT; r++) {
                    oracle o = exact_reduction((reduction)r, x, y, n, 1);
                    double got;
                    assert_int_equal(pe_read_f64(full((reduction)r, a, b), &got), PE_OK);
                    char what[128];
                    snprintf(what, sizeof what, "%s of %lld %s values (%s)", names[r], (long long)n,
                             dist_names[d], t == PE_F32 ? "f32" : "f64");
                    check_value(got, o.exact, bound_of((reduction)r, t, n, &o), t, what);
                }
                pe_release(a), pe_release(b);
            }
        }
        free(x), free(y);
    }
    tu_expect_no_error();
}

/* Per-row and per-column reductions of a matrix: each output against MPFR. */
static void test_axes_against_mpfr(void **state)
{
    (void)state;
    const int64_t rows = 37, cols = 1031, n = rows * cols, shape[2] = {rows, cols};
    double *x = malloc((size_t)n * sizeof *x);
    const pe_dtype types[] = {PE_F32, PE_F64};
    for (int ti = 0; ti < 2; ti++) {
        pe_dtype t = types[ti];
        for (int d = 0; d < D__COUNT; d++) {
            make_data(x, n, (distribution)d, t);
            pe_array a = upload(t, 2, shape, x, n);
            for (int r = R_SUM; r <= R_NORM2; r++) {
                for (int axis = 0; axis < 2; axis++) {
                    pe_array red = along((reduction)r, a, axis);
                    int64_t count;
                    double *got = tu_read_as_f64(red, &count);
                    assert_int_equal(count, axis == 0 ? cols : rows);
                    int64_t len = axis == 0 ? rows : cols, stride = axis == 0 ? cols : 1;
                    for (int64_t j = 0; j < count; j++) {
                        const double *first = axis == 0 ? x + j : x + j * cols;
                        oracle o = exact_reduction((reduction)r, first, NULL, len, stride);
                        char what[128];
                        snprintf(what, sizeof what, "%s along axis %d of %s (%s), output %lld", names[r], axis,
                                 dist_names[d], t == PE_F32 ? "f32" : "f64", (long long)j);
                        check_value(got[j], o.exact, bound_of((reduction)r, t, len, &o), t, what);
                    }
                    free(got);
                    pe_release(red);
                }
            }
            pe_release(a);
        }
    }
    free(x);
    tu_expect_no_error();
}

/* Magnitudes whose squares leave double's range, the result inside it:
 * norm2 and stddev scale (stddev of {1e200, -1e200} was inf, of
 * {1e-200, -1e-200} was 0). */
static void test_stddev_without_spurious_overflow(void **state)
{
    (void)state;
    const double cases[][4] = {{1e200, -1e200, 1e200, -1e200}, {1e-200, -1e-200, 1e-200, -1e-200},
                               {3e307, -1e308, 2e307, 5e306}, {1e-310, -2e-310, 3e-310, 0}};
    for (int k = 0; k < 4; k++) {
        int64_t n = 4;
        pe_array a = pe_f64_1d(cases[k], 4);
        oracle o = exact_reduction(R_STDDEV, cases[k], NULL, 4, 1);
        double got;
        assert_int_equal(pe_read_f64(pe_stddev(a), &got), PE_OK);
        char what[64];
        snprintf(what, sizeof what, "stddev of {%g, %g, ...}", cases[k][0], cases[k][1]);
        check_value(got, o.exact, bound_of(R_STDDEV, PE_F64, n, &o), PE_F64, what);
        pe_release(a);
    }
    tu_expect_no_error();
}

/* Magnitudes whose squares leave the dtype's range: norm2 scales. */
static void test_norm2_without_spurious_overflow(void **state)
{
    (void)state;
    const double cases[][3] = {{1e30, 1e30, 1e30}, {1e-30, -1e-30, 1e-30}, {3e38, 4e38, 0}};
    for (int k = 0; k < 3; k++) {
        for (int ti = 0; ti < 2; ti++) {
            pe_dtype t = ti ? PE_F64 : PE_F32;
            double x[3];
            for (int i = 0; i < 3; i++) x[i] = t == PE_F64 ? cases[k][i] * (k == 1 ? 1e-170 : 1e270) : (double)(float)cases[k][i];
            if (t == PE_F32 && k == 2) continue; /* 4e38 is not an f32 */
            int64_t n = 3;
            pe_array a = upload(t, 1, &n, x, n);
            oracle o = exact_reduction(R_NORM2, x, NULL, 3, 1);
            double got;
            assert_int_equal(pe_read_f64(pe_norm2(a), &got), PE_OK);
            char what[64];
            snprintf(what, sizeof what, "norm2 of %g (%s)", x[0], t == PE_F32 ? "f32" : "f64");
            if (isinf(o.exact)) assert_true(isinf(got));
            else check_value(got, o.exact, bound_of(R_NORM2, t, 3, &o), t, what);
            pe_release(a);
        }
    }
    tu_expect_no_error();
}

/* NaN and infinities in the reductions the other tests leave out. */
static void test_special_values(void **state)
{
    (void)state;
    struct {
        double x[3];
        reduction r;
        double want; /* NaN: must be NaN */
    } cases[] = {
        {{1, INFINITY, 2}, R_VAR, NAN},      {{1, INFINITY, 2}, R_STDDEV, NAN},
        {{1, -INFINITY, 2}, R_NORM2, INFINITY}, {{NAN, INFINITY, 2}, R_NORM2, NAN},
        {{1, NAN, 2}, R_VAR, NAN},           {{1, NAN, 2}, R_MEAN, NAN},
        {{INFINITY, INFINITY, 1}, R_MEAN, INFINITY}, {{5, 5, 5}, R_VAR, 0},
        {{5, 5, 5}, R_STDDEV, 0},            {{-INFINITY, 1, 2}, R_NORM1, INFINITY},
        {{0, 0, 0}, R_NORM2, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        for (int ti = 0; ti < 2; ti++) {
            pe_dtype t = ti ? PE_F64 : PE_F32;
            int64_t n = 3;
            pe_array a = upload(t, 1, &n, cases[k].x, n);
            double got;
            assert_int_equal(pe_read_f64(full(cases[k].r, a, a), &got), PE_OK);
            bool ok = isnan(cases[k].want) ? isnan(got) : got == cases[k].want;
            if (!ok)
                fail_msg("%s of {%g, %g, %g} (%s): got %g want %g", names[cases[k].r], cases[k].x[0], cases[k].x[1],
                         cases[k].x[2], t == PE_F32 ? "f32" : "f64", got, cases[k].want);
            pe_release(a);
        }
    tu_expect_no_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_integer_valued_exact, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_random_against_mpfr, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_axes_against_mpfr, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_norm2_without_spurious_overflow, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_stddev_without_spurious_overflow, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_special_values, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
