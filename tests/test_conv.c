/* test_conv.c — pe_conv / pe_correlate ("same", as scipy.signal's) against
 * a direct convolution loop in long double written here, in both regimes:
 * a small kernel (up to 64 elements, 16 complex: summed directly in one fused kernel, no
 * library call) and a larger one (through FFTs: one library call), 1-d and 2-d, batched over
 * a's leading axes, even and odd kernel lengths, a kernel longer than a;
 * f32, f64, c64 and c128 (a complex correlation conjugates the kernel, as
 * scipy's); scipy's own published answers for two small cases and a
 * complex one worked by hand; bad arguments are errors at the caller's line.  Both executors run it, and the JIT again
 * under PE_CHECK=all. */
#include <float.h>

#include "test_complex.h"

#include "test_util.h"

static const char *dtype_name(pe_dtype t) { return t == PE_F32 ? "f32" : t == PE_F64 ? "f64" : t == PE_C64 ? "c64" : t == PE_C128 ? "c128" : "other"; }

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double uniform(void) { return tu_uniform(&rng_state); } /* [-1, 1) */

static size_t size_of(pe_dtype t) { return t == PE_F32 ? 4 : t == PE_C128 ? 16 : 8; }

static void *random_buffer(pe_dtype t, int64_t n)
{
    void *b = malloc((size_t)(n ? n : 1) * size_of(t));
    assert_non_null(b);
    for (int64_t i = 0; i < n; i++) {
        switch (t) {
        case PE_F32: ((float *)b)[i] = (float)uniform(); break;
        case PE_F64: ((double *)b)[i] = uniform(); break;
        case PE_C64: ((float complex *)b)[i] = CMPLXF((float)uniform(), (float)uniform()); break;
        default: ((double complex *)b)[i] = CMPLX(uniform(), uniform()); break;
        }
    }
    return b;
}

/* The convolution (or correlation) "same" of a (batch x n0 x n1) with k
 * (k0 x k1), element (b, i, j), and the sum of the magnitudes of its terms.
 * Written from the definition: full[p] = sum_u a[u] k[p - u]; same[i] =
 * full[i + (k - 1) / 2]; a correlation is the convolution with k reversed
 * (and conjugated: scipy.signal.correlate's in2). */
static long double complex expected(pe_dtype t, const void *a, const void *k, int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                            bool correlate, int64_t b, int64_t i, int64_t j, long double *mass)
{
    long double complex s = 0;
    *mass = 0;
    for (int64_t u = 0; u < n0; u++)
        for (int64_t v = 0; v < n1; v++) {
            int64_t p = i + (k0 - 1) / 2 - u, q = j + (k1 - 1) / 2 - v; /* the kernel's element */
            if (p < 0 || p >= k0 || q < 0 || q >= k1) continue;
            int64_t kk = correlate ? (k0 - 1 - p) * k1 + (k1 - 1 - q) : p * k1 + q;
            long double complex kv = tc_at(t, k, kk);
            long double complex term = tc_at(t, a, (b * n0 + u) * n1 + v) * (correlate ? conjl(kv) : kv);
            s += term, *mass += cabsl(term);
        }
    return s;
}

/* a of shape (batch[, n0], n1) with a kernel of (k0 x) k1; dims = the kernel's rank. */
static void conv_case(pe_dtype t, int64_t batch, int64_t n0, int64_t n1, int dims, int64_t k0, int64_t k1, bool correlate,
                      bool via_fft)
{
    int64_t numel = batch * n0 * n1, taps = k0 * k1;
    void *a = random_buffer(t, numel), *k = random_buffer(t, taps);
    int64_t shape[3] = {batch, n0, n1}, kshape[2] = {k0, k1};
    int rank = dims == 2 ? 3 : 2;
    int64_t shape1[2] = {batch, n1};
    pe_array A = pe_from_host(t, rank, dims == 2 ? shape : shape1, a);
    pe_array K = pe_from_host(t, dims, dims == 2 ? kshape : &kshape[1], k);
    pe_stats before = tu_stats();
    pe_array C = correlate ? pe_correlate(A, K) : pe_conv(A, K);
    tu_expect_no_error();
    assert_int_equal(pe_dtype_of(C), t);
    assert_int_equal(pe_rank(C), rank);
    void *c = malloc((size_t)numel * size_of(t));
    assert_non_null(c);
    assert_int_equal(pe_read(C, c, (size_t)numel * size_of(t)), PE_OK);
    pe_stats after = tu_stats();
    if (!tu_on_interpreter()) { /* the regime asked for: a library call, or fused views */
        uint64_t calls = after.library_calls - before.library_calls, kernels = after.kernels_launched - before.kernels_launched;
        /* real: a kernel's parameters (KIR_MAX_PARAMS: a few per tap) cut a long sum of taps into a few kernels,
         * one per at most 16 taps; complex: the pair lowering's size bound (a kernel's body once every complex op
         * is two reals) one per at most 6 taps; a correlation conjugates the kernel first (one more) */
        bool cplx = t == PE_C64 || t == PE_C128;
        uint64_t most = cplx ? (uint64_t)(taps + 5) / 6 + 1 + correlate : (uint64_t)(taps + 15) / 16;
        if (calls != (via_fft ? 1u : 0u) || (!via_fft && (kernels < 1 || kernels > most)))
            fail_msg("%s %s: a %lld x %lld x %lld, kernel %lld x %lld: %llu library calls, %llu kernels", dtype_name(t),
                     correlate ? "correlate" : "conv", (long long)batch, (long long)n0, (long long)n1, (long long)k0,
                     (long long)k1, (unsigned long long)calls, (unsigned long long)kernels);
    }
    double eps = t == PE_F32 || t == PE_C64 ? FLT_EPSILON : DBL_EPSILON;
    int terms = t == PE_C64 || t == PE_C128 ? 2 : 1; /* a complex product: two real ones per part */
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n0; i++)
            for (int64_t j = 0; j < n1; j++) {
                long double mass;
                long double complex want = expected(t, a, k, n0, n1, k0, k1, correlate, b, i, j, &mass);
                /* a direct sum: taps eps of its terms' magnitudes; through FFTs: the FFT's bound, relative to the
                 * largest partial sums (|a| <= 1, |k| <= 1) */
                long double bound = via_fft ? 16 * terms * eps * log2l(2.0L * (n0 + k0) * (n1 + k1)) * taps
                                            : 2 * terms * (taps + 1) * eps * mass;
                long double complex got = tc_at(t, c, (b * n0 + i) * n1 + j);
                if (cabsl(got - want) > bound + (eps == FLT_EPSILON ? FLT_MIN : DBL_MIN))
                    fail_msg("%s %s: [%lld][%lld][%lld] = %.10Lg%+.10Lgi, the loop's %.10Lg%+.10Lgi (bound %.3Lg), "
                             "a %lld x %lld x %lld, kernel %lld x %lld",
                             correlate ? "correlate" : "conv", dtype_name(t), (long long)b, (long long)i, (long long)j,
                             creall(got), cimagl(got), creall(want), cimagl(want), bound, (long long)batch,
                             (long long)n0, (long long)n1, (long long)k0, (long long)k1);
            }
    free(a), free(k), free(c);
    pe_release(A), pe_release(K), pe_release(C);
}

static void direct_regime(void **state)
{
    (void)state;
    pe_dtype types[4] = {PE_F32, PE_F64, PE_C64, PE_C128};
    for (int ti = 0; ti < 4; ti++)
        for (int corr = 0; corr < 2; corr++) {
            bool cplx = types[ti] == PE_C64 || types[ti] == PE_C128; /* complex: direct up to 16 taps, reals 64 */
            conv_case(types[ti], 1, 1, 50, 1, 1, 3, corr, false);
            conv_case(types[ti], 3, 1, 33, 1, 1, 4, corr, false);   /* even length, three rows */
            conv_case(types[ti], 2, 1, 5, 1, 1, 9, corr, false);    /* longer than a */
            conv_case(types[ti], 1, 1, 200, 1, 1, cplx ? 16 : 64, corr, false); /* the largest direct kernel */
            conv_case(types[ti], 1, 12, 17, 2, 3, 3, corr, false);
            conv_case(types[ti], 2, 9, 10, 2, 2, 5, corr, false);
            conv_case(types[ti], 1, 20, 20, 2, 4, 4, corr, false);
            conv_case(types[ti], 1, 20, 21, 2, 8, cplx ? 2 : 8, corr, false); /* the largest direct 2-d kernel */
        }
}

static void fft_regime(void **state)
{
    (void)state;
    pe_dtype types[4] = {PE_F32, PE_F64, PE_C64, PE_C128};
    for (int ti = 0; ti < 4; ti++)
        for (int corr = 0; corr < 2; corr++) {
            bool cplx = types[ti] == PE_C64 || types[ti] == PE_C128;
            conv_case(types[ti], 1, 1, 300, 1, 1, cplx ? 17 : 65, corr, true); /* the smallest FFT kernel */
            conv_case(types[ti], 3, 1, 257, 1, 1, 100, corr, true);  /* even, three rows */
            conv_case(types[ti], 1, 1, 40, 1, 1, 101, corr, true);   /* longer than a */
            conv_case(types[ti], 2, 30, 31, 2, 9, 8, corr, true);
            conv_case(types[ti], 1, 12, 5, 2, 11, 11, corr, true);   /* wider than a */
        }
}

/* scipy.signal.convolve([1, 2, 3, 4], [1, 1, 1], mode='same') = [3, 6, 9, 7];
 * scipy.signal.correlate([1, 2, 3], [0, 1, 0.5], mode='same') = [2, 3.5, 3] (the
 * documented example of numpy.correlate, which agrees for odd kernels). */
static void published_answers(void **state)
{
    (void)state;
    double a[4] = {1, 2, 3, 4}, k[3] = {1, 1, 1}, b[3] = {1, 2, 3}, v[3] = {0, 1, 0.5};
    int64_t n4 = 4, n3 = 3;
    pe_array A = pe_from_host(PE_F64, 1, &n4, a), K = pe_from_host(PE_F64, 1, &n3, k);
    pe_array B = pe_from_host(PE_F64, 1, &n3, b), V = pe_from_host(PE_F64, 1, &n3, v);
    pe_array C = pe_conv(A, K), D = pe_correlate(B, V);
    double c[4], d[3];
    assert_int_equal(pe_read(C, c, sizeof c), PE_OK);
    assert_int_equal(pe_read(D, d, sizeof d), PE_OK);
    double want_c[4] = {3, 6, 9, 7}, want_d[3] = {2, 3.5, 3};
    for (int i = 0; i < 4; i++) assert_true(c[i] == want_c[i]);
    for (int i = 0; i < 3; i++) assert_true(d[i] == want_d[i]);
    pe_release(A), pe_release(K), pe_release(B), pe_release(V), pe_release(C), pe_release(D);
    /* complex, worked by hand from scipy's definitions, a = [1, i], v = [i, 1]: the full convolution is
     * [a0 v0, a0 v1 + a1 v0, a1 v1] = [i, 1 - 1, i] and "same" its first two (from (2 - 1) / 2 = 0): [i, 0]; the
     * full correlation (sum of a[m + k - 1] conj(v[k])) is [a0 conj(v1), a0 conj(v0) + a1 conj(v1), a1 conj(v0)]
     * = [1, -i + i, 1], "same" [1, 0] */
    double complex za[2] = {1, CMPLX(0, 1)}, zv[2] = {CMPLX(0, 1), 1}, zc[2], zd[2];
    int64_t n2 = 2;
    pe_array ZA = pe_from_host(PE_C128, 1, &n2, za), ZV = pe_from_host(PE_C128, 1, &n2, zv);
    pe_array ZC = pe_conv(ZA, ZV), ZD = pe_correlate(ZA, ZV);
    assert_int_equal(pe_read(ZC, zc, sizeof zc), PE_OK);
    assert_int_equal(pe_read(ZD, zd, sizeof zd), PE_OK);
    assert_true(zc[0] == CMPLX(0, 1) && zc[1] == 0);
    assert_true(zd[0] == 1 && zd[1] == 0);
    pe_release(ZA), pe_release(ZV), pe_release(ZC), pe_release(ZD);
    tu_expect_no_error();
}

/* Consumers fuse with a direct convolution: (2 a) conv k + 1 is two kernels,
 * 2 a stored (a shifted view reads stored elements), then the sum of the
 * taps with the + 1 in one. */
static void fused_with_neighbours(void **state)
{
    (void)state;
    double a[64], k[5] = {0.5, -1, 2, 0.25, 1};
    for (int i = 0; i < 64; i++) a[i] = uniform();
    int64_t n = 64, nk = 5;
    pe_array A = pe_from_host(PE_F64, 1, &n, a), K = pe_from_host(PE_F64, 1, &nk, k);
    pe_sync();
    pe_stats before = tu_stats();
    pe_array two = pe_scalar(PE_F64, 2.0), one = pe_scalar(PE_F64, 1.0);
    pe_array S = pe_mul(A, two), C = pe_conv(S, K), R = pe_add(C, one);
    pe_release(S), pe_release(C), pe_release(two), pe_release(one);
    double r[64];
    assert_int_equal(pe_read(R, r, sizeof r), PE_OK);
    pe_stats after = tu_stats();
    if (!tu_on_interpreter()) assert_int_equal(after.kernels_launched - before.kernels_launched, 2);
    for (int64_t i = 0; i < n; i++) {
        long double s = 1;
        for (int64_t j = 0; j < nk; j++) {
            int64_t src = i + 2 - j;
            if (src >= 0 && src < n) s += 2.0L * a[src] * k[j];
        }
        assert_true(fabsl(r[i] - s) <= 32 * DBL_EPSILON);
    }
    pe_release(A), pe_release(K), pe_release(R);
    tu_expect_no_error();
}

static void bad_arguments(void **state)
{
    (void)state;
    int64_t s4 = 4, s222[3] = {2, 2, 2}, s22[2] = {2, 2}, s0 = 0;
    pe_array V = pe_fill(PE_F64, 1, &s4, 1), C3 = pe_fill(PE_F64, 3, s222, 1), M = pe_fill(PE_F64, 2, s22, 1);
    pe_array F = pe_fill(PE_F32, 1, &s4, 1), Ints = pe_fill(PE_I32, 1, &s4, 1), E = pe_fill(PE_F64, 1, &s0, 0);
    pe_array S = pe_scalar(PE_F64, 1.0);
    int line = __LINE__ + 1;
    pe_array r1 = pe_conv(V, C3); /* a 3-d kernel */
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    pe_array r2 = pe_correlate(V, M); /* a 2-d kernel over a 1-d array */
    assert_non_null(strstr(tu_errors.message, "pe_correlate"));
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    pe_array r3 = pe_conv(V, F); /* f64 with f32 */
    tu_expect_error(PE_E_TYPE, line);
    line = __LINE__ + 1;
    pe_array r4 = pe_conv(Ints, Ints); /* integers */
    tu_expect_error(PE_E_TYPE, line);
    line = __LINE__ + 1;
    pe_array r5 = pe_conv(V, E); /* an empty kernel */
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    pe_array r6 = pe_conv(V, S); /* a 0-d kernel */
    tu_expect_error(PE_E_SHAPE, line);
    double out[4];
    assert_int_not_equal(pe_read(r1, out, sizeof out), PE_OK);
    tu_errors_clear();
    pe_release(V), pe_release(C3), pe_release(M), pe_release(F), pe_release(Ints), pe_release(E), pe_release(S);
    pe_release(r1), pe_release(r2), pe_release(r3), pe_release(r4), pe_release(r5), pe_release(r6);
    tu_errors_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(direct_regime, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(fft_regime, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(published_answers, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(fused_with_neighbours, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(bad_arguments, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
