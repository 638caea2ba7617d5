/* test_cuda_cdf.c — the CUDA kernels' f32 cdf_norm (exec/cuda/cuda_cdf_norm.cuh)
 * compiled for the host: its operations are IEEE ones that CUDA and C define
 * alike, so these are the values a GPU computes.  Checked against erfc in
 * long double on every 257th float of [-16, 16] (each magnitude with both
 * signs, the way kernels share the tail of x and -x), where it must stay
 * within 1 ulp, and on the special values. */
#include "test_util.h"

#include <float.h>
#include <string.h>

#define PE_CONSTANT static const
#define PE_DEVICE static
static float pe_rcp_rn(float x) { return 1.0f / x; }
static unsigned long long pe_bits_of(double d)
{
    unsigned long long u;
    memcpy(&u, &d, sizeof u);
    return u;
}
static double pe_of_bits(unsigned long long u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
#include "exec/cuda/cuda_cdf_norm.cuh"

/* Distance of got from the exact value want in ulps of float at want. */
static double float_ulps(float got, long double want)
{
    int e;
    frexpl(want, &e);
    long double ulp = ldexpl(1.0L, (e < FLT_MIN_EXP ? FLT_MIN_EXP : e) - FLT_MANT_DIG);
    return (double)(fabsl((long double)got - want) / ulp);
}

static void test_within_one_ulp_of_long_double(void **state)
{
    (void)state;
    uint32_t top;
    float sixteen = 16.0f;
    memcpy(&top, &sixteen, sizeof top);
    double worst = 0;
    float worst_x = 0;
    long checked = 0;
    for (uint32_t bits = 0; bits <= top; bits += 257) {
        float a;
        memcpy(&a, &bits, sizeof a);
        long double tail = 0.5L * erfcl((long double)a / sqrtl(2.0L));
        double t = pe_cdf_tail_f32(a);
        float xs[2] = {a, -a};
        long double want[2] = {1.0L - tail, tail};
        for (int s = 0; s < 2; s++) {
            double u = float_ulps(pe_cdf_norm_f32(xs[s], t), want[s]);
            if (u > worst) worst = u, worst_x = xs[s];
            checked++;
        }
    }
    printf("cdf_norm f32 (CUDA's, on the host): %ld arguments in [-16, 16], at most %.3f ulp (x = %.9g)\n", checked,
           worst, (double)worst_x);
    assert_true(worst <= 1.0);
}

static void test_special_values(void **state)
{
    (void)state;
    float inf = __builtin_inff(), nan = __builtin_nanf("");
    assert_true(pe_cdf_norm_f32(inf, pe_cdf_tail_f32(inf)) == 1.0f);
    assert_true(pe_cdf_norm_f32(-inf, pe_cdf_tail_f32(inf)) == 0.0f);
    float n = pe_cdf_norm_f32(nan, pe_cdf_tail_f32(nan));
    assert_true(n != n);
    assert_true(pe_cdf_norm_f32(0.0f, pe_cdf_tail_f32(0.0f)) == 0.5f);
    assert_true(pe_cdf_norm_f32(-0.0f, pe_cdf_tail_f32(0.0f)) == 0.5f);
    /* the largest magnitudes: no overflow in the exponent arithmetic */
    assert_true(pe_cdf_norm_f32(-FLT_MAX, pe_cdf_tail_f32(FLT_MAX)) == 0.0f);
    assert_true(pe_cdf_norm_f32(FLT_MAX, pe_cdf_tail_f32(FLT_MAX)) == 1.0f);
    /* the last float arguments with a non-zero result, against long double */
    for (float x = -14.0f; x > -15.5f; x -= 0.125f) {
        long double want = 0.5L * erfcl(-(long double)x / sqrtl(2.0L));
        assert_true(float_ulps(pe_cdf_norm_f32(x, pe_cdf_tail_f32(-x)), want) <= 1.0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_within_one_ulp_of_long_double),
        cmocka_unit_test(test_special_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
