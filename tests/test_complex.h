/* test_complex.h — <complex.h> for the tests, with C11's CMPLX, CMPLXF and
 * CMPLXL where the library leaves them out: glibc's <complex.h> gives them
 * to GCC only, so under clang (the ASan build) they are spelt with
 * __builtin_complex.  Included where a test would include <complex.h>
 * (before FFTW's or LAPACKE's headers: they take C99's complex types when
 * it comes first); and tc_at, a buffer's element in long double complex. */
#ifndef PE_TESTS_TEST_COMPLEX_H
#define PE_TESTS_TEST_COMPLEX_H

#include <complex.h>
#include <stdint.h>

#include <pe.h>

#if !defined(CMPLX) && defined(__clang__)
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#define CMPLXL(x, y) __builtin_complex((long double)(x), (long double)(y))
#endif

/* Element i of a host buffer of dtype t (f32, f64, c64 or c128) in long
 * double complex: the tests' oracles work in it. */
static inline long double complex tc_at(pe_dtype t, const void *b, int64_t i)
{
    switch (t) {
    case PE_F32: return ((const float *)b)[i];
    case PE_F64: return ((const double *)b)[i];
    case PE_C64: return ((const float complex *)b)[i];
    default: return ((const double complex *)b)[i];
    }
}

#endif
