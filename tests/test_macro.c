/* test_macro.c — code reuse sections (PE_MACRO, jit/macro/macro.c): a
 * replayed section computes bitwise what its body computes when run
 * plainly, over many replays and input values (and a hand-written C loop
 * for one body); replays skip the body; nesting, several sections in a
 * loop, a new entry per input signature or control bytes, the LRU bound
 * and its counters; each misuse is PE_E_MACRO naming the line, leaves
 * invalid outputs and nothing alive.  A replay's trace key, appended in one
 * piece, is byte for byte the key its queue entries get one by one. */
#include "test_util.h"

#include "exec/base/runtime.h"
#include "jit/trace/trace.h"

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static void fill_random(float *x, int n, uint64_t *seed)
{
    for (int i = 0; i < n; i++) x[i] = (float)((double)(next_random(seed) >> 11) * 0x1p-53 * 4.0 - 2.0);
}

static void assert_same_f32(pe_array got, pe_array want, int n)
{
    float *g = malloc(sizeof(float) * (size_t)n), *w = malloc(sizeof(float) * (size_t)n);
    assert_non_null(g);
    assert_non_null(w);
    assert_int_equal(pe_read(got, g, sizeof(float) * (size_t)n), PE_OK);
    assert_int_equal(pe_read(want, w, sizeof(float) * (size_t)n), PE_OK);
    if (memcmp(g, w, sizeof(float) * (size_t)n) != 0) {
        for (int i = 0; i < n; i++)
            if (memcmp(&g[i], &w[i], 4)) fail_msg("element %d: replay %.9g, plain %.9g", i, g[i], w[i]);
    }
    free(g);
    free(w);
}

/* The body under test: element-wise ops, C scalars, a broadcast reduction, a
 * fold (x * 1) and a select. */
static pe_array body_ops(pe_array a, pe_array b)
{
    pe_scope sc = pe_scope_begin();
    pe_array t = pe_mul(pe_add(a, b), 0.5);
    pe_array u = pe_mul(pe_exp(pe_neg(pe_abs(t))), 1.0);
    pe_array m = pe_mean(u);
    pe_array r = pe_cond(pe_gt(t, 0.0), pe_sub(u, m), pe_sqrt(pe_abs(pe_sub(b, a))));
    pe_keep(r);
    pe_scope_end(sc);
    return r;
}

static int body_runs;

static pe_array sectioned(pe_array a, pe_array b)
{
    pe_array ins[2] = {a, b}, outs[1];
    PE_MACRO(step, ins, 2, outs, 1, NULL, 0)
    {
        body_runs++;
        outs[0] = body_ops(ins[0], ins[1]);
    }
    return outs[0];
}

static void test_replay_equals_plain(void **state)
{
    (void)state;
    enum { N = 1000, ROUNDS = 60 };
    static float x[N], y[N];
    uint64_t seed = 12345;
    int64_t base = tu_live_arrays();
    body_runs = 0;
    for (int r = 0; r < ROUNDS; r++) {
        fill_random(x, N, &seed);
        fill_random(y, N, &seed);
        pe_array a = pe_f32_1d(x, N), b = pe_f32_1d(y, N);
        pe_array got = sectioned(a, b), want = body_ops(a, b);
        assert_same_f32(got, want, N);
        pe_release(got), pe_release(want), pe_release(a), pe_release(b);
    }
    tu_expect_no_error();
    assert_int_equal(body_runs, 1);
    pe_stats st = tu_stats();
    assert_int_equal(st.macro_records, 1);
    assert_int_equal(st.macro_hits, ROUNDS - 1);
    assert_true(st.macro_ops_replayed >= (uint64_t)(ROUNDS - 1) * 10);
    assert_int_equal(tu_live_arrays(), base);
}

/* A chain: each replay's input is the previous replay's output (pending),
 * against a hand-written C loop in double. */
static void test_chained_replays_against_c_loop(void **state)
{
    (void)state;
    enum { N = 257, STEPS = 200 };
    double x[N], y[N], want[N], got[N];
    for (int i = 0; i < N; i++) x[i] = want[i] = 0.01 * i - 1.0, y[i] = 0.5 + 0.001 * i;
    for (int k = 0; k < STEPS; k++)
        for (int i = 0; i < N; i++) want[i] = (want[i] * 0.99 + y[i]) * 0.5 - 0.25;
    int64_t base = tu_live_arrays();
    pe_array acc = pe_f64_1d(x, N), dy = pe_f64_1d(y, N);
    int runs = 0;
    for (int k = 0; k < STEPS; k++) {
        pe_array ins[2] = {acc, dy}, outs[1];
        PE_MACRO(decay, ins, 2, outs, 1, NULL, 0)
        {
            runs++;
            pe_array t = pe_add(pe_mul(ins[0], 0.99), ins[1]);
            outs[0] = pe_sub(pe_mul(t, 0.5), 0.25);
            pe_release(t);
        }
        pe_release(acc);
        acc = outs[0];
    }
    assert_int_equal(pe_read(acc, got, sizeof got), PE_OK);
    for (int i = 0; i < N; i++)
        if (got[i] != want[i]) fail_msg("element %d: %.17g, want %.17g", i, got[i], want[i]);
    assert_int_equal(runs, 1);
    pe_release(acc), pe_release(dy);
    tu_expect_no_error();
    assert_int_equal(tu_live_arrays(), base);
}

/* Input signature (dtype, shape, constness and a constant's value) and
 * control bytes: each new one records, an old one replays. */
static void test_signature_and_control_bytes(void **state)
{
    (void)state;
    float xf[6] = {1, 2, 3, 4, 5, 6};
    double xd[6] = {1, 2, 3, 4, 5, 6};
    int64_t base = tu_live_arrays();
    pe_array f6 = pe_f32_1d(xf, 6), f3 = pe_f32_1d(xf, 3), d6 = pe_f64_1d(xd, 6), c2 = pe_scalar(PE_F32, 2.0),
             c3 = pe_scalar(PE_F32, 3.0), f23 = pe_f32_2d(xf, 2, 3);
    struct { pe_array in; int mode; double want0; } cases[] = {
        {f6, 0, 2}, {f3, 0, 2}, {d6, 0, 2}, {c2, 0, 4}, {c3, 0, 6}, {f23, 0, 2}, {f6, 1, -1},
        {f6, 0, 2}, {f3, 0, 2}, {d6, 0, 2}, {c2, 0, 4}, {c3, 0, 6}, {f23, 0, 2}, {f6, 1, -1},
    };
    int runs = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        pe_array ins[1] = {cases[c].in}, outs[1];
        int mode = cases[c].mode;
        PE_MACRO(sig, ins, 1, outs, 1, &mode, sizeof mode)
        {
            runs++;
            outs[0] = mode ? pe_neg(ins[0]) : pe_mul(ins[0], 2);
        }
        int64_t n = 0;
        double *v = tu_read_as_f64(outs[0], &n);
        assert_int_equal(n, pe_numel(cases[c].in));
        assert_true(v[0] == cases[c].want0);
        free(v);
        assert_int_equal(pe_dtype_of(outs[0]), pe_dtype_of(cases[c].in));
        assert_int_equal(pe_rank(outs[0]), pe_rank(cases[c].in));
        pe_release(outs[0]);
    }
    assert_int_equal(runs, 7);
    pe_stats st = tu_stats();
    assert_int_equal(st.macro_records, 7);
    assert_int_equal(st.macro_hits, 7);
    pe_release(f6), pe_release(f3), pe_release(d6), pe_release(c2), pe_release(c3), pe_release(f23);
    tu_expect_no_error();
    assert_int_equal(tu_live_arrays(), base);
}

static pe_array inner_section(pe_array a, int *runs)
{
    pe_array ins[1] = {a}, outs[1];
    PE_MACRO(inner, ins, 1, outs, 1, NULL, 0)
    {
        (*runs)++;
        outs[0] = pe_sqrt(pe_add(pe_mul(ins[0], ins[0]), 1.0));
    }
    return outs[0];
}

/* A section inside another's body is part of the outer recording; used on
 * its own it has its own entry.  Two sections in one loop. */
static void test_nesting_and_loops(void **state)
{
    (void)state;
    enum { N = 64 };
    float x[N], y[N];
    uint64_t seed = 99;
    int64_t base = tu_live_arrays();
    int outer_runs = 0, inner_runs = 0, other_runs = 0;
    for (int r = 0; r < 20; r++) {
        fill_random(x, N, &seed);
        fill_random(y, N, &seed);
        pe_array a = pe_f32_1d(x, N), b = pe_f32_1d(y, N);
        pe_array ins[2] = {a, b}, outs[2];
        PE_MACRO(outer, ins, 2, outs, 2, NULL, 0)
        {
            outer_runs++;
            pe_array i1 = inner_section(ins[0], &inner_runs);
            outs[0] = pe_mul(i1, ins[1]);
            outs[1] = pe_sum(outs[0]);
            pe_release(i1);
        }
        pe_array ins2[1] = {a}, other[1];
        PE_MACRO(other, ins2, 1, other, 1, NULL, 0)
        {
            other_runs++;
            other[0] = pe_tanh(ins2[0]);
        }
        pe_array alone = inner_section(b, &inner_runs);
        pe_scope sc = pe_scope_begin();
        pe_array i1 = pe_sqrt(pe_add(pe_mul(a, a), 1.0)), want0 = pe_mul(i1, b), want1 = pe_sum(want0);
        pe_array want_other = pe_tanh(a), want_alone = pe_sqrt(pe_add(pe_mul(b, b), 1.0));
        assert_same_f32(outs[0], want0, N);
        assert_same_f32(outs[1], want1, 1);
        assert_same_f32(other[0], want_other, N);
        assert_same_f32(alone, want_alone, N);
        pe_scope_end(sc);
        pe_array all[] = {a, b, outs[0], outs[1], other[0], alone};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++) pe_release(all[k]);
    }
    assert_int_equal(outer_runs, 1);
    assert_int_equal(other_runs, 1);
    assert_int_equal(inner_runs, 2); /* once inside outer's recording, once on its own */
    pe_stats st = tu_stats();
    assert_int_equal(st.macro_records, 3);
    assert_int_equal(st.macro_hits, 3 * 20 - 3);
    tu_expect_no_error();
    assert_int_equal(tu_live_arrays(), base);
}

/* An output that is an input, and one output named twice: each gets its own reference. */
static void test_outputs_alias(void **state)
{
    (void)state;
    double x[3] = {1, 2, 3}, got[3];
    int64_t base = tu_live_arrays();
    for (int r = 0; r < 3; r++) {
        pe_array a = pe_f64_1d(x, 3);
        pe_array ins[1] = {a}, outs[3];
        PE_MACRO(alias, ins, 1, outs, 3, NULL, 0)
        {
            outs[0] = ins[0];
            outs[1] = pe_mul(ins[0], 1.0); /* folds to the input */
            outs[2] = outs[1];
        }
        pe_release(a);
        for (int j = 0; j < 3; j++) {
            assert_int_equal(pe_read(outs[j], got, sizeof got), PE_OK);
            assert_true(got[0] == 1 && got[2] == 3);
            pe_release(outs[j]);
        }
    }
    tu_expect_no_error();
    assert_int_equal(tu_live_arrays(), base);
}

static int setenv_and_setup(void **state, const char *cache)
{
    setenv("PE_MACRO_CACHE", cache, 1);
    int rc = tu_setup(state);
    unsetenv("PE_MACRO_CACHE");
    return rc;
}
static int setup_cache2(void **state) { return setenv_and_setup(state, "2"); }
static int setup_cache0(void **state) { return setenv_and_setup(state, "0"); }

static int lru_runs;
static void run_lru_section(int64_t n)
{
    pe_array a = pe_fill(PE_F32, 1, &n, 1.5), b = pe_index(PE_F32, 1, &n, 0);
    pe_array ins[2] = {a, b}, outs[1];
    PE_MACRO(lru, ins, 2, outs, 1, NULL, 0)
    {
        lru_runs++;
        outs[0] = pe_sum(pe_add(ins[0], ins[1]));
    }
    double v;
    assert_int_equal(pe_read_f64(outs[0], &v), PE_OK);
    assert_true(v == 1.5 * (double)n + (double)n * (double)(n - 1) / 2);
    pe_release(outs[0]), pe_release(a), pe_release(b);
}

/* PE_MACRO_CACHE=2: three signatures in turn evict each other. */
static void test_lru_eviction(void **state)
{
    (void)state;
    lru_runs = 0;
    run_lru_section(10), run_lru_section(20); /* two records */
    run_lru_section(10), run_lru_section(20); /* two hits */
    pe_stats st = tu_stats();
    assert_int_equal(st.macro_records, 2);
    assert_int_equal(st.macro_hits, 2);
    assert_int_equal(st.macro_evictions, 0);
    run_lru_section(30); /* evicts 10's, the least recently used */
    run_lru_section(20); /* hit */
    run_lru_section(10); /* a record again, evicting 30's */
    st = tu_stats();
    assert_int_equal(st.macro_records, 4);
    assert_int_equal(st.macro_hits, 3);
    assert_int_equal(st.macro_evictions, 2);
    assert_int_equal(lru_runs, 4);
    tu_expect_no_error();
}

/* PE_MACRO_CACHE=0: every execution runs its body. */
static void test_cache_off(void **state)
{
    (void)state;
    lru_runs = 0;
    for (int r = 0; r < 4; r++) run_lru_section(10);
    assert_int_equal(lru_runs, 4);
    assert_int_equal(tu_stats().macro_hits, 0);
    assert_int_equal(tu_stats().macro_records, 4);
    tu_expect_no_error();
}

/* ----------------------------------------------------------------- misuse */

static void assert_invalid(pe_array a)
{
    double v;
    assert_false(pe_is_valid(a));
    tu_errors_clear();
    assert_int_not_equal(pe_read_f64(a, &v), PE_OK);
    tu_errors_clear();
}

static void test_host_read_in_body(void **state)
{
    (void)state;
    double x[2] = {1, 2}, got[2];
    int64_t base = tu_live_arrays();
    pe_array a = pe_f64_1d(x, 2);
    int line = 0, runs = 0;
    for (int r = 0; r < 2; r++) {
        pe_array ins[1] = {a}, outs[1];
        PE_MACRO(reads, ins, 1, outs, 1, NULL, 0)
        {
            runs++;
            outs[0] = pe_add(ins[0], 1.0);
            line = __LINE__ + 1;
            assert_int_equal(pe_read(outs[0], got, sizeof got), PE_E_MACRO);
        }
        tu_expect_error(PE_E_MACRO, line);
        assert_int_equal(pe_read(outs[0], got, sizeof got), PE_OK); /* abandoned: the body ran as plain code */
        assert_true(got[0] == 2 && got[1] == 3);
        pe_release(outs[0]);
    }
    assert_int_equal(runs, 2); /* never cached */
    assert_int_equal(tu_stats().macro_hits, 0);
    /* writes: pe_from_host in a body */
    pe_array ins[1] = {a}, outs[1];
    PE_MACRO(writes, ins, 1, outs, 1, NULL, 0)
    {
        line = __LINE__ + 1;
        pe_array h = pe_f64_1d(x, 2);
        outs[0] = pe_add(ins[0], h);
        pe_release(h);
    }
    tu_expect_error(PE_E_MACRO, line);
    assert_invalid(outs[0]);
    pe_release(outs[0]);
    pe_release(a);
    /* the runtime goes on: a section works after */
    pe_array b = pe_f64_1d(x, 2);
    pe_array ins2[1] = {b}, outs2[1];
    PE_MACRO(after, ins2, 1, outs2, 1, NULL, 0) { outs2[0] = pe_mul(ins2[0], 3.0); }
    assert_int_equal(pe_read(outs2[0], got, sizeof got), PE_OK);
    assert_true(got[0] == 3 && got[1] == 6);
    pe_release(outs2[0]), pe_release(b);
    tu_expect_no_error();
    assert_int_equal(tu_live_arrays(), base);
}

static void test_modifying_inputs(void **state)
{
    (void)state;
    double x[2] = {1, 2};
    int64_t base = tu_live_arrays();
    pe_array a = pe_f64_1d(x, 2), other = pe_f64_1d(x, 2);
    int line = 0;
    {
        pe_array ins[1] = {a}, outs[1];
        PE_MACRO(releases, ins, 1, outs, 1, NULL, 0)
        {
            outs[0] = pe_neg(ins[0]);
            line = __LINE__ + 1;
            pe_release(ins[0]);
        }
        tu_expect_error(PE_E_MACRO, line);
        assert_invalid(outs[0]);
        assert_true(pe_is_valid(a)); /* refused: the input is untouched */
        pe_release(outs[0]);
    }
    {
        pe_array ins[1] = {a}, outs[1];
        line = __LINE__ + 1;
        PE_MACRO(reassigns, ins, 1, outs, 1, NULL, 0)
        {
            outs[0] = pe_neg(ins[0]);
            ins[0] = other;
        }
        tu_expect_error(PE_E_MACRO, line);
        assert_invalid(outs[0]);
        pe_release(outs[0]);
    }
    {
        pe_array ins[1] = {a}, outs[1];
        PE_MACRO(foreign, ins, 1, outs, 1, NULL, 0)
        {
            line = __LINE__ + 1;
            outs[0] = pe_add(ins[0], other);
        }
        tu_expect_error(PE_E_MACRO, line);
        assert_invalid(outs[0]);
        pe_release(outs[0]);
    }
    {
        pe_array ins[1] = {a}, outs[2];
        line = __LINE__ + 1;
        PE_MACRO(unassigned, ins, 1, outs, 2, NULL, 0) { outs[0] = pe_neg(ins[0]); }
        tu_expect_error(PE_E_MACRO, line);
        assert_invalid(outs[0]);
        assert_invalid(outs[1]);
        pe_release(outs[0]), pe_release(outs[1]);
    }
    assert_int_equal(tu_stats().macro_hits, 0);
    pe_release(a), pe_release(other);
    assert_int_equal(tu_live_arrays(), base);
}

static int recursion_line;
static pe_array recursive(pe_array a, int depth)
{
    pe_array ins[1] = {a}, outs[1];
    recursion_line = __LINE__ + 1;
    PE_MACRO(rec, ins, 1, outs, 1, NULL, 0)
    {
        pe_array inner = depth > 0 ? recursive(ins[0], depth - 1) : pe_retain(ins[0]);
        outs[0] = pe_add(inner, 1.0);
        pe_release(inner);
    }
    return outs[0];
}

static void test_recursion(void **state)
{
    (void)state;
    double x[2] = {1, 2};
    int64_t base = tu_live_arrays();
    pe_array a = pe_f64_1d(x, 2);
    pe_array r = recursive(a, 1);
    tu_expect_error(PE_E_MACRO, recursion_line);
    assert_invalid(r); /* the inner execution's invalid output made the outer's */
    pe_release(r), pe_release(a);
    assert_int_equal(tu_live_arrays(), base);
}

/* Recursion that the compiler inlined into one frame (a Release build of
 * test_recursion did): the statement begins twice in one frame, each with
 * its own variable alive.  pe_macro_begin_at is called as PE_MACRO calls
 * it, one site, two addresses; the inner begin is the recursion. */
static void test_recursion_in_one_frame(void **state)
{
    (void)state;
    double x[2] = {1, 2};
    pe_array a = pe_f64_1d(x, 2);
    pe_array ins[1] = {a}, outer_outs[1] = {{0}}, inner_outs[1] = {{0}};
    const pe_site *site = PE_HERE;
    int line = __LINE__ - 1;
    pe_macro_state outer_anchor = {0, 0, 0, 0, 0, 0}, inner_anchor = {0, 0, 0, 0, 0, 0};
    pe_macro_state outer = pe_macro_begin_at(site, &outer_anchor, "rec", ins, 1, outer_outs, 1, NULL, 0);
    assert_true(outer.run_body);
    pe_macro_state inner = pe_macro_begin_at(site, &inner_anchor, "rec", ins, 1, inner_outs, 1, NULL, 0);
    assert_false(inner.run_body);
    tu_expect_error(PE_E_MACRO, line);
    assert_invalid(inner_outs[0]);
    outer_outs[0] = pe_add(inner_outs[0], 1.0); /* the body goes on with the invalid value */
    tu_errors_clear();
    assert_int_equal(pe_macro_end_at(site, &outer), 0);
    assert_invalid(outer_outs[0]);
    pe_release(inner_outs[0]), pe_release(outer_outs[0]), pe_release(a);
}

/* A body left by break: found at the next host access (here a read), or,
 * inside another section's body, at that section's end. */
static void test_break_out_of_body(void **state)
{
    (void)state;
    double x[2] = {1, 2}, got[2];
    pe_array a = pe_f64_1d(x, 2);
    pe_array ins[1] = {a}, outs[1] = {{0}};
    int section_line = 0, runs = 0;
    for (int r = 0; r < 3; r++) {
        section_line = __LINE__ + 1;
        PE_MACRO(left, ins, 1, outs, 1, NULL, 0)
        {
            runs++;
            outs[0] = pe_neg(ins[0]);
            break; /* leaves the section's loop, not this one */
        }
        if (r > 0) tu_expect_error(PE_E_MACRO, section_line); /* found when the section begins again */
        else tu_expect_no_error();
        pe_release(outs[0]); /* the body ran plainly: its value is the application's */
    }
    assert_int_equal(runs, 3);
    int line = __LINE__ + 1;
    assert_int_equal(pe_read(a, got, sizeof got), PE_E_MACRO); /* the third execution is still open */
    tu_expect_error(PE_E_MACRO, line);
    assert_int_equal(pe_read(a, got, sizeof got), PE_OK); /* abandoned: reads work again */
    assert_true(got[0] == 1 && got[1] == 2);

    pe_array outer_out[1];
    int inner_line = 0;
    PE_MACRO(around, ins, 1, outer_out, 1, NULL, 0)
    {
        pe_array in2[1] = {ins[0]}, out2[1];
        for (;;) {
            inner_line = __LINE__ + 1;
            PE_MACRO(broken, in2, 1, out2, 1, NULL, 0)
            {
                out2[0] = pe_neg(in2[0]);
                break;
            }
            break;
        }
        outer_out[0] = out2[0];
    }
    tu_expect_error(PE_E_MACRO, inner_line);
    assert_invalid(outer_out[0]);
    pe_release(outer_out[0]);
    pe_release(a);
    tu_expect_no_error();
}

/* An invalid input makes the outputs invalid without a new error. */
static void test_invalid_input(void **state)
{
    (void)state;
    double x[2] = {1, 2}, y[3] = {1, 2, 3};
    pe_array a = pe_f64_1d(x, 2), b = pe_f64_1d(y, 3);
    pe_array bad = pe_add(a, b);
    tu_errors_clear();
    pe_array ins[1] = {bad}, outs[1];
    int runs = 0;
    PE_MACRO(inv, ins, 1, outs, 1, NULL, 0)
    {
        runs++;
        outs[0] = pe_neg(ins[0]);
    }
    tu_expect_no_error();
    assert_int_equal(runs, 0);
    assert_invalid(outs[0]);
    pe_release(outs[0]), pe_release(bad), pe_release(a), pe_release(b);
}

/* The batch's trace key against the one pe_trace_append makes from the
 * same queue entry by entry (the queue's own path, the reference): bytes,
 * externals, bucket. */
static void assert_key_is_entries_key(void)
{
    int guard = pe_api_lock();
    const pe_trace_key *k = &pe_rec.trace_key;
    assert_false(k->broken);
    /* the externals forget their numbers in this batch, so that the reference numbers them again */
    for (uint32_t i = 0; i < k->n_externals; i++) pe_port_at(k->externals[i])->key_epoch = ~pe_rec.batch_epoch;
    pe_trace_key ref = {0};
    for (size_t i = 0; i < pe_rec.queue_len; i++) pe_trace_append(&ref, &pe_rec.queue[i], i);
    assert_false(ref.broken);
    assert_int_equal(ref.len, k->len);
    assert_memory_equal(ref.bytes, k->bytes, k->len);
    assert_int_equal(ref.n_externals, k->n_externals);
    assert_memory_equal(ref.externals, k->externals, sizeof *k->externals * k->n_externals);
    assert_true(ref.first_site == k->first_site);
    pe_trace_key_free(&ref);
    pe_api_unlock(&guard);
}

/* A section over an array and a uniform constant input, equal to one of
 * its C scalars (one kernel parameter: the key says which are equal). */
static pe_array scaled(pe_array a, pe_array c)
{
    pe_array ins[2] = {a, c}, outs[1];
    PE_MACRO(scaled, ins, 2, outs, 1, NULL, 0)
    {
        pe_array t = pe_mul(ins[0], ins[1]);
        pe_array u = pe_add(pe_mul(t, 2.5f), ins[0]);
        pe_release(t);
        outs[0] = pe_sub(u, 2.5f);
        pe_release(u);
    }
    return outs[0];
}

static void test_replay_key_piece(void **state)
{
    (void)state;
    enum { N = 300, STEPS = 6 };
    static float x[N], y[N];
    uint64_t seed = 99;
    fill_random(x, N, &seed);
    fill_random(y, N, &seed);
    int64_t base = tu_live_arrays();
    pe_array a = pe_f32_1d(x, N), b = pe_f32_1d(y, N), c = pe_scalar(PE_F32, 2.5);
    pe_release(sectioned(a, b)), pe_release(scaled(a, c)); /* recorded */
    pe_flush();
    size_t pieces = pe_trace_pieces_appended;
    /* replays at the batch's first position, then after other work, each
     * over the last one's pending output (an operand in the batch) */
    pe_array acc = pe_retain(a);
    for (int k = 0; k < STEPS; k++) {
        pe_array r = sectioned(acc, b);
        pe_array q = scaled(r, c), s = pe_add(q, 1.0f);
        assert_key_is_entries_key();
        pe_release(acc), pe_release(r), pe_release(q);
        acc = s;
        if (k == STEPS / 2) pe_flush();
    }
    assert_int_equal(pe_trace_pieces_appended - pieces, 2 * STEPS);
    pe_array want = pe_retain(a); /* the same chain, plain */
    for (int k = 0; k < STEPS; k++) {
        pe_scope sc = pe_scope_begin();
        pe_array r = body_ops(want, b), next = pe_add(pe_sub(pe_add(pe_mul(pe_mul(r, c), 2.5f), r), 2.5f), 1.0f);
        pe_keep(next);
        pe_scope_end(sc);
        pe_release(want);
        want = next;
    }
    assert_same_f32(acc, want, N);
    pe_release(acc), pe_release(want), pe_release(a), pe_release(b), pe_release(c);
    tu_expect_no_error();
    assert_int_equal(tu_live_arrays(), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replay_equals_plain, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_chained_replays_against_c_loop, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_signature_and_control_bytes, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_nesting_and_loops, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_outputs_alias, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_lru_eviction, setup_cache2, tu_teardown),
        cmocka_unit_test_setup_teardown(test_cache_off, setup_cache0, tu_teardown),
        cmocka_unit_test_setup_teardown(test_host_read_in_body, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_modifying_inputs, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_recursion, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_recursion_in_one_frame, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_break_out_of_body, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_invalid_input, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_replay_key_piece, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
