/* test_irload.c — the runtime's side of the static IR, with units made here
 * for this very file (so no pecc is involved): operands are released where
 * the IR says and the dynamic stream agrees; where it departs (another op
 * on the line, a retained handle, the same line of another function — as
 * another unit compiled under the same file name —, an IR the decoder
 * refuses) nothing is released and the program runs as without IR;
 * errors name the column the IR knows. */
#include "test_util.h"

#include <unistd.h>

#include "irformat/static_ir.h"
#include "profiler/profdb.h"

/* Registers a unit for this file with one request at `line` of `function`. */
static void register_request(const char *function, int line, int column, const char *api, pe_ir_arg *args,
                             uint32_t n_args)
{
    pe_ir_region body = {PE_REGION_FUNCTION, PE_LOOP_NONE, -1, 1, 1, 999, 1, true, NULL, 0};
    pe_ir_request rq = {line, column, 0, (char *)api, "", 0, "", args, n_args};
    pe_ir_function fn = {(char *)function, 1, &body, 1, &rq, 1};
    pe_ir_unit u = {(char *)__FILE__, "test_irload", &fn, 1};
    size_t len;
    uint8_t *blob = pe_ir_encode(&u, &len);
    assert_non_null(blob);
    pe__register_ir(blob, len);
    free(blob);
}

static uint64_t ir_releases(void)
{
    pe_stats st;
    pe_get_stats(&st);
    return st.ir_releases;
}

/* Whether the application still holds a: asked without using the handle
 * (a use of a handle the IR released would prove the IR wrong and bring it
 * back: test_forged_ir.c). */
static bool is_live(pe_array a) { return pe_is_valid(a) != 0; }

#define LINE_AGREES 200
#define LINE_OTHER_OP 210
#define LINE_RETAINED 220
#define LINE_OTHER_FUNCTION 230

static void test_release_where_the_ir_and_the_stream_agree(void **state)
{
    (void)state;
    float h[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    pe_array x = pe_f32_1d(h, 8), y = pe_f32_1d(h, 8);
    uint64_t before = ir_releases();
    /* line 200: "pe_add(variable x (last use), variable y)" */
#line LINE_AGREES
    pe_array s = pe_add(x, y);
#line 60
    assert_int_equal(ir_releases() - before, 1);
    assert_false(is_live(x)); /* released: its last use */
    assert_true(is_live(y));
    float v[8];
    assert_int_equal(pe_read(s, v, sizeof v), PE_OK); /* the value x had is still there for s */
    assert_true(v[7] == 16.0f);

    /* the same line asks for another op: the IR says nothing about it */
    pe_array z = pe_f32_1d(h, 8);
    before = ir_releases();
#line LINE_OTHER_OP
    pe_array t = pe_mul(z, y);
#line 71
    assert_int_equal(ir_releases() - before, 0);
    assert_true(is_live(z));

    /* a retained handle (two references): the program still holds it */
    pe_array r = pe_retain(z);
    before = ir_releases();
#line LINE_RETAINED
    pe_array u = pe_add(z, y);
#line 79
    assert_int_equal(ir_releases() - before, 0);
    assert_true(is_live(z));

    /* an IR for this line of another function (another unit of the same name) */
    before = ir_releases();
#line LINE_OTHER_FUNCTION
    pe_array w = pe_add(y, y);
#line 87
    assert_int_equal(ir_releases() - before, 0);
    assert_true(is_live(y));
    pe_release(r), pe_release(z), pe_release(y), pe_release(s), pe_release(t), pe_release(u), pe_release(w);
    tu_expect_no_error();
}

/* A unit the decoder refuses is not registered: a warning, no effect. */
static void test_refused_unit(void **state)
{
    (void)state;
    uint8_t junk[40] = "PEIR\x01\x00\x00\x00\x10\x00\x00\x00";
    pe__register_ir(junk, sizeof junk);
    float h[2] = {1, 2};
    pe_array a = pe_f32_1d(h, 2);
    uint64_t before = ir_releases();
    pe_array b = pe_neg(a);
    assert_int_equal(ir_releases() - before, 0);
    pe_release(a), pe_release(b);
}

#define LINE_READ_LAST 400
#define LINE_READ_SHARED 410

/* A read the IR calls the value's last use: the result is computed into the
 * caller's buffer and released; with a consumer still pending it is not. */
static void test_read_in_place(void **state)
{
    (void)state;
    enum { N = 50000 };
    float *h = malloc(N * sizeof *h), *out = malloc(N * sizeof *out);
    assert_non_null(h), assert_non_null(out);
    for (int i = 0; i < N; i++) h[i] = (float)i;
    pe_array x = pe_f32_1d(h, N);
    pe_stats st0, st;
    pe_get_stats(&st0);
    pe_array y = pe_mul(x, 3.0f);
#line LINE_READ_LAST
    assert_int_equal(pe_read(y, out, N * sizeof *out), PE_OK);
#line 127
    pe_get_stats(&st);
    assert_int_equal(st.reads_in_place - st0.reads_in_place, 1);
    for (int i = 0; i < N; i += 997) assert_true(out[i] == 3.0f * h[i]);
    assert_false(is_live(y)); /* released after its last use */
    /* the same, but a consumer of y is pending: y's buffer must outlive the read */
    pe_array y2 = pe_mul(x, 5.0f), z = pe_add(y2, 1.0f);
    pe_get_stats(&st0);
#line LINE_READ_SHARED
    assert_int_equal(pe_read(y2, out, N * sizeof *out), PE_OK);
#line 137
    pe_get_stats(&st);
    assert_int_equal(st.reads_in_place - st0.reads_in_place, 0);
    memset(out, 0, N * sizeof *out); /* the caller reuses its buffer */
    assert_int_equal(pe_read(z, out, N * sizeof *out), PE_OK);
    for (int i = 0; i < N; i += 997) assert_true(out[i] == 5.0f * h[i] + 1.0f);
    pe_release(z), pe_release(x);
    if (is_live(y2)) pe_release(y2);
    free(h), free(out);
    tu_expect_no_error();
}

#define LINE_COLUMN 300

static void test_error_names_the_column(void **state)
{
    (void)state;
    float h[3] = {1, 2, 3}, g[2] = {1, 2};
    pe_array a = pe_f32_1d(h, 3), b = pe_f32_1d(g, 2);
    tu_errors_clear();
#line LINE_COLUMN
    pe_array c = pe_add(a, b); /* shapes (3) and (2) do not broadcast */
#line 106
    assert_int_equal(tu_errors.count, 1);
    assert_non_null(strstr(tu_errors.message, "test_irload.c:300:17: "));
    tu_errors_clear();
    pe_release(a), pe_release(b), pe_release(c);
}

/* The profiler's site records carry the column the IR knows. */
#define LINE_PROFILED 500
static void test_profile_names_the_column(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "test_irload.%d.pep", (int)getpid());
    setenv("PE_PROFILE", path, 1);
    assert_int_equal(pe_init(NULL), PE_OK);
    float h[4] = {1, 2, 3, 4}, v[4];
    pe_array a = pe_f32_1d(h, 4);
#line LINE_PROFILED
    pe_array b = pe_neg(a);
#line 172
    assert_int_equal(pe_read(b, v, sizeof v), PE_OK);
    pe_release(a), pe_release(b);
    pe_shutdown();
    unsetenv("PE_PROFILE");
    pe_profile p;
    char err[400];
    if (!pe_profile_load(&p, path, err, sizeof err)) fail_msg("%s", err);
    bool found = false;
    for (uint32_t i = 0; i < p.n_sites; i++)
        if (p.sites[i].line == LINE_PROFILED && strstr(p.sites[i].file, "test_irload.c")) {
            assert_int_equal(p.sites[i].column, 18);
            found = true;
        }
    assert_true(found);
    pe_profile_free(&p);
    unlink(path);
}

int main(void)
{
    /* this file's IR, as pecc would have written it (registered before pe_init, as constructors do) */
    static pe_ir_arg agrees[2] = {{PE_ARG_VARIABLE, "x", 0, -1, true}, {PE_ARG_VARIABLE, "y", 0, -1, false}};
    static pe_ir_arg other_op[2] = {{PE_ARG_VARIABLE, "z", 0, -1, true}, {PE_ARG_VARIABLE, "y", 0, -1, false}};
    static pe_ir_arg retained[2] = {{PE_ARG_VARIABLE, "z", 0, -1, true}, {PE_ARG_VARIABLE, "y", 0, -1, false}};
    static pe_ir_arg column[2] = {{PE_ARG_VARIABLE, "a", 0, -1, false}, {PE_ARG_VARIABLE, "b", 0, -1, false}};
    static pe_ir_arg elsewhere[2] = {{PE_ARG_VARIABLE, "y", 0, -1, true}, {PE_ARG_VARIABLE, "y", 0, -1, true}};
    const char *here = "test_release_where_the_ir_and_the_stream_agree";
    register_request(here, LINE_AGREES, 18, "pe_add_at", agrees, 2);
    register_request(here, LINE_OTHER_OP, 18, "pe_add_at", other_op, 2);
    register_request(here, LINE_RETAINED, 18, "pe_add_at", retained, 2);
    register_request("another_function", LINE_OTHER_FUNCTION, 18, "pe_add_at", elsewhere, 2);
    register_request("test_error_names_the_column", LINE_COLUMN, 17, "pe_add_at", column, 2);
    static pe_ir_arg read_last[1] = {{PE_ARG_VARIABLE, "y", 0, -1, true}};
    static pe_ir_arg read_shared[1] = {{PE_ARG_VARIABLE, "y2", 0, -1, true}};
    register_request("test_read_in_place", LINE_READ_LAST, 5, "pe_read_at", read_last, 1);
    register_request("test_read_in_place", LINE_READ_SHARED, 5, "pe_read_at", read_shared, 1);
    static pe_ir_arg profiled[1] = {{PE_ARG_VARIABLE, "a", 0, -1, false}};
    register_request("test_profile_names_the_column", LINE_PROFILED, 18, "pe_neg_at", profiled, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_release_where_the_ir_and_the_stream_agree, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_refused_unit, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_read_in_place, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_error_names_the_column, tu_setup, tu_teardown),
        cmocka_unit_test(test_profile_names_the_column),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
