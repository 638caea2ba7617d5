/* test_intrinsics_complex.c — pe_matmul and the LU family on PE_C64 /
 * PE_C128 (exec/intrinsics: cblas_cgemm/zgemm/cgemv/zgemv, LAPACKE
 * cgetrf/zgetrf, getrs, gecon) against oracles independent of PE: plain C
 * loops in long double complex for small sizes, cblas and LAPACKE called
 * directly for large ones (the JIT makes the same call: bitwise), LAPACK's
 * acceptance ratios for the factors (zget01, zget02: below 30).  The
 * interpreter executor (ref_linalg.c, long double complex) runs every test
 * too, and the file again under PE_CHECK=all. */
#include <cblas.h>
#include "test_complex.h"
#include <float.h>
#include <lapacke.h>

#include "test_util.h"

typedef long double complex cld;

static uint64_t rng_state = 2463534242ull;
static double uniform(void) { return tu_uniform(&rng_state); } /* [-1, 1) */

static size_t size_of(pe_dtype t) { return t == PE_C64 ? sizeof(float complex) : sizeof(double complex); }
static double eps_of(pe_dtype t) { return t == PE_C64 ? FLT_EPSILON : DBL_EPSILON; }

static void *random_buffer(pe_dtype t, int64_t n)
{
    void *b = malloc((size_t)(n ? n : 1) * size_of(t));
    assert_non_null(b);
    for (int64_t i = 0; i < n; i++) {
        double re = uniform(), im = uniform();
        if (t == PE_C64) ((float complex *)b)[i] = CMPLXF((float)re, (float)im);
        else ((double complex *)b)[i] = CMPLX(re, im);
    }
    return b;
}

static void *read_all(pe_array a, pe_dtype t, int64_t n)
{
    void *b = malloc((size_t)(n ? n : 1) * size_of(t));
    assert_non_null(b);
    assert_int_equal(pe_dtype_of(a), t);
    assert_int_equal(pe_read(a, b, (size_t)n * size_of(t)), PE_OK);
    return b;
}

/* c (m x n) against the long double complex product of a (m x k, or its
 * transpose stored k x m) and b (k x n): each element within 4 (k + 2) eps
 * sum_l |a_il| |b_lj| (the dot-product bound with a complex multiply's
 * error, and a factor 2 for a BLAS's blocked summation orders). */
static void check_product(pe_dtype t, const void *a, bool ta, const void *b, const void *c, int64_t m, int64_t k,
                          int64_t n)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            cld s = 0;
            long double mag = 0;
            for (int64_t l = 0; l < k; l++) {
                cld x = tc_at(t, a, ta ? l * m + i : i * k + l), y = tc_at(t, b, l * n + j);
                s += x * y, mag += cabsl(x) * cabsl(y);
            }
            long double bound = 4 * (k + 2) * eps_of(t) * mag + (t == PE_C64 ? FLT_MIN : DBL_MIN);
            cld got = tc_at(t, c, i * n + j);
            if (cabsl(got - s) > bound)
                fail_msg("c[%lld][%lld] = %g%+gi, the loop's %Lg%+Lgi (bound %.3Lg), %lld x %lld x %lld", (long long)i,
                         (long long)j, (double)creall(got), (double)cimagl(got), creall(s), cimagl(s), bound,
                         (long long)m, (long long)k, (long long)n);
        }
}

static void matmul_case(pe_dtype t, int64_t m, int64_t k, int64_t n, bool vector)
{
    void *a = random_buffer(t, m * k), *b = random_buffer(t, k * n);
    int64_t sa[2] = {m, k}, sb[2] = {k, n};
    pe_array A = pe_from_host(t, 2, sa, a), B = pe_from_host(t, vector ? 1 : 2, sb, b);
    pe_array C = pe_matmul(A, B);
    tu_expect_no_error();
    assert_int_equal(pe_rank(C), vector ? 1 : 2);
    void *c = read_all(C, t, m * (vector ? 1 : n));
    check_product(t, a, false, b, c, m, k, vector ? 1 : n);
    free(a), free(b), free(c);
    pe_release(A), pe_release(B), pe_release(C);
}

static void matmul_small(void **state)
{
    (void)state;
    static const int64_t sizes[][3] = {{1, 1, 1}, {3, 4, 5}, {7, 1, 3}, {2, 9, 1}, {17, 13, 9}, {40, 33, 21}};
    pe_dtype types[2] = {PE_C64, PE_C128};
    for (int ti = 0; ti < 2; ti++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            matmul_case(types[ti], sizes[i][0], sizes[i][1], sizes[i][2], false);
            matmul_case(types[ti], sizes[i][0], sizes[i][1], 1, true); /* matrix x vector */
        }
}

/* transpose(x) @ b: a plain transpose (no conjugation), read in place. */
static void matmul_transposed(void **state)
{
    (void)state;
    pe_dtype types[2] = {PE_C64, PE_C128};
    for (int ti = 0; ti < 2; ti++) {
        pe_dtype t = types[ti];
        int64_t m = 6, k = 5, n = 4, sx[2] = {k, m}, sb[2] = {k, n};
        void *x = random_buffer(t, k * m), *b = random_buffer(t, k * n);
        pe_array X = pe_from_host(t, 2, sx, x), B = pe_from_host(t, 2, sb, b);
        pe_array XT = pe_transpose(X), C = pe_matmul(XT, B);
        pe_release(XT);
        void *c = read_all(C, t, m * n);
        check_product(t, x, true, b, c, m, k, n);
        tu_expect_no_error();
        free(x), free(b), free(c);
        pe_release(X), pe_release(B), pe_release(C);
    }
}

/* cblas_cgemm / zgemm called directly on the same data: the JIT makes the
 * same call (bitwise); the interpreter is within the product bound. */
static void matmul_large_against_cblas(void **state)
{
    (void)state;
    pe_dtype types[2] = {PE_C64, PE_C128};
    for (int ti = 0; ti < 2; ti++) {
        pe_dtype t = types[ti];
        int64_t n = 160, s[2] = {n, n};
        void *a = random_buffer(t, n * n), *b = random_buffer(t, n * n), *want = malloc((size_t)(n * n) * size_of(t));
        pe_stats before = tu_stats();
        pe_array A = pe_from_host(t, 2, s, a), B = pe_from_host(t, 2, s, b), C = pe_matmul(A, B);
        void *c = read_all(C, t, n * n);
        if (!tu_on_interpreter()) { /* the library computed it, not the interpreter */
            assert_int_equal(tu_stats().library_calls - before.library_calls, 1);
            assert_int_equal(tu_stats().ops_interpreted - before.ops_interpreted, 0);
        }
        double complex one = 1, zero = 0;
        float complex onef = 1, zerof = 0;
        if (t == PE_C64)
            cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, &onef, a, (int)n, b, (int)n,
                        &zerof, want, (int)n);
        else
            cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, &one, a, (int)n, b, (int)n,
                        &zero, want, (int)n);
        if (!tu_on_interpreter()) assert_memory_equal(c, want, (size_t)(n * n) * size_of(t));
        else check_product(t, a, false, b, c, n, n, n);
        free(a), free(b), free(c), free(want);
        pe_release(A), pe_release(B), pe_release(C);
    }
}

static long double norm1(const cld *x, int64_t rows, int64_t cols)
{
    long double best = 0;
    for (int64_t j = 0; j < cols; j++) {
        long double s = 0;
        for (int64_t i = 0; i < rows; i++) s += cabsl(x[i * cols + j]);
        if (s > best) best = s;
    }
    return best;
}

/* LAPACK's acceptance ratios of the factors (from pe_lu_unpack) and a solve. */
static void lu_case(pe_dtype t, int64_t n, int64_t nrhs)
{
    void *a = random_buffer(t, n * n), *b = random_buffer(t, n * nrhs);
    int64_t s[2] = {n, n}, sb[2] = {n, nrhs};
    pe_array A = pe_from_host(t, 2, s, a), B = pe_from_host(t, nrhs == 1 ? 1 : 2, sb, b);
    pe_array LU, PIV, L, U;
    assert_int_equal(pe_lu(A, &LU, &PIV), PE_OK);
    pe_array P = pe_lu_unpack(LU, PIV, &L, &U), X = pe_lu_solve(LU, PIV, B);
    void *l = read_all(L, t, n * n), *u = read_all(U, t, n * n), *p = read_all(P, t, n * n), *x = read_all(X, t, n * nrhs);
    tu_expect_no_error();
    cld *r = malloc(sizeof *r * (size_t)(n * n)), *ad = malloc(sizeof *ad * (size_t)(n * n));
    for (int64_t i = 0; i < n * n; i++) ad[i] = tc_at(t, a, i);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            cld pij = tc_at(t, p, i * n + j);
            assert_true(pij == 0 || pij == 1);
            assert_true(i > j ? tc_at(t, u, i * n + j) == 0 : i < j ? tc_at(t, l, i * n + j) == 0 : tc_at(t, l, i * n + j) == 1);
            cld pa = 0, lu = 0;
            for (int64_t q = 0; q < n; q++) pa += tc_at(t, p, i * n + q) * ad[q * n + j], lu += tc_at(t, l, i * n + q) * tc_at(t, u, q * n + j);
            r[i * n + j] = pa - lu;
        }
    double ratio = (double)(norm1(r, n, n) / (n * norm1(ad, n, n) * eps_of(t)));
    if (ratio >= 30) fail_msg("||P a - L U|| / (n ||a|| eps) = %g for n = %lld", ratio, (long long)n);
    cld *res = malloc(sizeof *res * (size_t)(n * nrhs)), *xd = malloc(sizeof *xd * (size_t)(n * nrhs));
    for (int64_t i = 0; i < n * nrhs; i++) xd[i] = tc_at(t, x, i);
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < nrhs; c++) {
            cld sum = -tc_at(t, b, i * nrhs + c);
            for (int64_t q = 0; q < n; q++) sum += ad[i * n + q] * xd[q * nrhs + c];
            res[i * nrhs + c] = sum;
        }
    ratio = (double)(norm1(res, n, nrhs) / (n * norm1(ad, n, n) * norm1(xd, n, nrhs) * eps_of(t)));
    if (ratio >= 30) fail_msg("||a x - b|| / (n ||a|| ||x|| eps) = %g for n = %lld", ratio, (long long)n);
    free(a), free(b), free(l), free(u), free(p), free(x), free(r), free(ad), free(res), free(xd);
    pe_release(A), pe_release(B), pe_release(LU), pe_release(PIV), pe_release(L), pe_release(U), pe_release(P), pe_release(X);
}

static void lu_factor_and_solve(void **state)
{
    (void)state;
    static const int64_t sizes[][2] = {{1, 1}, {2, 1}, {5, 3}, {17, 1}, {48, 4}};
    pe_dtype types[2] = {PE_C64, PE_C128};
    for (int ti = 0; ti < 2; ti++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) lu_case(types[ti], sizes[i][0], sizes[i][1]);
}

/* LAPACKE_zgetrf / cgetrf called directly: the JIT's factors and pivots are
 * the same bits; the interpreter's (long double complex, the same pivot
 * rule) agree with them to a few ulps of the matrix's norm. */
static void lu_large_against_lapacke(void **state)
{
    (void)state;
    pe_dtype types[2] = {PE_C64, PE_C128};
    for (int ti = 0; ti < 2; ti++) {
        pe_dtype t = types[ti];
        int64_t n = 120, s[2] = {n, n};
        void *a = random_buffer(t, n * n), *want = malloc((size_t)(n * n) * size_of(t));
        memcpy(want, a, (size_t)(n * n) * size_of(t));
        lapack_int ipiv[120];
        lapack_int info = t == PE_C64 ? LAPACKE_cgetrf(LAPACK_ROW_MAJOR, (int)n, (int)n, want, (int)n, ipiv)
                                      : LAPACKE_zgetrf(LAPACK_ROW_MAJOR, (int)n, (int)n, want, (int)n, ipiv);
        assert_int_equal(info, 0);
        pe_stats before = tu_stats();
        pe_array A = pe_from_host(t, 2, s, a), LU, PIV;
        assert_int_equal(pe_lu(A, &LU, &PIV), PE_OK);
        void *lu = read_all(LU, t, n * n);
        if (!tu_on_interpreter()) assert_int_equal(tu_stats().library_calls - before.library_calls, 1);
        int32_t piv[120];
        assert_int_equal(pe_read(PIV, piv, sizeof piv), PE_OK);
        for (int64_t i = 0; i < n; i++) assert_int_equal(piv[i], ipiv[i] - 1);
        if (!tu_on_interpreter()) {
            assert_memory_equal(lu, want, (size_t)(n * n) * size_of(t));
        } else {
            for (int64_t i = 0; i < n * n; i++)
                assert_true(cabsl(tc_at(t, lu, i) - tc_at(t, want, i)) <= 1e3 * eps_of(t) * (1 + cabsl(tc_at(t, want, i))));
        }
        free(a), free(want), free(lu);
        pe_release(A), pe_release(LU), pe_release(PIV);
    }
}

/* pe_lu_cond of a complex matrix is real (its parts' dtype): against the
 * exact ||a||_1 ||a^-1||_1, the inverse by Gauss-Jordan in long double
 * complex; gecon's estimate is a lower bound within a factor of 3 here, the
 * interpreter's exact. */
static void lu_cond_against_inverse(void **state)
{
    (void)state;
    enum { N = 3 };
    double complex a[N * N] = {4 + 1 * I, -2, 1 - 1 * I, 2 * I, 5 - 1 * I, -1, 1, 1 + 2 * I, 6};
    cld m[N][2 * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < 2 * N; j++) m[i][j] = j < N ? (cld)a[i * N + j] : (cld)(j - N == i);
    for (int c = 0; c < N; c++) {
        int p = c;
        for (int i = c + 1; i < N; i++)
            if (cabsl(m[i][c]) > cabsl(m[p][c])) p = i;
        for (int j = 0; j < 2 * N; j++) {
            cld tmp = m[c][j];
            m[c][j] = m[p][j], m[p][j] = tmp;
        }
        for (int i = 0; i < N; i++) {
            if (i == c) continue;
            cld f = m[i][c] / m[c][c];
            for (int j = 0; j < 2 * N; j++) m[i][j] -= f * m[c][j];
        }
    }
    cld inv[N * N], ad[N * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) inv[i * N + j] = m[i][N + j] / m[i][i], ad[i * N + j] = a[i * N + j];
    double exact = (double)(norm1(ad, N, N) * norm1(inv, N, N));
    int64_t s[2] = {N, N};
    pe_array A = pe_from_host(PE_C128, 2, s, a), LU, PIV;
    assert_int_equal(pe_lu(A, &LU, &PIV), PE_OK);
    pe_array K = pe_lu_cond(LU, PIV);
    assert_int_equal(pe_rank(K), 0);
    assert_int_equal(pe_dtype_of(K), PE_F64);
    double k;
    assert_int_equal(pe_read(K, &k, sizeof k), PE_OK);
    assert_true(k <= exact * (1 + 1e-12) && k >= exact / 3);
    if (tu_on_interpreter()) assert_true(fabs(k - exact) <= 1e-12 * exact);
    /* c64: an f32 condition number */
    float complex af[N * N];
    for (int i = 0; i < N * N; i++) af[i] = (float complex)a[i];
    pe_array Af = pe_from_host(PE_C64, 2, s, af), LUf, PIVf;
    assert_int_equal(pe_lu(Af, &LUf, &PIVf), PE_OK);
    pe_array Kf = pe_lu_cond(LUf, PIVf);
    assert_int_equal(pe_dtype_of(Kf), PE_F32);
    float kf;
    assert_int_equal(pe_read(Kf, &kf, sizeof kf), PE_OK);
    assert_true(kf <= exact * (1 + 1e-5) && kf >= exact / 3);
    tu_expect_no_error();
    pe_release(A), pe_release(LU), pe_release(PIV), pe_release(K);
    pe_release(Af), pe_release(LUf), pe_release(PIVf), pe_release(Kf);
}

/* An exact zero pivot: PE_E_ARG at pe_lu's line when read; mixed precisions refused. */
static void singular_and_mixed(void **state)
{
    (void)state;
    double complex a[4] = {1 + 1 * I, 2, 2 + 2 * I, 4};
    int64_t s[2] = {2, 2};
    pe_array A = pe_from_host(PE_C128, 2, s, a), LU, PIV;
    int line = __LINE__ + 1;
    assert_int_equal(pe_lu(A, &LU, &PIV), PE_OK);
    double complex out[4];
    assert_int_equal(pe_read(LU, out, sizeof out), PE_E_ARG);
    tu_expect_error(PE_E_ARG, line);
    assert_non_null(strstr(pe_last_error()->message, "singular"));
    tu_errors_clear();
    pe_array F = pe_fill(PE_C64, 2, s, 0);
    line = __LINE__ + 1;
    pe_array C = pe_matmul(A, F); /* c128 @ c64 */
    tu_expect_error(PE_E_TYPE, line);
    pe_release(A), pe_release(LU), pe_release(PIV), pe_release(F), pe_release(C);
    tu_errors_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(matmul_small, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(matmul_transposed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(matmul_large_against_cblas, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(lu_factor_and_solve, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(lu_large_against_lapacke, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(lu_cond_against_inverse, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(singular_and_mixed, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
