/* test_spmv.c — sparse matrices (pe_csr_create, pe_csr_destroy) and
 * pe_spmv against a plain C loop over the CSR arrays in long double:
 * random matrices of both float dtypes with empty rows (and a matrix of no
 * rows, one of no entries), the 2-d Laplacian large enough to run on every
 * thread of the pool; element-wise producers of x fused into one kernel
 * before the call and consumers into one after it (on the JIT); a loop of
 * products replayed from the trace cache; a matrix outliving the scope it
 * was made in; bad shapes and dtypes at the caller's line, and a structure
 * whose indices are wrong (a column out of range, offsets going down, not
 * starting at 0, not ending at nnz) as PE_E_ARG at pe_spmv's line, never a
 * read outside the arrays; inside a code reuse section, PE_E_MACRO (not
 * supported yet).  Both executors run it (the interpreter's
 * long-double spmv is PE_CHECK's oracle).  On the CPU JIT every product
 * must come from the generated row loop (pe_stats.generated_library_calls),
 * its sums bitwise those of the documented order (column order, in
 * double), compiled once per run and then kept in the disk cache. */
#include <dirent.h>
#include <float.h>

#include "test_util.h"
#include "examples/laplacian_csr.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}
static double uniform(void) { return (double)(next_u64() >> 11) / 9007199254740992.0 * 2 - 1; } /* [-1, 1) */

/* Whether spmv's generated CPU loop makes this test's products: the JIT on
 * the CPU (PE_DEVICE=cuda: the emulated cuSPARSE does). */
static bool on_generated_loop(void)
{
    const char *d = getenv("PE_DEVICE");
    return !tu_on_interpreter() && !(d && strcmp(d, "cuda") == 0);
}

typedef struct {
    int64_t n_rows, n_cols, nnz;
    int32_t *row_ptr, *col;
    double *values; /* rounded to the dtype already */
} csr_host;

/* A random matrix: each row empty with probability 1/4, else up to
 * max_per_row entries at random columns (repeats allowed: CSR allows them). */
static csr_host random_csr(pe_dtype t, int64_t n_rows, int64_t n_cols, int max_per_row)
{
    csr_host m = {.n_rows = n_rows, .n_cols = n_cols};
    m.row_ptr = malloc(sizeof *m.row_ptr * (size_t)(n_rows + 1));
    m.col = malloc(sizeof *m.col * (size_t)(n_rows * max_per_row + 1));
    m.values = malloc(sizeof *m.values * (size_t)(n_rows * max_per_row + 1));
    assert_true(m.row_ptr && m.col && m.values);
    m.row_ptr[0] = 0;
    for (int64_t i = 0; i < n_rows; i++) {
        int k = next_u64() % 4 == 0 ? 0 : (int)(next_u64() % (uint64_t)(max_per_row + 1));
        for (int e = 0; e < k && n_cols > 0; e++) {
            m.col[m.nnz] = (int32_t)(next_u64() % (uint64_t)n_cols);
            double v = uniform();
            m.values[m.nnz++] = t == PE_F32 ? (double)(float)v : v;
        }
        m.row_ptr[i + 1] = (int32_t)m.nnz;
    }
    return m;
}

static void free_csr(csr_host *m) { free(m->row_ptr), free(m->col), free(m->values); }

/* The matrix as PE arrays (values in dtype t) and its handle. */
static pe_csr to_pe(const csr_host *m, pe_dtype t)
{
    int64_t n_ptr = m->n_rows + 1, nnz = m->nnz;
    pe_array rp = pe_from_host(PE_I32, 1, &n_ptr, m->row_ptr), ci = pe_from_host(PE_I32, 1, &nnz, m->col);
    pe_array v;
    if (t == PE_F32) {
        float *f = malloc(sizeof *f * (size_t)(nnz ? nnz : 1));
        for (int64_t k = 0; k < nnz; k++) f[k] = (float)m->values[k];
        v = pe_from_host(PE_F32, 1, &nnz, f);
        free(f);
    } else {
        v = pe_from_host(PE_F64, 1, &nnz, m->values);
    }
    pe_csr a = pe_csr_create(rp, ci, v, m->n_cols);
    pe_release(rp), pe_release(ci), pe_release(v); /* the matrix holds its own references */
    return a;
}

static pe_array vector_of(pe_dtype t, const double *x, int64_t n)
{
    if (t == PE_F64) return pe_from_host(PE_F64, 1, &n, x);
    float *f = malloc(sizeof *f * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) f[i] = (float)x[i];
    pe_array a = pe_from_host(PE_F32, 1, &n, f);
    free(f);
    return a;
}

/* y against the long double loop over m and x: each row within
 * (len + 2) eps sum |v x| (the sum's error bound; an f32 row is summed in
 * double and rounded once, within eps of its value). */
static void check_product(pe_dtype t, const csr_host *m, const double *x, const double *y)
{
    double eps = t == PE_F32 ? FLT_EPSILON : DBL_EPSILON;
    for (int64_t i = 0; i < m->n_rows; i++) {
        long double s = 0, mag = 0;
        for (int32_t k = m->row_ptr[i]; k < m->row_ptr[i + 1]; k++) {
            long double xv = t == PE_F32 ? (long double)(float)x[m->col[k]] : (long double)x[m->col[k]];
            s += m->values[k] * xv, mag += fabsl(m->values[k] * xv);
        }
        long double bound = (m->row_ptr[i + 1] - m->row_ptr[i] + 2) * eps * mag;
        if (fabsl(y[i] - s) > bound)
            fail_msg("%s row %lld: %.17g, the loop's %.17Lg (bound %.3Lg)", t == PE_F32 ? "f32" : "f64", (long long)i,
                     y[i], s, bound);
    }
}

static void product_case(pe_dtype t, int64_t n_rows, int64_t n_cols, int max_per_row)
{
    csr_host m = random_csr(t, n_rows, n_cols, max_per_row);
    double *x = malloc(sizeof *x * (size_t)(n_cols ? n_cols : 1));
    for (int64_t j = 0; j < n_cols; j++) x[j] = uniform();
    pe_csr a = to_pe(&m, t);
    pe_array X = vector_of(t, x, n_cols);
    pe_sync();
    pe_stats before = tu_stats();
    pe_array Y = pe_spmv(a, X);
    tu_expect_no_error();
    assert_int_equal(pe_dtype_of(Y), t);
    assert_int_equal(pe_rank(Y), 1);
    int64_t n;
    double *y = tu_read_as_f64(Y, &n);
    tu_expect_no_error();
    if (on_generated_loop() && n_rows > 0 && n_cols > 0) /* no columns: every row 0, no loop to run */
        assert_int_equal(tu_stats().generated_library_calls - before.generated_library_calls, 1);
    assert_int_equal(n, n_rows);
    check_product(t, &m, x, y);
    free(y), free(x);
    pe_release(X), pe_release(Y);
    pe_csr_destroy(a);
    tu_expect_no_error();
    free_csr(&m);
}

static void random_matrices(void **state)
{
    (void)state;
    for (int rep = 0; rep < 6; rep++) {
        product_case(PE_F32, 1 + (int64_t)(next_u64() % 60), 1 + (int64_t)(next_u64() % 50), 6);
        product_case(PE_F64, 1 + (int64_t)(next_u64() % 60), 1 + (int64_t)(next_u64() % 50), 6);
    }
    product_case(PE_F64, 0, 5, 3); /* no rows */
    product_case(PE_F32, 7, 4, 0); /* no entries: every row's sum is 0 */
    product_case(PE_F64, 5, 0, 3); /* no columns, so no entries */
    product_case(PE_F32, 20000, 3000, 12); /* long enough to run on every thread */
}

/* The 5-point Laplacian of a g x g grid (examples/laplacian_csr.h), as a csr_host. */
static csr_host laplacian(int64_t g)
{
    laplacian_csr l;
    assert_int_equal(laplacian_csr_build(g, &l), 0);
    return (csr_host){.n_rows = l.n, .n_cols = l.n, .nnz = l.nnz, .row_ptr = l.row_ptr, .col = l.col, .values = l.val};
}

/* The Laplacian of 400 x 400 (160000 rows): on every thread; integers, so
 * the product is exact in either dtype. */
static void laplacian_exact(void **state)
{
    (void)state;
    csr_host m = laplacian(400);
    double *x = malloc(sizeof *x * (size_t)m.n_cols);
    for (int64_t j = 0; j < m.n_cols; j++) x[j] = (double)(int64_t)(next_u64() % 2001) - 1000;
    for (int d = 0; d < 2; d++) {
        pe_dtype t = d ? PE_F64 : PE_F32;
        pe_csr a = to_pe(&m, t);
        pe_stats before = tu_stats();
        pe_array X = vector_of(t, x, m.n_cols), Y = pe_spmv(a, X);
        int64_t n;
        double *y = tu_read_as_f64(Y, &n);
        tu_expect_no_error();
        if (on_generated_loop()) assert_int_equal(tu_stats().generated_library_calls - before.generated_library_calls, 1);
        for (int64_t i = 0; i < m.n_rows; i++) {
            double want = 0;
            for (int32_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; k++) want += m.values[k] * x[m.col[k]];
            if (y[i] != want) fail_msg("row %lld: %.17g, want %.17g", (long long)i, y[i], want);
        }
        free(y);
        pe_release(X), pe_release(Y);
        pe_csr_destroy(a);
    }
    free(x), free_csr(&m);
}

/* x = 2 exp(u) + 1 and sqrt(|m x|) * 3: on the JIT one kernel before the
 * call and one after, one call; the values against the loop. */
static void fused_around_the_call(void **state)
{
    (void)state;
    csr_host m = random_csr(PE_F64, 300, 200, 8);
    double *u = malloc(sizeof *u * 200), *x = malloc(sizeof *x * 200);
    for (int j = 0; j < 200; j++) u[j] = uniform(), x[j] = 2 * exp(u[j]) + 1;
    pe_csr a = to_pe(&m, PE_F64);
    int64_t n_u = 200;
    pe_array U = pe_from_host(PE_F64, 1, &n_u, u);
    pe_sync(); /* the operands stored: only the work below is counted */
    pe_stats before = tu_stats();
    pe_array E = pe_exp(U), T = pe_mul(E, 2.0), X = pe_add(T, 1.0), Y = pe_spmv(a, X);
    pe_array A = pe_abs(Y), S = pe_sqrt(A), R = pe_mul(S, 3.0);
    pe_release(E), pe_release(T), pe_release(X), pe_release(Y), pe_release(A), pe_release(S);
    int64_t n;
    double *got = tu_read_as_f64(R, &n);
    tu_expect_no_error();
    if (!tu_on_interpreter()) {
        pe_stats after = tu_stats();
        assert_int_equal(after.library_calls - before.library_calls, 1);
        assert_int_equal(after.kernels_launched - before.kernels_launched, 2);
    }
    double *y = malloc(sizeof *y * 300);
    for (int64_t i = 0; i < 300; i++) {
        long double s = 0;
        for (int32_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; k++) s += m.values[k] * x[m.col[k]];
        y[i] = (double)s;
        double want = sqrt(fabs(y[i])) * 3;
        assert_true(fabs(got[i] - want) <= 1e-13 * (1 + want));
    }
    free(got), free(y), free(u), free(x);
    pe_release(U), pe_release(R);
    pe_csr_destroy(a);
    free_csr(&m);
}

/* Power iterations y = m y / ||m y||: the same batch each pass, so every
 * pass after the first comes from the trace cache; the values follow the
 * C loop's. */
static void loop_replays_from_the_trace_cache(void **state)
{
    (void)state;
    csr_host m = laplacian(12);
    pe_csr a = to_pe(&m, PE_F64);
    double *x = malloc(sizeof *x * (size_t)m.n_cols), *nx = malloc(sizeof *nx * (size_t)m.n_cols);
    for (int64_t j = 0; j < m.n_cols; j++) x[j] = 1 + uniform() * 0.5;
    pe_array X = pe_from_host(PE_F64, 1, &m.n_cols, x);
    pe_stats before = tu_stats();
    for (int it = 0; it < 8; it++) {
        pe_array Y = pe_spmv(a, X), N = pe_norm2(Y), Z = pe_div(Y, N);
        double norm;
        assert_int_equal(pe_read(N, &norm, sizeof norm), PE_OK);
        pe_release(X), pe_release(Y), pe_release(N);
        X = Z;
        long double s2 = 0;
        for (int64_t i = 0; i < m.n_rows; i++) {
            long double s = 0;
            for (int32_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; k++) s += m.values[k] * x[m.col[k]];
            nx[i] = (double)s, s2 += s * s;
        }
        assert_true(fabs(norm - (double)sqrtl(s2)) <= 1e-12 * norm);
        for (int64_t i = 0; i < m.n_rows; i++) x[i] = nx[i] / (double)sqrtl(s2);
    }
    int64_t n;
    double *got = tu_read_as_f64(X, &n);
    for (int64_t i = 0; i < n; i++) assert_true(fabs(got[i] - x[i]) <= 1e-12);
    if (!tu_on_interpreter()) assert_true(tu_stats().trace_hits - before.trace_hits >= 6);
    tu_expect_no_error();
    free(got), free(x), free(nx);
    pe_release(X);
    pe_csr_destroy(a);
    free_csr(&m);
}

/* A matrix made in a scope outlives it: the scope does not release its arrays. */
static void matrix_outlives_its_scope(void **state)
{
    (void)state;
    int32_t rp[3] = {0, 1, 3}, ci[3] = {1, 0, 1};
    double v[3] = {2, 3, 4}, x[2] = {10, 100}, y[2];
    int64_t n3 = 3, n2 = 2;
    pe_scope sc = pe_scope_begin();
    pe_csr a = pe_csr_create(pe_from_host(PE_I32, 1, &n3, rp), pe_from_host(PE_I32, 1, &n3, ci),
                             pe_from_host(PE_F64, 1, &n3, v), 2);
    pe_scope_end(sc);
    tu_expect_no_error();
    pe_array X = pe_from_host(PE_F64, 1, &n2, x), Y = pe_spmv(a, X);
    assert_int_equal(pe_read(Y, y, sizeof y), PE_OK);
    assert_true(y[0] == 200 && y[1] == 430);
    tu_expect_no_error();
    pe_release(X), pe_release(Y);
    pe_csr_destroy(a);
    assert_int_equal(tu_live_arrays(), 0); /* destroyed: its arrays released */
}

static void bad_arguments(void **state)
{
    (void)state;
    int64_t n3 = 3, n4 = 4, s22[2] = {2, 2};
    pe_array rp = pe_fill(PE_I32, 1, &n3, 0), ci = pe_fill(PE_I32, 1, &n3, 0), v = pe_fill(PE_F64, 1, &n3, 1);
    pe_array ci4 = pe_fill(PE_I32, 1, &n4, 0), rpf = pe_fill(PE_F32, 1, &n3, 0), vi = pe_fill(PE_I32, 1, &n3, 1);
    pe_array m22 = pe_fill(PE_I32, 2, s22, 0), empty = pe_fill(PE_I32, 1, (int64_t[]){0}, 0);
    const struct {
        pe_array rp, ci, v;
        int64_t n_cols;
        pe_status code;
    } creations[] = {
        {rpf, ci, v, 3, PE_E_TYPE},   /* f32 offsets */
        {rp, ci, vi, 3, PE_E_TYPE},   /* i32 values */
        {rp, ci4, v, 3, PE_E_SHAPE},  /* 4 columns for 3 values */
        {m22, ci, v, 3, PE_E_SHAPE},  /* 2-d offsets */
        {empty, ci, v, 3, PE_E_SHAPE}, /* no offsets at all */
        {rp, ci, v, -1, PE_E_SHAPE},  /* negative column count */
    };
    for (size_t c = 0; c < sizeof creations / sizeof creations[0]; c++) {
        int line = __LINE__ + 1;
        pe_csr bad = pe_csr_create(creations[c].rp, creations[c].ci, creations[c].v, creations[c].n_cols);
        tu_expect_error(creations[c].code, line);
        assert_true(bad.h == 0);
    }
    pe_csr a = pe_csr_create(rp, ci, v, 3);
    tu_expect_no_error();
    pe_array x2 = pe_fill(PE_F64, 1, (int64_t[]){2}, 1), xf = pe_fill(PE_F32, 1, &n3, 1), x3 = pe_fill(PE_F64, 1, &n3, 1);
    int line = __LINE__ + 1;
    pe_array y1 = pe_spmv(a, x2);
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    pe_array y2 = pe_spmv(a, xf);
    tu_expect_error(PE_E_TYPE, line);
    line = __LINE__ + 1;
    pe_array y3 = pe_spmv((pe_csr){0}, x3);
    tu_expect_error(PE_E_HANDLE, line);
    int destroyed_at = __LINE__ + 1;
    pe_csr_destroy(a);
    line = __LINE__ + 1;
    pe_array y4 = pe_spmv(a, x3);
    char where[64];
    snprintf(where, sizeof where, "%s:%d)", tu_basename(__FILE__), destroyed_at);
    assert_non_null(strstr(tu_errors.message, "destroyed at"));
    assert_non_null(strstr(tu_errors.message, where));
    tu_expect_error(PE_E_HANDLE, line);
    line = __LINE__ + 1;
    pe_csr_destroy(a);
    tu_expect_error(PE_E_HANDLE, line);
    double out[3];
    assert_int_not_equal(pe_read(y1, out, sizeof out), PE_OK);
    assert_int_not_equal(pe_read(y3, out, sizeof out), PE_OK);
    tu_errors_clear();
    pe_release(rp), pe_release(ci), pe_release(v), pe_release(ci4), pe_release(rpf), pe_release(vi), pe_release(m22);
    pe_release(empty), pe_release(x2), pe_release(xf), pe_release(x3), pe_release(y1), pe_release(y2), pe_release(y3);
    pe_release(y4);
    tu_errors_clear();
}

/* A structure whose indices are wrong: the product is invalid, PE_E_ARG at
 * pe_spmv's line when read, the fault named; a consumer of it is invalid
 * without an error of its own. */
static void bad_structure(void **state)
{
    (void)state;
    static const struct {
        int32_t rp[4], ci[4];
        const char *says;
    } cases[] = {
        {{0, 1, 3, 4}, {0, 3, 1, 2}, "col_idx[1] (row 1) is 3"},     /* one past the last column */
        {{0, 1, 3, 4}, {0, 1, -1, 2}, "col_idx[2] (row 1) is -1"},   /* negative */
        {{0, 3, 1, 4}, {0, 1, 2, 2}, "row_ptr[2] is 1 after"},       /* offsets going down */
        {{0, 1, 2, 5}, {0, 1, 2, 2}, "row_ptr[3] is 5 after"},       /* past nnz */
        {{1, 1, 2, 4}, {0, 1, 2, 2}, "row_ptr[0] is 1"},             /* not starting at 0 */
        {{0, 1, 2, 3}, {0, 1, 2, 2}, "row_ptr[3] is 3: the last offset is nnz = 4"},
        {{0, -2, 2, 4}, {0, 1, 2, 2}, "row_ptr[1] is -2 after"},     /* a negative offset */
    };
    int64_t n4 = 4, n3 = 3;
    double x[3] = {1, 2, 3};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        pe_array rp = pe_from_host(PE_I32, 1, &n4, cases[c].rp), ci = pe_from_host(PE_I32, 1, &n4, cases[c].ci);
        pe_array v = pe_fill(PE_F64, 1, &n4, 1.5), X = pe_from_host(PE_F64, 1, &n3, x);
        pe_csr a = pe_csr_create(rp, ci, v, 3);
        tu_expect_no_error();
        pe_sync();
        pe_stats before = tu_stats();
        int line = __LINE__ + 1;
        pe_array Y = pe_spmv(a, X), Z = pe_add(Y, 1.0);
        double out[3];
        assert_int_equal(pe_read(Y, out, sizeof out), PE_E_ARG);
        bool ends_right = cases[c].rp[0] == 0 && cases[c].rp[3] == 4; /* else refused before the loop runs */
        if (on_generated_loop() && ends_right)
            assert_int_equal(tu_stats().generated_library_calls - before.generated_library_calls, 1);
        if (!strstr(tu_errors.message, cases[c].says))
            fail_msg("case %zu: '%s' does not say '%s'", c, tu_errors.message, cases[c].says);
        tu_expect_error(PE_E_ARG, line);
        assert_int_not_equal(pe_read(Z, out, sizeof out), PE_OK);
        tu_errors_clear();
        pe_release(rp), pe_release(ci), pe_release(v), pe_release(X), pe_release(Y), pe_release(Z);
        pe_csr_destroy(a);
    }
}

/* The generated loop's sums are those of the order it documents: each row
 * in column order, in double (an f32 product exact there), rounded once;
 * bit for bit, on rows long enough to make the order matter. */
static void sums_bitwise_in_column_order(void **state)
{
    (void)state;
    if (!on_generated_loop()) skip(); /* the interpreter sums in long double, cuSPARSE in its own order */
    for (int d = 0; d < 2; d++) {
        pe_dtype t = d ? PE_F64 : PE_F32;
        csr_host m = random_csr(t, 3000, 700, 40);
        double *x = malloc(sizeof *x * 700);
        for (int j = 0; j < 700; j++) x[j] = t == PE_F32 ? (double)(float)uniform() : uniform();
        pe_csr a = to_pe(&m, t);
        pe_array X = vector_of(t, x, 700), Y = pe_spmv(a, X);
        int64_t n;
        double *y = tu_read_as_f64(Y, &n);
        tu_expect_no_error();
        for (int64_t i = 0; i < m.n_rows; i++) {
            double s = 0;
            for (int32_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; k++) {
                volatile double p = m.values[k] * x[m.col[k]]; /* rounded on its own: no FMA */
                s += p;
            }
            double want = t == PE_F32 ? (double)(float)s : s;
            if (memcmp(&y[i], &want, sizeof want) != 0)
                fail_msg("%s row %lld: %.17g, the column-order sum %.17g", d ? "f64" : "f32", (long long)i, y[i], want);
        }
        free(y), free(x);
        pe_release(X), pe_release(Y);
        pe_csr_destroy(a);
        free_csr(&m);
    }
}

static int start_in(const char *dir)
{
    pe_config cfg = {0};
    cfg.cache_dir = dir;
    cfg.log_level = PE_LOG_ERROR + 1; /* errors only: the corrupt file's warning below is expected */
    return pe_init(&cfg);
}

/* The path of the loops' file in the cache directory, or "" if none. */
static void loops_file(const char *dir, char *path, size_t size)
{
    path[0] = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, "spmv-rows-", 10) == 0) snprintf(path, size, "%s/%s", dir, e->d_name);
    closedir(d);
}

/* One run's products of the 6 x 6 grid's Laplacian in both dtypes (exact),
 * with what generating their loops cost: compilations and disk loads. */
static void products_in(const char *dir, uint64_t *compiled, uint64_t *loaded)
{
    tu_errors_clear();
    pe_push_error_handler(tu_record_error, NULL);
    assert_int_equal(start_in(dir), PE_OK);
    csr_host m = laplacian(6);
    double x[36];
    for (int j = 0; j < 36; j++) x[j] = j % 7 - 3;
    pe_csr a[2];
    pe_array X[2];
    for (int d = 0; d < 2; d++) a[d] = to_pe(&m, d ? PE_F64 : PE_F32), X[d] = vector_of(d ? PE_F64 : PE_F32, x, 36);
    pe_sync(); /* the structures' concatenations compiled and run: only the products are counted */
    pe_stats before = tu_stats();
    for (int d = 0; d < 2; d++) {
        pe_array Y = pe_spmv(a[d], X[d]);
        int64_t n;
        double *y = tu_read_as_f64(Y, &n);
        tu_expect_no_error();
        for (int64_t i = 0; i < 36; i++) {
            double want = 0;
            for (int32_t k = m.row_ptr[i]; k < m.row_ptr[i + 1]; k++) want += m.values[k] * x[m.col[k]];
            assert_true(y[i] == want);
        }
        free(y);
        pe_release(X[d]), pe_release(Y);
        pe_csr_destroy(a[d]);
    }
    pe_stats after = tu_stats();
    assert_int_equal(after.generated_library_calls - before.generated_library_calls, 2);
    *compiled = after.kernels_compiled - before.kernels_compiled;
    *loaded = after.disk_cache_hits - before.disk_cache_hits;
    free_csr(&m);
    pe_shutdown();
    pe_pop_error_handler();
}

/* The loops are compiled once per run for both dtypes and filed in the disk
 * cache; the next run loads them; a corrupt file is removed and the loops
 * compiled again (the values never change). */
static void loops_compiled_once_then_from_disk(void **state)
{
    (void)state;
    if (!on_generated_loop()) skip();
    pe_shutdown(); /* runtimes of this test's own, in a cache directory of its own */
    pe_pop_error_handler();
    char dir[] = "/tmp/pe-spmv-cache-XXXXXX", path[600];
    assert_non_null(mkdtemp(dir));
    uint64_t compiled, loaded;
    products_in(dir, &compiled, &loaded);
    assert_true(compiled == 1 && loaded == 0);
    loops_file(dir, path, sizeof path);
    assert_true(path[0] != 0);
    products_in(dir, &compiled, &loaded);
    assert_true(compiled == 0 && loaded == 1);
    FILE *f = fopen(path, "r+b"); /* a byte changed: the seal no longer fits */
    assert_non_null(f);
    fseek(f, 100, SEEK_SET);
    int byte = fgetc(f);
    fseek(f, 100, SEEK_SET);
    fputc(byte ^ 0x5a, f);
    fclose(f);
    products_in(dir, &compiled, &loaded);
    assert_true(compiled == 1 && loaded == 0);
    products_in(dir, &compiled, &loaded); /* filed again */
    assert_true(compiled == 0 && loaded == 1);
    tu_remove_dir(dir);
    tu_setup(state); /* the runtime tu_teardown ends */
}

/* Without a CPU JIT (no writable TMPDIR: the toolchain cannot run) the
 * interpreter's reference computes spmv: the same exact values, no
 * generated call, the bad structure's error the same. */
static void without_the_jit_the_reference_computes(void **state)
{
    (void)state;
    if (!on_generated_loop()) skip();
    pe_shutdown();
    pe_pop_error_handler();
    const char *tmp = getenv("TMPDIR");
    char saved[4096] = "";
    if (tmp) snprintf(saved, sizeof saved, "%s", tmp);
    setenv("TMPDIR", "/nonexistent-pe-spmv-test", 1);
    tu_setup(state);
    if (tmp) setenv("TMPDIR", saved, 1);
    else unsetenv("TMPDIR");
    int32_t rp[4] = {0, 2, 2, 4}, ci[4] = {0, 2, 1, 2}, bad_ci[4] = {0, 2, 3, 2};
    double v[4] = {1, 2, 3, 4}, x[3] = {10, 100, 1000}, y[3];
    int64_t n4 = 4, n3 = 3;
    pe_array X = pe_from_host(PE_F64, 1, &n3, x);
    for (int bad = 0; bad < 2; bad++) {
        pe_csr a = pe_csr_create(pe_from_host(PE_I32, 1, &n4, rp), pe_from_host(PE_I32, 1, &n4, bad ? bad_ci : ci),
                                 pe_from_host(PE_F64, 1, &n4, v), 3);
        pe_stats before = tu_stats();
        int line = __LINE__ + 1;
        pe_array Y = pe_spmv(a, X);
        if (bad) {
            assert_int_equal(pe_read(Y, y, sizeof y), PE_E_ARG);
            assert_non_null(strstr(tu_errors.message, "col_idx[2] (row 2) is 3"));
            tu_expect_error(PE_E_ARG, line);
        } else {
            assert_int_equal(pe_read(Y, y, sizeof y), PE_OK);
            assert_true(y[0] == 2010 && y[1] == 0 && y[2] == 4300);
            tu_expect_no_error();
        }
        assert_int_equal(tu_stats().generated_library_calls, before.generated_library_calls);
        pe_release(Y);
        pe_csr_destroy(a);
    }
    pe_release(X);
}

/* Inside a code reuse section the matrix's arrays are operands made
 * outside it: PE_E_MACRO at the line (pe.h says so). */
static void not_in_a_macro_yet(void **state)
{
    (void)state;
    int32_t rp[3] = {0, 1, 2}, ci[2] = {1, 0};
    double v[2] = {2, 3}, x[2] = {1, 10};
    int64_t n3 = 3, n2 = 2;
    pe_array RP = pe_from_host(PE_I32, 1, &n3, rp), CI = pe_from_host(PE_I32, 1, &n2, ci), V = pe_from_host(PE_F64, 1, &n2, v);
    pe_csr a = pe_csr_create(RP, CI, V, 2);
    pe_array X = pe_from_host(PE_F64, 1, &n2, x), ins[1] = {X}, outs[1] = {{0}};
    int line = __LINE__ + 1;
    PE_MACRO(spmv_section, ins, 1, outs, 1, NULL, 0) { outs[0] = pe_spmv(a, ins[0]); }
    assert_int_equal(tu_errors.code, PE_E_MACRO);
    tu_expect_error(PE_E_MACRO, line);
    pe_release(RP), pe_release(CI), pe_release(V), pe_release(X);
    if (outs[0].h) pe_release(outs[0]);
    pe_csr_destroy(a);
    tu_errors_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(random_matrices, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(laplacian_exact, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(fused_around_the_call, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(loop_replays_from_the_trace_cache, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(matrix_outlives_its_scope, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(bad_arguments, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(bad_structure, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(not_in_a_macro_yet, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(sums_bitwise_in_column_order, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(loops_compiled_once_then_from_disk, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(without_the_jit_the_reference_computes, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
