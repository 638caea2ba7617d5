/* test_cuda_libs.c — library calls on the CUDA executor (exec/cuda/
 * cuda_intrinsics.c: matmul on cuBLAS, lu and lu_solve on cuSOLVER, spmv on
 * cuSPARSE) against the same calls on the CPU (OpenBLAS, LAPACKE, PE's CSR
 * loop) and against the plain product in long double complex: f32, f64,
 * c64, c128; matrix x matrix, matrix x vector, bound transposes, the fused
 * epilogue, element-wise producers and consumers around the call on the
 * GPU; the LU factors, pivots, solves, the condition number (made on the
 * host), a singular matrix's error at pe_lu's line; spmv (f32, f64) on
 * random CSR matrices, the same bits when repeated, fused producers and
 * consumers in the GPU's batch, a wrong structure's PE_E_ARG at pe_spmv's
 * line with the CPU's message and no library call; fft and ifft (f32, f64,
 * c64, c128; one and two axes, batched, odd lengths) and pe_conv /
 * pe_correlate (the same four dtypes) through the FFT on cuFFT, against the DFT and the
 * convolution by their definitions in long double.  It asserts the GPU made
 * the calls (the batches ran there; on the emulation, the emulated
 * library's count).
 *
 * Runs on a real GPU (label gpu; exit 77 without one) and on the host
 * emulation (tests/emul: cuda_libs_on_host.c over OpenBLAS, LAPACKE and FFTW).
 * `test_cuda_libs missing`, with PE_CUBLAS_LIBRARY, PE_CUSOLVER_LIBRARY,
 * PE_CUSPARSE_LIBRARY and PE_CUFFT_LIBRARY naming no library: the CPU computes the same
 * values, with one warning per library for the whole run. */
#include "test_complex.h"
#include <float.h>
#include <unistd.h>

#include "test_util.h"
#include "emul/emul_checks.h"
#include "irformat/dtypes.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void) { return tu_uniform(&rng_state); } /* [-1, 1) */

static bool complex_t(pe_dtype t) { return t == PE_C64 || t == PE_C128; }
static bool single_t(pe_dtype t) { return t == PE_F32 || t == PE_C64; }
static double eps_of(pe_dtype t) { return single_t(t) ? FLT_EPSILON : DBL_EPSILON; }
static size_t size_of(pe_dtype t) { return t == PE_F32 ? 4 : t == PE_C128 ? 16 : 8; }

static void *random_buffer(pe_dtype t, int64_t n)
{
    char *b = malloc((size_t)(n ? n : 1) * size_of(t));
    assert_non_null(b);
    for (int64_t i = 0; i < n; i++) {
        double re = uniform(), im = complex_t(t) ? uniform() : 0;
        switch (t) {
        case PE_F32: ((float *)b)[i] = (float)re; break;
        case PE_F64: ((double *)b)[i] = re; break;
        case PE_C64: ((float complex *)b)[i] = CMPLXF((float)re, (float)im); break;
        default: ((double complex *)b)[i] = CMPLX(re, im); break;
        }
    }
    return b;
}

static void *read_all(pe_array a, int64_t n)
{
    pe_dtype t = pe_dtype_of(a);
    void *b = malloc((size_t)(n ? n : 1) * size_of(t));
    assert_non_null(b);
    int r = pe_read(a, b, (size_t)n * size_of(t));
    if (r != PE_OK) fail_msg("pe_read: %s", pe_last_error() ? pe_last_error()->message : "?");
    return b;
}

static void *emulated(const char *name);

/* the emulated library's calls so far (-1 on a real GPU) */
static long emulated_calls(void)
{
    long (*fn)(void) = (long (*)(void))emulated("pe_emul_cuda_library_calls");
    return fn ? fn() : -1;
}

/* a function of the emulated library, or NULL (a real GPU) */
static void *emulated(const char *name)
{
    const char *path = getenv("PE_CUBLAS_LIBRARY");
    void *lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    return lib ? dlsym(lib, name) : NULL;
}

/* GPU 0 (place 1) or the CPU for what follows */
static void on_gpu(bool gpu) { assert_int_equal(pe_set_device(gpu ? 1 : 0), PE_OK); }

/* e = alpha * (op(a) @ op(b)) [+ beta * c], optionally through exp before and
 * abs after (fused producers and consumers), on the GPU or the CPU. */
typedef struct {
    pe_dtype t;
    int64_t m, k, n;
    bool vector, ta, tb, epilogue;
} product;

static pe_array compute(const product *c, pe_array A, pe_array B, pe_array C)
{
    pe_array X = c->ta ? pe_transpose(A) : pe_retain(A), Y = c->tb ? pe_transpose(B) : pe_retain(B);
    pe_array P = pe_matmul(X, Y), E;
    if (c->epilogue) {
        pe_array S = pe_mul(P, 1.5), T = pe_mul(-0.25, C);
        E = pe_add(S, T);
        pe_release(S), pe_release(T);
    } else {
        E = pe_retain(P);
    }
    pe_release(X), pe_release(Y), pe_release(P);
    return E;
}

static void product_case(const product *c)
{
    pe_dtype t = c->t;
    int64_t sa[2] = {c->ta ? c->k : c->m, c->ta ? c->m : c->k}, sb[2] = {c->tb ? c->n : c->k, c->tb ? c->k : c->n};
    int64_t sc[2] = {c->m, c->n}, out_n = c->m * (c->vector ? 1 : c->n);
    void *a = random_buffer(t, c->m * c->k), *b = random_buffer(t, c->k * c->n), *c0 = random_buffer(t, c->m * c->n);
    pe_array A = pe_from_host(t, 2, sa, a), B = pe_from_host(t, c->vector ? 1 : 2, sb, b);
    pe_array C = pe_from_host(t, c->vector ? 1 : 2, sc, c0);
    void *got[2];
    for (int gpu = 1; gpu >= 0; gpu--) {
        on_gpu(gpu);
        pe_sync();
        pe_stats before = tu_stats();
        long calls = emulated_calls();
        pe_array E = compute(c, A, B, C);
        got[gpu] = read_all(E, out_n);
        pe_stats after = tu_stats();
        assert_int_equal(after.library_calls - before.library_calls, 1);
        if (gpu) { /* the call ran on the GPU: its batch there, the library called */
            assert_true(after.gpu_batches > before.gpu_batches);
            if (calls >= 0) assert_true(emulated_calls() > calls);
        }
        pe_release(E);
    }
    tu_expect_no_error();
    /* each within the product's bound of the long double complex loop */
    for (int64_t i = 0; i < c->m; i++)
        for (int64_t j = 0; j < (c->vector ? 1 : c->n); j++) {
            long double complex s = 0;
            long double mag = 0;
            for (int64_t l = 0; l < c->k; l++) {
                long double complex x = tc_at(t, a, c->ta ? l * c->m + i : i * c->k + l);
                long double complex y = tc_at(t, b, c->vector ? l : c->tb ? j * c->k + l : l * c->n + j);
                s += x * y, mag += cabsl(x) * cabsl(y);
            }
            long double complex want = s;
            long double bound = 4 * (c->k + 2) * eps_of(t) * mag;
            if (c->epilogue) {
                long double complex c_ij = tc_at(t, c0, i * (c->vector ? 1 : c->n) + j);
                want = 1.5L * s - 0.25L * c_ij;
                bound = 4 * (c->k + 4) * eps_of(t) * (1.5L * mag + 0.25L * cabsl(c_ij));
            }
            bound += single_t(t) ? FLT_MIN : DBL_MIN;
            int64_t e = i * (c->vector ? 1 : c->n) + j;
            for (int gpu = 0; gpu < 2; gpu++)
                if (cabsl(tc_at(t, got[gpu], e) - want) > bound)
                    fail_msg("%s %s: [%lld][%lld] off by %Lg (bound %Lg), %lld x %lld x %lld", gpu ? "GPU" : "CPU",
                             pe_dtype_name(t), (long long)i, (long long)j, cabsl(tc_at(t, got[gpu], e) - want), bound,
                             (long long)c->m, (long long)c->k, (long long)c->n);
        }
    free(a), free(b), free(c0), free(got[0]), free(got[1]);
    pe_release(A), pe_release(B), pe_release(C);
}

static const pe_dtype every_type[4] = {PE_F32, PE_F64, PE_C64, PE_C128};

static void matmul_on_the_gpu(void **state)
{
    (void)state;
    for (int ti = 0; ti < 4; ti++) {
        pe_dtype t = every_type[ti];
        product cases[] = {
            {t, 17, 13, 9, false, false, false, false}, {t, 64, 33, 65, false, false, false, false},
            {t, 6, 5, 4, false, true, true, false},     {t, 7, 9, 1, true, false, false, false},
            {t, 8, 6, 1, true, true, false, false},     {t, 9, 7, 5, false, false, true, false},
            {t, 1, 1, 1, false, false, false, false},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) product_case(&cases[i]);
        if (!complex_t(t)) { /* the fused epilogue (real dtypes: jit/proggen/intrinsic_plan.c) */
            product fused[] = {{t, 9, 7, 5, false, false, false, true}, {t, 12, 8, 1, true, false, false, true}};
            for (size_t i = 0; i < 2; i++) product_case(&fused[i]);
        }
    }
}

/* Element-wise work before and after the call stays on the GPU with it. */
static void fused_around_the_call(void **state)
{
    (void)state;
    int64_t n = 24, s[2] = {n, n};
    double *a = random_buffer(PE_F64, n * n), *b = random_buffer(PE_F64, n * n);
    pe_array A = pe_from_host(PE_F64, 2, s, a), B = pe_from_host(PE_F64, 2, s, b);
    double *got[2];
    for (int gpu = 1; gpu >= 0; gpu--) {
        on_gpu(gpu);
        pe_sync();
        pe_stats before = tu_stats();
        pe_array EA = pe_exp(A), C = pe_matmul(EA, B), S = pe_sqrt(pe_abs(C));
        pe_release(EA), pe_release(C);
        got[gpu] = read_all(S, n * n);
        pe_stats after = tu_stats();
        if (gpu) {
            assert_int_equal(after.gpu_batches - before.gpu_batches, 1);
            assert_true(after.kernels_launched - before.kernels_launched >= 2);
            assert_int_equal(after.ops_interpreted - before.ops_interpreted, 0);
        }
        pe_release(S);
    }
    for (int64_t i = 0; i < n * n; i++) assert_true(fabs(got[1][i] - got[0][i]) <= 1e-12 * (1 + fabs(got[0][i])));
    tu_expect_no_error();
    free(a), free(b), free(got[0]), free(got[1]);
    pe_release(A), pe_release(B);
}

/* The factors, pivots, a solve and the condition number, GPU against CPU:
 * pivots equal, factors and solutions within n^2 eps of each other
 * (relative to their size), the GPU's solve residual within LAPACK's bound. */
static void lu_case(pe_dtype t, int64_t n, int64_t nrhs)
{
    void *a = random_buffer(t, n * n), *b = random_buffer(t, n * nrhs);
    int64_t s[2] = {n, n}, sb[2] = {n, nrhs};
    pe_array A = pe_from_host(t, 2, s, a), B = pe_from_host(t, nrhs == 1 ? 1 : 2, sb, b);
    void *lu[2], *x[2], *p[2];
    int32_t *piv[2];
    double cond[2];
    for (int gpu = 1; gpu >= 0; gpu--) {
        on_gpu(gpu);
        pe_sync();
        pe_stats before = tu_stats();
        long calls = emulated_calls();
        pe_array LU, PIV;
        assert_int_equal(pe_lu(A, &LU, &PIV), PE_OK);
        pe_array X = pe_lu_solve(LU, PIV, B), K = pe_lu_cond(LU, PIV), P = pe_lu_unpack(LU, PIV, NULL, NULL);
        lu[gpu] = read_all(LU, n * n), x[gpu] = read_all(X, n * nrhs), p[gpu] = read_all(P, n * n);
        piv[gpu] = malloc(sizeof(int32_t) * (size_t)n);
        assert_int_equal(pe_read(PIV, piv[gpu], sizeof(int32_t) * (size_t)n), PE_OK);
        if (single_t(t)) {
            float k;
            assert_int_equal(pe_read(K, &k, sizeof k), PE_OK);
            cond[gpu] = k;
        } else {
            assert_int_equal(pe_read(K, &cond[gpu], sizeof cond[gpu]), PE_OK);
        }
        pe_stats after = tu_stats();
        if (gpu) {
            assert_true(after.gpu_batches > before.gpu_batches);
            if (calls >= 0) assert_true(emulated_calls() >= calls + 4); /* getrf, getrs and their transposes */
        }
        pe_release(LU), pe_release(PIV), pe_release(X), pe_release(K), pe_release(P);
    }
    tu_expect_no_error();
    double tol = 4.0 * (double)(n * n) * eps_of(t);
    for (int64_t i = 0; i < n; i++) assert_int_equal(piv[1][i], piv[0][i]);
    for (int64_t i = 0; i < n * n; i++) {
        assert_true(cabsl(tc_at(t, lu[1], i) - tc_at(t, lu[0], i)) <= tol * (1 + cabsl(tc_at(t, lu[0], i))));
        assert_true(tc_at(t, p[1], i) == tc_at(t, p[0], i));
    }
    long double xnorm = 0;
    for (int64_t i = 0; i < n * nrhs; i++) xnorm = fmaxl(xnorm, cabsl(tc_at(t, x[0], i)));
    for (int64_t i = 0; i < n * nrhs; i++) assert_true(cabsl(tc_at(t, x[1], i) - tc_at(t, x[0], i)) <= 30 * tol * (1 + xnorm));
    assert_true(fabs(cond[1] - cond[0]) <= 1e-3 * cond[0]);
    /* the GPU's solve: ||a x - b||_inf / (n ||a||_inf ||x||_inf eps) below 30 */
    long double worst = 0, anorm = 0;
    for (int64_t i = 0; i < n; i++) {
        long double row = 0;
        for (int64_t q = 0; q < n; q++) row += cabsl(tc_at(t, a, i * n + q));
        anorm = fmaxl(anorm, row);
        for (int64_t c = 0; c < nrhs; c++) {
            long double complex r = -tc_at(t, b, i * nrhs + c);
            for (int64_t q = 0; q < n; q++) r += tc_at(t, a, i * n + q) * tc_at(t, x[1], q * nrhs + c);
            worst = fmaxl(worst, cabsl(r));
        }
    }
    double ratio = (double)(worst / (n * anorm * xnorm * eps_of(t)));
    if (ratio >= 30) fail_msg("GPU solve: ratio %g for %s n = %lld", ratio, pe_dtype_name(t), (long long)n);
    for (int g = 0; g < 2; g++) free(lu[g]), free(x[g]), free(p[g]), free(piv[g]);
    free(a), free(b);
    pe_release(A), pe_release(B);
}

static void lu_on_the_gpu(void **state)
{
    (void)state;
    static const int64_t sizes[][2] = {{1, 1}, {5, 3}, {17, 1}, {48, 4}};
    for (int ti = 0; ti < 4; ti++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) lu_case(every_type[ti], sizes[i][0], sizes[i][1]);
}

/* getrf's zero pivot: PE_E_ARG at pe_lu's line, as on the CPU. */
static void singular_on_the_gpu(void **state)
{
    (void)state;
    on_gpu(true);
    double a[9] = {1, 2, 3, 2, 4, 6, 1, 0, 1};
    int64_t s[2] = {3, 3};
    pe_array A = pe_from_host(PE_F64, 2, s, a), LU, PIV;
    int line = __LINE__ + 1;
    assert_int_equal(pe_lu(A, &LU, &PIV), PE_OK);
    double out[9];
    assert_int_equal(pe_read(LU, out, sizeof out), PE_E_ARG);
    tu_expect_error(PE_E_ARG, line);
    assert_non_null(strstr(pe_last_error()->message, "singular"));
    tu_errors_clear();
    pe_release(A), pe_release(LU), pe_release(PIV);
}

/* A call the library fails (the emulation's injected failure): the host
 * makes it, with the right values and no error; the GPU stays on. */
static void a_failing_call_goes_to_the_host(void **state)
{
    (void)state;
    void (*fail_next)(void) = (void (*)(void))emulated("pe_emul_cuda_libs_fail_next");
    if (!fail_next) return; /* a real GPU: nothing to inject */
    on_gpu(true);
    int64_t n = 10, s[2] = {n, n};
    double *a = random_buffer(PE_F64, n * n), got[100];
    pe_array A = pe_from_host(PE_F64, 2, s, a), P = pe_exp(A), C = pe_matmul(P, A);
    pe_release(P);
    pe_stats before = tu_stats();
    fail_next();
    assert_int_equal(pe_read(C, got, sizeof got), PE_OK);
    pe_stats after = tu_stats();
    assert_int_equal(after.library_calls - before.library_calls, 1);
    assert_true(after.gpu_batches > before.gpu_batches);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            long double acc = 0;
            for (int64_t q = 0; q < n; q++) acc += expl(a[i * n + q]) * a[q * n + j];
            assert_true(fabsl(got[i * n + j] - acc) <= 1e-13L * (1 + fabsl(acc)));
        }
    tu_expect_no_error();
    /* the GPU is still used: the next product is cuBLAS's */
    long calls = emulated_calls();
    pe_array D = pe_matmul(A, A);
    assert_int_equal(pe_read(D, got, sizeof got), PE_OK);
    assert_true(emulated_calls() > calls);
    free(a);
    pe_release(A), pe_release(C), pe_release(D);
}

/* ------------------------------------------------------------- spmv on cuSPARSE */

/* A random CSR matrix (a quarter of the rows empty, columns repeated at
 * random), its values in dtype t. */
typedef struct {
    int64_t n_rows, n_cols, nnz;
    int32_t *row_ptr, *col;
    void *values;
} csr;

static csr random_csr(pe_dtype t, int64_t n_rows, int64_t n_cols, int max_per_row)
{
    csr m = {.n_rows = n_rows, .n_cols = n_cols};
    m.row_ptr = malloc(sizeof *m.row_ptr * (size_t)(n_rows + 1));
    m.col = malloc(sizeof *m.col * (size_t)(n_rows * max_per_row + 1));
    assert_true(m.row_ptr && m.col);
    m.row_ptr[0] = 0;
    for (int64_t i = 0; i < n_rows; i++) {
        int k = (uniform() < -0.5) ? 0 : (int)((uniform() + 1) / 2 * (max_per_row + 1));
        for (int e = 0; e < k; e++) m.col[m.nnz++] = (int32_t)((uniform() + 1) / 2 * (double)n_cols);
        m.row_ptr[i + 1] = (int32_t)m.nnz;
    }
    m.values = random_buffer(t, m.nnz);
    return m;
}

static void free_csr(csr *m) { free(m->row_ptr), free(m->col), free(m->values); }

static pe_csr csr_to_pe(const csr *m, pe_dtype t)
{
    int64_t n_ptr = m->n_rows + 1, nnz = m->nnz;
    pe_array rp = pe_from_host(PE_I32, 1, &n_ptr, m->row_ptr), ci = pe_from_host(PE_I32, 1, &nnz, m->col);
    pe_array v = pe_from_host(t, 1, &nnz, m->values);
    pe_csr a = pe_csr_create(rp, ci, v, m->n_cols);
    pe_release(rp), pe_release(ci), pe_release(v);
    return a;
}

/* y against the long double loop: each row within (len + 2) eps sum |v x|
 * (a row summed in the element type, as cuSPARSE does, is within len eps of it) */
static void check_spmv(pe_dtype t, const csr *m, const void *x, const void *y, const char *where)
{
    for (int64_t i = 0; i < m->n_rows; i++) {
        long double s = 0, mag = 0;
        for (int32_t k = m->row_ptr[i]; k < m->row_ptr[i + 1]; k++) {
            long double p = creall(tc_at(t, m->values, k)) * creall(tc_at(t, x, m->col[k]));
            s += p, mag += fabsl(p);
        }
        long double bound = (m->row_ptr[i + 1] - m->row_ptr[i] + 2) * eps_of(t) * mag;
        long double got = creall(tc_at(t, y, i));
        if (fabsl(got - s) > bound)
            fail_msg("%s %s row %lld of %lld x %lld: %.17Lg, the loop's %.17Lg (bound %.3Lg)", where, pe_dtype_name(t),
                     (long long)i, (long long)m->n_rows, (long long)m->n_cols, got, s, bound);
    }
}

/* Whether the GPU's cuSPARSE is there (the emulation's, or the machine's). */
static bool have_cusparse(void)
{
    const char *path = getenv("PE_CUSPARSE_LIBRARY");
    if (path && *path) return dlopen(path, RTLD_NOW | RTLD_NOLOAD) || dlopen(path, RTLD_NOW | RTLD_LOCAL);
    return dlopen("libcusparse.so.12", RTLD_NOW | RTLD_LOCAL) || dlopen("libcusparse.so.11", RTLD_NOW | RTLD_LOCAL) ||
           dlopen("libcusparse.so", RTLD_NOW | RTLD_LOCAL);
}

/* y = A x on the GPU and on the CPU, both against the long double loop;
 * the GPU's batch made the call (the emulated library counted one SpMV). */
static void spmv_of(pe_dtype t, csr m);
static void spmv_case(pe_dtype t, int64_t n_rows, int64_t n_cols, int max_per_row)
{
    spmv_of(t, random_csr(t, n_rows, n_cols, max_per_row));
}

/* The product of m (freed here) on the GPU and the CPU (see spmv_case). */
static void spmv_of(pe_dtype t, csr m)
{
    int64_t n_rows = m.n_rows, n_cols = m.n_cols;
    void *x = random_buffer(t, n_cols), *y[2];
    pe_csr a = csr_to_pe(&m, t);
    pe_array X = pe_from_host(t, 1, &n_cols, x);
    for (int gpu = 1; gpu >= 0; gpu--) {
        on_gpu(gpu);
        pe_sync();
        pe_stats before = tu_stats();
        long calls = emulated_calls();
        for (int rep = 0; rep < 2; rep++) { /* the second product: the structure's check remembered */
            pe_array Y = pe_spmv(a, X);
            if (rep == 0) y[gpu] = read_all(Y, n_rows);
            else {
                void *again = read_all(Y, n_rows);
                assert_memory_equal(again, y[gpu], (size_t)n_rows * size_of(t)); /* the same bits each run */
                free(again);
            }
            pe_release(Y);
        }
        pe_stats after = tu_stats();
        if (after.library_calls - before.library_calls != 2)
            fail_msg("%s: %llu calls for 2 products of %lld x %lld, %lld entries", gpu ? "GPU" : "CPU",
                     (unsigned long long)(after.library_calls - before.library_calls), (long long)n_rows,
                     (long long)n_cols, (long long)m.nnz);
        if (gpu) {
            assert_true(after.gpu_batches > before.gpu_batches);
            /* one cusparseSpMV each; a matrix with no entries is all zeros, and one with more entries
             * than places (repeated columns) is refused by cuSPARSE: both made on the host */
            if (calls >= 0 && emulated_calls() - calls != (m.nnz && m.nnz <= n_rows * n_cols ? 2 : 0))
                fail_msg("%ld SpMV calls for 2 products of %lld x %lld, %lld entries", emulated_calls() - calls,
                         (long long)n_rows, (long long)n_cols, (long long)m.nnz);
        }
    }
    tu_expect_no_error();
    check_spmv(t, &m, x, y[1], "GPU");
    check_spmv(t, &m, x, y[0], "CPU");
    free(x), free(y[0]), free(y[1]);
    pe_release(X);
    pe_csr_destroy(a);
    free_csr(&m);
}

static void spmv_on_the_gpu(void **state)
{
    (void)state;
    if (!have_cusparse()) return;
    for (int d = 0; d < 2; d++) {
        pe_dtype t = d ? PE_F64 : PE_F32;
        spmv_case(t, 1, 1, 1);
        spmv_case(t, 6, 5, 0); /* no entries */
        spmv_case(t, 37, 23, 5);
        spmv_case(t, 300, 200, 9);
        spmv_case(t, 4000, 2500, 12);
        /* 7 entries in a 1 x 3 matrix (repeated columns, summed): more than cusparseCreateCsr takes (seen on an
         * H200), so the host makes it, with no warning (tu_expect_no_error) */
        csr dup = {.n_rows = 1, .n_cols = 3, .nnz = 7};
        dup.row_ptr = malloc(2 * sizeof *dup.row_ptr), dup.col = malloc(7 * sizeof *dup.col);
        assert_true(dup.row_ptr && dup.col);
        dup.row_ptr[0] = 0, dup.row_ptr[1] = 7;
        for (int e = 0; e < 7; e++) dup.col[e] = e % 3;
        dup.values = random_buffer(t, 7);
        spmv_of(t, dup);
    }
}

/* x = 2 exp(u) + 1 and sqrt(|A x|) * 3: the producers one kernel before
 * the call and the consumers one after, all in one GPU batch, nothing
 * interpreted; the values against the CPU's within a few ulps. */
static void spmv_fused_on_the_gpu(void **state)
{
    (void)state;
    if (!have_cusparse()) return;
    csr m = random_csr(PE_F64, 300, 200, 8);
    double *u = random_buffer(PE_F64, 200), *got[2];
    pe_csr a = csr_to_pe(&m, PE_F64);
    int64_t n_u = 200;
    pe_array U = pe_from_host(PE_F64, 1, &n_u, u);
    for (int gpu = 1; gpu >= 0; gpu--) {
        on_gpu(gpu);
        pe_sync();
        pe_stats before = tu_stats();
        long calls = emulated_calls();
        pe_array E = pe_exp(U), T = pe_mul(E, 2.0), X = pe_add(T, 1.0), Y = pe_spmv(a, X);
        pe_array A = pe_abs(Y), S = pe_sqrt(A), R = pe_mul(S, 3.0);
        pe_release(E), pe_release(T), pe_release(X), pe_release(Y), pe_release(A), pe_release(S);
        got[gpu] = read_all(R, 300);
        pe_stats after = tu_stats();
        assert_int_equal(after.library_calls - before.library_calls, 1);
        if (gpu) {
            assert_int_equal(after.gpu_batches - before.gpu_batches, 1);
            assert_int_equal(after.kernels_launched - before.kernels_launched, 2);
            assert_int_equal(after.ops_interpreted - before.ops_interpreted, 0);
            if (calls >= 0) assert_int_equal(emulated_calls() - calls, 1);
        }
        pe_release(R);
    }
    tu_expect_no_error();
    for (int64_t i = 0; i < 300; i++) {
        long double s = 0, mag = 0;
        for (int32_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; k++) {
            long double p = ((double *)m.values)[k] * (2 * expl(u[m.col[k]]) + 1);
            s += p, mag += fabsl(p);
        }
        long double want = sqrtl(fabsl(s)) * 3, tol = 64 * DBL_EPSILON * (1 + want + mag / (1e-300L + sqrtl(fabsl(s))));
        for (int gpu = 0; gpu < 2; gpu++)
            if (fabsl(got[gpu][i] - want) > tol)
                fail_msg("%s row %lld: %.17g, want %.17Lg", gpu ? "GPU" : "CPU", (long long)i, got[gpu][i], want);
    }
    free(u), free(got[0]), free(got[1]);
    pe_release(U);
    pe_csr_destroy(a);
    free_csr(&m);
}

/* A structure whose indices are wrong: on the GPU the same PE_E_ARG at
 * pe_spmv's line, naming the same first fault, as on the CPU; cuSPARSE is
 * never called with it (the emulation would abort reading outside the
 * arrays) and a consumer is invalid without an error of its own. */
static void spmv_bad_structure_on_the_gpu(void **state)
{
    (void)state;
    if (!have_cusparse()) return;
    static const struct {
        int32_t rp[4], ci[4];
    } cases[] = {
        {{0, 1, 3, 4}, {0, 3, 1, 2}},  /* a column one past the last */
        {{0, 1, 3, 4}, {0, 1, -1, 2}}, /* a negative column */
        {{0, 3, 1, 4}, {0, 1, 2, 2}},  /* offsets going down */
        {{0, 1, 2, 5}, {0, 1, 2, 2}},  /* past nnz */
        {{1, 1, 2, 4}, {0, 1, 2, 2}},  /* not starting at 0 */
        {{0, 1, 2, 3}, {0, 1, 2, 2}},  /* not ending at nnz */
        {{0, -2, 2, 4}, {0, 1, 2, 2}}, /* a negative offset */
    };
    int64_t n4 = 4, n3 = 3;
    double x[3] = {1, 2, 3}, v[4] = {1.5, -2, 0.25, 3};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char message[2][1024];
        for (int gpu = 1; gpu >= 0; gpu--) {
            on_gpu(gpu);
            pe_array rp = pe_from_host(PE_I32, 1, &n4, cases[c].rp), ci = pe_from_host(PE_I32, 1, &n4, cases[c].ci);
            pe_array V = pe_from_host(PE_F64, 1, &n4, v), X = pe_from_host(PE_F64, 1, &n3, x);
            pe_csr a = pe_csr_create(rp, ci, V, 3);
            tu_expect_no_error();
            long calls = emulated_calls();
            pe_stats before = tu_stats();
            int line = __LINE__ + 1;
            pe_array Y = pe_spmv(a, X), Z = pe_add(Y, 1.0);
            double out[3];
            assert_int_equal(pe_read(Y, out, sizeof out), PE_E_ARG);
            snprintf(message[gpu], sizeof message[gpu], "%s", tu_errors.message);
            tu_expect_error(PE_E_ARG, line);
            assert_int_not_equal(pe_read(Z, out, sizeof out), PE_OK);
            tu_errors_clear();
            if (gpu) {
                assert_true(tu_stats().gpu_batches > before.gpu_batches);
                if (calls >= 0) assert_int_equal(emulated_calls(), calls); /* no SpMV made */
            }
            pe_release(rp), pe_release(ci), pe_release(V), pe_release(X), pe_release(Y), pe_release(Z);
            pe_csr_destroy(a);
        }
        if (strcmp(message[0], message[1]) != 0) fail_msg("case %zu: GPU '%s', CPU '%s'", c, message[1], message[0]);
    }
    /* a right structure next: the GPU makes it */
    on_gpu(true);
    int32_t rp[3] = {0, 2, 3}, ci[3] = {2, 0, 1};
    double v3[3] = {2, 3, 4}, y[2];
    int64_t n3b = 3;
    pe_array RP = pe_from_host(PE_I32, 1, &n3b, rp), CI = pe_from_host(PE_I32, 1, &n3b, ci);
    pe_array V = pe_from_host(PE_F64, 1, &n3b, v3), X = pe_from_host(PE_F64, 1, &n3, x);
    pe_csr a = pe_csr_create(RP, CI, V, 3);
    long calls = emulated_calls();
    pe_array Y = pe_spmv(a, X);
    assert_int_equal(pe_read(Y, y, sizeof y), PE_OK);
    assert_true(y[0] == 2 * 3 + 3 * 1 && y[1] == 4 * 2);
    if (calls >= 0) assert_int_equal(emulated_calls() - calls, 1);
    tu_expect_no_error();
    pe_release(RP), pe_release(CI), pe_release(V), pe_release(X), pe_release(Y);
    pe_csr_destroy(a);
}

/* ------------------------------------------------------------- FFTs on cuFFT */

/* The DFT of the last `dims` axes of x (batch x rows x cols, complex long
 * double) by the definition, and the sum of the magnitudes of each line's
 * inputs (the bound's scale). */
static void direct_dft(const long double complex *x, long double complex *out, long double *mass, int64_t batch,
                       int64_t rows, int64_t cols, bool inverse)
{
    const long double two_pi = 6.283185307179586476925286766559L;
    for (int64_t b = 0; b < batch; b++) {
        const long double complex *in = x + b * rows * cols;
        long double m = 0;
        for (int64_t q = 0; q < rows * cols; q++) m += cabsl(in[q]);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) {
                long double complex s = 0;
                for (int64_t u = 0; u < rows; u++)
                    for (int64_t v = 0; v < cols; v++) {
                        long double angle = two_pi * ((long double)((r * u) % rows) / rows + (long double)((c * v) % cols) / cols);
                        s += in[u * cols + v] * (cosl(angle) + (inverse ? 1 : -1) * I * sinl(angle));
                    }
                out[(b * rows + r) * cols + c] = inverse ? s / (long double)(rows * cols) : s;
                mass[(b * rows + r) * cols + c] = inverse ? m / (long double)(rows * cols) : m;
            }
    }
}

/* fft or ifft of a (batch x rows x cols) array of dtype t, on the GPU and
 * the CPU, both against the direct DFT within 4 log2(n) eps of each
 * line's magnitude; the GPU's batch made the call (on the emulation: its
 * library counted the transform). */
static void fft_case(pe_dtype t, int dims, int64_t batch, int64_t rows, int64_t cols, bool inverse)
{
    int64_t numel = batch * rows * cols, line = dims == 2 ? rows * cols : cols;
    int64_t shape[3] = {batch, rows, cols};
    void *x = random_buffer(t, numel);
    long double complex *lx = malloc(sizeof *lx * (size_t)numel), *want = malloc(sizeof *want * (size_t)numel);
    long double *mass = malloc(sizeof *mass * (size_t)numel);
    assert_true(lx && want && mass);
    for (int64_t i = 0; i < numel; i++) lx[i] = tc_at(t, x, i);
    direct_dft(lx, want, mass, numel / line, dims == 2 ? rows : 1, cols, inverse);
    pe_dtype rt = t == PE_F32 || t == PE_C64 ? PE_C64 : PE_C128;
    double bound_scale = 4 * (log2((double)line) + 1) * eps_of(rt);
    pe_array X = pe_from_host(t, 3, shape, x);
    for (int gpu = 1; gpu >= 0; gpu--) {
        on_gpu(gpu);
        pe_sync();
        pe_stats before = tu_stats();
        long calls = emulated_calls();
        pe_array F = inverse ? pe_ifft(X, dims) : pe_fft(X, dims);
        assert_int_equal(pe_dtype_of(F), rt);
        void *got = read_all(F, numel);
        pe_array R = inverse ? pe_fft(F, dims) : pe_ifft(F, dims); /* the round trip, on the same device */
        void *back = read_all(R, numel);
        tu_expect_no_error();
        for (int64_t i = 0; i < numel; i++) {
            long double err = cabsl(tc_at(rt, got, i) - want[i]), bound = bound_scale * (mass[i] + 1e-30L);
            if (err > bound)
                fail_msg("%s %s %s dims %d (%lld x %lld x %lld) element %lld: error %.3Lg, bound %.3Lg",
                         gpu ? "GPU" : "CPU", inverse ? "ifft" : "fft", pe_dtype_name(t), dims, (long long)batch,
                         (long long)rows, (long long)cols, (long long)i, err, bound);
            long double trip = cabsl(tc_at(rt, back, i) - lx[i]);
            if (trip > 4 * bound_scale * (cabsl(lx[i]) + mass[i] / (inverse ? 1 : (long double)line) + 1))
                fail_msg("%s round trip %s element %lld: off by %.3Lg", gpu ? "GPU" : "CPU", pe_dtype_name(t),
                         (long long)i, trip);
        }
        if (gpu) {
            assert_true(tu_stats().gpu_batches > before.gpu_batches);
            if (calls >= 0 && emulated_calls() - calls < 2) /* the two transforms at least */
                fail_msg("%ld library calls for an fft and its inverse on the GPU", emulated_calls() - calls);
        }
        pe_release(F), pe_release(R);
        free(got), free(back);
    }
    pe_release(X);
    free(x), free(lx), free(want), free(mass);
}

/* Whether the GPU's cuFFT is there (the emulation's, or the machine's). */
static bool have_cufft(void)
{
    const char *path = getenv("PE_CUFFT_LIBRARY");
    if (path && *path) return dlopen(path, RTLD_NOW | RTLD_NOLOAD) || dlopen(path, RTLD_NOW | RTLD_LOCAL);
    return dlopen("libcufft.so.12", RTLD_NOW | RTLD_LOCAL) || dlopen("libcufft.so.11", RTLD_NOW | RTLD_LOCAL) ||
           dlopen("libcufft.so", RTLD_NOW | RTLD_LOCAL);
}

static void fft_on_the_gpu(void **state)
{
    (void)state;
    if (!have_cufft()) return;
    static const pe_dtype types[] = {PE_F32, PE_F64, PE_C64, PE_C128};
    for (int d = 0; d < 4; d++)
        for (int inverse = 0; inverse < 2; inverse++) {
            fft_case(types[d], 1, 1, 1, 16, inverse);
            fft_case(types[d], 1, 3, 2, 15, inverse); /* batched, an odd length */
            fft_case(types[d], 2, 2, 6, 10, inverse);
            fft_case(types[d], 2, 1, 7, 9, inverse);
        }
}

/* pe_conv / pe_correlate through the FFT (more than 16 kernel elements) of
 * a (batch x n0 x n1) with a (k0 x) k1 kernel, GPU and CPU against the
 * definition (full[p] = sum_u a[u] k[p - u]; "same" from (k - 1) / 2; a
 * correlation with k reversed) within 8 log2(padded) eps of each element's
 * sum of magnitudes (an FFT's error spreads over the line). */
static void conv_fft_case(pe_dtype t, int dims, int64_t batch, int64_t n0, int64_t n1, int64_t k0, int64_t k1,
                          bool correlate)
{
    if (dims == 1) n0 = 1, k0 = 1;
    int64_t numel = batch * n0 * n1, taps = k0 * k1, shape[3] = {batch, n0, n1}, shape1[2] = {batch, n1};
    int64_t kshape[2] = {k0, k1};
    void *a = random_buffer(t, numel), *k = random_buffer(t, taps);
    long double complex *want = malloc(sizeof *want * (size_t)numel);
    long double *mass = malloc(sizeof *mass * (size_t)numel), line_mass = 0;
    assert_true(want && mass);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n0; i++)
            for (int64_t j = 0; j < n1; j++) {
                long double complex s = 0;
                long double m = 0;
                for (int64_t p = 0; p < k0; p++)
                    for (int64_t q = 0; q < k1; q++) {
                        int64_t u = i + (k0 - 1) / 2 - p, v = j + (k1 - 1) / 2 - q;
                        if (u < 0 || u >= n0 || v < 0 || v >= n1) continue;
                        int64_t kk = correlate ? (k0 - 1 - p) * k1 + (k1 - 1 - q) : p * k1 + q;
                        long double complex kv = tc_at(t, k, kk); /* a correlation: conjugated, as scipy's */
                        long double complex term = tc_at(t, a, (b * n0 + u) * n1 + v) * (correlate ? conjl(kv) : kv);
                        s += term, m += cabsl(term);
                    }
                int64_t e = (b * n0 + i) * n1 + j;
                want[e] = s, mass[e] = m, line_mass = m > line_mass ? m : line_mass;
            }
    double padded = (double)((n0 + k0) * (n1 + k1));
    long double bound = 8 * (log2(padded) + 1) * eps_of(t) * (line_mass + 1);
    pe_array A = pe_from_host(t, dims == 2 ? 3 : 2, dims == 2 ? shape : shape1, a);
    pe_array K = pe_from_host(t, dims, dims == 2 ? kshape : &kshape[1], k);
    for (int gpu = 1; gpu >= 0; gpu--) {
        on_gpu(gpu);
        pe_sync();
        pe_stats before = tu_stats();
        long calls = emulated_calls();
        pe_array C = correlate ? pe_correlate(A, K) : pe_conv(A, K);
        void *got = read_all(C, numel);
        tu_expect_no_error();
        pe_stats after = tu_stats();
        assert_int_equal(after.library_calls - before.library_calls, 1); /* the FFT path: one call */
        for (int64_t i = 0; i < numel; i++) {
            long double err = cabsl(tc_at(t, got, i) - want[i]);
            if (err > bound)
                fail_msg("%s %s %s dims %d (%lld x %lld x %lld, kernel %lld x %lld) element %lld: %.9Lg, want %.9Lg "
                         "(real parts; bound %.3Lg)",
                         gpu ? "GPU" : "CPU", correlate ? "correlate" : "conv", pe_dtype_name(t), dims, (long long)batch,
                         (long long)n0, (long long)n1, (long long)k0, (long long)k1, (long long)i,
                         creall(tc_at(t, got, i)), creall(want[i]), bound);
        }
        if (gpu) {
            assert_true(after.gpu_batches > before.gpu_batches);
            if (calls >= 0 && emulated_calls() - calls < 3) /* two forward transforms and an inverse at least */
                fail_msg("%ld library calls for a convolution through the FFT on the GPU", emulated_calls() - calls);
        }
        pe_release(C);
        free(got);
    }
    pe_release(A), pe_release(K);
    free(a), free(k), free(want), free(mass);
}

static void conv_fft_on_the_gpu(void **state)
{
    (void)state;
    if (!have_cufft()) return;
    static const pe_dtype types[] = {PE_F32, PE_F64, PE_C64, PE_C128};
    for (int d = 0; d < 4; d++) {
        pe_dtype t = types[d];
        for (int correlate = 0; correlate < 2; correlate++) {
            /* kernels past the direct sum's 64 taps (api_spectral.c), so the FFT path it is */
            conv_fft_case(t, 1, 3, 1, 200, 1, 65, correlate);
            conv_fft_case(t, 1, 1, 1, 90, 1, 70, correlate); /* an even kernel */
            conv_fft_case(t, 2, 2, 20, 30, 9, 9, correlate);
            conv_fft_case(t, 2, 1, 17, 12, 10, 7, correlate);
        }
    }
}

/* Without the libraries: the CPU computes (the same values as the
 * library there), and each missing library is one warning for the run. */
static int missing(void)
{
    char path[] = "/tmp/pe-cuda-libs-XXXXXX";
    int fd = mkstemp(path), saved = dup(STDERR_FILENO);
    if (fd < 0 || saved < 0) return 1;
    setenv("PE_LOG", "warn", 1);
    fflush(stderr);
    dup2(fd, STDERR_FILENO);
    int failed = 0;
    if (pe_init(NULL) != PE_OK) return 1;
    if (pe_device_count() < 2) failed++;
    on_gpu(true);
    int64_t n = 12, s[2] = {n, n};
    double *a = random_buffer(PE_F64, n * n), want[144], got[144];
    csr m = random_csr(PE_F64, 30, 20, 4);
    double *x = random_buffer(PE_F64, 20), y[30];
    int64_t n_x = 20;
    pe_stats before;
    pe_get_stats(&before);
    for (int r = 0; r < 3; r++) { /* three batches, one warning */
        pe_array A = pe_from_host(PE_F64, 2, s, a), C = pe_matmul(A, A), LU, PIV;
        pe_lu(A, &LU, &PIV);
        failed += pe_read(C, got, sizeof got) != PE_OK;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                long double acc = 0;
                for (int64_t q = 0; q < n; q++) acc += (long double)a[i * n + q] * a[q * n + j];
                want[i * n + j] = (double)acc;
            }
        for (int64_t i = 0; i < n * n; i++) failed += fabs(got[i] - want[i]) > 1e-13 * (1 + fabs(want[i]));
        failed += pe_read(LU, got, sizeof got) != PE_OK;
        pe_release(A), pe_release(C), pe_release(LU), pe_release(PIV);
        /* spmv without cuSPARSE: the CPU's loop, within the sum's bound of the long double one */
        pe_csr sp = csr_to_pe(&m, PE_F64);
        pe_array X = pe_from_host(PE_F64, 1, &n_x, x), Y = pe_spmv(sp, X);
        failed += pe_read(Y, y, sizeof y) != PE_OK;
        for (int64_t i = 0; i < m.n_rows; i++) {
            long double s = 0, mag = 0;
            for (int32_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; k++) {
                long double p = (long double)((double *)m.values)[k] * x[m.col[k]];
                s += p, mag += fabsl(p);
            }
            failed += fabsl(y[i] - s) > (m.row_ptr[i + 1] - m.row_ptr[i] + 2) * DBL_EPSILON * mag;
        }
        pe_release(X), pe_release(Y);
        pe_csr_destroy(sp);
        /* fft without cuFFT: FFTW's, against the definition (a delta's transform is all ones) */
        double delta[8] = {1, 0, 0, 0, 0, 0, 0, 0}, complex_out[16];
        int64_t n8 = 8;
        pe_array D = pe_from_host(PE_F64, 1, &n8, delta), F = pe_fft(D, 1);
        failed += pe_read(F, complex_out, sizeof complex_out) != PE_OK;
        for (int i = 0; i < 8; i++) failed += complex_out[2 * i] != 1 || complex_out[2 * i + 1] != 0;
        pe_release(D), pe_release(F);
    }
    pe_stats after;
    pe_get_stats(&after);
    failed += after.library_calls - before.library_calls != 12;
    pe_shutdown();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    char text[8192];
    ssize_t len = pread(fd, text, sizeof text - 1, 0);
    text[len > 0 ? len : 0] = 0;
    close(fd), close(saved), unlink(path);
    int blas = 0, solver = 0, sparse = 0, fft = 0;
    for (const char *at = text; (at = strstr(at, "cuBLAS is not loaded")); at++) blas++;
    for (const char *at = text; (at = strstr(at, "cuSOLVER is not loaded")); at++) solver++;
    for (const char *at = text; (at = strstr(at, "cuSPARSE is not loaded")); at++) sparse++;
    for (const char *at = text; (at = strstr(at, "cuFFT is not loaded")); at++) fft++;
    if (blas != 1 || solver != 1 || sparse != 1 || fft != 1) {
        fprintf(stderr, "expected one warning per library, got %d, %d, %d and %d:\n%s", blas, solver, sparse, fft, text);
        failed++;
    }
    free(a), free(x);
    free_csr(&m);
    if (failed) fprintf(stderr, "test_cuda_libs missing: %d failures\n", failed);
    else printf("missing libraries: the CPU computed, one warning each\n");
    return failed;
}

int main(int argc, char **argv)
{
    pe_push_error_handler(tu_record_error, NULL);
    if (pe_init(NULL) != PE_OK) return 1;
    int devices = pe_device_count();
    pe_shutdown();
    pe_pop_error_handler();
    if (devices < 2) {
        fprintf(stderr, "skipped: no CUDA device\n");
        return 77;
    }
    if (argc > 1 && strcmp(argv[1], "missing") == 0) return missing();
    const char *blas = getenv("PE_CUBLAS_LIBRARY"); /* a real GPU: the machine's own cuBLAS and cuSOLVER */
    if (!blas || !*blas) {
        void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
        if (!lib) lib = dlopen("libcublas.so.12", RTLD_NOW | RTLD_LOCAL);
        if (!lib) lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            fprintf(stderr, "skipped: no cuBLAS on this machine\n");
            return 77;
        }
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(matmul_on_the_gpu, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(fused_around_the_call, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(lu_on_the_gpu, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(singular_on_the_gpu, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(a_failing_call_goes_to_the_host, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(spmv_on_the_gpu, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(spmv_fused_on_the_gpu, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(spmv_bad_structure_on_the_gpu, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(fft_on_the_gpu, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(conv_fft_on_the_gpu, tu_setup, tu_teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (tu_emul_misuses() > 0) {
        fprintf(stderr, "the executor made %ld calls the emulated CUDA driver refuses\n", tu_emul_misuses());
        failed++;
    }
    long (*refused)(void) = (long (*)(void))emulated("pe_emul_cuda_libs_refused");
    if (refused && refused() > 0) { /* each would have gone to the host with a warning, the test passing */
        fprintf(stderr, "the executor made %ld library calls the emulated libraries refuse\n", refused());
        failed++;
    }
    return failed;
}
