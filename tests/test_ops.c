/* test_ops.c — every element-wise operation against the C library (the
 * oracle), in f32 and f64, on ordinary values and edge cases (±0, ±inf, NaN,
 * domain errors, poles, subnormals, overflow); broadcasting shapes (0-d, 1-d,
 * 2-d, size-1 axes); type promotion with C scalars; i32 and bool semantics.
 * Runs on both executors (ctest sets PE_EXECUTOR). */
#define _GNU_SOURCE
#include "test_util.h"

typedef pe_array (*op1)(const pe_site *, pe_array);
typedef pe_array (*op2)(const pe_site *, pe_array, pe_array);

static double sign_of(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }
static double rsqrt_(double x) { return 1 / sqrt(x); }
static double rcp_(double x) { return 1 / x; }
static double sec_(double x) { return 1 / cos(x); }
static double csc_(double x) { return 1 / sin(x); }
static double cot_(double x) { return 1 / tan(x); }
/* in long double: acos(1/x) in double loses up to 29752 ulp near x = 1 */
static double asec_(double x) { return (double)acosl(1.0L / (long double)x); }
static double acsc_(double x) { return (double)asinl(1.0L / (long double)x); }
static double acot_(double x) { return atan(1 / x); }
static double sech_(double x) { return 1 / cosh(x); }
static double csch_(double x) { return 1 / sinh(x); }
static double coth_(double x) { return 1 / tanh(x); }
static double cdf_(double x) { return (double)(0.5L * erfcl(-(long double)x / sqrtl(2.0L))); }
static double neg_(double x) { return -x; }
static double isnan_(double x) { return isnan(x) ? 1 : 0; }
static double isinf_(double x) { return isinf(x) ? 1 : 0; }
static double isfinite_(double x) { return isfinite(x) ? 1 : 0; }
static double not_(double x) { return x == 0; }

static const struct {
    const char *name;
    op1 fn;
    double (*ref)(double);
    int ulps_f32, ulps_f64; /* allowed distance from the rounded libm value */
} unary[] = {
    {"neg", pe_neg_at, neg_, 0, 0},        {"abs", pe_abs_at, fabs, 0, 0},
    {"sign", pe_sign_at, sign_of, 0, 0},   {"exp", pe_exp_at, exp, 2, 1},
    {"exp2", pe_exp2_at, exp2, 2, 1},      {"exp10", pe_exp10_at, exp10, 2, 2},
    {"expm1", pe_expm1_at, expm1, 2, 1},   {"log", pe_log_at, log, 2, 1},
    {"log2", pe_log2_at, log2, 2, 1},      {"log10", pe_log10_at, log10, 2, 1},
    {"log1p", pe_log1p_at, log1p, 2, 1},   {"sqrt", pe_sqrt_at, sqrt, 0, 0},
    {"rsqrt", pe_rsqrt_at, rsqrt_, 2, 2},  {"cbrt", pe_cbrt_at, cbrt, 2, 1},
    {"rcp", pe_rcp_at, rcp_, 0, 0},        {"sin", pe_sin_at, sin, 2, 1},
    {"cos", pe_cos_at, cos, 2, 1},         {"tan", pe_tan_at, tan, 2, 1},
    {"sec", pe_sec_at, sec_, 2, 2},        {"csc", pe_csc_at, csc_, 2, 2},
    {"cot", pe_cot_at, cot_, 2, 2},        {"asin", pe_asin_at, asin, 2, 1},
    {"acos", pe_acos_at, acos, 2, 1},      {"atan", pe_atan_at, atan, 2, 1},
    {"asec", pe_asec_at, asec_, 2, 2},     {"acsc", pe_acsc_at, acsc_, 2, 2},
    {"acot", pe_acot_at, acot_, 2, 2},     {"sinh", pe_sinh_at, sinh, 2, 1},
    {"cosh", pe_cosh_at, cosh, 2, 1},      {"tanh", pe_tanh_at, tanh, 2, 1},
    {"sech", pe_sech_at, sech_, 2, 2},     {"csch", pe_csch_at, csch_, 2, 2},
    {"coth", pe_coth_at, coth_, 2, 2},     {"asinh", pe_asinh_at, asinh, 2, 1},
    {"acosh", pe_acosh_at, acosh, 2, 1},   {"atanh", pe_atanh_at, atanh, 2, 1},
    {"erf", pe_erf_at, erf, 2, 1},         {"erfc", pe_erfc_at, erfc, 2, 1},
    {"cdf_norm", pe_cdf_norm_at, cdf_, 2, 2}, {"floor", pe_floor_at, floor, 0, 0},
    {"ceil", pe_ceil_at, ceil, 0, 0},      {"trunc", pe_trunc_at, trunc, 0, 0},
    {"round", pe_round_at, round, 0, 0},
};

static const double edge[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.75, 3.0, 10.0, -10.0, 100.0, -100.0,
                              1e-3, 1e-40, -1e-40, 1e-310, 88.0, 89.0, 710.0, -710.0, 1e30, -1e30, INFINITY, -INFINITY,
                              NAN, 1.5707963, 3.14159265, 0.9999, 1.0001, -0.9999};
enum { N_EDGE = sizeof edge / sizeof edge[0] };

static bool tested_at_f32(double x)
{
    return x != x || fabs(x) < 3.4e38 || isinf(x); /* the value must be an f32 */
}

static void check_unary(pe_dtype t)
{
    for (size_t o = 0; o < sizeof unary / sizeof unary[0]; o++) {
        double in[N_EDGE];
        int n = 0;
        for (int i = 0; i < N_EDGE; i++)
            if (t == PE_F64 || tested_at_f32(edge[i])) in[n++] = t == PE_F32 ? (double)(float)edge[i] : edge[i];
        float f[N_EDGE];
        for (int i = 0; i < n; i++) f[i] = (float)in[i];
        int64_t len = n;
        pe_array a = pe_from_host(t, 1, &len, t == PE_F32 ? (const void *)f : (const void *)in);
        pe_array r = unary[o].fn(PE_HERE, a);
        assert_int_equal(pe_dtype_of(r), t);
        int64_t count;
        double *got = tu_read_as_f64(r, &count);
        assert_int_equal(count, n);
        for (int i = 0; i < n; i++) {
            double want = unary[o].ref(in[i]);
            double d = t == PE_F32 ? tu_ulps_f32((float)got[i], (float)want) : tu_ulps_f64(got[i], want);
            int allowed = t == PE_F32 ? unary[o].ulps_f32 : unary[o].ulps_f64;
            if (want == 0 && got[i] == 0 && !allowed && signbit(want) != signbit(got[i])) d = 1;
            if (!(d <= allowed))
                fail_msg("%s %s(%.17g): got %.17g want %.17g", t == PE_F32 ? "f32" : "f64", unary[o].name, in[i], got[i],
                         want);
        }
        free(got);
        pe_release(r), pe_release(a);
    }
    tu_expect_no_error();
}

/* Tests and logic on one operand give PE_BOOL. */
static void test_unary_tests(void **state)
{
    (void)state;
    static const struct {
        op1 fn;
        double (*ref)(double);
    } tests[] = {{pe_isnan_at, isnan_}, {pe_isinf_at, isinf_}, {pe_isfinite_at, isfinite_}, {pe_not_at, not_}};
    for (int t = 0; t < 2; t++) {
        float f[N_EDGE];
        for (int i = 0; i < N_EDGE; i++) f[i] = (float)edge[i];
        int64_t n = N_EDGE;
        pe_array a = pe_from_host(t ? PE_F64 : PE_F32, 1, &n, t ? (const void *)edge : (const void *)f);
        for (size_t k = 0; k < sizeof tests / sizeof tests[0]; k++) {
            pe_array r = tests[k].fn(PE_HERE, a);
            assert_int_equal(pe_dtype_of(r), PE_BOOL);
            uint8_t got[N_EDGE];
            assert_int_equal(pe_read(r, got, sizeof got), PE_OK);
            for (int i = 0; i < N_EDGE; i++) assert_int_equal(got[i], tests[k].ref(t ? edge[i] : (double)f[i]));
            pe_release(r);
        }
        pe_release(a);
    }
    tu_expect_no_error();
}

/* An i32 operand of a float op is promoted to f32 first, as the contract
 * says, whether the op is a primitive (sin) or composed of primitives (sec
 * = 1 / cos), and whether its f32 arithmetic is done in double (issue 24:
 * the JIT took integers above 2^24 into double whole).  The oracle is the
 * libm value at the f32-rounded integer. */
static void test_unary_of_integers(void **state)
{
    (void)state;
    static const int32_t ints[] = {0, 1, -1, 7, 3, -5, 100, 16777217, -16777219, 123456789, -334981083, 2000000001,
                                   2147483647, -2147483647 - 1};
    int64_t n = sizeof ints / sizeof *ints;
    pe_array a = pe_from_host(PE_I32, 1, &n, ints), positive = pe_gt(a, 0);
    for (size_t o = 0; o < sizeof unary / sizeof unary[0]; o++) {
        pe_array r = unary[o].fn(PE_HERE, a);
        /* the result rules (ops.def): arithmetic and rounding keep i32, the
         * real-valued functions give f32, of i32 and of bool operands alike */
        static const char *const integer_results[] = {"neg", "abs", "sign", "floor", "ceil", "trunc", "round"};
        bool integer = false;
        for (size_t k = 0; k < sizeof integer_results / sizeof *integer_results; k++)
            integer |= strcmp(unary[o].name, integer_results[k]) == 0;
        pe_array of_bool = unary[o].fn(PE_HERE, positive);
        if (pe_dtype_of(r) != (integer ? PE_I32 : PE_F32) || pe_dtype_of(of_bool) != (integer ? PE_I32 : PE_F32))
            fail_msg("%s of i32 gives dtype %d, of bool %d", unary[o].name, pe_dtype_of(r), pe_dtype_of(of_bool));
        pe_release(of_bool);
        if (integer) { /* values: test_integer_semantics */
            pe_release(r);
            continue;
        }
        int64_t count;
        double *got = tu_read_as_f64(r, &count);
        for (int64_t i = 0; i < n; i++) {
            double want = unary[o].ref((double)(float)ints[i]);
            if (!(tu_ulps_f32((float)got[i], (float)want) <= unary[o].ulps_f32))
                fail_msg("%s(i32 %d): got %.9g want %.9g", unary[o].name, ints[i], got[i], (double)(float)want);
        }
        free(got);
        pe_release(r);
    }
    pe_release(positive);
    pe_release(a);
    tu_expect_no_error();
}

static void test_unary_f32(void **state) { (void)state; check_unary(PE_F32); }
static void test_unary_f64(void **state) { (void)state; check_unary(PE_F64); }

static double min_(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }
static double max_(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double add_(double a, double b) { return a + b; }
static double sub_(double a, double b) { return a - b; }
static double mul_(double a, double b) { return a * b; }
static double div_(double a, double b) { return a / b; }
static double logb_(double a, double b) { return log(a) / log(b); }
static double lt_(double a, double b) { return a < b; }
static double le_(double a, double b) { return a <= b; }
static double gt_(double a, double b) { return a > b; }
static double ge_(double a, double b) { return a >= b; }
static double eq_(double a, double b) { return a == b; }
static double ne_(double a, double b) { return a != b; }
static double and_(double a, double b) { return a != 0 && b != 0; }
static double or_(double a, double b) { return a != 0 || b != 0; }
static double xor_(double a, double b) { return (a != 0) != (b != 0); }
static double nand_(double a, double b) { return !(a != 0 && b != 0); }
static double nor_(double a, double b) { return !(a != 0 || b != 0); }
/* the real root (pe.h): an odd root of -0 is -0 (of -0 and -3: -inf), as
 * IEEE's rootn; any other root of a negative x (-0 as +0) is pow's at 1/b
 * only where 1/b is an integer exactly (b 1e-40: 1/b rounds to an even
 * integer, the exact one is not), or b is ±0 or ±inf */
static double root_(double a, double b)
{
    if (signbit(a) && b == trunc(b) && fmod(fabs(b), 2) == 1) return -pow(-a, 1 / b);
    double r = 1 / b;
    bool integer = isfinite(r) && r == trunc(r) && fma(b, r, -1) == 0; /* b r = 1, no rounding */
    if (a < 0 && b != 0 && !isinf(b) && !integer) return NAN;
    return pow(fabs(a), r);
}

static const struct {
    const char *name;
    op2 fn;
    double (*ref)(double, double);
    int ulps;
    bool boolean;
} binary[] = {
    {"add", pe_add_at, add_, 0, 0},   {"sub", pe_sub_at, sub_, 0, 0},     {"mul", pe_mul_at, mul_, 0, 0},
    {"div", pe_div_at, div_, 0, 0},   {"pow", pe_pow_at, pow, 2, 0},      {"mod", pe_mod_at, fmod, 0, 0},
    {"min", pe_min_at, min_, 0, 0},   {"max", pe_max_at, max_, 0, 0},     {"atan2", pe_atan2_at, atan2, 2, 0},
    {"logb", pe_logb_at, logb_, 2, 0}, {"root", pe_root_at, root_, 2, 0}, {"lt", pe_lt_at, lt_, 0, 1},
    {"le", pe_le_at, le_, 0, 1},      {"gt", pe_gt_at, gt_, 0, 1},        {"ge", pe_ge_at, ge_, 0, 1},
    {"eq", pe_eq_at, eq_, 0, 1},      {"ne", pe_ne_at, ne_, 0, 1},        {"and", pe_and_at, and_, 0, 1},
    {"or", pe_or_at, or_, 0, 1},      {"xor", pe_xor_at, xor_, 0, 1},     {"nand", pe_nand_at, nand_, 0, 1},
    {"nor", pe_nor_at, nor_, 0, 1},
};

static const double pair_values[] = {0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 8.0, 3.0, 1e-40, INFINITY, -INFINITY, NAN};
enum { N_PAIR = sizeof pair_values / sizeof pair_values[0] };

/* (N_PAIR, 1) op (1, N_PAIR): every pair, through broadcasting. */
static void check_binary(pe_dtype t)
{
    float f[N_PAIR];
    for (int i = 0; i < N_PAIR; i++) f[i] = (float)pair_values[i];
    const void *data = t == PE_F32 ? (const void *)f : (const void *)pair_values;
    int64_t col[2] = {N_PAIR, 1}, row[2] = {1, N_PAIR};
    for (size_t o = 0; o < sizeof binary / sizeof binary[0]; o++) {
        pe_array a = pe_from_host(t, 2, col, data), b = pe_from_host(t, 2, row, data);
        pe_array r = binary[o].fn(PE_HERE, a, b);
        assert_int_equal(pe_rank(r), 2);
        assert_int_equal(pe_dim(r, 0), N_PAIR);
        assert_int_equal(pe_dim(r, 1), N_PAIR);
        assert_int_equal(pe_dtype_of(r), binary[o].boolean ? PE_BOOL : t);
        int64_t count;
        double *got = tu_read_as_f64(r, &count);
        for (int i = 0; i < N_PAIR; i++)
            for (int j = 0; j < N_PAIR; j++) {
                double x = t == PE_F32 ? (double)f[i] : pair_values[i], y = t == PE_F32 ? (double)f[j] : pair_values[j];
                double want = binary[o].ref(x, y), g = got[i * N_PAIR + j];
                double d = t == PE_F32 ? tu_ulps_f32((float)g, (float)want) : tu_ulps_f64(g, want);
                if (!(d <= binary[o].ulps) && !(want == 0 && g == 0 && binary[o].ulps == 0 && !strcmp(binary[o].name, "min")) &&
                    !(want == 0 && g == 0 && !strcmp(binary[o].name, "max")))
                    fail_msg("%s %s(%g, %g): got %.17g want %.17g", t == PE_F32 ? "f32" : "f64", binary[o].name, x, y, g, want);
            }
        free(got);
        pe_release(r), pe_release(a), pe_release(b);
    }
    tu_expect_no_error();
}

static void test_binary_f32(void **state) { (void)state; check_binary(PE_F32); }
static void test_binary_f64(void **state) { (void)state; check_binary(PE_F64); }

static void test_ternary_and_cast(void **state)
{
    (void)state;
    double x[5] = {-2.5, -0.5, 0.5, 1.5, NAN}, lo = -1, hi = 1;
    pe_array a = pe_f64_1d(x, 5);
    double *got;
    got = tu_read_as_f64(pe_clamp(a, lo, hi), NULL);
    for (int i = 0; i < 4; i++) assert_true(tu_same_value(got[i], fmin(fmax(x[i], lo), hi)));
    assert_true(isnan(got[4]));
    free(got);
    got = tu_read_as_f64(pe_fma(a, 3.0, 0.25), NULL);
    for (int i = 0; i < 5; i++) assert_true(tu_same_value(got[i], fma(x[i], 3.0, 0.25)));
    free(got);
    got = tu_read_as_f64(pe_cond(pe_gt(a, 0.0), a, pe_neg(a)), NULL);
    for (int i = 0; i < 5; i++) assert_true(tu_same_value(got[i], x[i] > 0 ? x[i] : -x[i]));
    free(got);
    /* casts: f -> i32 truncates and saturates, NaN -> 0; -> bool is != 0 */
    double big[6] = {2.9, -2.9, 3e9, -3e9, NAN, 0.0};
    pe_array b = pe_f64_1d(big, 6);
    int32_t iv[6];
    assert_int_equal(pe_read(pe_cast(b, PE_I32), iv, sizeof iv), PE_OK);
    const int32_t want_i[6] = {2, -2, INT32_MAX, INT32_MIN, 0, 0};
    assert_memory_equal(iv, want_i, sizeof iv);
    uint8_t bv[6];
    assert_int_equal(pe_read(pe_cast(b, PE_BOOL), bv, sizeof bv), PE_OK);
    const uint8_t want_b[6] = {1, 1, 1, 1, 1, 0};
    assert_memory_equal(bv, want_b, sizeof bv);
    float fv[6];
    assert_int_equal(pe_read(pe_cast(b, PE_F32), fv, sizeof fv), PE_OK);
    for (int i = 0; i < 6; i++) assert_true(tu_same_value(fv[i], (float)big[i]));
    tu_expect_no_error();
}

static void test_integer_semantics(void **state)
{
    (void)state;
    int32_t a[6] = {7, -7, INT32_MIN, INT32_MAX, 5, 0}, b[6] = {2, 2, -1, 1, 0, 3};
    int64_t n = 6;
    pe_array x = pe_from_host(PE_I32, 1, &n, a), y = pe_from_host(PE_I32, 1, &n, b);
    int32_t r[6];
    assert_int_equal(pe_read(pe_div(x, y), r, sizeof r), PE_OK);
    const int32_t q[6] = {3, -3, INT32_MIN, INT32_MAX, 0, 0};
    assert_memory_equal(r, q, sizeof r);
    assert_int_equal(pe_read(pe_mod(x, y), r, sizeof r), PE_OK);
    const int32_t m[6] = {1, -1, 0, 0, 0, 0};
    assert_memory_equal(r, m, sizeof r);
    assert_int_equal(pe_read(pe_add(x, y), r, sizeof r), PE_OK);
    assert_int_equal(r[3], INT32_MIN); /* wraps */
    assert_int_equal(r[2], INT32_MAX);
    assert_int_equal(pe_read(pe_mul(x, x), r, sizeof r), PE_OK);
    assert_int_equal(r[3], 1); /* (2^31 - 1)^2 mod 2^32 */
    assert_int_equal(pe_read(pe_neg(x), r, sizeof r), PE_OK);
    assert_int_equal(r[2], INT32_MIN);
    assert_int_equal(pe_read(pe_abs(x), r, sizeof r), PE_OK);
    assert_int_equal(r[1], 7);
    /* bool arithmetic promotes to i32; logic gives bool */
    uint8_t bt[3] = {1, 0, 1};
    int64_t three = 3;
    pe_array t = pe_from_host(PE_BOOL, 1, &three, bt);
    pe_array s = pe_add(t, t);
    assert_int_equal(pe_dtype_of(s), PE_I32);
    int32_t sv[3];
    assert_int_equal(pe_read(s, sv, sizeof sv), PE_OK);
    assert_int_equal(sv[0], 2), assert_int_equal(sv[1], 0);
    pe_array both = pe_and(t, 2);
    assert_int_equal(pe_dtype_of(both), PE_BOOL);
    uint8_t bb[3];
    assert_int_equal(pe_read(both, bb, sizeof bb), PE_OK);
    assert_int_equal(bb[0], 1), assert_int_equal(bb[1], 0);
    tu_expect_no_error();
}

static void test_promotion_with_scalars(void **state)
{
    (void)state;
    float f[3] = {1, 2, 3};
    int32_t i[3] = {1, 2, 3};
    double d[3] = {1, 2, 3};
    int64_t n = 3;
    pe_array xf = pe_f32_1d(f, 3), xi = pe_from_host(PE_I32, 1, &n, i), xd = pe_f64_1d(d, 3);
    assert_int_equal(pe_dtype_of(pe_mul(xf, 0.1)), PE_F32); /* a double scalar takes the f32 type */
    assert_int_equal(pe_dtype_of(pe_add(xi, 2)), PE_I32);
    assert_int_equal(pe_dtype_of(pe_add(xi, 2.5)), PE_F32);  /* a float scalar with integers gives f32 */
    assert_int_equal(pe_dtype_of(pe_add(xi, xd)), PE_F64);
    assert_int_equal(pe_dtype_of(pe_add(xi, xf)), PE_F32);
    assert_int_equal(pe_dtype_of(pe_exp(xi)), PE_F32);
    assert_int_equal(pe_dtype_of(pe_lt(xi, 2)), PE_BOOL);
    assert_int_equal(pe_dtype_of(pe_cond(pe_lt(xf, 2), xi, xf)), PE_F32);
    assert_int_equal(pe_dtype_of(pe_add(1.0f, 2)), PE_F32);
    assert_int_equal(pe_dtype_of(pe_add(1.0, 2)), PE_F64);
    /* a C integer with a bool array: i32 (a bool sum would wrap at 1) */
    pe_array xb = pe_gt(xi, 1), bi = pe_add(xb, 3);
    assert_int_equal(pe_dtype_of(bi), PE_I32);
    int32_t vb[3];
    assert_int_equal(pe_read(bi, vb, sizeof vb), PE_OK);
    for (int k = 0; k < 3; k++) assert_int_equal(vb[k], (i[k] > 1) + 3);
    assert_int_equal(pe_dtype_of(pe_mul(xb, 2.5)), PE_F32);
    /* ops whose result is the promoted dtype itself: compared and taken as i32,
     * not with the 3 cast to bool (true) first */
    pe_array mb = pe_max(xb, 3), lb = pe_lt(xb, 2);
    assert_int_equal(pe_dtype_of(mb), PE_I32);
    assert_int_equal(pe_read(mb, vb, sizeof vb), PE_OK);
    for (int k = 0; k < 3; k++) assert_int_equal(vb[k], 3);
    bool lt[3];
    assert_int_equal(pe_read(lb, lt, sizeof lt), PE_OK);
    for (int k = 0; k < 3; k++) assert_true(lt[k]);
    pe_release(mb), pe_release(lb);
    pe_release(xb), pe_release(bi);
    /* values: 0.1 is rounded to f32 before the multiply */
    float v[3];
    assert_int_equal(pe_read(pe_mul(xf, 0.1), v, sizeof v), PE_OK);
    for (int k = 0; k < 3; k++) assert_true(v[k] == f[k] * 0.1f);
    assert_int_equal(pe_read(pe_add(xi, 2.5), v, sizeof v), PE_OK);
    for (int k = 0; k < 3; k++) assert_true(v[k] == (float)i[k] + 2.5f);
    double c;
    assert_int_equal(pe_read_f64(pe_add(pe_scalar(PE_F64, 2), 3.0), &c), PE_OK);
    assert_true(c == 5.0);
    tu_expect_no_error();
}

/* A C integer outside i32's range (issue 24: it was saturated silently, so
 * that f32 + 3000000000LL added 2147483647): with a floating array it takes
 * the array's type as any C scalar does, converted as C converts it; where the
 * operation computes in i32 it is PE_E_ARG at the caller's line; as a
 * condition only its truth counts.  Oracle: the same expressions in C. */
static void test_integer_scalars_outside_i32(void **state)
{
    (void)state;
    float f[3] = {1, -2, 0.5f};
    int32_t i[3] = {1, -2, 7};
    double d[3] = {1, -2, 0.25};
    int64_t n = 3;
    pe_array xf = pe_f32_1d(f, 3), xi = pe_from_host(PE_I32, 1, &n, i), xd = pe_f64_1d(d, 3);
    const long long big = 3000000000LL, two32 = 4294967296LL, neg = -5000000000LL;

    float vf[3];
    assert_int_equal(pe_read(pe_add(xf, big), vf, sizeof vf), PE_OK);
    for (int k = 0; k < 3; k++) assert_true(vf[k] == f[k] + (float)big);
    assert_int_equal(pe_read(pe_mul(neg, xf), vf, sizeof vf), PE_OK);
    for (int k = 0; k < 3; k++) assert_true(vf[k] == (float)neg * f[k]);
    double vd[3];
    assert_int_equal(pe_read(pe_sub(xd, two32), vd, sizeof vd), PE_OK);
    for (int k = 0; k < 3; k++) assert_true(vd[k] == d[k] - (double)two32);
    assert_int_equal(pe_read(pe_max(xd, neg), vd, sizeof vd), PE_OK);
    for (int k = 0; k < 3; k++) assert_true(vd[k] == d[k]);
    double c;
    assert_int_equal(pe_read_f64(pe_cast(big, PE_F64), &c), PE_OK);
    assert_true(c == 3e9);
    assert_int_equal(pe_read_f64(pe_dot(xd, big), &c), PE_OK); /* 3e9 * (1 - 2 + 0.25) */
    assert_true(c == -0.75 * 3e9);
    uint8_t truth;
    assert_int_equal(pe_read(pe_cast(two32, PE_BOOL), &truth, 1), PE_OK); /* 2^32 is not zero */
    assert_int_equal(truth, 1);
    assert_int_equal(pe_read(pe_cond(two32, xd, -1.0), vd, sizeof vd), PE_OK);
    for (int k = 0; k < 3; k++) assert_true(vd[k] == d[k]);
    /* in range: i32 arithmetic as documented (wraps) */
    int32_t vi[3];
    assert_int_equal(pe_read(pe_add(xi, 2147483647LL), vi, sizeof vi), PE_OK);
    for (int k = 0; k < 3; k++) assert_int_equal(vi[k], (int32_t)((uint32_t)i[k] + 2147483647u));
    tu_expect_no_error();

    /* computed in i32: refused at the call */
    int line_add = __LINE__ + 1;
    pe_array bad = pe_add(xi, big);
    assert_int_equal(tu_errors.count, 1);
    assert_int_equal(tu_errors.code, PE_E_ARG);
    assert_string_equal(tu_basename(tu_errors.file), "test_ops.c");
    assert_int_equal(tu_errors.line, line_add);
    assert_non_null(strstr(tu_errors.message, "3000000000"));
    assert_int_not_equal(pe_read(bad, vi, sizeof vi), PE_OK);
    int before = tu_errors.count;
    struct {
        pe_array r;
        int line;
    } refused[] = {
        {pe_lt(xi, two32), __LINE__},
        {pe_mul(pe_lt(xi, 0), neg), __LINE__}, /* bool with a C integer: i32 */
        {pe_cast(big, PE_I32), __LINE__},
        {pe_dot(xi, neg), __LINE__},
        {pe_add(big, 1), __LINE__}, /* two C integers: i32 */
    };
    assert_int_equal(tu_errors.count, before + (int)(sizeof refused / sizeof *refused)); /* one each */
    assert_int_equal(tu_errors.code, PE_E_ARG);
    assert_int_equal(tu_errors.line, refused[4].line);
    for (size_t k = 0; k < sizeof refused / sizeof *refused; k++) {
        assert_int_not_equal(pe_read(refused[k].r, vi, sizeof vi), PE_OK);
        pe_release(refused[k].r);
    }
    tu_errors_clear();
    pe_release(bad);
    pe_release(xf), pe_release(xi), pe_release(xd);
}

static void test_broadcast_shapes(void **state)
{
    (void)state;
    double m[6] = {1, 2, 3, 4, 5, 6}, row[3] = {10, 20, 30}, col[2] = {100, 200};
    pe_array a = pe_f64_2d(m, 2, 3), r = pe_f64_1d(row, 3), c = pe_f64_2d(col, 2, 1), z = pe_scalar(PE_F64, 0.5);
    double *got = tu_read_as_f64(pe_add(pe_add(a, r), pe_mul(c, z)), NULL);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) assert_true(got[i * 3 + j] == m[i * 3 + j] + row[j] + col[i] * 0.5);
    free(got);
    pe_array outer = pe_mul(c, r); /* (2,1) x (3) -> (2,3) */
    assert_int_equal(pe_rank(outer), 2), assert_int_equal(pe_dim(outer, 0), 2), assert_int_equal(pe_dim(outer, 1), 3);
    got = tu_read_as_f64(outer, NULL);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) assert_true(got[i * 3 + j] == col[i] * row[j]);
    free(got);
    pe_array s = pe_add(z, 1.0); /* 0-d with a scalar stays 0-d */
    assert_int_equal(pe_rank(s), 0);
    int64_t e0[2] = {0, 3};
    pe_array empty = pe_fill(PE_F64, 2, e0, 1.0);
    pe_array er = pe_add(empty, r);
    assert_int_equal(pe_numel(er), 0), assert_int_equal(pe_dim(er, 1), 3);
    tu_expect_no_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unary_f32, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unary_f64, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unary_tests, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unary_of_integers, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_binary_f32, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_binary_f64, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_ternary_and_cast, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_integer_semantics, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_promotion_with_scalars, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_integer_scalars_outside_i32, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_broadcast_shapes, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
