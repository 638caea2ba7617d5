/* test_random_programs.c — differential testing of the CPU JIT: random
 * programs of element-wise ops, broadcasts, reductions and views, with random
 * releases of intermediates, run on the JIT and on the reference interpreter
 * in fresh runtimes, and replayed three times in one runtime (so the trace
 * cache serves the later runs); every value read must agree.
 * PE_TEST_VALUES_OUT=file writes every value read (the interpreter's, then
 * each replay's, as doubles) to file: two builds compared bitwise with cmp. */
#include "test_util.h"

#include <stdbool.h>

#define PROGRAMS 60
#define STEPS 24
#define MAX_VALUES (STEPS + 4)

static uint64_t rng;
static uint32_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static double uniform(double lo, double hi) { return lo + (hi - lo) * (next() % 100000) / 100000.0; }

typedef struct {
    pe_array a;
    bool live;
} value;

/* Three inputs of random values: m x n, 1 x n and m x 1 (n <= max_n). */
static int make_inputs(value *v, pe_dtype t, uint32_t max_n)
{
    const int64_t m = 1 + next() % 9, n = 1 + next() % max_n;
    int64_t shapes[3][2] = {{m, n}, {1, n}, {m, 1}};
    for (int k = 0; k < 3; k++) {
        int64_t numel = shapes[k][0] * shapes[k][1];
        double *d = malloc((size_t)numel * sizeof *d);
        float *f = malloc((size_t)numel * sizeof *f);
        for (int64_t i = 0; i < numel; i++) d[i] = uniform(0.5, 2.0), f[i] = (float)d[i];
        v[k] = (value){pe_from_host(t, 2, shapes[k], t == PE_F32 ? (const void *)f : (const void *)d), true};
        free(d), free(f);
    }
    return 3;
}

/* One random request over a and b (the nested calls' temporaries go to the
 * caller's scope). */
static pe_array random_op(pe_array a, pe_array b)
{
    pe_array r;
    int op = (int)(next() % 14);
    if ((op == 9 || op == 10) && pe_rank(a) != 2) op = 0; /* per-axis sums and transposes of matrices */
    switch (op) {
    case 0: r = pe_add(a, b); break;
    case 1: r = pe_mul(a, b); break;
    case 2: r = pe_sub(a, pe_mul(b, 0.5)); break;
    case 3: r = pe_div(a, pe_add(pe_abs(b), 1.0)); break;
    case 4: r = pe_sqrt(pe_abs(a)); break;
    case 5: r = pe_tanh(a); break;
    case 6: r = pe_sin(a); break;
    case 7: r = pe_cond(pe_gt(a, b), a, b); break;
    case 8: r = pe_mul(pe_exp(pe_neg(pe_abs(a))), 2.0f); break;
    case 9: r = pe_add(pe_sum_axis(a, (int)(next() % 2)), 0.0); break;
    case 10: r = pe_transpose(pe_transpose(a)); break;
    case 11: r = pe_mean(a); break;
    case 12: r = pe_max(a); break;
    default: r = pe_dot(a, b); break;
    }
    return r;
}

/* One program, generated from `seed` the same way on every run. */
static int run_program(uint64_t seed, pe_dtype t, double *out, int max_out)
{
    rng = seed;
    pe_scope scope = pe_scope_begin(); /* takes the nested intermediates */
    value v[MAX_VALUES];
    int nv = make_inputs(v, t, 70), n_out = 0;
    for (int step = 0; step < STEPS; step++) {
        int i = (int)(next() % (uint32_t)nv), j = (int)(next() % (uint32_t)nv);
        if (!v[i].live || !v[j].live || !tu_broadcastable(v[i].a, v[j].a)) continue;
        pe_array r = random_op(v[i].a, v[j].a);
        if (nv < MAX_VALUES) v[nv++] = (value){r, true};
        else pe_release(r);
        if (next() % 3 == 0) { /* drop an intermediate (never the inputs) */
            int k = 3 + (int)(next() % (uint32_t)(nv - 3 > 0 ? nv - 3 : 1));
            if (k < nv && v[k].live) pe_release(v[k].a), v[k].live = false;
        }
    }
    for (int k = 3; k < nv; k++) {
        if (!v[k].live) continue;
        int64_t count;
        double *x = tu_read_as_f64(v[k].a, &count);
        for (int64_t i = 0; i < count && n_out < max_out; i++) out[n_out++] = x[i];
        free(x);
        pe_release(v[k].a);
    }
    for (int k = 0; k < 3; k++) pe_release(v[k].a);
    pe_scope_end(scope);
    return n_out;
}

static char cache_dir[64];

static void test_random_programs_agree_with_interpreter(void **state)
{
    (void)state;
    enum { MAX_OUT = 1 << 16 };
    double *want = malloc(MAX_OUT * sizeof *want), *got = malloc(MAX_OUT * sizeof *got);
    long total_values = 0, trace_hits = 0;
    snprintf(cache_dir, sizeof cache_dir, "/tmp/pe-test-random-XXXXXX");
    assert_non_null(mkdtemp(cache_dir));
    const char *values_out = getenv("PE_TEST_VALUES_OUT");
    FILE *dump = values_out && *values_out ? fopen(values_out, "wb") : NULL;
    for (int prog = 0; prog < PROGRAMS; prog++) {
        uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(prog + 1);
        pe_dtype t = prog % 2 ? PE_F64 : PE_F32;
        double tol = t == PE_F32 ? 2e-5 : 1e-12;
        assert_int_equal(pe_init(&(pe_config){.executor = "interp"}), PE_OK);
        int n_want = run_program(seed, t, want, MAX_OUT);
        if (dump) fwrite(want, sizeof *want, (size_t)n_want, dump);
        pe_shutdown();
        assert_int_equal(pe_init(&(pe_config){.executor = "jit", .cache_dir = cache_dir}), PE_OK);
        for (int replay = 0; replay < 3; replay++) {
            int n_got = run_program(seed, t, got, MAX_OUT);
            assert_int_equal(n_got, n_want);
            if (dump) fwrite(got, sizeof *got, (size_t)n_got, dump);
            for (int i = 0; i < n_got; i++) {
                double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
                if (!(fabs(got[i] - want[i]) <= tol * scale))
                    fail_msg("program %d (%s) replay %d value %d: jit %.17g interp %.17g", prog,
                             t == PE_F32 ? "f32" : "f64", replay, i, got[i], want[i]);
            }
        }
        pe_stats st;
        pe_get_stats(&st);
        assert_int_equal(st.live_arrays, 0);
        assert_int_equal(st.trace_misfits, 0); /* every replay's key described its batch */
        total_values += n_want;
        trace_hits += st.trace_hits;
        pe_shutdown();
    }
    /* the programs did produce values, and the replays came from the trace cache */
    assert_true(total_values > 20 * PROGRAMS);
    assert_true(trace_hits > PROGRAMS);
    tu_remove_dir(cache_dir);
    if (dump) fclose(dump);
    free(want), free(got);
}

/* Appends a's values to out (at most max_out), read with pe_read or pe_map. */
static int read_value(pe_array a, double *out, int max_out, bool mapped)
{
    int64_t count = pe_numel(a);
    if (mapped) {
        const void *p = pe_map(a);
        assert_non_null(p);
        pe_dtype t = pe_dtype_of(a);
        for (int64_t e = 0; e < count && e < max_out; e++)
            out[e] = t == PE_F64 ? ((const double *)p)[e] : t == PE_F32 ? ((const float *)p)[e] : ((const int32_t *)p)[e];
        pe_unmap(a);
    } else {
        double *x = tu_read_as_f64(a, &count);
        for (int64_t e = 0; e < count && e < max_out; e++) out[e] = x[e];
        free(x);
    }
    return (int)(count < max_out ? count : max_out);
}

/* Values on demand (issue 19): a program that holds the values it makes
 * (releasing some at random, which the expressions reading them keep) and
 * reads them, with pe_read or pe_map, as it goes and at the end in a random
 * order, so that values a kernel only computed for its consumers stay
 * expressions and are computed again by later batches, and reads go into
 * the reader's buffer.  `eager` hints every value as it is made, so each is
 * stored where it is first computed.  Both read the same values. */
static int run_held_program(uint64_t seed, pe_dtype t, bool eager, double *out, int max_out)
{
    rng = seed;
    pe_scope scope = pe_scope_begin();
    value v[MAX_VALUES];
    /* rows up to 3000: reads of 16 KB and more go straight into the reader's buffer */
    int nv = make_inputs(v, t, 3000), n_out = 0;
    for (int step = 0; step < STEPS && nv < MAX_VALUES; step++) {
        int i = (int)(next() % (uint32_t)nv), j = (int)(next() % (uint32_t)nv);
        if (!v[i].live || !v[j].live || !tu_broadcastable(v[i].a, v[j].a)) continue;
        pe_array r = random_op(v[i].a, v[j].a);
        if (eager) pe_hint_read(r);
        v[nv++] = (value){r, true};
        int k = 3 + (int)(next() % (uint32_t)(nv - 3));
        switch (next() % 8) {
        case 0: case 1: /* read one of the values made so far */
            if (v[k].live) n_out += read_value(v[k].a, out + n_out, max_out - n_out, next() % 2);
            break;
        case 2: /* release one: the expressions reading it keep it */
            if (v[k].live) pe_release(v[k].a), v[k].live = false;
            break;
        default: break;
        }
    }
    for (int left = nv - 3; left > 0; left--) { /* every value still held, in a random order */
        int k = 3 + (int)(next() % (uint32_t)left);
        if (v[k].live) n_out += read_value(v[k].a, out + n_out, max_out - n_out, next() % 2);
        value last = v[3 + left - 1];
        v[3 + left - 1] = v[k], v[k] = last;
    }
    pe_scope_end(scope);
    return n_out;
}

/* Computed again or stored: bitwise the same (kernels are built with
 * -ffp-contract=off, reductions in fixed chunks), and both agree with the
 * interpreter. */
static void test_held_values_recomputed_bitwise(void **state)
{
    (void)state;
    enum { MAX_OUT = 1 << 20 };
    double *eager = malloc(MAX_OUT * sizeof *eager), *lazy = malloc(MAX_OUT * sizeof *lazy),
           *want = malloc(MAX_OUT * sizeof *want);
    uint64_t recomputed = 0, deferred = 0;
    for (int prog = 0; prog < PROGRAMS; prog++) {
        uint64_t seed = 0xd1b54a32d192ed03ull * (uint64_t)(prog + 1);
        pe_dtype t = prog % 2 ? PE_F64 : PE_F32;
        double tol = t == PE_F32 ? 2e-5 : 1e-12;
        assert_int_equal(pe_init(&(pe_config){.executor = "interp"}), PE_OK);
        int n_want = run_held_program(seed, t, false, want, MAX_OUT);
        pe_shutdown();
        assert_int_equal(pe_init(&(pe_config){.executor = "jit"}), PE_OK);
        int n_eager = run_held_program(seed, t, true, eager, MAX_OUT);
        pe_stats before, after;
        pe_get_stats(&before);
        int n_lazy = run_held_program(seed, t, false, lazy, MAX_OUT);
        pe_get_stats(&after);
        recomputed += after.values_recomputed - before.values_recomputed;
        deferred += after.values_deferred - before.values_deferred;
        assert_int_equal(after.live_arrays, 0);
        assert_int_equal(after.compile_failures, 0); /* no kernel left to the interpreter */
        pe_shutdown();
        assert_int_equal(n_eager, n_want);
        assert_int_equal(n_lazy, n_want);
        for (int i = 0; i < n_want; i++) {
            if (memcmp(&eager[i], &lazy[i], sizeof(double)) != 0)
                fail_msg("program %d (%s) value %d: stored %.17g, computed again %.17g", prog,
                         t == PE_F32 ? "f32" : "f64", i, eager[i], lazy[i]);
            double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
            if (!(fabs(lazy[i] - want[i]) <= tol * scale))
                fail_msg("program %d value %d: jit %.17g interp %.17g", prog, i, lazy[i], want[i]);
        }
    }
    /* the programs did leave values as expressions and compute them again */
    assert_true(deferred > PROGRAMS && recomputed > PROGRAMS);
    free(eager), free(lazy), free(want);
}

int main(void)
{
    pe_push_error_handler(tu_record_error, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_programs_agree_with_interpreter),
        cmocka_unit_test(test_held_values_recomputed_bitwise),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (tu_errors.count) fprintf(stderr, "unexpected error: %s\n", tu_errors.message), failed++;
    return failed;
}
