/* test_compose.c — the operations recorded as others (issue 39: api_compose.c)
 * and the shape queries and printing: sigmoid, softmax and logsumexp
 * against C loops in double (their edge cases: overflow-free at 1000, all
 * -inf, inf, NaN, i32 input), expand_dims, roll, pad (every mode),
 * slice_update, arange and linspace against
 * the values NumPy gives (written out here), pe_shape, and pe_print's text
 * byte for byte (NumPy's layout, the spec's digits).  Both executors; the
 * op suites' PE_CHECK=all run too (tests/CMakeLists.txt). */
#define _GNU_SOURCE
#include "test_util.h"

static void read_f64(pe_array a, double *out, size_t n)
{
    assert_int_equal(pe_dtype_of(a), PE_F64);
    assert_int_equal(pe_read(a, out, n * sizeof *out), PE_OK);
}

static void close_to(double got, double want, double rel, const char *what, int i)
{
    bool same = (isnan(got) && isnan(want)) || got == want || fabs(got - want) <= rel * fabs(want);
    if (!same) fail_msg("%s [%d]: %.17g, want %.17g", what, i, got, want);
}

static void test_sigmoid(void **state)
{
    (void)state;
    double x[9] = {-1000, -745, -40, -1, 0, 0.5, 40, 1000, NAN}, got[9];
    float xf[9], gotf[9];
    for (int i = 0; i < 9; i++) xf[i] = (float)x[i];
    read_f64(pe_sigmoid(pe_f64_1d(x, 9)), got, 9);
    pe_array sf = pe_sigmoid(pe_f32_1d(xf, 9));
    assert_int_equal(pe_dtype_of(sf), PE_F32);
    assert_int_equal(pe_read(sf, gotf, sizeof gotf), PE_OK);
    for (int i = 0; i < 9; i++) {
        double want = 1.0 / (1.0 + exp(-x[i]));
        close_to(got[i], want, 4e-16, "sigmoid f64", i);
        close_to(gotf[i], want, 4e-7, "sigmoid f32", i);
        if (!isnan(x[i])) assert_true(got[i] >= 0 && got[i] <= 1);
    }
    assert_true(got[0] == 0.0 && got[7] == 1.0);
    int32_t k[3] = {-2, 0, 3};
    pe_array si = pe_sigmoid(pe_from_host(PE_I32, 1, (int64_t[]){3}, k)); /* i32: f64, as NumPy */
    read_f64(si, got, 3);
    for (int i = 0; i < 3; i++) close_to(got[i], 1.0 / (1.0 + exp(-k[i])), 4e-16, "sigmoid i32", i);
}

enum { ROWS = 37, COLS = 50 };

/* softmax of m along axis (0: columns, 1: rows) in double */
static void c_softmax(const double *m, double *out, int axis)
{
    int outer = axis == 1 ? ROWS : COLS, len = axis == 1 ? COLS : ROWS;
    for (int o = 0; o < outer; o++) {
        double big = -INFINITY, total = 0;
        for (int k = 0; k < len; k++) big = fmax(big, m[axis == 1 ? o * COLS + k : k * COLS + o]);
        for (int k = 0; k < len; k++) total += exp(m[axis == 1 ? o * COLS + k : k * COLS + o] - big);
        for (int k = 0; k < len; k++) {
            int at = axis == 1 ? o * COLS + k : k * COLS + o;
            out[at] = exp(m[at] - big) / total;
        }
    }
}

static void test_softmax(void **state)
{
    (void)state;
    static double m[ROWS * COLS], want[ROWS * COLS], got[ROWS * COLS];
    static float mf[ROWS * COLS], gotf[ROWS * COLS];
    uint64_t seed = 5;
    for (int i = 0; i < ROWS * COLS; i++) m[i] = 1000.0 + 30.0 * tu_uniform(&seed), mf[i] = (float)m[i]; /* e^1000 overflows */
    for (int axis = 0; axis < 2; axis++) {
        c_softmax(m, want, axis);
        read_f64(pe_softmax(pe_f64_2d(m, ROWS, COLS), axis), got, ROWS * COLS);
        for (int i = 0; i < ROWS * COLS; i++) close_to(got[i], want[i], 1e-13, axis ? "softmax rows f64" : "softmax columns f64", i);
        for (int i = 0; i < ROWS * COLS; i++) mf[i] = (float)m[i], m[i] = mf[i]; /* the f32 operand exactly */
        c_softmax(m, want, axis);
        pe_array sf = pe_softmax(pe_f32_2d(mf, ROWS, COLS), axis - 2); /* a negative axis */
        assert_int_equal(pe_dtype_of(sf), PE_F32);
        assert_int_equal(pe_read(sf, gotf, sizeof gotf), PE_OK);
        for (int i = 0; i < ROWS * COLS; i++) close_to(gotf[i], want[i], 2e-5, "softmax f32", i);
    }
    /* bool: f64, each row uniform where all equal */
    unsigned char flags[4] = {1, 1, 0, 1};
    read_f64(pe_softmax(pe_from_host(PE_BOOL, 2, (int64_t[]){2, 2}, flags), 1), got, 4);
    close_to(got[0], 0.5, 1e-16, "softmax bool", 0);
    close_to(got[2], 1.0 / (1.0 + M_E), 1e-15, "softmax bool", 2);
}

static void test_logsumexp(void **state)
{
    (void)state;
    double pair[2] = {1000, 1000}, got[4];
    read_f64(pe_logsumexp(pe_f64_1d(pair, 2), 0), got, 1);
    close_to(got[0], 1000.0 + log(2.0), 1e-16, "logsumexp [1000, 1000]", 0);
    /* rows: all -inf, one inf, a NaN, ordinary values */
    double m[4 * 3] = {-INFINITY, -INFINITY, -INFINITY, 1, INFINITY, 2, 0, NAN, 1, -1, 0.5, 2};
    pe_array r = pe_logsumexp(pe_f64_2d(m, 4, 3), 1);
    assert_int_equal(pe_rank(r), 1);
    assert_int_equal(pe_dim(r, 0), 4);
    read_f64(r, got, 4);
    assert_true(got[0] == -INFINITY);
    assert_true(got[1] == INFINITY);
    assert_true(isnan(got[2]));
    close_to(got[3], 2.0 + log(exp(-3.0) + exp(-1.5) + 1.0), 1e-15, "logsumexp row", 3);
    /* columns of a matrix against C */
    static double big[ROWS * COLS], cols[COLS];
    uint64_t seed = 9;
    for (int i = 0; i < ROWS * COLS; i++) big[i] = 50.0 * tu_uniform(&seed);
    read_f64(pe_logsumexp(pe_f64_2d(big, ROWS, COLS), 0), cols, COLS);
    for (int c = 0; c < COLS; c++) {
        double top = -INFINITY, total = 0;
        for (int r2 = 0; r2 < ROWS; r2++) top = fmax(top, big[r2 * COLS + c]);
        for (int r2 = 0; r2 < ROWS; r2++) total += exp(big[r2 * COLS + c] - top);
        close_to(cols[c], top + log(total), 1e-14, "logsumexp columns", c);
    }
}

static void read_i32(pe_array a, const int32_t *want, int n)
{
    int32_t got[32];
    assert_int_equal(pe_dtype_of(a), PE_I32);
    assert_int_equal(pe_numel(a), n);
    assert_int_equal(pe_read(a, got, (size_t)n * sizeof got[0]), PE_OK);
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) fail_msg("[%d]: %d, want %d", i, got[i], want[i]);
}

static void test_shape_helpers(void **state)
{
    (void)state;
    int32_t v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    pe_array a = pe_from_host(PE_I32, 1, (int64_t[]){10}, v);
    read_i32(pe_roll(a, 3, 0), (int32_t[]){7, 8, 9, 0, 1, 2, 3, 4, 5, 6}, 10);   /* np.roll(a, 3) */
    read_i32(pe_roll(a, -2, -1), (int32_t[]){2, 3, 4, 5, 6, 7, 8, 9, 0, 1}, 10); /* np.roll(a, -2) */
    read_i32(pe_roll(a, 13, 0), (int32_t[]){7, 8, 9, 0, 1, 2, 3, 4, 5, 6}, 10);
    pe_array m = pe_reshape(a, 2, (int64_t[]){2, 5});
    read_i32(pe_roll(m, 1, 1), (int32_t[]){4, 0, 1, 2, 3, 9, 5, 6, 7, 8}, 10); /* np.roll(m, 1, axis=1) */
    read_i32(pe_roll(m, 1, 0), (int32_t[]){5, 6, 7, 8, 9, 0, 1, 2, 3, 4}, 10);
    int64_t dims[PE_MAX_RANK];
    pe_array e0 = pe_expand_dims(m, 0), e2 = pe_expand_dims(m, -1), e1 = pe_expand_dims(m, 1);
    assert_int_equal(pe_shape(e0, dims), 3);
    assert_true(dims[0] == 1 && dims[1] == 2 && dims[2] == 5);
    assert_int_equal(pe_shape(e2, dims), 3);
    assert_true(dims[0] == 2 && dims[1] == 5 && dims[2] == 1);
    assert_int_equal(pe_shape(e1, dims), 3);
    assert_true(dims[0] == 2 && dims[1] == 1 && dims[2] == 5);
    read_i32(e1, v, 10);
    /* keepdims: a row's max broadcast back */
    pe_array centred = pe_sub(m, pe_expand_dims(pe_max_axis(m, 1), 1));
    read_i32(centred, (int32_t[]){-4, -3, -2, -1, 0, -4, -3, -2, -1, 0}, 10);
}

static void test_pad_and_slice_update(void **state)
{
    (void)state;
    pe_array a = pe_from_host(PE_I32, 1, (int64_t[]){4}, (int32_t[]){1, 2, 3, 4});
    /* np.pad(a, (2, 3), mode): */
    read_i32(pe_pad(a, 0, 2, 3, PE_PAD_CONSTANT, 9.0), (int32_t[]){9, 9, 1, 2, 3, 4, 9, 9, 9}, 9);
    read_i32(pe_pad(a, 0, 2, 3, PE_PAD_EDGE, 0.0), (int32_t[]){1, 1, 1, 2, 3, 4, 4, 4, 4}, 9);
    read_i32(pe_pad(a, 0, 2, 3, PE_PAD_WRAP, 0.0), (int32_t[]){3, 4, 1, 2, 3, 4, 1, 2, 3}, 9);
    read_i32(pe_pad(a, 0, 2, 3, PE_PAD_REFLECT, 0.0), (int32_t[]){3, 2, 1, 2, 3, 4, 3, 2, 1}, 9);
    read_i32(pe_pad(a, 0, 6, 9, PE_PAD_WRAP, 0.0), (int32_t[]){3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1}, 19);
    read_i32(pe_pad(a, 0, 0, 1, PE_PAD_REFLECT, 0.0), (int32_t[]){1, 2, 3, 4, 3}, 5);
    read_i32(pe_pad(a, 0, 0, 0, PE_PAD_EDGE, 0.0), (int32_t[]){1, 2, 3, 4}, 4);
    /* 2-d, along each axis: np.pad(m, ((1, 0), (0, 0)), 'edge') and ((0, 0), (1, 1)) 'reflect' */
    pe_array m = pe_reshape(pe_arange(PE_I32, 0, 6, 1), 2, (int64_t[]){2, 3});
    read_i32(pe_pad(m, 0, 1, 0, PE_PAD_EDGE, 0.0), (int32_t[]){0, 1, 2, 0, 1, 2, 3, 4, 5}, 9);
    read_i32(pe_pad(m, -1, 1, 1, PE_PAD_REFLECT, 0.0), (int32_t[]){1, 0, 1, 2, 1, 4, 3, 4, 5, 4}, 10);
    double got[12];
    read_f64(pe_pad(pe_f64_1d(((double[]){0.5, -1}), 2), 0, 1, 1, PE_PAD_CONSTANT, -7.25), got, 4);
    assert_true(got[0] == -7.25 && got[1] == 0.5 && got[2] == -1 && got[3] == -7.25);
    /* functional update: a 2 x 2 block of v at (1, 2) of a 3 x 4 zero grid (v f64 into i32) */
    pe_array grid = pe_fill(PE_I32, 2, (int64_t[]){3, 4}, 0.0);
    pe_array block = pe_f64_2d(((double[]){1.9, 2, 3, -4}), 2, 2);
    read_i32(pe_slice_update(grid, block, (int64_t[]){1, 2}), (int32_t[]){0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, -4}, 12);
    /* u[1:-1, 1:-1] = interior: a stencil's update written as NumPy users do */
    pe_array u = pe_reshape(pe_arange(PE_F64, 0, 12, 1), 2, (int64_t[]){3, 4});
    pe_array inner = pe_mul(pe_slice(u, (int64_t[]){1, 1}, (int64_t[]){1, 2}), 10.0);
    read_f64(pe_slice_update(u, inner, (int64_t[]){1, 1}), got, 12);
    for (int i = 0; i < 12; i++) assert_true(got[i] == (i == 5 || i == 6 ? 10.0 * i : i));
    tu_expect_no_error();
    int line = __LINE__ + 1;
    pe_array bad = pe_pad(a, 0, 4, 0, PE_PAD_REFLECT, 0.0);
    assert_int_equal(tu_errors.code, PE_E_ARG);
    assert_int_equal(tu_errors.line, line);
    assert_false(pe_is_valid(bad));
    tu_errors_clear();
    bad = pe_slice_update(grid, block, (int64_t[]){2, 2});
    assert_int_equal(tu_errors.code, PE_E_SHAPE);
    assert_non_null(strstr(tu_errors.message, "pe_slice_update"));
    tu_errors_clear();
}

static void test_generators(void **state)
{
    (void)state;
    double got[16];
    read_f64(pe_arange(PE_F64, 0, 1, 0.25), got, 4); /* np.arange(0, 1, 0.25) */
    assert_true(got[0] == 0 && got[1] == 0.25 && got[2] == 0.5 && got[3] == 0.75);
    assert_int_equal(pe_numel(pe_arange(PE_F64, 0, 1, 0.1)), 10);
    assert_int_equal(pe_numel(pe_arange(PE_F64, 1, 0, 1)), 0);
    read_i32(pe_arange(PE_I32, 5, 0, -2), (int32_t[]){5, 3, 1}, 3);
    float gf[3];
    pe_array af = pe_arange(PE_F32, -1, 0.5, 0.5);
    assert_int_equal(pe_dtype_of(af), PE_F32);
    assert_int_equal(pe_read(af, gf, sizeof gf), PE_OK);
    assert_true(gf[0] == -1.0f && gf[1] == -0.5f && gf[2] == 0.0f);
    read_f64(pe_linspace(PE_F64, 0, 1, 5), got, 5);
    for (int i = 0; i < 5; i++) assert_true(got[i] == 0.25 * i);
    read_f64(pe_linspace(PE_F64, 0, 0.3, 4), got, 4);
    assert_true(got[3] == 0.3); /* the end exactly */
    close_to(got[1], 0.1, 1e-15, "linspace", 1);
    read_f64(pe_linspace(PE_F64, 2, 7, 1), got, 1);
    assert_true(got[0] == 2);
    assert_int_equal(pe_numel(pe_linspace(PE_F64, 0, 1, 0)), 0);
    tu_expect_no_error();
    /* errors name this file and line */
    tu_errors_clear();
    int line = __LINE__ + 1;
    pe_array bad = pe_arange(PE_F64, 0, 1, 0);
    assert_int_equal(tu_errors.code, PE_E_ARG);
    assert_int_equal(tu_errors.line, line);
    assert_non_null(strstr(tu_errors.file, "test_compose.c"));
    assert_false(pe_is_valid(bad));
    tu_errors_clear();
    line = __LINE__ + 1;
    bad = pe_softmax(pe_arange(PE_F64, 0, 4, 1), 1);
    assert_int_equal(tu_errors.code, PE_E_ARG);
    assert_int_equal(tu_errors.line, line);
    assert_non_null(strstr(tu_errors.message, "pe_softmax"));
    tu_errors_clear();
    bad = pe_sigmoid(pe_fill_c(PE_C128, 1, (int64_t[]){2}, 1.0, 1.0));
    assert_int_equal(tu_errors.code, PE_E_TYPE);
    tu_errors_clear();
    assert_int_equal(pe_shape((pe_array){0}, (int64_t[PE_MAX_RANK]){0}), -1);
    tu_errors_clear();
}

/* What pe_print writes for a, as a string (malloc'ed). */
static char *printed(pe_array a)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(pe_print(f, a), PE_OK);
    fclose(f);
    return text;
}

static void expect_printed(pe_array a, const char *want)
{
    char *got = printed(a);
    if (strcmp(got, want)) fail_msg("printed:\n%s\nwant:\n%s", got, want);
    free(got);
}

static void test_print(void **state)
{
    (void)state;
    expect_printed(pe_f64_2d(((double[]){1, 2, 3, 4, 5, 6}), 2, 3), "[[1 2 3]\n [4 5 6]]\n");
    expect_printed(pe_from_host(PE_I32, 1, (int64_t[]){3}, (int32_t[]){1, -20, 300}), "[  1 -20 300]\n");
    expect_printed(pe_from_host(PE_BOOL, 1, (int64_t[]){2}, (unsigned char[]){1, 0}), "[ True False]\n");
    expect_printed(pe_f32_1d(((float[]){0.1f, 2.5f}), 2), "[0.1 2.5]\n");
    expect_printed(pe_f64_1d(((double[]){0.1, -2}), 2), "[0.10000000000000001                  -2]\n");
    expect_printed(pe_reshape(pe_arange(PE_I32, 0, 8, 1), 3, (int64_t[]){2, 2, 2}), "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]\n");
    expect_printed(pe_arange(PE_I32, 0, 2000, 1), "[   0    1    2 ... 1997 1998 1999]\n");
    expect_printed(pe_reshape(pe_arange(PE_I32, 0, 2000, 1), 2, (int64_t[]){200, 10}),
                   "[[   0    1    2 ...    7    8    9]\n [  10   11   12 ...   17   18   19]\n [  20   21   22 ...   27   28   29]\n"
                   " ...\n [1970 1971 1972 ... 1977 1978 1979]\n [1980 1981 1982 ... 1987 1988 1989]\n [1990 1991 1992 ... 1997 1998 1999]]\n");
    expect_printed(pe_scalar(PE_I32, 5), "5\n");
    expect_printed(pe_arange(PE_F64, 0, 0, 1), "[]\n");
    double parts[4] = {1, 2, 3, -4};
    expect_printed(pe_from_host(PE_C128, 1, (int64_t[]){2}, parts), "[1+2j 3-4j]\n");
    tu_expect_no_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sigmoid, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_softmax, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_logsumexp, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_shape_helpers, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_pad_and_slice_update, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_generators, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_print, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
