/* test_order.c — the order ops (issue 39: api_order.c; exec/intrinsics'
 * scan.c, sort.c, bins.c): cumsum and cumprod along every axis (rows of one
 * chunk and of many, columns; bool, i32 wrapping, f32, f64, c128), sort and
 * argsort (stable, NaN last, -0.0 equal to +0.0, descending; short,
 * insertion-sized and long rows sorted by all threads), histogram (NumPy's
 * bins, its published results for values on the edges), bincount and
 * scatter_add (counts, weights, repeated indices, a scalar value), each
 * against a C loop written here; the same bits for 1, 2 and 3 threads; the
 * errors at the caller's line.  Both executors (the interpreter's reference
 * is the other oracle) and PE_CHECK=all (tests/CMakeLists.txt). */
#define _GNU_SOURCE
#include <complex.h>

#include "test_util.h"

static void close_to(double got, double want, double rel, double magnitude, const char *what, long i)
{
    bool same = (isnan(got) && isnan(want)) || got == want || fabs(got - want) <= rel * fmax(fabs(want), magnitude);
    if (!same) fail_msg("%s [%ld]: %.17g, want %.17g", what, i, got, want);
}

/* ------------------------------------------------------------------ scans */

enum { LONG_N = 100003 }; /* past SCAN_CHUNK and SORT_SPLIT's block, not a multiple of either */

static void test_scans_1d(void **state)
{
    (void)state;
    static double x[LONG_N], got[LONG_N];
    static float xf[LONG_N], gotf[LONG_N];
    uint64_t seed = 11;
    for (int i = 0; i < LONG_N; i++) x[i] = tu_uniform(&seed) + 0.25, xf[i] = (float)x[i];
    const int sizes[] = {1, 7, 49, 16384, 16385, LONG_N};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        int n = sizes[si];
        assert_int_equal(pe_read(pe_cumsum(pe_f64_1d(x, n), 0), got, sizeof *got * (size_t)n), PE_OK);
        assert_int_equal(pe_read(pe_cumsum(pe_f32_1d(xf, n), -1), gotf, sizeof *gotf * (size_t)n), PE_OK);
        double s = 0, sf = 0, biggest = 0;
        for (int i = 0; i < n; i++) {
            s += x[i], sf += xf[i], biggest = fmax(biggest, fabs(sf));
            close_to(got[i], s, 1e-12, 0, "cumsum f64", i);
            close_to(gotf[i], sf, 6e-8 * (i + 1), biggest, "cumsum f32", i); /* the worst case of n f32 adds */
        }
    }
    /* products near one stay finite over the long row */
    for (int i = 0; i < LONG_N; i++) x[i] = 1 + 1e-5 * tu_uniform(&seed);
    assert_int_equal(pe_read(pe_cumprod(pe_f64_1d(x, LONG_N), 0), got, sizeof got), PE_OK);
    double p = 1;
    for (int i = 0; i < LONG_N; i++) {
        p *= x[i];
        close_to(got[i], p, 1e-12, 0, "cumprod f64", i);
    }
    /* -0.0 first stays -0.0 (NumPy's cumsum of [-0.0, 0.0] is [-0.0, 0.0]) */
    double z[2] = {-0.0, 0.0}, zz[2];
    assert_int_equal(pe_read(pe_cumsum(pe_f64_1d(z, 2), 0), zz, sizeof zz), PE_OK);
    assert_true(signbit(zz[0]) && zz[1] == 0 && !signbit(zz[1]));
}

/* A read of a kept handle gets the result straight into its buffer (api_read.c lends it; the
 * handle stays an expression: dispatch.c): later uses compute it again, with the same values */
static void test_read_then_use_again(void **state)
{
    (void)state;
    enum { N = 50000 };
    static double x[N], first[N], again[N];
    uint64_t seed = 17;
    for (int i = 0; i < N; i++) x[i] = tu_uniform(&seed);
    pe_scope sc = pe_scope_begin();
    pe_array c = pe_cumsum(pe_f64_1d(x, N), 0), s = pe_sort(pe_f64_1d(x, N), 0, false);
    assert_int_equal(pe_read(c, first, sizeof first), PE_OK);
    assert_int_equal(pe_read(c, again, sizeof again), PE_OK);
    assert_memory_equal(first, again, sizeof first);
    double total, want = 0;
    assert_int_equal(pe_read_f64(pe_sum(pe_sub(c, 1.0)), &total), PE_OK);
    for (int i = 0; i < N; i++) want += first[i] - 1.0;
    close_to(total, want, 1e-9, 0, "sum of a cumsum read before", 0);
    assert_int_equal(pe_read(s, first, sizeof first), PE_OK);
    assert_int_equal(pe_read(pe_add(s, 0.0), again, sizeof again), PE_OK);
    assert_memory_equal(first, again, sizeof first);
    for (int i = 1; i < N; i++) assert_true(first[i - 1] <= first[i]);
    pe_scope_end(sc);
}

static void test_scans_integers(void **state)
{
    (void)state;
    enum { N = 40000 };
    static int32_t k[N], got[N];
    static bool b[N];
    uint64_t seed = 3;
    for (int i = 0; i < N; i++) k[i] = (int32_t)(tu_uniform(&seed) * 2e9), b[i] = tu_uniform(&seed) > 0;
    pe_array s = pe_cumsum(pe_from_host(PE_I32, 1, (int64_t[]){N}, k), 0); /* wraps, as i32 adds do */
    assert_int_equal(pe_dtype_of(s), PE_I32);
    assert_int_equal(pe_read(s, got, sizeof got), PE_OK);
    uint32_t acc = 0;
    for (int i = 0; i < N; i++) {
        acc += (uint32_t)k[i];
        if (got[i] != (int32_t)acc) fail_msg("cumsum i32 [%d]: %d, want %d", i, got[i], (int32_t)acc);
    }
    pe_array c = pe_cumsum(pe_from_host(PE_BOOL, 1, (int64_t[]){N}, b), 0); /* a bool's sum counts, in i32 */
    assert_int_equal(pe_dtype_of(c), PE_I32);
    assert_int_equal(pe_read(c, got, sizeof got), PE_OK);
    int32_t count = 0;
    for (int i = 0; i < N; i++) {
        count += b[i];
        assert_int_equal(got[i], count);
    }
    int32_t small[6] = {1, -2, 3, 4, -5, 6}, prod[6];
    assert_int_equal(pe_read(pe_cumprod(pe_from_host(PE_I32, 1, (int64_t[]){6}, small), 0), prod, sizeof prod), PE_OK);
    int32_t want[6] = {1, -2, -6, -24, 120, 720};
    for (int i = 0; i < 6; i++) assert_int_equal(prod[i], want[i]);
}

/* cumsum and cumprod of a [3, 45, 70] array along each axis (a middle axis: columns walked down), fused with
 * the producer (x * 0.5 + 0.75 is never stored) */
static void test_scans_axes(void **state)
{
    (void)state;
    enum { A = 3, B = 45, C = 70, N = A * B * C };
    static double x[N], got[N], want[N];
    uint64_t seed = 8;
    for (int i = 0; i < N; i++) x[i] = tu_uniform(&seed);
    const int64_t shape[3] = {A, B, C}, len[3] = {A, B, C}, stride[3] = {B * C, C, 1};
    for (int op = 0; op < 2; op++)
        for (int axis = 0; axis < 3; axis++) {
            pe_scope sc = pe_scope_begin();
            pe_array in = pe_add(pe_mul(pe_from_host(PE_F64, 3, shape, x), 0.5), 0.75);
            pe_array r = op ? pe_cumprod(in, axis) : pe_cumsum(in, axis);
            assert_int_equal(pe_read(r, got, sizeof got), PE_OK);
            pe_scope_end(sc);
            for (int i = 0; i < N; i++) {
                int64_t pos = i / stride[axis] % len[axis];
                double v = x[i] * 0.5 + 0.75;
                want[i] = pos == 0 ? v : op ? want[i - stride[axis]] * v : want[i - stride[axis]] + v;
            }
            for (int i = 0; i < N; i++) close_to(got[i], want[i], 1e-13, 0, op ? "cumprod axes" : "cumsum axes", i);
        }
}

static void test_scans_complex(void **state)
{
    (void)state;
    double complex z[5] = {1 + 2 * I, -3 + 0.5 * I, 2, 0.25 * I, -1 - I}, got[5];
    pe_array a = pe_from_host(PE_C128, 1, (int64_t[]){5}, z);
    assert_int_equal(pe_read(pe_cumsum(a, 0), got, sizeof got), PE_OK);
    double complex s = 0;
    for (int i = 0; i < 5; i++) {
        s += z[i];
        assert_true(cabs(got[i] - s) <= 1e-15 * cabs(s));
    }
    assert_int_equal(pe_read(pe_cumprod(a, 0), got, sizeof got), PE_OK);
    s = 1;
    for (int i = 0; i < 5; i++) {
        s *= z[i];
        assert_true(cabs(got[i] - s) <= 1e-15 * cabs(s));
    }
}

/* ------------------------------------------------------------------ sorts */

typedef struct {
    double v;
    int i;
} keyed;

static bool desc_order;

/* NumPy's order (NaN last, -0.0 == 0.0), ties by position: a stable sort by qsort */
static int by_value(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    bool xn = isnan(x->v), yn = isnan(y->v);
    if (xn != yn) return xn ? 1 : -1;
    if (!xn && x->v != y->v) return (desc_order ? x->v > y->v : x->v < y->v) ? -1 : 1;
    return x->i - y->i;
}

/* The values of a row (any dtype as double) sorted: their order's indices. */
static void c_argsort(const double *v, int n, int stride, bool descending, int *order)
{
    keyed *k = malloc(sizeof *k * (size_t)n);
    for (int i = 0; i < n; i++) k[i] = (keyed){v[(size_t)i * (size_t)stride], i};
    desc_order = descending;
    qsort(k, (size_t)n, sizeof *k, by_value);
    for (int i = 0; i < n; i++) order[i] = k[i].i;
    free(k);
}

static void test_sort_f32_rows(void **state)
{
    (void)state;
    enum { MAXN = 300007 }; /* past SORT_SPLIT: sorted by all threads */
    static float x[MAXN], got[MAXN];
    static double xd[MAXN];
    static int order[MAXN];
    static int32_t idx[MAXN];
    uint64_t seed = 21;
    for (int i = 0; i < MAXN; i++) {
        double u = tu_uniform(&seed);
        x[i] = (float)(u * 100);
        if (i % 97 == 0) x[i] = NAN;
        if (i % 89 == 0) x[i] = -0.0f;
        if (i % 83 == 0) x[i] = 0.0f;
        if (i % 79 == 0) x[i] = (float)(int)(u * 10); /* many equal values */
        if (i % 1001 == 0) x[i] = i % 2 ? INFINITY : -INFINITY;
        xd[i] = x[i];
    }
    const int sizes[] = {1, 2, 17, 32, 33, 1000, 40000, MAXN};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int desc = 0; desc < 2; desc++) {
            int n = sizes[s];
            pe_array a = pe_f32_1d(x, n);
            assert_int_equal(pe_read(pe_sort(a, 0, desc), got, sizeof *got * (size_t)n), PE_OK);
            assert_int_equal(pe_read(pe_argsort(a, -1, desc), idx, sizeof *idx * (size_t)n), PE_OK);
            c_argsort(xd, n, 1, desc, order);
            for (int i = 0; i < n; i++) {
                if (idx[i] != order[i]) fail_msg("argsort n=%d desc=%d [%d]: %d, want %d", n, desc, i, idx[i], order[i]);
                if (memcmp(&got[i], &x[order[i]], sizeof *got) != 0 && !(isnan(got[i]) && isnan(x[order[i]])))
                    fail_msg("sort n=%d desc=%d [%d]: %g, want %g", n, desc, i, got[i], x[order[i]]);
            }
        }
}

static void test_sort_other_dtypes_and_axes(void **state)
{
    (void)state;
    enum { R = 37, C = 301 };
    static double m[R * C], got[R * C], col[R * C];
    static int32_t k[R * C], gotk[R * C], idx[R * C];
    static int order[R * C];
    uint64_t seed = 4;
    for (int i = 0; i < R * C; i++) {
        m[i] = i % 11 == 0 ? NAN : (double)(int)(tu_uniform(&seed) * 20) / 4;
        k[i] = i % 13 == 0 ? INT32_MIN : i % 17 == 0 ? INT32_MAX : (int32_t)(tu_uniform(&seed) * 1000);
    }
    for (int axis = 0; axis < 2; axis++)
        for (int desc = 0; desc < 2; desc++) {
            pe_array a = pe_f64_2d(m, R, C), ak = pe_from_host(PE_I32, 2, (int64_t[]){R, C}, k);
            assert_int_equal(pe_read(pe_sort(a, axis, desc), got, sizeof got), PE_OK);
            assert_int_equal(pe_read(pe_argsort(ak, axis, desc), idx, sizeof idx), PE_OK);
            assert_int_equal(pe_read(pe_sort(ak, axis, desc), gotk, sizeof gotk), PE_OK);
            int rows = axis ? R : C, n = axis ? C : R, stride = axis ? 1 : C, step = axis ? C : 1;
            for (int r = 0; r < rows; r++) {
                c_argsort(m + r * step, n, stride, desc, order);
                for (int i = 0; i < n; i++) {
                    double want = m[r * step + order[i] * stride], g = got[r * step + i * stride];
                    if (!(g == want || (isnan(g) && isnan(want)))) fail_msg("sort f64 axis %d row %d [%d]", axis, r, i);
                }
                for (int i = 0; i < n; i++) col[i] = k[r * step + i * stride];
                c_argsort(col, n, 1, desc, order);
                for (int i = 0; i < n; i++) {
                    assert_int_equal(idx[r * step + i * stride], order[i]);
                    assert_int_equal(gotk[r * step + i * stride], k[r * step + order[i] * stride]);
                }
            }
        }
    double d[7] = {NAN, 1, -INFINITY, -0.0, 0.0, NAN, -1}, s[7]; /* NumPy: [-inf, -1, -0, 0, 1, nan, nan] */
    assert_int_equal(pe_read(pe_sort(pe_f64_1d(d, 7), 0, false), s, sizeof s), PE_OK);
    assert_true(s[0] == -INFINITY && s[1] == -1 && s[2] == 0 && signbit(s[2]) && s[3] == 0 && !signbit(s[3]));
    assert_true(s[4] == 1 && isnan(s[5]) && isnan(s[6]));
}

/* ------------------------------------------------------------------- bins */

static void test_histogram_numpy(void **state)
{
    (void)state;
    /* np.histogram([0.3, 0.6, 0.7, 1.0, 0.1, -0.0, 0.2], bins=10, range=(0, 1)): 0.3 lies below the edge
     * 3 * 0.1 = 0.30000000000000004, so bin 2; the same values as float32 fall on their f32 edges */
    double x[7] = {0.3, 0.6, 0.7, 1.0, 0.1, -0.0, 0.2};
    float xf[5] = {0.3f, 0.6f, 0.7f, 1.0f, 0.1f};
    int32_t got[10];
    const int32_t want[10] = {1, 1, 2, 0, 0, 1, 1, 0, 0, 1}, wantf[10] = {0, 1, 0, 1, 0, 0, 1, 1, 0, 1};
    pe_array h = pe_histogram(pe_f64_1d(x, 7), 10, 0.0, 1.0);
    assert_int_equal(pe_dtype_of(h), PE_I32);
    assert_int_equal(pe_read(h, got, sizeof got), PE_OK);
    for (int i = 0; i < 10; i++) assert_int_equal(got[i], want[i]);
    assert_int_equal(pe_read(pe_histogram(pe_f32_1d(xf, 5), 10, 0.0, 1.0), got, sizeof got), PE_OK);
    for (int i = 0; i < 10; i++) assert_int_equal(got[i], wantf[i]);
    /* np.histogram([0, 1, 2, 3, 4, 5, 5, 6, -1, nan], bins=5, range=(0, 5)): [1, 1, 1, 1, 3] */
    double y[10] = {0, 1, 2, 3, 4, 5, 5, 6, -1, NAN};
    assert_int_equal(pe_read(pe_histogram(pe_f64_1d(y, 10), 5, 0, 5), got, 5 * sizeof *got), PE_OK);
    const int32_t want5[5] = {1, 1, 1, 1, 3};
    for (int i = 0; i < 5; i++) assert_int_equal(got[i], want5[i]);
}

/* A large histogram of f(x) (the producer fused before it) against the edges' definition */
static void test_histogram_large(void **state)
{
    (void)state;
    enum { N = 250001, BINS = 37 };
    static double x[N];
    uint64_t seed = 77;
    for (int i = 0; i < N; i++) x[i] = tu_uniform(&seed) * 1.2;
    int32_t got[BINS];
    pe_array h = pe_histogram(pe_mul(pe_f64_1d(x, N), pe_f64_1d(x, N)), BINS, 0.01, 1.0);
    assert_int_equal(pe_read(h, got, sizeof got), PE_OK);
    double edges[BINS + 1];
    for (int i = 0; i <= BINS; i++) edges[i] = i == BINS ? 1.0 : 0.01 + i * ((1.0 - 0.01) / BINS);
    int32_t want[BINS] = {0};
    for (int i = 0; i < N; i++) {
        double v = x[i] * x[i];
        if (!(v >= edges[0] && v <= edges[BINS])) continue;
        int b = 0;
        while (b < BINS - 1 && v >= edges[b + 1]) b++;
        want[b]++;
    }
    for (int i = 0; i < BINS; i++) assert_int_equal(got[i], want[i]);
}

static void test_bincount(void **state)
{
    (void)state;
    enum { N = 150000, LEN = 1000 };
    static int32_t idx[N], counts[LEN];
    static double w[N], sums[LEN];
    static float wf[N], sumsf[LEN];
    uint64_t seed = 9;
    for (int i = 0; i < N; i++) {
        idx[i] = (int32_t)((tu_uniform(&seed) + 1) / 2 * LEN) % LEN;
        w[i] = tu_uniform(&seed), wf[i] = (float)w[i];
    }
    pe_array ix = pe_from_host(PE_I32, 1, (int64_t[]){N}, idx);
    pe_array c = pe_bincount(ix, (pe_array){0}, LEN);
    assert_int_equal(pe_dtype_of(c), PE_I32);
    assert_int_equal(pe_read(c, counts, sizeof counts), PE_OK);
    assert_int_equal(pe_read(pe_bincount(ix, pe_f64_1d(w, N), LEN), sums, sizeof sums), PE_OK);
    assert_int_equal(pe_read(pe_bincount(ix, pe_f32_1d(wf, N), LEN), sumsf, sizeof sumsf), PE_OK);
    static int32_t want_c[LEN];
    static double want_s[LEN], want_sf[LEN];
    for (int i = 0; i < N; i++) want_c[idx[i]]++, want_s[idx[i]] += w[i], want_sf[idx[i]] += wf[i];
    for (int b = 0; b < LEN; b++) {
        assert_int_equal(counts[b], want_c[b]);
        close_to(sums[b], want_s[b], 1e-12, 1, "bincount f64", b);
        close_to(sumsf[b], want_sf[b], 1e-6, 1, "bincount f32", b);
    }
    /* an index past the length: the result is invalid, PE_E_ARG at the call's line */
    int32_t bad[4] = {0, 2, 5, 1};
    int line = __LINE__ + 1;
    pe_array b = pe_bincount(pe_from_host(PE_I32, 1, (int64_t[]){4}, bad), (pe_array){0}, 5);
    assert_int_equal(pe_read(b, counts, 5 * sizeof *counts), PE_E_ARG);
    tu_expect_error(PE_E_ARG, line);
    assert_non_null(strstr(pe_last_error()->message, "idx.flat[2] is 5"));
}

static void test_scatter_add(void **state)
{
    (void)state;
    double t[6] = {1, 2, 3, 4, 5, 6}, got[6];
    int32_t idx[7] = {0, 5, 5, 2, 0, 5, 3};
    double v[7] = {10, 1, 2, 0.5, 20, 4, -4};
    pe_array target = pe_reshape(pe_f64_1d(t, 6), 2, (int64_t[]){2, 3}), ix = pe_from_host(PE_I32, 1, (int64_t[]){7}, idx);
    pe_array r = pe_scatter_add(target, ix, pe_f64_1d(v, 7));
    assert_int_equal(pe_rank(r), 2);
    assert_int_equal(pe_read(r, got, sizeof got), PE_OK);
    const double want[6] = {31, 2, 3.5, 0, 5, 13};
    for (int i = 0; i < 6; i++) close_to(got[i], want[i], 0, 0, "scatter_add", i);
    assert_int_equal(pe_read(pe_scatter_add(target, ix, 1.0), got, sizeof got), PE_OK); /* a scalar, as target's dtype */
    const double ones[6] = {3, 2, 4, 5, 5, 9};
    for (int i = 0; i < 6; i++) close_to(got[i], ones[i], 0, 0, "scatter_add scalar", i);
    /* f32 target, many values: against a loop in double */
    enum { T = 5000, N = 200000 };
    static float tf[T], vf[N], gotf[T];
    static int32_t ixs[N];
    static double want_f[T];
    uint64_t seed = 12;
    for (int i = 0; i < T; i++) tf[i] = (float)tu_uniform(&seed), want_f[i] = 0;
    for (int i = 0; i < N; i++) ixs[i] = (int32_t)((tu_uniform(&seed) + 1) / 2 * T) % T, vf[i] = (float)tu_uniform(&seed);
    for (int i = 0; i < N; i++) want_f[ixs[i]] += vf[i];
    pe_array rf = pe_scatter_add(pe_f32_1d(tf, T), pe_from_host(PE_I32, 1, (int64_t[]){N}, ixs), pe_f32_1d(vf, N));
    assert_int_equal(pe_read(rf, gotf, sizeof gotf), PE_OK);
    for (int i = 0; i < T; i++) close_to(gotf[i], tf[i] + want_f[i], 1e-6, 1, "scatter_add f32", i);
    int line = __LINE__ + 1;
    pe_array bad = pe_scatter_add(target, pe_from_host(PE_I32, 1, (int64_t[]){2}, (int32_t[]){1, -1}), 1.0);
    assert_int_equal(pe_read(bad, got, sizeof got), PE_E_ARG);
    tu_expect_error(PE_E_ARG, line);
}

/* ---------------------------------------------------- threads and errors */

/* Every op at sizes past its groups and chunks, on 1, 2 and 3 threads: the same bits */
static void run_threads(int threads, float *scan_out, float *sums_out, float *scatter_out, int32_t *args_out)
{
    enum { N = 300000, LEN = 64 };
    static float x[N];
    static int32_t idx[N];
    uint64_t seed = 31;
    for (int i = 0; i < N; i++) x[i] = (float)tu_uniform(&seed), idx[i] = (int32_t)((x[i] + 1) * 31.5f) % LEN;
    pe_shutdown();
    const char *executor = getenv("PE_EXECUTOR");
    pe_config cfg = {.executor = executor && *executor ? executor : "jit", .threads = threads};
    assert_int_equal(pe_init(&cfg), PE_OK);
    pe_array a = pe_f32_1d(x, N), ix = pe_from_host(PE_I32, 1, (int64_t[]){N}, idx);
    assert_int_equal(pe_read(pe_cumsum(a, 0), scan_out, sizeof *scan_out * N), PE_OK);
    assert_int_equal(pe_read(pe_bincount(ix, a, LEN), sums_out, sizeof *sums_out * LEN), PE_OK);
    assert_int_equal(pe_read(pe_scatter_add(pe_fill(PE_F32, 1, (int64_t[]){LEN}, 0.5), ix, a), scatter_out,
                             sizeof *scatter_out * LEN),
                     PE_OK);
    assert_int_equal(pe_read(pe_argsort(a, 0, false), args_out, sizeof *args_out * N), PE_OK);
}

static void test_same_bits_any_threads(void **state)
{
    (void)state;
    enum { N = 300000, LEN = 64 };
    static float scan[3][N], sums[3][LEN], scatter[3][LEN];
    static int32_t args[3][N];
    for (int t = 0; t < 3; t++) run_threads(t + 1, scan[t], sums[t], scatter[t], args[t]);
    for (int t = 1; t < 3; t++) {
        assert_memory_equal(scan[t], scan[0], sizeof scan[0]);
        assert_memory_equal(sums[t], sums[0], sizeof sums[0]);
        assert_memory_equal(scatter[t], scatter[0], sizeof scatter[0]);
        assert_memory_equal(args[t], args[0], sizeof args[0]);
    }
}

static void test_errors(void **state)
{
    (void)state;
    double x[4] = {1, 2, 3, 4};
    pe_array a = pe_f64_1d(x, 4);
    int line = __LINE__ + 1;
    pe_array r = pe_cumsum(a, 1);
    assert_false(pe_is_valid(r));
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    r = pe_sort(pe_cast(a, PE_C64), 0, false);
    tu_expect_error(PE_E_TYPE, line);
    line = __LINE__ + 1;
    r = pe_histogram(a, 4, 2.0, 2.0);
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    r = pe_histogram(a, 0, 0.0, 1.0);
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    r = pe_bincount(a, (pe_array){0}, 4);
    tu_expect_error(PE_E_TYPE, line);
    pe_array ix = pe_from_host(PE_I32, 1, (int64_t[]){2}, (int32_t[]){0, 1});
    line = __LINE__ + 1;
    r = pe_bincount(ix, a, 4);
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    r = pe_scatter_add(a, ix, pe_f32_1d((float[]){1, 2}, 2));
    tu_expect_error(PE_E_TYPE, line);
    line = __LINE__ + 1;
    r = pe_scatter_add(a, ix, pe_f64_1d(x, 3));
    tu_expect_error(PE_E_SHAPE, line);
    (void)r;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scans_1d, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_read_then_use_again, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_scans_integers, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_scans_axes, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_scans_complex, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_sort_f32_rows, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_sort_other_dtypes_and_axes, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_histogram_numpy, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_histogram_large, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_bincount, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_scatter_add, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_same_bits_any_threads, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_errors, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
