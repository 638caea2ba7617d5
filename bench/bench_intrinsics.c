/* bench_intrinsics.c — PE's library calls (issue 21) against the same
 * libraries called directly, in the same run and process (so with the same
 * OpenBLAS and thread count, which PE sets from PE_THREADS):
 *   sgemm, dgemm n x n       pe_matmul + pe_sync   vs cblas_?gemm         floor 95%
 *   alpha * (a @ b) + beta * c, f32: fused (one gemm with alpha, beta)
 *                            vs the product held (a gemm, then a kernel)  floor: faster
 *   LU f64 n x n             pe_lu + pe_sync       vs a copy + LAPACKE_dgetrf (row-major,
 *                                                     as PE's: it factors a copy too)  floor 95%
 * Median of `reps` runs after one warm-up each.  Ratios are the baseline's
 * time over PE's (1.00: as fast).
 *   bench_intrinsics [n] [reps]     default 4096 5 */
#include <cblas.h>
#include <lapacke.h>
#include <string.h>

#include <pe.h>

#include "bench_util.h"

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

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 1 || reps < 1 || reps > 32) {
        fprintf(stderr, "usage: bench_intrinsics [n] [reps <= 32]\n");
        return 2;
    }
    if (pe_init(NULL) != PE_OK) return 1;
    printf("bench_intrinsics: n = %lld, median of %d after a warm-up, OpenBLAS threads %d\n", (long long)n, reps,
           openblas_get_num_threads());
    gemm(PE_F32, n, reps);
    gemm(PE_F64, n, reps);
    epilogue(n, reps);
    lu(n, reps);
    pe_shutdown();
    return 0;
}
