/* heat2d.c — the explicit heat equation on an n x n grid with PE: each time
 * step takes the five-point stencil of the interior through slices (views:
 * no copies) and pads it back with the fixed boundary through concats, the
 * whole step recorded inside pe_block_begin/pe_block_end; checked against
 * the same update as a plain C loop.
 *
 *   heat2d [n] [steps]   n >= 3 (default 512), steps >= 1 (default 200);
 *                        the top edge is held at 1, the others at 0 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#include "heat2d_c.h"


/* u shifted by (dr, dc) with wrap-around: a slice of u tiled periodically,
 * a view of a view that composes into one index map (no copy). */
static pe_array roll(pe_array u, int64_t n, int64_t dr, int64_t dc)
{
    pe_array tiled = pe_periodic(u, 2, ((int64_t[]){2 * n, 2 * n}));
    return pe_slice(tiled, ((int64_t[]){(dr + n) % n, (dc + n) % n}), ((int64_t[]){n, n}));
}

/* One step of PE: the interior (where `inside` is true) gets the
 * five-point update, the boundary keeps its value.  The wrapped neighbours
 * are read only on the boundary, where the select drops them: the whole
 * step is one fused kernel, one pass over the grid. */
static pe_array step(pe_array u, pe_array inside, int64_t n)
{
    pe_array around = pe_add(pe_add(pe_add(roll(u, n, -1, 0), roll(u, n, 1, 0)), roll(u, n, 0, -1)), roll(u, n, 0, 1));
    return pe_cond(inside, pe_add(u, pe_mul(ALPHA, pe_sub(around, pe_mul(4.0f, u)))), u);
}

/* `steps` steps from u (the caller's reference, taken over): each step
 * recorded in a block and a scope; the last grid. */
static pe_array simulate(pe_array u, pe_array inside, int64_t n, long steps)
{
    for (long s = 0; s < steps; s++) {
        pe_scope scope = pe_scope_begin();
        pe_block_begin();
        pe_array next = pe_keep(step(u, inside, n));
        pe_block_end();
        pe_scope_end(scope);
        pe_release(u);
        u = next;
    }
    return u;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 512;
    long steps = argc > 2 ? atol(argv[2]) : 200;
    if (argc > 3 || n < 3 || n > 65536 || steps < 1) {
        fprintf(stderr, "usage: %s [n >= 3] [steps >= 1]\n", argv[0]);
        return 2;
    }
    float *u0 = calloc((size_t)(n * n), sizeof *u0), *got = malloc((size_t)(n * n) * sizeof *got);
    unsigned char *inside = malloc((size_t)(n * n));
    if (!u0 || !got || !inside) return 1;
    for (int64_t j = 0; j < n; j++) u0[j] = 1.0f; /* the hot edge */

    if (pe_init(NULL) != PE_OK) return 1;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) inside[i * n + j] = i > 0 && j > 0 && i < n - 1 && j < n - 1;
    pe_array in = pe_from_host(PE_BOOL, 2, ((int64_t[]){n, n}), inside);
    pe_array u = simulate(pe_f32_2d(u0, n, n), in, n, steps);
    int rc = pe_read(u, got, (size_t)(n * n) * sizeof *got);
    pe_release(u), pe_release(in);
    pe_shutdown();
    if (rc != PE_OK) return 1;

    float *a = c_heat(n, steps);
    if (!a) return 1;
    double worst = 0, heat = 0;
    for (int64_t k = 0; k < n * n; k++) {
        worst = fmax(worst, fabs((double)got[k] - a[k]));
        heat += got[k];
    }
    printf("heat equation, %lld x %lld grid, %ld steps (PE %s)\n", (long long)n, (long long)n, steps, pe_version());
    printf("heat in the grid: %.6f; centre temperature: %.6f\n", heat, got[(n / 2) * n + n / 2]);
    printf("largest difference from the plain C loop: %.3g -> %s\n", worst, worst <= 1e-6 ? "OK" : "MISMATCH");
    free(u0), free(got), free(a), free(inside);
    return worst <= 1e-6 ? 0 : 1;
}
