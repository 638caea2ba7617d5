/* test_progressive.c — progressive evaluation: nothing is computed before a
 * result is needed (a read, a map, a hint, pe_flush/pe_sync, the end of the
 * outermost block, or the queue limit); queries never compute; constant
 * folding and strength reduction at record time; dead values are never
 * computed; a Black-Scholes chain equals plain C; a read runs ahead of
 * earlier work it does not depend on, and after the work it does.  Both
 * executors. */
#include "test_util.h"
#include "jit/sched/escheduler.h"

static pe_stats stats(void)
{
    pe_stats st;
    pe_get_stats(&st);
    return st;
}

static void test_nothing_runs_before_needed(void **state)
{
    (void)state;
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, v[8];
    pe_array a = pe_f32_1d(x, 8);
    pe_stats s0 = stats();
    pe_array b = pe_exp(pe_mul(a, 0.5f)), c = pe_add(b, 1.0f);
    pe_stats s1 = stats();
    assert_int_equal(s1.ops_executed, s0.ops_executed);
    assert_int_equal(s1.flushes, s0.flushes);
    assert_true(s1.queued >= 3);
    /* queries do not compute */
    assert_int_equal(pe_rank(c), 1), assert_int_equal(pe_dim(c, 0), 8), assert_int_equal(pe_numel(c), 8);
    assert_int_equal(pe_dtype_of(c), PE_F32);
    assert_int_equal(stats().flushes, s0.flushes);
    /* a read does */
    assert_int_equal(pe_read(c, v, sizeof v), PE_OK);
    assert_true(stats().ops_executed > s0.ops_executed);
    assert_true(tu_ulps_f32(v[3], expf(2.0f) + 1.0f) <= 2);
    /* hint, flush, sync, map each start the work */
    pe_array triggers[4];
    for (int k = 0; k < 4; k++) {
        pe_stats before = stats();
        triggers[k] = pe_sqrt(pe_add(a, (float)k));
        assert_int_equal(stats().flushes, before.flushes);
        if (k == 0) pe_hint_read(triggers[k]);
        else if (k == 1) pe_flush();
        else if (k == 2) pe_sync();
        else assert_non_null(pe_map(triggers[k]));
        assert_int_equal(stats().flushes, before.flushes + 1);
    }
    pe_sync();
    assert_int_equal(stats().queued, 0);
    tu_expect_no_error();
}

static void test_queue_limit_and_blocks(void **state)
{
    (void)state;
    pe_shutdown();
    assert_int_equal(pe_init(&(pe_config){.queue_limit = 8}), PE_OK);
    float x[4] = {1, 2, 3, 4};
    pe_array a = pe_f32_1d(x, 4);
    pe_stats s0 = stats();
    for (int k = 0; k < 12; k++) pe_release(pe_add(a, (float)k));
    assert_true(stats().flushes > s0.flushes); /* the limit processed the queue */
    pe_sync();
    pe_stats s1 = stats();
    pe_block_begin();
    pe_block_begin();
    for (int k = 0; k < 30; k++) pe_release(pe_mul(a, (float)k));
    assert_int_equal(stats().flushes, s1.flushes); /* deferred inside the block */
    pe_block_end();
    assert_int_equal(stats().flushes, s1.flushes); /* not at the inner end */
    pe_block_end();
    assert_int_equal(stats().flushes, s1.flushes + 1);
    pe_release(a);
    tu_expect_no_error();
}

static void test_constant_folding_and_strength_reduction(void **state)
{
    (void)state;
    pe_stats s0 = stats();
    int64_t shape[2] = {2, 3};
    pe_array c = pe_mul(pe_add(pe_fill(PE_F64, 2, shape, 1.5), 2.0), pe_scalar(PE_F64, 4));
    pe_stats s1 = stats();
    assert_int_equal(s1.queued, s0.queued); /* answered at record time */
    assert_true(s1.ops_folded >= s0.ops_folded + 2);
    double v[6];
    assert_int_equal(pe_read(c, v, sizeof v), PE_OK);
    for (int i = 0; i < 6; i++) assert_true(v[i] == 14.0);
    assert_int_equal(pe_rank(c), 2);
    double x[4] = {1.5, -2, 0.25, 9};
    pe_array a = pe_f64_1d(x, 4);
    pe_sync();
    pe_stats s2 = stats();
    pe_array same1 = pe_mul(a, 1.0), same2 = pe_add(a, 0.0), same3 = pe_div(a, 1), same4 = pe_sub(a, 0.0f);
    pe_stats s3 = stats();
    assert_int_equal(s3.queued, 0);
    assert_int_equal(s3.ops_folded, s2.ops_folded + 4);
    assert_true(same1.h == a.h && same2.h == a.h && same3.h == a.h && same4.h == a.h);
    pe_release(same1), pe_release(same2), pe_release(same3), pe_release(same4);
    assert_true(pe_is_valid(a)); /* each answer was its own reference */
    double *sq = tu_read_as_f64(pe_pow(a, 2.0), NULL), *rt = tu_read_as_f64(pe_pow(a, 0.5), NULL);
    for (int i = 0; i < 4; i++) {
        assert_true(sq[i] == x[i] * x[i]);
        assert_true(tu_same_value(rt[i], sqrt(x[i])));
    }
    free(sq), free(rt);
    /* a broadcast or a promotion keeps the operation */
    float f[2] = {1, 2};
    pe_array pf = pe_f32_1d(f, 2);
    pe_array promoted = pe_mul(pf, pe_scalar(PE_F64, 1));
    assert_int_equal(pe_dtype_of(promoted), PE_F64);
    tu_expect_no_error();
}

static void test_dead_values_are_not_computed(void **state)
{
    (void)state;
    float x[1000];
    for (int i = 0; i < 1000; i++) x[i] = (float)i;
    pe_array a = pe_f32_1d(x, 1000);
    pe_sync();
    pe_stats s0 = stats();
    pe_array dead = pe_sin(pe_add(a, 1.0f));
    pe_release(dead); /* never read, released: nobody can see it */
    pe_array live = pe_cos(a);
    float v[1000];
    assert_int_equal(pe_read(live, v, sizeof v), PE_OK);
    pe_stats s1 = stats();
    /* the cos is computed; the sin is not (its nested add stays the application's) */
    assert_true(s1.ops_executed - s0.ops_executed <= 2);
    assert_true(s1.ops_executed - s0.ops_executed >= 1);
    tu_expect_no_error();
}

static double cnd(double d) { return 0.5 * erfc(-d / sqrt(2.0)); }

static void test_black_scholes_chain(void **state)
{
    (void)state;
    enum { N = 1000 };
    double S[N], X[N], T[N], call[N];
    for (int i = 0; i < N; i++) S[i] = 10 + i % 50, X[i] = 5 + (i * 7) % 90, T[i] = 0.25 + (i % 10) * 0.5;
    const double r = 0.02, vol = 0.3;
    pe_scope sc = pe_scope_begin();
    pe_array s = pe_f64_1d(S, N), x = pe_f64_1d(X, N), t = pe_f64_1d(T, N);
    pe_array sq = pe_sqrt(t);
    pe_array d1 = pe_div(pe_add(pe_log(pe_div(s, x)), pe_mul(r + 0.5 * vol * vol, t)), pe_mul(vol, sq));
    pe_array d2 = pe_sub(d1, pe_mul(vol, sq));
    pe_array c = pe_sub(pe_mul(s, pe_cdf_norm(d1)), pe_mul(pe_mul(x, pe_exp(pe_mul(-r, t))), pe_cdf_norm(d2)));
    assert_int_equal(pe_read(c, call, sizeof call), PE_OK);
    pe_scope_end(sc);
    for (int i = 0; i < N; i++) {
        double e1 = (log(S[i] / X[i]) + (r + 0.5 * vol * vol) * T[i]) / (vol * sqrt(T[i]));
        double e2 = e1 - vol * sqrt(T[i]);
        double want = S[i] * cnd(e1) - X[i] * exp(-r * T[i]) * cnd(e2);
        assert_true(fabs(call[i] - want) <= 1e-12 * fmax(1.0, fabs(want)));
    }
    assert_int_equal(stats().live_arrays, 0);
    tu_expect_no_error();
}

static void test_reads_run_ahead_of_independent_work(void **state)
{
    (void)state;
    enum { N = 1 << 18 };
    static float x[N], v[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 977) * 0.01f - 3.0f;
    pe_array a = pe_f32_1d(x, N);
    pe_esched_hold(true); /* only batches someone waits for run */
    pe_stats s0 = stats();
    pe_array t = pe_mul(a, 3.0f);
    pe_array slow = pe_mul(pe_add(t, 1.0f), a); /* batch A: submitted, held */
    pe_release(t);
    pe_flush();
    pe_array quick = pe_add(a, 1.0f); /* batch B: independent of A */
    assert_int_equal(pe_read(quick, v, sizeof v), PE_OK);
    pe_stats s1 = stats();
    assert_int_equal(s1.batches_run_ahead, s0.batches_run_ahead + 1);
    assert_int_equal(s1.ops_executed, s0.ops_executed + 1); /* only B's add: A still waits */
    for (int i = 0; i < N; i++) assert_true(v[i] == x[i] + 1.0f);
    /* batch D needs A: reading D runs A first, then D */
    pe_array d = pe_sub(slow, 2.0f);
    pe_flush();
    assert_int_equal(pe_read(d, v, sizeof v), PE_OK);
    for (int i = 0; i < N; i++) {
        float want = ((x[i] * 3.0f + 1.0f) * x[i]) - 2.0f;
        assert_true(tu_ulps_f32(v[i], want) <= 1);
    }
    assert_int_equal(stats().batches_run_ahead, s1.batches_run_ahead);
    pe_esched_hold(false);
    pe_release(quick), pe_release(slow), pe_release(d), pe_release(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nothing_runs_before_needed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_queue_limit_and_blocks, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_constant_folding_and_strength_reduction, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_dead_values_are_not_computed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_black_scholes_chain, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_reads_run_ahead_of_independent_work, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
