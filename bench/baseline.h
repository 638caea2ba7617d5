/* baseline.h — the hand-written C loops of baseline.c (built with
 * -O3 -march=native -ffast-math -fopenmp, OpenMP on all cores). */
#ifndef PE_BENCH_BASELINE_H
#define PE_BENCH_BASELINE_H
#include <stdint.h>
void c_blackscholes(const float *S, const float *X, const float *T, float r, float v, float *call, float *put, int64_t n);
void c_triad(float *a, const float *b, const float *c, float s, int64_t n);
void c_chain16(float *out, const float *x, const float *y, int64_t n);
double c_sum(const float *x, int64_t n);
double c_dot(const float *x, const float *y, int64_t n);
int c_threads(void);
#endif
