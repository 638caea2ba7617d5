/* test_handles.c — lifetime: retain/release, scopes and keep, adopted buffers
 * (freed once, after their consumers), pe_map views outliving a release,
 * stale handles after slot reuse, shutdown with live arrays and init again,
 * pe_read_release (computed into the caller's buffer, or copied when other
 * references remain).  Both executors. */
#include "test_util.h"

static int64_t live(void)
{
    pe_stats st;
    pe_sync();
    pe_get_stats(&st);
    return st.live_arrays;
}

static void test_retain_release(void **state)
{
    (void)state;
    float x[3] = {1, 2, 3}, v[3];
    pe_array a = pe_f32_1d(x, 3);
    pe_array b = pe_retain(a);
    assert_true(a.h == b.h);
    pe_release(a);
    assert_int_equal(pe_read(b, v, sizeof v), PE_OK); /* one reference left */
    assert_true(v[2] == 3);
    pe_release(b);
    assert_int_equal(live(), 0);
    int line = __LINE__ + 1;
    pe_read(a, v, sizeof v);
    tu_expect_error(PE_E_HANDLE, line);
}

static void test_scopes_and_keep(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4}, v[4];
    pe_array base = pe_f32_1d(x, 4);
    int64_t before = live();
    pe_array kept, in_outer;
    pe_scope outer = pe_scope_begin();
    in_outer = pe_mul(base, 2.0f);
    {
        pe_scope inner = pe_scope_begin();
        pe_array t = pe_add(base, 1.0f);
        pe_array u = pe_exp(pe_neg(t)); /* a nested temporary too */
        pe_array released = pe_sin(t);
        pe_release(released); /* released by hand: the scope does not release it again */
        kept = pe_keep(pe_mul(u, 3.0f));
        pe_scope_end(inner);
        tu_expect_no_error();
        int line = __LINE__ + 1;
        pe_read(t, v, sizeof v); /* released by the scope */
        tu_expect_error(PE_E_HANDLE, line);
    }
    assert_int_equal(pe_read(kept, v, sizeof v), PE_OK); /* kept: still alive in the outer scope */
    assert_true(tu_ulps_f32(v[0], expf(-2.0f) * 3.0f) <= 2);
    assert_int_equal(pe_read(in_outer, v, sizeof v), PE_OK);
    pe_scope_end(outer);
    assert_int_equal(live(), before);
    int line = __LINE__ + 1;
    pe_read(kept, v, sizeof v);
    tu_expect_error(PE_E_HANDLE, line);
    /* keep outside any scope: the array simply stays */
    pe_array k = pe_keep(pe_add(base, 0.5f));
    assert_true(pe_is_valid(k));
    pe_release(k), pe_release(base);
    assert_int_equal(live(), 0);
}

static int adopt_frees;
static void *adopt_ctx_seen;
static void adopt_free(void *data, void *ctx)
{
    adopt_frees++;
    adopt_ctx_seen = ctx;
    free(data);
}

static void test_adopt_frees_once_after_consumers(void **state)
{
    (void)state;
    adopt_frees = 0;
    float *buf = malloc(5 * sizeof *buf);
    for (int i = 0; i < 5; i++) buf[i] = (float)i;
    int64_t n = 5;
    int token;
    pe_array a = pe_adopt(PE_F32, 1, &n, buf, adopt_free, &token);
    pe_array b = pe_mul(a, 2.0f);
    pe_release(a); /* b still needs it */
    assert_int_equal(adopt_frees, 0);
    float v[5];
    assert_int_equal(pe_read(b, v, sizeof v), PE_OK);
    for (int i = 0; i < 5; i++) assert_true(v[i] == 2.0f * (float)i);
    pe_release(b);
    pe_sync();
    assert_int_equal(adopt_frees, 1);
    assert_ptr_equal(adopt_ctx_seen, &token);
    tu_expect_no_error();
}

static void test_map_outlives_release(void **state)
{
    (void)state;
    double x[3] = {1, 2, 3};
    pe_array a = pe_sqrt(pe_f64_1d(x, 3));
    const double *p = pe_map(a);
    assert_non_null(p);
    pe_release(a);
    assert_true(p[1] == sqrt(2.0)); /* still valid until unmap */
    pe_unmap(a);
    tu_expect_no_error();
    const double *c = pe_map(pe_fill(PE_F64, 1, (int64_t[]){4}, 2.5)); /* a uniform constant gets a buffer */
    assert_true(c[3] == 2.5);
}

static uint64_t reads_in_place(void)
{
    pe_stats st;
    pe_get_stats(&st);
    return st.reads_in_place;
}

static void test_read_release(void **state)
{
    (void)state;
    enum { N = 100003 };
    static float x[N], out[N], again[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 1000) * 0.25f - 100.0f;
    pe_array a = pe_f32_1d(x, N);
    int64_t before = live();

    /* the read is the last use: computed straight into out */
    uint64_t in_place = reads_in_place();
    pe_array t = pe_mul(a, 2.0f);
    pe_array y = pe_add(t, 1.0f);
    pe_release(t);
    assert_int_equal(pe_read_release(y, out, sizeof out), PE_OK);
    assert_int_equal(reads_in_place(), in_place + 1);
    for (int i = 0; i < N; i++) assert_true(out[i] == x[i] * 2.0f + 1.0f);
    assert_int_equal(live(), before);
    int line = __LINE__ + 1;
    pe_read(y, out, sizeof out); /* released by pe_read_release */
    tu_expect_error(PE_E_HANDLE, line);

    /* another reference remains: computed into out all the same, and the
     * value stays an expression for it (computed again when read again) */
    pe_array z = pe_sub(a, 3.0f);
    pe_array other = pe_retain(z);
    in_place = reads_in_place();
    assert_int_equal(pe_read_release(z, out, sizeof out), PE_OK);
    const char *executor = getenv("PE_EXECUTOR"); /* the interpreter stores every value: it copies */
    assert_int_equal(reads_in_place(), in_place + (executor && strcmp(executor, "interp") == 0 ? 0 : 1));
    assert_int_equal(pe_read(other, again, sizeof again), PE_OK);
    for (int i = 0; i < N; i++) assert_true(out[i] == x[i] - 3.0f && again[i] == out[i]);
    pe_release(other);

    /* a computed value (not pending any more) and a small one: copied */
    pe_array w = pe_neg(a);
    pe_sync();
    assert_int_equal(pe_read_release(w, out, sizeof out), PE_OK);
    for (int i = 0; i < N; i++) assert_true(out[i] == -x[i]);
    float small[5];
    pe_array five = pe_f32_1d(x, 5);
    assert_int_equal(pe_read_release(pe_abs(five), small, sizeof small), PE_OK);
    assert_true(small[0] == 100.0f && small[4] == 99.0f);
    pe_release(five);

    /* a wrong size is an error naming this line, and the handle is released all the same */
    pe_array u = pe_add(a, a);
    line = __LINE__ + 1;
    assert_int_equal(pe_read_release(u, out, sizeof out - 4), PE_E_ARG);
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    pe_read_release(u, out, sizeof out);
    tu_expect_error(PE_E_HANDLE, line);
    assert_int_equal(live(), before);
    pe_release(a);
}

static void test_stale_handles(void **state)
{
    (void)state;
    float x[1] = {1};
    pe_array old = pe_f32_1d(x, 1);
    pe_release(old);
    for (int i = 0; i < 3000; i++) pe_release(pe_f32_1d(x, 1)); /* slots get reused */
    pe_array fresh[8];
    for (int i = 0; i < 8; i++) fresh[i] = pe_f32_1d(x, 1);
    int line = __LINE__ + 1;
    pe_array failed = pe_neg(old);
    tu_expect_error(PE_E_HANDLE, line);
    assert_false(pe_is_valid(failed));
    pe_release(failed); /* an invalid result is still the application's handle */
    for (int i = 0; i < 8; i++) assert_true(pe_is_valid(fresh[i])), pe_release(fresh[i]);
    assert_int_equal(live(), 0);
}

static void test_shutdown_with_live_arrays_and_init_again(void **state)
{
    (void)state;
    float x[2] = {1, 2};
    pe_array a = pe_exp(pe_f32_1d(x, 2)); /* left alive, pending */
    (void)a;
    pe_shutdown();
    assert_int_equal(pe_init(NULL), PE_OK);
    int line = __LINE__ + 1;
    pe_neg(a); /* a handle from the earlier session */
    tu_expect_error(PE_E_HANDLE, line);
    pe_array b = pe_f32_1d(x, 2);
    float v[2];
    assert_int_equal(pe_read(pe_add(b, 1.0f), v, sizeof v), PE_OK);
    assert_true(v[1] == 3.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_retain_release, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_scopes_and_keep, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_adopt_frees_once_after_consumers, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_map_outlives_release, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_read_release, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_stale_handles, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_with_live_arrays_and_init_again, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
