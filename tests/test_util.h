/* test_util.h — helpers shared by the cmocka tests: a runtime per test, an
 * error handler that records errors instead of aborting, and value checks. */
#ifndef PE_TEST_UTIL_H
#define PE_TEST_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <pe.h>

/* The errors seen since the last tu_errors_clear(). */
typedef struct {
    int count;
    pe_status code;         /* of the last error */
    char message[1024];     /* of the last error */
    char file[256];
    int line;
} tu_errors_t;
static tu_errors_t tu_errors;

__attribute__((unused)) static int tu_record_error(const pe_error *e, void *user)
{
    (void)user;
    tu_errors.count++;
    tu_errors.code = e->code;
    snprintf(tu_errors.message, sizeof tu_errors.message, "%s", e->message ? e->message : "");
    snprintf(tu_errors.file, sizeof tu_errors.file, "%s", e->file ? e->file : "");
    tu_errors.line = e->line;
    return 1; /* handled: continue with an invalid result */
}

static inline void tu_errors_clear(void) { memset(&tu_errors, 0, sizeof tu_errors); }

/* Removes a directory the test made (mkdtemp) with all it holds. */
static inline void tu_remove_dir(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Whether the test runs on the reference interpreter (PE_EXECUTOR=interp):
 * it stores every value and launches no kernel, so counts differ there. */
__attribute__((unused)) static bool tu_on_interpreter(void)
{
    const char *e = getenv("PE_EXECUTOR");
    return e && strcmp(e, "interp") == 0;
}

/* The next value in [-1, 1) of a xorshift64 stream (each test file keeps
 * its own state, so its data stay what its seed makes them). */
static inline double tu_uniform(uint64_t *state)
{
    *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
    return (double)(*state >> 11) / 9007199254740992.0 * 2 - 1;
}

/* cmocka group/test fixtures: a fresh runtime per test, errors recorded. */
__attribute__((unused)) static int tu_setup(void **state)
{
    (void)state;
    tu_errors_clear();
    pe_push_error_handler(tu_record_error, NULL);
    return pe_init(NULL) == PE_OK ? 0 : -1;
}

/* A kernel the compiler rejected is computed by the interpreter, with the
 * right values: a code generator's bug would go unseen by every value
 * check.  So a test's runtime must end with none, unless the test says it
 * makes some on purpose. */
__attribute__((unused)) static bool tu_compile_failures_expected;

__attribute__((unused)) static int tu_teardown(void **state)
{
    (void)state;
    pe_stats st;
    pe_get_stats(&st);
    pe_shutdown();
    pe_pop_error_handler();
    if (st.compile_failures && !tu_compile_failures_expected)
        fail_msg("%llu kernel(s) failed to compile (the interpreter hid it): see the warnings",
                 (unsigned long long)st.compile_failures);
    /* Likewise a trace-cache replay the check refused: its batch was generated again, so every
     * value is right, but the key that matched did not describe the batch (issue 36) */
    if (st.trace_misfits)
        fail_msg("%llu trace-cache hit(s) did not fit their batch: the trace key misses a fact (see the warnings)",
                 (unsigned long long)st.trace_misfits);
    return 0;
}

/* Asserts that exactly one error with `code` was raised since the last clear,
 * whose message names this test file and `line`; then clears. */
#define tu_expect_error(code_, line_)                                                     \
    do {                                                                                  \
        char tu_where_[64];                                                               \
        snprintf(tu_where_, sizeof tu_where_, "%s:%d:", tu_basename(__FILE__), (line_));  \
        if (tu_errors.count != 1 || tu_errors.code != (code_) ||                          \
            strstr(tu_errors.message, tu_where_) == NULL)                                 \
            fail_msg("expected one error %d at %s, got %d errors, last %d: %s",           \
                     (int)(code_), tu_where_, tu_errors.count, (int)tu_errors.code,       \
                     tu_errors.message);                                                  \
        tu_errors_clear();                                                                \
    } while (0)

#define tu_expect_no_error()                                                              \
    do {                                                                                  \
        if (tu_errors.count != 0) fail_msg("unexpected error: %s", tu_errors.message);    \
    } while (0)

static inline const char *tu_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* NumPy broadcasting compatibility of a and b, from the queries (which never wait). */
static inline bool tu_broadcastable(pe_array a, pe_array b)
{
    int ra = pe_rank(a), rb = pe_rank(b);
    for (int k = 1; k <= ra && k <= rb; k++) {
        int64_t x = pe_dim(a, ra - k), y = pe_dim(b, rb - k);
        if (x != y && x != 1 && y != 1) return false;
    }
    return true;
}

/* The runtime's counters now; the arrays alive once every batch has run. */
static inline pe_stats tu_stats(void)
{
    pe_stats st;
    pe_get_stats(&st);
    return st;
}

static inline int64_t tu_live_arrays(void)
{
    pe_sync();
    return tu_stats().live_arrays;
}

/* Reads a whole array as doubles (any dtype).  The caller frees. */
static inline double *tu_read_as_f64(pe_array a, int64_t *n_out)
{
    int64_t n = pe_numel(a);
    pe_dtype t = pe_dtype_of(a);
    size_t es = t == PE_F64 ? 8 : t == PE_BOOL ? 1 : 4;
    void *raw = malloc((size_t)(n > 0 ? n : 1) * es);
    double *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    assert_non_null(raw);
    assert_non_null(out);
    assert_int_equal(pe_read(a, raw, (size_t)n * es), PE_OK);
    for (int64_t i = 0; i < n; i++) {
        switch (t) {
        case PE_F32: out[i] = ((float *)raw)[i]; break;
        case PE_F64: out[i] = ((double *)raw)[i]; break;
        case PE_I32: out[i] = ((int32_t *)raw)[i]; break;
        case PE_BOOL: out[i] = ((uint8_t *)raw)[i]; break;
        default: fail_msg("unexpected dtype");
        }
    }
    free(raw);
    if (n_out) *n_out = n;
    return out;
}

/* Equal as values: both NaN, or the same value with the same sign of zero. */
static inline int tu_same_value(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (a == 0 && b == 0) return signbit(a) == signbit(b);
    return a == b;
}

/* Distance in units in the last place of float (f32) or double. */
static inline double tu_ulps_f32(float got, float want)
{
    if (isnan(got) || isnan(want)) return (isnan(got) && isnan(want)) ? 0 : INFINITY;
    if (got == want) return 0;
    if (isinf(got) || isinf(want)) return INFINITY;
    int32_t ig, iw;
    memcpy(&ig, &got, 4);
    memcpy(&iw, &want, 4);
    if (ig < 0) ig = INT32_MIN - ig;
    if (iw < 0) iw = INT32_MIN - iw;
    return fabs((double)ig - (double)iw);
}

static inline double tu_ulps_f64(double got, double want)
{
    if (isnan(got) || isnan(want)) return (isnan(got) && isnan(want)) ? 0 : INFINITY;
    if (got == want) return 0;
    if (isinf(got) || isinf(want)) return INFINITY;
    int64_t ig, iw;
    memcpy(&ig, &got, 8);
    memcpy(&iw, &want, 8);
    if (ig < 0) ig = INT64_MIN - ig;
    if (iw < 0) iw = INT64_MIN - iw;
    return fabs((double)ig - (double)iw);
}

/* Distance of got from want in units in the last place of type t (f32, f64)
 * at want (subnormal spacing below the normal range): 0 when both are the
 * same NaN-or-value, infinite when only one is NaN or an infinity differs. */
static inline double tu_ulps_at(double got, double want, pe_dtype t)
{
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0 : INFINITY;
    if (isinf(want) || isinf(got)) return got == want ? 0 : INFINITY;
    double w = fabs(want);
    int e;
    frexp(w > 0 ? w : (t == PE_F32 ? 0x1p-126 : 0x1p-1022), &e);
    int mant = t == PE_F32 ? 24 : 53, emin = t == PE_F32 ? -125 : -1021;
    return fabs(got - want) / ldexp(1.0, (e < emin ? emin : e) - mant);
}

#endif
