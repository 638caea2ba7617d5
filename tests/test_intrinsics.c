/* test_intrinsics.c — pe_matmul and the LU family (exec/intrinsics) against
 * oracles independent of PE: plain C loops in long double for small sizes,
 * cblas called directly for a large one, and LAPACK's own acceptance tests
 * for the factorisation (dget01: ||P a - L U|| / (n ||a|| eps), dget02:
 * ||a x - b|| / (n ||a|| ||x|| eps), each below 30).  On the JIT executor the
 * batch structure is asserted too: a fused epilogue is one library call and
 * no kernel, a transposed operand is read in place (no kernel computes the
 * transpose), a second run of a batch comes from the trace cache.  The
 * interpreter executor runs every test as well (ref_linalg.c, the oracle
 * PE_CHECK uses), and the whole file again under PE_CHECK=all. */
#include <cblas.h>
#include <float.h>

#include "test_util.h"

#include <unistd.h>

#include "profiler/profdb.h"

static uint64_t rng_state = 88172645463325252ull;
static double uniform(void) { return tu_uniform(&rng_state); } /* [-1, 1) */

static void *random_buffer(pe_dtype t, int64_t n)
{
    void *b = malloc((size_t)(n ? n : 1) * (t == PE_F32 ? 4 : 8));
    assert_non_null(b);
    for (int64_t i = 0; i < n; i++) {
        if (t == PE_F32) ((float *)b)[i] = (float)uniform();
        else ((double *)b)[i] = uniform();
    }
    return b;
}

static long double at(pe_dtype t, const void *b, int64_t i)
{
    return t == PE_F32 ? (long double)((const float *)b)[i] : (long double)((const double *)b)[i];
}

static double eps_of(pe_dtype t) { return t == PE_F32 ? FLT_EPSILON : DBL_EPSILON; }

/* c (m x n) against the long double product of a (m x k, or its transpose
 * stored k x m) and b (k x n, or its transpose stored n x k): each element
 * within 2 k eps sum_l |a_il| |b_lj| (the dot-product error bound, gamma_k,
 * with a factor 2 for the blocked summation orders of a BLAS) */
static void check_product(pe_dtype t, const void *a, bool ta, const void *b, bool tb, const double *c, int64_t m,
                          int64_t k, int64_t n, double alpha, const void *c0, double beta)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            long double s = 0, mag = 0;
            for (int64_t l = 0; l < k; l++) {
                long double x = at(t, a, ta ? l * m + i : i * k + l), y = at(t, b, tb ? j * k + l : l * n + j);
                s += x * y, mag += fabsl(x * y);
            }
            long double want = alpha * s + (c0 ? beta * at(t, c0, i * n + j) : 0);
            long double bound = 2 * (k + 2) * eps_of(t) * (fabsl(alpha) * mag + (c0 ? fabsl(beta * at(t, c0, i * n + j)) : 0));
            if (fabsl(c[i * n + j] - want) > bound + (t == PE_F32 ? FLT_MIN : DBL_MIN))
                fail_msg("c[%lld][%lld] = %.17g, the loop's %.17Lg (bound %.3Lg), %lld x %lld x %lld", (long long)i,
                         (long long)j, c[i * n + j], want, bound, (long long)m, (long long)k, (long long)n);
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
    assert_int_equal(pe_dim(C, 0), m);
    if (!vector) assert_int_equal(pe_dim(C, 1), n);
    assert_int_equal(pe_dtype_of(C), t);
    int64_t count;
    double *c = tu_read_as_f64(C, &count);
    assert_int_equal(count, m * (vector ? 1 : n));
    check_product(t, a, false, b, false, c, m, k, vector ? 1 : n, 1, NULL, 0);
    free(a), free(b), free(c);
    pe_release(A), pe_release(B), pe_release(C);
}

static void matmul_small(void **state)
{
    (void)state;
    static const int64_t sizes[][3] = {{1, 1, 1}, {1, 5, 1}, {3, 4, 5}, {7, 1, 3}, {2, 9, 1}, {17, 13, 9}, {64, 33, 65}};
    pe_dtype types[2] = {PE_F32, PE_F64};
    for (int ti = 0; ti < 2; ti++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            matmul_case(types[ti], sizes[i][0], sizes[i][1], sizes[i][2], false);
            matmul_case(types[ti], sizes[i][0], sizes[i][1], 1, true); /* matrix x vector */
        }
}

/* transpose(x) @ transpose(y), the transposes released before the batch
 * runs: read in place (CblasTrans), no kernel computes them. */
static void matmul_transposed(void **state)
{
    (void)state;
    pe_dtype types[2] = {PE_F32, PE_F64};
    for (int ti = 0; ti < 2; ti++) {
        pe_dtype t = types[ti];
        int64_t m = 6, k = 5, n = 4, sx[2] = {k, m}, sy[2] = {n, k};
        void *x = random_buffer(t, k * m), *y = random_buffer(t, n * k);
        pe_array X = pe_from_host(t, 2, sx, x), Y = pe_from_host(t, 2, sy, y);
        pe_sync();
        pe_stats before = tu_stats();
        pe_array XT = pe_transpose(X), YT = pe_transpose(Y);
        pe_array C = pe_matmul(XT, YT);
        pe_release(XT), pe_release(YT);
        int64_t count;
        double *c = tu_read_as_f64(C, &count);
        check_product(t, x, true, y, true, c, m, k, n, 1, NULL, 0);
        pe_stats after = tu_stats();
        if (!tu_on_interpreter()) {
            assert_int_equal(after.library_calls - before.library_calls, 1);
            assert_int_equal(after.kernels_launched - before.kernels_launched, 0);
        }
        /* a transpose the application still holds is computed, then multiplied */
        XT = pe_transpose(X);
        pe_array D = pe_matmul(XT, pe_transpose(Y));
        double *d = tu_read_as_f64(D, &count);
        check_product(t, x, true, y, true, d, m, k, n, 1, NULL, 0);
        tu_expect_no_error();
        free(x), free(y), free(c), free(d);
        pe_release(X), pe_release(Y), pe_release(C), pe_release(XT), pe_release(D);
    }
}

/* A slice (a view that is no plain transpose) is computed first, then multiplied. */
static void matmul_of_a_slice(void **state)
{
    (void)state;
    int64_t sx[2] = {8, 6}, start[2] = {2, 1}, count[2] = {5, 4}, sb[2] = {4, 3};
    double *x = random_buffer(PE_F64, 48), *b = random_buffer(PE_F64, 12), a[20];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) a[i * 4 + j] = x[(i + 2) * 6 + j + 1];
    pe_array X = pe_from_host(PE_F64, 2, sx, x), B = pe_from_host(PE_F64, 2, sb, b);
    pe_array A = pe_slice(X, start, count), C = pe_matmul(A, B);
    pe_release(A);
    int64_t n;
    double *c = tu_read_as_f64(C, &n);
    assert_int_equal(n, 15);
    check_product(PE_F64, a, false, b, false, c, 5, 4, 3, 1, NULL, 0);
    /* a uniform constant operand (pe_fill) is given a buffer for the call */
    int64_t sf[2] = {2, 4};
    double twos[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    pe_array T = pe_fill(PE_F64, 2, sf, 2.0), D = pe_matmul(T, B);
    double *d = tu_read_as_f64(D, &n);
    check_product(PE_F64, twos, false, b, false, d, 2, 4, 3, 1, NULL, 0);
    tu_expect_no_error();
    free(x), free(b), free(c), free(d);
    pe_release(X), pe_release(B), pe_release(C), pe_release(T), pe_release(D);
}

/* alpha * (a @ b) + beta * c as one gemm (JIT: one library call, no kernel),
 * and the same with the product held (a call, then a kernel for the map). */
static void epilogue_fused(void **state)
{
    (void)state;
    pe_dtype types[2] = {PE_F32, PE_F64};
    for (int ti = 0; ti < 2; ti++) {
        pe_dtype t = types[ti];
        int64_t m = 9, k = 7, n = 5, sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
        void *a = random_buffer(t, m * k), *b = random_buffer(t, k * n), *c0 = random_buffer(t, m * n);
        pe_array A = pe_from_host(t, 2, sa, a), B = pe_from_host(t, 2, sb, b), C = pe_from_host(t, 2, sc, c0);
        for (int held = 0; held < 2; held++) {
            pe_sync();
            pe_stats before = tu_stats();
            pe_array P = pe_matmul(A, B);
            pe_array S = pe_mul(P, 1.5);
            pe_array T = pe_mul(-0.25, C);
            pe_array E = pe_add(S, T);
            if (!held) pe_release(P);
            pe_release(S), pe_release(T);
            int64_t count;
            double *e = tu_read_as_f64(E, &count);
            check_product(t, a, false, b, false, e, m, k, n, 1.5, c0, -0.25);
            pe_stats after = tu_stats();
            if (!tu_on_interpreter()) {
                assert_int_equal(after.library_calls - before.library_calls, 1);
                assert_int_equal(after.kernels_launched - before.kernels_launched, held ? 1 : 0);
            }
            if (held) {
                double *p = tu_read_as_f64(P, &count);
                check_product(t, a, false, b, false, p, m, k, n, 1, NULL, 0);
                free(p);
                pe_release(P);
            }
            free(e);
            pe_release(E);
        }
        /* a @ b + c, and matrix x vector with alpha only */
        pe_array P = pe_matmul(A, B), E = pe_add(P, C);
        pe_release(P);
        int64_t count;
        double *e = tu_read_as_f64(E, &count);
        check_product(t, a, false, b, false, e, m, k, n, 1, c0, 1);
        int64_t sv[1] = {k};
        pe_array V = pe_from_host(t, 1, sv, b), Q = pe_matmul(A, V), R = pe_mul(3.0, Q);
        pe_release(Q);
        double *r = tu_read_as_f64(R, &count);
        check_product(t, a, false, b, false, r, m, k, 1, 3, NULL, 0);
        tu_expect_no_error();
        free(a), free(b), free(c0), free(e), free(r);
        pe_release(A), pe_release(B), pe_release(C), pe_release(E), pe_release(V), pe_release(R);
    }
}

/* The sum of two products, both released: one call takes the add as its
 * epilogue with the other product as c, computed by its own call first.
 * Both took it once, each with the other as c, and the sum was one product
 * alone (found by issue 43's forward mode: a @ tb + ta @ b). */
static void sum_of_two_products(void **state)
{
    (void)state;
    pe_dtype types[2] = {PE_F32, PE_F64};
    for (int ti = 0; ti < 2; ti++) {
        pe_dtype t = types[ti];
        int64_t m = 6, k = 5, n = 4, sa[2] = {m, k}, sb[2] = {k, n};
        void *a = random_buffer(t, m * k), *b = random_buffer(t, k * n), *a2 = random_buffer(t, m * k),
             *b2 = random_buffer(t, k * n);
        pe_array A = pe_from_host(t, 2, sa, a), B = pe_from_host(t, 2, sb, b);
        pe_array A2 = pe_from_host(t, 2, sa, a2), B2 = pe_from_host(t, 2, sb, b2);
        for (int scaled = 0; scaled < 2; scaled++) {
            pe_array P = pe_matmul(A, B), Q = pe_matmul(A2, B2);
            pe_array QS = scaled ? pe_mul(Q, 2.0) : Q;
            pe_array E = pe_add(P, QS);
            pe_release(P), pe_release(Q);
            if (scaled) pe_release(QS);
            int64_t count;
            double *e = tu_read_as_f64(E, &count);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    long double want = 0, mag = 0;
                    for (int64_t l = 0; l < k; l++) {
                        long double x = at(t, a, i * k + l) * at(t, b, l * n + j);
                        long double y = (scaled ? 2 : 1) * at(t, a2, i * k + l) * at(t, b2, l * n + j);
                        want += x + y, mag += fabsl(x) + fabsl(y);
                    }
                    if (fabsl(e[i * n + j] - want) > 4 * (k + 2) * eps_of(t) * mag)
                        fail_msg("dtype %d, scaled %d: e[%lld][%lld] = %.17g, want %.17Lg", (int)t, scaled,
                                 (long long)i, (long long)j, e[i * n + j], want);
                }
            free(e);
            pe_release(E);
        }
        tu_expect_no_error();
        free(a), free(b), free(a2), free(b2);
        pe_release(A), pe_release(B), pe_release(A2), pe_release(B2);
    }
}

/* The same batch twice: the second's sequence (its library call) from the trace cache. */
static void trace_cache_replays_calls(void **state)
{
    (void)state;
    int64_t s[2] = {8, 8};
    void *a = random_buffer(PE_F64, 64);
    pe_array A = pe_from_host(PE_F64, 2, s, a);
    double first[64] = {0};
    pe_stats before = tu_stats();
    for (int pass = 0; pass < 3; pass++) {
        pe_array P = pe_matmul(A, A), E = pe_add(pe_mul(2.0, P), A);
        pe_release(P);
        double e[64];
        assert_int_equal(pe_read(E, e, sizeof e), PE_OK);
        if (pass == 0) memcpy(first, e, sizeof e);
        else assert_memory_equal(first, e, sizeof e);
        pe_release(E);
    }
    if (!tu_on_interpreter()) assert_true(tu_stats().trace_hits - before.trace_hits >= 2);
    int64_t count;
    pe_array P = pe_matmul(A, A);
    double *p = tu_read_as_f64(P, &count);
    for (int i = 0; i < 64; i++) assert_true(fabs(first[i] - (2 * p[i] + ((double *)a)[i])) <= 1e-14 * (1 + fabs(first[i])));
    free(a), free(p);
    pe_release(A), pe_release(P);
}

/* cblas called directly on the same data: the same library call (the JIT:
 * bitwise), the interpreter within the product bound. */
static void matmul_large_against_cblas(void **state)
{
    (void)state;
    int64_t n = 192, s[2] = {n, n};
    double *a = random_buffer(PE_F64, n * n), *b = random_buffer(PE_F64, n * n), *want = malloc(sizeof *want * (size_t)(n * n));
    float *af = random_buffer(PE_F32, n * n), *bf = random_buffer(PE_F32, n * n), *wantf = malloc(sizeof *wantf * (size_t)(n * n));
    pe_array A = pe_from_host(PE_F64, 2, s, a), B = pe_from_host(PE_F64, 2, s, b);
    pe_array Af = pe_from_host(PE_F32, 2, s, af), Bf = pe_from_host(PE_F32, 2, s, bf);
    pe_array C = pe_matmul(A, B), Cf = pe_matmul(Af, Bf);
    int64_t count;
    double *c = tu_read_as_f64(C, &count), *cf = tu_read_as_f64(Cf, &count);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1, a, (int)n, b, (int)n, 0, want, (int)n);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1, af, (int)n, bf, (int)n, 0, wantf, (int)n);
    for (int64_t i = 0; i < n * n; i++) {
        if (!tu_on_interpreter()) {
            assert_true(c[i] == want[i]);
            assert_true((float)cf[i] == wantf[i]);
        } else { /* both within the bound of the exact product: within twice it of each other */
            assert_true(fabs(c[i] - want[i]) <= 4 * (double)n * DBL_EPSILON * (double)n);
            assert_true(fabs(cf[i] - wantf[i]) <= 4 * (double)n * FLT_EPSILON * (double)n);
        }
    }
    free(a), free(b), free(want), free(af), free(bf), free(wantf), free(c), free(cf);
    pe_release(A), pe_release(B), pe_release(Af), pe_release(Bf), pe_release(C), pe_release(Cf);
}

static long double norm1(const long double *x, int64_t rows, int64_t cols)
{
    long double best = 0;
    for (int64_t j = 0; j < cols; j++) {
        long double s = 0;
        for (int64_t i = 0; i < rows; i++) s += fabsl(x[i * cols + j]);
        if (s > best) best = s;
    }
    return best;
}

/* LAPACK's acceptance ratios of the factors and a solve, and the pivots. */
static void lu_case(pe_dtype t, int64_t n, int64_t nrhs)
{
    void *a = random_buffer(t, n * n), *b = random_buffer(t, n * nrhs);
    int64_t s[2] = {n, n}, sb[2] = {n, nrhs};
    pe_array A = pe_from_host(t, 2, s, a), B = pe_from_host(t, nrhs == 1 ? 1 : 2, sb, b);
    pe_array LU, PIV, L, U;
    assert_int_equal(pe_lu(A, &LU, &PIV), PE_OK);
    pe_array P = pe_lu_unpack(LU, PIV, &L, &U), X = pe_lu_solve(LU, PIV, B);
    int64_t count;
    double *l = tu_read_as_f64(L, &count), *u = tu_read_as_f64(U, &count), *p = tu_read_as_f64(P, &count);
    double *x = tu_read_as_f64(X, &count);
    int32_t *piv = malloc(sizeof *piv * (size_t)n);
    assert_int_equal(pe_read(PIV, piv, sizeof *piv * (size_t)n), PE_OK);
    tu_expect_no_error();
    long double *r = malloc(sizeof *r * (size_t)(n * n)), *ad = malloc(sizeof *ad * (size_t)(n * n));
    for (int64_t i = 0; i < n * n; i++) ad[i] = at(t, a, i);
    /* the pivots make P: row i of P a is the row they bring to i */
    int64_t *perm = malloc(sizeof *perm * (size_t)n);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = 0; i < n; i++) {
        assert_true(piv[i] >= i && piv[i] < n);
        int64_t tmp = perm[i];
        perm[i] = perm[piv[i]], perm[piv[i]] = tmp;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            assert_true(p[i * n + j] == (perm[i] == j ? 1.0 : 0.0));
            assert_true(i > j ? u[i * n + j] == 0 : i < j ? l[i * n + j] == 0 : l[i * n + j] == 1);
            long double pa = 0, lu = 0;
            for (int64_t q = 0; q < n; q++) pa += p[i * n + q] * ad[q * n + j], lu += l[i * n + q] * u[q * n + j];
            r[i * n + j] = pa - lu;
        }
    double ratio = (double)(norm1(r, n, n) / (n * norm1(ad, n, n) * eps_of(t)));
    if (ratio >= 30) fail_msg("||P a - L U|| / (n ||a|| eps) = %g for n = %lld", ratio, (long long)n);
    long double *res = malloc(sizeof *res * (size_t)(n * nrhs)), *xd = malloc(sizeof *xd * (size_t)(n * nrhs));
    for (int64_t i = 0; i < n * nrhs; i++) xd[i] = x[i];
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < nrhs; c++) {
            long double s = -at(t, b, i * nrhs + c);
            for (int64_t q = 0; q < n; q++) s += ad[i * n + q] * xd[q * nrhs + c];
            res[i * nrhs + c] = s;
        }
    ratio = (double)(norm1(res, n, nrhs) / (n * norm1(ad, n, n) * norm1(xd, n, nrhs) * eps_of(t)));
    if (ratio >= 30) fail_msg("||a x - b|| / (n ||a|| ||x|| eps) = %g for n = %lld", ratio, (long long)n);
    free(a), free(b), free(l), free(u), free(p), free(x), free(piv), free(r), free(ad), free(perm), free(res), free(xd);
    pe_release(A), pe_release(B), pe_release(LU), pe_release(PIV), pe_release(L), pe_release(U), pe_release(P), pe_release(X);
}

static void lu_factor_and_solve(void **state)
{
    (void)state;
    static const int64_t sizes[][2] = {{1, 1}, {2, 1}, {5, 3}, {17, 1}, {64, 4}};
    pe_dtype types[2] = {PE_F32, PE_F64};
    for (int ti = 0; ti < 2; ti++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) lu_case(types[ti], sizes[i][0], sizes[i][1]);
}

/* pe_lu_cond against the exact ||a||_1 ||a^-1||_1 (the inverse by
 * Gauss-Jordan in long double): gecon's estimate is a lower bound within a
 * factor of 3 in practice; the interpreter's is exact. */
static void lu_cond_against_inverse(void **state)
{
    (void)state;
    enum { N = 4 };
    double a[N * N] = {4, -2, 1, 3, 2, 5, -1, 0, 1, 1, 6, -2, 0, 3, 2, 7};
    long double m[N][2 * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < 2 * N; j++) m[i][j] = j < N ? a[i * N + j] : (j - N == i);
    for (int c = 0; c < N; c++) {
        int p = c;
        for (int i = c + 1; i < N; i++)
            if (fabsl(m[i][c]) > fabsl(m[p][c])) p = i;
        for (int j = 0; j < 2 * N; j++) {
            long double tmp = m[c][j];
            m[c][j] = m[p][j], m[p][j] = tmp;
        }
        for (int i = 0; i < N; i++) {
            if (i == c) continue;
            long double f = m[i][c] / m[c][c];
            for (int j = 0; j < 2 * N; j++) m[i][j] -= f * m[c][j];
        }
    }
    long double inv[N * N], ad[N * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) inv[i * N + j] = m[i][N + j] / m[i][i], ad[i * N + j] = a[i * N + j];
    double exact = (double)(norm1(ad, N, N) * norm1(inv, N, N));
    int64_t s[2] = {N, N};
    pe_array A = pe_from_host(PE_F64, 2, s, a), LU, PIV;
    assert_int_equal(pe_lu(A, &LU, &PIV), PE_OK);
    pe_array K = pe_lu_cond(LU, PIV);
    assert_int_equal(pe_rank(K), 0);
    double k;
    assert_int_equal(pe_read(K, &k, sizeof k), PE_OK);
    assert_true(k <= exact * (1 + 1e-12) && k >= exact / 3);
    if (tu_on_interpreter()) assert_true(fabs(k - exact) <= 1e-12 * exact);
    pe_release(A), pe_release(LU), pe_release(PIV), pe_release(K);
}

/* An exact zero pivot: lu and pivots invalid, PE_E_ARG at pe_lu's line when read. */
static void singular_matrix(void **state)
{
    (void)state;
    double a[4] = {1, 2, 2, 4};
    int64_t s[2] = {2, 2};
    pe_array A = pe_from_host(PE_F64, 2, s, a), LU, PIV;
    int line = __LINE__ + 1;
    assert_int_equal(pe_lu(A, &LU, &PIV), PE_OK);
    tu_expect_no_error();
    double out[4];
    assert_int_equal(pe_read(LU, out, sizeof out), PE_E_ARG);
    tu_expect_error(PE_E_ARG, line);
    assert_non_null(strstr(pe_last_error()->message, "singular"));
    int32_t piv[2];
    assert_int_not_equal(pe_read(PIV, piv, sizeof piv), PE_OK);
    tu_errors_clear();
    pe_release(A), pe_release(LU), pe_release(PIV);
}

static void bad_arguments(void **state)
{
    (void)state;
    int64_t s34[2] = {3, 4}, s52[2] = {5, 2}, s3[3] = {2, 2, 2};
    pe_array A = pe_fill(PE_F64, 2, s34, 0), B = pe_fill(PE_F64, 2, s52, 0), R3 = pe_fill(PE_F64, 3, s3, 0);
    pe_array N = pe_fill(PE_I32, 2, s34, 0), F = pe_fill(PE_F32, 2, s52, 0);
    int line = __LINE__ + 1;
    pe_array C = pe_matmul(A, B);
    assert_non_null(strstr(tu_errors.message, "inner dimensions"));
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    pe_array D = pe_matmul(R3, B);
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    pe_array E = pe_matmul(N, B);
    tu_expect_error(PE_E_TYPE, line);
    line = __LINE__ + 1;
    pe_array G = pe_transpose(F), H = pe_matmul(A, G); /* f64 @ f32 */
    tu_expect_error(PE_E_TYPE, line);
    pe_array LU, PIV;
    line = __LINE__ + 1;
    assert_int_equal(pe_lu(A, &LU, &PIV), PE_E_SHAPE); /* not square */
    tu_expect_error(PE_E_SHAPE, line);
    double out[12];
    assert_int_not_equal(pe_read(C, out, sizeof out), PE_OK);
    assert_int_not_equal(pe_read(PIV, out, 12), PE_OK);
    tu_errors_clear();
    int64_t s33[2] = {3, 3}, s4[1] = {4};
    pe_array Q = pe_identity(PE_F64, 3), LU2, PIV2, V = pe_fill(PE_F64, 1, s4, 0);
    assert_int_equal(pe_lu(Q, &LU2, &PIV2), PE_OK);
    line = __LINE__ + 1;
    pe_array X = pe_lu_solve(LU2, PIV2, V); /* b of 4 for a 3 x 3 matrix */
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    pe_array K = pe_lu_cond(LU2, Q); /* a matrix for the pivots */
    tu_expect_error(PE_E_SHAPE, line);
    (void)s33;
    pe_release(A), pe_release(B), pe_release(R3), pe_release(N), pe_release(F), pe_release(C), pe_release(D);
    pe_release(E), pe_release(G), pe_release(H), pe_release(LU), pe_release(PIV), pe_release(Q), pe_release(LU2);
    pe_release(PIV2), pe_release(V), pe_release(X), pe_release(K);
    tu_errors_clear();
}

/* Element-wise producers fused before the call, consumers after it; the
 * reference (the interpreter's long double loops) agrees. */
static void fused_around_a_call(void **state)
{
    (void)state;
    int64_t n = 16, s[2] = {n, n};
    double *a = random_buffer(PE_F64, n * n), *b = random_buffer(PE_F64, n * n);
    pe_array A = pe_from_host(PE_F64, 2, s, a), B = pe_from_host(PE_F64, 2, s, b);
    pe_array EA = pe_exp(A), C = pe_matmul(EA, B), S = pe_sqrt(pe_abs(C));
    pe_release(EA), pe_release(C);
    int64_t count;
    double *got = tu_read_as_f64(S, &count);
    double *e = malloc(sizeof *e * (size_t)(n * n)), *prod = malloc(sizeof *prod * (size_t)(n * n));
    for (int64_t i = 0; i < n * n; i++) e[i] = exp(a[i]);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            long double acc = 0;
            for (int64_t q = 0; q < n; q++) acc += (long double)e[i * n + q] * b[q * n + j];
            prod[i * n + j] = (double)acc;
        }
    for (int64_t i = 0; i < n * n; i++) assert_true(fabs(got[i] - sqrt(fabs(prod[i]))) <= 1e-12 * (1 + sqrt(fabs(prod[i]))));
    tu_expect_no_error();
    free(a), free(b), free(got), free(e), free(prod);
    pe_release(A), pe_release(B), pe_release(S);
}

/* A code reuse section holding a matmul epilogue and an LU solve: replays
 * (the body skipped) give the values of the recording, through the trace
 * cache's library calls. */
static int section_runs;
static pe_array section(pe_array a, pe_array b)
{
    pe_array ins[2] = {a, b}, outs[1];
    PE_MACRO(linalg, ins, 2, outs, 1, NULL, 0)
    {
        section_runs++;
        pe_array p = pe_matmul(ins[0], ins[1]), s = pe_mul(p, 0.5), lu, piv;
        pe_release(p);
        pe_lu(ins[0], &lu, &piv);
        pe_array x = pe_lu_solve(lu, piv, s);
        outs[0] = pe_add(x, s);
        pe_release(s), pe_release(lu), pe_release(piv), pe_release(x);
    }
    return outs[0];
}

static void macro_replays_calls(void **state)
{
    (void)state;
    int64_t n = 6, s[2] = {n, n};
    double *a = random_buffer(PE_F64, n * n), *b = random_buffer(PE_F64, n * n), first[36];
    for (int64_t i = 0; i < n; i++) a[i * n + i] += 4;
    pe_array A = pe_from_host(PE_F64, 2, s, a), B = pe_from_host(PE_F64, 2, s, b);
    section_runs = 0;
    pe_stats before = tu_stats();
    for (int r = 0; r < 4; r++) {
        pe_array got = section(A, B);
        double v[36];
        assert_int_equal(pe_read(got, v, sizeof v), PE_OK);
        if (r == 0) memcpy(first, v, sizeof v);
        else assert_memory_equal(first, v, sizeof v);
        pe_release(got);
    }
    assert_int_equal(section_runs, 1);
    assert_int_equal(tu_stats().macro_hits - before.macro_hits, 3);
    /* the value: x + s with a x = s, s = (a @ b) / 2, so a (value - s) = s */
    long double worst = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            long double sij = 0, ax = 0;
            for (int64_t q = 0; q < n; q++) sij += (long double)a[i * n + q] * b[q * n + j];
            sij /= 2;
            for (int64_t q = 0; q < n; q++) {
                long double sq = 0;
                for (int64_t l = 0; l < n; l++) sq += (long double)a[q * n + l] * b[l * n + j];
                ax += a[i * n + q] * (first[q * n + j] - sq / 2);
            }
            worst = fmaxl(worst, fabsl(ax - sij));
        }
    assert_true(worst < 1e-12);
    tu_expect_no_error();
    free(a), free(b);
    pe_release(A), pe_release(B);
}

/* Under PE_PROFILE a library call is a kernel record of device "library"
 * whose time goes to pe_matmul's line alone (its fused epilogue too). */
static void profile_charges_the_call(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "test_intrinsics.%d.pep", (int)getpid());
    setenv("PE_PROFILE", path, 1);
    tu_errors_clear();
    pe_push_error_handler(tu_record_error, NULL);
    assert_int_equal(pe_init(NULL), PE_OK);
    int64_t s[2] = {32, 32};
    double *a = random_buffer(PE_F64, 32 * 32);
    pe_array A = pe_from_host(PE_F64, 2, s, a);
    int line = 0;
    for (int r = 0; r < 3; r++) {
        line = __LINE__ + 1;
        pe_array P = pe_matmul(A, A);
        pe_array E = pe_add(pe_mul(P, 2.0), A);
        pe_release(P);
        double v[32 * 32];
        assert_int_equal(pe_read(E, v, sizeof v), PE_OK);
        pe_release(E);
    }
    pe_release(A);
    pe_shutdown();
    pe_pop_error_handler();
    unsetenv("PE_PROFILE");
    free(a);
    pe_profile p;
    char err[600];
    if (!pe_profile_load(&p, path, err, sizeof err)) fail_msg("%s", err);
    unlink(path);
    int found = 0;
    for (uint32_t k = 0; k < p.n_kernels; k++) {
        if (strcmp(p.kernels[k].device, "library") != 0) continue;
        found++;
        assert_string_equal(p.kernels[k].name, "library:matmul");
        assert_int_equal(p.kernels[k].executions, 3);
        assert_int_equal(p.kernels[k].n_shares, 1);
        assert_int_equal(p.sites[p.kernels[k].shares[0].site].line, line);
        assert_true(p.kernels[k].shares[0].weight == 1);
    }
    assert_int_equal(found, !tu_on_interpreter() ? 1 : 0);
    pe_profile_free(&p);
    tu_expect_no_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(matmul_small, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(matmul_transposed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(matmul_of_a_slice, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(epilogue_fused, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(sum_of_two_products, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(trace_cache_replays_calls, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(matmul_large_against_cblas, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(lu_factor_and_solve, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(lu_cond_against_inverse, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(singular_matrix, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(bad_arguments, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(fused_around_a_call, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(macro_replays_calls, tu_setup, tu_teardown),
        cmocka_unit_test(profile_charges_the_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
