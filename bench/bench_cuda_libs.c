/* bench_cuda_libs.c — PE's matmul on a GPU (cuBLAS through the CUDA
 * executor, exec/cuda/cuda_intrinsics.c) against cuBLAS called directly on
 * device buffers, in the same run and process (the same library, loaded by
 * PE's loader exec/cuda/cuda_libs.c, on the same primary context):
 *   sgemm, dgemm n x n   pe_matmul + pe_sync (operands already on the GPU,
 *                        the result left there)   vs cublas?gemm + a stream
 *                        synchronisation
 *   fft c64 2^22, fft2 c64 4096 x 4096
 *                        pe_fft + pe_sync (input on the GPU, result left
 *                        there)   vs a cuFFT C2C plan (made before the
 *                        timing) executed + a stream synchronisation
 * Median of `reps` runs after one warm-up each; the ratio is the direct
 * call's time over PE's (1.00: as fast).  Exit 77 without a GPU or cuBLAS;
 * the FFT rows are skipped (said so) without cuFFT.
 *   bench_cuda_libs [n] [reps]     default 4096 5 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pe.h>

#include "bench_util.h"
#include "exec/cuda/cuda_driver.h"
#include "exec/cuda/cuda_libs.h"

static void *filled_as(pe_dtype t, int64_t n)
{
    size_t size = t == PE_F32 ? 4 : 8;
    char *p = bench_alloc_or_exit(malloc((size_t)n * size));
    srand(7);
    for (int64_t i = 0; i < n; i++) {
        double v = 2.0 * rand() / RAND_MAX - 1;
        if (t == PE_F32) ((float *)p)[i] = (float)v;
        else ((double *)p)[i] = v;
    }
    return p;
}

/* PE's median time, or -1 where the product did not run on the GPU */
static double through_pe(pe_dtype t, int64_t n, int reps, const void *a, const void *b)
{
    int64_t s[2] = {n, n};
    pe_array A = pe_from_host(t, 2, s, a), B = pe_from_host(t, 2, s, b);
    double times[32];
    pe_stats before, after;
    pe_get_stats(&before);
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        pe_array C = pe_matmul(A, B);
        pe_sync();
        if (r >= 0) times[r] = now() - t0;
        pe_release(C);
    }
    pe_get_stats(&after);
    pe_release(A), pe_release(B);
    if (after.gpu_batches - before.gpu_batches < (uint64_t)reps || after.library_calls - before.library_calls < (uint64_t)reps)
        return -1;
    return median(times, reps);
}

static double direct(const pe_cuda_api *cu, const pe_cublas_api *blas, pe_dtype t, int64_t n, int reps, const void *a,
                     const void *b)
{
    size_t bytes = (size_t)(n * n) * (t == PE_F32 ? 4 : 8);
    CUdeviceptr da = 0, db = 0, dc = 0;
    cublasHandle_t h = NULL;
    CUstream s = NULL;
    if (cu->cuStreamCreate(&s, 0) || cu->cuMemAlloc(&da, bytes) || cu->cuMemAlloc(&db, bytes) ||
        cu->cuMemAlloc(&dc, bytes) || cu->cuMemcpyHtoDAsync(da, a, bytes, s) || cu->cuMemcpyHtoDAsync(db, b, bytes, s) ||
        cu->cuStreamSynchronize(s) || blas->create(&h) || blas->set_stream(h, s))
        return -1;
    double one_d = 1, zero_d = 0;
    float one_f = 1, zero_f = 0;
    const void *one = t == PE_F32 ? (const void *)&one_f : &one_d, *zero = t == PE_F32 ? (const void *)&zero_f : &zero_d;
    int k = t == PE_F32 ? 0 : 1;
    double times[32];
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        /* row-major C = A B as PE makes it: column-major C^T = B^T A^T */
        blas->gemm[k](h, PE_CUBLAS_OP_N, PE_CUBLAS_OP_N, (int)n, (int)n, (int)n, one, (void *)(uintptr_t)db, (int)n,
                      (void *)(uintptr_t)da, (int)n, zero, (void *)(uintptr_t)dc, (int)n);
        cu->cuStreamSynchronize(s);
        if (r >= 0) times[r] = now() - t0;
    }
    blas->destroy(h);
    cu->cuStreamDestroy(s);
    cu->cuMemFree(da), cu->cuMemFree(db), cu->cuMemFree(dc);
    return median(times, reps);
}

/* PE's fft of a c64 array of `rank` axes (n or n x n), median time; -1 off the GPU */
static double fft_through_pe(int rank, int64_t n, int reps, const void *x)
{
    int64_t s[2] = {n, n};
    pe_array X = pe_from_host(PE_C64, rank, s, x);
    double times[32];
    pe_stats before, after;
    pe_get_stats(&before);
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        pe_array F = pe_fft(X, rank);
        pe_sync();
        if (r >= 0) times[r] = now() - t0;
        pe_release(F);
    }
    pe_get_stats(&after);
    pe_release(X);
    if (after.gpu_batches - before.gpu_batches < (uint64_t)reps) return -1;
    return median(times, reps);
}

static double fft_direct(const pe_cuda_api *cu, const pe_cufft_api *ff, int rank, int64_t n, int reps, const void *x)
{
    size_t bytes = (size_t)(rank == 2 ? n * n : n) * 8;
    CUdeviceptr dx = 0, dy = 0;
    CUstream s = NULL;
    cufftHandle plan;
    int lengths[2] = {(int)n, (int)n};
    if (cu->cuStreamCreate(&s, 0) || cu->cuMemAlloc(&dx, bytes) || cu->cuMemAlloc(&dy, bytes) ||
        cu->cuMemcpyHtoDAsync(dx, x, bytes, s) || cu->cuStreamSynchronize(s) ||
        ff->plan_many(&plan, rank, lengths, NULL, 1, 0, NULL, 1, 0, PE_CUFFT_C2C, 1) || ff->set_stream(plan, s))
        return -1;
    double times[32];
    for (int r = -1; r < reps; r++) {
        double t0 = now();
        ff->exec_c2c(plan, (void *)(uintptr_t)dx, (void *)(uintptr_t)dy, PE_CUFFT_FORWARD);
        cu->cuStreamSynchronize(s);
        if (r >= 0) times[r] = now() - t0;
    }
    ff->destroy(plan);
    cu->cuStreamDestroy(s);
    cu->cuMemFree(dx), cu->cuMemFree(dy);
    return median(times, reps);
}

static int fft_rows(const pe_cuda_api *cu, CUcontext ctx, int reps)
{
    const pe_cufft_api *ff = pe_cufft();
    if (!ff) {
        printf("fft: skipped, no cuFFT\n");
        return 0;
    }
    int status = 0;
    for (int rank = 1; rank <= 2; rank++) {
        int64_t n = rank == 1 ? (int64_t)1 << 22 : 4096, numel = rank == 1 ? n : n * n;
        float *x = bench_alloc_or_exit(malloc((size_t)numel * 8));
        srand(11);
        for (int64_t i = 0; i < 2 * numel; i++) x[i] = (float)(2.0 * rand() / RAND_MAX - 1);
        double pe = fft_through_pe(rank, n, reps, x);
        cu->cuCtxSetCurrent(ctx);
        double base = fft_direct(cu, ff, rank, n, reps, x);
        double flops = 5.0 * (double)numel * log2((double)numel); /* the usual 5 n log2 n */
        const char *name = rank == 1 ? "fft c64 2^22" : "fft2 c64 4096x4096";
        if (pe < 0 || base < 0) {
            printf("%s: %s\n", name, pe < 0 ? "PE did not run it on the GPU" : "cuFFT failed");
            status = 1;
        } else {
            printf("%s: PE %.3f ms (%.0f GFLOP/s), cuFFT directly %.3f ms (%.0f GFLOP/s), ratio %.2f\n", name, pe * 1e3,
                   flops / pe / 1e9, base * 1e3, flops / base / 1e9, base / pe);
        }
        free(x);
    }
    return status;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 1 || n > 46000 || reps < 1 || reps > 32) {
        fprintf(stderr, "usage: bench_cuda_libs [n] [reps <= 32]\n");
        return 2;
    }
    if (pe_init(NULL) != PE_OK) return 1;
    const char *reason = NULL;
    const pe_cuda_api *cu = pe_cuda_load(&reason);
    const pe_cublas_api *blas = pe_cublas();
    if (pe_device_count() < 2 || !cu || !blas) {
        fprintf(stderr, "skipped: no CUDA device or no cuBLAS (%s)\n", reason ? reason : "see the warning");
        pe_shutdown();
        return 77;
    }
    if (pe_set_device(1) != PE_OK) return 1;
    CUcontext ctx;
    if (cu->cuDevicePrimaryCtxRetain(&ctx, pe_cuda_device_at(0)->handle) || cu->cuCtxSetCurrent(ctx)) return 1;
    printf("bench_cuda_libs: n = %lld, median of %d after a warm-up, GPU %s\n", (long long)n, reps,
           pe_cuda_device_at(0)->name);
    pe_dtype types[2] = {PE_F32, PE_F64};
    int status = 0;
    for (int i = 0; i < 2; i++) {
        pe_dtype t = types[i];
        void *a = filled_as(t, n * n), *b = filled_as(t, n * n);
        double pe = through_pe(t, n, reps, a, b);
        cu->cuCtxSetCurrent(ctx); /* PE may have bound it on this thread already: the same context */
        double base = direct(cu, blas, t, n, reps, a, b);
        double flops = 2.0 * (double)n * (double)n * (double)n;
        if (pe < 0 || base < 0) {
            printf("%sgemm: %s\n", t == PE_F32 ? "s" : "d", pe < 0 ? "PE did not run it on the GPU" : "cuBLAS failed");
            status = 1;
        } else {
            printf("%sgemm %lld: PE %.3f ms (%.1f TFLOP/s), cuBLAS directly %.3f ms (%.1f TFLOP/s), ratio %.2f\n",
                   t == PE_F32 ? "s" : "d", (long long)n, pe * 1e3, flops / pe / 1e12, base * 1e3,
                   flops / base / 1e12, base / pe);
        }
        free(a), free(b);
    }
    status |= fft_rows(cu, ctx, reps);
    cu->cuDevicePrimaryCtxRelease(pe_cuda_device_at(0)->handle);
    pe_shutdown();
    return status;
}
