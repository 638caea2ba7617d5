/* test_complex.h — <complex.h> for the tests, with C11's CMPLX, CMPLXF and
 * CMPLXL where the library leaves them out: glibc's <complex.h> gives them
 * to GCC only, so under clang (the ASan build) they are spelt with
 * __builtin_complex.  Included where a test would include <complex.h>
 * (before FFTW's or LAPACKE's headers: they take C99's complex types when
 * it comes first). */
#ifndef PE_TESTS_TEST_COMPLEX_H
#define PE_TESTS_TEST_COMPLEX_H

#include <complex.h>

#if !defined(CMPLX) && defined(__clang__)
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#define CMPLXL(x, y) __builtin_complex((long double)(x), (long double)(y))
#endif

#endif
