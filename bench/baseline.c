/* baseline.c — the hand-written C loops PE is measured against: the same
 * workloads as bench_cpu.c, built with -O3 -march=native -ffast-math -fopenmp
 * (all cores), as a C programmer would write them. */
#include <math.h>
#include <stdint.h>

#include "baseline.h"

void c_blackscholes(const float *S, const float *X, const float *T, float r, float v, float *call, float *put, int64_t n)
{
#pragma omp parallel for simd
    for (int64_t i = 0; i < n; i++) {
        float sqrt_t = sqrtf(T[i]);
        float d1 = (logf(S[i] / X[i]) + (r + 0.5f * v * v) * T[i]) / (v * sqrt_t);
        float d2 = d1 - v * sqrt_t;
        float cnd1 = 0.5f * erfcf(-d1 * 0.70710678f), cnd2 = 0.5f * erfcf(-d2 * 0.70710678f);
        float disc = X[i] * expf(-r * T[i]);
        call[i] = S[i] * cnd1 - disc * cnd2;
        put[i] = disc * (1.0f - cnd2) - S[i] * (1.0f - cnd1);
    }
}

void c_triad(float *a, const float *b, const float *c, float s, int64_t n)
{
#pragma omp parallel for simd
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

void c_chain16(float *out, const float *x, const float *y, int64_t n)
{
#pragma omp parallel for simd
    for (int64_t i = 0; i < n; i++) {
        float t = x[i] * 1.5f + y[i];
        t = t - 0.25f;
        t = t * t;
        t = t + x[i];
        t = sqrtf(t + 1.0f);
        t = t * 0.5f - y[i];
        t = t / (1.0f + x[i] * x[i]);
        t = -t + 2.0f;
        t = t * y[i] + x[i];
        t = t * 0.125f;
        out[i] = t - 3.0f;
    }
}

double c_sum(const float *x, int64_t n)
{
    double acc = 0;
#pragma omp parallel for simd reduction(+ : acc)
    for (int64_t i = 0; i < n; i++) acc += x[i];
    return acc;
}

double c_dot(const float *x, const float *y, int64_t n)
{
    double acc = 0;
#pragma omp parallel for simd reduction(+ : acc)
    for (int64_t i = 0; i < n; i++) acc += (double)x[i] * y[i];
    return acc;
}
