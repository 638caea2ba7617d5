/* test_prims.c — the primitive library (exec/cpu/cpu_prims.c) through the public
 * API on the CPU JIT: for each f32 routine, 10^6 random inputs over its
 * domain plus the edge cases, against the double-precision libm result
 * rounded to float (at most 2 ulp), and C99's special values exactly (NaN,
 * infinities, signed zeros, exact results). */
#include "test_util.h"

typedef pe_array (*op1_fn)(const pe_site *, pe_array);
typedef pe_array (*op2_fn)(const pe_site *, pe_array, pe_array);

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t next_u64(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}
static double uniform(double lo, double hi) { return lo + (hi - lo) * (double)(next_u64() >> 11) / 9007199254740992.0; }
/* a float of random sign (if signed_) and magnitude log-uniform in [2^elo, 2^ehi) */
static float log_uniform(int elo, int ehi, bool signed_)
{
    float v = (float)ldexp(1.0 + uniform(0, 1), (int)floor(uniform(elo, ehi)));
    return signed_ && (next_u64() & 1) ? -v : v;
}

static double ref_cdf_norm(double x) { return (double)(0.5L * erfcl(-(long double)x / sqrtl(2.0L))); }

static const struct {
    const char *name;
    op1_fn fn;
    double (*ref)(double);
    double lo, hi;  /* half the inputs uniform in [lo, hi] */
    int elo, ehi;   /* the other half log-uniform in magnitude */
    bool positive;  /* ... and only positive */
} unary[] = {
    {"exp", pe_exp_at, exp, -104, 89, -30, 7, false},
    {"log", pe_log_at, log, 0, 4, -149, 128, true},
    {"exp2", pe_exp2_at, exp2, -151, 129, -30, 8, false},
    {"log2", pe_log2_at, log2, 0, 4, -149, 128, true},
    {"expm1", pe_expm1_at, expm1, -20, 89, -149, 7, false},
    {"log1p", pe_log1p_at, log1p, -1, 4, -149, 128, false},
    {"sin", pe_sin_at, sin, -100, 100, -149, 128, false},
    {"cos", pe_cos_at, cos, -100, 100, -149, 128, false},
    {"tanh", pe_tanh_at, tanh, -10, 10, -149, 6, false},
    {"erf", pe_erf_at, erf, -4, 4, -149, 4, false},
    {"erfc", pe_erfc_at, erfc, -4, 11, -149, 4, false},
    {"cdf_norm", pe_cdf_norm_at, ref_cdf_norm, -15, 6, -149, 4, false},
    {"atan", pe_atan_at, atan, -5, 5, -149, 128, false},
};

static const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 0.5f, -0.5f, 2.0f, -2.0f,
                              1e-45f, -1e-45f, 1.17549435e-38f, -1.17549435e-38f, 3.40282347e38f, -3.40282347e38f,
                              88.72283f, 88.72284f, -87.33654f, -103.97208f, -104.0f, 127.99999f, 128.0f, -149.0f,
                              -150.0f, 0.99999994f, 1.0000001f, -0.99999994f, 0.7853982f, 1.5707964f, 3.1415927f,
                              -3.1415927f, 6.2831855f, 1e6f, 16367173.0f * 0x1p+72f, 9.0f, 10.0f, 10.05f, 10.1f,
                              -10.1f, 0.25f, -0.25f, 1e-10f, -1e-10f, 20.0f, 0.41421357f, 2.4142137f};

enum { N = 1000000 };

static void fill_unary(int o, float *x)
{
    for (int i = 0; i < N; i++)
        x[i] = i % 2 ? (float)uniform(unary[o].lo, unary[o].hi) : log_uniform(unary[o].elo, unary[o].ehi, !unary[o].positive);
    memcpy(x, edges, sizeof edges);
}

/* Special values that must come out exactly (sign of zero included). */
static const struct {
    const char *name;
    float x, want;
} exact[] = {
    {"exp", 0.0f, 1.0f}, {"exp", -0.0f, 1.0f}, {"exp", INFINITY, INFINITY}, {"exp", -INFINITY, 0.0f},
    {"exp", NAN, NAN}, {"exp", 89.0f, INFINITY}, {"exp", -104.0f, 0.0f},
    {"log", 1.0f, 0.0f}, {"log", 0.0f, -INFINITY}, {"log", -0.0f, -INFINITY}, {"log", -1.0f, NAN},
    {"log", INFINITY, INFINITY}, {"log", -INFINITY, NAN}, {"log", NAN, NAN},
    {"exp2", 0.0f, 1.0f}, {"exp2", -0.0f, 1.0f}, {"exp2", 10.0f, 1024.0f}, {"exp2", -149.0f, 0x1p-149f},
    {"exp2", 128.0f, INFINITY}, {"exp2", INFINITY, INFINITY}, {"exp2", -INFINITY, 0.0f}, {"exp2", NAN, NAN},
    {"log2", 1.0f, 0.0f}, {"log2", 1024.0f, 10.0f}, {"log2", 0x1p-149f, -149.0f}, {"log2", 0.0f, -INFINITY},
    {"log2", -0.0f, -INFINITY}, {"log2", -1.0f, NAN}, {"log2", INFINITY, INFINITY}, {"log2", NAN, NAN},
    {"expm1", 0.0f, 0.0f}, {"expm1", -0.0f, -0.0f}, {"expm1", INFINITY, INFINITY}, {"expm1", -INFINITY, -1.0f},
    {"expm1", NAN, NAN}, {"expm1", 1e-45f, 1e-45f}, {"expm1", -1e-45f, -1e-45f},
    {"log1p", 0.0f, 0.0f}, {"log1p", -0.0f, -0.0f}, {"log1p", -1.0f, -INFINITY}, {"log1p", -2.0f, NAN},
    {"log1p", INFINITY, INFINITY}, {"log1p", -INFINITY, NAN}, {"log1p", NAN, NAN}, {"log1p", 1e-45f, 1e-45f},
    {"sin", 0.0f, 0.0f}, {"sin", -0.0f, -0.0f}, {"sin", INFINITY, NAN}, {"sin", -INFINITY, NAN}, {"sin", NAN, NAN},
    {"sin", 1e-45f, 1e-45f}, {"sin", -1e-30f, -1e-30f},
    {"cos", 0.0f, 1.0f}, {"cos", -0.0f, 1.0f}, {"cos", INFINITY, NAN}, {"cos", -INFINITY, NAN}, {"cos", NAN, NAN},
    {"tanh", 0.0f, 0.0f}, {"tanh", -0.0f, -0.0f}, {"tanh", INFINITY, 1.0f}, {"tanh", -INFINITY, -1.0f},
    {"tanh", NAN, NAN}, {"tanh", 1e-45f, 1e-45f},
    {"erf", 0.0f, 0.0f}, {"erf", -0.0f, -0.0f}, {"erf", INFINITY, 1.0f}, {"erf", -INFINITY, -1.0f}, {"erf", NAN, NAN},
    {"erfc", 0.0f, 1.0f}, {"erfc", -0.0f, 1.0f}, {"erfc", INFINITY, 0.0f}, {"erfc", -INFINITY, 2.0f}, {"erfc", NAN, NAN},
    {"erfc", 11.0f, 0.0f},
    {"cdf_norm", 0.0f, 0.5f}, {"cdf_norm", INFINITY, 1.0f}, {"cdf_norm", -INFINITY, 0.0f}, {"cdf_norm", NAN, NAN},
    {"atan", 0.0f, 0.0f}, {"atan", -0.0f, -0.0f}, {"atan", INFINITY, 1.5707964f}, {"atan", -INFINITY, -1.5707964f},
    {"atan", NAN, NAN}, {"atan", 1e-45f, 1e-45f},
};

static float *run1(op1_fn fn, const float *x, int n)
{
    float *out = malloc((size_t)n * sizeof *out);
    assert_non_null(out);
    pe_array a = pe_f32_1d(x, n), r = fn(PE_HERE, a);
    assert_int_equal(pe_read(r, out, (size_t)n * sizeof *out), PE_OK);
    pe_release(r), pe_release(a);
    return out;
}

static void check_exact(const char *name, float x, float got, float want)
{
    if (!tu_same_value(got, want)) fail_msg("%s(%a): %a, want %a exactly", name, (double)x, (double)got, (double)want);
}

static int start(void **state)
{
    (void)state;
    return pe_init(&(pe_config){.executor = "jit"}) == PE_OK ? 0 : -1;
}
static int stop(void **state)
{
    (void)state;
    pe_shutdown();
    return 0;
}

static void test_unary(void **state)
{
    (void)state;
    float *x = malloc(N * sizeof *x);
    for (size_t o = 0; o < sizeof unary / sizeof unary[0]; o++) {
        fill_unary((int)o, x);
        float *out = run1(unary[o].fn, x, N);
        double worst = 0;
        int at = 0;
        for (int i = 0; i < N; i++) {
            float want = (float)unary[o].ref((double)x[i]);
            double d = tu_ulps_f32(out[i], want);
            if (!(d <= worst)) worst = d, at = i;
        }
        print_message("%-9s max %.0f ulp (at %a: %a, want %a)\n", unary[o].name, worst, (double)x[at], (double)out[at],
                      (double)(float)unary[o].ref((double)x[at]));
        if (!(worst <= 2)) fail_msg("%s: %g ulp at %a", unary[o].name, worst, (double)x[at]);
        free(out);
        /* the special values, each alone in a kernel of its own size */
        float xs[64], ws[64];
        int n = 0;
        for (size_t k = 0; k < sizeof exact / sizeof exact[0]; k++)
            if (!strcmp(exact[k].name, unary[o].name)) xs[n] = exact[k].x, ws[n++] = exact[k].want;
        assert_true(n > 0);
        out = run1(unary[o].fn, xs, n);
        for (int i = 0; i < n; i++) check_exact(unary[o].name, xs[i], out[i], ws[i]);
        free(out);
    }
    free(x);
}

static void test_pow(void **state)
{
    (void)state;
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out = malloc(N * sizeof *out);
    for (int i = 0; i < N; i++) {
        switch (i % 4) {
        case 0: x[i] = (float)uniform(0, 4), y[i] = (float)uniform(-40, 40); break;
        case 1: x[i] = log_uniform(-149, 128, false), y[i] = (float)uniform(-2, 2); break;
        case 2: x[i] = log_uniform(-20, 20, true), y[i] = (float)floor(uniform(-12, 12)); break;
        default: x[i] = (float)uniform(0.9, 1.1), y[i] = log_uniform(-20, 12, true); break;
        }
    }
    /* C99 F.9.4.4, exactly */
    static const float I = INFINITY;
    static const float special[][3] = {
        {0.0f, 3.0f, 0.0f},  {-0.0f, 3.0f, -0.0f}, {-0.0f, 2.0f, 0.0f},  {-0.0f, 0.5f, 0.0f}, {0.0f, -3.0f, I},
        {-0.0f, -3.0f, -I},  {-0.0f, -2.0f, I},    {-0.0f, -0.5f, I},    {-0.0f, -I, I},      {0.0f, I, 0.0f},
        {-1.0f, I, 1.0f},    {-1.0f, -I, 1.0f},    {1.0f, NAN, 1.0f},    {1.0f, -I, 1.0f},    {NAN, 0.0f, 1.0f},
        {NAN, -0.0f, 1.0f},  {-2.0f, 0.5f, NAN},   {-2.0f, 3.0f, -8.0f}, {-2.0f, 2.0f, 4.0f}, {0.5f, -I, I},
        {2.0f, -I, 0.0f},    {0.5f, I, 0.0f},      {2.0f, I, I},         {-I, -3.0f, -0.0f},  {-I, -2.0f, 0.0f},
        {-I, -0.5f, 0.0f},   {-I, 3.0f, -I},       {-I, 2.0f, I},        {-I, 0.5f, I},       {I, -1.0f, 0.0f},
        {I, 0.5f, I},        {NAN, 1.0f, NAN},     {2.0f, NAN, NAN},     {2.0f, 10.0f, 1024.0f},
        {2.0f, 128.0f, I},   {2.0f, -150.0f, 0.0f}, {2.0f, -149.0f, 0x1p-149f}, {-8.0f, 1.0f / 3, NAN},
        {-3.0f, 16777216.0f * 2, I}, {-1.0f, 16777217.0f, 1.0f}, {4.0f, 0.5f, 2.0f}, {10.0f, 3.0f, 1000.0f},
    };
    int ns = (int)(sizeof special / sizeof special[0]);
    for (int k = 0; k < ns; k++) x[k] = special[k][0], y[k] = special[k][1];
    pe_array a = pe_f32_1d(x, N), b = pe_f32_1d(y, N), r = pe_pow(a, b);
    assert_int_equal(pe_read(r, out, N * sizeof *out), PE_OK);
    pe_release(r), pe_release(a), pe_release(b);
    for (int k = 0; k < ns; k++)
        if (!tu_same_value(out[k], special[k][2]))
            fail_msg("pow(%a, %a): %a, want %a exactly", (double)x[k], (double)y[k], (double)out[k], (double)special[k][2]);
    double worst = 0;
    int at = 0;
    for (int i = 0; i < N; i++) {
        double d = tu_ulps_f32(out[i], (float)pow((double)x[i], (double)y[i]));
        if (!(d <= worst)) worst = d, at = i;
    }
    print_message("%-9s max %.0f ulp (at %a ^ %a: %a, want %a)\n", "pow", worst, (double)x[at], (double)y[at],
                  (double)out[at], (double)(float)pow((double)x[at], (double)y[at]));
    if (!(worst <= 2)) fail_msg("pow: %g ulp at %a ^ %a", worst, (double)x[at], (double)y[at]);
    free(x), free(y), free(out);
}

/* Chains that fuse with other element-wise ops stay right (the kernel is
 * then one vectorised loop with several primitives inlined). */
static void test_fused_chain(void **state)
{
    (void)state;
    enum { M = 100003 };
    float *x = malloc(M * sizeof *x), *out = malloc(M * sizeof *out);
    for (int i = 0; i < M; i++) x[i] = (float)uniform(-4, 4);
    pe_array a = pe_f32_1d(x, M);
    pe_array r = pe_add(pe_mul(pe_sin(a), pe_cos(a)), pe_mul(pe_cdf_norm(a), pe_tanh(a)));
    assert_int_equal(pe_read(r, out, M * sizeof *out), PE_OK);
    for (int i = 0; i < M; i++) {
        double s = (float)sin(x[i]), c = (float)cos(x[i]), p = (float)ref_cdf_norm(x[i]), t = (float)tanh(x[i]);
        float want = (float)((float)(s * c) + (float)(p * t));
        if (!(tu_ulps_f32(out[i], want) <= 4 || fabsf(out[i] - want) <= 1e-6f))
            fail_msg("chain(%a): %a, want %a", (double)x[i], (double)out[i], (double)want);
    }
    pe_release(r), pe_release(a);
    free(x), free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unary, start, stop),
        cmocka_unit_test_setup_teardown(test_pow, start, stop),
        cmocka_unit_test_setup_teardown(test_fused_chain, start, stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
