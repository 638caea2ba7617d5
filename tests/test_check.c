/* test_check.c — the debugger (exec/interp/reference.c, jit/api/api_debug.c):
 * PE_CHECK catches a kernel made wrong on purpose (PE_TEST_PERTURB_OP, the
 * code generators' test-only fault) at the line of its op, with the element
 * and both values; copyout catches it when the value is read; integers
 * compare exactly; random programs of the op suite raise nothing; pe_peek
 * looks at a pending value without changing the batches, kernels or trace
 * keys; pe_reference gives the interpreter's value.  Oracles: C loops.
 * Also run on the emulated GPU (test_check_on_host) and a real one
 * (test_check_gpu), where the CUDA generator's kernels take the fault. */
#include "test_util.h"

#include <unistd.h>

#define N 4096

/* tu_expect_error without the clear: the message is read after */
#define tu_expect_error_keep(code_, line_)                                                 \
    do {                                                                                   \
        char where_[64];                                                                   \
        snprintf(where_, sizeof where_, "%s:%d:", tu_basename(__FILE__), (line_));         \
        if (tu_errors.count != 1 || tu_errors.code != (code_) || !strstr(tu_errors.message, where_) || \
            tu_errors.line != (line_))                                                     \
            fail_msg("expected one error %d at %s, got %d errors, last %d: %s", (int)(code_), where_, \
                     tu_errors.count, (int)tu_errors.code, tu_errors.message);            \
    } while (0)

static char cache_dir[64];
/* Generated kernels run (the CPU's, or a GPU's: both generators take the
 * fault); under PE_EXECUTOR=interp nothing is perturbed and nothing differs. */
static bool kernels_run;

/* A runtime with PE_CHECK=mode and the fault on `op` (NULL: none), in a
 * cache directory of the test's own. */
static void start(const char *mode, const char *perturbed_op)
{
    if (perturbed_op) setenv("PE_TEST_PERTURB_OP", perturbed_op, 1);
    else unsetenv("PE_TEST_PERTURB_OP");
    tu_errors_clear();
    pe_push_error_handler(tu_record_error, NULL);
    assert_int_equal(pe_init(&(pe_config){.check = mode, .cache_dir = cache_dir}), PE_OK);
    const char *ex = getenv("PE_EXECUTOR");
    kernels_run = !(ex && strcmp(ex, "interp") == 0);
}

static void stop(void)
{
    pe_stats st;
    pe_get_stats(&st);
    assert_int_equal(st.compile_failures, 0); /* the interpreter would hide a kernel (test_util.h) */
    pe_shutdown();
    pe_pop_error_handler();
    unsetenv("PE_TEST_PERTURB_OP");
}

static float xs[N];
static pe_array input(void)
{
    for (int i = 0; i < N; i++) xs[i] = 0.25f + (float)i / N;
    return pe_f32_1d(xs, N);
}

/* The fault's values from the message: "... element E of ... : F here, R in the reference" */
static void parse_difference(long long *at, double *fast, double *ref)
{
    const char *m = strstr(tu_errors.message, "element ");
    assert_non_null(m);
    assert_int_equal(sscanf(m, "element %lld", at), 1);
    const char *v = strstr(m, "differs from the reference: ");
    assert_non_null(v);
    assert_int_equal(sscanf(v, "differs from the reference: %lf here, %lf in the reference", fast, ref), 2);
}

/* PE_CHECK=all: the perturbed tanh is stored (hinted) and never read; the
 * batch's check finds it and pe_sync raises it at tanh's line, before the
 * add after it (program order), with tanh's values. */
static void test_all_names_the_perturbed_op(void **state)
{
    (void)state;
    start("all", "tanh");
    pe_array x = input();
    pe_array y = pe_mul(x, 2.0f);
    pe_array z = pe_tanh(y); int tanh_line = __LINE__;
    pe_array w = pe_add(z, 1.0f);
    pe_hint_read(z);
    pe_hint_read(w);
    pe_sync();
    if (!kernels_run) { /* the interpreter is its own reference: nothing differs */
        tu_expect_no_error();
    } else {
        tu_expect_error_keep(PE_E_CHECK, tanh_line);
        long long at;
        double fast, ref;
        parse_difference(&at, &fast, &ref);
        assert_true(at >= 0 && at < N);
        double want = (float)tanh((double)(float)(2.0f * xs[at]));
        assert_true(fabs(ref - want) <= 1e-7 * fabs(want));
        assert_true(fabs(fast - want * (1 + 1.0 / 128)) <= 1e-6 * fabs(want)); /* the fault's factor */
        assert_non_null(strstr(tu_errors.message, "pe_tanh"));
        tu_errors_clear();
        /* one report a run: the read of w (also wrong) raises nothing more */
        float out[N];
        assert_int_equal(pe_read(w, out, sizeof out), PE_OK);
        tu_expect_no_error();
    }
    pe_release(x), pe_release(y), pe_release(z), pe_release(w);
    stop();
}

/* PE_CHECK=copyout: nothing is raised until the wrong value is copied out;
 * then the read returns PE_E_CHECK (with the value) naming tanh's line. */
static void test_copyout_catches_it_when_read(void **state)
{
    (void)state;
    start("copyout", "tanh");
    pe_array x = input();
    pe_array y = pe_mul(x, 2.0f);
    pe_array z = pe_tanh(y); int tanh_line = __LINE__;
    float out[N];
    assert_int_equal(pe_read(y, out, sizeof out), PE_OK); /* a right value: nothing */
    for (int i = 0; i < N; i++) assert_true(out[i] == 2.0f * xs[i]);
    tu_expect_no_error();
    int rc = pe_read(z, out, sizeof out);
    if (!kernels_run) {
        assert_int_equal(rc, PE_OK);
        tu_expect_no_error();
    } else {
        assert_int_equal(rc, PE_E_CHECK);
        tu_expect_error_keep(PE_E_CHECK, tanh_line);
        long long at;
        double fast, ref;
        parse_difference(&at, &fast, &ref);
        assert_true((float)fast == out[at]); /* the value the read copied (%.9g: a float's every digit) */
        assert_non_null(strstr(tu_errors.message, "copied out by pe_read at"));
        tu_errors_clear();
    }
    pe_release(x), pe_release(y), pe_release(z);
    stop();
}

/* PE_CHECK=off: the fault goes unseen (what the check costs nothing for). */
static void test_off_sees_nothing(void **state)
{
    (void)state;
    start("off", "tanh");
    pe_array x = input();
    pe_array z = pe_tanh(x);
    float out[N];
    assert_int_equal(pe_read(z, out, sizeof out), PE_OK);
    tu_expect_no_error();
    if (kernels_run) assert_true(fabs(out[7] - tanhf(xs[7]) * (1 + 1.0 / 128)) <= 1e-6); /* the fault is there */
    pe_release(x), pe_release(z);
    stop();
}

/* Integers compare exactly, whatever PE_CHECK_SCALE: i32 results one off
 * are caught; right i32 results (wrapping included) are not reported. */
static void test_integers_exactly(void **state)
{
    (void)state;
    int32_t a[N], b[N], out[N];
    for (int i = 0; i < N; i++) a[i] = i * 977 - 2000000, b[i] = 2147483 - i * 31;
    int64_t n = N;
    /* right values, products that wrap */
    start("all", NULL);
    pe_array pa = pe_from_host(PE_I32, 1, &n, a), pb = pe_from_host(PE_I32, 1, &n, b);
    pe_array p = pe_mul(pa, pb);
    assert_int_equal(pe_read(p, out, sizeof out), PE_OK);
    for (int i = 0; i < N; i++) assert_int_equal(out[i], (int32_t)((uint32_t)a[i] * (uint32_t)b[i]));
    tu_expect_no_error();
    pe_release(p), pe_release(pa), pe_release(pb);
    stop();
    /* one off, with a scale that would forgive it in floats */
    setenv("PE_CHECK_SCALE", "0.5", 1);
    start("copyout", "sub");
    pa = pe_from_host(PE_I32, 1, &n, a), pb = pe_from_host(PE_I32, 1, &n, b);
    pe_array d = pe_sub(pa, pb); int sub_line = __LINE__;
    int rc = pe_read(d, out, sizeof out);
    if (kernels_run) {
        assert_int_equal(rc, PE_E_CHECK);
        tu_expect_error_keep(PE_E_CHECK, sub_line);
        long long at;
        double fast, ref;
        parse_difference(&at, &fast, &ref);
        assert_true(ref == (double)(a[at] - b[at]) && fast == ref + 1);
        tu_errors_clear();
    } else {
        assert_int_equal(rc, PE_OK);
        tu_expect_no_error();
    }
    pe_release(d), pe_release(pa), pe_release(pb);
    stop();
    unsetenv("PE_CHECK_SCALE");
}

/* ------------------------------------------------ no false positives */

static uint64_t rng;
static uint32_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* One random step over a and b: element-wise ops (the costly ones too),
 * broadcasts, reductions, views. */
static pe_array random_op(pe_array a, pe_array b)
{
    bool matrix = pe_rank(a) == 2;
    switch (next() % 20) {
    case 0: return pe_add(a, b);
    case 1: return pe_mul(a, b);
    case 2: return pe_sub(a, pe_mul(b, 0.5));
    case 3: return pe_div(a, pe_add(pe_abs(b), 1.0));
    case 4: return pe_sqrt(pe_abs(a));
    case 5: return pe_tanh(a);
    case 6: return pe_sin(a);
    case 7: return pe_cond(pe_gt(a, b), a, b);
    case 8: return pe_mul(pe_exp(pe_neg(pe_abs(a))), 2.0f);
    case 9: return matrix ? pe_add(pe_sum_axis(a, (int)(next() % 2)), 0.0) : pe_exp(pe_mul(a, 0.1));
    case 10: return matrix ? pe_transpose(a) : pe_log(pe_add(pe_abs(a), 0.5));
    case 11: return pe_mean(a);
    case 12: return pe_max(a);
    case 13: return pe_dot(a, b);
    case 14: return pe_log(pe_add(pe_abs(a), 1.0));
    case 15: return pe_pow(pe_add(pe_abs(a), 0.5), 1.7);
    case 16: return pe_exp(pe_mul(pe_tanh(a), 3.0));
    case 17: return pe_sum(pe_exp(a));
    case 18: return pe_cos(pe_mul(a, b));
    default: return pe_stddev(a);
    }
}

static void run_random_program(uint64_t seed, pe_dtype t)
{
    rng = seed;
    pe_scope scope = pe_scope_begin();
    enum { STEPS = 24, MAX = STEPS + 3 };
    pe_array v[MAX];
    int64_t m = 1 + next() % 9, n = 1 + next() % 300;
    int64_t shapes[3][2] = {{m, n}, {1, n}, {m, 1}};
    for (int k = 0; k < 3; k++) {
        int64_t count = shapes[k][0] * shapes[k][1];
        double *d = malloc((size_t)count * sizeof *d);
        float *f = malloc((size_t)count * sizeof *f);
        for (int64_t i = 0; i < count; i++) d[i] = 0.5 + 1.5 * (next() % 100000) / 100000.0, f[i] = (float)d[i];
        v[k] = pe_from_host(t, 2, shapes[k], t == PE_F32 ? (const void *)f : (const void *)d);
        free(d), free(f);
    }
    int nv = 3;
    for (int step = 0; step < STEPS; step++) {
        int i = (int)(next() % (uint32_t)nv), j = (int)(next() % (uint32_t)nv);
        if (!tu_broadcastable(v[i], v[j])) continue;
        v[nv++] = random_op(v[i], v[j]);
    }
    for (int k = 3; k < nv; k++) {
        if (next() % 2) continue;
        size_t bytes = (size_t)pe_numel(v[k]) * (t == PE_F32 ? 4 : 8);
        void *x = malloc(bytes ? bytes : 1); /* copyout and all: compared */
        if (pe_read(v[k], x, bytes) != PE_OK) fail_msg("seed %llx: %s", (unsigned long long)seed, tu_errors.message);
        free(x);
    }
    pe_scope_end(scope);
}

static void test_no_false_positives(void **state)
{
    (void)state;
    const char *modes[] = {"all", "copyout"};
    for (int mode = 0; mode < 2; mode++) {
        start(modes[mode], NULL);
        for (int prog = 0; prog < 40; prog++) {
            run_random_program(0x9e3779b97f4a7c15ull * (uint64_t)(prog + 1), prog % 2 ? PE_F64 : PE_F32);
            if (tu_errors.count) fail_msg("PE_CHECK=%s, program %d: %s", modes[mode], prog, tu_errors.message);
        }
        /* long reductions of costly values: sums, means, norms of 10^6 exp, log, pow */
        enum { BIG = 1 << 20 };
        float *f = malloc(BIG * sizeof *f);
        for (int i = 0; i < BIG; i++) f[i] = (float)(i % 1000) / 250.0f - 2.0f;
        pe_array x = pe_f32_1d(f, BIG);
        pe_array r[] = {pe_sum(pe_exp(x)), pe_mean(pe_log(pe_add(pe_abs(x), 0.01f))), pe_sum(x),
                        pe_norm2(pe_pow(pe_abs(x), 1.5f)), pe_sum(pe_sin(pe_mul(x, 100.0f))), pe_var(pe_exp(x)),
                        pe_max(pe_tanh(x)), pe_sum(pe_sub(pe_exp(x), pe_exp(pe_neg(x))))};
        for (size_t k = 0; k < sizeof r / sizeof r[0]; k++) {
            float got;
            assert_int_equal(pe_read(r[k], &got, sizeof got), PE_OK);
            pe_release(r[k]);
        }
        tu_expect_no_error();
        pe_release(x);
        free(f);
        pe_sync();
        tu_expect_no_error();
        stop();
    }
}

/* ------------------------------------------------------------- pe_peek */

/* A loop of element-wise updates and a reduction, read at the end; with
 * `peek`, two pending values looked at on the way (checked against the C
 * loop's). */
static double run_loop(bool peek)
{
    pe_array x = input();
    pe_array acc = pe_mul(x, 0.5f);
    float shadow[N], seen[N];
    for (int i = 0; i < N; i++) shadow[i] = xs[i] * 0.5f;
    for (int it = 0; it < 6; it++) {
        pe_array next_acc = pe_add(pe_mul(acc, 0.9f), pe_sqrt(x));
        for (int i = 0; i < N; i++) shadow[i] = shadow[i] * 0.9f + sqrtf(xs[i]);
        pe_release(acc);
        acc = next_acc;
        if (peek && it % 3 == 1) {
            pe_stats before, after;
            pe_get_stats(&before);
            assert_int_equal(pe_peek(acc, seen, sizeof seen), PE_OK);
            pe_get_stats(&after);
            assert_int_equal(after.flushes, before.flushes); /* nothing ran */
            assert_int_equal(after.queued, before.queued);
            for (int i = 0; i < N; i++) assert_true(fabsf(seen[i] - shadow[i]) <= 1e-6f * fabsf(shadow[i]));
        }
    }
    pe_array total = pe_sum(acc);
    float result;
    assert_int_equal(pe_read(total, &result, sizeof result), PE_OK);
    pe_release(total), pe_release(acc), pe_release(x);
    return result;
}

/* The same program with and without peeks makes the same batches: the run
 * with peeks finds every one of them in the trace cache (same keys),
 * compiles nothing and launches the same kernels, storing the same arrays. */
static void test_peek_changes_no_batch(void **state)
{
    (void)state;
    start("off", NULL);
    double plain = run_loop(false);
    pe_stats a, b, c;
    pe_get_stats(&a);
    double again = run_loop(false); /* the reference run's own second time */
    pe_get_stats(&b);
    double peeked = run_loop(true);
    pe_get_stats(&c);
    assert_true(plain == again && peeked == plain);
    uint64_t lookups = b.trace_lookups - a.trace_lookups, hits = b.trace_hits - a.trace_hits;
    assert_int_equal(c.trace_lookups - b.trace_lookups, lookups);
    assert_int_equal(c.trace_hits - b.trace_hits, hits);
    if (kernels_run) assert_true(lookups > 0 && hits == lookups);
    assert_int_equal(c.kernels_compiled, b.kernels_compiled);
    assert_int_equal(c.kernels_launched - b.kernels_launched, b.kernels_launched - a.kernels_launched);
    assert_int_equal(c.kernel_outputs - b.kernel_outputs, b.kernel_outputs - a.kernel_outputs);
    assert_int_equal(c.flushes - b.flushes, b.flushes - a.flushes);
    assert_int_equal(c.ops_executed - b.ops_executed, b.ops_executed - a.ops_executed);
    assert_int_equal(c.values_deferred - b.values_deferred, b.values_deferred - a.values_deferred);
    tu_expect_no_error();
    stop();
}

static void test_peek_errors(void **state)
{
    (void)state;
    start("off", NULL);
    pe_array x = input();
    float out[N];
    assert_int_equal(pe_peek(x, NULL, sizeof out), PE_E_ARG); int null_line = __LINE__;
    tu_expect_error(PE_E_ARG, null_line);
    assert_int_equal(pe_peek(x, out, 3), PE_E_ARG); int size_line = __LINE__;
    tu_expect_error(PE_E_ARG, size_line);
    assert_int_equal(pe_peek(x, out, sizeof out), PE_OK); /* a value the program gave */
    assert_memory_equal(out, xs, sizeof out);
    pe_array bad = pe_add(x, pe_f32_1d(xs, 3)); int bad_line = __LINE__; /* shapes do not broadcast */
    tu_expect_error(PE_E_SHAPE, bad_line);
    assert_int_equal(pe_peek(bad, out, sizeof(float)), PE_E_INVALID); int peek_line = __LINE__;
    tu_expect_error(PE_E_INVALID, peek_line);
    pe_release(bad), pe_release(x);
    stop();
}

/* -------------------------------------------------------- pe_reference */

/* With PE_CHECK the reference of a perturbed value is the right value (the
 * C loop's), while its read gives the kernel's; without PE_CHECK a pending
 * value's reference is its expression on the interpreter. */
static void test_reference_values(void **state)
{
    (void)state;
    for (int checked = 0; checked < 2; checked++) {
        start(checked ? "all" : "off", "tanh");
        pe_array x = input();
        pe_array z = pe_tanh(pe_mul(x, 2.0f));
        pe_array w = pe_add(z, 1.0f);
        pe_array rz = pe_reference(z), rw = pe_reference(w);
        assert_int_equal(pe_dtype_of(rz), PE_F32);
        assert_int_equal(pe_numel(rz), N);
        float got[N], ref_z[N], ref_w[N];
        assert_int_equal(pe_read(rz, ref_z, sizeof ref_z), PE_OK);
        assert_int_equal(pe_read(rw, ref_w, sizeof ref_w), PE_OK);
        for (int i = 0; i < N; i++) {
            float want = (float)tanh((double)(2.0f * xs[i]));
            assert_true(ref_z[i] == want);
            assert_true(ref_w[i] == (float)((double)want + 1.0));
        }
        tu_expect_no_error(); /* data arrays: their own references */
        /* the read is the kernel's (perturbed on the JIT) */
        (void)pe_read(z, got, sizeof got);
        if (checked && kernels_run) {
            assert_int_equal(tu_errors.code, PE_E_CHECK);
            tu_errors_clear();
        }
        tu_expect_no_error();
        if (kernels_run) assert_true(got[5] != ref_z[5]);
        /* once computed: with PE_CHECK still the reference; without, its value */
        pe_array again = pe_reference(z);
        assert_int_equal(pe_read(again, ref_w, sizeof ref_w), PE_OK);
        assert_true(ref_w[5] == (checked ? ref_z[5] : got[5]));
        pe_release(again), pe_release(rz), pe_release(rw), pe_release(w), pe_release(z), pe_release(x);
        tu_expect_no_error();
        stop();
    }
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(cache_dir, sizeof cache_dir, "/tmp/pe-test-check-XXXXXX");
    return mkdtemp(cache_dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    tu_remove_dir(cache_dir);
    return 0;
}

int main(void)
{
    /* test_check_gpu (label gpu): the same on a real GPU, skipped without one */
    if (getenv("PE_TEST_CHECK_GPU")) {
        if (pe_init(NULL) != PE_OK) return 1;
        int devices = pe_device_count();
        pe_shutdown();
        if (devices < 2) return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_names_the_perturbed_op), cmocka_unit_test(test_copyout_catches_it_when_read),
        cmocka_unit_test(test_off_sees_nothing),          cmocka_unit_test(test_integers_exactly),
        cmocka_unit_test(test_no_false_positives),        cmocka_unit_test(test_peek_changes_no_batch),
        cmocka_unit_test(test_peek_errors),               cmocka_unit_test(test_reference_values),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
