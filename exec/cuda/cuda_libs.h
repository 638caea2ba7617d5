/* cuda_libs.h — the CUDA libraries PE calls (cuBLAS, cuSOLVER, cuFFT,
 * cuSPARSE), loaded at run time as the driver is (cuda_driver.h): dlopen
 * and dlsym of only the functions PE calls, so that libpe links and runs
 * without them.  Each library is optional: one that does not load (or
 * lacks a function) leaves the calls it would make to the CPU, with one
 * warning naming it.  PE_CUBLAS_LIBRARY, PE_CUSOLVER_LIBRARY,
 * PE_CUFFT_LIBRARY and PE_CUSPARSE_LIBRARY=<path> load another library
 * (tests: tests/emul/cuda_libs_on_host.c).
 *
 * The types are the libraries' own ABI (handles are pointers, enums ints,
 * statuses 0 on success), declared here so that no CUDA header is needed
 * to build. */
#ifndef PE_EXEC_CUDA_LIBS_H
#define PE_EXEC_CUDA_LIBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_driver.h"
#include "pe.h"

typedef struct cublasContext *cublasHandle_t;
typedef struct cusolverDnContext *cusolverDnHandle_t;
typedef int pe_cuda_lib_status; /* cublasStatus_t, cusolverStatus_t, cufftResult, cusparseStatus_t: 0 = success */
enum { PE_CUBLAS_OP_N = 0, PE_CUBLAS_OP_T = 1 };

/* gemm, gemv and geam (the transpose cuSOLVER's column-major factors
 * need) in one dtype; alpha and beta by host address (the default pointer
 * mode), elements as PE lays them out (cuComplex is float complex). */
typedef pe_cuda_lib_status (*pe_cublas_gemm)(cublasHandle_t h, int ta, int tb, int m, int n, int k, const void *alpha,
                                             const void *a, int lda, const void *b, int ldb, const void *beta, void *c,
                                             int ldc);
typedef pe_cuda_lib_status (*pe_cublas_gemv)(cublasHandle_t h, int t, int m, int n, const void *alpha, const void *a,
                                             int lda, const void *x, int incx, const void *beta, void *y, int incy);
typedef pe_cuda_lib_status (*pe_cublas_geam)(cublasHandle_t h, int ta, int tb, int m, int n, const void *alpha,
                                             const void *a, int lda, const void *beta, const void *b, int ldb, void *c,
                                             int ldc);
/* the dtype rows: 0 f32 (S), 1 f64 (D), 2 c64 (C), 3 c128 (Z) */
enum { PE_CUDA_LIB_KINDS = 4 };
int pe_cuda_lib_kind(pe_dtype t); /* -1: a dtype the libraries do not take */

enum { PE_CUBLAS_SIDE_LEFT = 0 };

typedef struct {
    pe_cuda_lib_status (*create)(cublasHandle_t *h);
    pe_cuda_lib_status (*destroy)(cublasHandle_t h);
    pe_cuda_lib_status (*set_stream)(cublasHandle_t h, CUstream s);
    pe_cublas_gemm gemm[PE_CUDA_LIB_KINDS];
    pe_cublas_gemv gemv[PE_CUDA_LIB_KINDS];
    pe_cublas_geam geam[PE_CUDA_LIB_KINDS];
    /* the FFTs' steps (cuda_intrinsics.c): in the real rows (0 S, 1 D) x *= alpha and y = x
     * (a real array into a complex one's real parts: incy 2); in the complex rows (0 C, 1 Z)
     * C = diag(x) A (mode PE_CUBLAS_SIDE_LEFT: a spectrum times the kernel's, per batch) */
    pe_cuda_lib_status (*scal[2])(cublasHandle_t h, int n, const void *alpha, void *x, int incx);
    pe_cuda_lib_status (*copy[2])(cublasHandle_t h, int n, const void *x, int incx, void *y, int incy);
    pe_cuda_lib_status (*dgmm[2])(cublasHandle_t h, int mode, int m, int n, const void *a, int lda, const void *x,
                                  int incx, void *c, int ldc);
} pe_cublas_api;

typedef struct {
    pe_cuda_lib_status (*create)(cusolverDnHandle_t *h);
    pe_cuda_lib_status (*destroy)(cusolverDnHandle_t h);
    pe_cuda_lib_status (*set_stream)(cusolverDnHandle_t h, CUstream s);
    /* column-major, ipiv 1-based, info in device memory */
    pe_cuda_lib_status (*getrf_buffer_size[PE_CUDA_LIB_KINDS])(cusolverDnHandle_t h, int m, int n, void *a, int lda,
                                                               int *lwork);
    pe_cuda_lib_status (*getrf[PE_CUDA_LIB_KINDS])(cusolverDnHandle_t h, int m, int n, void *a, int lda, void *work,
                                                   int *ipiv, int *info);
    pe_cuda_lib_status (*getrs[PE_CUDA_LIB_KINDS])(cusolverDnHandle_t h, int trans, int n, int nrhs, const void *a,
                                                   int lda, const int *ipiv, void *b, int ldb, int *info);
} pe_cusolver_api;

/* cuFFT (pe_fft, pe_ifft, conv_fft): plans made with cufftPlanMany on the
 * basic (packed) layout, executed on a stream. */
typedef int cufftHandle;
enum {
    PE_CUFFT_R2C = 0x2a,
    PE_CUFFT_C2R = 0x2c,
    PE_CUFFT_C2C = 0x29,
    PE_CUFFT_D2Z = 0x6a,
    PE_CUFFT_Z2D = 0x6c,
    PE_CUFFT_Z2Z = 0x69,
    PE_CUFFT_FORWARD = -1,
    PE_CUFFT_INVERSE = 1,
};
typedef struct {
    pe_cuda_lib_status (*plan_many)(cufftHandle *plan, int rank, int *n, int *inembed, int istride, int idist,
                                    int *onembed, int ostride, int odist, int type, int batch);
    pe_cuda_lib_status (*set_stream)(cufftHandle plan, CUstream s);
    pe_cuda_lib_status (*destroy)(cufftHandle plan);
    pe_cuda_lib_status (*exec_c2c)(cufftHandle plan, void *in, void *out, int direction);
    pe_cuda_lib_status (*exec_z2z)(cufftHandle plan, void *in, void *out, int direction);
    pe_cuda_lib_status (*exec_r2c)(cufftHandle plan, void *in, void *out);
    pe_cuda_lib_status (*exec_d2z)(cufftHandle plan, void *in, void *out);
    pe_cuda_lib_status (*exec_c2r)(cufftHandle plan, void *in, void *out);
    pe_cuda_lib_status (*exec_z2d)(cufftHandle plan, void *in, void *out);
} pe_cufft_api;

/* cuSPARSE's generic SpMV (pe_spmv): descriptors are host objects (pointers), enums ints.  The values PE
 * passes: 32-bit indices from 0, real f32 or f64 (cudaDataType), y = A x (no transpose), CSR_ALG2 (the
 * one whose sums are bitwise the same from run to run). */
typedef struct cusparseContext *cusparseHandle_t;
enum {
    PE_CUSPARSE_INDEX_32I = 2,
    PE_CUSPARSE_INDEX_BASE_ZERO = 0,
    PE_CUDA_R_32F = 0,
    PE_CUDA_R_64F = 1,
    PE_CUSPARSE_OPERATION_NON_TRANSPOSE = 0,
    PE_CUSPARSE_SPMV_CSR_ALG2 = 3,
};
typedef struct {
    pe_cuda_lib_status (*create)(cusparseHandle_t *h);
    pe_cuda_lib_status (*destroy)(cusparseHandle_t h);
    pe_cuda_lib_status (*set_stream)(cusparseHandle_t h, CUstream s);
    pe_cuda_lib_status (*create_csr)(void **mat, int64_t rows, int64_t cols, int64_t nnz, void *row_offsets,
                                     void *col_ind, void *values, int offsets_type, int ind_type, int base,
                                     int value_type);
    pe_cuda_lib_status (*destroy_sp_mat)(void *mat);
    pe_cuda_lib_status (*create_dn_vec)(void **vec, int64_t size, void *values, int value_type);
    pe_cuda_lib_status (*destroy_dn_vec)(void *vec);
    pe_cuda_lib_status (*spmv_buffer_size)(cusparseHandle_t h, int op, const void *alpha, void *mat, void *x,
                                           const void *beta, void *y, int compute_type, int alg, size_t *bytes);
    pe_cuda_lib_status (*spmv)(cusparseHandle_t h, int op, const void *alpha, void *mat, void *x, const void *beta,
                               void *y, int compute_type, int alg, void *buffer);
} pe_cusparse_api;

/* Each library loaded on first use, once per process (under the runtime
 * lock); NULL when it is missing: the first such answer warns once,
 * naming the library, the reason and what the CPU computes instead. */
const pe_cublas_api *pe_cublas(void);
const pe_cusolver_api *pe_cusolver(void);
const pe_cufft_api *pe_cufft(void);
const pe_cusparse_api *pe_cusparse(void);

#endif
