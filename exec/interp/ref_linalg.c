/* ref_linalg.c — the reference interpreter's intrinsics: matmul, the LU
 * family and spmv (a CSR matrix's structure checked first, pe_csr_fault) as
 * the textbook loops, in long double, one port at a time (an lu
 * and its lu_pivots each factor the matrix again).  No library: this is the
 * oracle the library calls (exec/intrinsics) are checked against (PE_CHECK,
 * pe_reference, and the fallback where a call cannot run).  The LU is
 * right-looking with partial pivoting on the first largest |a[i][j]|, the
 * order of LAPACK's getrf, so pivots agree but for near ties; lu_cond is
 * the exact ||a||_1 ||a^-1||_1 (the library's is gecon's estimate).
 * Complex matrices (PE_C64, PE_C128) take the same loops in long double
 * complex: the pivot is the largest |re| + |im| (LAPACK's icamax, not the
 * modulus), the norms are of the modulus (clange's). */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_linalg.h"
#include "refmath.h" /* CMPLX where <complex.h> lacks it */

typedef long double complex value; /* every element, real ones with no imaginary part */

long double complex pe_ref_element(const pe_port *p, int64_t i)
{
    if (!p->buf) return p->value; /* a uniform constant */
    switch ((pe_dtype)p->dtype) {
    case PE_F32: return ((const float *)p->buf)[i];
    case PE_F64: return ((const double *)p->buf)[i];
    case PE_I32: return ((const int32_t *)p->buf)[i];
    case PE_BOOL: return ((const unsigned char *)p->buf)[i];
    case PE_C64: return ((const float complex *)p->buf)[i];
    case PE_C128: return ((const double complex *)p->buf)[i];
    default: return NAN;
    }
}

void pe_ref_store(pe_port *p, int64_t i, long double complex v)
{
    switch ((pe_dtype)p->dtype) {
    case PE_F32: ((float *)p->buf)[i] = (float)creall(v); break;
    case PE_F64: ((double *)p->buf)[i] = (double)creall(v); break;
    case PE_I32: ((int32_t *)p->buf)[i] = (int32_t)creall(v); break;
    case PE_C64: ((float complex *)p->buf)[i] = CMPLXF((float)creall(v), (float)cimagl(v)); break;
    case PE_C128: ((double complex *)p->buf)[i] = CMPLX((double)creall(v), (double)cimagl(v)); break;
    default: break;
    }
}

/* The pivot's measure: |re| + |im| (LAPACK's i?amax; |x| for a real x). */
static long double magnitude1(value v) { return fabsl(creall(v)) + fabsl(cimagl(v)); }

static bool no_memory(char *why, size_t n_why, pe_status *code)
{
    snprintf(why, n_why, "out of memory");
    *code = PE_E_NOMEM;
    return false;
}

/* a's factors in place (n x n, row-major) and its pivots; false, with why,
 * at the first zero pivot. */
static bool factor(value *a, int64_t n, int64_t *piv, char *why, size_t n_why, pe_status *code)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t p = j;
        for (int64_t i = j + 1; i < n; i++)
            if (magnitude1(a[i * n + j]) > magnitude1(a[p * n + j])) p = i;
        piv[j] = p;
        for (int64_t k = 0; k < n && p != j; k++) {
            value t = a[j * n + k];
            a[j * n + k] = a[p * n + k], a[p * n + k] = t;
        }
        if (a[j * n + j] == 0) {
            snprintf(why, n_why, "the matrix is singular: U[%lld][%lld] is exactly zero", (long long)j, (long long)j);
            *code = PE_E_ARG;
            return false;
        }
        for (int64_t i = j + 1; i < n; i++) {
            value l = a[i * n + j] /= a[j * n + j];
            for (int64_t k = j + 1; k < n; k++) a[i * n + k] -= l * a[j * n + k];
        }
    }
    return true;
}

/* x (n x nrhs) := a^-1 x from the factors. */
static void solve(const value *f, const int64_t *piv, int64_t n, value *x, int64_t nrhs)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < nrhs && piv[i] != i; c++) {
            value t = x[i * nrhs + c];
            x[i * nrhs + c] = x[piv[i] * nrhs + c], x[piv[i] * nrhs + c] = t;
        }
    for (int64_t c = 0; c < nrhs; c++) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < i; k++) x[i * nrhs + c] -= f[i * n + k] * x[k * nrhs + c];
        for (int64_t i = n; i-- > 0;) {
            for (int64_t k = i + 1; k < n; k++) x[i * nrhs + c] -= f[i * n + k] * x[k * nrhs + c];
            x[i * nrhs + c] /= f[i * n + i];
        }
    }
}

/* Pivots of the port (0-based, each a row at or after its own). */
static bool read_pivots(const pe_port *p, int64_t *piv, char *why, size_t n_why, pe_status *code)
{
    for (int64_t i = 0; i < p->numel; i++) {
        piv[i] = (int64_t)creall(pe_ref_element(p, i));
        if (piv[i] < i || piv[i] >= p->numel) {
            snprintf(why, n_why, "pivots[%lld] = %lld is not a row at or after %lld", (long long)i, (long long)piv[i], (long long)i);
            *code = PE_E_ARG;
            return false;
        }
    }
    return true;
}

static value *load_all(const pe_port *p)
{
    value *a = malloc(sizeof *a * (size_t)(p->numel ? p->numel : 1));
    for (int64_t i = 0; a && i < p->numel; i++) a[i] = pe_ref_element(p, i);
    return a;
}

static void matmul(pe_port *p, pe_port *const *in)
{
    const pe_port *x = in[0], *y = in[1];
    int64_t m = x->shape[0], k = x->shape[1], n = y->rank == 1 ? 1 : y->shape[1];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            value s = 0;
            for (int64_t l = 0; l < k; l++) s += pe_ref_element(x, i * k + l) * pe_ref_element(y, l * n + j);
            pe_ref_store(p, i * n + j, s);
        }
}

bool pe_csr_fault(const int32_t *row_ptr, const int32_t *col, int64_t n_rows, int64_t nnz, int64_t n_cols, char *why,
                  size_t n_why)
{
    if (row_ptr[0] != 0) {
        snprintf(why, n_why, "row_ptr[0] is %d: a CSR matrix's offsets start at 0", row_ptr[0]);
        return true;
    }
    for (int64_t i = 0; i < n_rows; i++) {
        int32_t lo = row_ptr[i], hi = row_ptr[i + 1];
        if (hi < lo || hi > nnz) {
            snprintf(why, n_why, "row_ptr[%lld] is %d after row_ptr[%lld] = %d: offsets go up, to at most nnz = %lld",
                     (long long)i + 1, hi, (long long)i, lo, (long long)nnz);
            return true;
        }
        for (int32_t k = lo; k < hi; k++)
            if (col[k] < 0 || col[k] >= n_cols) {
                snprintf(why, n_why, "col_idx[%d] (row %lld) is %d, outside the matrix's %lld columns", k, (long long)i,
                         col[k], (long long)n_cols);
                return true;
            }
    }
    if (row_ptr[n_rows] != nnz) {
        snprintf(why, n_why, "row_ptr[%lld] is %d: the last offset is nnz = %lld", (long long)n_rows, row_ptr[n_rows],
                 (long long)nnz);
        return true;
    }
    return false;
}

/* y = m x from the matrix's structure (row_ptr then col_idx), values and x;
 * a faulty structure is refused before anything is read through it. */
static bool spmv(pe_port *p, pe_port *const *in, char *why, size_t n_why, pe_status *code)
{
    const pe_port *st = in[0], *v = in[1], *x = in[2];
    int64_t n_rows = p->numel, nnz = v->numel;
    *code = PE_E_ARG;
    if (!st->buf || st->numel != n_rows + 1 + nnz) {
        snprintf(why, n_why, "the matrix's structure does not fit its values");
        return false;
    }
    const int32_t *rp = st->buf, *col = rp + n_rows + 1;
    if (pe_csr_fault(rp, col, n_rows, nnz, x->numel, why, n_why)) return false;
    for (int64_t i = 0; i < n_rows; i++) {
        long double s = 0;
        for (int32_t k = rp[i]; k < rp[i + 1]; k++) s += pe_ref_element(v, k) * pe_ref_element(x, col[k]);
        pe_ref_store(p, i, s);
    }
    return true;
}

bool pe_ref_linalg(pe_port *p, pe_port *const *in, char *why, size_t n_why, pe_status *code)
{
    if (p->op == PE_OP_matmul) {
        matmul(p, in);
        return true;
    }
    if (p->op == PE_OP_spmv) return spmv(p, in, why, n_why, code);
    const pe_port *f = in[0];
    int64_t n = p->op == PE_OP_lu_permutation ? f->numel : f->shape[0];
    int64_t *piv = malloc(sizeof *piv * (size_t)(n ? n : 1));
    value *a = p->op == PE_OP_lu_permutation ? NULL : load_all(f);
    bool ok = piv && (a || p->op == PE_OP_lu_permutation);
    if (!ok) {
        free(piv), free(a);
        return no_memory(why, n_why, code);
    }
    switch ((pe_op)p->op) {
    case PE_OP_lu:
    case PE_OP_lu_pivots:
        ok = factor(a, n, piv, why, n_why, code);
        for (int64_t i = 0; ok && i < p->numel; i++) pe_ref_store(p, i, p->op == PE_OP_lu ? a[i] : (long double)piv[i]);
        break;
    case PE_OP_lu_solve: {
        const pe_port *b = in[2];
        int64_t nrhs = b->rank == 1 ? 1 : b->shape[1];
        value *x = load_all(b);
        ok = x && read_pivots(in[1], piv, why, n_why, code);
        if (!x) no_memory(why, n_why, code);
        if (ok) solve(a, piv, n, x, nrhs);
        for (int64_t i = 0; ok && i < p->numel; i++) pe_ref_store(p, i, x[i]);
        free(x);
        break;
    }
    case PE_OP_lu_cond: { /* ||L U||_1 (P keeps column sums), and a^-1's columns one by one */
        value *e = malloc(sizeof *e * (size_t)(n ? n : 1));
        ok = e && read_pivots(in[1], piv, why, n_why, code);
        if (!e) no_memory(why, n_why, code);
        long double norm = 0, inv_norm = 0;
        for (int64_t j = 0; ok && j < n; j++) {
            long double col = 0;
            for (int64_t i = 0; i < n; i++) { /* (L U)[i][j] = sum over k <= min(i, j) of L[i][k] U[k][j] */
                value s = 0;
                for (int64_t k = 0; k <= (i < j ? i : j); k++) s += (k == i ? 1 : a[i * n + k]) * a[k * n + j];
                col += cabsl(s);
            }
            if (col > norm) norm = col;
            for (int64_t i = 0; i < n; i++) e[i] = 0;
            /* column j of a^-1 = U^-1 L^-1 P e_j: solve() applies P itself */
            e[j] = 1;
            solve(a, piv, n, e, 1);
            col = 0;
            for (int64_t i = 0; i < n; i++) col += cabsl(e[i]);
            if (col > inv_norm) inv_norm = col;
        }
        if (ok) pe_ref_store(p, 0, n == 0 ? 0 : norm * inv_norm);
        free(e);
        break;
    }
    case PE_OP_lu_permutation: {
        ok = read_pivots(f, piv, why, n_why, code);
        int64_t *perm = ok ? malloc(sizeof *perm * (size_t)(n ? n : 1)) : NULL;
        if (ok && !perm) ok = no_memory(why, n_why, code);
        for (int64_t i = 0; ok && i < n; i++) perm[i] = i;
        for (int64_t i = 0; ok && i < n; i++) {
            int64_t t = perm[i];
            perm[i] = perm[piv[i]], perm[piv[i]] = t;
        }
        for (int64_t i = 0; ok && i < n * n; i++) pe_ref_store(p, i, perm[i / n] == i % n);
        free(perm);
        break;
    }
    default:
        snprintf(why, n_why, "not an intrinsic the interpreter knows");
        *code = PE_E_ARG;
        ok = false;
    }
    free(piv), free(a);
    return ok;
}
