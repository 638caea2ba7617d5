/* test_jit.c — the CPU JIT against the reference interpreter: every
 * element-wise op on random inputs at awkward sizes and broadcast shapes, in
 * f32 and f64, computed once with PE_EXECUTOR semantics "interp" and once
 * with "jit" in the same process; plus fusion made observable through the
 * counters (one kernel, one output buffer for a chain of released
 * temporaries; the program cache serves a repeated chain). */
#include "test_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/cpu/cpu_gccjit.h"
#include "exec/cuda/cuda_emit.h"
#include "jit/kir/codegen.h"
#include "jit/kir/kir.h"

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) snprintf(path, sizeof path, "%s/%s", dir, e->d_name), unlink(path);
    closedir(d);
    rmdir(dir);
}

typedef pe_array (*op1_fn)(const pe_site *, pe_array);
typedef pe_array (*op2_fn)(const pe_site *, pe_array, pe_array);

static const struct {
    const char *name;
    op1_fn fn;
    double lo, hi; /* input range */
    double ulps;   /* allowed difference in f32 ulps (f64: scaled) */
} unary[] = {
    {"neg", pe_neg_at, -100, 100, 0},     {"abs", pe_abs_at, -100, 100, 0},
    {"sign", pe_sign_at, -2, 2, 0},       {"exp", pe_exp_at, -20, 20, 2},
    {"exp2", pe_exp2_at, -20, 20, 2},     {"exp10", pe_exp10_at, -10, 10, 2},
    {"expm1", pe_expm1_at, -5, 5, 2},     {"log", pe_log_at, 1e-3, 1e3, 2},
    {"log2", pe_log2_at, 1e-3, 1e3, 2},   {"log10", pe_log10_at, 1e-3, 1e3, 2},
    {"log1p", pe_log1p_at, -0.9, 10, 2},  {"sqrt", pe_sqrt_at, 0, 1e4, 0},
    {"rsqrt", pe_rsqrt_at, 1e-3, 1e4, 2}, {"cbrt", pe_cbrt_at, -1e3, 1e3, 2},
    {"rcp", pe_rcp_at, 0.5, 100, 0},      {"sin", pe_sin_at, -10, 10, 2},
    {"cos", pe_cos_at, -10, 10, 2},       {"tan", pe_tan_at, -1.5, 1.5, 2},
    {"sec", pe_sec_at, -1.5, 1.5, 3},     {"csc", pe_csc_at, 0.1, 3, 3},
    {"cot", pe_cot_at, 0.1, 1.5, 3},      {"asin", pe_asin_at, -1, 1, 2},
    {"acos", pe_acos_at, -1, 1, 2},       {"atan", pe_atan_at, -10, 10, 2},
    {"asec", pe_asec_at, 1, 10, 3},       {"acsc", pe_acsc_at, 1, 10, 3},
    {"acot", pe_acot_at, 0.1, 10, 3},     {"sinh", pe_sinh_at, -5, 5, 2},
    {"cosh", pe_cosh_at, -5, 5, 2},       {"tanh", pe_tanh_at, -5, 5, 2},
    {"sech", pe_sech_at, -5, 5, 3},       {"csch", pe_csch_at, 0.1, 5, 3},
    {"coth", pe_coth_at, 0.1, 5, 3},      {"asinh", pe_asinh_at, -10, 10, 2},
    {"acosh", pe_acosh_at, 1, 10, 2},     {"atanh", pe_atanh_at, -0.9, 0.9, 2},
    {"erf", pe_erf_at, -3, 3, 2},         {"erfc", pe_erfc_at, -3, 3, 2},
    {"cdf_norm", pe_cdf_norm_at, -5, 5, 4}, {"floor", pe_floor_at, -10, 10, 0},
    {"ceil", pe_ceil_at, -10, 10, 0},     {"trunc", pe_trunc_at, -10, 10, 0},
    {"round", pe_round_at, -10, 10, 0},   {"isnan", pe_isnan_at, -1, 1, 0},
    {"isinf", pe_isinf_at, -1, 1, 0},     {"isfinite", pe_isfinite_at, -1, 1, 0},
    {"not", pe_not_at, -1, 1, 0},
};

static const struct {
    const char *name;
    op2_fn fn;
    double ulps;
} binary[] = {
    {"add", pe_add_at, 0}, {"sub", pe_sub_at, 0}, {"mul", pe_mul_at, 0},  {"div", pe_div_at, 0},
    {"pow", pe_pow_at, 2}, {"atan2", pe_atan2_at, 2}, {"logb", pe_logb_at, 4}, {"lt", pe_lt_at, 0},
    {"le", pe_le_at, 0},   {"gt", pe_gt_at, 0},   {"ge", pe_ge_at, 0},    {"eq", pe_eq_at, 0},
    {"ne", pe_ne_at, 0},   {"and", pe_and_at, 0}, {"or", pe_or_at, 0},    {"xor", pe_xor_at, 0},
    {"nand", pe_nand_at, 0}, {"nor", pe_nor_at, 0}, {"min", pe_min_at, 0}, {"max", pe_max_at, 0},
    {"mod", pe_mod_at, 0},
};

static const int64_t sizes[] = {0, 1, 7, 1023, 1000003};

/* Every runtime of this file compiles into a fresh disk cache, so that
 * compile counts do not depend on earlier runs. */
static char cache_dir[64];
static const char *fresh_cache(void)
{
    if (!cache_dir[0]) {
        snprintf(cache_dir, sizeof cache_dir, "/tmp/pe-test-jit-XXXXXX");
        assert_non_null(mkdtemp(cache_dir));
    }
    return cache_dir;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(double lo, double hi)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

/* One case: an op built from operands a and b, its tolerance. */
typedef pe_array (*builder)(const void *ctx, pe_array a, pe_array b);
typedef struct {
    const char *name;
    builder make;
    const void *ctx;
    double ulps;
    const double *xa, *xb; /* inputs */
} op_case;

/* Runs every case with the given executor, all recorded before the first
 * read (so the JIT compiles them in one batch); returns their values. */
static double **run_on(const char *executor, pe_dtype t, const op_case *cases, int n_cases, const int64_t *sa, int ra,
                       const int64_t *sb, int rb, int64_t *n_out)
{
    pe_config cfg = {.executor = executor, .cache_dir = fresh_cache()};
    assert_int_equal(pe_init(&cfg), PE_OK);
    int64_t na = 1, nb = 1;
    for (int d = 0; d < ra; d++) na *= sa[d];
    for (int d = 0; d < rb; d++) nb *= sb[d];
    pe_array *results = calloc((size_t)n_cases, sizeof *results);
    pe_array *inputs = calloc((size_t)n_cases * 2, sizeof *inputs);
    void *ba = malloc((size_t)(na + 1) * 8), *bb = malloc((size_t)(nb + 1) * 8);
    for (int c = 0; c < n_cases; c++) {
        for (int64_t i = 0; i < na; i++)
            if (t == PE_F32) ((float *)ba)[i] = (float)cases[c].xa[i]; else ((double *)ba)[i] = cases[c].xa[i];
        for (int64_t i = 0; i < nb; i++)
            if (t == PE_F32) ((float *)bb)[i] = (float)cases[c].xb[i]; else ((double *)bb)[i] = cases[c].xb[i];
        inputs[2 * c] = pe_from_host(t, ra, sa, ba);
        inputs[2 * c + 1] = pe_from_host(t, rb, sb, bb);
        results[c] = cases[c].make(cases[c].ctx, inputs[2 * c], inputs[2 * c + 1]);
    }
    double **out = calloc((size_t)n_cases, sizeof *out);
    for (int c = 0; c < n_cases; c++) {
        out[c] = tu_read_as_f64(results[c], n_out);
        pe_release(results[c]), pe_release(inputs[2 * c]), pe_release(inputs[2 * c + 1]);
    }
    pe_stats st;
    pe_get_stats(&st);
    if (strcmp(executor, "jit") == 0) /* every op compiled: none fell back to the interpreter unseen */
        assert_int_equal(st.compile_failures, 0);
    free(ba), free(bb), free(results), free(inputs);
    pe_shutdown();
    return out;
}

static pe_array make_unary(const void *ctx, pe_array a, pe_array b)
{
    (void)b;
    return ((op1_fn)ctx)(PE_HERE, a);
}
static pe_array make_binary(const void *ctx, pe_array a, pe_array b) { return ((op2_fn)ctx)(PE_HERE, a, b); }

static void compare(const char *name, pe_dtype t, const double *want, const double *got, int64_t n, double ulps)
{
    for (int64_t i = 0; i < n; i++) {
        double d = t == PE_F32 ? tu_ulps_f32((float)got[i], (float)want[i]) : tu_ulps_f64(got[i], want[i]);
        if (t == PE_F64) d /= 1 << 29; /* an f32 ulp budget, in f64 ulps */
        if (ulps == 0 && !tu_same_value(got[i], want[i])) d = 1; /* exact ops: the sign of zero too */
        if (!(d <= ulps)) fail_msg("%s %s [%lld]: jit %.17g interp %.17g", name, t == PE_F32 ? "f32" : "f64",
                                   (long long)i, got[i], want[i]);
    }
}

static void check(pe_dtype t, const op_case *cases, int n_cases, const int64_t *sa, int ra, const int64_t *sb, int rb)
{
    int64_t n1, n2;
    double **want = run_on("interp", t, cases, n_cases, sa, ra, sb, rb, &n1);
    double **got = run_on("jit", t, cases, n_cases, sa, ra, sb, rb, &n2);
    assert_int_equal(n1, n2);
    for (int c = 0; c < n_cases; c++) {
        compare(cases[c].name, t, want[c], got[c], n1, cases[c].ulps);
        free(want[c]), free(got[c]);
    }
    free(want), free(got);
}

static int no_fixture(void **state) { (void)state; return 0; }

static void test_unary_ops_match_interpreter(void **state)
{
    (void)state;
    enum { N_UNARY = sizeof unary / sizeof unary[0] };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        op_case cases[N_UNARY];
        double *x[N_UNARY];
        for (int o = 0; o < N_UNARY; o++) {
            x[o] = malloc((size_t)(n + 1) * sizeof *x[o]);
            for (int64_t i = 0; i < n; i++) x[o][i] = uniform(unary[o].lo, unary[o].hi);
            cases[o] = (op_case){unary[o].name, make_unary, (const void *)unary[o].fn, unary[o].ulps, x[o], x[o]};
        }
        for (int t = 0; t < 2; t++) check(t ? PE_F64 : PE_F32, cases, N_UNARY, &n, 1, &n, 1);
        for (int o = 0; o < N_UNARY; o++) free(x[o]);
    }
}

static void test_binary_ops_match_interpreter_with_broadcasting(void **state)
{
    (void)state;
    enum { N_BINARY = sizeof binary / sizeof binary[0] };
    /* (rows, cols) op (cols), (rows, 1) op (1, cols), and same shapes */
    const int64_t shapes[][2][2] = {{{37, 29}, {29, 0}}, {{37, 1}, {1, 29}}, {{1000, 1003}, {1000, 1003}}};
    const int ranks[][2] = {{2, 1}, {2, 2}, {2, 2}};
    for (int c = 0; c < 3; c++) {
        int64_t na = shapes[c][0][0] * shapes[c][0][1];
        int64_t nb = ranks[c][1] == 1 ? shapes[c][1][0] : shapes[c][1][0] * shapes[c][1][1];
        double *a = malloc((size_t)na * sizeof *a), *b = malloc((size_t)nb * sizeof *b);
        for (int64_t i = 0; i < na; i++) a[i] = uniform(0.1, 4);
        for (int64_t i = 0; i < nb; i++) b[i] = i % 5 == 0 ? a[i % na] : uniform(0.1, 4); /* some ties */
        op_case cases[N_BINARY];
        for (int o = 0; o < N_BINARY; o++)
            cases[o] = (op_case){binary[o].name, make_binary, (const void *)binary[o].fn, binary[o].ulps, a, b};
        for (int t = 0; t < 2; t++) check(t ? PE_F64 : PE_F32, cases, N_BINARY, shapes[c][0], ranks[c][0], shapes[c][1], ranks[c][1]);
        free(a), free(b);
    }
}

/* i32 arithmetic and casts: wrap, truncating division, guards. */
static pe_array make_int_chain(const void *ctx, pe_array a, pe_array b)
{
    (void)ctx;
    pe_array ia = pe_cast(a, PE_I32), ib = pe_cast(b, PE_I32);
    pe_array r = pe_add(pe_mul(ia, ib), pe_div(ia, ib));
    r = pe_sub(r, pe_mod(ia, ib));
    r = pe_max(pe_min(r, 1000000), -1000000);
    r = pe_add(r, pe_cond(pe_gt(ia, ib), pe_abs(ia), pe_neg(ib)));
    pe_array f = pe_cast(r, PE_F64);
    pe_release(ia), pe_release(ib), pe_release(r);
    return f;
}

static void test_integer_ops_match_interpreter(void **state)
{
    (void)state;
    int64_t n = 4099;
    double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    for (int64_t i = 0; i < n; i++) {
        a[i] = (double)(int)uniform(-3e4, 3e4);
        b[i] = i % 7 == 0 ? 0 : i % 11 == 0 ? -1 : (double)(int)uniform(-300, 300);
    }
    a[0] = -2147483648.0, b[1] = -1, a[1] = -2147483648.0;
    op_case chain = {"i32 chain", make_int_chain, NULL, 0, a, b};
    check(PE_F64, &chain, 1, &n, 1, &n, 1);
    free(a), free(b);
}

static void test_chain_is_one_kernel_with_one_output_buffer(void **state)
{
    (void)state;
    assert_int_equal(pe_init(&(pe_config){.executor = "jit", .cache_dir = fresh_cache()}), PE_OK);
    int64_t n = 100000;
    float *x = malloc((size_t)n * sizeof *x), *out = malloc((size_t)n * sizeof *out);
    for (int64_t i = 0; i < n; i++) x[i] = (float)i / (float)n;
    pe_array a = pe_f32_1d(x, n);
    pe_stats before, after;
    pe_sync();
    pe_get_stats(&before);
    /* ten ops, every intermediate released */
    pe_array t = pe_mul(a, 2.0f);
    for (int k = 0; k < 9; k++) {
        pe_array u = k % 3 == 0 ? pe_add(t, 1.0f) : k % 3 == 1 ? pe_mul(t, 0.5f) : pe_sin(t);
        pe_release(t);
        t = u;
    }
    pe_sync();
    pe_get_stats(&after);
    assert_int_equal(after.kernels_launched - before.kernels_launched, 1);
    assert_int_equal(after.live_bytes - before.live_bytes, n * (int64_t)sizeof(float)); /* one output buffer */
    assert_int_equal(pe_read(t, out, (size_t)n * sizeof *out), PE_OK);
    for (int64_t i = 0; i < n; i += 997) {
        float v = x[i] * 2.0f;
        for (int k = 0; k < 9; k++) v = k % 3 == 0 ? v + 1.0f : k % 3 == 1 ? v * 0.5f : sinf(v);
        assert_true(tu_ulps_f32(out[i], v) <= 4);
    }
    pe_release(t), pe_release(a);
    free(x), free(out);
    pe_shutdown();
}

/* Every transcendental primitive in one fused loop: the inlined primitives
 * must stay within the compiler's inlining limits (they did not: sin, cos
 * and pow together failed to compile and fell back to the interpreter). */
static void test_all_primitives_in_one_kernel_compile(void **state)
{
    (void)state;
    assert_int_equal(pe_init(&(pe_config){.executor = "jit", .cache_dir = fresh_cache()}), PE_OK);
    int64_t n = 4099;
    float *x = malloc((size_t)n * sizeof *x), *out = malloc((size_t)n * sizeof *out);
    for (int64_t i = 0; i < n; i++) x[i] = 0.1f + (float)i / (float)n;
    pe_array a = pe_f32_1d(x, n);
    pe_stats before, after;
    pe_sync();
    pe_get_stats(&before);
    pe_array terms[] = {pe_sin(a),   pe_cos(a),  pe_pow(a, a), pe_exp(a),  pe_log(a),      pe_tanh(a),
                        pe_erf(a),   pe_atan(a), pe_expm1(a),  pe_log1p(a), pe_cdf_norm(a), pe_exp2(a)};
    int n_terms = (int)(sizeof terms / sizeof *terms);
    pe_array t = terms[0];
    for (int k = 1; k < n_terms; k++) {
        pe_array u = pe_add(t, terms[k]);
        pe_release(t), pe_release(terms[k]);
        t = u;
    }
    assert_int_equal(pe_read(t, out, (size_t)n * sizeof *out), PE_OK);
    pe_get_stats(&after);
    assert_int_equal(after.kernels_launched - before.kernels_launched, 1);
    assert_int_equal(after.kernels_compiled - before.kernels_compiled, 1);
    for (int64_t i = 0; i < n; i += 101) {
        double v = (double)x[i], want = sin(v) + cos(v) + pow(v, v) + exp(v) + log(v) + tanh(v) + erf(v) + atan(v) +
                                        expm1(v) + log1p(v) + 0.5 * erfc(-v / sqrt(2.0)) + exp2(v);
        assert_true(fabs(out[i] - want) <= 1e-5 * fabs(want) + 1e-5);
    }
    /* and each alone, in a reduction (pow alone once passed gcc's size limit for inlining) */
    pe_array (*alone[])(const pe_site *, pe_array) = {pe_sin_at, pe_cos_at, pe_exp_at, pe_log_at, pe_tanh_at,
                                                      pe_erf_at, pe_atan_at, pe_cdf_norm_at, pe_log1p_at};
    for (size_t i = 0; i <= sizeof alone / sizeof *alone; i++) {
        pe_array r = i < sizeof alone / sizeof *alone ? alone[i](NULL, a) : pe_pow(a, a);
        pe_array s = pe_sum(r);
        float v;
        assert_int_equal(pe_read_f32(s, &v), PE_OK);
        pe_release(r), pe_release(s);
    }
    pe_array p25 = pe_sum(pe_pow(a, 2.5f));
    float v25;
    assert_int_equal(pe_read_f32(p25, &v25), PE_OK);
    pe_release(p25);
    pe_get_stats(&after);
    assert_int_equal(after.compile_failures, 0);
    pe_release(t), pe_release(a);
    free(x), free(out);
    pe_shutdown();
}

static void test_program_cache_serves_repeated_chain(void **state)
{
    (void)state;
    char dir[] = "/tmp/pe-test-progcache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    /* the trace cache off, so that every batch asks the program cache */
    assert_int_equal(pe_init(&(pe_config){.executor = "jit", .cache_dir = dir, .trace_cache_entries = -1}), PE_OK);
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = (float)i;
    pe_array a = pe_f32_1d(x, 64);
    for (int it = 0; it < 5; it++) {
        pe_array r = pe_exp(pe_mul(a, -0.01f * (float)(it + 1))); /* the scalar changes, the kernel does not */
        float v[64];
        assert_int_equal(pe_read(r, v, sizeof v), PE_OK);
        assert_true(tu_ulps_f32(v[10], expf(10.0f * (-0.01f * (float)(it + 1)))) <= 2);
        pe_release(r);
    }
    pe_stats st;
    pe_get_stats(&st);
    assert_int_equal(st.kernels_compiled, 1);
    assert_int_equal(st.program_cache_hits, 4);
    pe_release(a);
    pe_shutdown();
    remove_tree(dir);
}

/* f64 sums keep what lanes and chunks would lose: alternating large terms. */
static void test_f64_sum_is_compensated(void **state)
{
    (void)state;
    int64_t n = 100003;
    double *x = malloc((size_t)n * sizeof *x), got[2];
    for (int64_t i = 0; i < n; i++) x[i] = (i % 2 ? 1 : -1) * (1e10 + (double)i * 0.1) + (double)(i % 7) * 1e-6;
    for (int e = 0; e < 2; e++) {
        assert_int_equal(pe_init(&(pe_config){.executor = e ? "interp" : "jit", .cache_dir = fresh_cache()}), PE_OK);
        pe_array a = pe_f64_1d(x, n), s = pe_sum(a);
        assert_int_equal(pe_read_f64(s, &got[e]), PE_OK);
        pe_release(s), pe_release(a);
        pe_shutdown();
    }
    assert_true(tu_ulps_f64(got[0], got[1]) <= 1);
    free(x);
}

/* Selections and conversions with the awkward values: ±0 ties, NaN, ±inf,
 * out-of-range casts; the JIT must give the interpreter's values exactly. */
static pe_array make_special(const void *ctx, pe_array a, pe_array b)
{
    int which = (int)(intptr_t)ctx;
    switch (which) {
    case 0: return pe_min(a, b);
    case 1: return pe_max(a, b);
    case 2: return pe_clamp(a, b, 1.5);
    case 3: return pe_mod(a, b);
    default: return pe_cast(pe_mul(a, 1e9), PE_I32);
    }
}

static void test_special_values_match_interpreter(void **state)
{
    (void)state;
    static const double vals[] = {0.0, -0.0, 1.5, -1.5, NAN, INFINITY, -INFINITY, 3e9, -3e9, 2.0};
    enum { V = sizeof vals / sizeof vals[0] };
    double *a = malloc(V * V * sizeof *a), *b = malloc(V * V * sizeof *b);
    for (int i = 0; i < V; i++)
        for (int j = 0; j < V; j++) a[i * V + j] = vals[i], b[i * V + j] = vals[j];
    int64_t n = V * V;
    op_case cases[5];
    const char *names[5] = {"min", "max", "clamp", "mod", "cast i32"};
    for (int c = 0; c < 5; c++) cases[c] = (op_case){names[c], make_special, (const void *)(intptr_t)c, 0, a, b};
    for (int t = 0; t < 2; t++) check(t ? PE_F64 : PE_F32, cases, 5, &n, 1, &n, 1);
    free(a), free(b);
}

/* The vectorised primitives (exp, log in f32): at most 2 ulp from the
 * double-precision result on 10^6 random inputs over the whole domain
 * (subnormals, overflow and underflow included) and the edge cases. */
static void test_primitives_accuracy(void **state)
{
    (void)state;
    assert_int_equal(pe_init(&(pe_config){.executor = "jit", .cache_dir = fresh_cache()}), PE_OK);
    enum { N = 1000000 };
    float *x = malloc(N * sizeof *x), *out = malloc(N * sizeof *out);
    static const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 88.72f, 88.73f, -87.3f,
                                  -103.9f, -104.0f, 1e-45f, 1.17549435e-38f, 3.4e38f, 0.5f, 2.0f, 0.99999994f, 1.0000001f};
    for (int which = 0; which < 2; which++) {
        for (int i = 0; i < N; i++)
            x[i] = which == 0 ? (float)uniform(-110, 95) : (float)exp(uniform(-103, 88.7));
        memcpy(x, edges, sizeof edges);
        pe_array a = pe_f32_1d(x, N), r = which == 0 ? pe_exp(a) : pe_log(a);
        assert_int_equal(pe_read(r, out, N * sizeof *out), PE_OK);
        for (int i = 0; i < N; i++) {
            float want = (float)(which == 0 ? exp((double)x[i]) : log((double)x[i]));
            if (!(tu_ulps_f32(out[i], want) <= 2))
                fail_msg("%s(%.9g): %.9g, want %.9g", which ? "log" : "exp", x[i], out[i], want);
        }
        pe_release(r), pe_release(a);
    }
    free(x), free(out);
    pe_shutdown();
}

/* Generators fuse into their consumers: pe_index and pe_identity become
 * coordinates inside the kernel, with no buffer of their own. */
static void test_generators_fuse(void **state)
{
    (void)state;
    assert_int_equal(pe_init(&(pe_config){.executor = "jit", .cache_dir = fresh_cache()}), PE_OK);
    int64_t shape[2] = {37, 41};
    pe_stats before, after;
    pe_get_stats(&before);
    pe_array rows = pe_index(PE_F32, 2, shape, 0), cols = pe_index(PE_F32, 2, shape, 1);
    pe_array r = pe_add(pe_mul(rows, 100.0f), cols);
    pe_release(rows), pe_release(cols);
    pe_array eye = pe_identity(PE_F64, 5);
    pe_array e2 = pe_mul(eye, 3.0);
    pe_release(eye);
    float v[37 * 41];
    double ev[25];
    assert_int_equal(pe_read(r, v, sizeof v), PE_OK);
    assert_int_equal(pe_read(e2, ev, sizeof ev), PE_OK);
    pe_get_stats(&after);
    for (int i = 0; i < 37; i++)
        for (int j = 0; j < 41; j++) assert_true(v[i * 41 + j] == (float)(i * 100 + j));
    for (int i = 0; i < 25; i++) assert_true(ev[i] == (i / 5 == i % 5 ? 3.0 : 0.0));
    assert_int_equal(after.kernels_launched - before.kernels_launched, 2);
    pe_release(r), pe_release(e2);
    pe_shutdown();
}

/* The trace cache: 100 identical iterations run the program generator once;
 * another size or another op sequence is a miss and computes its own values. */
static void test_trace_cache_replays_loop_iterations(void **state)
{
    (void)state;
    assert_int_equal(pe_init(&(pe_config){.executor = "jit", .cache_dir = fresh_cache()}), PE_OK);
    float x[300], v[300];
    for (int i = 0; i < 300; i++) x[i] = (float)i * 0.01f;
    pe_array a = pe_f32_1d(x, 100), big = pe_f32_1d(x, 300);
    pe_stats st0, st;
    pe_get_stats(&st0);
    for (int it = 0; it < 100; it++) {
        pe_scope s = pe_scope_begin();
        float k = 2.0f + (float)it; /* a new scalar each time: a parameter, not part of the key */
        pe_array r = pe_add(pe_mul(a, k), pe_sin(a));
        assert_int_equal(pe_read(r, v, 100 * sizeof(float)), PE_OK);
        for (int i = 0; i < 100; i += 9) assert_true(tu_ulps_f32(v[i], x[i] * k + sinf(x[i])) <= 2);
        pe_scope_end(s);
    }
    pe_get_stats(&st);
    assert_int_equal(st.proggen_runs - st0.proggen_runs, 1);
    assert_int_equal(st.trace_hits - st0.trace_hits, 99);
    /* another size: a miss */
    pe_array r = pe_add(pe_mul(big, 3.0f), pe_sin(big));
    assert_int_equal(pe_read(r, v, 300 * sizeof(float)), PE_OK);
    assert_true(tu_ulps_f32(v[250], x[250] * 3.0f + sinf(x[250])) <= 2);
    pe_release(r);
    /* the same sites, another op order: a miss with its own values */
    for (int variant = 0; variant < 2; variant++) {
        pe_array m = variant ? pe_sin(pe_mul(a, 3.0f)) : pe_mul(pe_sin(a), 3.0f);
        assert_int_equal(pe_read(m, v, 100 * sizeof(float)), PE_OK);
        float want = variant ? sinf(x[50] * 3.0f) : sinf(x[50]) * 3.0f;
        assert_true(tu_ulps_f32(v[50], want) <= 2);
        pe_release(m);
    }
    pe_get_stats(&st);
    assert_int_equal(st.proggen_runs - st0.proggen_runs, 4);
    pe_release(a), pe_release(big);
    pe_shutdown();
}

/* The disk cache: a second runtime compiles nothing; a truncated or corrupt
 * file is recompiled; a directory others can write to is refused. */
static int64_t run_chain_compiles(const char *dir, uint64_t *disk_hits)
{
    assert_int_equal(pe_init(&(pe_config){.executor = "jit", .cache_dir = dir}), PE_OK);
    float x[100], v[100];
    for (int i = 0; i < 100; i++) x[i] = (float)i * 0.01f;
    pe_array a = pe_f32_1d(x, 100), c = pe_cos(a), r = pe_mul(c, pe_exp(a));
    assert_int_equal(pe_read(r, v, sizeof v), PE_OK);
    for (int i = 0; i < 100; i++) assert_true(tu_ulps_f32(v[i], cosf(x[i]) * expf(x[i])) <= 3);
    pe_stats st;
    pe_get_stats(&st);
    pe_shutdown(); /* the nested exp is released by shutdown */
    if (disk_hits) *disk_hits = st.disk_cache_hits;
    return (int64_t)st.kernels_compiled;
}

static char *only_cache_file(const char *dir)
{
    static char path[512];
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && strncmp(e->d_name, "traces-", 7) != 0) /* kernels only, not the saved trace cache */
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name), n++;
    closedir(d);
    assert_int_equal(n, 1);
    return path;
}

static void test_disk_cache_survives_runs_and_recovers(void **state)
{
    (void)state;
    char dir[] = "/tmp/pe-test-disk-XXXXXX";
    assert_non_null(mkdtemp(dir));
    uint64_t hits;
    assert_int_equal(run_chain_compiles(dir, &hits), 1);
    assert_int_equal(run_chain_compiles(dir, &hits), 0);
    assert_int_equal(hits, 1);
    /* truncated */
    char *file = only_cache_file(dir);
    assert_int_equal(truncate(file, 100), 0);
    assert_int_equal(run_chain_compiles(dir, &hits), 1);
    assert_int_equal(run_chain_compiles(dir, &hits), 0);
    /* one byte flipped in the middle */
    file = only_cache_file(dir);
    FILE *f = fopen(file, "r+b");
    assert_non_null(f);
    fseek(f, 200, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 200, SEEK_SET);
    fputc(ch ^ 0x5a, f);
    fclose(f);
    assert_int_equal(run_chain_compiles(dir, &hits), 1);
    assert_int_equal(hits, 0);
    /* open to others: refused, nothing written or read */
    remove_tree(dir);
    strcpy(dir, "/tmp/pe-test-disk-XXXXXX");
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(run_chain_compiles(dir, &hits), 1);
    assert_int_equal(run_chain_compiles(dir, &hits), 1);
    remove_tree(dir);
}

/* Full reductions of a fused chain: one pass, no intermediate buffer, close
 * to the interpreter, bitwise the same for 1 and 2 threads. */
static double reduce_with(const char *executor, int threads, pe_array (*reduce)(const pe_site *, pe_array),
                          const float *x, int64_t n, pe_stats *delta)
{
    assert_int_equal(pe_init(&(pe_config){.executor = executor, .threads = threads, .cache_dir = fresh_cache()}), PE_OK);
    pe_array a = pe_f32_1d(x, n);
    pe_stats before, after;
    pe_sync();
    pe_get_stats(&before);
    pe_array m = pe_mul(a, 3.0f), t = pe_sin(m);
    pe_array r = reduce(PE_HERE, t);
    pe_release(m), pe_release(t);
    double v;
    assert_int_equal(pe_read_f64(r, &v), PE_OK);
    pe_get_stats(&after);
    if (delta) {
        delta->kernels_launched = after.kernels_launched - before.kernels_launched;
        delta->live_bytes = after.live_bytes - before.live_bytes;
    }
    pe_release(r), pe_release(a);
    pe_shutdown();
    return v;
}

static void test_reductions_fuse_and_are_deterministic(void **state)
{
    (void)state;
    pe_array (*const reductions[])(const pe_site *, pe_array) = {pe_sum_at, pe_mean_at, pe_norm1_at, pe_norm2_at,
                                                                  pe_max_reduce_at, pe_min_reduce_at, pe_norminf_at};
    const int64_t ns[] = {1, 7, 16385, 1000003};
    for (size_t s = 0; s < sizeof ns / sizeof ns[0]; s++) {
        int64_t n = ns[s];
        float *x = malloc((size_t)n * sizeof *x);
        for (int64_t i = 0; i < n; i++) x[i] = (float)uniform(-1, 1);
        for (size_t r = 0; r < sizeof reductions / sizeof reductions[0]; r++) {
            pe_stats delta;
            double want = reduce_with("interp", 1, reductions[r], x, n, NULL);
            double one = reduce_with("jit", 1, reductions[r], x, n, &delta);
            double two = reduce_with("jit", 2, reductions[r], x, n, NULL);
            assert_memory_equal(&one, &two, sizeof one); /* bitwise, whatever the thread count */
            assert_true(tu_ulps_f32((float)one, (float)want) <= 1);
            assert_int_equal(delta.kernels_launched, 1);              /* sin, mul and the reduction: one pass */
            if (delta.live_bytes != (int64_t)sizeof(float)) fail_msg("n %lld reduction %zu: %lld bytes", (long long)n, r, (long long)delta.live_bytes);
        }
        free(x);
    }
}

/* The code generators' table agrees with itself: a composed op has no
 * emission class of its own (it reaches no generator), an element-wise op
 * a generator emits has one, a LIBM op has a libm function; a lowering's
 * steps are primitives the generators emit, and their catalog costs add up
 * to the op's own (the GPU's vector loop is chosen by the sum of a kernel's
 * op costs, so lowering must not move a kernel across that line). */
static void test_lowering_table_is_consistent(void **state)
{
    (void)state;
    for (int op = 0; op < PE_OP__COUNT; op++) {
        const pe_lowering *l = &pe_codegen_of((pe_op)op)->lowering;
        pe_emit_class how = pe_emit_class_of((pe_op)op);
        bool elementwise = pe_op_table[op].kind != PE_KIND_REDUCE && op != PE_OP_gather;
        if (l->n_steps || !elementwise) assert_int_equal(how, PE_EMIT_NONE);
        else
            for (int t = PE_F32; t <= PE_BOOL; t++) {
                pe_dtype ct = (pe_dtype)t;
                if (pe_cpu_can_emit((pe_op)op, ct, ct, ct) || pe_cuda_can_emit((pe_op)op, ct, ct, ct)) assert_int_not_equal(how, PE_EMIT_NONE);
            }
        if (how == PE_EMIT_LIBM) assert_non_null(pe_libm_name((pe_op)op));
        if (how == PE_EMIT_BINOP || how == PE_EMIT_CMP) assert_int_not_equal(pe_c_operator_of((pe_op)op), PE_COP_NONE);
        if (!l->n_steps) continue;
        int cost = 0;
        for (int s = 0; s < l->n_steps; s++) {
            assert_false(pe_op_composed((pe_op)l->step[s].op));
            assert_true(pe_cpu_can_emit((pe_op)l->step[s].op, PE_F64, PE_F64, PE_F64));
            cost += pe_op_table[l->step[s].op].cost;
        }
        if (cost != pe_op_table[op].cost) fail_msg("%s costs %d, its lowering %d", pe_op_table[op].name, pe_op_table[op].cost, cost);
    }
}

/* sec(x) in f32: cos and the reciprocal computed in double, rounded once to
 * f32 by the last step; the stores follow the values; lowering twice
 * changes nothing. */
static void test_lowering_rewrites_composed_ops(void **state)
{
    (void)state;
    kir_kernel k = {0};
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = PE_F32};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_F32};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_F32};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {0}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_sec, .dtype = PE_F32, .ctype = PE_F32, .n = 1, .a = {0}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_exp, .dtype = PE_F32, .ctype = PE_F32, .n = 1, .a = {1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {1, 1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {2, 2}};
    assert_false(kir_lowered(&k));
    assert_true(kir_lower(&k));
    assert_true(kir_lowered(&k) && kir_valid(&k));
    assert_int_equal(k.n_body, 6);
    const kir_inst *cosine = &k.body[1], *rcp = &k.body[2], *e = &k.body[3];
    assert_true(cosine->op == PE_OP_cos && cosine->ctype == PE_F64 && cosine->dtype == PE_F64 && cosine->a[0] == 0);
    assert_true(rcp->op == PE_OP_rcp && rcp->ctype == PE_F64 && rcp->dtype == PE_F32 && rcp->a[0] == 1);
    assert_true(e->op == PE_OP_exp && e->a[0] == 2);
    assert_true(k.body[4].a[1] == 2 && k.body[5].a[1] == 3);
    kir_kernel again = k;
    assert_true(kir_lower(&again));
    assert_true(kir_equal(&k, &again));
}

int main(void)
{
    /* These tests count compiles and cache files exactly; built through
     * pecc, the compile ahead (tests/pecc/aot.sh tests it) would add its own. */
    setenv("PE_AOT", "0", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unary_ops_match_interpreter, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_binary_ops_match_interpreter_with_broadcasting, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_integer_ops_match_interpreter, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_chain_is_one_kernel_with_one_output_buffer, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_program_cache_serves_repeated_chain, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_reductions_fuse_and_are_deterministic, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_disk_cache_survives_runs_and_recovers, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_trace_cache_replays_loop_iterations, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_f64_sum_is_compensated, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_generators_fuse, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_special_values_match_interpreter, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_all_primitives_in_one_kernel_compile, no_fixture, no_fixture),
        cmocka_unit_test_setup_teardown(test_primitives_accuracy, no_fixture, no_fixture),
        cmocka_unit_test(test_lowering_table_is_consistent),
        cmocka_unit_test(test_lowering_rewrites_composed_ops),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (cache_dir[0]) remove_tree(cache_dir);
    return failed;
}
