/* test_errors.c — the error paths of the API.  Each check asserts the code
 * and that the diagnostic names this file and the line of the offending call;
 * invalid arrays propagate quietly and raise PE_E_INVALID once when read; the
 * handler stack; the default handler (prints "pe: ..." and aborts, checked in
 * a forked child); calls before pe_init.  Nothing may crash. */
#include "test_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs `call` on one line and expects exactly one error `code` naming it. */
#define EXPECT_ERR(code, call)                                                   \
    do {                                                                         \
        int line_ = __LINE__; call;                                              \
        tu_expect_error(code, line_);                                            \
    } while (0)

static pe_stats stats(void)
{
    pe_stats st;
    pe_get_stats(&st);
    return st;
}

/* Does `msg` contain "test_errors.c:LINE" with LINE not followed by a digit? */
static int names_line(const char *msg, int line)
{
    char where[64];
    int n = snprintf(where, sizeof where, "test_errors.c:%d", line);
    for (const char *p = strstr(msg, where); p; p = strstr(p + 1, where))
        if (p[n] < '0' || p[n] > '9') return 1;
    return 0;
}

static void assert_no_live_arrays(void)
{
    pe_sync();
    pe_stats st = stats();
    assert_int_equal(st.live_arrays, 0);
}

/* ------------------------------------------------------------------ shapes */

static void test_shape_mismatch(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4};
    pe_array a = pe_f32_1d(x, 3), b = pe_f32_1d(x, 4);
    tu_expect_no_error();
    int line = __LINE__ + 1;
    pe_array c = pe_add(a, b);
    /* the fields and the message agree on the call site */
    assert_int_equal(tu_errors.line, line);
    assert_string_equal(tu_basename(tu_errors.file), "test_errors.c");
    assert_non_null(strstr(tu_errors.message, "pe_add"));
    tu_expect_error(PE_E_SHAPE, line);
    assert_false(pe_is_valid(c));
    assert_true(pe_is_valid(a));
    /* 2-d shapes that do not broadcast either */
    float y[6] = {0};
    pe_array m23 = pe_f32_2d(y, 2, 3), m32 = pe_f32_2d(y, 3, 2);
    pe_array d;
    EXPECT_ERR(PE_E_SHAPE, d = pe_mul(m23, m32));
    assert_false(pe_is_valid(d));
    /* [2,3] and [3] do broadcast: no error */
    pe_array ok = pe_sub(m23, a);
    tu_expect_no_error();
    assert_true(pe_is_valid(ok));
    pe_release(a), pe_release(b), pe_release(c), pe_release(d), pe_release(m23), pe_release(m32), pe_release(ok);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* ------------------------------------------------------------------- types */

static void test_bad_dtypes(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    pe_array r[8];
    EXPECT_ERR(PE_E_TYPE, r[0] = pe_fill_c(PE_F32, 1, shape, 1.0, 2.0)); /* an imaginary part needs a complex dtype */
    EXPECT_ERR(PE_E_TYPE, r[1] = pe_scalar_c(PE_I32, 1.0, 0.0));
    EXPECT_ERR(PE_E_TYPE, r[2] = pe_from_host((pe_dtype)42, 1, shape, x));
    EXPECT_ERR(PE_E_TYPE, r[3] = pe_fill((pe_dtype)6, 1, shape, 1.0));
    EXPECT_ERR(PE_E_TYPE, r[4] = pe_fill((pe_dtype)-1, 1, shape, 1.0));
    pe_array a = pe_f32_1d(x, 4), z = pe_cast(a, PE_C64);
    tu_expect_no_error();
    EXPECT_ERR(PE_E_TYPE, r[5] = pe_cast(z, PE_F32)); /* complex to real: pe_real or pe_abs */
    EXPECT_ERR(PE_E_TYPE, r[6] = pe_cast(a, (pe_dtype)99));
    EXPECT_ERR(PE_E_TYPE, r[7] = pe_sin(z));         /* not defined for complex operands */
    pe_release(z);
    for (int i = 0; i < 8; i++) {
        assert_false(pe_is_valid(r[i]));
        pe_release(r[i]);
    }
    /* a legal cast still works */
    pe_array c = pe_cast(a, PE_F64);
    double out[4];
    assert_int_equal(pe_read(c, out, sizeof out), PE_OK);
    assert_true(out[3] == 4.0);
    pe_release(c), pe_release(a);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* --------------------------------------------------------------- arguments */

static void test_bad_axis(void **state)
{
    (void)state;
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    pe_array m = pe_f32_2d(x, 2, 3), v = pe_f32_1d(x, 6);
    pe_array r[5];
    EXPECT_ERR(PE_E_ARG, r[0] = pe_sum_axis(v, 1));
    EXPECT_ERR(PE_E_ARG, r[1] = pe_sum_axis(m, 2));
    EXPECT_ERR(PE_E_ARG, r[2] = pe_max_axis(m, -3));
    EXPECT_ERR(PE_E_ARG, r[3] = pe_argmin_axis(v, 7));
    EXPECT_ERR(PE_E_ARG, r[4] = pe_index(PE_I32, 2, shape, 2));
    for (int i = 0; i < 5; i++) assert_false(pe_is_valid(r[i])), pe_release(r[i]);
    /* negative axes in range are fine */
    pe_array s = pe_sum_axis(m, -1);
    tu_expect_no_error();
    float got[2];
    assert_int_equal(pe_read(s, got, sizeof got), PE_OK);
    assert_true(got[0] == 6.0f && got[1] == 15.0f);
    pe_release(s), pe_release(m), pe_release(v);
    tu_expect_no_error();
    assert_no_live_arrays();
}

static void test_bad_creation_arguments(void **state)
{
    (void)state;
    float x[8] = {0};
    int64_t shape[PE_MAX_RANK + 1] = {2, 2, 1, 1, 1};
    int64_t neg[2] = {2, -3};
    pe_array r[6];
    EXPECT_ERR(PE_E_ARG, r[0] = pe_from_host(PE_F32, 2, shape, NULL));
    EXPECT_ERR(PE_E_ARG, r[1] = pe_from_host(PE_F32, 2, NULL, x));
    EXPECT_ERR(PE_E_ARG, r[2] = pe_from_host(PE_F32, PE_MAX_RANK + 1, shape, x));
    EXPECT_ERR(PE_E_ARG, r[3] = pe_from_host(PE_F32, -1, shape, x));
    EXPECT_ERR(PE_E_ARG, r[4] = pe_fill(PE_F32, 3, NULL, 1.0));
    /* a negative extent: a bad argument or a shape that does not fit */
    int line = __LINE__ + 1;
    r[5] = pe_from_host(PE_F32, 2, neg, x);
    assert_int_equal(tu_errors.count, 1);
    assert_true(tu_errors.code == PE_E_ARG || tu_errors.code == PE_E_SHAPE);
    tu_expect_error(tu_errors.code, line);
    for (int i = 0; i < 6; i++) assert_false(pe_is_valid(r[i])), pe_release(r[i]);
    /* rank 0 with a NULL shape is a scalar, and rank PE_MAX_RANK is allowed */
    pe_array z = pe_from_host(PE_F32, 0, NULL, x);
    pe_array full = pe_from_host(PE_F32, PE_MAX_RANK, shape, x);
    tu_expect_no_error();
    assert_int_equal(pe_rank(z), 0);
    assert_int_equal(pe_rank(full), PE_MAX_RANK);
    pe_release(z), pe_release(full);
    tu_expect_no_error();
    assert_no_live_arrays();
}

static void test_bad_reads(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4}, out[5];
    pe_array a = pe_f32_1d(x, 4);
    int rc = 0;
    EXPECT_ERR(PE_E_ARG, rc = pe_read(a, out, 3 * sizeof(float)));
    assert_int_equal(rc, PE_E_ARG);
    EXPECT_ERR(PE_E_ARG, rc = pe_read(a, out, 5 * sizeof(float)));
    assert_int_equal(rc, PE_E_ARG);
    EXPECT_ERR(PE_E_ARG, rc = pe_read(a, NULL, 4 * sizeof(float)));
    assert_int_equal(rc, PE_E_ARG);
    float f = -1;
    double d = -1;
    EXPECT_ERR(PE_E_ARG, rc = pe_read_f32(a, &f));
    assert_int_equal(rc, PE_E_ARG);
    EXPECT_ERR(PE_E_ARG, rc = pe_read_f64(a, &d));
    assert_int_equal(rc, PE_E_ARG);
    /* the right size reads */
    assert_int_equal(pe_read(a, out, 4 * sizeof(float)), PE_OK);
    assert_true(out[0] == 1.0f && out[3] == 4.0f);
    pe_array s = pe_sum(a);
    assert_int_equal(pe_read_f32(s, &f), PE_OK);
    assert_true(f == 10.0f);
    tu_expect_no_error();
    pe_release(s), pe_release(a);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* ----------------------------------------------------------------- handles */

static void test_use_after_release(void **state)
{
    (void)state;
    float x[2] = {1, 2}, out[2];
    pe_array a = pe_f32_1d(x, 2);
    int released = __LINE__ + 1;
    pe_release(a);
    tu_expect_no_error();

    int line = __LINE__ + 1;
    pe_array b = pe_exp(a);
    assert_true(names_line(tu_errors.message, released));
    tu_expect_error(PE_E_HANDLE, line);
    assert_false(pe_is_valid(b));

    line = __LINE__ + 1;
    int rc = pe_read(a, out, sizeof out);
    assert_int_equal(rc, PE_E_HANDLE);
    assert_true(names_line(tu_errors.message, released));
    tu_expect_error(PE_E_HANDLE, line);

    line = __LINE__ + 1;
    pe_numel(a);
    assert_true(names_line(tu_errors.message, released));
    tu_expect_error(PE_E_HANDLE, line);
    pe_release(b);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* The release site is still named after another array was created and
 * released in between (one intervening array is not "many"). */
static void test_use_after_release_after_other_work(void **state)
{
    (void)state;
    float x[2] = {1, 2}, out[2];
    pe_array a = pe_f32_1d(x, 2);
    int released = __LINE__ + 1;
    pe_release(a);
    pe_array other = pe_f32_1d(x, 2);
    pe_release(other);
    tu_expect_no_error();
    int line = __LINE__ + 1;
    int rc = pe_read(a, out, sizeof out);
    assert_int_equal(rc, PE_E_HANDLE);
    if (!names_line(tu_errors.message, released))
        fail_msg("the message does not name the release at line %d: %s", released, tu_errors.message);
    tu_expect_error(PE_E_HANDLE, line);
    assert_no_live_arrays();
}

static void test_double_release(void **state)
{
    (void)state;
    float x[2] = {1, 2};
    pe_array a = pe_f32_1d(x, 2);
    int first = __LINE__ + 1;
    pe_release(a);
    int second = __LINE__ + 1;
    pe_release(a);
    assert_true(names_line(tu_errors.message, first));
    tu_expect_error(PE_E_HANDLE, second);
    /* a third release still names the first one */
    int third = __LINE__ + 1;
    pe_release(a);
    assert_true(names_line(tu_errors.message, first));
    tu_expect_error(PE_E_HANDLE, third);
    assert_no_live_arrays();
}

/* An array used, or released, after the scope that held it ended: the error
 * names the scope's begin and end lines and says what keeps it (pe_keep). */
static void test_use_after_scope_end(void **state)
{
    (void)state;
    float x[2] = {1, 2}, out[2];
    int begin = __LINE__ + 1;
    pe_scope sc = pe_scope_begin();
    pe_array a = pe_mul(pe_f32_1d(x, 2), 2.0f);
    int end = __LINE__ + 1;
    pe_scope_end(sc);
    int use = __LINE__ + 1;
    pe_array b = pe_add(a, 1.0f);
    char want[128];
    snprintf(want, sizeof want, "the scope begun at %s:%d ended", __FILE__, begin);
    if (!strstr(tu_errors.message, want) || !names_line(tu_errors.message, end) || !strstr(tu_errors.message, "pe_keep"))
        fail_msg("the use after the scope's end should name the scope (%s), its end (line %d) and pe_keep: %s", want,
                 end, tu_errors.message);
    tu_expect_error(PE_E_HANDLE, use);
    assert_false(pe_is_valid(b));
    pe_release(b);
    int release = __LINE__ + 1;
    pe_release(a);
    if (!strstr(tu_errors.message, "the end of the scope begun at") || !names_line(tu_errors.message, begin) ||
        !names_line(tu_errors.message, end) || !strstr(tu_errors.message, "pe_keep"))
        fail_msg("a release after the scope's end should name the scope and pe_keep: %s", tu_errors.message);
    tu_expect_error(PE_E_HANDLE, release);
    /* the same handle released by the program itself names no scope */
    pe_array c = pe_f32_1d(x, 2);
    pe_release(c);
    int read = __LINE__ + 1;
    assert_int_not_equal(pe_read(c, out, sizeof out), PE_OK);
    if (strstr(tu_errors.message, "scope begun")) fail_msg("a release by the program names no scope: %s", tu_errors.message);
    tu_expect_error(PE_E_HANDLE, read);
    assert_no_live_arrays();
}

static void test_forged_and_null_handles(void **state)
{
    (void)state;
    float x[2] = {1, 2}, out[2];
    pe_array a = pe_f32_1d(x, 2);
    pe_array forged = (pe_array){12345678}, null = (pe_array){0};
    pe_array r[4];
    int rc = 0;
    EXPECT_ERR(PE_E_HANDLE, r[0] = pe_add(forged, a));
    EXPECT_ERR(PE_E_HANDLE, r[1] = pe_add(a, null));
    EXPECT_ERR(PE_E_HANDLE, r[2] = pe_sqrt(forged));
    EXPECT_ERR(PE_E_HANDLE, r[3] = pe_sum(null));
    EXPECT_ERR(PE_E_HANDLE, rc = pe_read(forged, out, sizeof out));
    assert_int_equal(rc, PE_E_HANDLE);
    EXPECT_ERR(PE_E_HANDLE, rc = pe_read(null, out, sizeof out));
    assert_int_equal(rc, PE_E_HANDLE);
    EXPECT_ERR(PE_E_HANDLE, pe_release(forged));
    EXPECT_ERR(PE_E_HANDLE, pe_release(null));
    EXPECT_ERR(PE_E_HANDLE, pe_retain(forged));
    EXPECT_ERR(PE_E_HANDLE, pe_dim(null, 0));
    EXPECT_ERR(PE_E_HANDLE, pe_release((pe_array){0xdeadbeef00000001ull}));
    assert_false(pe_is_valid(forged));
    assert_false(pe_is_valid(null));
    tu_expect_no_error(); /* pe_is_valid raises nothing */
    for (int i = 0; i < 4; i++) assert_false(pe_is_valid(r[i])), pe_release(r[i]);
    /* the real array is untouched */
    assert_int_equal(pe_read(a, out, sizeof out), PE_OK);
    assert_true(out[0] == 1.0f && out[1] == 2.0f);
    pe_release(a);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* ---------------------------------------------------------- invalid arrays */

static void test_invalid_array_propagates_quietly(void **state)
{
    (void)state;
    double x[4] = {1, 2, 3, 4}, out[4];
    pe_array a = pe_f64_1d(x, 3), b = pe_f64_1d(x, 4);
    int line = __LINE__ + 1;
    pe_array bad = pe_add(a, b);
    tu_expect_error(PE_E_SHAPE, line);
    /* consumers of an invalid array are invalid, with no further errors */
    pe_array c = pe_exp(bad);
    pe_array d = pe_mul(c, a);
    pe_array e = pe_sum(d);
    pe_array f = pe_cast(e, PE_F32);
    tu_expect_no_error();
    assert_false(pe_is_valid(bad));
    assert_false(pe_is_valid(c));
    assert_false(pe_is_valid(d));
    assert_false(pe_is_valid(e));
    assert_false(pe_is_valid(f));
    pe_flush();
    pe_sync();
    tu_expect_no_error();
    /* reading an invalid array: PE_E_INVALID, raised once, at the read */
    line = __LINE__ + 1;
    int rc = pe_read(d, out, 3 * sizeof(double));
    assert_int_equal(rc, PE_E_INVALID);
    tu_expect_error(PE_E_INVALID, line);
    line = __LINE__ + 1;
    rc = pe_read(bad, out, 3 * sizeof(double));
    assert_int_equal(rc, PE_E_INVALID);
    tu_expect_error(PE_E_INVALID, line);
    double v;
    line = __LINE__ + 1;
    rc = pe_read_f64(e, &v);
    assert_int_equal(rc, PE_E_INVALID);
    tu_expect_error(PE_E_INVALID, line);
    assert_non_null(pe_last_error());
    assert_int_equal(pe_last_error()->code, PE_E_INVALID);
    assert_int_equal(pe_last_error()->line, line);
    /* the valid operand is unaffected */
    assert_int_equal(pe_read(a, out, 3 * sizeof(double)), PE_OK);
    assert_true(out[2] == 3.0);
    pe_release(a), pe_release(b), pe_release(bad), pe_release(c), pe_release(d), pe_release(e), pe_release(f);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* ------------------------------------------------ maps, scopes, blocks, device */

static void test_unmap_scope_block_device(void **state)
{
    (void)state;
    float x[2] = {1, 2};
    pe_array a = pe_f32_1d(x, 2);
    EXPECT_ERR(PE_E_ARG, pe_unmap(a));
    /* mapped once, unmapped twice: the second is an error */
    const float *p = pe_map(a);
    assert_non_null(p);
    assert_true(p[1] == 2.0f);
    pe_unmap(a);
    tu_expect_no_error();
    EXPECT_ERR(PE_E_ARG, pe_unmap(a));

    pe_scope outer = pe_scope_begin();
    pe_scope inner = pe_scope_begin();
    EXPECT_ERR(PE_E_ARG, pe_scope_end(outer));
    pe_scope_end(inner);
    pe_scope_end(outer);
    tu_expect_no_error();
    /* ending an already-ended scope is out of order too */
    EXPECT_ERR(PE_E_ARG, pe_scope_end(outer));

    EXPECT_ERR(PE_E_ARG, pe_block_end());
    pe_block_begin();
    pe_block_end();
    tu_expect_no_error();
    EXPECT_ERR(PE_E_ARG, pe_block_end());

    int rc = 0;
    EXPECT_ERR(PE_E_DEVICE, rc = pe_set_device(99));
    assert_int_equal(rc, PE_E_DEVICE);
    assert_int_equal(pe_set_device(0), PE_OK); /* the CPU is device 0 */
    assert_int_equal(pe_set_device(-1), PE_OK);
    tu_expect_no_error();
    pe_release(a);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* ---------------------------------------------------------- handler stack */

static char order[16];
static int order_n;
static int seen_line[2];
static void *seen_user[2];
static pe_status seen_code;

static int handler_a(const pe_error *e, void *user) /* older: handles */
{
    order[order_n++] = 'A';
    seen_line[0] = e->line;
    seen_user[0] = user;
    return 1;
}

static int handler_b(const pe_error *e, void *user) /* newer: declines */
{
    order[order_n++] = 'B';
    seen_line[1] = e->line;
    seen_user[1] = user;
    seen_code = e->code;
    return 0;
}

static void test_handler_stack(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4};
    pe_array a = pe_f32_1d(x, 3), b = pe_f32_1d(x, 4);
    int ua = 1, ub = 2;
    pe_push_error_handler(handler_a, &ua);
    pe_push_error_handler(handler_b, &ub);
    order_n = 0;
    int line = __LINE__ + 1;
    pe_array r1 = pe_add(a, b);
    /* newest first; it declined, so the next one ran and handled it */
    assert_int_equal(order_n, 2);
    assert_int_equal(seen_code, PE_E_SHAPE);
    assert_memory_equal(order, "BA", 2);
    assert_int_equal(seen_line[0], line);
    assert_int_equal(seen_line[1], line);
    assert_ptr_equal(seen_user[0], &ua);
    assert_ptr_equal(seen_user[1], &ub);
    assert_int_equal(tu_errors.count, 0); /* A handled it: the fixture's handler did not run */
    assert_non_null(pe_last_error());
    assert_int_equal(pe_last_error()->code, PE_E_SHAPE);
    assert_int_equal(pe_last_error()->line, line);
    assert_non_null(strstr(pe_last_error()->message, "test_errors.c:"));

    /* pop B: only A runs */
    pe_pop_error_handler();
    order_n = 0;
    int line2 = __LINE__ + 1;
    pe_array r2 = pe_mul(b, a);
    assert_int_equal(order_n, 1);
    assert_int_equal(order[0], 'A');
    assert_int_equal(seen_line[0], line2);
    assert_int_equal(pe_last_error()->line, line2);
    assert_int_equal(tu_errors.count, 0);

    /* pop A: the fixture's recorder is on top again */
    pe_pop_error_handler();
    order_n = 0;
    int line3 = __LINE__ + 1;
    pe_array r3 = pe_sub(a, b);
    assert_int_equal(order_n, 0);
    tu_expect_error(PE_E_SHAPE, line3);
    assert_int_equal(pe_last_error()->line, line3);
    pe_release(a), pe_release(b), pe_release(r1), pe_release(r2), pe_release(r3);
    tu_expect_no_error();
    assert_no_live_arrays();
}

static void test_status_names(void **state)
{
    (void)state;
    const char *shape = pe_status_name(PE_E_SHAPE), *arg = pe_status_name(PE_E_ARG);
    assert_non_null(shape);
    assert_non_null(arg);
    assert_true(strlen(shape) > 0);
    assert_true(strlen(arg) > 0);
    assert_string_not_equal(shape, arg);
    assert_string_not_equal(pe_status_name(PE_E_HANDLE), pe_status_name(PE_E_INVALID));
    assert_non_null(pe_status_name(PE_OK));
}

/* ----------------------------------------------------------- no fixture */

/* The last error names the call the program made, not the one it expands to. */
static void assert_names_call(const char *call, const char *expansion)
{
    if (!strstr(tu_errors.message, call) || strstr(tu_errors.message, expansion))
        fail_msg("the error should name %s, not %s: %s", call, expansion, tu_errors.message);
}

static void test_calls_before_init(void **state)
{
    (void)state;
    tu_errors_clear();
    pe_push_error_handler(tu_record_error, NULL);
    float x[2] = {1, 2}, out[2];
    int64_t shape[1] = {2};
    pe_array r;
    int line = __LINE__ + 1;
    r = pe_from_host(PE_F32, 1, shape, x);
    assert_int_equal(r.h, 0);
    assert_non_null(strstr(tu_errors.message, "pe_init"));
    tu_expect_error(PE_E_ARG, line);

    /* a shorthand is named as the program wrote it, not as the call it expands to */
    line = __LINE__ + 1;
    r = pe_f32_1d(x, 2);
    assert_int_equal(r.h, 0);
    assert_names_call("pe_f32_1d", "pe_from_host");
    tu_expect_error(PE_E_ARG, line);

    line = __LINE__ + 1;
    r = pe_add((pe_array){0}, (pe_array){0});
    assert_int_equal(r.h, 0);
    assert_non_null(strstr(tu_errors.message, "pe_init"));
    tu_expect_error(PE_E_ARG, line);

    /* a C scalar operand does not add a second error */
    line = __LINE__ + 1;
    r = pe_mul((pe_array){12345678}, 2.0f);
    assert_int_equal(r.h, 0);
    assert_non_null(strstr(tu_errors.message, "pe_init"));
    tu_expect_error(PE_E_ARG, line);

    line = __LINE__ + 1;
    int rc = pe_read((pe_array){1}, out, sizeof out);
    assert_int_not_equal(rc, PE_OK);
    assert_non_null(strstr(tu_errors.message, "pe_init"));
    tu_expect_error(PE_E_ARG, line);

    line = __LINE__ + 1;
    r = pe_scalar(PE_F64, 1.0);
    assert_int_equal(r.h, 0);
    assert_names_call("pe_scalar", "pe_fill");
    tu_expect_error(PE_E_ARG, line);

    EXPECT_ERR(PE_E_ARG, pe_release((pe_array){1}));
    assert_false(pe_is_valid((pe_array){1}));
    tu_expect_no_error();

    /* and after pe_init everything works */
    assert_int_equal(pe_init(NULL), PE_OK);
    pe_array a = pe_f32_1d(x, 2);
    pe_array b = pe_add(a, 1.0f);
    assert_int_equal(pe_read(b, out, sizeof out), PE_OK);
    assert_true(out[0] == 2.0f && out[1] == 3.0f);
    pe_release(a), pe_release(b);
    tu_expect_no_error();
    pe_shutdown();
    pe_pop_error_handler();
}

/* Makes the shape error (when asked) and returns the line it is made on. */
static int shape_error_site(int make_it, pe_array a, pe_array b)
{
    return make_it ? (pe_add(a, b), __LINE__) : __LINE__;
}

static void test_default_handler_aborts(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    int line = 0;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        close(fds[1]);
        if (pe_init(NULL) != PE_OK) _exit(3);
        float x[4] = {1, 2, 3, 4};
        pe_array a = pe_f32_1d(x, 3), b = pe_f32_1d(x, 4);
        shape_error_site(1, a, b);
        _exit(4); /* the default handler must not return */
    }
    line = shape_error_site(0, (pe_array){0}, (pe_array){0});
    close(fds[1]);
    char buf[4096];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof buf - 1 && (k = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)k;
    buf[n] = 0;
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status))
        fail_msg("child was not killed by a signal (exit %d); stderr: %s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, buf);
    assert_int_equal(WTERMSIG(status), SIGABRT);
    char want[64];
    snprintf(want, sizeof want, "test_errors.c:%d:", line);
    const char *pe = strstr(buf, "pe: ");
    if (!pe || !strstr(pe, want)) fail_msg("stderr lacks \"pe: ...%s\": %s", want, buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shape_mismatch, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_bad_dtypes, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_bad_axis, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_bad_creation_arguments, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_bad_reads, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_use_after_release, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_use_after_release_after_other_work, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_double_release, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_use_after_scope_end, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_forged_and_null_handles, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_invalid_array_propagates_quietly, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unmap_scope_block_device, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_handler_stack, tu_setup, tu_teardown),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_calls_before_init),
        cmocka_unit_test(test_default_handler_aborts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
