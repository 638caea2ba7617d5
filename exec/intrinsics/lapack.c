/* lapack.c — the LU family on LAPACKE (row-major, on the operands' host
 * buffers):
 *   lu + lu_pivots   getrf: P a = L U, L unit lower and U packed in one
 *                    n x n array; pivots 0-based (row i was interchanged
 *                    with row pivots[i], in order i = 0 .. n-1); one call
 *                    fills both.  A zero pivot (a singular matrix) makes both
 *                    invalid (PE_E_ARG) at pe_lu's line;
 *   lu_solve         getrs on a copy of b (n, or n x k);
 *   lu_cond          1 / gecon's estimate of 1 / (||a||_1 ||a^-1||_1), where
 *                    ||a||_1 is the 1-norm of L U (a row permutation keeps
 *                    column sums) computed from the factors with one trmm
 *                    (n^3 / 3 multiply-adds: about half a factorisation);
 *   lu_permutation   P from the pivots.
 * One row of `kinds` per dtype: PE_C64 / PE_C128 are a row each
 * (LAPACKE_cgetrf/zgetrf, cgetrs, cgecon, clange, cblas_ctrmm); a complex
 * matrix's lu_cond is real (its parts' dtype), its permutation complex.
 * LAPACKE (and OpenBLAS, whose LAPACK it calls) is loaded at the first
 * factorisation, solve or condition number (libs.c); without it the call
 * fails at the user's line, naming the package. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrinsics.h"
#include "libs.h"

/* The loaded libraries a call goes through. */
typedef struct {
    const pe_lapacke_api *lapacke;
    const pe_blas_api *blas;
} libs;

/* T: the element; R: its real part (lange's and gecon's norms); ONE: what
 * trmm takes for alpha = 1 (a value for the real rows, an address for the
 * complex ones). */
#define KIND(p, T, R, ONE)                                                                                \
    static lapack_int p##getrf(const libs *L, lapack_int n, void *a, lapack_int *ipiv)                                   \
    {                                                                                                     \
        return L->lapacke->LAPACKE_##p##getrf(LAPACK_ROW_MAJOR, n, n, (T *)a, n, ipiv);                               \
    }                                                                                                     \
    static lapack_int p##getrs(const libs *L, lapack_int n, lapack_int nrhs, const void *lu, const lapack_int *ipiv, void *b) \
    {                                                                                                     \
        return L->lapacke->LAPACKE_##p##getrs(LAPACK_ROW_MAJOR, 'N', n, nrhs, (const T *)lu, n, ipiv, (T *)b, nrhs);  \
    }                                                                                                     \
    static double p##cond(const libs *L, lapack_int n, const void *lu, void *work)                                       \
    {                                                                                                     \
        T *w = work; /* L U: U's triangle, then L (unit lower) from the left */                          \
        const T *f = lu;                                                                                  \
        const T one = 1;                                                                                  \
        (void)one;                                                                                        \
        for (lapack_int i = 0; i < n; i++)                                                                \
            for (lapack_int j = 0; j < n; j++) w[i * n + j] = j >= i ? f[i * n + j] : 0;                  \
        L->blas->cblas_##p##trmm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, n, n, ONE, f, n, w, n); \
        R anorm = L->lapacke->LAPACKE_##p##lange(LAPACK_ROW_MAJOR, '1', n, n, w, n), rcond = 0;                       \
        if (L->lapacke->LAPACKE_##p##gecon(LAPACK_ROW_MAJOR, '1', n, f, n, anorm, &rcond) != 0) return NAN;           \
        return rcond > 0 ? 1 / (double)rcond : INFINITY;                                                  \
    }
KIND(s, float, float, 1)
KIND(d, double, double, 1)
KIND(c, lapack_complex_float, float, &one)
KIND(z, lapack_complex_double, double, &one)

static const struct {
    pe_dtype dtype;
    lapack_int (*getrf)(const libs *L, lapack_int n, void *a, lapack_int *ipiv);
    lapack_int (*getrs)(const libs *L, lapack_int n, lapack_int nrhs, const void *lu, const lapack_int *ipiv, void *b);
    double (*cond)(const libs *L, lapack_int n, const void *lu, void *work);
} kinds[] = {
    {PE_F32, sgetrf, sgetrs, scond},
    {PE_F64, dgetrf, dgetrs, dcond},
    {PE_C64, cgetrf, cgetrs, ccond},
    {PE_C128, zgetrf, zgetrs, zcond},
};

static int kind_of(pe_dtype t)
{
    for (int i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++)
        if (kinds[i].dtype == t) return i;
    return -1;
}

/* The libraries loaded, or false with the call's error (the library and its package). */
static bool loaded(pe_intrinsic_args *a, libs *L)
{
    L->lapacke = pe_lapacke(a->why, sizeof a->why);
    L->blas = L->lapacke ? pe_blas(a->why, sizeof a->why) : NULL;
    if (!L->blas) a->code = PE_E_DEVICE;
    return L->blas != NULL;
}

static bool square(const pe_port *p, int64_t n) { return p->rank == 2 && p->shape[0] == n && p->shape[1] == n; }
static bool pivots_of(const pe_port *p, int64_t n) { return p->dtype == PE_I32 && p->rank == 1 && p->shape[0] == n; }

bool pe_lapack_fits(pe_intrinsic_args *a)
{
    const pe_port *m0 = a->members[0], *x = a->in[0];
    int64_t n = x->shape[0];
    if (a->n_in < 1 || x->rank < 1 || n > INT32_MAX) return false;
    switch ((pe_op)m0->op) {
    case PE_OP_lu:
    case PE_OP_lu_pivots:
        if (a->n_in != 1 || !square(x, n) || kind_of((pe_dtype)x->dtype) < 0 || a->n_members > 2) return false;
        for (int m = 0; m < a->n_members; m++) {
            const pe_port *q = a->members[m];
            bool ok = q->op == PE_OP_lu ? square(q, n) && q->dtype == x->dtype : q->op == PE_OP_lu_pivots && pivots_of(q, n);
            if (!ok || (m == 1 && q->op == m0->op)) return false;
        }
        return true;
    case PE_OP_lu_solve:
        return a->n_in == 3 && a->n_members == 1 && square(x, n) && kind_of((pe_dtype)x->dtype) >= 0 &&
               pivots_of(a->in[1], n) && a->in[2]->dtype == x->dtype && (a->in[2]->rank == 1 || a->in[2]->rank == 2) &&
               a->in[2]->shape[0] == n && m0->dtype == x->dtype && m0->numel == a->in[2]->numel &&
               m0->rank == a->in[2]->rank;
    case PE_OP_lu_cond:
        return a->n_in == 2 && a->n_members == 1 && square(x, n) && kind_of((pe_dtype)x->dtype) >= 0 &&
               pivots_of(a->in[1], n) && m0->dtype == pe_dtype_real_part((pe_dtype)x->dtype) && m0->numel == 1;
    case PE_OP_lu_permutation:
        return a->n_in == 1 && a->n_members == 1 && pivots_of(x, n) && square(m0, n) && kind_of((pe_dtype)m0->dtype) >= 0;
    default:
        return false;
    }
}

/* Whether every pivot names a row at or after its own (a trace file's operand may lie). */
bool pe_lapack_valid_pivots(const pe_port *p, pe_intrinsic_args *a)
{
    for (int64_t i = 0; i < p->numel; i++) {
        int32_t v = ((const int32_t *)p->buf)[i];
        if (v < i || v >= p->numel) {
            snprintf(a->why, sizeof a->why, "pivots[%lld] = %d is not a row at or after %lld", (long long)i, v, (long long)i);
            a->code = PE_E_ARG;
            return false;
        }
    }
    return true;
}

/* LAPACK's 1-based pivots from PE's 0-based ones. */
static lapack_int *lapack_pivots(const pe_port *p, pe_intrinsic_args *a)
{
    if (!pe_lapack_valid_pivots(p, a)) return NULL;
    lapack_int *ipiv = malloc(sizeof *ipiv * (size_t)(p->numel ? p->numel : 1));
    for (int64_t i = 0; ipiv && i < p->numel; i++) ipiv[i] = ((const int32_t *)p->buf)[i] + 1;
    if (!ipiv) snprintf(a->why, sizeof a->why, "out of memory"), a->code = PE_E_NOMEM;
    return ipiv;
}

bool pe_lapack_lu(pe_intrinsic_args *a)
{
    const pe_port *x = a->in[0];
    int64_t n = x->shape[0];
    size_t bytes = pe_port_bytes(x);
    void *lu = NULL, *scratch = NULL;
    int32_t *pivots = NULL;
    libs L;
    if (!loaded(a, &L)) return false;
    for (int m = 0; m < a->n_members; m++) {
        if (a->members[m]->op == PE_OP_lu) lu = a->out[m];
        else pivots = a->out[m];
    }
    if (!lu) lu = scratch = malloc(bytes ? bytes : 1); /* only the pivots are wanted */
    lapack_int *ipiv = malloc(sizeof *ipiv * (size_t)(n ? n : 1));
    bool ok = lu && ipiv;
    if (!ok) snprintf(a->why, sizeof a->why, "out of memory"), a->code = PE_E_NOMEM;
    lapack_int info = 0;
    if (ok && n > 0) {
        memcpy(lu, x->buf, bytes);
        info = kinds[kind_of((pe_dtype)x->dtype)].getrf(&L, (lapack_int)n, lu, ipiv);
    }
    if (ok && info != 0) {
        ok = false;
        a->code = PE_E_ARG;
        if (info > 0) snprintf(a->why, sizeof a->why, "the matrix is singular: U[%d][%d] is exactly zero", (int)info - 1, (int)info - 1);
        else snprintf(a->why, sizeof a->why, "getrf refused argument %d", (int)-info);
    }
    for (int64_t i = 0; ok && pivots && i < n; i++) pivots[i] = (int32_t)(ipiv[i] - 1);
    free(ipiv);
    free(scratch);
    return ok;
}

bool pe_lapack_lu_solve(pe_intrinsic_args *a)
{
    const pe_port *lu = a->in[0], *b = a->in[2];
    int64_t n = lu->shape[0], nrhs = b->rank == 1 ? 1 : b->shape[1];
    libs L;
    if (!loaded(a, &L)) return false;
    if (!a->out[0]) return true;
    memcpy(a->out[0], b->buf, pe_port_bytes(b));
    if (n == 0 || nrhs == 0) return true;
    lapack_int *ipiv = lapack_pivots(a->in[1], a);
    if (!ipiv) return false;
    lapack_int info = kinds[kind_of((pe_dtype)lu->dtype)].getrs(&L, (lapack_int)n, (lapack_int)nrhs, lu->buf, ipiv, a->out[0]);
    free(ipiv);
    if (info != 0) snprintf(a->why, sizeof a->why, "getrs refused argument %d", (int)-info), a->code = PE_E_ARG;
    return info == 0;
}

bool pe_lapack_lu_cond(pe_intrinsic_args *a)
{
    const pe_port *lu = a->in[0];
    int64_t n = lu->shape[0];
    libs L;
    if (!loaded(a, &L)) return false;
    if (!a->out[0]) return true;
    void *work = malloc(pe_port_bytes(lu) ? pe_port_bytes(lu) : 1);
    if (!work) {
        snprintf(a->why, sizeof a->why, "out of memory"), a->code = PE_E_NOMEM;
        return false;
    }
    double cond = n == 0 ? 0 : kinds[kind_of((pe_dtype)lu->dtype)].cond(&L, (lapack_int)n, lu->buf, work);
    free(work);
    if (a->members[0]->dtype == PE_F32) *(float *)a->out[0] = (float)cond;
    else *(double *)a->out[0] = cond;
    return true;
}

bool pe_lapack_lu_permutation(pe_intrinsic_args *a)
{
    const pe_port *piv = a->in[0];
    int64_t n = piv->numel;
    if (!a->out[0]) return true;
    if (!pe_lapack_valid_pivots(piv, a)) return false;
    int64_t *perm = malloc(sizeof *perm * (size_t)(n ? n : 1));
    if (!perm) {
        snprintf(a->why, sizeof a->why, "out of memory"), a->code = PE_E_NOMEM;
        return false;
    }
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = 0; i < n; i++) { /* row i of P a is row perm[i] of a */
        int32_t r = ((const int32_t *)piv->buf)[i];
        int64_t t = perm[i];
        perm[i] = perm[r], perm[r] = t;
    }
    pe_dtype t = (pe_dtype)a->members[0]->dtype;
    memset(a->out[0], 0, pe_dtype_size(t) * (size_t)(n * n));
    for (int64_t i = 0; i < n; i++) { /* a complex 1 is its real part 1 (an imaginary part of 0 is all zero bits) */
        if (pe_dtype_real_part(t) == PE_F32) ((float *)a->out[0])[(i * n + perm[i]) * (pe_dtype_is_complex(t) ? 2 : 1)] = 1;
        else ((double *)a->out[0])[(i * n + perm[i]) * (pe_dtype_is_complex(t) ? 2 : 1)] = 1;
    }
    free(perm);
    return true;
}
