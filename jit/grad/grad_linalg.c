/* grad_linalg.c — the derivative rules of the library calls of linear
 * algebra and spectra: fft, ifft, convolutions through FFTs, matmul, LU
 * (the packed factors, solves by the factors and the right-hand side) and
 * sparse products. */
#include "grad_rules.h"

/* fft over param[0] axes (the last, or the last two): F is linear, its
 * adjoint F^H = n ifft; ifft's, fft / n (n: the transformed elements) */
static double transformed(const pe_grad_step *r)
{
    double n = 1;
    for (int d = 0; d < r->node->param[0]; d++) n *= (double)r->node->shape[r->node->rank - 1 - d];
    return n;
}
void pe_grad_vjp_fft(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = MUL(pe_ifft_at(S, g, (int)r->node->param[0]), C(transformed(r)));
}
pe_array pe_grad_jvp_fft(const pe_grad_step *r, const pe_array *t) { return pe_fft_at(S, t[0], (int)r->node->param[0]); }
void pe_grad_vjp_ifft(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = DIV(pe_fft_at(S, g, (int)r->node->param[0]), C(transformed(r)));
}
pe_array pe_grad_jvp_ifft(const pe_grad_step *r, const pe_array *t) { return pe_ifft_at(S, t[0], (int)r->node->param[0]); }

/* conv_fft(a, kernel) over a's last param[0] axes, "same" size:
 * y[i] = sum_v a[i + o - v] k[v], o = (K - 1) / 2 per axis (param[1] = 1:
 * a correlation, k[v] read as conj(k[K - 1 - v])).  By a: the other of the
 * pair (correlate for conv, conv for correlate) of g with the kernel,
 * shifted by one along an axis of even K (its centre is the other side);
 * by the kernel: k_adj[v] = sum_i g[i] conj(a[i + o - v]), the cross-
 * correlation at lags v - o, from FFTs of g and a zero-padded to n + K
 * (no wrap), rolled by o and cut to K (summed over a's batch axes by the
 * fit); a correlation's kernel takes it reversed and conjugated. */
void pe_grad_vjp_conv_fft(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    int dims = (int)r->node->param[0], rank = r->node->rank;
    bool correlation = r->node->param[1] != 0;
    const pe_port *a = pe_grad_operand(r, 0), *k = pe_grad_operand(r, 1);
    if (wanted[0]) {
        pe_array padded = g;
        int64_t start[PE_MAX_RANK] = {0}, count[PE_MAX_RANK];
        for (int d = 0; d < rank; d++) count[d] = a->shape[d];
        for (int d = 0; d < dims; d++) {
            int axis = rank - 1 - d;
            if (k->shape[k->rank - 1 - d] % 2) continue;
            padded = pe_pad_at(S, padded, axis, 0, 1, PE_PAD_CONSTANT, 0.0);
            start[axis] = 1;
        }
        pe_array other = correlation ? pe_conv_at(S, padded, X1) : pe_correlate_at(S, padded, X1);
        adj[0] = pe_slice_at(S, other, start, count);
    }
    if (wanted[1]) {
        pe_array pg = g, pa = X0;
        for (int d = 0; d < dims; d++) {
            int axis = rank - 1 - d;
            int64_t kd = k->shape[k->rank - 1 - d];
            pg = pe_pad_at(S, pg, axis, 0, kd, PE_PAD_CONSTANT, 0.0);
            pa = pe_pad_at(S, pa, axis, 0, kd, PE_PAD_CONSTANT, 0.0);
        }
        pe_array lags = pe_ifft_at(S, MUL(pe_fft_at(S, pg, dims), pe_conj_at(S, pe_fft_at(S, pa, dims))), dims);
        int64_t start[PE_MAX_RANK] = {0}, count[PE_MAX_RANK], step[PE_MAX_RANK];
        for (int d = 0; d < rank; d++) count[d] = a->shape[d], step[d] = 1;
        for (int d = 0; d < dims; d++) {
            int axis = rank - 1 - d;
            int64_t kd = k->shape[k->rank - 1 - d];
            lags = pe_roll_at(S, lags, (kd - 1) / 2, axis);
            count[axis] = kd;
            if (correlation) start[axis] = kd - 1, step[axis] = -1; /* reversed */
        }
        pe_array cut = pe_slice_step_at(S, lags, start, count, step);
        adj[1] = correlation ? pe_conj_at(S, cut) : cut;
    }
}
pe_array pe_grad_jvp_conv_fft(const pe_grad_step *r, const pe_array *t)
{
    bool correlation = r->node->param[1] != 0;
    pe_array by_a = NONE, by_k = NONE;
    if (t[0].h) by_a = correlation ? pe_correlate_at(S, t[0], X1) : pe_conv_at(S, t[0], X1);
    if (t[1].h) by_k = correlation ? pe_correlate_at(S, X0, t[1]) : pe_conv_at(S, X0, t[1]);
    return by_a.h && by_k.h ? ADD(by_a, by_k) : by_a.h ? by_a : by_k;
}

/* matmul(a, b): a [m, k] by b [k, n] or [k] */
void pe_grad_vjp_matmul(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    bool vector = pe_grad_operand(r, 1)->rank == 1;
    if (wanted[0])
        adj[0] = vector ? MUL(pe_expand_dims_at(S, g, 1), pe_expand_dims_at(S, CONJ(X1), 0))
                        : pe_matmul_at(S, g, pe_transpose_at(S, CONJ(X1)));
    if (wanted[1]) adj[1] = pe_matmul_at(S, pe_transpose_at(S, CONJ(X0)), g);
}
pe_array pe_grad_jvp_matmul(const pe_grad_step *r, const pe_array *t)
{
    pe_array a = t[0].h ? pe_matmul_at(S, t[0], X1) : NONE, b = t[1].h ? pe_matmul_at(S, X0, t[1]) : NONE;
    return a.h && b.h ? ADD(a, b) : a.h ? a : b;
}

/* lu(a): L and U packed (P a = L U).  With F = L^-1 P dA U^-1 the packed
 * tangent is L tril(F, -1) + triu(F) U; the adjoint of a packed adjoint
 * (Lb strictly below the diagonal, Ub on and above) is
 * P^T L^-H (tril(L^H Lb, -1) + triu(Ub U^H)) U^-H.  The pivots are those
 * of a factoring again (the op's sibling port is no operand of it);
 * inverses of L and U are solves through their own factors. */
static pe_array triangle(const pe_grad_step *r, pe_array a, bool lower)
{
    const int64_t *shape = pe_grad_operand(r, 0)->shape; /* n x n: lu's a, lu_solve's lu */
    pe_array row = pe_index_at(S, PE_I32, 2, shape, 0), col = pe_index_at(S, PE_I32, 2, shape, 1);
    return COND(lower ? pe_gt_at(S, row, col) : pe_le_at(S, row, col), a, C(0));
}
static pe_array hermitian(const pe_grad_step *r, pe_array a) { return pe_transpose_at(S, CONJ(a)); }
static pe_array solve(const pe_grad_step *r, pe_array m, pe_array b) /* m^-1 b */
{
    pe_array lu, pivots;
    pe_lu_at(S, m, &lu, &pivots); /* an error is raised there, and the result is invalid */
    return pe_lu_solve_at(S, lu, pivots, b);
}
static pe_array unpack(const pe_grad_step *r, pe_array *l, pe_array *u)
{
    pe_array lu, pivots;
    pe_lu_at(S, X0, &lu, &pivots);
    return pe_lu_unpack_at(S, lu, pivots, l, u);
}
/* lu_solve(lu, pivots, b) = A^-1 b = U^-1 L^-1 P b.  By b: the adjoint
 * solves with A^H (A = P^T L U); by the factors, with c = U x:
 * Ub = -U^-H g x^H on and above the diagonal, Lb = -(L^-H U^-H g) c^H
 * below it, which lu's rule carries on to a (right-hand sides as columns) */
static pe_array as_columns(const pe_grad_step *r, pe_array v)
{
    return pe_grad_operand(r, 2)->rank == 1 ? pe_expand_dims_at(S, v, 1) : v;
}
void pe_grad_vjp_lu_solve(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    pe_array l, u, p = pe_lu_unpack_at(S, X0, X1, &l, &u);
    if (wanted[2]) adj[2] = solve(r, hermitian(r, pe_matmul_at(S, pe_transpose_at(S, p), pe_matmul_at(S, l, u))), g);
    if (wanted[0]) {
        pe_array gu = solve(r, hermitian(r, u), as_columns(r, g)); /* U^-H g */
        pe_array x = as_columns(r, Y), c = pe_matmul_at(S, u, x);
        pe_array lb = NEG(pe_matmul_at(S, solve(r, hermitian(r, l), gu), hermitian(r, c)));
        pe_array ub = NEG(pe_matmul_at(S, gu, hermitian(r, x)));
        adj[0] = ADD(triangle(r, lb, true), triangle(r, ub, false));
    }
}
pe_array pe_grad_jvp_lu_solve(const pe_grad_step *r, const pe_array *t)
{
    pe_array by_b = t[2].h ? pe_lu_solve_at(S, X0, X1, t[2]) : NONE;
    if (!t[0].h) return by_b;
    pe_array l, u;
    pe_lu_unpack_at(S, X0, X1, &l, &u);
    pe_array x = as_columns(r, Y), c = pe_matmul_at(S, u, x);
    pe_array inner = ADD(pe_matmul_at(S, triangle(r, t[0], false), x), solve(r, l, pe_matmul_at(S, triangle(r, t[0], true), c)));
    pe_array by_lu = NEG(solve(r, u, inner));
    if (pe_grad_operand(r, 2)->rank == 1) by_lu = pe_reshape_at(S, by_lu, 1, r->node->shape);
    return by_b.h ? ADD(by_b, by_lu) : by_lu;
}

void pe_grad_vjp_lu(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (!wanted[0]) return;
    pe_array l, u, p = unpack(r, &l, &u);
    pe_array m = ADD(triangle(r, pe_matmul_at(S, hermitian(r, l), triangle(r, g, true)), true),
                     triangle(r, pe_matmul_at(S, triangle(r, g, false), hermitian(r, u)), false));
    pe_array left = solve(r, hermitian(r, l), m);                                   /* L^-H m */
    pe_array both = hermitian(r, solve(r, u, hermitian(r, left)));                   /* (U^-1 left^H)^H */
    adj[0] = pe_matmul_at(S, pe_transpose_at(S, p), both);
}
pe_array pe_grad_jvp_lu(const pe_grad_step *r, const pe_array *t)
{
    pe_array l, u, p = unpack(r, &l, &u);
    pe_array left = solve(r, l, pe_matmul_at(S, p, t[0]));                           /* L^-1 P dA */
    pe_array f = pe_transpose_at(S, solve(r, pe_transpose_at(S, u), pe_transpose_at(S, left))); /* left U^-1 */
    return ADD(pe_matmul_at(S, l, triangle(r, f, true)), pe_matmul_at(S, triangle(r, f, false), u));
}

/* spmv(structure, values, x): structure is row_ptr (rows + 1) then col_idx
 * (one per value), both i32.  Each value's row is how many row starts after
 * the first it has reached; the adjoints and tangents are gathers, scatters
 * and bincounts over the nonzeros (real values: PE's spmv takes no complex) */
static void nonzeros(const pe_grad_step *r, pe_array *row, pe_array *col)
{
    int64_t rows = r->node->shape[0], nnz = pe_grad_operand(r, 1)->numel;
    pe_array starts = pe_slice_at(S, X0, (int64_t[]){1}, (int64_t[]){rows - 1});
    pe_array reached = pe_slice_at(S, pe_bincount_at(S, starts, NONE, nnz + 1), (int64_t[]){0}, (int64_t[]){nnz});
    *row = pe_cumsum_at(S, reached, 0);
    *col = pe_slice_at(S, X0, (int64_t[]){rows + 1}, (int64_t[]){nnz});
}
void pe_grad_vjp_spmv(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    pe_array row, col;
    nonzeros(r, &row, &col);
    pe_array g_row = pe_gather_at(S, g, row);
    if (wanted[1]) adj[1] = MUL(g_row, pe_gather_at(S, X2, col));
    if (wanted[2]) adj[2] = pe_scatter_add_at(S, pe_grad_zeros_like(r, pe_grad_operand(r, 2)), col, MUL(g_row, X1));
}
pe_array pe_grad_jvp_spmv(const pe_grad_step *r, const pe_array *t)
{
    pe_array row, col;
    nonzeros(r, &row, &col);
    pe_array terms = NONE;
    if (t[1].h) terms = MUL(t[1], pe_gather_at(S, X2, col));
    if (t[2].h) terms = terms.h ? ADD(terms, MUL(X1, pe_gather_at(S, t[2], col))) : MUL(X1, pe_gather_at(S, t[2], col));
    return terms.h ? pe_bincount_at(S, row, terms, r->node->shape[0]) : NONE;
}
