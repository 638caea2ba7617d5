/* baseline_complex.h — bench_complex's C99 complex loops (baseline_complex.c). */
#ifndef PE_BENCH_BASELINE_COMPLEX_H
#define PE_BENCH_BASELINE_COMPLEX_H
#include <stdint.h>
/* z = c, then `steps` times z = z * z + c, per element */
void c_mandelbrot_steps_c64(const float _Complex *c, float _Complex *z, int64_t n, int steps);
/* |exp(i x) y| */
void c_phase_modulus_c128(const double *x, const double _Complex *y, double *out, int64_t n);
#endif
