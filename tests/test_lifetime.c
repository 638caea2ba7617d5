/* test_lifetime.c — handles and scopes: retain/release counting, scopes that
 * release what was made in them, pe_keep, adopted buffers freed exactly once
 * and only after their consumers computed, pe_map views that outlive a
 * release until pe_unmap, stale handles after slot reuse, and pe_shutdown with
 * arrays still alive. */
#include "test_util.h"

static pe_stats stats(void)
{
    pe_stats st;
    pe_get_stats(&st);
    return st;
}

static int64_t live_now(void)
{
    pe_sync();
    return stats().live_arrays;
}

static void assert_values_f64(pe_array a, const double *want, int64_t n)
{
    int64_t got_n = 0;
    double *got = tu_read_as_f64(a, &got_n);
    assert_int_equal(got_n, n);
    for (int64_t i = 0; i < n; i++)
        if (!tu_same_value(got[i], want[i])) fail_msg("element %lld: got %.17g, want %.17g", (long long)i, got[i], want[i]);
    free(got);
}

/* ------------------------------------------------------------------ retain */

static void test_retain_needs_one_more_release(void **state)
{
    (void)state;
    double x[3] = {1.5, -2, 3}, out[3];
    int64_t base = live_now();
    pe_array a = pe_f64_1d(x, 3);
    assert_int_equal(live_now(), base + 1);
    pe_array r = pe_retain(a);
    assert_true(r.h == a.h);
    assert_int_equal(live_now(), base + 1); /* one array, two references */
    pe_release(a);
    tu_expect_no_error();
    assert_true(pe_is_valid(a));
    assert_int_equal(pe_read(a, out, sizeof out), PE_OK);
    assert_memory_equal(out, x, sizeof x);
    /* it still works as an operand */
    pe_array b = pe_add(r, 1.0);
    assert_values_f64(b, (double[]){2.5, -1, 4}, 3);
    pe_release(b);
    pe_release(r);
    tu_expect_no_error();
    assert_false(pe_is_valid(a));
    assert_int_equal(live_now(), base);
    int line = __LINE__ + 1;
    assert_int_equal(pe_read(a, out, sizeof out), PE_E_HANDLE);
    tu_expect_error(PE_E_HANDLE, line);

    /* retain twice: three releases */
    pe_array c = pe_f64_1d(x, 3);
    pe_retain(c), pe_retain(c);
    pe_release(c), pe_release(c);
    assert_true(pe_is_valid(c));
    pe_release(c);
    assert_false(pe_is_valid(c));
    tu_expect_no_error();
    assert_int_equal(live_now(), 0);
}

/* ------------------------------------------------------------------ scopes */

static void test_scope_releases_what_it_made(void **state)
{
    (void)state;
    double x[4] = {1, 2, 3, 4};
    pe_array outside = pe_f64_1d(x, 4);
    int64_t base = live_now();
    pe_scope sc = pe_scope_begin();
    pe_array a = pe_f64_1d(x, 4);
    pe_array b = pe_mul(a, outside);
    pe_array c = pe_sqrt(b);
    pe_array d = pe_sum(c);
    double v = 0;
    assert_int_equal(pe_read_f64(d, &v), PE_OK);
    assert_true(fabs(v - (1 + 2 + 3 + 4)) < 1e-12);
    pe_array pending = pe_exp(c);
    assert_true(live_now() > base);
    pe_scope_end(sc);
    tu_expect_no_error();
    assert_int_equal(live_now(), base);
    assert_false(pe_is_valid(a));
    assert_false(pe_is_valid(pending));
    int line = __LINE__ + 1;
    pe_array e = pe_add(b, 1.0);
    tu_expect_error(PE_E_HANDLE, line);
    pe_release(e);
    line = __LINE__ + 1;
    assert_int_equal(pe_read_f64(d, &v), PE_E_HANDLE);
    tu_expect_error(PE_E_HANDLE, line);
    /* the array made outside the scope survives it */
    assert_true(pe_is_valid(outside));
    assert_values_f64(outside, x, 4);
    pe_release(outside);
    tu_expect_no_error();
    assert_int_equal(live_now(), 0);
}

static void test_keep_moves_to_enclosing_scope(void **state)
{
    (void)state;
    double x[3] = {1, 2, 3};
    int64_t base = live_now();
    pe_scope outer = pe_scope_begin();
    pe_array o = pe_f64_1d(x, 3);
    pe_scope inner = pe_scope_begin();
    pe_array a = pe_f64_1d(x, 3);
    pe_array t = pe_mul(a, 10.0);
    pe_array k = pe_add(t, o);
    pe_array kept = pe_keep(k);
    assert_true(kept.h == k.h);
    pe_scope_end(inner);
    tu_expect_no_error();
    assert_false(pe_is_valid(a));
    assert_false(pe_is_valid(t));
    assert_true(pe_is_valid(k));
    /* k was not computed before inner ended: its inputs must have lived on */
    assert_values_f64(k, (double[]){11, 22, 33}, 3);
    assert_int_equal(live_now(), base + 2); /* o and k */
    pe_scope_end(outer);
    tu_expect_no_error();
    assert_false(pe_is_valid(k));
    assert_false(pe_is_valid(o));
    assert_int_equal(live_now(), base);
    int line = __LINE__ + 1;
    pe_release(k);
    tu_expect_error(PE_E_HANDLE, line);
    assert_int_equal(live_now(), 0);
}

static void test_nested_scopes(void **state)
{
    (void)state;
    double x[2] = {1, 2};
    int64_t base = live_now();
    pe_scope s1 = pe_scope_begin();
    pe_array a1 = pe_f64_1d(x, 2);
    pe_scope s2 = pe_scope_begin();
    /* a1 + a1, not a1 + 1.0: a2 is held but only read by a3 in its kernel, so
     * it stays an expression (exec/base/deferred.c), holding its operands —
     * a C scalar's port too, which these counts would see */
    pe_array a2 = pe_add(a1, a1), b2 = pe_f64_1d(x, 2);
    pe_scope s3 = pe_scope_begin();
    pe_array a3 = pe_mul(a2, b2);
    pe_array k3 = pe_keep(pe_neg(a3)); /* to s2 */
    assert_int_equal(live_now(), base + 5); /* a1, a2, b2, a3, k3 */
    pe_scope_end(s3);
    tu_expect_no_error();
    assert_false(pe_is_valid(a3));
    assert_true(pe_is_valid(k3) && pe_is_valid(a2) && pe_is_valid(b2) && pe_is_valid(a1));
    assert_int_equal(live_now(), base + 4);
    assert_values_f64(k3, (double[]){-2, -8}, 2);
    pe_array k2 = pe_keep(pe_add(k3, a1)); /* to s1 */
    pe_scope_end(s2);
    tu_expect_no_error();
    assert_false(pe_is_valid(a2) || pe_is_valid(b2) || pe_is_valid(k3));
    assert_true(pe_is_valid(a1) && pe_is_valid(k2));
    assert_int_equal(live_now(), base + 2);
    assert_values_f64(k2, (double[]){-1, -6}, 2);
    /* a scope opened and closed again inside the outermost one */
    pe_scope s2b = pe_scope_begin();
    assert_int_equal(s2b.depth, s2.depth);
    pe_array tmp = pe_exp(k2);
    pe_scope_end(s2b);
    assert_false(pe_is_valid(tmp));
    assert_true(pe_is_valid(k2));
    pe_scope_end(s1);
    tu_expect_no_error();
    assert_false(pe_is_valid(a1) || pe_is_valid(k2));
    assert_int_equal(live_now(), base);
    assert_int_equal(live_now(), 0);
}

static void test_explicit_release_in_scope(void **state)
{
    (void)state;
    double x[2] = {3, 4};
    int64_t base = live_now();
    pe_scope sc = pe_scope_begin();
    pe_array a = pe_f64_1d(x, 2);
    pe_array b = pe_mul(a, a);
    pe_array c = pe_sum(b);
    pe_release(b); /* c still needs it */
    pe_release(a);
    double v = 0;
    assert_int_equal(pe_read_f64(c, &v), PE_OK);
    assert_true(v == 25.0);
    pe_release(c);
    /* the slots may be reused by new arrays in the same scope: the scope
     * must not release those through the old entries */
    pe_array d = pe_f64_1d(x, 2);
    pe_array e = pe_f64_1d(x, 2);
    pe_release(d);
    pe_scope_end(sc);
    tu_expect_no_error();
    assert_false(pe_is_valid(e));
    assert_int_equal(live_now(), base);

    /* an array made outside and released inside a scope: no trouble either */
    pe_array out = pe_f64_1d(x, 2);
    pe_array survivor = pe_f64_1d(x, 2);
    pe_scope sc2 = pe_scope_begin();
    pe_release(out);
    pe_array inner = pe_add(survivor, 1.0);
    pe_scope_end(sc2);
    tu_expect_no_error();
    assert_false(pe_is_valid(inner));
    assert_true(pe_is_valid(survivor));
    assert_values_f64(survivor, x, 2);
    pe_release(survivor);
    tu_expect_no_error();
    assert_int_equal(live_now(), 0);
}

/* ------------------------------------------------------------------- adopt */

static int free_calls;
static void *free_ctx, *free_data;
static void adopt_free(void *data, void *ctx)
{
    free_calls++;
    free_ctx = ctx;
    free_data = data;
    /* poison the buffer: a computation that used it after this would see NaN */
    double *d = data;
    for (int i = 0; i < 64; i++) d[i] = NAN;
}

static void test_adopt_frees_once_after_consumers(void **state)
{
    (void)state;
    static double buf[64];
    int ctx_marker = 0;
    for (int i = 0; i < 64; i++) buf[i] = i + 0.25;
    free_calls = 0, free_ctx = free_data = NULL;
    int64_t shape[1] = {64};
    pe_stats s0 = stats();
    pe_array ad = pe_adopt(PE_F64, 1, shape, buf, adopt_free, &ctx_marker);
    tu_expect_no_error();
    assert_true(pe_is_valid(ad));
    pe_array b = pe_mul(ad, 2.0);
    pe_array c = pe_sum(b);
    pe_release(ad);
    /* nothing computed yet, so the buffer must still belong to PE */
    assert_int_equal(stats().ops_executed, s0.ops_executed);
    assert_int_equal(free_calls, 0);
    double want[64], total = 0;
    for (int i = 0; i < 64; i++) want[i] = 2 * (i + 0.25), total += want[i];
    assert_values_f64(b, want, 64);
    double v = 0;
    assert_int_equal(pe_read_f64(c, &v), PE_OK);
    assert_true(fabs(v - total) <= 1e-12 * total);
    pe_release(b), pe_release(c);
    pe_sync();
    assert_int_equal(free_calls, 1);
    assert_ptr_equal(free_ctx, &ctx_marker);
    assert_ptr_equal(free_data, buf);
    /* never again */
    pe_array other = pe_f64_1d(want, 64);
    pe_release(other);
    pe_sync();
    assert_int_equal(free_calls, 1);
    tu_expect_no_error();
    assert_int_equal(live_now(), 0);

    /* adopted and released without any use: freed once */
    for (int i = 0; i < 64; i++) buf[i] = i;
    free_calls = 0;
    pe_array lone = pe_adopt(PE_F64, 1, shape, buf, adopt_free, NULL);
    assert_int_equal(free_calls, 0);
    pe_release(lone);
    pe_sync();
    assert_int_equal(free_calls, 1);
    assert_null(free_ctx);
    tu_expect_no_error();
    assert_int_equal(live_now(), 0);
}

static void test_adopt_in_scope_and_retain(void **state)
{
    (void)state;
    static double buf[64];
    for (int i = 0; i < 64; i++) buf[i] = 1.0;
    free_calls = 0;
    int64_t shape[2] = {8, 8};
    pe_scope sc = pe_scope_begin();
    pe_array ad = pe_adopt(PE_F64, 2, shape, buf, adopt_free, &free_calls);
    pe_array r = pe_retain(ad);
    pe_array total = pe_keep(pe_sum(ad));
    pe_scope_end(sc);
    /* the scope dropped its reference, the retained one keeps the buffer */
    assert_int_equal(free_calls, 0);
    assert_true(pe_is_valid(r));
    double v = 0;
    assert_int_equal(pe_read_f64(total, &v), PE_OK);
    assert_true(v == 64.0);
    assert_int_equal(free_calls, 0);
    pe_release(r);
    pe_release(total);
    pe_sync();
    assert_int_equal(free_calls, 1);
    assert_ptr_equal(free_ctx, &free_calls);
    tu_expect_no_error();
    assert_int_equal(live_now(), 0);
}

/* --------------------------------------------------------------------- map */

static void test_map_outlives_release_until_unmap(void **state)
{
    (void)state;
    enum { N = 1000 };
    double x[N], want[N];
    for (int i = 0; i < N; i++) x[i] = i * 0.5 - 100, want[i] = 3 * x[i] + 1;
    int64_t base = live_now();
    pe_array a = pe_f64_1d(x, N);
    pe_array m3 = pe_mul(a, 3.0);
    pe_array c = pe_add(m3, 1.0);
    pe_release(m3);
    const double *p = pe_map(c);
    assert_non_null(p);
    for (int i = 0; i < N; i++) assert_true(p[i] == want[i]);
    pe_release(c);
    pe_release(a);
    tu_expect_no_error();
    assert_false(pe_is_valid(c));
    /* lots of other work that could reuse the memory */
    for (int k = 0; k < 20; k++) {
        pe_array y = pe_f64_1d(want, N);
        pe_array z = pe_mul(y, (double)k);
        double tmp[N];
        assert_int_equal(pe_read(z, tmp, sizeof tmp), PE_OK);
        pe_release(y), pe_release(z);
    }
    for (int i = 0; i < N; i++)
        if (p[i] != want[i]) fail_msg("mapped element %d changed after release: %g", i, p[i]);
    pe_unmap(c);
    tu_expect_no_error();
    assert_int_equal(live_now(), base);

    /* a map of host data gives those values; two maps need two unmaps */
    pe_array h = pe_f64_1d(x, N);
    const double *q1 = pe_map(h), *q2 = pe_map(h);
    assert_non_null(q1);
    assert_non_null(q2);
    assert_memory_equal(q1, x, sizeof x);
    pe_unmap(h);
    assert_memory_equal(q2, x, sizeof x);
    pe_unmap(h);
    tu_expect_no_error();
    int line = __LINE__ + 1;
    pe_unmap(h);
    tu_expect_error(PE_E_ARG, line);
    pe_release(h);
    tu_expect_no_error();
    assert_int_equal(live_now(), 0);
}

/* --------------------------------------------------------------- staleness */

static void test_stale_handle_after_slot_reuse(void **state)
{
    (void)state;
    enum { N = 3000 };
    float x[4] = {1, 2, 3, 4};
    pe_array old = pe_f32_1d(x, 4);
    pe_array old2 = pe_add(old, 1.0f);
    pe_release(old);
    pe_release(old2);
    static pe_array keep[N];
    /* cycle through far more arrays than there were free slots */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) keep[i] = pe_f32_1d(x, 4);
        if (round < 2)
            for (int i = 0; i < N; i++) pe_release(keep[i]);
    }
    for (int i = 0; i < 200; i++) pe_release(pe_mul(keep[i], 2.0f));
    tu_expect_no_error();
    float out[4];
    int line = __LINE__ + 1;
    assert_int_equal(pe_read(old, out, sizeof out), PE_E_HANDLE);
    tu_expect_error(PE_E_HANDLE, line);
    line = __LINE__ + 1;
    pe_array r = pe_add(old2, old);
    tu_expect_error(PE_E_HANDLE, line);
    assert_false(pe_is_valid(r));
    pe_release(r);
    line = __LINE__ + 1;
    pe_release(old2);
    tu_expect_error(PE_E_HANDLE, line);
    line = __LINE__ + 1;
    pe_retain(old);
    tu_expect_error(PE_E_HANDLE, line);
    assert_false(pe_is_valid(old));
    assert_false(pe_is_valid(old2));
    /* the arrays that now own those slots are untouched */
    for (int i = 0; i < N; i++) assert_true(pe_is_valid(keep[i]));
    assert_int_equal(pe_read(keep[0], out, sizeof out), PE_OK);
    assert_memory_equal(out, x, sizeof x);
    assert_int_equal(pe_read(keep[N - 1], out, sizeof out), PE_OK);
    assert_memory_equal(out, x, sizeof x);
    /* no handle value repeats while the old one is around */
    for (int i = 0; i < N; i++) {
        assert_true(keep[i].h != old.h);
        assert_true(keep[i].h != old2.h);
    }
    for (int i = 0; i < N; i++) pe_release(keep[i]);
    tu_expect_no_error();
    assert_int_equal(live_now(), 0);
}

/* ---------------------------------------------------------------- shutdown */

static int shutdown_free_calls;
static void count_free(void *data, void *ctx)
{
    (void)data;
    (void)ctx;
    shutdown_free_calls++;
}

static void test_shutdown_frees_live_arrays(void **state)
{
    (void)state;
    static float buf[16];
    int64_t shape[1] = {16};
    shutdown_free_calls = 0;
    for (int cycle = 0; cycle < 2; cycle++) {
        float x[16], out[16];
        for (int i = 0; i < 16; i++) x[i] = (float)(i + cycle);
        /* computed, pending, mapped, scoped and adopted arrays left alive */
        pe_array a = pe_f32_1d(x, 16);
        pe_array b = pe_mul(a, 2.0f);
        assert_int_equal(pe_read(b, out, sizeof out), PE_OK);
        assert_true(out[15] == 2.0f * (15 + cycle));
        pe_array pending = pe_exp(b);
        const float *m = pe_map(a);
        assert_non_null(m);
        pe_scope sc = pe_scope_begin();
        pe_array in_scope = pe_sqrt(a);
        (void)sc;
        (void)in_scope;
        (void)pending;
        pe_array ad = pe_adopt(PE_F32, 1, shape, buf, count_free, NULL);
        pe_array use = pe_add(ad, b);
        (void)use;
        pe_block_begin();
        pe_array in_block = pe_neg(b);
        (void)in_block;
        tu_expect_no_error();
        assert_true(stats().live_arrays >= 7);
        pe_shutdown();
        assert_int_equal(shutdown_free_calls, cycle + 1);
        /* a fresh runtime: nothing alive, old handles unknown */
        assert_int_equal(pe_init(NULL), PE_OK);
        pe_stats st = stats();
        assert_int_equal(st.live_arrays, 0);
        assert_int_equal(st.queued, 0);
        assert_false(pe_is_valid(a));
        assert_false(pe_is_valid(b));
        int line = __LINE__ + 1;
        pe_array bad = pe_add(b, 1.0f);
        tu_expect_error(PE_E_HANDLE, line);
        pe_release(bad);
        /* no scope or block left over from the last session */
        line = __LINE__ + 1;
        pe_block_end();
        tu_expect_error(PE_E_ARG, line);
        pe_array c = pe_f32_1d(x, 16);
        pe_array d = pe_add(c, 1.0f);
        assert_int_equal(pe_read(d, out, sizeof out), PE_OK);
        for (int i = 0; i < 16; i++) assert_true(out[i] == x[i] + 1.0f);
        pe_release(c), pe_release(d);
        tu_expect_no_error();
        assert_int_equal(live_now(), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_retain_needs_one_more_release, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_scope_releases_what_it_made, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_keep_moves_to_enclosing_scope, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_nested_scopes, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_explicit_release_in_scope, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_adopt_frees_once_after_consumers, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_adopt_in_scope_and_retain, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_map_outlives_release_until_unmap, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_stale_handle_after_slot_reuse, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_frees_live_arrays, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
