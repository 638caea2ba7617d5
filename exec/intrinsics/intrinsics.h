/* intrinsics.h — the library calls (PE_PROG_INTRINSIC programs) on the
 * host: dispatch.c runs a program (its operands' host buffers, its members'
 * result buffers, errors at the caller's line, the profile) through the
 * catalog's intrinsic row in its table, blas.c (OpenBLAS's cblas: matmul),
 * lapack.c (LAPACKE: the LU family), sparse.c (a parallel loop on PE's
 * pool: spmv) and fft.c (FFTW3: fft, ifft, the FFT path of conv) make the
 * calls. */
#ifndef PE_EXEC_INTRINSICS_H
#define PE_EXEC_INTRINSICS_H

#include "../base/runtime.h"
#include "../../jit/kir/program.h"

/* Runs one library call; returns the members computed (the rest are
 * invalid, with the reason at the caller's line). */
size_t pe_intrinsic_run(const pe_program *p);
/* The same, the runtime lock held throughout: for an executor in the
 * middle of a batch (a GPU's, half launched: cuda.c). */
size_t pe_intrinsic_run_locked(const pe_program *p);
/* The libraries' own threads: as many as PE's pool, which is idle while a
 * call runs (so the two never oversubscribe the cores). */
void pe_intrinsics_set_threads(int threads);
/* A loop over [begin, end) (the CPU kernels' ABI, exec/cpu/threadpool.h),
 * and a launcher running one over [0, n) on all the pool's threads (`work`:
 * the elements one iteration touches).  The CPU executor lends its pool's
 * (pe_pool_run) at start: the hand-written loops here (sparse.c) run on it;
 * without one they run on the calling thread. */
typedef void (*pe_range_fn)(int64_t begin, int64_t end, void *const *args);
typedef void (*pe_parallel_fn)(pe_range_fn fn, void *const *args, int64_t n, int64_t work);
void pe_intrinsics_set_pool(pe_parallel_fn run);

/* What one call reads and writes.  The library's functions below fill the
 * members that have a buffer (out[m] non-NULL) from the operands' host
 * buffers; they run without the runtime lock. */
typedef struct {
    pe_port *const *members; /* the program's members (program.h), in queue order */
    void *out[4];            /* per member: its result buffer, or NULL where nobody sees it */
    pe_port *in[5];          /* the operands (program.h), each with a host buffer */
    int n_members, n_in;
    uint8_t flags;           /* PE_INTR_* */
    char why[200];           /* a failure's reason */
    pe_status code;          /* ... and its code */
} pe_intrinsic_args;

/* Whether the operands fit the members (a sequence from the trace file is
 * checked before any library reads memory); false with why set. */
bool pe_blas_matmul_fits(pe_intrinsic_args *a);
/* A product that fits: op(A) is m x k, op(B) k x n (n = 1 and vector: b
 * is 1-d); c, alpha, beta the fused epilogue's (c NULL: none; alpha 1 and
 * beta 0 where absent). */
typedef struct {
    int64_t m, k, n;
    bool vector;
    const pe_port *c;
    double alpha, beta;
} pe_matmul_shape;
void pe_blas_matmul_shape(const pe_intrinsic_args *a, pe_matmul_shape *s);
bool pe_blas_matmul(pe_intrinsic_args *a);
bool pe_lapack_fits(pe_intrinsic_args *a);
bool pe_lapack_lu(pe_intrinsic_args *a);
bool pe_lapack_lu_solve(pe_intrinsic_args *a);
bool pe_lapack_lu_cond(pe_intrinsic_args *a);
bool pe_lapack_lu_permutation(pe_intrinsic_args *a);
bool pe_spmv_fits(pe_intrinsic_args *a);
bool pe_spmv_run(pe_intrinsic_args *a);

/* Whether every pivot (host buffer) names a row at or after its own; false with why. */
bool pe_lapack_valid_pivots(const pe_port *p, pe_intrinsic_args *a);

/* dispatch.c's steps, for an executor that makes the call elsewhere (a GPU:
 * exec/cuda/cuda_intrinsics.c): whether member m is read only by a later
 * member of the call (the product inside a fused epilogue: no buffer); the
 * members invalid with the reason at their caller's line; the members'
 * inputs let go (the call's end); the call counted and profiled. */
bool pe_intrinsic_read_by_later_member(const pe_program *p, int m);
void pe_intrinsic_fail(const pe_program *p, pe_status code, const char *why);
void pe_intrinsic_finish(const pe_program *p);
void pe_intrinsic_account(const pe_program *p, const pe_intrinsic_args *a, uint64_t t0);

bool pe_fft_fits(pe_intrinsic_args *a);
bool pe_fft_run(pe_intrinsic_args *a); /* fft and ifft (fft.c, FFTW3) */
bool pe_conv_fft_fits(pe_intrinsic_args *a);
bool pe_conv_fft_run(pe_intrinsic_args *a);
/* The least 2^a 3^b 5^c 7^d >= n: the padded length conv_fft transforms
 * (FFTW's and cuFFT's fast lengths), the same on every device. */
int64_t pe_fft_fast_length(int64_t n);

/* The cache directory's files (the disk cache's sealed files), for what a
 * library keeps across runs (FFTW's wisdom): registered by the provisioning
 * when it opens the cache (this stage is below it); NULL: none. */
typedef struct {
    void *(*read)(const char *name, size_t *size); /* verified content, malloc'ed, or NULL */
    bool (*write)(const char *name, const void *data, size_t size);
    void (*remove)(const char *name);
} pe_intrinsic_files;
void pe_intrinsics_use_files(const pe_intrinsic_files *files);
#endif
