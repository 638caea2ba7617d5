/* test_host_libs.c — the host's math libraries on first use (issue 36,
 * exec/intrinsics/libs.c):
 *   - a program that never calls them runs with its address space capped at
 *     100 MiB (`ulimit -v 102400`: RLIMIT_AS set before exec), where
 *     OpenBLAS's thread start-up used to end it at load; and it has mapped
 *     none of them;
 *   - a library that does not load (PE_BLAS_LIBRARY, PE_LAPACKE_LIBRARY,
 *     PE_FFTW_LIBRARY, PE_FFTWF_LIBRARY naming a missing file, or a file
 *     without the functions) makes the call that needs it PE_E_DEVICE at the
 *     caller's line, naming the library and the Debian package; the other
 *     libraries and every other op go on working.  On the interpreter
 *     (PE_EXECUTOR=interp) the calls are its own loops: right values, no
 *     error.
 * Each case runs in a process of its own (this program again, exec'ed with
 * `--child CASE` and the case's environment): a library is tried once per
 * process, and the cap is for good. */
#include "test_util.h"

#include <complex.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define CAP_BYTES (100L << 20)
#define MISSING "/nonexistent/pe-test"

/* ------------------------------------------------------------ the children */

/* Whether the process has mapped a file whose name holds `name`. */
static bool mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
    if (f) fclose(f);
    return found;
}

static void add_and_read(void **state)
{
    (void)state;
    enum { N = 1000 };
    static float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 0.5f * (float)i;
    pe_array a = pe_f32_1d(x, N), b = pe_f32_1d(y, N), c = pe_add(a, b);
    assert_int_equal(pe_read(c, out, sizeof out), PE_OK);
    for (int i = 0; i < N; i++) assert_true(out[i] == 1.5f * (float)i);
    tu_expect_no_error();
    pe_release(a), pe_release(b), pe_release(c);
    assert_false(mapped("libopenblas"));
    assert_false(mapped("liblapacke"));
    assert_false(mapped("libfftw3"));
}

/* The last error, when a library is missing on the JIT: PE_E_DEVICE at
 * `line`, naming the api, the library's words and its package. */
static void expect_missing(int line, const char *api, const char *what, const char *package)
{
    char install[128];
    snprintf(install, sizeof install, "install Debian's %s", package);
    if (!strstr(tu_errors.message, api) || !strstr(tu_errors.message, what) || !strstr(tu_errors.message, install))
        fail_msg("expected %s: %s ... %s, got: %s", api, what, install, tu_errors.message);
    tu_expect_error(PE_E_DEVICE, line);
}

/* 2 x 2 f64 a @ b against the loop; on the JIT with OpenBLAS missing, the error. */
static void matmul_case(bool missing, const char *what)
{
    double a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, out[4] = {0};
    int64_t s[2] = {2, 2};
    pe_array A = pe_from_host(PE_F64, 2, s, a), B = pe_from_host(PE_F64, 2, s, b);
    int line = __LINE__ + 1;
    pe_array C = pe_matmul(A, B);
    tu_expect_no_error();
    pe_status st = pe_read(C, out, sizeof out);
    if (missing && !tu_on_interpreter()) {
        assert_int_equal(st, PE_E_DEVICE);
        expect_missing(line, "pe_matmul", what, "libopenblas0");
        /* remembered: the next product fails the same way, without trying again */
        line = __LINE__ + 1;
        pe_array D = pe_matmul(B, A);
        assert_int_equal(pe_read(D, out, sizeof out), PE_E_DEVICE);
        expect_missing(line, "pe_matmul", what, "libopenblas0");
        pe_release(D);
    } else {
        assert_int_equal(st, PE_OK);
        tu_expect_no_error();
        assert_true(out[0] == 19 && out[1] == 22 && out[2] == 43 && out[3] == 50);
    }
    pe_release(A), pe_release(B), pe_release(C);
}

static void matmul_without_openblas(void **state)
{
    (void)state;
    matmul_case(true, "OpenBLAS is not available (" MISSING "/libopenblas.so.0");
    add_and_read(state); /* the rest of PE goes on */
}

static void matmul_on_a_library_without_cblas(void **state)
{
    (void)state;
    matmul_case(true, "OpenBLAS (libfftw3.so.3) has no cblas_sgemm");
}

/* pe_lu of a 2 x 2 matrix: on the JIT with LAPACKE missing, the error; the product still works. */
static void lu_without_lapacke(void **state)
{
    (void)state;
    double a[4] = {4, 3, 6, 3}, lu[4];
    int64_t s[2] = {2, 2};
    pe_array A = pe_from_host(PE_F64, 2, s, a), LU, PIV;
    int line = __LINE__ + 1;
    assert_int_equal(pe_lu(A, &LU, &PIV), PE_OK);
    pe_status st = pe_read(LU, lu, sizeof lu);
    if (tu_on_interpreter()) {
        assert_int_equal(st, PE_OK);
        assert_true(lu[0] == 6 && lu[1] == 3); /* the larger pivot's row first */
    } else {
        assert_int_equal(st, PE_E_DEVICE);
        expect_missing(line, "pe_lu", "LAPACKE is not available (" MISSING "/liblapacke.so.3", "liblapacke");
        int32_t piv[2];
        assert_int_not_equal(pe_read(PIV, piv, sizeof piv), PE_OK);
        tu_errors_clear();
    }
    pe_release(A), pe_release(LU), pe_release(PIV);
    matmul_case(false, NULL); /* OpenBLAS loads without LAPACKE */
}

/* fft of 4 values in f32 and f64: on the JIT with FFTW missing, each
 * precision's error naming its package. */
static void fft_without_fftw(void **state)
{
    (void)state;
    float xf[4] = {1, 2, 3, 4};
    double xd[4] = {1, 2, 3, 4};
    float complex of[4];
    double complex od[4];
    pe_array F = pe_f32_1d(xf, 4), D = pe_from_host(PE_F64, 1, (int64_t[]){4}, xd);
    int line_f = __LINE__ + 1;
    pe_array XF = pe_fft(F, 1);
    int line_d = __LINE__ + 1;
    pe_array XD = pe_ifft(D, 1);
    pe_status sf = pe_read(XF, of, sizeof of);
    if (tu_on_interpreter()) {
        assert_int_equal(sf, PE_OK);
        assert_true(crealf(of[0]) == 10 && cimagf(of[0]) == 0);
    } else {
        assert_int_equal(sf, PE_E_DEVICE);
        expect_missing(line_f, "pe_fft", "FFTW (single precision) is not available (" MISSING "/libfftw3f.so.3",
                       "libfftw3-single3");
    }
    pe_status sd = pe_read(XD, od, sizeof od);
    if (tu_on_interpreter()) {
        assert_int_equal(sd, PE_OK);
        assert_true(creal(od[0]) == 2.5 && cimag(od[0]) == 0);
    } else {
        assert_int_equal(sd, PE_E_DEVICE);
        expect_missing(line_d, "pe_ifft", "FFTW (double precision) is not available (" MISSING "/libfftw3.so.3",
                       "libfftw3-double3");
    }
    tu_expect_no_error();
    pe_release(F), pe_release(D), pe_release(XF), pe_release(XD);
    add_and_read(state);
}

static int child(const char *name)
{
    const struct CMUnitTest capped[] = {cmocka_unit_test_setup_teardown(add_and_read, tu_setup, tu_teardown)};
    const struct CMUnitTest no_blas[] = {
        cmocka_unit_test_setup_teardown(matmul_without_openblas, tu_setup, tu_teardown)};
    const struct CMUnitTest blas_without_cblas[] = {
        cmocka_unit_test_setup_teardown(matmul_on_a_library_without_cblas, tu_setup, tu_teardown)};
    const struct CMUnitTest no_lapacke[] = {cmocka_unit_test_setup_teardown(lu_without_lapacke, tu_setup, tu_teardown)};
    const struct CMUnitTest no_fftw[] = {cmocka_unit_test_setup_teardown(fft_without_fftw, tu_setup, tu_teardown)};
    if (strcmp(name, "capped") == 0) return cmocka_run_group_tests_name("capped", capped, NULL, NULL);
    if (strcmp(name, "no-blas") == 0) return cmocka_run_group_tests_name("no-blas", no_blas, NULL, NULL);
    if (strcmp(name, "blas-without-cblas") == 0)
        return cmocka_run_group_tests_name("blas-without-cblas", blas_without_cblas, NULL, NULL);
    if (strcmp(name, "no-lapacke") == 0) return cmocka_run_group_tests_name("no-lapacke", no_lapacke, NULL, NULL);
    if (strcmp(name, "no-fftw") == 0) return cmocka_run_group_tests_name("no-fftw", no_fftw, NULL, NULL);
    return 99;
}

/* ---------------------------------------------------------- the parent */

/* Runs `--child name` with env (NAME=VALUE pairs, NULL-ended) added and,
 * if cap, the address space capped before exec; its exit status. */
static int run_child(const char *name, const char *const *env, bool cap)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        for (int i = 0; env && env[i]; i += 2) setenv(env[i], env[i + 1], 1);
        struct rlimit r = {CAP_BYTES, CAP_BYTES};
        if (cap && setrlimit(RLIMIT_AS, &r) != 0) _exit(98);
        alarm(120); /* kept across exec: a child that hangs (OpenBLAS's start-up under the cap can spin) fails */
        execl("/proc/self/exe", "test_host_libs", "--child", name, (char *)NULL);
        _exit(97);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status)) fail_msg("child %s ended by signal %d", name, WTERMSIG(status));
    return WEXITSTATUS(status);
}

/* A sanitizer reserves its shadow memory (terabytes of address space) at start: no
 * program of that build runs under the cap, PE or not. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

/* With a fresh disk cache: the JIT compiles the kernel (in its child process) under the cap too. */
static void runs_in_100_mib(void **state)
{
    (void)state;
#ifdef SANITIZED
    skip(); /* the gcc build runs it (scripts/test's first stage) */
#endif
    char dir[] = "/tmp/pe_host_libs_XXXXXX", cache[64];
    assert_non_null(mkdtemp(dir));
    snprintf(cache, sizeof cache, "%s/cache", dir);
    const char *env[] = {"PE_CACHE_DIR", cache, NULL};
    int status = run_child("capped", env, true);
    tu_remove_dir(dir);
    assert_int_equal(status, 0);
}

static void missing_openblas(void **state)
{
    (void)state;
    const char *env[] = {"PE_BLAS_LIBRARY", MISSING "/libopenblas.so.0", NULL};
    assert_int_equal(run_child("no-blas", env, false), 0);
}

static void openblas_without_its_functions(void **state)
{
    (void)state;
    const char *env[] = {"PE_BLAS_LIBRARY", "libfftw3.so.3", NULL};
    assert_int_equal(run_child("blas-without-cblas", env, false), 0);
}

static void missing_lapacke(void **state)
{
    (void)state;
    const char *env[] = {"PE_LAPACKE_LIBRARY", MISSING "/liblapacke.so.3", NULL};
    assert_int_equal(run_child("no-lapacke", env, false), 0);
}

static void missing_fftw(void **state)
{
    (void)state;
    const char *env[] = {"PE_FFTW_LIBRARY", MISSING "/libfftw3.so.3", "PE_FFTWF_LIBRARY", MISSING "/libfftw3f.so.3",
                         NULL};
    assert_int_equal(run_child("no-fftw", env, false), 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0) return child(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runs_in_100_mib),
        cmocka_unit_test(missing_openblas),
        cmocka_unit_test(openblas_without_its_functions),
        cmocka_unit_test(missing_lapacke),
        cmocka_unit_test(missing_fftw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
