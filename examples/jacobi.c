/* jacobi.c — Laplace's equation on an n x n grid by Jacobi iteration, run
 * until the largest change of a sweep falls below a tolerance: the solver
 * loop users write, with a read of the residual in every iteration.  Each
 * sweep replaces every interior point by the mean of its four neighbours
 * (read through shifted views of the grid: no copies), the boundary kept
 * (the top edge at 1, the others at 0); the largest change is read back to
 * decide whether to go on.  PE computes a sweep and its change in one
 * kernel and stores the new grid there (the next sweep reads it through its
 * views).  Checked against the same iteration as a plain C loop: the same
 * arithmetic in the same order, so the grids and the iteration counts are
 * equal.
 *
 *   jacobi [n] [tolerance] [max_iterations]
 *          n >= 3 (default 256), tolerance > 0 (default 1e-4),
 *          max_iterations >= 1 (default 10000) */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

/* u shifted by (dr, dc) with wrap-around: a slice of u tiled periodically
 * (one index map, no copy). */
static pe_array shifted(pe_array u, int64_t n, int64_t dr, int64_t dc)
{
    pe_array tiled = pe_periodic(u, 2, (int64_t[]){2 * n, 2 * n});
    return pe_slice(tiled, (int64_t[]){(dr + n) % n, (dc + n) % n}, (int64_t[]){n, n});
}

/* One sweep from u: the new grid, and the largest change as an array of
 * one element (both the caller's). */
static pe_array sweep(pe_array u, pe_array interior, int64_t n, pe_array *change)
{
    pe_array around = pe_add(pe_add(shifted(u, n, -1, 0), shifted(u, n, 1, 0)), pe_add(shifted(u, n, 0, -1), shifted(u, n, 0, 1)));
    pe_array next = pe_cond(interior, pe_mul(around, 0.25), u);
    *change = pe_max(pe_abs(pe_sub(next, u)));
    return next;
}

/* Sweeps from u (the caller's reference, taken over) until the change is
 * below tol or max_iter sweeps ran: the last grid; *iterations the sweeps. */
static pe_array solve(pe_array u, pe_array interior, int64_t n, double tol, long max_iter, long *iterations)
{
    long it = 0;
    double largest = INFINITY;
    while (it < max_iter && largest >= tol) {
        pe_scope scope = pe_scope_begin();
        pe_array change;
        pe_array next = pe_keep(sweep(u, interior, n, &change));
        pe_read_f64(change, &largest);
        pe_scope_end(scope);
        pe_release(u);
        u = next;
        it++;
    }
    *iterations = it;
    return u;
}

/* The same iteration in C: the grid after it (malloc'd), its sweep count. */
static double *c_solve(int64_t n, double tol, long max_iter, long *iterations)
{
    double *a = calloc((size_t)(n * n), sizeof *a), *b = malloc((size_t)(n * n) * sizeof *b);
    if (!a || !b) {
        free(a), free(b);
        return NULL;
    }
    for (int64_t j = 0; j < n; j++) a[j] = 1.0;
    long it = 0;
    double largest = INFINITY;
    while (it < max_iter && largest >= tol) {
        largest = 0.0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                double v = a[i * n + j];
                if (i > 0 && j > 0 && i < n - 1 && j < n - 1)
                    v = ((a[(i - 1) * n + j] + a[(i + 1) * n + j]) + (a[i * n + j - 1] + a[i * n + j + 1])) * 0.25;
                b[i * n + j] = v;
                largest = fmax(largest, fabs(v - a[i * n + j]));
            }
        double *t = a;
        a = b, b = t;
        it++;
    }
    free(b);
    *iterations = it;
    return a;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 256;
    double tol = argc > 2 ? atof(argv[2]) : 1e-4;
    long max_iter = argc > 3 ? atol(argv[3]) : 10000;
    if (argc > 4 || n < 3 || n > 65536 || !(tol > 0) || max_iter < 1) {
        fprintf(stderr, "usage: %s [n >= 3] [tolerance > 0] [max_iterations >= 1]\n", argv[0]);
        return 2;
    }
    double *u0 = calloc((size_t)(n * n), sizeof *u0), *got = malloc((size_t)(n * n) * sizeof *got);
    if (!u0 || !got) return 1;
    for (int64_t j = 0; j < n; j++) u0[j] = 1.0; /* the top edge */

    if (pe_init(NULL) != PE_OK) return 1;
    pe_scope scope = pe_scope_begin(); /* the mask's intermediates go at its end */
    pe_array r = pe_index(PE_I32, 2, (int64_t[]){n, n}, 0), c = pe_index(PE_I32, 2, (int64_t[]){n, n}, 1);
    pe_array interior = pe_keep(pe_and(pe_and(pe_gt(r, 0), pe_lt(r, n - 1)), pe_and(pe_gt(c, 0), pe_lt(c, n - 1))));
    pe_scope_end(scope);
    long iterations;
    pe_array u = solve(pe_f64_2d(u0, n, n), interior, n, tol, max_iter, &iterations);
    int rc = pe_read(u, got, (size_t)(n * n) * sizeof *got);
    pe_release(u), pe_release(interior);
    pe_shutdown();
    if (rc != PE_OK) return 1;

    long c_iterations;
    double *want = c_solve(n, tol, max_iter, &c_iterations);
    if (!want) return 1;
    double worst = 0;
    for (int64_t k = 0; k < n * n; k++) worst = fmax(worst, fabs(got[k] - want[k]));
    bool ok = worst == 0 && iterations == c_iterations;
    printf("Laplace's equation by Jacobi iteration, %lld x %lld grid, tolerance %g (PE %s)\n", (long long)n, (long long)n, tol,
           pe_version());
    printf("%ld sweeps (the C loop: %ld); centre value %.9f\n", iterations, c_iterations, got[(n / 2) * n + n / 2]);
    printf("largest difference from the plain C loop: %.3g -> %s\n", worst, ok ? "OK" : "MISMATCH");
    free(u0), free(got), free(want);
    return ok ? 0 : 1;
}
