/* cg.c — conjugate gradient with PE on the 2-d Poisson problem: the 5-point
 * Laplacian of a g x g grid (zero on the boundary) as a sparse matrix built
 * here in CSR form (pe_csr_create), and CG from x = 0 with one pe_spmv, two
 * dots and three axpy-like updates per iteration (the updates fused into
 * kernels around the product, alpha and beta 0-d arrays that never leave
 * PE); the host reads one number per iteration, the residual's square, to
 * stop at ||r|| <= 1e-6 ||b||.  Checked against plain C: the true residual
 * ||b - A x|| / ||b|| recomputed from PE's x in long double, and x against
 * a direct solve (band Gaussian elimination: the matrix is symmetric
 * positive definite, so no pivoting) within the bound the residual and the
 * matrix's condition number give.
 *
 *   cg [grid side]      2 <= side <= 160 (default 64: 4096 unknowns) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#include "laplacian_csr.h"

#define TOLERANCE 1e-6

/* CG on PE: x with A x = b to ||r|| <= TOLERANCE ||b||; the iterations, or -1. */
static long conjugate_gradient(pe_csr a, const double *b, int64_t n, double *x_out)
{
    pe_array b_pe = pe_from_host(PE_F64, 1, &n, b);
    pe_array x = pe_fill(PE_F64, 1, &n, 0), r = pe_add(b_pe, 0.0), p = pe_add(b_pe, 0.0);
    pe_array rr = pe_dot(r, r);
    double rr_host, bb;
    if (pe_read(rr, &rr_host, sizeof rr_host) != PE_OK) return -1;
    bb = rr_host;
    long it = 0;
    while (rr_host > TOLERANCE * TOLERANCE * bb && it < 10 * n) {
        pe_scope scope = pe_scope_begin();
        pe_array ap = pe_spmv(a, p);
        pe_array alpha = pe_div(rr, pe_dot(p, ap));
        pe_array x_next = pe_keep(pe_add(x, pe_mul(alpha, p)));
        pe_array r_next = pe_keep(pe_sub(r, pe_mul(alpha, ap)));
        pe_array rr_next = pe_keep(pe_dot(r_next, r_next));
        pe_array p_next = pe_keep(pe_add(r_next, pe_mul(pe_div(rr_next, rr), p)));
        pe_scope_end(scope);
        pe_release(x), pe_release(r), pe_release(p), pe_release(rr);
        x = x_next, r = r_next, p = p_next, rr = rr_next;
        if (pe_read(rr, &rr_host, sizeof rr_host) != PE_OK) return -1;
        it++;
    }
    int rc = pe_read(x, x_out, sizeof *x_out * (size_t)n);
    pe_release(b_pe), pe_release(x), pe_release(r), pe_release(p), pe_release(rr);
    return rc == PE_OK ? it : -1;
}

/* The direct solve: Gaussian elimination on A's band (half width g), in place. */
static int band_solve(const laplacian_csr *a, int64_t g, const double *b, double *x)
{
    int64_t n = a->n, w = 2 * g + 1;
    double *band = calloc((size_t)(n * w), sizeof *band); /* band[i * w + (j - i + g)] = A[i][j] */
    if (!band) return -1;
    for (int64_t i = 0; i < n; i++) {
        for (int32_t k = a->row_ptr[i]; k < a->row_ptr[i + 1]; k++) band[i * w + (a->col[k] - i + g)] = a->val[k];
        x[i] = b[i];
    }
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = j + 1; i <= j + g && i < n; i++) {
            double l = band[i * w + (j - i + g)] / band[j * w + g];
            if (l == 0) continue;
            for (int64_t k = j; k <= j + g && k < n; k++) band[i * w + (k - i + g)] -= l * band[j * w + (k - j + g)];
            x[i] -= l * x[j];
        }
    for (int64_t i = n; i-- > 0;) {
        double s = x[i];
        for (int64_t k = i + 1; k <= i + g && k < n; k++) s -= band[i * w + (k - i + g)] * x[k];
        x[i] = s / band[i * w + g];
    }
    free(band);
    return 0;
}

int main(int argc, char **argv)
{
    int64_t g = argc > 1 ? atoll(argv[1]) : 64;
    if (argc > 2 || g < 2 || g > 160) {
        fprintf(stderr, "usage: %s [grid side, 2 .. 160]\n", argv[0]);
        return 2;
    }
    laplacian_csr a;
    if (laplacian_csr_build(g, &a) != 0) return 1;
    int64_t n = a.n, n_ptr = n + 1;
    double *b = malloc(sizeof *b * (size_t)n), *x = malloc(sizeof *x * (size_t)n), *direct = malloc(sizeof *direct * (size_t)n);
    if (!b || !x || !direct) return 1;
    for (int64_t r = 0; r < g; r++) /* a smooth load and a point source */
        for (int64_t c = 0; c < g; c++)
            b[r * g + c] = sin(3.14159265358979 * (double)(r + 1) / (double)(g + 1)) + (r == g / 3 && c == g / 2 ? 10 : 0);

    if (pe_init(NULL) != PE_OK) return 1;
    pe_array rp = pe_from_host(PE_I32, 1, &n_ptr, a.row_ptr), ci = pe_from_host(PE_I32, 1, &a.nnz, a.col);
    pe_array v = pe_from_host(PE_F64, 1, &a.nnz, a.val);
    pe_csr m = pe_csr_create(rp, ci, v, n);
    pe_release(rp), pe_release(ci), pe_release(v); /* the matrix holds its own */
    long iterations = conjugate_gradient(m, b, n, x);
    pe_csr_destroy(m);
    pe_shutdown();
    if (iterations < 0) return 1;

    /* the true residual, in long double from PE's x */
    long double res2 = 0, b2 = 0;
    for (int64_t i = 0; i < n; i++) {
        long double s = b[i];
        for (int32_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; k++) s -= (long double)a.val[k] * x[a.col[k]];
        res2 += s * s, b2 += (long double)b[i] * b[i];
    }
    double residual = (double)sqrtl(res2 / b2);
    if (band_solve(&a, g, b, direct) != 0) return 1;
    double err2 = 0, d2 = 0;
    for (int64_t i = 0; i < n; i++) err2 += (x[i] - direct[i]) * (x[i] - direct[i]), d2 += direct[i] * direct[i];
    double error = sqrt(err2 / d2);
    /* ||x - x*|| / ||x*|| <= cond(A) ||r|| / ||b||; cond(A) = cot^2(pi / (2 (g + 1))) */
    double t = tan(3.14159265358979 / (2.0 * (double)(g + 1))), cond = 1 / (t * t);
    int ok = residual <= 1.01 * TOLERANCE && error <= cond * residual + 1e-12;
    printf("conjugate gradient, %lld x %lld grid (%lld unknowns, %lld entries), PE %s\n", (long long)g, (long long)g,
           (long long)n, (long long)a.nnz, pe_version());
    printf("  %ld iterations; residual ||b - A x|| / ||b|| = %.3g (C, long double)\n", iterations, residual);
    printf("  against the direct band solve: relative error %.3g (bound cond(A) x residual = %.3g) -> %s\n", error,
           cond * residual, ok ? "OK" : "MISMATCH");
    laplacian_csr_free(&a);
    free(b), free(x), free(direct);
    return ok ? 0 : 1;
}
