/* bench_util.h — what the CPU benchmarks share: a monotonic clock, the
 * median of timings, seeded input arrays, zeroed output buffers and the
 * relative difference checked against the C loop's results. */
#ifndef PE_BENCH_UTIL_H
#define PE_BENCH_UTIL_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts t. */
static inline double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static inline void *bench_alloc_or_exit(void *p)
{
    if (!p) {
        fprintf(stderr, "benchmark: out of memory\n");
        exit(1);
    }
    return p;
}

/* n uniform values in [lo, hi], the same for a seed on every run. */
static inline float *filled(int64_t n, float lo, float hi, unsigned seed)
{
    float *p = bench_alloc_or_exit(malloc((size_t)n * sizeof *p));
    srand(seed);
    for (int64_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)rand() / (float)RAND_MAX;
    return p;
}

/* Zeroed (touched below by the warm-up runs). */
static inline float *buffer(int64_t n) { return bench_alloc_or_exit(calloc((size_t)n, sizeof(float))); }

/* The largest |a - b| / max(least, |b|); NaN wins. */
static inline double rel_diff_above(const float *a, const float *b, int64_t n, double least)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / fmax(least, fabs((double)b[i]));
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

/* The largest |a - b| / max(1, |b|); NaN wins. */
static inline double rel_diff(const float *a, const float *b, int64_t n) { return rel_diff_above(a, b, n, 1.0); }
#endif
