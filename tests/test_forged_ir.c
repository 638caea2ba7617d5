/* test_forged_ir.c — a forged static IR never aborts a correct program
 * (issue 22, item 9).  Units made here for this very file set every
 * last-use mark ("kill"), as a tampered or foreign IR could.  The program
 * is correct without any IR; with it, every value must equal a plain C
 * loop's and no error may be raised:
 *   - marks that the IR's own reads contradict (a later read, a value read
 *     again in the next loop iteration, a pe_release after the "last use")
 *     are ignored, with a warning;
 *   - marks the IR cannot contradict (it does not list the later read) are
 *     caught where the program uses the handle again: the value comes back
 *     (kept by a pending consumer, or still in the batch being recorded),
 *     and the program's own pe_release of what the IR released is no
 *     "released twice";
 *   - so is a value its producer's line says is read once (irload.c) that
 *     the program reads again: it comes back, and that producer's line
 *     marks no value read once from then on;
 *   - a mark that is right still releases (leaks stay plugged). */
#include "test_util.h"

#include "irformat/static_ir.h"

#define N 256

static uint64_t ir_releases(void)
{
    pe_stats st;
    pe_get_stats(&st);
    return st.ir_releases;
}

/* ----------------------------------------------------------------------
 * A loop whose IR is intact but for its marks: all set. */
#define LOOP_X 100     /* x = pe_f32_1d(...)                              */
#define LOOP_E 110     /* e = pe_exp(pe_mul(x, 0.5f))      kill x (wrong) */
#define LOOP_M 120     /* m = pe_add(e, x)                 kill e (right), kill x (wrong) */
#define LOOP_READ 130  /* pe_read(m, out, ...)             kill m (wrong: released below) */
#define LOOP_REL 140   /* pe_release(m)                                   */
#define LOOP_END 150   /* pe_release(x)                                   */

static void test_marks_the_ir_contradicts(void **state)
{
    (void)state;
    static float h[N], out[N];
    for (int i = 0; i < N; i++) h[i] = (float)i / N;
    uint64_t before = ir_releases();
#line LOOP_X
    pe_array x = pe_f32_1d(h, N);
#line 50
    for (int it = 0; it < 4; it++) {
#line LOOP_E
        pe_array e = pe_exp(pe_mul(x, 0.5f));
#line LOOP_M
        pe_array m = pe_add(e, x);
#line LOOP_READ
        assert_int_equal(pe_read(m, out, sizeof out), PE_OK);
#line LOOP_REL
        pe_release(m);
#line 60
        for (int i = 0; i < N; i++) assert_true(fabsf(out[i] - (expf(h[i] * 0.5f) + h[i])) <= 1e-6f * out[i]);
    }
#line LOOP_END
    pe_release(x);
#line 65
    tu_expect_no_error();
    assert_int_equal(ir_releases() - before, 8); /* per iteration: the nested pe_mul and, by its right mark, e */
}

/* ----------------------------------------------------------------------
 * Marks whose contradiction the IR does not show: it lists no later read. */
#define LOST_B 200     /* b = pe_exp(a)          kill a; the reads of a below are not in the IR */
#define LOST_U 210     /* u = pe_sin(t)          kill t; the reads of t below are not in the IR */
#define LOST_READ 220  /* pe_read(w, ...)        kill w; the pe_release(w) below is not in the IR */

static void test_marks_the_program_contradicts(void **state)
{
    (void)state;
    static float h[N], c_out[N], v_out[N], t_out[N], w_out[N];
    for (int i = 0; i < N; i++) h[i] = (float)i / N - 0.5f;
    pe_array a = pe_f32_1d(h, N);
#line LOST_B
    pe_array b = pe_exp(a);
#line 80
    /* a was released after pe_exp; b's pending computation still holds its value */
    pe_array c = pe_add(a, b);
    assert_int_equal(pe_read(c, c_out, sizeof c_out), PE_OK);
    for (int i = 0; i < N; i++) assert_true(fabsf(c_out[i] - (h[i] + expf(h[i]))) <= 1e-6f * fabsf(c_out[i]) + 1e-7f);

    /* t is computed in the batch being recorded, released there by the IR:
     * a later use in the same batch, and a read after it, need its value */
    pe_array t = pe_mul(a, 2.0f);
#line LOST_U
    pe_array u = pe_sin(t);
#line 90
    pe_array v = pe_add(t, u);
    assert_int_equal(pe_read(v, v_out, sizeof v_out), PE_OK);
    assert_int_equal(pe_read(t, t_out, sizeof t_out), PE_OK);
    for (int i = 0; i < N; i++) {
        assert_true(t_out[i] == h[i] * 2.0f);
        assert_true(fabsf(v_out[i] - (h[i] * 2.0f + sinf(h[i] * 2.0f))) <= 1e-6f);
    }

    /* the IR says the read is w's last use; the program releases w itself */
    pe_array w = pe_neg(a);
#line LOST_READ
    assert_int_equal(pe_read(w, w_out, sizeof w_out), PE_OK);
#line 103
    pe_release(w);
    for (int i = 0; i < N; i++) assert_true(w_out[i] == -h[i]);
    pe_release(a), pe_release(b), pe_release(c), pe_release(u), pe_release(v), pe_release(t);
    tu_expect_no_error();
}

/* ----------------------------------------------------------------------
 * A value read once, says the IR of its producer's line: its one read in
 * the IR is a last use, on a line whose two pe_mul disagree (so only the
 * producer's fact releases it).  The program reads it again: the value
 * comes back, and in the next round, read first where the IR says nothing,
 * it is not released (the producer's line marks nothing read once now). */
#define ONCE_A 300     /* a = pe_exp(x)                                   */
#define ONCE_B 310     /* b = pe_mul(a, 2.0f), c = pe_mul(x, 3.0f)   kill a; the read of a below is not in the IR */

static void test_read_once_the_program_contradicts(void **state)
{
    (void)state;
    static float h[N], out[N];
    for (int i = 0; i < N; i++) h[i] = (float)i / N;
    pe_array x = pe_f32_1d(h, N);
    uint64_t before = ir_releases();
    for (int round = 0; round < 2; round++) {
#line ONCE_A
        pe_array a = pe_exp(x);
#line 130
        pe_array b, c;
        if (round == 0) {
#line ONCE_B
            b = pe_mul(a, 2.0f), c = pe_mul(x, 3.0f);
#line 135
        } else { /* a line the IR does not know reads it: released there, were the producer's fact still on */
            b = pe_mul(a, 2.0f);
            c = pe_mul(x, 3.0f);
        }
        assert_int_equal(ir_releases() - before, 1); /* a, in the first round only */
        pe_array d = pe_add(pe_add(a, b), c);
        assert_int_equal(pe_read(d, out, sizeof out), PE_OK);
        for (int i = 0; i < N; i++)
            assert_true(fabsf(out[i] - (3.0f * expf(h[i]) + 3.0f * h[i])) <= 1e-6f * out[i]);
        pe_release(a), pe_release(b), pe_release(c), pe_release(d);
    }
    pe_release(x);
    tu_expect_no_error();
}

/* ---------------------------------------------------------------- units */

static pe_ir_request request(int64_t line, int64_t column, const char *api, const char *op, int64_t region,
                             const char *result, pe_ir_arg *args, uint32_t n)
{
    return (pe_ir_request){line, column, 0, (char *)api, (char *)op, region, (char *)result, args, n};
}

static void register_function(pe_ir_function *fn)
{
    pe_ir_unit u = {(char *)__FILE__, "forged", fn, 1};
    size_t len;
    uint8_t *blob = pe_ir_encode(&u, &len);
    assert_non_null(blob);
    pe__register_ir(blob, len);
    free(blob);
}

static void register_forged_units(void)
{
    /* the loop: every variable argument marked as its last use */
    static pe_ir_region loop_regions[2] = {{PE_REGION_FUNCTION, PE_LOOP_NONE, -1, 1, 1, 999, 1, false, NULL, 0},
                                           {PE_REGION_LOOP, PE_LOOP_FOR, 0, 50, 5, 61, 5, false, NULL, 0}};
    static pe_ir_arg mul_x[2] = {{PE_ARG_VARIABLE, "x", 0, -1, true}, {PE_ARG_LITERAL, "0.5f", 0.5, -1, false}};
    static pe_ir_arg exp_mul[1] = {{PE_ARG_REQUEST, "pe_mul(x, 0.5f)", 0, 1, false}};
    static pe_ir_arg add_ex[2] = {{PE_ARG_VARIABLE, "e", 0, -1, true}, {PE_ARG_VARIABLE, "x", 0, -1, true}};
    static pe_ir_arg read_m[2] = {{PE_ARG_VARIABLE, "m", 0, -1, true}, {PE_ARG_OTHER, "out", 0, -1, false}};
    static pe_ir_arg release_m[1] = {{PE_ARG_VARIABLE, "m", 0, -1, true}};
    static pe_ir_arg release_x[1] = {{PE_ARG_VARIABLE, "x", 0, -1, true}};
    static pe_ir_request loop[7];
    loop[0] = request(LOOP_X, 19, "pe_f32_1d_at", "", 0, "x", NULL, 0);
    loop[1] = request(LOOP_E, 29, "pe_mul_at", "mul", 1, "", mul_x, 2);
    loop[2] = request(LOOP_E, 23, "pe_exp_at", "exp", 1, "e", exp_mul, 1);
    loop[3] = request(LOOP_M, 23, "pe_add_at", "add", 1, "m", add_ex, 2);
    loop[4] = request(LOOP_READ, 26, "pe_read_at", "", 1, "", read_m, 2);
    loop[5] = request(LOOP_REL, 9, "pe_release_at", "", 1, "", release_m, 1);
    loop[6] = request(LOOP_END, 5, "pe_release_at", "", 0, "", release_x, 1);
    static pe_ir_function loop_fn = {"test_marks_the_ir_contradicts", 40, loop_regions, 2, loop, 7};
    register_function(&loop_fn);

    /* the reads the marks contradict are missing */
    static pe_ir_region body[1] = {{PE_REGION_FUNCTION, PE_LOOP_NONE, -1, 1, 1, 999, 1, false, NULL, 0}};
    static pe_ir_arg exp_a[1] = {{PE_ARG_VARIABLE, "a", 0, -1, true}};
    static pe_ir_arg sin_t[1] = {{PE_ARG_VARIABLE, "t", 0, -1, true}};
    static pe_ir_arg read_w[2] = {{PE_ARG_VARIABLE, "w", 0, -1, true}, {PE_ARG_OTHER, "w_out", 0, -1, false}};
    static pe_ir_request lost[3];
    lost[0] = request(LOST_B, 18, "pe_exp_at", "exp", 0, "b", exp_a, 1);
    lost[1] = request(LOST_U, 18, "pe_sin_at", "sin", 0, "u", sin_t, 1);
    lost[2] = request(LOST_READ, 22, "pe_read_at", "", 0, "", read_w, 2);
    static pe_ir_function lost_fn = {"test_marks_the_program_contradicts", 70, body, 1, lost, 3};
    register_function(&lost_fn);

    /* a value read once: a's one read is a last use, on a line of two pe_mul */
    static pe_ir_arg exp_x[1] = {{PE_ARG_VARIABLE, "x", 0, -1, false}};
    static pe_ir_arg mul_a[2] = {{PE_ARG_VARIABLE, "a", 0, -1, true}, {PE_ARG_LITERAL, "2.0f", 2.0, -1, false}};
    static pe_ir_arg mul_x3[2] = {{PE_ARG_VARIABLE, "x", 0, -1, false}, {PE_ARG_LITERAL, "3.0f", 3.0, -1, false}};
    static pe_ir_request once[3];
    once[0] = request(ONCE_A, 20, "pe_exp_at", "exp", 0, "a", exp_x, 1);
    once[1] = request(ONCE_B, 20, "pe_mul_at", "mul", 0, "b", mul_a, 2);
    once[2] = request(ONCE_B, 44, "pe_mul_at", "mul", 0, "c", mul_x3, 2);
    static pe_ir_function once_fn = {"test_read_once_the_program_contradicts", 170, body, 1, once, 3};
    register_function(&once_fn);
}

int main(void)
{
    setenv("PE_AOT", "0", 1); /* the forged regions are for the recorder, not for the compile ahead */
    register_forged_units();  /* before pe_init, as pecc's constructors do */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_marks_the_ir_contradicts, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_marks_the_program_contradicts, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_read_once_the_program_contradicts, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
