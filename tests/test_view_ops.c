/* test_view_ops.c — views and data movement against hand-written loops:
 * reshape (with an inferred axis), transpose, slice, periodic, spread,
 * gather (and its out-of-range error at read), concat with promotion; chains
 * of views and element-wise ops; sources never change.  Both executors. */
#include "test_util.h"

static pe_array iota(pe_dtype t, int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    double *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = (double)i;
    pe_array a = pe_cast(pe_f64_1d(x, n), t);
    free(x);
    return pe_reshape(a, rank, shape);
}

static void test_reshape_and_transpose(void **state)
{
    (void)state;
    int64_t s23[2] = {2, 3}, s_inf[2] = {-1, 2}, bad[2] = {4, 2};
    pe_array a = iota(PE_F32, 2, s23);
    pe_array r = pe_reshape(a, 2, s_inf);
    assert_int_equal(pe_dim(r, 0), 3), assert_int_equal(pe_dim(r, 1), 2);
    double *v = tu_read_as_f64(r, NULL);
    for (int i = 0; i < 6; i++) assert_true(v[i] == i);
    free(v);
    pe_array t = pe_transpose(a);
    assert_int_equal(pe_dim(t, 0), 3), assert_int_equal(pe_dim(t, 1), 2);
    v = tu_read_as_f64(t, NULL);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) assert_true(v[i * 2 + j] == j * 3 + i);
    free(v);
    int64_t five = 5;
    pe_array one_d = iota(PE_I32, 1, &five);
    v = tu_read_as_f64(pe_transpose(one_d), NULL);
    for (int i = 0; i < 5; i++) assert_true(v[i] == i);
    free(v);
    int line = __LINE__ + 1;
    pe_array x = pe_reshape(a, 2, bad);
    tu_expect_error(PE_E_SHAPE, line);
    assert_false(pe_is_valid(x));
    /* a chain: (transpose(a) + 1) * column */
    double col[3] = {1, 10, 100};
    v = tu_read_as_f64(pe_mul(pe_add(t, 1.0f), pe_f64_2d(col, 3, 1)), NULL);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) assert_true(v[i * 2 + j] == (j * 3 + i + 1) * col[i]);
    free(v);
    v = tu_read_as_f64(a, NULL); /* the source is unchanged */
    for (int i = 0; i < 6; i++) assert_true(v[i] == i);
    free(v);
}

static void test_slice_periodic_spread(void **state)
{
    (void)state;
    int64_t s45[2] = {4, 5};
    pe_array a = iota(PE_F64, 2, s45);
    int64_t start[2] = {1, 2}, count[2] = {2, 3};
    double *v = tu_read_as_f64(pe_slice(a, start, count), NULL);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) assert_true(v[i * 3 + j] == (i + 1) * 5 + (j + 2));
    free(v);
    int64_t over[2] = {4, 1};
    int line = __LINE__ + 1;
    pe_slice(a, start, over);
    tu_expect_error(PE_E_SHAPE, line);
    /* periodic: (2) tiled to (3, 5) */
    int64_t two = 2, s35[2] = {3, 5};
    pe_array p = pe_periodic(iota(PE_I32, 1, &two), 2, s35);
    v = tu_read_as_f64(p, NULL);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) assert_true(v[i * 5 + j] == j % 2);
    free(v);
    /* spread: a new axis, and a size-1 axis replicated */
    int64_t three = 3;
    pe_array s = pe_spread(iota(PE_F32, 1, &three), 0, 4); /* (4, 3) */
    assert_int_equal(pe_dim(s, 0), 4), assert_int_equal(pe_dim(s, 1), 3);
    v = tu_read_as_f64(s, NULL);
    for (int i = 0; i < 12; i++) assert_true(v[i] == i % 3);
    free(v);
    pe_array s2 = pe_spread(iota(PE_F32, 1, &three), 1, 2); /* (3, 2) */
    v = tu_read_as_f64(s2, NULL);
    for (int i = 0; i < 3; i++) assert_true(v[i * 2] == i && v[i * 2 + 1] == i);
    free(v);
    int64_t s31[2] = {3, 1};
    pe_array s3 = pe_spread(iota(PE_BOOL, 2, s31), 1, 4); /* size-1 axis replicated: (3, 4) */
    assert_int_equal(pe_rank(s3), 2), assert_int_equal(pe_dim(s3, 1), 4);
    v = tu_read_as_f64(s3, NULL);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) assert_true(v[i * 4 + j] == (i != 0));
    free(v);
    tu_expect_no_error();
}

static void test_gather_and_concat(void **state)
{
    (void)state;
    int64_t ten = 10, four = 4;
    pe_array a = pe_mul(iota(PE_F64, 1, &ten), 10.0);
    int32_t idx[4] = {9, 0, 3, 3};
    pe_array g = pe_gather(a, pe_from_host(PE_I32, 1, &four, idx));
    double *v = tu_read_as_f64(g, NULL);
    for (int i = 0; i < 4; i++) assert_true(v[i] == idx[i] * 10.0);
    free(v);
    int32_t bad[2] = {1, 10};
    int64_t two = 2;
    int line = __LINE__ + 1;
    pe_array gb = pe_gather(a, pe_from_host(PE_I32, 1, &two, bad));
    tu_expect_no_error(); /* data-dependent: found when computed */
    double out[2];
    /* the read is the error's first report: its own code, PE_E_ARG (pe.h), as
     * for a consumer of the gather that has not been computed yet */
    pe_array later = pe_add(gb, 1.0);
    assert_int_equal(pe_read(gb, out, sizeof out), PE_E_ARG);
    assert_int_equal(tu_errors.code, PE_E_ARG);
    assert_int_equal(pe_read(later, out, sizeof out), PE_E_ARG);
    assert_int_equal(tu_errors.code, PE_E_ARG);
    assert_non_null(strstr(tu_errors.message, "out of range"));
    pe_array after = pe_add(gb, 2.0); /* recorded after gb was found invalid */
    assert_int_equal(pe_read(after, out, sizeof out), PE_E_ARG);
    pe_release(later), pe_release(after);
    char where[64];
    snprintf(where, sizeof where, "test_view_ops.c:%d", line);
    assert_non_null(strstr(tu_errors.message, where));
    assert_non_null(strstr(tu_errors.message, "out of range"));
    tu_errors_clear();
    line = __LINE__ + 1;
    pe_gather(a, a);
    tu_expect_error(PE_E_TYPE, line);
    /* concat with promotion: (2,3) i32 ++ (1,3) f32 on axis 0 */
    int64_t s23[2] = {2, 3}, s13[2] = {1, 3};
    pe_array c = pe_concat(iota(PE_I32, 2, s23), pe_add(iota(PE_F32, 2, s13), 0.5f), 0);
    assert_int_equal(pe_dtype_of(c), PE_F32);
    assert_int_equal(pe_dim(c, 0), 3);
    v = tu_read_as_f64(c, NULL);
    for (int j = 0; j < 6; j++) assert_true(v[j] == j);
    for (int j = 0; j < 3; j++) assert_true(v[6 + j] == j + 0.5);
    free(v);
    pe_array c1 = pe_concat(iota(PE_F64, 2, s23), iota(PE_F64, 2, s23), -1); /* (2, 6) */
    v = tu_read_as_f64(c1, NULL);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 6; j++) assert_true(v[i * 6 + j] == i * 3 + j % 3);
    free(v);
    line = __LINE__ + 1;
    pe_concat(iota(PE_F64, 2, s23), iota(PE_F64, 1, &four), 0);
    tu_expect_error(PE_E_SHAPE, line);
}

/* A concat of two uniform constants inside a kernel: no part is loaded
 * through a map, yet the select needs the coordinate along the axis (a
 * kernel without its shape trapped, issue 36's loop differential). */
static void test_concat_of_constants(void **state)
{
    (void)state;
    int64_t s23[2] = {2, 3}, s22[2] = {2, 2}, s13[2] = {1, 3};
    double along1[10], along0[9];
    pe_array a = pe_fill(PE_F64, 2, s23, 1.0);
    assert_int_equal(pe_read(pe_add(pe_concat(a, pe_fill(PE_F64, 2, s22, 5.0), 1), 0.5), along1, sizeof along1), PE_OK);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 5; j++) assert_true(along1[i * 5 + j] == (j < 3 ? 1.5 : 5.5));
    assert_int_equal(pe_read(pe_add(pe_concat(a, pe_fill(PE_F64, 2, s13, 7.0), 0), 0.5), along0, sizeof along0), PE_OK);
    for (int e = 0; e < 9; e++) assert_true(along0[e] == (e < 6 ? 1.5 : 7.5));
}

/* A gather from a uniform constant (pe_fill: a value, no buffer): the
 * kernel reads it at computed positions, so the executor gives it a buffer
 * first (a kernel once read through its null pointer); an index out of range
 * is still an error at the gather's line. */
static void test_gather_from_a_constant(void **state)
{
    (void)state;
    int64_t shape[2] = {3, 4}, m = 3;
    int32_t idx[3] = {0, 11, 5};
    pe_array a = pe_fill(PE_F32, 2, shape, 1.5);
    float out[3];
    assert_int_equal(pe_read(pe_add(pe_gather(a, pe_from_host(PE_I32, 1, &m, idx)), 1.0f), out, sizeof out), PE_OK);
    for (int i = 0; i < 3; i++) assert_true(out[i] == 2.5f);
    idx[1] = 12;
    int line = __LINE__ + 1;
    pe_array g = pe_gather(a, pe_from_host(PE_I32, 1, &m, idx));
    assert_int_equal(pe_read(pe_mul(g, 2.0f), out, sizeof out), PE_E_ARG);
    char where[64];
    snprintf(where, sizeof where, "test_view_ops.c:%d", line);
    assert_non_null(strstr(tu_errors.message, where));
    tu_errors_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reshape_and_transpose, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_slice_periodic_spread, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_gather_and_concat, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_concat_of_constants, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_gather_from_a_constant, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
