/* cuda_cdf_norm.cuh — the f32 normal CDF of the CUDA kernels, in the subset
 * of C that CUDA C and the host's C compiler share.  The CUDA emitter puts
 * this text in every kernel source (the build embeds it: cuda_cdf_source.c);
 * tests/test_cuda_cdf.c compiles the same text for the host and checks its
 * values against erfc in long double, no GPU needed.  It uses only IEEE
 * operations whose results CUDA and the host define alike (+ - * on double,
 * fma, rint, a correctly rounded f32 reciprocal, bit moves), so the host's
 * values are the GPU's.
 *
 * The includer defines PE_CONSTANT (where the coefficients live: __constant__
 * on the GPU, so that DFMA reads them from the constant bank instead of
 * building each 64-bit immediate in registers), PE_DEVICE (how functions are
 * declared), pe_rcp_rn (f32 reciprocal, rounded to nearest), and
 * pe_bits_of / pe_of_bits (double <-> unsigned 64-bit bit moves).
 *
 * N(x) = 1 - T(|x|) for x > 0, T(|x|) for x <= 0, with the tail
 * T(a) = erfc(z) / 2 = exp(-z^2) erfcx(z) / 2, z = a / sqrt 2, in double:
 *   - erfcx(z) as a degree-11 polynomial in t = (z-3)/(z+3) (Chebyshev fit on
 *     z in [0, 10.1], relative error 2.7e-9: the CPU primitive's, cpu_prims.c);
 *     t = 1 - 6/(z+3), the reciprocal from the f32 one and a Newton step
 *     (relative error ~1e-14) instead of a double division (a subroutine);
 *   - exp(-z^2) = 2^k e^f with k = rint(-z^2 log2 e), |f| <= ln2 / 2, e^f by
 *     its Taylor series to degree 8 (2e-10), 2^k added to the exponent field:
 *     z <= 10.5 keeps k in [-160, 0], so no special cases (the library exp
 *     has them, and more terms);
 *   - one rounding to float at the end.
 * Kernels compute T once for x and -x (Black-Scholes' N(d) and N(-d)). */

PE_CONSTANT double pe_cdf_coef[22] = {
    /* erfcx, highest degree first */
    8.942613662531994e-06, 7.542060035177275e-05, 3.372112669660388e-05, -0.0006085018368314914,
    0.0007089748213569665, 0.0042724956868770425, -0.024392284887754512, 0.07166543586749691,
    -0.15011597427509266, 0.24560381915458956, -0.3262335589814418, 0.17900115105317857,
    /* e^f: 1/8! ... 1/0! */
    2.48015873015873016e-05, 1.98412698412698413e-04, 1.38888888888888889e-03, 8.33333333333333333e-03,
    4.16666666666666667e-02, 1.66666666666666667e-01, 0.5, 1.0, 1.0,
    /* 1 / sqrt 2 */
    0.70710678118654752440};

/* T(a) = N(-a) for a = |x| >= 0.  NaN is taken as 10.5 (the conversion of a
 * NaN k to an integer would be undefined in C); pe_cdf_norm_f32 returns the
 * NaN itself. */
PE_DEVICE double pe_cdf_tail_f32(float a)
{
    double z = (double)a * pe_cdf_coef[21];
    z = z <= 10.5 ? z : 10.5;
    double d = z + 3.0, r = (double)pe_rcp_rn((float)d);
    r = r * fma(-d, r, 2.0);
    double t = fma(-6.0, r, 1.0), p = pe_cdf_coef[0];
    for (int j = 1; j < 12; j++) p = fma(p, t, pe_cdf_coef[j]);
    double y = -(z * z) * 1.4426950408889634074, k = rint(y), f = (y - k) * 0.69314718055994530942;
    double e = pe_cdf_coef[12];
    for (int j = 13; j < 21; j++) e = fma(e, f, pe_cdf_coef[j]);
    e = pe_of_bits(pe_bits_of(e) + ((unsigned long long)(long long)k << 52)); /* k <= 0: wraps as intended */
    return 0.5 * e * p;
}

/* N(x) from the tail of |x|. */
PE_DEVICE float pe_cdf_norm_f32(float x, double tail)
{
    if (x != x) return x;
    return (float)(x > 0.0f ? 1.0 - tail : tail);
}
