/* test_reductions.c — every reduction, full and per axis (negative axes
 * too), on odd sizes, in f32, f64, i32 and bool, against hand-written C loops
 * in long double; result types and shapes; empty extents; determinism; dot.
 * Runs on both executors. */
#include "test_util.h"

typedef pe_array (*full_fn)(const pe_site *, pe_array);
typedef pe_array (*axis_fn)(const pe_site *, pe_array, int);

enum { SUM, PROD, MAX, MIN, MEAN, VAR, STDDEV, ANY, ALL, ARGMAX, ARGMIN, NORM1, NORM2, NORMINF, N_RED };
static const struct {
    const char *name;
    full_fn full;
    axis_fn axis;
} reds[N_RED] = {
    [SUM] = {"sum", pe_sum_at, pe_sum_axis_at},
    [PROD] = {"prod", pe_prod_at, pe_prod_axis_at},
    [MAX] = {"max", pe_max_reduce_at, pe_max_reduce_axis_at},
    [MIN] = {"min", pe_min_reduce_at, pe_min_reduce_axis_at},
    [MEAN] = {"mean", pe_mean_at, pe_mean_axis_at},
    [VAR] = {"var", pe_var_at, pe_var_axis_at},
    [STDDEV] = {"stddev", pe_stddev_at, pe_stddev_axis_at},
    [ANY] = {"any", pe_any_at, pe_any_axis_at},
    [ALL] = {"all", pe_all_at, pe_all_axis_at},
    [ARGMAX] = {"argmax", pe_argmax_at, pe_argmax_axis_at},
    [ARGMIN] = {"argmin", pe_argmin_at, pe_argmin_axis_at},
    [NORM1] = {"norm1", pe_norm1_at, pe_norm1_axis_at},
    [NORM2] = {"norm2", pe_norm2_at, pe_norm2_axis_at},
    [NORMINF] = {"norminf", pe_norminf_at, pe_norminf_axis_at},
};

/* The oracle: reduction r over values x[0], x[step], ... (len of them). */
static long double oracle(int r, const double *x, int64_t len, int64_t step, pe_dtype t)
{
    long double acc = 0, best = 0;
    int64_t at = 0;
    switch (r) {
    case SUM: case MEAN: case NORM1:
        for (int64_t k = 0; k < len; k++) acc += r == NORM1 ? fabsl(x[k * step]) : x[k * step];
        if (t == PE_I32 && r == SUM) return (long double)(int32_t)(uint32_t)(int64_t)acc;
        return r == MEAN ? acc / len : acc;
    case PROD:
        acc = 1;
        for (int64_t k = 0; k < len; k++) acc *= x[k * step];
        return acc;
    case VAR: case STDDEV: {
        long double mean = 0;
        for (int64_t k = 0; k < len; k++) mean += x[k * step];
        mean /= len;
        for (int64_t k = 0; k < len; k++) acc += (x[k * step] - mean) * (x[k * step] - mean);
        acc /= len;
        return r == VAR ? acc : sqrtl(acc);
    }
    case NORM2:
        for (int64_t k = 0; k < len; k++) acc += (long double)x[k * step] * x[k * step];
        return sqrtl(acc);
    case ANY:
        for (int64_t k = 0; k < len; k++)
            if (x[k * step] != 0) return 1;
        return 0;
    case ALL:
        for (int64_t k = 0; k < len; k++)
            if (x[k * step] == 0) return 0;
        return 1;
    default: /* MAX MIN NORMINF ARGMAX ARGMIN */
        best = r == NORMINF ? fabs(x[0]) : x[0];
        for (int64_t k = 1; k < len; k++) {
            double v = r == NORMINF ? fabs(x[k * step]) : x[k * step];
            if ((r == MAX || r == ARGMAX || r == NORMINF) ? v > best : v < best) best = v, at = k;
        }
        return r == ARGMAX || r == ARGMIN ? (long double)at : best;
    }
}

static pe_dtype expected_type(int r, pe_dtype t)
{
    switch (r) {
    case SUM: case PROD: return t == PE_BOOL ? PE_I32 : t;
    case MAX: case MIN: return t;
    case ANY: case ALL: return PE_BOOL;
    case ARGMAX: case ARGMIN: return PE_I32;
    default: return t == PE_F64 ? PE_F64 : PE_F32;
    }
}

static void check_close(const char *what, int r, pe_dtype rt, double got, long double want)
{
    double w = (double)want;
    if (rt == PE_I32 || rt == PE_BOOL || r == MAX || r == MIN || r == NORMINF) {
        if (!tu_same_value(got, rt == PE_F32 ? (double)(float)w : w))
            fail_msg("%s: got %.17g want %.17g", what, got, w);
        return;
    }
    double ulps = rt == PE_F32 ? tu_ulps_f32((float)got, (float)w) : tu_ulps_f64(got, w);
    double allowed = rt == PE_F32 ? 1 : r == VAR || r == STDDEV ? 64 : 8;
    if (!(ulps <= allowed)) fail_msg("%s: got %.17g want %.17Lg (%g ulps)", what, got, want, ulps);
}

static void *make_data(pe_dtype t, const double *x, int64_t n)
{
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        if (t == PE_F32) ((float *)buf)[i] = (float)x[i];
        else if (t == PE_F64) ((double *)buf)[i] = x[i];
        else if (t == PE_I32) ((int32_t *)buf)[i] = (int32_t)x[i];
        else ((uint8_t *)buf)[i] = x[i] != 0;
    }
    return buf;
}

/* Values exactly representable in every dtype used. */
static double sample(pe_dtype t, int64_t i)
{
    if (t == PE_BOOL) return (i * 7) % 3 == 0;
    if (t == PE_I32) return (double)((i * 37) % 23 - 11);
    return (double)(float)(((i * 37) % 101) * 0.03125 - 1.5);
}

static unsigned only = ~0u; /* the reductions check_shape checks (a bit each), full ones only when all */

static void check_shape(pe_dtype t, int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    double *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = sample(t, i);
    void *buf = make_data(t, x, n);
    pe_array a = pe_from_host(t, rank, shape, buf);
    for (int r = 0; r < N_RED; r++) {
        if (t == PE_I32 && r == PROD) continue; /* products of many integers overflow: wrapping is tested below */
        if (!(only >> r & 1)) continue;
        char what[96];
        if (only == ~0u) { /* full */
            pe_array f = reds[r].full(PE_HERE, a);
            assert_int_equal(pe_rank(f), 0);
            assert_int_equal(pe_dtype_of(f), expected_type(r, t));
            double got;
            assert_int_equal(pe_read_f64(f, &got), PE_OK);
            snprintf(what, sizeof what, "%s of %lld %s", reds[r].name, (long long)n, pe_dtype_of(a) == PE_F32 ? "f32" : "other");
            check_close(what, r, expected_type(r, t), got, oracle(r, x, n, 1, t));
            pe_release(f);
        }
        /* per axis, each axis, given as negative too */
        for (int axis = 0; axis < rank; axis++) {
            pe_array g = reds[r].axis(PE_HERE, a, axis - (axis % 2 ? rank : 0));
            assert_int_equal(pe_rank(g), rank - 1);
            int64_t outer = 1, len = shape[axis], inner = 1;
            for (int d = 0; d < axis; d++) outer *= shape[d];
            for (int d = axis + 1; d < rank; d++) inner *= shape[d];
            assert_int_equal(pe_numel(g), outer * inner);
            int64_t count;
            double *vals = tu_read_as_f64(g, &count);
            for (int64_t o = 0; o < outer; o++)
                for (int64_t i = 0; i < inner; i++) {
                    snprintf(what, sizeof what, "%s axis %d at %lld", reds[r].name, axis, (long long)(o * inner + i));
                    check_close(what, r, expected_type(r, t), vals[o * inner + i], oracle(r, x + o * len * inner + i, len, inner, t));
                }
            free(vals);
            pe_release(g);
        }
    }
    pe_release(a);
    free(buf), free(x);
    tu_expect_no_error();
}

static void test_odd_sizes_all_types(void **state)
{
    (void)state;
    const int64_t s1[1] = {1}, s7[1] = {7}, s1001[1] = {1001}, s35[2] = {3, 5}, s713[3] = {7, 1, 3}, s4[4] = {2, 3, 5, 7};
    const pe_dtype types[] = {PE_F32, PE_F64, PE_I32, PE_BOOL};
    for (int k = 0; k < 4; k++) {
        check_shape(types[k], 1, s1);
        check_shape(types[k], 1, s7);
        check_shape(types[k], 1, s1001);
        check_shape(types[k], 2, s35);
        check_shape(types[k], 3, s713);
        check_shape(types[k], 4, s4);
    }
}

/* Reductions along short axes (issue 38 item 3): rows of 2..64 elements,
 * multiples of the vector width and not, in rank 2 and 3 (the CPU walks
 * such rows across the results, emit_short_rows), and n x K summed along
 * axis 0 (groups of 8 results in registers and the rest, launches of whole
 * rows of results), every reduction against the long double oracle. */
static void test_short_axes(void **state)
{
    (void)state;
    static const int64_t lens[] = {2, 3, 16, 17, 33, 64};
    only = 1u << SUM | 1u << MEAN | 1u << MAX | 1u << ARGMIN; /* the kernels' shapes, not every reduction again */
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) check_shape(PE_F32, 2, ((int64_t[]){7, lens[l]}));
    check_shape(PE_F64, 2, ((int64_t[]){7, 5}));
    check_shape(PE_I32, 2, ((int64_t[]){7, 16}));
    check_shape(PE_BOOL, 2, ((int64_t[]){7, 3}));
    check_shape(PE_F32, 3, ((int64_t[]){3, 5, 16}));
    check_shape(PE_F32, 2, ((int64_t[]){2100, 16})); /* several launches */
    check_shape(PE_F64, 3, ((int64_t[]){300, 19, 2}));
    only = ~0u;
}

/* argmin, argmax, min and max along short rows and along axis 0 of n x K
 * with ties and NaNs: the first index of the extreme, the first NaN's where
 * there is one (and NaN as the extreme), as a C loop finds them. */
static void check_ties_nan(pe_dtype t, int64_t rows, int64_t cols)
{
    int64_t n = rows * cols;
    double *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = (double)((i * 5 + i / cols) % 3); /* ties everywhere */
    for (int64_t r = 0; r < rows; r += 3) x[r * cols + (r * 7) % cols] = NAN;
    for (int64_t r = 0; r < rows; r += 5) x[r * cols + (r * 3) % cols] = NAN; /* a second NaN in some rows */
    void *buf = make_data(t, x, n);
    pe_scope scope = pe_scope_begin();
    pe_array a = pe_from_host(t, 2, ((int64_t[]){rows, cols}), buf);
    for (int axis = 0; axis < 2; axis++) {
        int64_t outer = axis ? rows : cols, len = axis ? cols : rows, step = axis ? 1 : cols;
        int64_t count;
        double *amin = tu_read_as_f64(pe_argmin_axis(a, axis), &count), *amax = tu_read_as_f64(pe_argmax_axis(a, axis), &count);
        double *vmin = tu_read_as_f64(pe_min_axis(a, axis), &count), *vmax = tu_read_as_f64(pe_max_axis(a, axis), &count);
        for (int64_t o = 0; o < outer; o++) {
            const double *v = x + (axis ? o * cols : o);
            int64_t nan_at = -1, lo = 0, hi = 0;
            for (int64_t c = 0; c < len; c++) {
                if (isnan(v[c * step])) {
                    if (nan_at < 0) nan_at = c;
                    continue;
                }
                if (isnan(v[lo * step]) || v[c * step] < v[lo * step]) lo = c;
                if (isnan(v[hi * step]) || v[c * step] > v[hi * step]) hi = c;
            }
            int64_t want_min = nan_at >= 0 ? nan_at : lo, want_max = nan_at >= 0 ? nan_at : hi;
            if (amin[o] != (double)want_min || amax[o] != (double)want_max)
                fail_msg("%lldx%lld axis %d at %lld: argmin %g argmax %g, want %lld %lld", (long long)rows, (long long)cols, axis,
                         (long long)o, amin[o], amax[o], (long long)want_min, (long long)want_max);
            if (nan_at >= 0 ? !isnan(vmin[o]) || !isnan(vmax[o]) : vmin[o] != v[lo * step] || vmax[o] != v[hi * step])
                fail_msg("%lldx%lld axis %d at %lld: min %g max %g", (long long)rows, (long long)cols, axis, (long long)o, vmin[o], vmax[o]);
        }
        free(amin), free(amax), free(vmin), free(vmax);
    }
    pe_scope_end(scope);
    free(buf), free(x);
    tu_expect_no_error();
}

static void test_short_axes_ties_nan(void **state)
{
    (void)state;
    static const int64_t lens[] = {2, 13, 16, 33, 64};
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) check_ties_nan(PE_F32, 40, lens[l]);
    check_ties_nan(PE_F64, 40, 17);
    check_ties_nan(PE_F32, 3000, 16);
    check_ties_nan(PE_F64, 2000, 19);
}

static void test_nan_and_ties(void **state)
{
    (void)state;
    double x[6] = {1, 5, NAN, 5, NAN, -2};
    pe_array a = pe_f64_1d(x, 6);
    double v;
    assert_int_equal(pe_read_f64(pe_max(a), &v), PE_OK), assert_true(isnan(v));
    assert_int_equal(pe_read_f64(pe_min(a), &v), PE_OK), assert_true(isnan(v));
    assert_int_equal(pe_read_f64(pe_argmax(a), &v), PE_OK), assert_true(v == 2); /* the first NaN */
    double y[5] = {1, 5, 3, 5, -2};
    pe_array b = pe_f64_1d(y, 5);
    assert_int_equal(pe_read_f64(pe_argmax(b), &v), PE_OK), assert_true(v == 1); /* the first of the ties */
    assert_int_equal(pe_read_f64(pe_argmin(b), &v), PE_OK), assert_true(v == 4);
    tu_expect_no_error();
}

/* Infinities and overflow in sums (issue 24): IEEE as NumPy gives it,
 * sum([1, inf, 2]) = inf, sum([inf, -inf]) = NaN, sum([big, big]) = inf;
 * a compensated sum must not turn them into inf - inf.  Sizes of one
 * element, a few, and several chunks of a reduction kernel (the infinity in
 * one chunk, the other sign in another), full and along each axis; the
 * oracle is a long double loop (oracle() above). */
/* The oracle, except that a mean whose sum overflows is infinite (as
 * NumPy's is): the sum is formed in PE's accumulator, double for f32 and f64
 * (so an f32 mean of values near FLT_MAX is finite, where NumPy's is not). */
static long double oracle_special(int r, const double *x, int64_t len, pe_dtype t)
{
    long double sum = oracle(SUM, x, len, 1, t);
    if (r == MEAN && !isfinite((double)sum)) return (double)sum;
    return oracle(r, x, len, 1, t);
}

static void check_special(pe_dtype t, const double *x, int64_t rows, int64_t cols)
{
    static const int sums[] = {SUM, MEAN, NORM1, NORM2};
    int64_t shape[2] = {rows, cols}, n = rows * cols;
    void *buf = make_data(t, x, n);
    pe_scope scope = pe_scope_begin(); /* the results go with it */
    pe_array a = pe_from_host(t, 2, shape, buf);
    for (size_t s = 0; s < sizeof sums / sizeof *sums; s++) {
        int r = sums[s];
        char what[96];
        double got;
        long double want = oracle_special(r, x, n, t);
        assert_int_equal(pe_read_f64(reds[r].full(PE_HERE, a), &got), PE_OK);
        snprintf(what, sizeof what, "%s of %lldx%lld %s", reds[r].name, (long long)rows, (long long)cols,
                 t == PE_F32 ? "f32" : "f64");
        if (!isfinite((double)want) || !isfinite(got)) {
            double w = t == PE_F32 ? (double)(float)want : (double)want;
            if (!tu_same_value(got, w)) fail_msg("%s: got %g want %g", what, got, w);
        } else {
            check_close(what, r, t, got, want);
        }
        /* along the rows: row i's value is the reduction of its cols elements */
        int64_t count;
        double *vals = tu_read_as_f64(reds[r].axis(PE_HERE, a, 1), &count);
        for (int64_t i = 0; i < rows; i++) {
            long double w = oracle_special(r, x + i * cols, cols, t);
            snprintf(what, sizeof what, "%s of row %lld", reds[r].name, (long long)i);
            if (!isfinite((double)w) && !tu_same_value(vals[i], t == PE_F32 ? (double)(float)w : (double)w))
                fail_msg("%s: got %g want %Lg", what, vals[i], w);
            if (isfinite((double)w)) check_close(what, r, t, vals[i], w);
        }
        free(vals);
    }
    /* dot with ones is the sum */
    pe_array ones = pe_fill(t, 2, shape, 1.0);
    double got, w = (double)oracle(SUM, x, n, 1, t);
    assert_int_equal(pe_read_f64(pe_dot(a, ones), &got), PE_OK);
    if (!isfinite(w) && !tu_same_value(got, t == PE_F32 ? (double)(float)w : w)) fail_msg("dot: got %g want %g", got, w);
    pe_scope_end(scope);
    free(buf);
}

static void test_sums_with_infinities(void **state)
{
    (void)state;
    const int64_t big = 3 * 16384 + 5; /* several chunks of a reduction kernel */
    double *x = malloc((size_t)big * 2 * sizeof *x);
    const pe_dtype types[] = {PE_F32, PE_F64};
    for (int k = 0; k < 2; k++) {
        pe_dtype t = types[k];
        double huge = t == PE_F32 ? 3e38 : 1.5e308;
        double one[1] = {INFINITY};
        check_special(t, one, 1, 1);
        double three[3] = {1, INFINITY, 2};
        check_special(t, three, 1, 3);
        double minus[3] = {1, -INFINITY, 2};
        check_special(t, minus, 1, 3);
        double both[4] = {INFINITY, 1, -INFINITY, 2};
        check_special(t, both, 2, 2); /* rows inf and -inf, NaN in all */
        double over[3] = {huge, huge, huge};
        check_special(t, over, 1, 3);
        for (int64_t i = 0; i < 2 * big; i++) x[i] = (double)(i % 7) - 3;
        x[5] = INFINITY; /* row 0, first chunk */
        check_special(t, x, 2, big);
        x[big + 2 * 16384 + 1] = -INFINITY; /* row 1, third chunk: the full sum is NaN */
        check_special(t, x, 2, big);
        x[5] = 1, x[big + 2 * 16384 + 1] = 1;
        x[3 * 16384] = -INFINITY; /* one infinity in the fourth chunk of the flat array */
        check_special(t, x, 1, 2 * big);
    }
    free(x);
    tu_expect_no_error();
}

static void test_empty_extents(void **state)
{
    (void)state;
    int64_t shape[2] = {0, 3};
    pe_array e = pe_fill(PE_F64, 2, shape, 1.0);
    double v;
    assert_int_equal(pe_read_f64(pe_sum(e), &v), PE_OK), assert_true(v == 0);
    assert_int_equal(pe_read_f64(pe_prod(e), &v), PE_OK), assert_true(v == 1);
    assert_int_equal(pe_read_f64(pe_mean(e), &v), PE_OK), assert_true(isnan(v));
    int line = __LINE__ + 1;
    pe_array m = pe_max(e);
    tu_expect_error(PE_E_SHAPE, line);
    assert_int_equal(pe_read_f64(m, &v), PE_E_INVALID);
    tu_errors_clear();
    line = __LINE__ + 1;
    pe_argmin_axis(e, 0);
    tu_expect_error(PE_E_SHAPE, line);
    pe_array s = pe_sum_axis(e, 1); /* three empty rows... of zero rows: shape (0) */
    assert_int_equal(pe_numel(s), 0);
    line = __LINE__ + 1;
    pe_sum_axis(e, 2);
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    pe_sum_axis(e, -3);
    tu_expect_error(PE_E_ARG, line);
}

static void test_integer_products_wrap_and_dot(void **state)
{
    (void)state;
    int32_t x[5] = {65536, 65536, 3, -1, 7};
    int64_t n = 5;
    pe_array a = pe_from_host(PE_I32, 1, &n, x);
    int32_t p;
    assert_int_equal(pe_read(pe_prod(a), &p, sizeof p), PE_OK);
    assert_int_equal(p, (int32_t)((uint32_t)65536 * 65536u * 3u * (uint32_t)-1 * 7u));
    int32_t big[3] = {INT32_MAX, 1, 1};
    int64_t three = 3;
    assert_int_equal(pe_read(pe_sum(pe_from_host(PE_I32, 1, &three, big)), &p, sizeof p), PE_OK);
    assert_int_equal(p, INT32_MIN + 1);
    /* dot */
    double u[4] = {1, 2, 3, 4}, w[4] = {0.5, -1, 2, 0.25};
    double d;
    assert_int_equal(pe_read_f64(pe_dot(pe_f64_1d(u, 4), pe_f64_1d(w, 4)), &d), PE_OK);
    assert_true(d == 0.5 - 2 + 6 + 1);
    int32_t iu[3] = {1, 2, 3};
    pe_array iv = pe_from_host(PE_I32, 1, &three, iu);
    pe_array idot = pe_dot(iv, iv);
    assert_int_equal(pe_dtype_of(idot), PE_I32);
    assert_int_equal(pe_read(idot, &p, sizeof p), PE_OK);
    assert_int_equal(p, 14);
    float fu[3] = {1, 2, 3};
    float fd;
    assert_int_equal(pe_read_f32(pe_dot(pe_f32_1d(fu, 3), 2.0f), &fd), PE_OK); /* broadcasts */
    assert_true(fd == 12.0f);
    tu_expect_no_error();
}

static void test_deterministic(void **state)
{
    (void)state;
    int64_t n = 300007;
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = (float)sin((double)i) * 1000.0f;
    pe_array a = pe_f32_1d(x, n);
    double first = 0;
    for (int k = 0; k < 3; k++) {
        double v;
        pe_array s = pe_add(pe_sum(a), 0.0); /* a fresh request each time */
        assert_int_equal(pe_read_f64(s, &v), PE_OK);
        if (k == 0) first = v;
        assert_memory_equal(&v, &first, sizeof v);
    }
    free(x);
    tu_expect_no_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_odd_sizes_all_types, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_nan_and_ties, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_short_axes, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_short_axes_ties_nan, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_sums_with_infinities, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_empty_extents, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_integer_products_wrap_and_dot, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_deterministic, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
