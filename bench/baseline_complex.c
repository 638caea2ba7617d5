/* baseline_complex.c — the hand-written C99 complex loops bench_complex
 * measures PE against, built like baseline.c (-O3 -march=native
 * -ffast-math -fopenmp, OpenMP on all cores). */
#include <complex.h>
#include <stdint.h>

#include "baseline_complex.h"

void c_mandelbrot_steps_c64(const float _Complex *c, float _Complex *z, int64_t n, int steps)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float _Complex w = c[i];
        for (int s = 0; s < steps; s++) w = w * w + c[i];
        z[i] = w;
    }
}

void c_phase_modulus_c128(const double *x, const double _Complex *y, double *out, int64_t n)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = cabs(cexp(I * x[i]) * y[i]);
}
