/* test_error_paths.c — every error path of the spec: its code, a message
 * naming this file and the line of the offending call, invalid-array
 * propagation, the handler stack, the default handler (prints and aborts),
 * and calls before pe_init.  Nothing may crash. */
#include "test_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXPECT(code, call)                      \
    do {                                        \
        int line_ = __LINE__;                   \
        call;                                   \
        tu_expect_error(code, line_);           \
    } while (0)

static void test_argument_errors(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4}, out[4];
    int64_t shape[2] = {2, 2}, neg[1] = {-1};
    pe_array a = pe_f32_1d(x, 4), b = pe_f32_1d(x, 3);
    EXPECT(PE_E_SHAPE, pe_add(a, b));
    EXPECT(PE_E_TYPE, pe_fill_c(PE_F64, 1, shape, 0, 1));
    EXPECT(PE_E_TYPE, pe_from_host((pe_dtype)42, 1, shape, x));
    EXPECT(PE_E_TYPE, pe_scalar_c(PE_BOOL, 1, 1));
    EXPECT(PE_E_TYPE, pe_cast(a, (pe_dtype)-3));
    EXPECT(PE_E_ARG, pe_from_host(PE_F32, 2, shape, NULL));
    EXPECT(PE_E_ARG, pe_from_host(PE_F32, 2, NULL, x));
    EXPECT(PE_E_ARG, pe_from_host(PE_F32, PE_MAX_RANK + 1, shape, x));
    EXPECT(PE_E_SHAPE, pe_from_host(PE_F32, 1, neg, x));
    EXPECT(PE_E_ARG, pe_sum_axis(a, 1));
    EXPECT(PE_E_ARG, pe_index(PE_F32, 2, shape, 2));
    EXPECT(PE_E_ARG, pe_read(a, out, 3 * sizeof(float)));
    EXPECT(PE_E_ARG, pe_read(a, NULL, sizeof out));
    float one;
    EXPECT(PE_E_ARG, pe_read_f32(a, &one));
    EXPECT(PE_E_ARG, pe_unmap(a));
    EXPECT(PE_E_ARG, pe_block_end());
    EXPECT(PE_E_DEVICE, pe_set_device(99));
    EXPECT(PE_E_ARG, pe_adopt(PE_F32, 1, shape, x, NULL, NULL));
    pe_scope outer = pe_scope_begin(), inner = pe_scope_begin();
    EXPECT(PE_E_ARG, pe_scope_end(outer));
    pe_scope_end(inner), pe_scope_end(outer);
    tu_expect_no_error();
    /* the message text names the API and the problem */
    int line = __LINE__ + 1;
    pe_add(a, b);
    assert_non_null(strstr(tu_errors.message, "pe_add"));
    assert_non_null(strstr(tu_errors.message, "[4] and [3] do not broadcast"));
    assert_string_equal(tu_errors.file + strlen(tu_errors.file) - strlen("test_error_paths.c"), "test_error_paths.c");
    assert_int_equal(tu_errors.line, line);
    tu_errors_clear();
}

static void test_handle_errors(void **state)
{
    (void)state;
    float x[2] = {1, 2};
    pe_array a = pe_f32_1d(x, 2);
    int released_at = __LINE__ + 1;
    pe_release(a);
    char where[64];
    snprintf(where, sizeof where, "released at %s:%d", __FILE__, released_at);
    EXPECT(PE_E_HANDLE, pe_exp(a));
    int line = __LINE__ + 1;
    pe_neg(a);
    assert_non_null(strstr(tu_errors.message, where));
    tu_expect_error(PE_E_HANDLE, line);
    line = __LINE__ + 1;
    pe_release(a);
    assert_non_null(strstr(tu_errors.message, "released twice"));
    assert_non_null(strstr(tu_errors.message, where + strlen("released at ")));
    tu_expect_error(PE_E_HANDLE, line);
    EXPECT(PE_E_HANDLE, pe_release((pe_array){0}));
    EXPECT(PE_E_HANDLE, pe_add((pe_array){0}, 1.0f));
    EXPECT(PE_E_HANDLE, pe_sum((pe_array){12345678}));
    EXPECT(PE_E_HANDLE, pe_rank((pe_array){0xdeadbeef00000001ull}));
    float v;
    EXPECT(PE_E_HANDLE, pe_read_f32((pe_array){~0ull}, &v));
}

static void test_invalid_arrays_propagate_quietly(void **state)
{
    (void)state;
    float x[3] = {1, 2, 3}, out[3];
    pe_array a = pe_f32_1d(x, 3), b = pe_f32_1d(x, 2);
    int line = __LINE__ + 1;
    pe_array bad = pe_mul(a, b);
    tu_expect_error(PE_E_SHAPE, line);
    assert_false(pe_is_valid(bad));
    pe_array worse = pe_sum(pe_exp(pe_add(bad, 1.0f))); /* no new errors */
    tu_expect_no_error();
    int read_line = __LINE__ + 1;
    assert_int_equal(pe_read(worse, out, sizeof(float)), PE_E_INVALID);
    tu_expect_error(PE_E_INVALID, read_line);
    /* the read's message carries the first failure */
    pe_read(bad, out, sizeof out);
    char first[64];
    snprintf(first, sizeof first, "test_error_paths.c:%d", line);
    assert_non_null(strstr(tu_errors.message, first));
    assert_non_null(pe_last_error());
    assert_int_equal(pe_last_error()->code, PE_E_INVALID);
    tu_errors_clear();
    pe_release(bad), pe_release(worse), pe_release(a), pe_release(b);
    tu_expect_no_error();
}

static int calls_first, calls_second;
static int refuse(const pe_error *e, void *user)
{
    (void)e;
    ++*(int *)user;
    return 0; /* not handled: the next handler runs */
}

static void test_handler_stack(void **state)
{
    (void)state;
    calls_first = calls_second = 0;
    pe_push_error_handler(refuse, &calls_second); /* newest: runs first, passes on */
    float x[2] = {1, 2};
    pe_array a = pe_f32_1d(x, 2);
    int line = __LINE__ + 1;
    pe_sum_axis(a, 5);
    assert_int_equal(calls_second, 1);
    tu_expect_error(PE_E_ARG, line); /* tu_record_error, below it, handled it */
    pe_pop_error_handler();
    pe_sum_axis(a, 5);
    assert_int_equal(calls_second, 1);
    tu_errors_clear();
    assert_string_equal(pe_status_name(PE_E_SHAPE), "PE_E_SHAPE");
}

static void test_default_handler_prints_and_aborts(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    const int line = __LINE__ + 3; /* the line of pe_add in the child */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { dup2(fds[1], 2); pe_pop_error_handler(); float x[3] = {1, 2, 3}; pe_add(pe_f32_1d(x, 3), pe_f32_1d(x, 2)); _exit(0); }
    close(fds[1]);
    char buf[1024] = {0};
    ssize_t got = 0, r;
    while ((r = read(fds[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0) got += r;
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    char want[128];
    snprintf(want, sizeof want, "pe: %s:%d: ", __FILE__, line);
    if (!strstr(buf, want)) fail_msg("stderr was: %s", buf);
    assert_non_null(strstr(buf, "do not broadcast"));
}

static void test_calls_before_init(void **state)
{
    (void)state;
    tu_errors_clear();
    pe_push_error_handler(tu_record_error, NULL);
    float x[2] = {1, 2}, out[2];
    int line = __LINE__ + 1;
    pe_array a = pe_f32_1d(x, 2);
    assert_true(a.h == 0);
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    pe_array b = pe_add(a, 2.0f);
    assert_true(b.h == 0);
    assert_non_null(strstr(tu_errors.message, "pe_init"));
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    assert_int_equal(pe_read(a, out, sizeof out), PE_E_ARG);
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    pe_release(a);
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    pe_sync();
    tu_expect_error(PE_E_ARG, line);
    pe_shutdown(); /* harmless */
    pe_pop_error_handler();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_argument_errors, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_handle_errors, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_invalid_arrays_propagate_quietly, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_handler_stack, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_default_handler_prints_and_aborts, tu_setup, tu_teardown),
        cmocka_unit_test(test_calls_before_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
