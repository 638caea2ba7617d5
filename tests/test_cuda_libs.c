/* test_cuda_libs.c — library calls on the CUDA executor (exec/cuda/
 * cuda_intrinsics.c: matmul on cuBLAS, lu and lu_solve on cuSOLVER) against
 * the same calls on the CPU (OpenBLAS, LAPACKE) and against the plain
 * product in long double complex: f32, f64, c64, c128; matrix x matrix,
 * matrix x vector, bound transposes, the fused epilogue, element-wise
 * producers and consumers around the call on the GPU; the LU factors,
 * pivots, solves, the condition number (made on the host), a singular
 * matrix's error at pe_lu's line.  It asserts the GPU made the calls (the
 * batches ran there; on the emulation, the emulated library's count).
 *
 * Runs on a real GPU (label gpu; exit 77 without one) and on the host
 * emulation (tests/emul: cuda_libs_on_host.c over OpenBLAS and LAPACKE).
 * `test_cuda_libs missing`, with PE_CUBLAS_LIBRARY and PE_CUSOLVER_LIBRARY
 * naming no library: the CPU computes the same values, with one warning
 * per library for the whole run. */
#include <complex.h>
#if !defined(CMPLX) && defined(__clang__) /* glibc's <complex.h> gives C11's CMPLX to GCC only */
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif
#include <float.h>
#include <unistd.h>

#include "test_util.h"
#include "emul/emul_checks.h"
#include "irformat/dtypes.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void) /* [-1, 1) */
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0 * 2 - 1;
}

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

static long double complex at(pe_dtype t, const void *b, int64_t i)
{
    switch (t) {
    case PE_F32: return ((const float *)b)[i];
    case PE_F64: return ((const double *)b)[i];
    case PE_C64: return ((const float complex *)b)[i];
    default: return ((const double complex *)b)[i];
    }
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
                long double complex x = at(t, a, c->ta ? l * c->m + i : i * c->k + l);
                long double complex y = at(t, b, c->vector ? l : c->tb ? j * c->k + l : l * c->n + j);
                s += x * y, mag += cabsl(x) * cabsl(y);
            }
            long double complex want = s;
            long double bound = 4 * (c->k + 2) * eps_of(t) * mag;
            if (c->epilogue) {
                long double complex c_ij = at(t, c0, i * (c->vector ? 1 : c->n) + j);
                want = 1.5L * s - 0.25L * c_ij;
                bound = 4 * (c->k + 4) * eps_of(t) * (1.5L * mag + 0.25L * cabsl(c_ij));
            }
            bound += single_t(t) ? FLT_MIN : DBL_MIN;
            int64_t e = i * (c->vector ? 1 : c->n) + j;
            for (int gpu = 0; gpu < 2; gpu++)
                if (cabsl(at(t, got[gpu], e) - want) > bound)
                    fail_msg("%s %s: [%lld][%lld] off by %Lg (bound %Lg), %lld x %lld x %lld", gpu ? "GPU" : "CPU",
                             pe_dtype_name(t), (long long)i, (long long)j, cabsl(at(t, got[gpu], e) - want), bound,
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
        assert_true(cabsl(at(t, lu[1], i) - at(t, lu[0], i)) <= tol * (1 + cabsl(at(t, lu[0], i))));
        assert_true(at(t, p[1], i) == at(t, p[0], i));
    }
    long double xnorm = 0;
    for (int64_t i = 0; i < n * nrhs; i++) xnorm = fmaxl(xnorm, cabsl(at(t, x[0], i)));
    for (int64_t i = 0; i < n * nrhs; i++) assert_true(cabsl(at(t, x[1], i) - at(t, x[0], i)) <= 30 * tol * (1 + xnorm));
    assert_true(fabs(cond[1] - cond[0]) <= 1e-3 * cond[0]);
    /* the GPU's solve: ||a x - b||_inf / (n ||a||_inf ||x||_inf eps) below 30 */
    long double worst = 0, anorm = 0;
    for (int64_t i = 0; i < n; i++) {
        long double row = 0;
        for (int64_t q = 0; q < n; q++) row += cabsl(at(t, a, i * n + q));
        anorm = fmaxl(anorm, row);
        for (int64_t c = 0; c < nrhs; c++) {
            long double complex r = -at(t, b, i * nrhs + c);
            for (int64_t q = 0; q < n; q++) r += at(t, a, i * n + q) * at(t, x[1], q * nrhs + c);
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
    }
    pe_stats after;
    pe_get_stats(&after);
    failed += after.library_calls - before.library_calls != 6;
    pe_shutdown();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    char text[8192];
    ssize_t len = pread(fd, text, sizeof text - 1, 0);
    text[len > 0 ? len : 0] = 0;
    close(fd), close(saved), unlink(path);
    int blas = 0, solver = 0;
    for (const char *at = text; (at = strstr(at, "cuBLAS is not loaded")); at++) blas++;
    for (const char *at = text; (at = strstr(at, "cuSOLVER is not loaded")); at++) solver++;
    if (blas != 1 || solver != 1) {
        fprintf(stderr, "expected one warning per library, got %d and %d:\n%s", blas, solver, text);
        failed++;
    }
    free(a);
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
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (tu_emul_misuses() > 0) {
        fprintf(stderr, "the executor made %ld calls the emulated CUDA driver refuses\n", tu_emul_misuses());
        failed++;
    }
    return failed;
}
