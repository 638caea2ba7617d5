/* heat2d_c.h — the heat equation as a plain C loop: the oracle heat2d.c and
 * mpi_heat2d.c check PE's grid against (the same arithmetic in the same
 * order, so the grids are bitwise equal). */
#ifndef PE_EXAMPLES_HEAT2D_C_H
#define PE_EXAMPLES_HEAT2D_C_H

#include <stdint.h>
#include <stdlib.h>

#define ALPHA 0.2f /* diffusion number: stable below 1/4 */

/* One step: the interior's five-point update, the boundary kept. */
static void c_step(const float *u, float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            float c = u[i * n + j];
            if (i == 0 || j == 0 || i == n - 1 || j == n - 1) {
                v[i * n + j] = c;
                continue;
            }
            float around = ((u[(i - 1) * n + j] + u[(i + 1) * n + j]) + u[i * n + j - 1]) + u[i * n + j + 1];
            v[i * n + j] = c + ALPHA * (around - 4.0f * c);
        }
}

/* The n x n grid after `steps` steps from the examples' start (the top
 * edge at 1, the rest 0); malloc'd, NULL when out of memory. */
static float *c_heat(int64_t n, long steps)
{
    float *a = calloc((size_t)(n * n), sizeof *a), *b = malloc((size_t)(n * n) * sizeof *b);
    if (!a || !b) {
        free(a), free(b);
        return NULL;
    }
    for (int64_t j = 0; j < n; j++) a[j] = 1.0f; /* the hot edge */
    for (long s = 0; s < steps; s++) {
        c_step(a, b, n);
        float *t = a;
        a = b, b = t;
    }
    free(b);
    return a;
}

#endif
