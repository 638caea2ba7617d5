/* complex_values.h — what the complex-dtype tests share (test_complex.c,
 * test_complex_kernels.c): random values at every angle, arrays of them in
 * the dtype's host layout, the value an op sees (c64 parts rounded to f32),
 * and the normwise bound |got - want| <= k u |want| against long double. */
#ifndef PE_TESTS_COMPLEX_VALUES_H
#define PE_TESTS_COMPLEX_VALUES_H

#include "test_complex.h"

#include "test_util.h"

#define U64 0x1p-53
#define U32 0x1p-24

typedef long double _Complex ldc;

static unsigned rng_state = 12345u;
__attribute__((unused)) static double uniform(double lo, double hi)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return lo + (hi - lo) * (double)((rng_state >> 8) & 0xffffff) / (double)0x1000000;
}

/* Random values with magnitudes in [0.25, 4] at every angle. */
__attribute__((unused)) static void random_values(double _Complex *z, int n)
{
    for (int i = 0; i < n; i++) {
        double r = exp2(uniform(-2, 2)), t = uniform(-3.14159, 3.14159);
        z[i] = CMPLX(r * cos(t), r * sin(t));
    }
}

__attribute__((unused)) static bool is_c64(pe_dtype t) { return t == PE_C64; }

/* x as the dtype's host elements (c64: float complex, rounded). */
__attribute__((unused)) static pe_array make(pe_dtype t, int rank, const int64_t *shape, const double _Complex *x)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    if (!is_c64(t)) return pe_from_host(t, rank, shape, x);
    float _Complex *f = malloc((size_t)n * sizeof *f);
    for (int64_t i = 0; i < n; i++) f[i] = CMPLXF((float)creal(x[i]), (float)cimag(x[i]));
    pe_array a = pe_from_host(t, rank, shape, f);
    free(f);
    return a;
}

/* The input as the op sees it: c64 parts are floats. */
__attribute__((unused)) static ldc operand(pe_dtype t, double _Complex z)
{
    if (is_c64(t)) return CMPLXL((float)creal(z), (float)cimag(z));
    return CMPLXL(creal(z), cimag(z));
}

__attribute__((unused)) static void expect_close(const char *what, int i, double _Complex got, ldc want, double k, double u)
{
    long double err = cabsl(CMPLXL(creal(got), cimag(got)) - want), bound = k * u * cabsl(want);
    if (!(err <= bound))
        fail_msg("%s element %d: got %.17g%+.17gi, want %.17Lg%+.17Lgi (error %.3Lg, allowed %.3Lg)", what, i,
                 creal(got), cimag(got), creall(want), cimagl(want), err, bound);
}

/* The ops' values in long double complex (C99 <complex.h>). */
__attribute__((unused)) static ldc l_add(ldc a, ldc b) { return a + b; }
__attribute__((unused)) static ldc l_sub(ldc a, ldc b) { return a - b; }
__attribute__((unused)) static ldc l_mul(ldc a, ldc b) { return a * b; }
__attribute__((unused)) static ldc l_div(ldc a, ldc b) { return a / b; }
__attribute__((unused)) static ldc l_pow(ldc a, ldc b) { return cpowl(a, b); }
__attribute__((unused)) static ldc l_neg(ldc a) { return -a; }
__attribute__((unused)) static ldc l_conj(ldc a) { return conjl(a); }
__attribute__((unused)) static ldc l_exp(ldc a) { return cexpl(a); }
__attribute__((unused)) static ldc l_log(ldc a) { return clogl(a); }
__attribute__((unused)) static ldc l_sqrt(ldc a) { return csqrtl(a); }

#endif
