/* test_demand.c — values computed on demand (issue 19): a value the
 * application holds but nothing demands is not stored and stays an
 * expression (exec/base/deferred.c); a later use computes it again
 * (jit/record/demand.c) to the same bits; a plain pe_read computes a value
 * still to be computed straight into the caller's buffer and leaves the
 * handle an expression; a consumer recorded while its producer's batch is
 * already submitted waits for it where that batch may not store it.
 * Oracles: hand-written C loops (exact ops) and the same program with every
 * value stored (pe_hint_read), compared bit for bit.  Runs on both
 * executors (the interpreter stores every value: the counts differ). */
#include "test_util.h"

#include "exec/base/runtime.h"
#include "jit/record/irload.h"

enum { N = 1 << 16 }; /* over the in-place threshold (16 KB) */

static float *inputs(unsigned seed)
{
    float *x = malloc(N * sizeof *x);
    assert_non_null(x);
    srand(seed);
    for (int i = 0; i < N; i++) x[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    return x;
}

/* r = a * b + c (exact f32 ops: a C loop is the oracle) read with plain
 * pe_read, the handle kept: computed into out, then an expression that a
 * second read and a consumer compute again to the same values. */
static void test_plain_read_computes_into_the_callers_buffer(void **state)
{
    (void)state;
    float *a = inputs(1), *b = inputs(2), *c = inputs(3), *out = malloc(N * sizeof *out),
          *again = malloc(N * sizeof *again);
    pe_array pa = pe_f32_1d(a, N), pb = pe_f32_1d(b, N), pc = pe_f32_1d(c, N);
    pe_array ab = pe_mul(pa, pb);
    pe_array r = pe_add(ab, pc);
    pe_stats s0 = tu_stats();
    assert_int_equal(pe_read(r, out, N * sizeof *out), PE_OK);
    pe_stats s1 = tu_stats();
    for (int i = 0; i < N; i++)
        if (out[i] != a[i] * b[i] + c[i]) fail_msg("element %d: %.9g != %.9g", i, out[i], a[i] * b[i] + c[i]);
    if (!tu_on_interpreter()) {
        assert_int_equal(s1.reads_in_place, s0.reads_in_place + 1);
        /* nothing of PE's holds r's or ab's value: both are expressions */
        assert_int_equal(s1.values_deferred, s0.values_deferred + 2);
        assert_int_equal(s1.live_bytes, s0.live_bytes);
    }
    assert_true(pe_is_valid(r) && pe_is_valid(ab));
    /* read again: computed again (or stored, as the cost model says), the same bits */
    assert_int_equal(pe_read(r, again, N * sizeof *again), PE_OK);
    assert_memory_equal(out, again, N * sizeof *out);
    if (!tu_on_interpreter()) assert_true(tu_stats().values_recomputed >= s1.values_recomputed + 1);
    /* a consumer of the expression and of its held intermediate */
    pe_array d = pe_sub(r, ab);
    assert_int_equal(pe_read(d, again, N * sizeof *again), PE_OK);
    for (int i = 0; i < N; i++) {
        float want = (a[i] * b[i] + c[i]) - a[i] * b[i];
        if (again[i] != want) fail_msg("element %d: %.9g != %.9g", i, again[i], want);
    }
    pe_release(pa), pe_release(pb), pe_release(pc), pe_release(ab), pe_release(r), pe_release(d);
    free(a), free(b), free(c), free(out), free(again);
}

/* t = exp(x) only feeds sum(t) in its kernel: not stored, an expression.
 * Reading t afterwards computes it again: bitwise the value a program that
 * stored it (pe_hint_read) reads. */
static void test_held_intermediate_recomputed_bitwise(void **state)
{
    (void)state;
    float *x = inputs(4), *stored = malloc(N * sizeof *stored), *recomputed = malloc(N * sizeof *recomputed);
    double sums[2];
    for (int eager = 1; eager >= 0; eager--) {
        pe_array px = pe_f32_1d(x, N);
        pe_array t = pe_exp(px);
        if (eager) pe_hint_read(t);
        pe_array s = pe_sum(t);
        pe_stats s0 = tu_stats();
        float sum;
        assert_int_equal(pe_read(s, &sum, sizeof sum), PE_OK);
        sums[eager] = sum;
        if (!eager && !tu_on_interpreter()) assert_int_equal(tu_stats().values_deferred, s0.values_deferred + 1);
        assert_int_equal(pe_read(t, eager ? stored : recomputed, N * sizeof(float)), PE_OK);
        pe_release(px), pe_release(t), pe_release(s);
    }
    assert_true(sums[0] == sums[1]);
    assert_memory_equal(stored, recomputed, N * sizeof(float));
    for (int i = 0; i < N; i += 101) assert_true(fabsf(stored[i] - expf(x[i])) <= 2e-7f * expf(x[i]));
    free(x), free(stored), free(recomputed);
}

/* A consumer recorded after its producer's batch was submitted (pe_flush)
 * and before that batch ran: the producer only fed a reduction there, so the
 * batch may leave it unstored; the consumer must still see its value. */
static void test_consumer_of_a_submitted_batch(void **state)
{
    (void)state;
    float *x = inputs(5), *out = malloc(N * sizeof *out);
    for (int rep = 0; rep < 40; rep++) {
        pe_array px = pe_f32_1d(x, N);
        pe_array t = pe_mul(px, 3.0f);
        pe_array s = pe_sum(t);
        pe_flush();
        pe_array v = pe_add(t, 1.0f);
        assert_int_equal(pe_read(v, out, N * sizeof *out), PE_OK);
        for (int i = 0; i < N; i++)
            if (out[i] != x[i] * 3.0f + 1.0f) fail_msg("pass %d element %d: %.9g", rep, i, out[i]);
        pe_release(px), pe_release(t), pe_release(s), pe_release(v);
    }
    free(x), free(out);
}

/* An expression whose input failed while computing (a gather index out of
 * range) is invalid with the original error, however it is reached. */
static void test_expression_over_a_failed_input(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4};
    int32_t idx[3] = {0, 7, 1};
    pe_array px = pe_f32_1d(x, 4), pi = pe_from_host(PE_I32, 1, (int64_t[]){3}, idx);
    pe_array g = pe_gather(px, pi);
    pe_array t = pe_mul(g, 2.0f); /* held, only feeds the sum */
    pe_array s = pe_sum(t);
    float v[3];
    assert_int_equal(pe_read(s, v, sizeof(float)), PE_E_ARG);
    tu_errors_clear();
    assert_int_equal(pe_read(t, v, sizeof v), PE_E_ARG);
    assert_non_null(strstr(pe_last_error()->message, "out of range"));
    tu_errors_clear();
    pe_release(px), pe_release(pi), pe_release(g), pe_release(t), pe_release(s);
}

/* 120 held values, each read only by the next: one kernel (a store per
 * member would have split it in two), storing only the end, which is read. */
static void test_long_chain_of_held_values_is_one_kernel(void **state)
{
    (void)state;
    enum { STEPS = 120 };
    float *x = inputs(6), *out = malloc(N * sizeof *out);
    pe_scope scope = pe_scope_begin();
    pe_array t = pe_f32_1d(x, N);
    for (int k = 0; k < STEPS; k++) t = k % 2 ? pe_mul(t, 0.5f) : pe_add(t, 1.0f);
    pe_stats s0 = tu_stats();
    assert_int_equal(pe_read(t, out, N * sizeof *out), PE_OK);
    pe_stats s1 = tu_stats();
    for (int i = 0; i < N; i++) {
        float want = x[i];
        for (int k = 0; k < STEPS; k++) want = k % 2 ? want * 0.5f : want + 1.0f;
        if (out[i] != want) fail_msg("element %d: %.9g != %.9g", i, out[i], want);
    }
    /* built through pecc the loop is cut into batches at its header (the
     * static IR's loops): that build checks the values only */
    if (!tu_on_interpreter() && pe_ir_unit_count() == 0) {
        assert_int_equal(s1.kernels_launched, s0.kernels_launched + 1);
        assert_int_equal(s1.values_deferred, s0.values_deferred + STEPS);
    }
    pe_scope_end(scope);
    free(x), free(out);
}

/* t, released by the application, is held by two expressions u1 and u2.
 * Computing u1 again computes t for it; t must stay an expression for u2
 * (a crash before: t became a value without a buffer that u2 then read). */
static void test_released_value_shared_by_two_expressions(void **state)
{
    (void)state;
    float *x = inputs(7), *out = malloc(N * sizeof *out);
    pe_array a = pe_f32_1d(x, N);
    pe_array t = pe_mul(a, 2.0f), u1 = pe_add(t, 1.0f), u2 = pe_add(t, 2.0f), v = pe_mul(u1, u2), s = pe_sum(v);
    float sum;
    assert_int_equal(pe_read(s, &sum, sizeof sum), PE_OK);
    pe_release(t);
    const float *m = pe_map(u1);
    assert_non_null(m);
    for (int i = 0; i < N; i++) assert_true(m[i] == x[i] * 2.0f + 1.0f);
    pe_unmap(u1);
    assert_int_equal(pe_read(u2, out, N * sizeof *out), PE_OK);
    for (int i = 0; i < N; i++)
        if (out[i] != x[i] * 2.0f + 2.0f) fail_msg("element %d: %.9g != %.9g", i, out[i], x[i] * 2.0f + 2.0f);
    assert_int_equal(pe_read(v, out, N * sizeof *out), PE_OK);
    for (int i = 0; i < N; i++) assert_true(out[i] == (x[i] * 2.0f + 1.0f) * (x[i] * 2.0f + 2.0f));
    pe_release(a), pe_release(u1), pe_release(u2), pe_release(v), pe_release(s);
    free(x), free(out);
}

/* x (4 MB) is released by the application but held by the expression
 * t = x * 2.  Under PE_RETAIN_LIMIT (MB) x stays, and t stays an
 * expression; past it t is computed and stored, and x goes. */
static void retained_input(const char *limit_mb, bool expect_stored)
{
    pe_shutdown();
    setenv("PE_RETAIN_LIMIT", limit_mb, 1);
    assert_int_equal(pe_init(NULL), PE_OK);
    unsetenv("PE_RETAIN_LIMIT");
    enum { BIG = 1 << 20 };
    float *x = malloc(BIG * sizeof *x), *out = malloc(BIG * sizeof *out);
    for (int i = 0; i < BIG; i++) x[i] = (float)(i % 1000) * 0.5f;
    pe_array px = pe_f32_1d(x, BIG);
    pe_array t = pe_mul(px, 2.0f);
    pe_array s = pe_sum(t);
    double sum;
    assert_int_equal(pe_read_f64(s, &sum), PE_OK);
    pe_sync();
    pe_stats before = tu_stats();
    pe_release(px);
    pe_sync();
    pe_stats after = tu_stats();
    const int64_t x_bytes = BIG * sizeof(float);
    if (tu_on_interpreter()) { /* t has a value of its own: x goes */
        assert_int_equal(after.live_bytes, before.live_bytes - x_bytes);
    } else { /* x stays for t, or t is stored and x goes */
        assert_int_equal(after.values_recomputed - before.values_recomputed, expect_stored ? 1 : 0);
        assert_int_equal(after.live_bytes, before.live_bytes);
    }
    assert_int_equal(pe_read(t, out, BIG * sizeof *out), PE_OK);
    for (int i = 0; i < BIG; i++)
        if (out[i] != x[i] * 2.0f) fail_msg("element %d: %.9g != %.9g", i, out[i], x[i] * 2.0f);
    if (!tu_on_interpreter()) /* an expression is computed into the reader's buffer */
        assert_int_equal(tu_stats().values_recomputed - after.values_recomputed, expect_stored ? 0 : 1);
    pe_release(t), pe_release(s);
    pe_sync();
    assert_int_equal(tu_stats().live_arrays, 0); /* x, t and their buffers all gone */
    assert_int_equal(tu_stats().live_bytes, 0);
    free(x), free(out);
}

static void test_retained_input_under_the_limit(void **state)
{
    (void)state;
    retained_input("256", false);
}

static void test_retained_input_past_the_limit(void **state)
{
    (void)state;
    retained_input("1", true);
}

/* A scope's end releases an input (4 MB, past PE_RETAIN_LIMIT of 1 MB)
 * and the expression holding it together: the bound is checked once the
 * scope's handles are all gone, so the expression is not computed and
 * stored for nothing on the way. */
static void test_scope_end_stores_no_expression_it_releases(void **state)
{
    (void)state;
    pe_shutdown();
    setenv("PE_RETAIN_LIMIT", "1", 1);
    assert_int_equal(pe_init(NULL), PE_OK);
    unsetenv("PE_RETAIN_LIMIT");
    enum { BIG = 1 << 20 };
    float *x = malloc(BIG * sizeof *x);
    for (int i = 0; i < BIG; i++) x[i] = (float)(i % 1000) * 0.5f;
    pe_scope scope = pe_scope_begin();
    pe_array px = pe_f32_1d(x, BIG);
    pe_array t = pe_mul(px, 2.0f); /* held, consumed by s only: an expression once s ran */
    double sum;
    assert_int_equal(pe_read_f64(pe_sum(t), &sum), PE_OK);
    pe_sync();
    pe_stats before = tu_stats();
    pe_scope_end(scope); /* px first: only t holds it, 4 MB past the bound; then t */
    pe_sync();
    pe_stats after = tu_stats();
    assert_int_equal(after.values_recomputed, before.values_recomputed);
    assert_int_equal(after.kernels_launched, before.kernels_launched);
    assert_int_equal(after.live_arrays, 0);
    assert_int_equal(after.live_bytes, 0);
    free(x);
}

/* A loop whose every iteration leaves an expression (released after): the
 * runtime's list of expressions stays bounded (stale entries dropped). */
static void test_expressions_list_stays_bounded(void **state)
{
    (void)state;
    float x[64], total;
    for (int i = 0; i < 64; i++) x[i] = (float)i * 0.01f;
    pe_array px = pe_f32_1d(x, 64);
    for (int it = 0; it < 5000; it++) {
        pe_array t = pe_exp(px), s = pe_sum(t);
        assert_int_equal(pe_read(s, &total, sizeof total), PE_OK);
        pe_release(t), pe_release(s);
    }
    if (!tu_on_interpreter()) assert_true(tu_stats().values_deferred >= 5000);
    assert_true(pe_retention.n_expressions <= 2048);
    pe_release(px);
}

/* A Jacobi step as users write it (issue 38): the grid's neighbours through
 * shifted periodic views, the interior selected by a mask, the largest
 * change read every step, the new grid kept for the next step.  The kernel
 * reducing the change computes the new grid; leaving it an expression
 * there made the next step compute it again in a kernel of its own (its
 * readers are views).  After the first such recompute the site's grids are
 * stored where they are computed: one kernel per step, and nothing
 * computed twice.  Oracle: the same step in a C loop (the same ops in the
 * same order: bitwise). */
static void test_kept_value_reduced_and_read_through_views_is_stored_once(void **state)
{
    (void)state;
    enum { SIDE = 96, STEPS = 8 };
    const int64_t n = SIDE;
    double *grid = malloc(SIDE * SIDE * sizeof *grid), *next = malloc(SIDE * SIDE * sizeof *next),
           *out = malloc(SIDE * SIDE * sizeof *out);
    assert_true(grid && next && out);
    for (int i = 0; i < SIDE * SIDE; i++) grid[i] = i < SIDE ? 1.0 : 0.0; /* the top row held at 1 */
    pe_array u = pe_from_host(PE_F64, 2, (int64_t[]){n, n}, grid);
    pe_array r = pe_index(PE_I32, 2, (int64_t[]){n, n}, 0), c = pe_index(PE_I32, 2, (int64_t[]){n, n}, 1);
    pe_array interior = pe_and(pe_and(pe_gt(r, 0), pe_lt(r, SIDE - 1)), pe_and(pe_gt(c, 0), pe_lt(c, SIDE - 1)));
    pe_release(r), pe_release(c);
    uint64_t launched[STEPS], recomputed[STEPS];
    for (int step = 0; step < STEPS; step++) {
        pe_scope scope = pe_scope_begin();
        pe_array tiled = pe_periodic(u, 2, (int64_t[]){2 * n, 2 * n});
        pe_array up = pe_slice(tiled, (int64_t[]){n - 1, 0}, (int64_t[]){n, n});
        pe_array down = pe_slice(tiled, (int64_t[]){1, 0}, (int64_t[]){n, n});
        pe_array left = pe_slice(tiled, (int64_t[]){0, n - 1}, (int64_t[]){n, n});
        pe_array right = pe_slice(tiled, (int64_t[]){0, 1}, (int64_t[]){n, n});
        pe_array mean = pe_mul(pe_add(pe_add(up, down), pe_add(left, right)), 0.25);
        pe_array stepped = pe_cond(interior, mean, u);
        double change;
        pe_stats before = tu_stats();
        assert_int_equal(pe_read_f64(pe_max(pe_abs(pe_sub(stepped, u))), &change), PE_OK);
        pe_stats after = tu_stats();
        launched[step] = after.kernels_launched - before.kernels_launched;
        recomputed[step] = after.values_recomputed - before.values_recomputed;
        pe_keep(stepped);
        pe_scope_end(scope);
        pe_release(u);
        u = stepped;
        double want = 0.0; /* the C step */
        for (int i = 0; i < SIDE; i++)
            for (int j = 0; j < SIDE; j++) {
                double v = grid[i * SIDE + j];
                if (i > 0 && i < SIDE - 1 && j > 0 && j < SIDE - 1)
                    v = ((grid[(i - 1) * SIDE + j] + grid[(i + 1) * SIDE + j]) + (grid[i * SIDE + j - 1] + grid[i * SIDE + j + 1])) * 0.25;
                next[i * SIDE + j] = v;
                double d = fabs(v - grid[i * SIDE + j]);
                want = d > want ? d : want;
            }
        memcpy(grid, next, SIDE * SIDE * sizeof *grid);
        if (change != want) fail_msg("step %d: change %.17g, the C loop's %.17g", step, change, want);
    }
    assert_int_equal(pe_read(u, out, SIDE * SIDE * sizeof *out), PE_OK);
    for (int i = 0; i < SIDE * SIDE; i++)
        if (out[i] != grid[i]) fail_msg("element %d: %.17g != %.17g", i, out[i], grid[i]);
    if (!tu_on_interpreter()) {
        /* steps 0 and 1: the step's grid left an expression, then computed
         * again for the next step's views (the mark); from step 2 on the
         * kernel reducing the change stores it: one kernel, no recompute */
        for (int step = 2; step < STEPS; step++) {
            if (launched[step] != 1) fail_msg("step %d: %llu kernels", step, (unsigned long long)launched[step]);
            if (recomputed[step] != 0) fail_msg("step %d: %llu values computed again", step, (unsigned long long)recomputed[step]);
        }
    }
    pe_release(u), pe_release(interior);
    free(grid), free(next), free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_plain_read_computes_into_the_callers_buffer, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_held_intermediate_recomputed_bitwise, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_consumer_of_a_submitted_batch, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_expression_over_a_failed_input, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_long_chain_of_held_values_is_one_kernel, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_released_value_shared_by_two_expressions, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_retained_input_under_the_limit, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_retained_input_past_the_limit, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_scope_end_stores_no_expression_it_releases, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_expressions_list_stays_bounded, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_kept_value_reduced_and_read_through_views_is_stored_once, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
