/* cuda_intrinsics.c — library calls (PE_PROG_INTRINSIC programs) on a GPU:
 * matmul on cuBLAS, lu / lu_pivots and lu_solve on cuSOLVER, spmv on
 * cuSPARSE, fft / ifft / conv_fft on cuFFT (with cuBLAS for the steps
 * around the transforms: see fft and conv_fft below), operands and results
 * in device memory, on the GPU's stream 0 (a batch holding a call runs all
 * its kernels there, in order: cuda.c).  Each op's part — its libraries,
 * its limits, where its operands go, its body — is its slot in the table
 * at the end, one per row of irformat/ops_intrinsic.def; the one path
 * (pe_cuda_intrinsic) runs every call through it.  The call's checks are
 * the host's (exec/intrinsics: the same fits, the same errors at the
 * caller's line); a call this file does not make (lu_cond: cuSOLVER has no
 * gecon; lu_permutation: a host loop; a library that did not load; a
 * product with an empty inner dimension) is made on the host by
 * exec/intrinsics/dispatch.c, its operands copied down first.
 *
 * Row-major on a column-major library: a row-major r x c array is the
 * column-major c x r array of its transpose, so C = op(A) op(B) is
 * computed as C^T = op(B)^T op(A)^T, with the operands swapped and the
 * same CUBLAS_OP_T for an operand that is a bound transpose (the CPU's
 * CblasTrans); gemv likewise with the transpose flag inverted.  The
 * epilogue's alpha and beta are the gemm's, its c copied into the result
 * first.  cuSOLVER's getrf and getrs factor and solve column-major arrays:
 * the matrix (and the right-hand sides) are transposed into scratch by
 * cublas?geam, and the results back; getrf's pivots and info are copied to
 * the host at once (a singular matrix is the caller's error, as on the
 * CPU), so pe_lu waits for the GPU; pe_lu_solve does not.
 *
 * spmv: the matrix's one i32 structure array (row_ptr, then col_idx) gives
 * cusparseCreateCsr both index arrays, the values and x and y are dense
 * vectors, and cusparseSpMV (CSR_ALG2: the same bits every run, as PE's
 * sums are) runs in the element type.  cuSPARSE reads the indices
 * unchecked, so the structure is checked on the host first, as the CPU's
 * loop checks it (pe_csr_fault: the same first fault, PE_E_ARG at
 * pe_spmv's line, and no read outside x on the GPU); a structure is a
 * value that never changes, so a check that passed is remembered per
 * structure port and generation (the GPU's csr_checked), and a matrix
 * reused in a loop is checked once.  A matrix with no rows, columns or
 * entries is the host's (nothing to call the library for). */
#include <stdio.h>
#include <string.h>

#include "cuda.h"
#include "cuda_gpu.h"
#include "cuda_libs.h"
#include "../base/error.h"
#include "../base/memory.h"
#include "../interp/interp.h"
#include "../interp/ref_linalg.h"
#include "../intrinsics/intrinsics.h"
#include "../../profiler/collect.h"

/* 1 and 0 in each dtype row (pe_cuda_lib_kind), by address */
static const float one_f[2] = {1, 0}, zero_f[2] = {0, 0};
static const double one_d[2] = {1, 0}, zero_d[2] = {0, 0};
static const void *one_of(int kind) { return kind == 0 || kind == 2 ? (const void *)one_f : (const void *)one_d; }
static const void *zero_of(int kind) { return kind == 0 || kind == 2 ? (const void *)zero_f : (const void *)zero_d; }

/* alpha or beta in the dtype row's representation (a real value: complex ones have no imaginary part) */
typedef union {
    float f[2];
    double d[2];
} scalar;
static scalar scalar_of(int kind, double v)
{
    scalar s = {{0}};
    if (kind == 0 || kind == 2) s.f[0] = (float)v;
    else s.d[0] = v;
    return s;
}

static CUdeviceptr dev(const pe_port *q) { return (CUdeviceptr)(uintptr_t)q->dev_buf; }
static void *ptr(CUdeviceptr d) { return (void *)(uintptr_t)d; }

/* One call's state: the args the host's checks take, the GPU's buffers. */
typedef struct {
    cuda_gpu *g;
    const pe_program *p;
    pe_intrinsic_args a;
    pe_port *members[4];
    uint32_t keep[5];
    int kind; /* pe_cuda_lib_kind of the operands */
    /* scratch on the device, freed (deferred) at the end */
    CUdeviceptr scratch[8];
    size_t scratch_bytes[8];
    int n_scratch;
} call;

static CUdeviceptr scratch(call *c, size_t bytes)
{
    CUdeviceptr d = pe_cuda_device_alloc(c->g, bytes ? bytes : 1, c->keep, c->p->n_bind);
    if (d) c->scratch[c->n_scratch] = d, c->scratch_bytes[c->n_scratch++] = bytes ? bytes : 1;
    else snprintf(c->a.why, sizeof c->a.why, "no device memory for the call's %zu bytes of scratch", bytes);
    return d;
}

/* The members' device buffers given back (a call not made, or failed). */
static void drop_results(call *c)
{
    for (int m = 0; m < c->p->n_members; m++) pe_cuda_port_free(c->members[m]), c->a.out[m] = NULL;
}

/* Device buffers for the members someone sees; false when memory runs out. */
static bool results_on_device(call *c)
{
    for (int m = 0; m < c->p->n_members; m++) {
        pe_port *q = c->members[m];
        if (pe_intrinsic_read_by_later_member(c->p, m) || q->op == PE_OP_lu_pivots) continue; /* pivots: on the host */
        CUdeviceptr d = pe_cuda_device_alloc(c->g, pe_port_bytes(q) ? pe_port_bytes(q) : 1, c->keep, c->p->n_bind);
        if (!d) return false;
        pe_cuda_give_copy(q, c->g, d);
        c->a.out[m] = ptr(d);
    }
    return true;
}

/* C^T = op(B)^T op(A)^T in column-major terms (the header's comment). */
static bool matmul(call *c)
{
    const pe_cublas_api *blas = pe_cublas();
    cublasHandle_t h = c->g->blas;
    pe_matmul_shape s;
    pe_blas_matmul_shape(&c->a, &s);
    const pe_port *x = c->a.in[0], *y = c->a.in[1];
    void *out = c->a.out[c->p->n_members - 1];
    if (!out || s.m == 0 || s.n == 0) return true;
    size_t bytes = pe_port_bytes(c->members[c->p->n_members - 1]);
    const pe_cuda_api *cu = pe_cuda_api_in_use;
    if (s.c && cu->cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)out, dev(s.c), bytes, c->g->stream) != PE_CUDA_SUCCESS) {
        snprintf(c->a.why, sizeof c->a.why, "copying the epilogue's c failed");
        return false;
    }
    bool ta = c->a.flags & PE_INTR_TRANS_A, tb = c->a.flags & PE_INTR_TRANS_B;
    scalar alpha = scalar_of(c->kind, s.alpha), beta = scalar_of(c->kind, s.beta);
    int lda = (int)x->shape[1];
    pe_cuda_lib_status r;
    if (s.vector)
        r = blas->gemv[c->kind](h, ta ? PE_CUBLAS_OP_N : PE_CUBLAS_OP_T, (int)x->shape[1], (int)x->shape[0], &alpha,
                                x->dev_buf, lda, y->dev_buf, 1, &beta, out, 1);
    else
        r = blas->gemm[c->kind](h, tb ? PE_CUBLAS_OP_T : PE_CUBLAS_OP_N, ta ? PE_CUBLAS_OP_T : PE_CUBLAS_OP_N, (int)s.n,
                                (int)s.m, (int)s.k, &alpha, y->dev_buf, (int)y->shape[1], x->dev_buf, lda, &beta, out,
                                (int)s.n);
    if (r != 0) snprintf(c->a.why, sizeof c->a.why, "cuBLAS gemm failed (status %d)", r);
    return r == 0;
}

/* dst (cols x rows, row-major) = src (rows x cols, row-major) transposed:
 * in column-major terms dst = op_T(src), src's leading dimension cols. */
static bool transpose(call *c, const pe_cublas_api *blas, cublasHandle_t h, const void *src, void *dst, int rows, int cols)
{
    /* column-major: src is cols x rows (ld cols); dst rows x cols (ld rows); beta 0, b = dst (never read) */
    pe_cuda_lib_status r = blas->geam[c->kind](h, PE_CUBLAS_OP_T, PE_CUBLAS_OP_N, rows, cols, one_of(c->kind), src,
                                               cols, zero_of(c->kind), dst, rows, dst, rows);
    if (r != 0) snprintf(c->a.why, sizeof c->a.why, "cuBLAS geam failed (status %d)", r);
    return r == 0;
}

/* rows x cols elements (row-major) from src to dst, each with its own row
 * stride (ld_src, ld_dst: a padded or cropped copy); in column-major terms
 * dst = op_N(src), cols x rows.  Elements of the call's dtype row. */
static bool copy_rows(call *c, const pe_cublas_api *blas, cublasHandle_t h, const void *src, int ld_src, void *dst,
                      int ld_dst, int rows, int cols)
{
    pe_cuda_lib_status r = blas->geam[c->kind](h, PE_CUBLAS_OP_N, PE_CUBLAS_OP_N, cols, rows, one_of(c->kind), src,
                                               ld_src, zero_of(c->kind), dst, ld_dst, dst, ld_dst);
    if (r != 0) snprintf(c->a.why, sizeof c->a.why, "cuBLAS geam failed (status %d)", r);
    return r == 0;
}

static bool lu(call *c)
{
    const pe_cublas_api *blas = pe_cublas();
    const pe_cusolver_api *sol = pe_cusolver();
    cublasHandle_t bh = c->g->blas;
    cusolverDnHandle_t sh = c->g->solver;
    const pe_port *x = c->a.in[0];
    int n = (int)x->shape[0];
    size_t elem = pe_dtype_size((pe_dtype)x->dtype), bytes = elem * (size_t)n * (size_t)n;
    void *lu_out = NULL;
    pe_port *pivots = NULL;
    for (int m = 0; m < c->p->n_members; m++) {
        if (c->members[m]->op == PE_OP_lu) lu_out = c->a.out[m];
        else pivots = c->members[m];
    }
    if (n == 0) return !pivots || pe_port_result_buffer(pivots);
    CUdeviceptr col = scratch(c, bytes), ipiv = scratch(c, sizeof(int) * (size_t)(n + 1));
    int lwork = 0;
    if (!col || !ipiv) return false;
    if (!transpose(c, blas, bh, x->dev_buf, ptr(col), n, n)) return false;
    pe_cuda_lib_status r = sol->getrf_buffer_size[c->kind](sh, n, n, ptr(col), n, &lwork);
    CUdeviceptr work = r == 0 ? scratch(c, elem * (size_t)(lwork > 0 ? lwork : 1)) : 0;
    if (r == 0 && !work) return false;
    int *dev_ipiv = ptr(ipiv);
    if (r == 0) r = sol->getrf[c->kind](sh, n, n, ptr(col), n, ptr(work), dev_ipiv, dev_ipiv + n);
    if (r != 0) {
        snprintf(c->a.why, sizeof c->a.why, "cuSOLVER getrf failed (status %d)", r);
        return false;
    }
    if (lu_out && !transpose(c, blas, bh, ptr(col), lu_out, n, n)) return false;
    /* the pivots and info to the host: a singular matrix is known now */
    int *host = pe_mem_alloc(sizeof(int) * (size_t)(n + 1));
    if (!host) {
        snprintf(c->a.why, sizeof c->a.why, "out of memory"), c->a.code = PE_E_NOMEM;
        return false;
    }
    const pe_cuda_api *cu = pe_cuda_api_in_use;
    CUresult cr = cu->cuMemcpyDtoHAsync(host, ipiv, sizeof(int) * (size_t)(n + 1), c->g->stream);
    if (cr == PE_CUDA_SUCCESS) cr = cu->cuStreamSynchronize(c->g->stream); /* holding the runtime lock: the batch is half launched */
    bool ok = cr == PE_CUDA_SUCCESS;
    if (!ok) {
        pe_cuda_disable(c->g, "cuSOLVER getrf failed", cr);
        snprintf(c->a.why, sizeof c->a.why, "the GPU failed during getrf");
        pivots = NULL;
    } else if (host[n] != 0) {
        ok = false;
        c->a.code = PE_E_ARG;
        if (host[n] > 0)
            snprintf(c->a.why, sizeof c->a.why, "the matrix is singular: U[%d][%d] is exactly zero", host[n] - 1, host[n] - 1);
        else snprintf(c->a.why, sizeof c->a.why, "getrf refused argument %d", -host[n]);
    } else if (pivots) {
        ok = pe_port_result_buffer(pivots);
        for (int i = 0; ok && i < n; i++) ((int32_t *)pivots->buf)[i] = host[i] - 1;
        if (!ok) snprintf(c->a.why, sizeof c->a.why, "out of memory"), c->a.code = PE_E_NOMEM;
    }
    pe_mem_free(host, sizeof(int) * (size_t)(n + 1));
    return ok;
}

static bool lu_solve(call *c)
{
    const pe_cublas_api *blas = pe_cublas();
    const pe_cusolver_api *sol = pe_cusolver();
    cublasHandle_t bh = c->g->blas;
    cusolverDnHandle_t sh = c->g->solver;
    const pe_port *f = c->a.in[0], *piv = c->a.in[1], *b = c->a.in[2];
    int n = (int)f->shape[0], nrhs = b->rank == 1 ? 1 : (int)b->shape[1];
    void *out = c->a.out[0];
    if (!out || n == 0 || nrhs == 0) {
        return !out || pe_cuda_api_in_use->cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)out, dev(b), pe_port_bytes(b),
                                                            c->g->stream) == PE_CUDA_SUCCESS;
    }
    if (!pe_lapack_valid_pivots(piv, &c->a)) return false;
    size_t elem = pe_dtype_size((pe_dtype)f->dtype);
    CUdeviceptr col = scratch(c, elem * (size_t)n * (size_t)n), rhs = scratch(c, elem * (size_t)n * (size_t)nrhs);
    CUdeviceptr ipiv = scratch(c, sizeof(int) * (size_t)(n + 1));
    if (!col || !rhs || !ipiv) return false;
    int *host = pe_mem_alloc(sizeof(int) * (size_t)n);
    if (!host) {
        snprintf(c->a.why, sizeof c->a.why, "out of memory"), c->a.code = PE_E_NOMEM;
        return false;
    }
    for (int i = 0; i < n; i++) host[i] = ((const int32_t *)piv->buf)[i] + 1; /* cuSOLVER's are 1-based */
    /* pageable memory: the driver takes the bytes before the call returns */
    CUresult cr = pe_cuda_api_in_use->cuMemcpyHtoDAsync(ipiv, host, sizeof(int) * (size_t)n, c->g->stream);
    pe_mem_free(host, sizeof(int) * (size_t)n);
    if (cr != PE_CUDA_SUCCESS) {
        pe_cuda_disable(c->g, "a copy to the GPU failed", cr);
        return false;
    }
    if (!transpose(c, blas, bh, f->dev_buf, ptr(col), n, n) || !transpose(c, blas, bh, b->dev_buf, ptr(rhs), n, nrhs))
        return false;
    int *dev_ipiv = ptr(ipiv);
    pe_cuda_lib_status r = sol->getrs[c->kind](sh, PE_CUBLAS_OP_N, n, nrhs, ptr(col), n, dev_ipiv, ptr(rhs), n, dev_ipiv + n);
    if (r != 0) {
        snprintf(c->a.why, sizeof c->a.why, "cuSOLVER getrs failed (status %d)", r);
        return false;
    }
    return transpose(c, blas, bh, ptr(rhs), out, nrhs, n);
}

/* Whether cuSPARSE takes the product: rows, columns and entries, each
 * counted in 32 bits as its 32-bit indices take them, and no more entries
 * than the matrix has places (cusparseCreateCsr refuses more, seen on an
 * H200: a CSR matrix PE allows, repeated columns summed, as the CPU's loop
 * does).  Else the host makes it: a zero vector, the structure's fault, or
 * the product, with no library call and no warning. */
static bool spmv_on_cusparse(const pe_intrinsic_args *a)
{
    const pe_port *y = a->members[0], *v = a->in[1], *x = a->in[2];
    return y->numel > 0 && v->numel > 0 && x->numel > 0 && y->numel <= INT32_MAX && x->numel <= INT32_MAX &&
           v->numel <= y->numel * x->numel;
}

/* 1: the structure's indices are right for this product (checked now, or
 * before: the GPU's csr_checked); 0: they are not, with the CPU's reason
 * in c->a (PE_E_ARG); -1: its host copy could not be made. */
static int csr_check(call *c)
{
    cuda_gpu *g = c->g;
    pe_port *st = c->a.in[0];
    uint32_t port = c->keep[0];
    int64_t n_rows = c->a.members[0]->numel, n_cols = c->a.in[2]->numel, nnz = c->a.in[1]->numel;
    int n_slots = (int)(sizeof g->csr_checked / sizeof g->csr_checked[0]);
    for (int i = 0; i < n_slots; i++) {
        if (g->csr_checked[i].valid && g->csr_checked[i].port == port && g->csr_checked[i].gen == st->gen &&
            g->csr_checked[i].n_rows == n_rows && g->csr_checked[i].n_cols == n_cols)
            return 1;
    }
    if (!pe_port_host(st) || (!st->buf && !pe_interp_materialise(st))) return -1;
    const int32_t *row_ptr = st->buf;
    if (pe_csr_fault(row_ptr, row_ptr + n_rows + 1, n_rows, nnz, n_cols, c->a.why, sizeof c->a.why)) {
        c->a.code = PE_E_ARG;
        return 0;
    }
    int i = g->csr_next;
    g->csr_next = (i + 1) % n_slots;
    g->csr_checked[i].port = port, g->csr_checked[i].gen = st->gen;
    g->csr_checked[i].n_rows = n_rows, g->csr_checked[i].n_cols = n_cols;
    g->csr_checked[i].valid = true;
    return 1;
}

/* y = A x on cuSPARSE: the descriptors (host objects) made for the call and
 * destroyed once it is queued; its workspace is scratch. */
static bool spmv(call *c)
{
    const pe_cusparse_api *sp = pe_cusparse();
    cusparseHandle_t h = c->g->sparse;
    const pe_port *st = c->a.in[0], *v = c->a.in[1], *x = c->a.in[2];
    void *out = c->a.out[0];
    if (!out) return true;
    int64_t n_rows = c->a.members[0]->numel, n_cols = x->numel, nnz = v->numel;
    int type = c->kind == 0 ? PE_CUDA_R_32F : PE_CUDA_R_64F;
    int32_t *row_ptr = st->dev_buf;
    void *mat = NULL, *vx = NULL, *vy = NULL;
    size_t bytes = 0;
    const char *step = "cusparseCreateCsr";
    pe_cuda_lib_status r = sp->create_csr(&mat, n_rows, n_cols, nnz, row_ptr, row_ptr + n_rows + 1, v->dev_buf,
                                          PE_CUSPARSE_INDEX_32I, PE_CUSPARSE_INDEX_32I, PE_CUSPARSE_INDEX_BASE_ZERO, type);
    if (r == 0) step = "cusparseCreateDnVec", r = sp->create_dn_vec(&vx, n_cols, x->dev_buf, type);
    if (r == 0) r = sp->create_dn_vec(&vy, n_rows, out, type);
    if (r == 0) {
        step = "cusparseSpMV_bufferSize";
        r = sp->spmv_buffer_size(h, PE_CUSPARSE_OPERATION_NON_TRANSPOSE, one_of(c->kind), mat, vx, zero_of(c->kind), vy,
                                 type, PE_CUSPARSE_SPMV_CSR_ALG2, &bytes);
    }
    CUdeviceptr work = r == 0 ? scratch(c, bytes) : 0;
    if (work) {
        step = "cusparseSpMV";
        r = sp->spmv(h, PE_CUSPARSE_OPERATION_NON_TRANSPOSE, one_of(c->kind), mat, vx, zero_of(c->kind), vy, type,
                     PE_CUSPARSE_SPMV_CSR_ALG2, ptr(work));
    }
    if (vy) sp->destroy_dn_vec(vy);
    if (vx) sp->destroy_dn_vec(vx);
    if (mat) sp->destroy_sp_mat(mat);
    if (r != 0) snprintf(c->a.why, sizeof c->a.why, "%s failed (status %d)", step, r);
    return r == 0 && work;
}

/* ------------------------------------------------------------ FFTs on cuFFT */

/* Whether the call's lengths and batch fit cuFFT's and cuBLAS's int
 * arguments (2 * numel: the real view of a complex array); else the host's. */
static bool fft_sizes_fit(const pe_intrinsic_args *a)
{
    const pe_port *r = a->members[0], *x = a->in[0];
    int64_t most = r->numel > x->numel ? r->numel : x->numel;
    return r->numel > 0 && most <= INT32_MAX / 4;
}

/* The plan for (type, rank, n, batch) on this GPU, made if new, on its
 * stream; -1 (why in c) when cuFFT makes none.  Plans are kept: making one
 * costs far more than a transform (cuFFT picks its kernels and allocates
 * its workspace).  The ninth evicts the oldest, once the stream has run
 * what was queued with it. */
static bool fft_plan(call *c, const pe_cufft_api *ff, int type, int rank, const int *n, int batch, cufftHandle *plan)
{
    cuda_gpu *g = c->g;
    int n_slots = (int)(sizeof g->fft_plans / sizeof g->fft_plans[0]);
    for (int i = 0; i < n_slots; i++) {
        if (g->fft_plans[i].valid && g->fft_plans[i].type == type && g->fft_plans[i].rank == rank &&
            g->fft_plans[i].n[0] == n[0] && g->fft_plans[i].n[1] == (rank == 2 ? n[1] : 0) &&
            g->fft_plans[i].batch == batch) {
            *plan = g->fft_plans[i].plan;
            return ff->set_stream(*plan, g->stream) == 0 ||
                   (snprintf(c->a.why, sizeof c->a.why, "cufftSetStream failed"), false);
        }
    }
    int i = g->fft_next;
    if (g->fft_plans[i].valid) {
        if (pe_cuda_api_in_use->cuStreamSynchronize(g->stream) != PE_CUDA_SUCCESS) {
            snprintf(c->a.why, sizeof c->a.why, "the GPU failed before a cuFFT plan was replaced");
            return false;
        }
        ff->destroy(g->fft_plans[i].plan);
        g->fft_plans[i].valid = false;
    }
    int lengths[2] = {n[0], rank == 2 ? n[1] : 0};
    pe_cuda_lib_status r = ff->plan_many(plan, rank, lengths, NULL, 1, 0, NULL, 1, 0, type, batch);
    if (r != 0) {
        snprintf(c->a.why, sizeof c->a.why, "cufftPlanMany failed (status %d)", r);
        return false;
    }
    g->fft_plans[i].type = type, g->fft_plans[i].rank = rank, g->fft_plans[i].batch = batch;
    g->fft_plans[i].n[0] = lengths[0], g->fft_plans[i].n[1] = lengths[1];
    g->fft_plans[i].plan = *plan, g->fft_plans[i].valid = true;
    g->fft_next = (i + 1) % n_slots;
    return ff->set_stream(*plan, g->stream) == 0 || (snprintf(c->a.why, sizeof c->a.why, "cufftSetStream failed"), false);
}

static void release_fft_plans(cuda_gpu *g)
{
    int n_slots = (int)(sizeof g->fft_plans / sizeof g->fft_plans[0]);
    for (int i = 0; i < n_slots; i++)
        if (g->fft_plans[i].valid) pe_cufft()->destroy(g->fft_plans[i].plan), g->fft_plans[i].valid = false;
}

static bool lib_ok(call *c, pe_cuda_lib_status r, const char *what)
{
    if (r != 0) snprintf(c->a.why, sizeof c->a.why, "%s failed (status %d)", what, r);
    return r == 0;
}

static bool memset_ok(call *c, CUdeviceptr d, size_t bytes)
{
    if (pe_cuda_api_in_use->cuMemsetD8Async(d, 0, bytes, c->g->stream) == PE_CUDA_SUCCESS) return true;
    snprintf(c->a.why, sizeof c->a.why, "clearing device memory failed");
    return false;
}

/* fft / ifft along the last one or two axes, batched over the rest, as the
 * host computes them (fft.c: NumPy's conventions): a complex input through
 * one C2C (Z2Z) transform, out of place; a real one first copied into the
 * real parts of the zeroed result (cublas?copy, incy 2) and transformed
 * there, in place, which gives the full spectrum the host builds from r2c's
 * half; ifft scaled by 1 / the transformed length after (cublas?scal over
 * the result's reals). */
static bool fft(call *c)
{
    const pe_cufft_api *ff = pe_cufft();
    const pe_cublas_api *blas = pe_cublas();
    cublasHandle_t h = c->g->blas;
    const pe_port *r = c->members[0], *x = c->a.in[0];
    void *out = c->a.out[0];
    if (!out) return true;
    int prec = c->kind & 1, rank = (int)r->param[0], n[2] = {(int)r->shape[r->rank - rank], 0};
    if (rank == 2) n[1] = (int)r->shape[r->rank - 1];
    int64_t line = rank == 2 ? (int64_t)n[0] * n[1] : n[0];
    int batch = (int)(r->numel / line), numel = (int)r->numel;
    bool inverse = r->op == PE_OP_ifft, real = !pe_dtype_is_complex((pe_dtype)x->dtype);
    const void *src = x->dev_buf;
    if (real) {
        if (!memset_ok(c, (CUdeviceptr)(uintptr_t)out, pe_port_bytes(r)) ||
            !lib_ok(c, blas->copy[prec](h, numel, x->dev_buf, 1, out, 2), "cuBLAS copy"))
            return false;
        src = out;
    }
    cufftHandle plan;
    if (!fft_plan(c, ff, prec ? PE_CUFFT_Z2Z : PE_CUFFT_C2C, rank, n, batch, &plan)) return false;
    int direction = inverse ? PE_CUFFT_INVERSE : PE_CUFFT_FORWARD;
    pe_cuda_lib_status st = prec ? ff->exec_z2z(plan, (void *)src, out, direction)
                                 : ff->exec_c2c(plan, (void *)src, out, direction);
    if (!lib_ok(c, st, prec ? "cufftExecZ2Z" : "cufftExecC2C")) return false;
    if (!inverse) return true;
    scalar scale = scalar_of(prec, 1.0 / (double)line);
    return lib_ok(c, blas->scal[prec](h, 2 * numel, &scale, out, 1), "cuBLAS scal");
}

/* conv_fft ("same" convolution or correlation along the last one or two
 * axes) as the host computes it (fft.c): a and the kernel zero-padded to
 * fast lengths (geam copies the rows into the cleared padded arrays), their
 * R2C spectra (complex arrays: C2C, whole spectra), the batch's spectra
 * times the kernel's scaled by 1 / the padded length (cublas?dgmm:
 * diag(kernel) x the batch's columns), the C2R (C2C inverse) of the
 * product, its "same" window copied out by geam.  A correlation convolves
 * with the kernel reversed (and conjugated, a complex one), made on the
 * host from the kernel's host copy (small: at most the image's size) and
 * sent up. */
/* conv_fft's transforms: real arrays R2C (D2Z) and C2R (Z2D), complex ones C2C (Z2Z) both ways */
static pe_cuda_lib_status forward(const pe_cufft_api *ff, cufftHandle plan, bool cplx, int prec, void *in, void *out)
{
    if (cplx) return prec ? ff->exec_z2z(plan, in, out, PE_CUFFT_FORWARD) : ff->exec_c2c(plan, in, out, PE_CUFFT_FORWARD);
    return prec ? ff->exec_d2z(plan, in, out) : ff->exec_r2c(plan, in, out);
}
static pe_cuda_lib_status inverse(const pe_cufft_api *ff, cufftHandle plan, bool cplx, int prec, void *in, void *out)
{
    if (cplx) return prec ? ff->exec_z2z(plan, in, out, PE_CUFFT_INVERSE) : ff->exec_c2c(plan, in, out, PE_CUFFT_INVERSE);
    return prec ? ff->exec_z2d(plan, in, out) : ff->exec_c2r(plan, in, out);
}

static bool conv_fft(call *c)
{
    const pe_cufft_api *ff = pe_cufft();
    const pe_cublas_api *blas = pe_cublas();
    cublasHandle_t h = c->g->blas;
    const pe_port *r = c->members[0], *x = c->a.in[0], *k = c->a.in[1];
    void *out = c->a.out[0];
    if (!out) return true;
    int prec = c->kind & 1, rank = (int)r->param[0];
    bool correlate = r->param[1] != 0, cplx = c->kind >= 2;
    int64_t n[2] = {1, r->shape[r->rank - 1]}, kn[2] = {1, k->shape[k->rank - 1]}, len[2] = {1, 1}, off[2] = {0, 0};
    if (rank == 2) n[0] = r->shape[r->rank - 2], kn[0] = k->shape[0];
    for (int d = 2 - rank; d < 2; d++) len[d] = pe_fft_fast_length(n[d] + kn[d] - 1), off[d] = (kn[d] - 1) / 2;
    int64_t half = cplx ? len[1] : len[1] / 2 + 1, padded = len[0] * len[1], spectrum = len[0] * half, batch = r->numel / (n[0] * n[1]);
    if (batch * spectrum > INT32_MAX / 4 || batch * padded > INT32_MAX / 4) {
        snprintf(c->a.why, sizeof c->a.why, "a convolution too large for cuFFT's int sizes");
        return false;
    }
    size_t csz = prec ? 16 : 8, rsz = cplx ? csz : csz / 2; /* rsz: an element of a and the kernel */
    CUdeviceptr xp = scratch(c, rsz * (size_t)(batch * padded)), kp = scratch(c, rsz * (size_t)padded);
    CUdeviceptr xs = scratch(c, csz * (size_t)(batch * spectrum)), ks = scratch(c, csz * (size_t)spectrum);
    CUdeviceptr ys = scratch(c, csz * (size_t)(batch * spectrum));
    if (!xp || !kp || !xs || !ks || !ys) return false;
    /* the kernel as convolved: k itself, or k reversed (a correlation), sent up from the host */
    const void *kernel = k->dev_buf;
    if (correlate) {
        CUdeviceptr kr = scratch(c, rsz * (size_t)k->numel);
        char *rev = kr ? pe_mem_alloc(rsz * (size_t)k->numel) : NULL;
        if (!rev) {
            if (kr) snprintf(c->a.why, sizeof c->a.why, "out of memory"), c->a.code = PE_E_NOMEM;
            return false;
        }
        for (int64_t i = 0; i < k->numel; i++) { /* reversed along both axes: the flat order reversed */
            memcpy(rev + rsz * (size_t)i, (const char *)k->buf + rsz * (size_t)(k->numel - 1 - i), rsz);
            if (cplx && prec) ((double *)rev)[2 * i + 1] = -((double *)rev)[2 * i + 1]; /* conjugated */
            else if (cplx) ((float *)rev)[2 * i + 1] = -((float *)rev)[2 * i + 1];
        }
        CUresult cr = pe_cuda_api_in_use->cuMemcpyHtoDAsync(kr, rev, rsz * (size_t)k->numel, c->g->stream);
        pe_mem_free(rev, rsz * (size_t)k->numel); /* pageable memory: the driver took the bytes */
        if (cr != PE_CUDA_SUCCESS) {
            pe_cuda_disable(c->g, "a copy to the GPU failed", cr);
            snprintf(c->a.why, sizeof c->a.why, "the GPU failed copying a kernel");
            return false;
        }
        kernel = ptr(kr);
    }
    /* padded copies: rows of n[1] into rows of len[1] (column-major: n[1] x rows, ld len[1]) */
    if (!memset_ok(c, xp, rsz * (size_t)(batch * padded)) || !memset_ok(c, kp, rsz * (size_t)padded)) return false;
    int rows = (int)(rank == 2 ? n[0] : batch); /* one copy per image; 1-d: the batch's rows in one */
    for (int64_t b = 0; b < (rank == 2 ? batch : 1); b++)
        if (!copy_rows(c, blas, h, (const char *)x->dev_buf + rsz * (size_t)(b * n[0] * n[1]), (int)n[1],
                       (char *)ptr(xp) + rsz * (size_t)(b * padded), (int)len[1], rows, (int)n[1]))
            return false;
    if (!copy_rows(c, blas, h, kernel, (int)kn[1], ptr(kp), (int)len[1], (int)kn[0], (int)kn[1])) return false;
    int lengths[2] = {(int)len[2 - rank], (int)len[1]};
    cufftHandle fwd, kern, back;
    int c2c = prec ? PE_CUFFT_Z2Z : PE_CUFFT_C2C;
    int r2c = cplx ? c2c : prec ? PE_CUFFT_D2Z : PE_CUFFT_R2C, c2r = cplx ? c2c : prec ? PE_CUFFT_Z2D : PE_CUFFT_C2R;
    if (!fft_plan(c, ff, r2c, rank, lengths, (int)batch, &fwd) ||
        !lib_ok(c, forward(ff, fwd, cplx, prec, ptr(xp), ptr(xs)), "cuFFT's forward transform") ||
        !fft_plan(c, ff, r2c, rank, lengths, 1, &kern) ||
        !lib_ok(c, forward(ff, kern, cplx, prec, ptr(kp), ptr(ks)), "cuFFT's forward transform"))
        return false;
    scalar scale = scalar_of(prec, 1.0 / (double)padded);
    if (!lib_ok(c, blas->scal[prec](h, (int)(2 * spectrum), &scale, ptr(ks), 1), "cuBLAS scal") ||
        !lib_ok(c, blas->dgmm[prec](h, PE_CUBLAS_SIDE_LEFT, (int)spectrum, (int)batch, ptr(xs), (int)spectrum, ptr(ks), 1,
                                    ptr(ys), (int)spectrum),
                "cuBLAS dgmm"))
        return false;
    if (!fft_plan(c, ff, c2r, rank, lengths, (int)batch, &back) ||
        !lib_ok(c, inverse(ff, back, cplx, prec, ptr(ys), ptr(xp)), "cuFFT's inverse transform"))
        return false;
    /* the "same" window: rows off[0].., columns off[1].. of the full convolution */
    for (int64_t b = 0; b < (rank == 2 ? batch : 1); b++)
        if (!copy_rows(c, blas, h, (const char *)ptr(xp) + rsz * (size_t)(b * padded + off[0] * len[1] + off[1]),
                       (int)len[1], (char *)out + rsz * (size_t)(b * n[0] * n[1]), (int)n[1], rows, (int)n[1]))
            return false;
    return true;
}

/* The libraries a call needs. */
enum { NEEDS_BLAS = 1, NEEDS_SOLVER = 2, NEEDS_SPARSE = 4, NEEDS_FFT = 8 };

/* The GPU's handles for the libraries in `needs`, made once (on its stream
 * 0); a library that loaded but makes no handle turns the GPU off. */
#define MAKE_HANDLE(api, field, what)                                                            \
    if ((api) && !g->field && ((api)->create(&g->field) != 0 || (api)->set_stream(g->field, g->stream) != 0)) { \
        if (g->field) (api)->destroy(g->field);                                                  \
        g->field = NULL;                                                                         \
        pe_cuda_disable(g, what " failed", PE_CUDA_SUCCESS);                                     \
        return false;                                                                            \
    }
static bool handles(cuda_gpu *g, int needs)
{
    const pe_cublas_api *blas = needs & NEEDS_BLAS ? pe_cublas() : NULL;
    const pe_cusolver_api *sol = needs & NEEDS_SOLVER ? pe_cusolver() : NULL;
    const pe_cusparse_api *sp = needs & NEEDS_SPARSE ? pe_cusparse() : NULL;
    if (((needs & NEEDS_BLAS) && !blas) || ((needs & NEEDS_SOLVER) && !sol) || ((needs & NEEDS_SPARSE) && !sp) ||
        ((needs & NEEDS_FFT) && !pe_cufft())) /* cuFFT has no handle: its plans are made per call (fft_plan) */
        return false;
    MAKE_HANDLE(blas, blas, "cublasCreate")
    MAKE_HANDLE(sol, solver, "cusolverDnCreate")
    MAKE_HANDLE(sp, sparse, "cusparseCreate")
    return true;
}
#undef MAKE_HANDLE

void pe_cuda_release_handles(cuda_gpu *g)
{
    if (g->blas) pe_cublas()->destroy(g->blas);
    if (g->solver) pe_cusolver()->destroy(g->solver);
    if (g->sparse) pe_cusparse()->destroy(g->sparse);
    release_fft_plans(g);
    g->blas = NULL, g->solver = NULL, g->sparse = NULL;
}

/* ------------------------------------------------------- the GPU's slots */

/* Each operand where the body reads it: on the device, or its host copy
 * (a bit per operand in on_host), none for those in skip; -1 where one
 * cannot be placed (the host's path decides), else 1. */
static int place(call *c, unsigned on_host, unsigned skip)
{
    for (int k = 0; k < c->p->n_bind; k++) {
        pe_port *q = c->a.in[k];
        if ((skip >> k) & 1u) continue;
        if ((on_host >> k) & 1u ? !pe_port_host(q) : !pe_cuda_to_device(c->g, q, c->keep, c->p->n_bind)) return -1;
    }
    return 1;
}

static int on_device(call *c) { return place(c, 0, 0); }

/* the arrays: alpha and beta are values; an empty sum is the host's beta * c */
static int matmul_operands(call *c)
{
    pe_matmul_shape s;
    pe_blas_matmul_shape(&c->a, &s);
    if (s.k == 0) return -1;
    unsigned skip = 0;
    for (int k = 2; k < c->p->n_bind; k++)
        if (c->a.in[k] != s.c) skip |= 1u << k;
    return place(c, 0, skip);
}

static int lu_solve_operands(call *c) { return place(c, 1u << 1, 0); } /* the pivots are read on the host */

/* the structure checked first (csr_check): its fault is the CPU's error, at
 * pe_spmv's line, and the GPU never reads the indices */
static int spmv_operands(call *c)
{
    int checked = csr_check(c);
    return checked <= 0 ? checked : on_device(c);
}

static int conv_fft_operands(call *c) /* a correlation's kernel: reversed on the host */
{
    return place(c, c->members[0]->param[1] != 0 ? 1u << 1 : 0, 0);
}

/* What the GPU does for an intrinsic op: which libraries its body calls,
 * whose dtype picks their row (pe_cuda_lib_kind: operand k, or the first
 * member's), its limits beyond the host's checks (pe_intrinsic_fits, which
 * every call passes first), its operands placed (1: go on; 0: the call
 * failed, the caller's error in c->a; -1: the host's path decides), its
 * body.  needs 0: no body here, the host makes the call wherever the batch
 * runs (its operands copied down). */
enum { KIND_OF_MEMBER = -1 };
typedef struct {
    int needs;
    int kind_of;
    bool (*fits)(const pe_intrinsic_args *a);
    int (*operands)(call *c);
    bool (*body)(call *c);
} cuda_slot;

/* One slot per row of irformat/ops_intrinsic.def (a row without its
 * CUDA_<op> here does not compile), indexed by the call's first member's op. */
#define ON_HOST             {0, 0, NULL, NULL, NULL}
#define CUDA_matmul         {NEEDS_BLAS, 0, NULL, matmul_operands, matmul}
#define CUDA_lu             {NEEDS_BLAS | NEEDS_SOLVER, 0, NULL, on_device, lu}
#define CUDA_lu_pivots      CUDA_lu
#define CUDA_lu_solve       {NEEDS_BLAS | NEEDS_SOLVER, 0, NULL, lu_solve_operands, lu_solve}
#define CUDA_lu_cond        ON_HOST /* cuSOLVER has no gecon */
#define CUDA_lu_permutation ON_HOST /* a loop over the pivots */
#define CUDA_spmv           {NEEDS_SPARSE, 1, spmv_on_cusparse, spmv_operands, spmv} /* in[0]: i32 structure */
#define CUDA_fft            {NEEDS_FFT | NEEDS_BLAS, KIND_OF_MEMBER, fft_sizes_fit, on_device, fft} /* a: maybe real */
#define CUDA_ifft           CUDA_fft
#define CUDA_conv_fft       {NEEDS_FFT | NEEDS_BLAS, 0, fft_sizes_fit, conv_fft_operands, conv_fft}
/* the order ops (scans, sorts, bins): made on the host (exec/intrinsics/scan.c, sort.c, bins.c) until
 * this folder has their kernels */
#define CUDA_cumsum         ON_HOST
#define CUDA_cumprod        ON_HOST
#define CUDA_sort           ON_HOST
#define CUDA_argsort        ON_HOST
#define CUDA_histogram      ON_HOST
#define CUDA_bincount       ON_HOST
#define CUDA_scatter_add    ON_HOST
static const cuda_slot slots[PE_OP__COUNT] = {
#define PE_OP_INTRINSIC(name, fits, host, reference) [PE_OP_##name] = CUDA_##name,
#include "../../irformat/ops_intrinsic.def"
};

static const cuda_slot *slot_of(const pe_program *p) { return &slots[pe_port_at(p->members[0])->op]; }

bool pe_cuda_calls(pe_executor *ex, const pe_program *p)
{
    (void)ex;
    int needs = slot_of(p)->needs;
    if (!needs) return true; /* made on the host wherever the batch runs */
    /* each library the call needs tried (a missing one warns once), though one missing suffices */
    bool blas = !(needs & NEEDS_BLAS) || pe_cublas() != NULL, sol = !(needs & NEEDS_SOLVER) || pe_cusolver() != NULL;
    bool sparse = !(needs & NEEDS_SPARSE) || pe_cusparse() != NULL, fft = !(needs & NEEDS_FFT) || pe_cufft() != NULL;
    return blas && sol && sparse && fft;
}

int pe_cuda_intrinsic(cuda_gpu *g, const pe_program *p)
{
    if (p->n_members < 1 || p->n_members > 4 || p->n_bind > 5) return -1;
    const cuda_slot *slot = slot_of(p);
    if (!slot->needs) return -1; /* made on the host */
    call c = {.g = g, .p = p};
    c.a = (pe_intrinsic_args){.members = c.members, .n_members = p->n_members, .n_in = p->n_bind, .flags = p->flags,
                              .code = PE_OK}; /* PE_OK on failure: the library's, not the caller's */
    for (int m = 0; m < p->n_members; m++) c.members[m] = pe_port_at(p->members[m]);
    for (int k = 0; k < p->n_bind; k++) {
        pe_port *q = c.a.in[k] = pe_port_at(p->bind[k]);
        c.keep[k] = p->bind[k];
        if (q->state == PE_PORT_INVALID) { /* the host's way: the members inherit it */
            for (int m = 0; m < p->n_members; m++) pe_port_inherit_invalid(c.members[m], q);
            pe_intrinsic_finish(p);
            return 0;
        }
        if (q->state != PE_PORT_READY) return -1; /* no value yet: the host's path decides */
    }
    if (!pe_intrinsic_fits(&c.a) || (slot->fits && !slot->fits(&c.a))) return -1;
    const pe_port *typed = slot->kind_of == KIND_OF_MEMBER ? c.members[0] : c.a.in[slot->kind_of];
    c.kind = pe_cuda_lib_kind((pe_dtype)typed->dtype);
    if (c.kind < 0 || !handles(g, slot->needs)) return -1;
    int placed = slot->operands(&c);
    if (placed < 0) return -1;
    if (placed == 0) { /* the caller's error, found before any library call */
        pe_intrinsic_account(p, &c.a, pe_prof_on ? pe_prof_now() : 0);
        pe_intrinsic_fail(p, c.a.code, c.a.why);
        pe_intrinsic_finish(p);
        return 0;
    }
    if (!results_on_device(&c)) {
        drop_results(&c);
        return -1;
    }
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    bool ok = slot->body(&c);
    for (int i = 0; i < c.n_scratch; i++) pe_cuda_device_free(g, c.scratch[i], c.scratch_bytes[i]); /* deferred */
    if (!ok && c.a.code == PE_OK) { /* the library failed, not the call: the host makes it */
        pe_log_message(PE_LOG_WARN, "%s; the CPU computes this call", c.a.why);
        drop_results(&c);
        return -1;
    }
    pe_intrinsic_account(p, &c.a, t0);
    int computed = 0;
    if (!ok) {
        drop_results(&c);
        pe_intrinsic_fail(p, c.a.code, c.a.why);
    } else {
        for (int m = 0; m < p->n_members; m++) {
            pe_port *q = c.members[m];
            q->state = PE_PORT_READY;
            if (q->dev_buf) q->host_stale = true;
            computed++;
        }
    }
    pe_intrinsic_finish(p);
    return computed;
}
