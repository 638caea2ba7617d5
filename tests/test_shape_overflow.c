/* test_shape_overflow.c — element counts that do not fit (issue 22, item 3):
 * every request whose shape, given or derived (broadcast, spread, concat,
 * reshape, reductions over a broadcast, creation), has a count whose
 * product overflows int64 — or whose byte size would — is refused with
 * PE_E_SHAPE naming the caller's line, and its result is invalid; no
 * wrapped count is ever accepted.  Table-driven: one row per entry point.
 * Rows that fit are checked against plain C loops, so the checks refuse
 * only what they must. */
#include "test_util.h"

#define BIG62 ((int64_t)1 << 62)

/* One request that must be refused; returns its result and sets *line to
 * the line of the call. */
typedef pe_array (*overflow_case)(pe_array *keep, int *line);

static pe_array reshape_wraps(pe_array *keep, int *line)
{
    float h[12] = {0};
    pe_array x = pe_f32_1d(h, 12);
    *keep = x;
    int64_t shape[2] = {BIG62 + 3, 4}; /* 12 once wrapped: x's count */
    *line = __LINE__ + 1;
    return pe_reshape(x, 2, shape);
}

static pe_array reshape_inferred_wraps(pe_array *keep, int *line)
{
    float h[12] = {0};
    pe_array x = pe_f32_1d(h, 12);
    *keep = x;
    int64_t shape[3] = {BIG62, 4, -1};
    *line = __LINE__ + 1;
    return pe_reshape(x, 3, shape);
}

/* fill(a) + index(b) (wrap: true) or fill(a) * fill(b), broadcast. */
static pe_array broadcast_of(const int64_t *a, const int64_t *b, bool wrap, pe_array *keep, int *line)
{
    pe_array f = pe_fill(PE_F64, 2, a, 1.0);
    pe_array g = wrap ? pe_index(PE_F64, 2, b, 1) : pe_fill(PE_F64, 2, b, 2.0);
    *keep = f;
    *line = __LINE__ + 1;
    pe_array r = wrap ? pe_add(f, g) : pe_mul(f, g);
    pe_release(g);
    return r;
}

static pe_array broadcast_wraps(pe_array *keep, int *line)
{
    int64_t a[2] = {16777232, 1}, b[2] = {1, 1099510579201}; /* (2^24 + 16) * (2^40 - 2^20 + 1) wraps to 16 */
    return broadcast_of(a, b, true, keep, line);
}

static pe_array broadcast_past_limit(pe_array *keep, int *line)
{
    int64_t a[2] = {(int64_t)1 << 31, 1}, b[2] = {1, (int64_t)1 << 31}; /* 2^62 elements: no overflow, too many bytes */
    return broadcast_of(a, b, false, keep, line);
}

static pe_array spread_wraps(pe_array *keep, int *line)
{
    float h[4] = {1, 2, 3, 4};
    pe_array v = pe_f32_1d(h, 4);
    *keep = v;
    *line = __LINE__ + 1;
    return pe_spread(v, 0, BIG62 + 4); /* (2^62 + 4) * 4 wraps to 16 */
}

static pe_array spread_of_constant_wraps(pe_array *keep, int *line)
{
    int64_t shape[1] = {8};
    pe_array c = pe_fill(PE_F32, 1, shape, 3.0); /* a constant's view is folded: another path */
    *keep = c;
    *line = __LINE__ + 1;
    return pe_spread(c, 1, BIG62);
}

static pe_array concat_wraps(pe_array *keep, int *line)
{
    int64_t a[2] = {(int64_t)1 << 55, 8}, b[2] = {(int64_t)1 << 55, 8}; /* 2^58 elements each: they fit */
    pe_array f = pe_fill(PE_F32, 2, a, 1.0), g = pe_fill(PE_F32, 2, b, 2.0);
    *keep = f;
    *line = __LINE__ + 1;
    pe_array r = pe_concat(f, g, 1); /* [2^55, 16]: 2^59 elements, past the limit */
    pe_release(g);
    return r;
}

static pe_array fill_wraps(pe_array *keep, int *line)
{
    *keep = (pe_array){0};
    int64_t shape[3] = {BIG62, 2, 2};
    *line = __LINE__ + 1;
    return pe_fill(PE_F32, 3, shape, 1.0);
}

static pe_array index_wraps(pe_array *keep, int *line)
{
    *keep = (pe_array){0};
    int64_t shape[4] = {65536, 65536, 65536, 65537};
    *line = __LINE__ + 1;
    return pe_index(PE_I32, 4, shape, 0);
}

static pe_array identity_wraps(pe_array *keep, int *line)
{
    *keep = (pe_array){0};
    *line = __LINE__ + 1;
    return pe_identity(PE_F64, (int64_t)1 << 32); /* n * n = 2^64 */
}

static pe_array from_host_wraps(pe_array *keep, int *line)
{
    *keep = (pe_array){0};
    static float h[16];
    int64_t shape[2] = {BIG62 + 2, 4}; /* 8 once wrapped; 8 floats of data would pass */
    *line = __LINE__ + 1;
    return pe_from_host(PE_F32, 2, shape, h);
}

static pe_array bytes_past_size(pe_array *keep, int *line)
{
    *keep = (pe_array){0};
    static double h[4];
    int64_t shape[1] = {BIG62 / 4}; /* fits int64 as a count, not as bytes of f64 (2^63) */
    *line = __LINE__ + 1;
    return pe_from_host(PE_F64, 1, shape, h);
}

static pe_array dot_broadcast_wraps(pe_array *keep, int *line)
{
    int64_t a[2] = {16777232, 1}, b[2] = {1, 1099510579201};
    pe_array f = pe_fill(PE_F32, 2, a, 1.0), g = pe_fill(PE_F32, 2, b, 1.0);
    *keep = f;
    *line = __LINE__ + 1;
    pe_array r = pe_dot(f, g);
    pe_release(g);
    return r;
}

static pe_array periodic_wraps(pe_array *keep, int *line)
{
    float h[2] = {1, 2};
    pe_array v = pe_f32_1d(h, 2);
    *keep = v;
    int64_t shape[2] = {BIG62 + 1, 4};
    *line = __LINE__ + 1;
    return pe_periodic(v, 2, shape);
}

static const struct {
    const char *name;
    overflow_case run;
} cases[] = {
    {"reshape {2^62 + 3, 4}", reshape_wraps},
    {"reshape {2^62, 4, -1}", reshape_inferred_wraps},
    {"add: fill {16777232, 1} + index {1, 1099510579201}", broadcast_wraps},
    {"mul: broadcast to 2^62 f64 elements", broadcast_past_limit},
    {"spread n = 2^62 + 4", spread_wraps},
    {"spread of a constant, n = 2^62", spread_of_constant_wraps},
    {"concat to [2^55, 16]", concat_wraps},
    {"fill {2^62, 2, 2}", fill_wraps},
    {"index {2^16, 2^16, 2^16, 2^16 + 1}", index_wraps},
    {"identity 2^32", identity_wraps},
    {"from_host {2^62 + 2, 4}", from_host_wraps},
    {"from_host f64 {2^60}", bytes_past_size},
    {"dot over a wrapping broadcast", dot_broadcast_wraps},
    {"periodic {2^62 + 1, 4}", periodic_wraps},
};

static void test_overflowing_counts_are_refused(void **state)
{
    (void)state;
    int failed = 0; /* every row is run, and every failing one named */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tu_errors_clear();
        pe_array keep;
        int line = 0;
        pe_array r = cases[c].run(&keep, &line);
        char where[64];
        snprintf(where, sizeof where, "test_shape_overflow.c:%d:", line);
        bool refused = tu_errors.count == 1 && tu_errors.code == PE_E_SHAPE && strstr(tu_errors.message, where);
        if (!refused) {
            print_error("%s: expected one PE_E_SHAPE at %s, got %d errors, last %d: %s\n", cases[c].name, where,
                        tu_errors.count, (int)tu_errors.code, tu_errors.message);
            failed++;
        }
        tu_errors_clear();
        /* the result is an invalid array (its read fails, nothing is computed) or no array at all;
         * an accepted request's result is not read: its count wrapped */
        if (r.h && refused) {
            float v[16];
            assert_int_equal(pe_read(r, v, sizeof v), PE_E_INVALID);
        }
        if (r.h) pe_release(r);
        if (keep.h) pe_release(keep);
        tu_errors_clear();
    }
    assert_int_equal(failed, 0);
}

/* Shapes next to the refused ones that fit: the same entry points give the
 * values of plain C loops. */
static void test_counts_that_fit_still_work(void **state)
{
    (void)state;
    float h[12];
    for (int i = 0; i < 12; i++) h[i] = (float)i * 0.5f - 2.0f;
    pe_array x = pe_f32_1d(h, 12);
    int64_t to[3] = {2, -1, 3};
    pe_array r = pe_max_axis(pe_reshape(x, 3, to), 1); /* [2, 2, 3] -> max over axis 1 -> [2, 3] */
    float got[6];
    assert_int_equal(pe_read(r, got, sizeof got), PE_OK);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++) {
            float want = fmaxf(h[i * 6 + k], h[i * 6 + 3 + k]);
            assert_true(got[i * 3 + k] == want);
        }
    /* broadcast {5, 1} + {1, 7} -> {5, 7}: fill + index */
    int64_t a[2] = {5, 1}, b[2] = {1, 7};
    pe_array s = pe_add(pe_fill(PE_F32, 2, a, 1.5), pe_index(PE_F32, 2, b, 1));
    float sv[35];
    assert_int_equal(pe_read(s, sv, sizeof sv), PE_OK);
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 7; k++) assert_true(sv[i * 7 + k] == 1.5f + (float)k);
    /* spread of a 4-vector to [3, 4], concat along axis 0 */
    float v4[4] = {1, 2, 3, 4};
    pe_array v = pe_f32_1d(v4, 4);
    pe_array sp = pe_spread(v, 0, 3);
    pe_array cc = pe_concat(sp, pe_spread(v, 0, 1), 0);
    float cv[16];
    assert_int_equal(pe_read(cc, cv, sizeof cv), PE_OK);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) assert_true(cv[i * 4 + k] == v4[k]);
    tu_expect_no_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_overflowing_counts_are_refused, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_counts_that_fit_still_work, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
