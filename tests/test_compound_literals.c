/* test_compound_literals.c — every operation that takes a shape, a start,
 * a count, a step or axes, called through its macro with compound literals
 * in place (`pe_fill(PE_F32, 2, (int64_t[]){4, 4}, 1.0)`): the macros are
 * variadic, so the literal's commas reach the function.  That it compiles
 * is half the test; each result is also checked against values written
 * out by hand. */
#include "test_util.h"

static void free_buffer(void *data, void *ctx)
{
    (void)ctx;
    free(data);
}

static void expect_f64(pe_array a, const double *want, size_t n)
{
    double got[64];
    assert_true(n <= 64);
    assert_int_equal(pe_read(a, got, n * sizeof got[0]), PE_OK);
    for (size_t i = 0; i < n; i++) assert_true(got[i] == want[i]);
}

static void test_creation(void **state)
{
    (void)state;
    pe_array f = pe_fill(PE_F64, 2, (int64_t[]){2, 3}, 1.5);
    assert_int_equal(pe_rank(f), 2);
    assert_int_equal(pe_dim(f, 0), 2);
    assert_int_equal(pe_dim(f, 1), 3);
    expect_f64(f, (double[]){1.5, 1.5, 1.5, 1.5, 1.5, 1.5}, 6);

    pe_array h = pe_from_host(PE_F64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
    expect_f64(h, (double[]){1, 2, 3, 4}, 4);

    pe_array ix = pe_index(PE_F64, 2, (int64_t[]){2, 3}, 1);
    expect_f64(ix, (double[]){0, 1, 2, 0, 1, 2}, 6);

    double *buffer = malloc(3 * sizeof *buffer);
    assert_non_null(buffer);
    buffer[0] = 7, buffer[1] = 8, buffer[2] = 9;
    pe_array adopted = pe_adopt(PE_F64, 1, (int64_t[]){3}, buffer, free_buffer, NULL);
    expect_f64(adopted, (double[]){7, 8, 9}, 3);

    pe_array c = pe_fill_c(PE_C128, 1, (int64_t[]){2}, 1.0, -2.0);
    double parts[4];
    assert_int_equal(pe_read(c, parts, sizeof parts), PE_OK);
    assert_true(parts[0] == 1.0 && parts[1] == -2.0 && parts[2] == 1.0 && parts[3] == -2.0);

    pe_rng r = pe_rng_create(PE_RNG_PHILOX, 7);
    pe_array u = pe_rng_uniform(r, PE_F64, 2, (int64_t[]){3, 5});
    pe_array n = pe_rng_normal(r, PE_F64, 2, (int64_t[]){5, 3});
    assert_int_equal(pe_numel(u), 15);
    assert_int_equal(pe_dim(n, 0), 5);
    double draws[15];
    assert_int_equal(pe_read(u, draws, sizeof draws), PE_OK);
    for (int i = 0; i < 15; i++) assert_true(draws[i] >= 0.0 && draws[i] < 1.0);
    pe_rng_destroy(r);
    pe_release(f), pe_release(h), pe_release(ix), pe_release(adopted), pe_release(c), pe_release(u), pe_release(n);
}

static void test_views(void **state)
{
    (void)state;
    /* a = [[0 1 2 3] [4 5 6 7] [8 9 10 11]] */
    pe_array a = pe_from_host(PE_F64, 2, (int64_t[]){3, 4}, (double[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    expect_f64(pe_reshape(a, 2, (int64_t[]){4, 3}), (double[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 12);
    expect_f64(pe_slice(a, (int64_t[]){1, 1}, (int64_t[]){2, 2}), (double[]){5, 6, 9, 10}, 4);
    expect_f64(pe_slice_step(a, (int64_t[]){0, 3}, (int64_t[]){2, 2}, (int64_t[]){2, -2}), (double[]){3, 1, 11, 9}, 4);
    expect_f64(pe_periodic(pe_slice(a, (int64_t[]){0, 0}, (int64_t[]){1, 2}), 2, (int64_t[]){2, 3}),
               (double[]){0, 1, 0, 0, 1, 0}, 6);
    expect_f64(pe_permute(a, (int[]){1, 0}), (double[]){0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}, 12);
    pe_release(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_creation, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_views, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
