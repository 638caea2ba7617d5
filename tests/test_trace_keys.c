/* test_trace_keys.c — what makes two batches, two values or two kernels
 * different (issue 22, item 11: mutants that dropped one of these survived
 * every test):
 *   - a trace key holds each outside operand's dtype and shape: one call
 *     site run again with an operand of another dtype or broadcast shape, the
 *     result's dtype and shape unchanged, must not reuse the first batch's
 *     programs (values checked on every pass);
 *   - common subexpressions are ops with equal types too: two casts of one
 *     value to different types in one kernel stay two values;
 *   - a kernel's hash covers the values of its literals (kernels that differ
 *     in one compiled-in constant are different code);
 *   - C scalars of equal value share one kernel parameter, and what is
 *     computed from them is computed once, only where the key says they are
 *     equal: a call site run with equal, then different, then equal values
 *     again (a trace hit) computes each pass's own values;
 *   - one computation recorded in two orders is one kernel (the body is
 *     scheduled canonically): compiled once, the same bits;
 *   - a value its kernel stores because its site's values were computed
 *     again (pe_port.store_when_held) makes other programs than the same
 *     value left an expression: a batch that defers it, run again once the
 *     site is marked, must not reuse the deferring programs.
 * Oracle: C loops. */
#define _GNU_SOURCE
#include "test_util.h"

#include "jit/kir/kir.h"

#define N 999

/* One call site for every pass: x (f32) plus an outside operand c. */
static pe_array same_site(pe_array x, pe_array c) { return pe_mul(pe_add(x, c), 2.0f); }

static void test_outside_operand_dtype_and_shape_in_the_key(void **state)
{
    (void)state;
    float xs[N], got[N];
    for (int i = 0; i < N; i++) xs[i] = (float)(i % 17) - 8.5f;
    int64_t n = N, one = 1;
    pe_array x = pe_f32_1d(xs, N);
    int32_t ci[N];
    float cf[N];
    for (int i = 0; i < N; i++) ci[i] = i % 5 - 2, cf[i] = 0.25f * (float)(i % 7);
    for (int pass = 0; pass < 12; pass++) {
        /* the operand changes dtype (i32 / f32) and shape ({N} / {1}); the result is f32 {N} every time */
        bool as_int = pass % 2 == 0, broadcast = pass % 3 == 0;
        pe_array c = as_int ? pe_from_host(PE_I32, 1, broadcast ? &one : &n, ci)
                            : pe_from_host(PE_F32, 1, broadcast ? &one : &n, cf);
        pe_array r = same_site(x, c);
        assert_int_equal(pe_dtype_of(r), PE_F32);
        assert_int_equal(pe_numel(r), N);
        assert_int_equal(pe_read(r, got, sizeof got), PE_OK);
        for (int i = 0; i < N; i++) {
            int j = broadcast ? 0 : i;
            float cv = as_int ? (float)ci[j] : cf[j], want = (xs[i] + cv) * 2.0f;
            if (got[i] != want)
                fail_msg("pass %d (%s, %s) [%d]: got %.9g want %.9g", pass, as_int ? "i32" : "f32",
                         broadcast ? "{1}" : "{N}", i, got[i], want);
        }
        pe_release(c), pe_release(r);
    }
    pe_release(x);
    tu_expect_no_error();
}

/* One call site comparing x (f32) with an outside 0-d operand. */
static pe_array compare_at_one_site(pe_array x, pe_array c) { return pe_eq(x, c); }

/* Two requests alike in op, result dtype (bool), rank and operands' dtypes
 * (an f32 array, a 0-d f64 holding 0.1) but not in compute type: a weak C
 * double takes the array's type (0.1 rounds to 0.1f, equal), a strong f64
 * array promotes the comparison to f64 ((double)0.1f != 0.1).  A trace key
 * without the compute type would replay one pass's kernel for the other. */
static void test_compute_type_in_the_key(void **state)
{
    (void)state;
    float xs[N];
    unsigned char got[N];
    for (int i = 0; i < N; i++) xs[i] = i % 2 ? 0.1f : 0.5f;
    pe_array x = pe_f32_1d(xs, N);
    for (int pass = 0; pass < 8; pass++) {
        bool weak = pass % 2 == 0;
        pe_array c = weak ? pe__weak_f64(0.1) : pe_scalar(PE_F64, 0.1);
        pe_array r = compare_at_one_site(x, c);
        assert_int_equal(pe_dtype_of(r), PE_BOOL);
        assert_int_equal(pe_read(r, got, sizeof got), PE_OK);
        for (int i = 0; i < N; i++) {
            unsigned char want = weak ? xs[i] == 0.1f : (double)xs[i] == 0.1;
            if (got[i] != want)
                fail_msg("pass %d (%s) [%d]: got %d want %d", pass, weak ? "a weak C double" : "a strong f64 array", i, got[i],
                         want);
        }
        if (!weak) pe_release(c); /* a weak temporary is the call's (PE_ARG's) */
        pe_release(r);
    }
    pe_release(x);
    tu_expect_no_error();
}

static void test_casts_to_different_types_stay_apart(void **state)
{
    (void)state;
    float xs[N];
    for (int i = 0; i < N; i++) xs[i] = (float)i * 0.37f - 100.0f;
    pe_array x = pe_f32_1d(xs, N);
    /* one batch, one kernel: the same value cast three ways, each used */
    pe_array as_i = pe_cast(x, PE_I32), as_d = pe_cast(x, PE_F64), as_b = pe_cast(x, PE_BOOL);
    pe_array sum = pe_add(pe_add(pe_cast(as_i, PE_F64), as_d), pe_cast(as_b, PE_F64));
    double got[N];
    assert_int_equal(pe_read(sum, got, sizeof got), PE_OK);
    for (int i = 0; i < N; i++) {
        double want = (double)(int32_t)xs[i] + (double)xs[i] + (xs[i] != 0.0f ? 1.0 : 0.0);
        if (got[i] != want) fail_msg("[%d] x = %.9g: got %.17g want %.17g", i, xs[i], got[i], want);
    }
    pe_release(x), pe_release(as_i), pe_release(as_d), pe_release(as_b), pe_release(sum);
    tu_expect_no_error();
}

static void test_kernel_hash_covers_literals(void **state)
{
    (void)state;
    kir_kernel a;
    memset(&a, 0, sizeof a);
    a.n_params = 3;
    a.params[0] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = PE_F32};
    a.params[1] = (kir_param){.kind = KIR_IN_LITERAL, .dtype = PE_F32, .value = 2.0};
    a.params[2] = (kir_param){.kind = KIR_OUT, .dtype = PE_F32};
    a.n_body = 4;
    a.body[0] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {0}};
    a.body[1] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {1}};
    a.body[2] = (kir_inst){.kind = KIR_OP, .op = PE_OP_mul, .dtype = PE_F32, .ctype = PE_F32, .n = 2, .a = {0, 1}};
    a.body[3] = (kir_inst){.kind = KIR_STORE, .dtype = PE_F32, .n = 2, .a = {2, 2}};
    assert_true(kir_valid(&a));
    kir_kernel b = a;
    assert_true(kir_equal(&a, &b));
    assert_true(kir_hash(&a) == kir_hash(&b));
    b.params[1].value = 3.0; /* x * 3 is other code than x * 2 */
    assert_false(kir_equal(&a, &b));
    assert_true(kir_hash(&a) != kir_hash(&b));
    char name_a[64], name_b[64];
    kir_kernel_name(&a, name_a, sizeof name_a), kir_kernel_name(&b, name_b, sizeof name_b);
    assert_string_not_equal(name_a, name_b);
}

/* x * a + x * b at one site: with a == b the key records it and the two
 * products are one; with a != b they must not be. */
static pe_array two_scalars(pe_array x, float a, float b) { return pe_add(pe_mul(x, a), pe_mul(x, b)); }

static void test_equal_scalars_shared_only_where_the_key_says(void **state)
{
    (void)state;
    float xs[N], got[N];
    for (int i = 0; i < N; i++) xs[i] = (float)(i % 23) * 0.37f - 4.0f;
    pe_array x = pe_f32_1d(xs, N);
    const float pairs[][2] = {{2.0f, 2.0f}, {2.0f, 3.0f}, {2.0f, 2.0f}, {5.0f, -1.0f}, {0.5f, 0.5f}};
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        pe_array r = two_scalars(x, pairs[k][0], pairs[k][1]);
        assert_int_equal(pe_read(r, got, sizeof got), PE_OK);
        for (int i = 0; i < N; i++)
            if (got[i] != xs[i] * pairs[k][0] + xs[i] * pairs[k][1])
                fail_msg("pass %zu element %d: %.9g != %.9g", k, i, got[i], xs[i] * pairs[k][0] + xs[i] * pairs[k][1]);
        pe_release(r);
    }
    pe_release(x);
}

/* exp(x) * sin(x) + x, recorded with exp first, then with sin first. */
static pe_array two_orders(pe_array x, bool exp_first)
{
    pe_array e, s;
    if (exp_first) e = pe_exp(x), s = pe_sin(x);
    else s = pe_sin(x), e = pe_exp(x);
    pe_array r = pe_add(pe_mul(e, s), x);
    pe_release(e), pe_release(s);
    return r;
}

static void test_one_computation_in_two_orders_is_one_kernel(void **state)
{
    (void)state;
    float xs[N], first[N], second[N];
    for (int i = 0; i < N; i++) xs[i] = (float)(i % 31) * 0.1f - 1.5f;
    pe_array x = pe_f32_1d(xs, N);
    pe_array r1 = two_orders(x, true);
    assert_int_equal(pe_read(r1, first, sizeof first), PE_OK);
    pe_stats s0;
    pe_get_stats(&s0);
    pe_array r2 = two_orders(x, false);
    assert_int_equal(pe_read(r2, second, sizeof second), PE_OK);
    pe_stats s1;
    pe_get_stats(&s1);
    const char *executor = getenv("PE_EXECUTOR");
    if (!(executor && strcmp(executor, "interp") == 0)) {
        assert_int_equal(s1.kernels_compiled, s0.kernels_compiled); /* the first order's kernel */
        assert_int_equal(s1.kernels_launched, s0.kernels_launched + 1);
    }
    assert_memory_equal(first, second, sizeof first);
    for (int i = 0; i < N; i++) assert_true(fabsf(first[i] - (expf(xs[i]) * sinf(xs[i]) + xs[i])) <= 1e-5f);
    pe_release(x), pe_release(r1), pe_release(r2);
}

/* (x + 1) * 2, held; only its sum demanded. */
static pe_array held_at_one_site(pe_array x) { return pe_mul(pe_add(x, 1.0f), 2.0f); }

static void test_stored_for_reuse_in_the_key(void **state)
{
    (void)state;
    enum { PASSES = 4, HEAD = 10 };
    float xs[N], head[HEAD];
    for (int i = 0; i < N; i++) xs[i] = (float)i * 0.25f - 7.0f;
    pe_array x = pe_f32_1d(xs, N);
    uint64_t recomputed[PASSES];
    for (int pass = 0; pass < PASSES; pass++) {
        pe_scope scope = pe_scope_begin(); /* x + 1 is held too, until the scope ends */
        pe_array y = held_at_one_site(x), total = pe_sum(y);
        double sum;
        assert_int_equal(pe_read_f64(total, &sum), PE_OK); /* y: computed for the sum, held */
        pe_stats before = tu_stats();
        pe_array part = pe_slice(y, (int64_t[]){0}, (int64_t[]){HEAD});
        assert_int_equal(pe_read(part, head, sizeof head), PE_OK);
        recomputed[pass] = tu_stats().values_recomputed - before.values_recomputed;
        for (int i = 0; i < HEAD; i++)
            if (head[i] != (xs[i] + 1.0f) * 2.0f) fail_msg("pass %d [%d]: %.9g != %.9g", pass, i, head[i], (xs[i] + 1.0f) * 2.0f);
        pe_scope_end(scope);
    }
    /* pass 0 leaves y (and x + 1) expressions and the slice's batch
     * computes them again (the marks); from pass 1 on the first batch, equal
     * but for the marks, stores them: with the marks out of the key it would
     * replay pass 0's programs and compute y again every pass */
    if (!tu_on_interpreter()) {
        assert_true(recomputed[0] >= 1);
        for (int pass = 1; pass < PASSES; pass++)
            if (recomputed[pass] != 0) fail_msg("pass %d: y computed again %llu times", pass, (unsigned long long)recomputed[pass]);
    }
    pe_release(x);
    tu_expect_no_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_outside_operand_dtype_and_shape_in_the_key, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_compute_type_in_the_key, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_casts_to_different_types_stay_apart, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_kernel_hash_covers_literals, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_equal_scalars_shared_only_where_the_key_says, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_one_computation_in_two_orders_is_one_kernel, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_stored_for_reuse_in_the_key, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
