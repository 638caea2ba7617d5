/* blas.c — matmul on OpenBLAS's cblas: C = alpha * op(A) op(B) + beta * C
 * in one gemm (2-d x 2-d) or gemv (2-d x 1-d), row-major on the operands'
 * host buffers.  op(X) is X, or its transpose where the operand is a plain
 * transpose of a stored array (PE_INTR_TRANS_A/B: CblasTrans reads the
 * array in place); alpha, beta and C are those of an epilogue the program
 * generator fused into the call (jit/proggen/intrinsic_plan.c).  One row of
 * `kinds` per dtype: PE_C64 / PE_C128 are a row each (cblas_cgemm/zgemm and
 * cgemv/zgemv take alpha and beta by address; their elements are C99's
 * float complex / double complex, PE's layout).  The program generator
 * fuses no epilogue into a complex product (a complex constant has no
 * single value to bind), so alpha and beta there are 1 and 0.  OpenBLAS is
 * loaded at the first product (libs.c); without it the call fails at the
 * user's line, naming the package. */
#include <complex.h>
#include <limits.h>
#include <string.h>

#include "intrinsics.h"
#include "libs.h"

typedef void (*gemm_fn)(const pe_blas_api *L, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const void *alpha, const void *a,
                        int lda, const void *b, int ldb, const void *beta, void *c, int ldc);
typedef void (*gemv_fn)(const pe_blas_api *L, CBLAS_TRANSPOSE ta, int rows, int cols, const void *alpha, const void *a, int lda,
                        const void *x, const void *beta, void *y);

static void sgemm(const pe_blas_api *L, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const void *alpha, const void *a, int lda,
                  const void *b, int ldb, const void *beta, void *c, int ldc)
{
    L->cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, *(const float *)alpha, a, lda, b, ldb, *(const float *)beta, c, ldc);
}
static void dgemm(const pe_blas_api *L, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const void *alpha, const void *a, int lda,
                  const void *b, int ldb, const void *beta, void *c, int ldc)
{
    L->cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, *(const double *)alpha, a, lda, b, ldb, *(const double *)beta, c, ldc);
}
static void sgemv(const pe_blas_api *L, CBLAS_TRANSPOSE ta, int rows, int cols, const void *alpha, const void *a, int lda, const void *x,
                  const void *beta, void *y)
{
    L->cblas_sgemv(CblasRowMajor, ta, rows, cols, *(const float *)alpha, a, lda, x, 1, *(const float *)beta, y, 1);
}
static void dgemv(const pe_blas_api *L, CBLAS_TRANSPOSE ta, int rows, int cols, const void *alpha, const void *a, int lda, const void *x,
                  const void *beta, void *y)
{
    L->cblas_dgemv(CblasRowMajor, ta, rows, cols, *(const double *)alpha, a, lda, x, 1, *(const double *)beta, y, 1);
}

/* The complex rows: cblas takes alpha and beta by address. */
#define COMPLEX_KIND(p)                                                                                            \
    static void p##gemm(const pe_blas_api *L, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const void *alpha, const void *a, \
                        int lda, const void *b, int ldb, const void *beta, void *c, int ldc)                       \
    {                                                                                                              \
        L->cblas_##p##gemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);                      \
    }                                                                                                              \
    static void p##gemv(const pe_blas_api *L, CBLAS_TRANSPOSE ta, int rows, int cols, const void *alpha, const void *a, int lda,          \
                        const void *x, const void *beta, void *y)                                                  \
    {                                                                                                              \
        L->cblas_##p##gemv(CblasRowMajor, ta, rows, cols, alpha, a, lda, x, 1, beta, y, 1);                           \
    }
COMPLEX_KIND(c)
COMPLEX_KIND(z)

static const struct {
    pe_dtype dtype;
    gemm_fn gemm;
    gemv_fn gemv;
} kinds[] = {
    {PE_F32, sgemm, sgemv},
    {PE_F64, dgemm, dgemv},
    {PE_C64, cgemm, cgemv},
    {PE_C128, zgemm, zgemv},
};

static int kind_of(pe_dtype t)
{
    for (int i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++)
        if (kinds[i].dtype == t) return i;
    return -1;
}

/* A scalar in the dtype's own representation, for cblas's alpha and beta. */
typedef union {
    float f32;
    double f64;
    float complex c64;
    double complex c128;
} scalar;

static scalar scalar_of(pe_dtype t, double v)
{
    scalar s;
    switch (t) {
    case PE_F32: s.f32 = (float)v; break;
    case PE_C64: s.c64 = (float)v; break;
    case PE_C128: s.c128 = v; break;
    default: s.f64 = v; break;
    }
    return s;
}

/* out[i] *= beta over n elements of the dtype. */
static void scale(pe_dtype t, void *out, int64_t n, scalar beta)
{
    for (int64_t i = 0; i < n; i++) {
        switch (t) {
        case PE_F32: ((float *)out)[i] *= beta.f32; break;
        case PE_C64: ((float complex *)out)[i] *= beta.c64; break;
        case PE_C128: ((double complex *)out)[i] *= beta.c128; break;
        default: ((double *)out)[i] *= beta.f64; break;
        }
    }
}

/* The operand after a, b that flag names (c, alpha, beta in that order), or NULL. */
static pe_port *extra(const pe_intrinsic_args *a, uint8_t flag)
{
    int k = 2;
    static const uint8_t order[3] = {PE_INTR_C, PE_INTR_ALPHA, PE_INTR_BETA};
    for (int i = 0; i < 3; i++) {
        if (order[i] == flag) return a->flags & flag ? a->in[k] : NULL;
        k += (a->flags & order[i]) != 0;
    }
    return NULL;
}

void pe_blas_matmul_shape(const pe_intrinsic_args *a, pe_matmul_shape *s)
{
    const pe_port *x = a->in[0], *y = a->in[1];
    bool ta = a->flags & PE_INTR_TRANS_A, tb = a->flags & PE_INTR_TRANS_B;
    const pe_port *alpha = extra(a, PE_INTR_ALPHA), *beta = extra(a, PE_INTR_BETA);
    s->m = x->shape[ta ? 1 : 0], s->k = x->shape[ta ? 0 : 1];
    s->vector = y->rank == 1;
    s->n = s->vector ? 1 : y->shape[tb ? 0 : 1];
    s->c = extra(a, PE_INTR_C);
    s->alpha = alpha ? alpha->value : 1;
    s->beta = s->c ? (beta ? beta->value : 1) : 0;
}

bool pe_blas_matmul_fits(pe_intrinsic_args *a)
{
    const pe_port *prod = a->members[0], *result = a->members[a->n_members - 1];
    pe_dtype t = (pe_dtype)prod->dtype;
    int expected = 2 + !!(a->flags & PE_INTR_C) + !!(a->flags & PE_INTR_ALPHA) + !!(a->flags & PE_INTR_BETA);
    if (kind_of(t) < 0 || a->n_in != expected || a->in[0]->rank != 2 || (a->in[1]->rank != 1 && a->in[1]->rank != 2) ||
        a->in[0]->dtype != t || a->in[1]->dtype != t || result->dtype != t || result->numel != prod->numel ||
        ((a->flags & PE_INTR_TRANS_B) && a->in[1]->rank != 2))
        return false;
    pe_matmul_shape s;
    pe_blas_matmul_shape(a, &s);
    bool tb = a->flags & PE_INTR_TRANS_B;
    int64_t m = s.m, k = s.k, n = s.n, k_b = a->in[1]->shape[a->in[1]->rank == 2 && tb ? 1 : 0];
    if (k != k_b || prod->rank != a->in[1]->rank || prod->shape[0] != m || (prod->rank == 2 && prod->shape[1] != n))
        return false;
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX) return false; /* a 32-bit BLAS: the interpreter takes it */
    const pe_port *c = extra(a, PE_INTR_C), *alpha = extra(a, PE_INTR_ALPHA), *beta = extra(a, PE_INTR_BETA);
    if (c && (c->dtype != t || c->numel != prod->numel)) return false;
    return (!alpha || alpha->numel == 1) && (!beta || beta->numel == 1);
}

bool pe_blas_matmul(pe_intrinsic_args *a)
{
    pe_dtype t = (pe_dtype)a->members[0]->dtype;
    int kind = kind_of(t);
    void *out = a->out[a->n_members - 1];
    const pe_port *x = a->in[0], *y = a->in[1];
    pe_matmul_shape s;
    pe_blas_matmul_shape(a, &s);
    const pe_port *c = s.c;
    scalar alpha = scalar_of(t, s.alpha), beta = scalar_of(t, s.beta);
    int64_t m = s.m, k = s.k, n = s.n;
    size_t bytes = pe_dtype_size(t) * (size_t)(m * n);
    const pe_blas_api *L = pe_blas(a->why, sizeof a->why);
    if (!L) {
        a->code = PE_E_DEVICE;
        return false;
    }
    if (!out || m == 0 || n == 0) return true;
    if (c) memcpy(out, c->buf, bytes);
    else memset(out, 0, bytes); /* beta = 0: cblas never reads it, but k = 0 leaves it as it is */
    if (k == 0) { /* an empty sum: beta * c */
        if (c) scale(t, out, m * n, beta);
        return true;
    }
    bool ta = a->flags & PE_INTR_TRANS_A, tb = a->flags & PE_INTR_TRANS_B;
    int lda = (int)x->shape[1];
    if (y->rank == 1)
        kinds[kind].gemv(L, ta ? CblasTrans : CblasNoTrans, (int)x->shape[0], (int)x->shape[1], &alpha, x->buf, lda, y->buf,
                         &beta, out);
    else
        kinds[kind].gemm(L, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, &alpha,
                         x->buf, lda, y->buf, (int)y->shape[1], &beta, out, (int)n);
    return true;
}

void pe_intrinsics_set_threads(int threads) { pe_blas_set_threads(threads); }
