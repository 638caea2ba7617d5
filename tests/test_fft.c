/* test_fft.c — pe_fft / pe_ifft (exec/intrinsics/fft.c on FFTW3) against
 * oracles independent of PE: a plain direct DFT in long double written here
 * for small sizes, FFTW called directly for large ones (skipped on the
 * interpreter and under PE_CHECK, whose oracle is an O(n^2) DFT), the round
 * trip ifft(fft(x)) = x, Parseval's sum |x|^2 = sum |X|^2 / n, the known
 * transforms of a delta (a pure phase) and of a cosine (n/2 at +-f, 0
 * elsewhere); bad arguments are errors at the caller's line; FFTW's wisdom
 * is written to the cache directory and a corrupt wisdom file is removed
 * with a warning, the values unchanged.  Both executors run it, and the JIT
 * again under PE_CHECK=all (the interpreter's DFT as the reference). */
#include "test_complex.h"
#include <dirent.h>
#include <fcntl.h>
#include <fftw3.h>
#include <float.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

typedef long double complex lcomplex;

static const char *dtype_name(pe_dtype t) { return t == PE_F32 ? "f32" : t == PE_F64 ? "f64" : t == PE_C64 ? "c64" : t == PE_C128 ? "c128" : "other"; }

/* sizes whose O(n^2) references are too slow for the interpreter or PE_CHECK */
static bool large_sizes(void) { return !tu_on_interpreter() && !getenv("PE_CHECK"); }

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(void) { return tu_uniform(&rng_state); } /* [-1, 1) */

static bool is_complex(pe_dtype t) { return t == PE_C64 || t == PE_C128; }
static bool single(pe_dtype t) { return t == PE_F32 || t == PE_C64; }
static size_t size_of(pe_dtype t) { return t == PE_F32 ? 4 : t == PE_C128 ? 16 : 8; }

/* A random array of t (each element, or part, in [-1, 1)) and its values in long double. */
static void *random_array(pe_dtype t, int64_t n, lcomplex *values)
{
    char *b = malloc(size_of(t) * (size_t)(n ? n : 1));
    assert_non_null(b);
    for (int64_t i = 0; i < n; i++) {
        double re = uniform(), im = is_complex(t) ? uniform() : 0;
        switch (t) {
        case PE_F32: ((float *)b)[i] = (float)re, values[i] = (float)re; break;
        case PE_F64: ((double *)b)[i] = re, values[i] = re; break;
        case PE_C64: ((float complex *)b)[i] = CMPLXF((float)re, (float)im), values[i] = (float)re + (long double)(float)im * I; break;
        default: ((double complex *)b)[i] = CMPLX(re, im), values[i] = re + (long double)im * I; break;
        }
    }
    return b;
}

/* The complex result read into long double. */
static lcomplex *read_complex(pe_array X, int64_t n)
{
    pe_dtype t = pe_dtype_of(X);
    assert_true(t == PE_C64 || t == PE_C128);
    void *b = malloc(size_of(t) * (size_t)(n ? n : 1));
    lcomplex *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    assert_non_null(b), assert_non_null(v);
    assert_int_equal(pe_read(X, b, size_of(t) * (size_t)n), PE_OK);
    for (int64_t i = 0; i < n; i++) v[i] = t == PE_C64 ? (lcomplex)((float complex *)b)[i] : (lcomplex)((double complex *)b)[i];
    free(b);
    return v;
}

/* The direct DFT of each line of x (lines of `cols`, `rows` of them per
 * plane when two axes are transformed), in place. */
static void dft(lcomplex *x, int64_t numel, int64_t rows, int64_t cols, bool inverse)
{
    const long double pi2 = 6.283185307179586476925286766559005768L, sign = inverse ? 1 : -1;
    int64_t line = rows * cols;
    lcomplex *tmp = malloc(sizeof *tmp * (size_t)line);
    assert_non_null(tmp);
    for (int64_t b = 0; b < numel / line; b++) {
        lcomplex *p = x + b * line;
        for (int64_t kr = 0; kr < rows; kr++)
            for (int64_t kc = 0; kc < cols; kc++) {
                lcomplex s = 0;
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t c = 0; c < cols; c++) {
                        long double phase = pi2 * ((long double)((r * kr) % rows) / rows + (long double)((c * kc) % cols) / cols);
                        s += p[r * cols + c] * (cosl(phase) + sign * sinl(phase) * I);
                    }
                tmp[kr * cols + kc] = inverse ? s / line : s;
            }
        memcpy(p, tmp, sizeof *tmp * (size_t)line);
    }
    free(tmp);
}

/* got against want, each within c eps log2(2n) of the line's sum |x| (the
 * FFT's error bound, a factor for FFTW's codelets); scaled by 1/n for ifft. */
static void check_close(const lcomplex *got, const lcomplex *want, const lcomplex *x, int64_t numel, int64_t line,
                        pe_dtype t, bool inverse, const char *what)
{
    double eps = single(t) ? FLT_EPSILON : DBL_EPSILON;
    for (int64_t b = 0; b < numel / line; b++) {
        long double mass = 0;
        for (int64_t i = 0; i < line; i++) mass += cabsl(x[b * line + i]);
        long double bound = 4 * eps * log2l(2.0L * line) * mass / (inverse ? line : 1) + (single(t) ? FLT_MIN : DBL_MIN);
        for (int64_t i = b * line; i < (b + 1) * line; i++)
            if (cabsl(got[i] - want[i]) > bound)
                fail_msg("%s: element %lld = %.10Lg%+.10Lgi, the DFT's %.10Lg%+.10Lgi (bound %.3Lg)", what, (long long)i,
                         creall(got[i]), cimagl(got[i]), creall(want[i]), cimagl(want[i]), bound);
    }
}

static void transform_case(pe_dtype t, int rank, const int64_t *shape, int dims, bool inverse)
{
    int64_t numel = 1;
    for (int d = 0; d < rank; d++) numel *= shape[d];
    int64_t cols = shape[rank - 1], rows = dims == 2 ? shape[rank - 2] : 1;
    lcomplex *x = malloc(sizeof *x * (size_t)numel), *want = malloc(sizeof *want * (size_t)numel);
    void *host = random_array(t, numel, x);
    memcpy(want, x, sizeof *x * (size_t)numel);
    dft(want, numel, rows, cols, inverse);
    pe_array A = pe_from_host(t, rank, shape, host);
    pe_array X = inverse ? pe_ifft(A, dims) : pe_fft(A, dims);
    tu_expect_no_error();
    assert_int_equal(pe_dtype_of(X), single(t) ? PE_C64 : PE_C128);
    assert_int_equal(pe_rank(X), rank);
    for (int d = 0; d < rank; d++) assert_int_equal(pe_dim(X, d), shape[d]);
    lcomplex *got = read_complex(X, numel);
    char what[96];
    snprintf(what, sizeof what, "%s %s of %lld elements, lines of %lld x %lld", inverse ? "ifft" : "fft",
             dtype_name(t), (long long)numel, (long long)rows, (long long)cols);
    check_close(got, want, x, numel, rows * cols, t, inverse, what);
    free(x), free(want), free(host), free(got);
    pe_release(A), pe_release(X);
}

static void small_against_dft(void **state)
{
    (void)state;
    static const pe_dtype types[] = {PE_F32, PE_F64, PE_C64, PE_C128};
    static const int64_t lengths[] = {1, 2, 3, 5, 8, 12, 17, 64, 97};
    for (size_t ti = 0; ti < 4; ti++)
        for (int inverse = 0; inverse < 2; inverse++) {
            for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
                transform_case(types[ti], 1, &lengths[i], 1, inverse);
            int64_t batched[2] = {3, 12}, plane[2] = {4, 6}, planes[3] = {3, 5, 7}, odd[2] = {1, 9};
            transform_case(types[ti], 2, batched, 1, inverse); /* three lines along the last axis */
            transform_case(types[ti], 2, plane, 2, inverse);
            transform_case(types[ti], 3, planes, 2, inverse); /* three planes of 5 x 7 */
            transform_case(types[ti], 2, odd, 2, inverse);
        }
}

/* FFTW called directly (FFTW_ESTIMATE, its own plan) for large transforms:
 * PE's plans are measured, so the two agree within the FFT's error, not bitwise. */
static void large_against_fftw(void **state)
{
    (void)state;
    if (!large_sizes()) skip();
    int64_t n1 = 1 << 16, shape2[2] = {256, 384};
    /* c64, 1-d */
    fftwf_complex *xf = fftwf_malloc(sizeof *xf * (size_t)n1), *yf = fftwf_malloc(sizeof *yf * (size_t)n1);
    for (int64_t i = 0; i < n1; i++) xf[i] = CMPLXF((float)uniform(), (float)uniform()); /* <complex.h> first: fftwf_complex is float complex */
    pe_array A = pe_from_host(PE_C64, 1, &n1, xf);
    pe_array X = pe_fft(A, 1);
    fftwf_plan p = fftwf_plan_dft_1d((int)n1, xf, yf, FFTW_FORWARD, FFTW_ESTIMATE);
    fftwf_execute(p);
    lcomplex *got = read_complex(X, n1), *want = malloc(sizeof *want * (size_t)n1), *x = malloc(sizeof *x * (size_t)n1);
    for (int64_t i = 0; i < n1; i++) want[i] = yf[i], x[i] = xf[i];
    check_close(got, want, x, n1, n1, PE_C64, false, "fft c64 2^16 against FFTW");
    fftwf_destroy_plan(p), fftwf_free(xf), fftwf_free(yf), free(got), free(want), free(x);
    pe_release(A), pe_release(X);
    /* f64 real input, 2-d: FFTW's r2c there too, compared with a c2c of the same values */
    int64_t n2 = shape2[0] * shape2[1];
    double *r = malloc(sizeof *r * (size_t)n2);
    fftw_complex *xd = fftw_malloc(sizeof *xd * (size_t)n2), *yd = fftw_malloc(sizeof *yd * (size_t)n2);
    for (int64_t i = 0; i < n2; i++) r[i] = uniform(), xd[i] = r[i];
    A = pe_from_host(PE_F64, 2, shape2, r);
    X = pe_ifft(A, 2);
    fftw_plan q = fftw_plan_dft_2d((int)shape2[0], (int)shape2[1], xd, yd, FFTW_BACKWARD, FFTW_ESTIMATE);
    fftw_execute(q);
    got = read_complex(X, n2), want = malloc(sizeof *want * (size_t)n2), x = malloc(sizeof *x * (size_t)n2);
    for (int64_t i = 0; i < n2; i++) want[i] = (lcomplex)yd[i] / n2, x[i] = r[i];
    check_close(got, want, x, n2, n2, PE_F64, true, "ifft2 f64 256 x 384 against FFTW");
    fftw_destroy_plan(q), fftw_free(xd), fftw_free(yd), free(r), free(got), free(want), free(x);
    pe_release(A), pe_release(X);
    tu_expect_no_error();
}

static void round_trip_and_parseval(void **state)
{
    (void)state;
    static const pe_dtype types[] = {PE_F32, PE_C64, PE_F64, PE_C128};
    int64_t shape[2] = {6, 40};
    int64_t n = shape[0] * shape[1];
    for (size_t ti = 0; ti < 4; ti++)
        for (int dims = 1; dims <= 2; dims++) {
            pe_dtype t = types[ti];
            lcomplex *x = malloc(sizeof *x * (size_t)n);
            void *host = random_array(t, n, x);
            pe_array A = pe_from_host(t, 2, shape, host);
            pe_array X = pe_fft(A, dims), B = pe_ifft(X, dims);
            lcomplex *spectrum = read_complex(X, n), *back = read_complex(B, n);
            double eps = single(t) ? FLT_EPSILON : DBL_EPSILON;
            for (int64_t i = 0; i < n; i++)
                if (cabsl(back[i] - x[i]) > 8 * eps * log2l(2.0L * n))
                    fail_msg("%s dims %d: ifft(fft(x))[%lld] = %Lg%+Lgi, x = %Lg%+Lgi", dtype_name(t), dims,
                             (long long)i, creall(back[i]), cimagl(back[i]), creall(x[i]), cimagl(x[i]));
            int64_t line = dims == 2 ? n : shape[1];
            for (int64_t b = 0; b < n / line; b++) { /* per transformed line (plane) */
                long double ex = 0, eX = 0;
                for (int64_t i = b * line; i < (b + 1) * line; i++)
                    ex += creall(x[i] * conjl(x[i])), eX += creall(spectrum[i] * conjl(spectrum[i]));
                if (fabsl(ex - eX / line) > 8 * eps * log2l(2.0L * line) * ex)
                    fail_msg("%s dims %d, line %lld: sum |x|^2 = %.12Lg, sum |X|^2 / n = %.12Lg", dtype_name(t), dims,
                             (long long)b, ex, eX / line);
            }
            free(x), free(host), free(spectrum), free(back);
            pe_release(A), pe_release(X), pe_release(B);
        }
    tu_expect_no_error();
}

/* fft of delta_m is e^(-2 pi i km/n); of cos(2 pi f j / n), n/2 at k = f
 * and k = n - f and 0 elsewhere. */
static void known_transforms(void **state)
{
    (void)state;
    const int64_t n = 64, m = 5, f = 7;
    double delta[64] = {0}, wave[64];
    delta[m] = 1;
    for (int64_t j = 0; j < n; j++) wave[j] = cos(2 * M_PI * (double)(f * j % n) / (double)n);
    pe_array D = pe_from_host(PE_F64, 1, &n, delta), W = pe_from_host(PE_F64, 1, &n, wave);
    pe_array FD = pe_fft(D, 1), FW = pe_fft(W, 1);
    lcomplex *fd = read_complex(FD, n), *fw = read_complex(FW, n);
    for (int64_t k = 0; k < n; k++) {
        long double phase = -2 * M_PI * (long double)(k * m % n) / n;
        lcomplex want = cosl(phase) + sinl(phase) * I;
        if (cabsl(fd[k] - want) > 8 * DBL_EPSILON)
            fail_msg("fft(delta_%lld)[%lld] = %Lg%+Lgi, want %Lg%+Lgi", (long long)m, (long long)k, creall(fd[k]),
                     cimagl(fd[k]), creall(want), cimagl(want));
        long double peak = k == f || k == n - f ? n / 2.0L : 0;
        if (cabsl(fw[k] - peak) > 64 * DBL_EPSILON * n)
            fail_msg("fft(cos)[%lld] = %Lg%+Lgi, want %Lg", (long long)k, creall(fw[k]), cimagl(fw[k]), peak);
    }
    free(fd), free(fw);
    pe_release(D), pe_release(W), pe_release(FD), pe_release(FW);
    tu_expect_no_error();
}

/* The element-wise producer before the call is a fused kernel; the call is
 * one library call; a second run of the same batch comes from the trace cache. */
static void fused_producer_one_call(void **state)
{
    (void)state;
    int64_t shape[2] = {8, 16}, n = 128;
    lcomplex x[128];
    void *host = random_array(PE_F64, n, x);
    pe_array A = pe_from_host(PE_F64, 2, shape, host);
    pe_sync();
    for (int run = 0; run < 2; run++) {
        pe_stats before = tu_stats();
        pe_array two = pe_scalar(PE_F64, 2.0), B = pe_mul(A, two);
        pe_array X = pe_fft(B, 2);
        pe_release(two), pe_release(B);
        lcomplex *got = read_complex(X, n), want[128], scaled[128];
        for (int64_t i = 0; i < n; i++) want[i] = scaled[i] = 2 * x[i];
        dft(want, n, 8, 16, false);
        check_close(got, want, scaled, n, n, PE_F64, false, "fft(2 a)");
        pe_stats after = tu_stats();
        if (!tu_on_interpreter()) {
            assert_int_equal(after.library_calls - before.library_calls, 1);
            assert_int_equal(after.kernels_launched - before.kernels_launched, 1);
        }
        free(got);
        pe_release(X);
    }
    free(host);
    pe_release(A);
    tu_expect_no_error();
}

static void bad_arguments(void **state)
{
    (void)state;
    int64_t s4 = 4, s0[2] = {3, 0}, s22[2] = {2, 2};
    pe_array S = pe_scalar(PE_F64, 1.0), V = pe_fill(PE_F64, 1, &s4, 1), N = pe_fill(PE_I32, 1, &s4, 1);
    pe_array E = pe_fill(PE_F32, 2, s0, 0), M = pe_fill(PE_C64, 2, s22, 0);
    int line = __LINE__ + 1;
    pe_array r1 = pe_fft(S, 1); /* rank 0 */
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    pe_array r2 = pe_ifft(V, 2); /* two axes of a 1-d array */
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    pe_array r3 = pe_fft(M, 3);
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    pe_array r4 = pe_fft(N, 1); /* integers */
    assert_non_null(strstr(tu_errors.message, "pe_fft"));
    tu_expect_error(PE_E_TYPE, line);
    line = __LINE__ + 1;
    pe_array r5 = pe_fft(E, 1); /* a line of length 0 */
    tu_expect_error(PE_E_SHAPE, line);
    double out[8];
    assert_int_not_equal(pe_read(r2, out, sizeof out), PE_OK);
    tu_errors_clear();
    pe_release(S), pe_release(V), pe_release(N), pe_release(E), pe_release(M);
    pe_release(r1), pe_release(r2), pe_release(r3), pe_release(r4), pe_release(r5);
    tu_errors_clear();
}

/* ------------------------------------------------------------- wisdom */

static int start_in(const char *dir)
{
    pe_config cfg = {0};
    cfg.cache_dir = dir;
    cfg.device = 1; /* the CPU: FFTW's wisdom (a GPU's FFTs are cuFFT's, which keeps none) */
    cfg.log_level = PE_LOG_WARN + 1; /* warnings shown (the ctest environment says PE_LOG=error) */
    return pe_init(&cfg);
}

static bool wisdom_file(const char *dir, char *text, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/fftw-wisdom-f64", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t got = fread(text, 1, size - 1, f);
    text[got] = 0;
    fclose(f);
    return true;
}

/* One fft of n elements checked against the direct DFT. */
static void one_fft(int64_t n)
{
    lcomplex *x = malloc(sizeof *x * (size_t)n), *want = malloc(sizeof *want * (size_t)n);
    void *host = random_array(PE_C128, n, x);
    memcpy(want, x, sizeof *x * (size_t)n);
    dft(want, n, 1, n, false);
    pe_array A = pe_from_host(PE_C128, 1, &n, host), X = pe_fft(A, 1);
    lcomplex *got = read_complex(X, n);
    check_close(got, want, x, n, n, PE_C128, false, "fft with wisdom");
    free(x), free(want), free(host), free(got);
    pe_release(A), pe_release(X);
}

static void wisdom_kept_and_corrupt_file_ignored(void **state)
{
    (void)state;
    if (tu_on_interpreter()) skip(); /* the interpreter plans nothing */
    char dir[] = "/tmp/pe-fft-wisdom-XXXXXX";
    assert_non_null(mkdtemp(dir));
    tu_errors_clear();
    pe_push_error_handler(tu_record_error, NULL);
    assert_int_equal(start_in(dir), PE_OK);
    one_fft(40); /* a size no other test plans: a new plan, so wisdom is written */
    pe_shutdown();
    char text[1 << 16];
    assert_true(wisdom_file(dir, text, sizeof text));
    assert_non_null(strstr(text, "(fftw-3")); /* FFTW's wisdom, then the cache's seal */
    /* corrupt it: the cache finds it unsealed, removes it with a warning; the values are unchanged */
    char path[512];
    snprintf(path, sizeof path, "%s/fftw-wisdom-f64", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("(fftw-3.3.10 fftw_wisdom #x garbage", f);
    fclose(f);
    char log_path[] = "/tmp/pe-fft-log-XXXXXX";
    int log_fd = mkstemp(log_path), saved = dup(STDERR_FILENO);
    assert_true(log_fd >= 0);
    fflush(stderr);
    dup2(log_fd, STDERR_FILENO);
    assert_int_equal(start_in(dir), PE_OK);
    one_fft(44); /* a new plan: the wisdom file is read first */
    pe_shutdown();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    char log[4096];
    ssize_t got = pread(log_fd, log, sizeof log - 1, 0);
    log[got > 0 ? got : 0] = 0;
    close(log_fd), unlink(log_path);
    if (!strstr(log, "fftw-wisdom-f64")) fail_msg("no warning naming the corrupt wisdom file; the log: %s", log);
    assert_true(wisdom_file(dir, text, sizeof text)); /* written again after the new plan */
    assert_null(strstr(text, "garbage"));
    assert_non_null(strstr(text, "(fftw-3"));
    tu_expect_no_error();
    pe_pop_error_handler();
    tu_remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(small_against_dft, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(large_against_fftw, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(round_trip_and_parseval, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(known_transforms, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(fused_producer_one_call, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(bad_arguments, tu_setup, tu_teardown),
        cmocka_unit_test(wisdom_kept_and_corrupt_file_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
