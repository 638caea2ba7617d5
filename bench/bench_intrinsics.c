/* bench_intrinsics.c — PE's library calls (issue 21) against the same
 * libraries called directly, in the same run and process (so with the same
 * OpenBLAS and thread count, which PE sets from PE_THREADS):
 *   sgemm, dgemm n x n       pe_matmul + pe_sync   vs cblas_?gemm         floor 95%
 *   alpha * (a @ b) + beta * c, f32: fused (one gemm with alpha, beta)
 *                            vs the product held (a gemm, then a kernel)  floor: faster
 *   LU f64 n x n             pe_lu + pe_sync       vs a copy + LAPACKE_dgetrf (row-major,
 *                                                     as PE's: it factors a copy too)  floor 95%
 *   spmv f64, f32: the 5-point Laplacian of a 2048 x 2048 grid in CSR
 *   (4M rows, 21M entries)   pe_spmv + pe_sync     vs the OpenMP CSR loop of
 *                                                     baseline.c, all cores  floor 80%
 *   fft c64 2^22, fft2 c64 4096 x 4096  pe_fft + pe_sync  vs fftwf_execute_dft of an FFTW_MEASURE plan
 *                            on the same threads (PE_THREADS, as PE's)        floor 90%
 *   conv f32 (1-d 2^22, 2-d 2048 x 2048) per kernel size: direct (fused views) against
 *                            through FFTs (PE_CONV_DIRECT_TAPS moved): where the FFT wins
 *                            sets the threshold in jit/api/api_spectral.c
 * Median of `reps` runs after one warm-up each.  Ratios are the baseline's
 * time over PE's (1.00: as fast).  It runs itself again with
 * OMP_WAIT_POLICY=passive unless that is set: OpenMP's threads spinning
 * after the C loop would take the cores of the PE run that follows.
 *   bench_intrinsics [n] [reps] [all | gemm | lu | spmv | spectral]     default 4096 5 all */
#include <cblas.h>
#include <complex.h>
#include <fftw3.h>
#include <lapacke.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <pe.h>

#include "baseline.h"
#include "bench_util.h"
#include "../examples/laplacian_csr.h"

typedef struct {
    double pe, base;
} pair;

static double *filled_f64(int64_t n, unsigned seed)
{
    double *p = bench_alloc_or_exit(malloc((size_t)n * sizeof *p));
    srand(seed);
    for (int64_t i = 0; i < n; i++) p[i] = 2.0 * rand() / RAND_MAX - 1;
    return p;
}

static void report(const char *what, double pe_s, double base_s, const char *base_name, double floor)
{
    double ratio = base_s / pe_s;
    printf("%-34s PE %8.1f ms   %-22s %8.1f ms   ratio %.3f  (floor %.2f)%s\n", what, pe_s * 1e3, base_name,
           base_s * 1e3, ratio, floor, ratio >= floor ? "" : "  BELOW FLOOR");
}

static void gemm(pe_dtype t, int64_t n, int reps)
{
    size_t es = t == PE_F32 ? 4 : 8;
    int64_t s[2] = {n, n};
    void *a = t == PE_F32 ? (void *)filled(n * n, -1, 1, 1) : (void *)filled_f64(n * n, 1);
    void *b = t == PE_F32 ? (void *)filled(n * n, -1, 1, 2) : (void *)filled_f64(n * n, 2);
    void *c = bench_alloc_or_exit(calloc((size_t)(n * n), es));
    pe_array A = pe_from_host(t, 2, s, a), B = pe_from_host(t, 2, s, b);
    double tp[32], tb[32];
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        pe_array C = pe_matmul(A, B);
        pe_sync();
        double t1 = now();
        pe_release(C);
        double t2 = now();
        if (t == PE_F32)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1, a, (int)n, b, (int)n, 0, c, (int)n);
        else
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1, a, (int)n, b, (int)n, 0, c, (int)n);
        double t3 = now();
        if (r >= 0) tp[r] = t1 - t0, tb[r] = t3 - t2;
    }
    char what[64];
    snprintf(what, sizeof what, "%s %lld x %lld", t == PE_F32 ? "sgemm" : "dgemm", (long long)n, (long long)n);
    report(what, median(tp, reps), median(tb, reps), t == PE_F32 ? "cblas_sgemm" : "cblas_dgemm", 0.95);
    pe_release(A), pe_release(B);
    free(a), free(b), free(c);
}

/* alpha * (a @ b) + beta * c: the intermediates released (one gemm), or the
 * product held by the application (a gemm, then a fused map kernel). */
static void epilogue(int64_t n, int reps)
{
    int64_t s[2] = {n, n};
    float *a = filled(n * n, -1, 1, 3), *b = filled(n * n, -1, 1, 4), *c = filled(n * n, -1, 1, 5);
    pe_array A = pe_from_host(PE_F32, 2, s, a), B = pe_from_host(PE_F32, 2, s, b), C = pe_from_host(PE_F32, 2, s, c);
    double tf[32], tu[32];
    for (int r = -1; r < reps; r++) {
        for (int held = 0; held < 2; held++) {
            double t0 = now();
            pe_array P = pe_matmul(A, B), S = pe_mul(P, 1.5f), T = pe_mul(0.5f, C), E = pe_add(S, T);
            if (!held) pe_release(P);
            pe_release(S), pe_release(T);
            pe_sync();
            double t1 = now();
            if (held) pe_release(P);
            pe_release(E);
            if (r >= 0) (held ? tu : tf)[r] = t1 - t0;
        }
    }
    char what[64];
    snprintf(what, sizeof what, "1.5 (a @ b) + 0.5 c f32 %lld", (long long)n);
    report(what, median(tf, reps), median(tu, reps), "matmul, then a map", 1.0);
    pe_release(A), pe_release(B), pe_release(C);
    free(a), free(b), free(c);
}

static void lu(int64_t n, int reps)
{
    int64_t s[2] = {n, n};
    double *a = filled_f64(n * n, 6), *f = bench_alloc_or_exit(malloc(sizeof *f * (size_t)(n * n)));
    lapack_int *ipiv = bench_alloc_or_exit(malloc(sizeof *ipiv * (size_t)n));
    for (int64_t i = 0; i < n; i++) a[i * n + i] += 4; /* well away from singular */
    pe_array A = pe_from_host(PE_F64, 2, s, a);
    double tp[32], tb[32];
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        pe_array LU, PIV;
        if (pe_lu(A, &LU, &PIV) != PE_OK) exit(1);
        pe_sync();
        double t1 = now();
        pe_release(LU), pe_release(PIV);
        double t2 = now();
        memcpy(f, a, sizeof *f * (size_t)(n * n));
        if (LAPACKE_dgetrf(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)n, f, (lapack_int)n, ipiv) != 0) exit(1);
        double t3 = now();
        if (r >= 0) tp[r] = t1 - t0, tb[r] = t3 - t2;
    }
    char what[64];
    snprintf(what, sizeof what, "LU f64 %lld x %lld", (long long)n, (long long)n);
    report(what, median(tp, reps), median(tb, reps), "copy + LAPACKE_dgetrf", 0.95);
    pe_release(A);
    free(a), free(f), free(ipiv);
}

/* The Laplacian's values in f32 too. */
static float *values_f32(const laplacian_csr *m)
{
    float *v = bench_alloc_or_exit(malloc(sizeof *v * (size_t)(m->nnz + 1)));
    for (int64_t k = 0; k < m->nnz; k++) v[k] = (float)m->val[k];
    return v;
}

static void spmv(pe_dtype t, const laplacian_csr *m, const float *val32, int reps)
{
    int64_t n_ptr = m->n + 1, n = m->n;
    size_t es = t == PE_F32 ? 4 : 8;
    void *x = t == PE_F32 ? (void *)filled(n, -1, 1, 7) : (void *)filled_f64(n, 7);
    void *y = bench_alloc_or_exit(calloc((size_t)n, es)), *got = bench_alloc_or_exit(malloc((size_t)n * es));
    pe_array rp = pe_from_host(PE_I32, 1, &n_ptr, m->row_ptr), ci = pe_from_host(PE_I32, 1, &m->nnz, m->col);
    pe_array v = pe_from_host(t, 1, &m->nnz, t == PE_F32 ? (void *)val32 : (void *)m->val), X = pe_from_host(t, 1, &n, x);
    pe_csr a = pe_csr_create(rp, ci, v, n);
    pe_release(rp), pe_release(ci), pe_release(v);
    double tp[32], tb[32];
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        pe_array Y = pe_spmv(a, X);
        pe_sync();
        double t1 = now();
        if (r == reps - 1 && pe_read(Y, got, (size_t)n * es) != PE_OK) exit(1);
        pe_release(Y);
        double t2 = now();
        if (t == PE_F32) c_spmv_f32(m->row_ptr, m->col, val32, x, y, n);
        else c_spmv_f64(m->row_ptr, m->col, m->val, x, y, n);
        double t3 = now();
        if (r >= 0) tp[r] = t1 - t0, tb[r] = t3 - t2;
    }
    double worst = 0; /* small integers times values in [-1, 1]: both sums near exact */
    for (int64_t i = 0; i < n; i++) {
        double p = t == PE_F32 ? ((float *)got)[i] : ((double *)got)[i], c = t == PE_F32 ? ((float *)y)[i] : ((double *)y)[i];
        worst = fmax(worst, fabs(p - c) / fmax(1, fabs(c)));
    }
    if (!(worst <= (t == PE_F32 ? 1e-5 : 1e-12))) {
        fprintf(stderr, "spmv: PE and the C loop differ by %.3g\n", worst);
        exit(1);
    }
    char what[64];
    snprintf(what, sizeof what, "spmv %s %.1fM rows, %.1fM nnz", t == PE_F32 ? "f32" : "f64", (double)n * 1e-6,
             (double)m->nnz * 1e-6);
    report(what, median(tp, reps), median(tb, reps), "OpenMP CSR loop", 0.80);
    pe_release(X);
    pe_csr_destroy(a);
    free(x), free(y), free(got);
}

/* pe_fft of c64 data (1-d n, or 2-d n x n) against FFTW's measured plan executed directly. */
static void fft_row(int64_t rows, int64_t cols, int reps)
{
    int64_t numel = rows * cols, shape[2] = {rows, cols};
    int dims = rows > 1 ? 2 : 1;
    float *x = filled(2 * numel, -1, 1, 3);
    fftwf_complex *in = fftwf_malloc(sizeof *in * (size_t)numel), *out = fftwf_malloc(sizeof *out * (size_t)numel);
    fftwf_init_threads();
    fftwf_plan_with_nthreads(openblas_get_num_threads()); /* PE_THREADS, as PE sets both */
    fftwf_plan plan = dims == 2 ? fftwf_plan_dft_2d((int)rows, (int)cols, in, out, FFTW_FORWARD, FFTW_MEASURE)
                                : fftwf_plan_dft_1d((int)cols, in, out, FFTW_FORWARD, FFTW_MEASURE);
    memcpy(in, x, sizeof *in * (size_t)numel);
    pe_array A = pe_from_host(PE_C64, dims, dims == 2 ? shape : &cols, x);
    double tp[32], tb[32];
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        pe_array X = pe_fft(A, dims);
        pe_sync();
        double t1 = now();
        pe_release(X);
        double t2 = now();
        fftwf_execute_dft(plan, in, out);
        double t3 = now();
        if (r >= 0) tp[r] = t1 - t0, tb[r] = t3 - t2;
    }
    char what[64];
    if (dims == 2) snprintf(what, sizeof what, "fft2 c64 %lld x %lld", (long long)rows, (long long)cols);
    else snprintf(what, sizeof what, "fft c64 %lld", (long long)cols);
    report(what, median(tp, reps), median(tb, reps), "FFTW plan (measured)", 0.90);
    fftwf_destroy_plan(plan), fftwf_free(in), fftwf_free(out);
    pe_release(A);
    free(x);
}

/* pe_conv f32 with a k (x k) kernel: summed directly (fused) and through FFTs. */
static void conv_row(int64_t rows, int64_t cols, int64_t k, int reps)
{
    int dims = rows > 1 ? 2 : 1;
    int64_t shape[2] = {rows, cols}, kshape[2] = {k, k};
    float *x = filled(rows * cols, -1, 1, 4), *w = filled(k * k, -1, 1, 5);
    pe_array A = pe_from_host(PE_F32, dims, dims == 2 ? shape : &cols, x), K = pe_from_host(PE_F32, dims, kshape, w);
    double t[2][32];
    for (int way = 0; way < 2; way++) {
        setenv("PE_CONV_DIRECT_TAPS", way == 0 ? "1000000" : "0", 1);
        for (int r = -1; r < reps; r++) {
            double t0 = now();
            pe_array C = pe_conv(A, K);
            pe_sync();
            double t1 = now();
            pe_release(C);
            if (r >= 0) t[way][r] = t1 - t0;
        }
    }
    unsetenv("PE_CONV_DIRECT_TAPS");
    char what[64];
    if (dims == 2) snprintf(what, sizeof what, "conv f32 %lldx%lld, %lldx%lld", (long long)rows, (long long)cols, (long long)k, (long long)k);
    else snprintf(what, sizeof what, "conv f32 %lld, %lld taps", (long long)cols, (long long)k);
    double direct = median(t[0], reps), via_fft = median(t[1], reps);
    printf("%-34s direct %8.1f ms   via FFT %8.1f ms   %s\n", what, direct * 1e3, via_fft * 1e3,
           direct <= via_fft ? "direct" : "FFT");
    pe_release(A), pe_release(K);
    free(x), free(w);
}

static void spectral(int reps)
{
    fft_row(1, (int64_t)1 << 22, reps);
    fft_row(4096, 4096, reps);
    static const int64_t taps1[] = {4, 8, 16, 24, 32, 48, 64}, taps2[] = {2, 3, 4, 5, 7};
    for (size_t i = 0; i < sizeof taps1 / sizeof taps1[0]; i++) conv_row(1, (int64_t)1 << 22, taps1[i], reps);
    for (size_t i = 0; i < sizeof taps2 / sizeof taps2[0]; i++) conv_row(2048, 2048, taps2[i], reps);
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    const char *which = argc > 3 ? argv[3] : "all";
    bool all = !strcmp(which, "all");
    if (n < 1 || reps < 1 || reps > 32 || argc > 4 || (!all && strcmp(which, "gemm") && strcmp(which, "lu") && strcmp(which, "spmv") && strcmp(which, "spectral"))) {
        fprintf(stderr, "usage: bench_intrinsics [n] [reps <= 32] [all | gemm | lu | spmv | spectral]\n");
        return 2;
    }
    if (!getenv("OMP_WAIT_POLICY")) { /* the spmv baseline's OpenMP threads spinning would take PE's cores */
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    if (pe_init(NULL) != PE_OK) return 1;
    printf("bench_intrinsics: n = %lld, median of %d after a warm-up, OpenBLAS threads %d, OpenMP threads %d\n",
           (long long)n, reps, openblas_get_num_threads(), c_threads());
    if (all || !strcmp(which, "gemm")) {
        gemm(PE_F32, n, reps);
        gemm(PE_F64, n, reps);
        epilogue(n, reps);
    }
    if (all || !strcmp(which, "lu")) lu(n, reps);
    if (all || !strcmp(which, "spmv")) {
        laplacian_csr m;
        if (laplacian_csr_build(2048, &m) != 0) exit(1);
        float *val32 = values_f32(&m);
        spmv(PE_F64, &m, val32, reps);
        spmv(PE_F32, &m, val32, reps);
        laplacian_csr_free(&m);
        free(val32);
    }
    if (all || !strcmp(which, "spectral")) spectral(reps);
    pe_shutdown();
    return 0;
}
