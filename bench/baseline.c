/* baseline.c — the hand-written C loops PE is measured against: the same
 * workloads as bench_cpu.c, written as a C programmer would write them for
 * speed and built (only this file) with -O3 -march=native -ffast-math
 * -fopenmp, OpenMP on all cores.  PE itself is not built with fast-math. */
#include <math.h>
#include <omp.h>
#include <stdint.h>

#include "baseline.h"

int c_threads(void) { return omp_get_max_threads(); }

static inline float cnd(float x) { return 0.5f * erfcf(-x * 0.70710678f); } /* standard normal CDF */

/* The formulas of examples/blackscholes.c: four CDFs, put through N(-d). */
void c_blackscholes(const float *S, const float *X, const float *T, float r, float v, float *call, float *put, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float sqrt_t = sqrtf(T[i]);
        float d1 = (logf(S[i] / X[i]) + (r + 0.5f * v * v) * T[i]) / (v * sqrt_t);
        float d2 = d1 - v * sqrt_t;
        float disc = X[i] * expf(-r * T[i]);
        call[i] = S[i] * cnd(d1) - disc * cnd(d2);
        put[i] = disc * cnd(-d2) - S[i] * cnd(-d1);
    }
}

void c_triad(float *a, const float *b, const float *c, float s, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

/* 16 operations, the same as pe_chain16 in bench_cpu.c. */
void c_chain16(float *out, const float *x, const float *y, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float t = x[i] * 1.5f;       /* 1 */
        t = t + y[i];                /* 2 */
        t = t - 0.25f;               /* 3 */
        t = t * t;                   /* 4 */
        t = t + x[i];                /* 5 */
        t = t + 1.0f;                /* 6 */
        t = sqrtf(t);                /* 7 */
        t = t * 0.5f;                /* 8 */
        t = t - y[i];                /* 9 */
        float u = x[i] * x[i];       /* 10 */
        u = u + 1.0f;                /* 11 */
        t = t / u;                   /* 12 */
        t = -t;                      /* 13 */
        t = t + 2.0f;                /* 14 */
        t = t * y[i];                /* 15 */
        out[i] = t - 3.0f;           /* 16 */
    }
}

double c_sum(const float *x, int64_t n)
{
    double acc = 0;
#pragma omp parallel for simd reduction(+ : acc) schedule(static)
    for (int64_t i = 0; i < n; i++) acc += x[i];
    return acc;
}

double c_dot(const float *x, const float *y, int64_t n)
{
    double acc = 0;
#pragma omp parallel for simd reduction(+ : acc) schedule(static)
    for (int64_t i = 0; i < n; i++) acc += (double)x[i] * y[i];
    return acc;
}
