/* test_stream_stores.c — kernels whose outputs outgrow the last-level cache
 * store them past it (kir_kernel.stream_stores: non-temporal stores, a loop
 * over pointers rebased at an aligned element).  PE_STREAM_BYTES lowers the
 * size from which they do, so small arrays take that path here: a head
 * loop up to the first output's 64-byte boundary, the streaming loop, the
 * tail; outputs of several dtypes; a caller's buffer off the boundary (the
 * ordinary loop then).  Oracles: hand-written C loops (exact ops), and the
 * same kernel on an array under the threshold (compiled without streaming)
 * compared bit for bit.  Runs on both executors (the interpreter streams
 * nothing: the counts differ). */
#include "test_util.h"

enum { N = 100003, THRESHOLD = 4096 }; /* odd: a tail after the vector loop */

static float *inputs(unsigned seed, int n)
{
    float *x = malloc((size_t)n * sizeof *x);
    assert_non_null(x);
    srand(seed);
    for (int i = 0; i < n; i++) x[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    return x;
}

/* A triad read into a 64-byte aligned buffer and into one 4 bytes past a
 * boundary (the head loop runs 15 elements): both equal to the C loop. */
static void test_triad_streams_into_aligned_and_unaligned_buffers(void **state)
{
    (void)state;
    float *a = inputs(1, N), *b = inputs(2, N), *c = inputs(3, N);
    float *block = aligned_alloc(64, (N + 64) / 16 * 64); /* C11: the size a multiple of the alignment */
    assert_non_null(block);
    pe_array pa = pe_f32_1d(a, N), pb = pe_f32_1d(b, N), pc = pe_f32_1d(c, N);
    for (int shift = 0; shift < 2; shift++) {
        float *out = block + shift;
        pe_stats s0 = tu_stats();
        pe_array r = pe_add(pe_mul(pa, pb), pc);
        assert_int_equal(pe_read_release(r, out, N * sizeof *out), PE_OK);
        for (int i = 0; i < N; i++)
            if (out[i] != a[i] * b[i] + c[i]) fail_msg("shift %d, element %d: %.9g != %.9g", shift, i, out[i], a[i] * b[i] + c[i]);
        if (!tu_on_interpreter()) assert_int_equal(tu_stats().streaming_launches, s0.streaming_launches + 1);
    }
    pe_release(pa), pe_release(pb), pe_release(pc);
    free(a), free(b), free(c), free(block);
}

/* One kernel storing f32, f64, i32 and bool outputs: each read, the first
 * into a buffer off the boundary (the outputs then disagree on alignment
 * and the ordinary loop stores), then again all into PE's own buffers. */
static void test_outputs_of_every_width(void **state)
{
    (void)state;
    float *a = inputs(4, N), *b = inputs(5, N);
    float *y = aligned_alloc(64, (N + 16) / 16 * 64);
    double *z = malloc(N * sizeof *z);
    int32_t *w = malloc(N * sizeof *w);
    uint8_t *m = malloc(N);
    assert_true(y && z && w && m);
    pe_array pa = pe_f32_1d(a, N), pb = pe_f32_1d(b, N);
    for (int round = 0; round < 2; round++) {
        pe_stats s0 = tu_stats();
        pe_array py = pe_mul(pa, pb);
        pe_array pz = pe_add(pe_cast(pa, PE_F64), 1.0);
        pe_array pw = pe_cast(pe_mul(pb, 100.0f), PE_I32);
        pe_array pm = pe_gt(pa, pb);
        if (round == 1) pe_hint_read(py), pe_hint_read(pz), pe_hint_read(pw), pe_hint_read(pm); /* all stored by PE */
        assert_int_equal(pe_read_release(py, y + 1 - round, N * sizeof *y), PE_OK);
        assert_int_equal(pe_read_release(pz, z, N * sizeof *z), PE_OK);
        assert_int_equal(pe_read_release(pw, w, N * sizeof *w), PE_OK);
        assert_int_equal(pe_read_release(pm, m, N), PE_OK);
        for (int i = 0; i < N; i++) {
            if (y[i + 1 - round] != a[i] * b[i]) fail_msg("round %d: y[%d] = %.9g", round, i, y[i + 1 - round]);
            if (z[i] != (double)a[i] + 1.0) fail_msg("round %d: z[%d] = %.17g", round, i, z[i]);
            if (w[i] != (int32_t)(b[i] * 100.0f)) fail_msg("round %d: w[%d] = %d", round, i, w[i]);
            if (m[i] != (a[i] > b[i])) fail_msg("round %d: m[%d] = %d", round, i, m[i]);
        }
        if (!tu_on_interpreter()) assert_true(tu_stats().streaming_launches > s0.streaming_launches);
    }
    pe_release(pa), pe_release(pb);
    free(a), free(b), free(y), free(z), free(w), free(m);
}

/* exp and cdf_norm through the vectorised primitives: the streaming kernel
 * gives bitwise what the same kernel gives on an array under the threshold
 * (no streaming there), element by element. */
static void test_same_bits_as_the_ordinary_kernel(void **state)
{
    (void)state;
    enum { SMALL = THRESHOLD / 16 }; /* two f32 outputs: 512 bytes, under THRESHOLD */
    float *a = inputs(6, N), *big_e = malloc(N * sizeof *big_e), *big_c = malloc(N * sizeof *big_c);
    float small_e[SMALL], small_c[SMALL];
    assert_true(big_e && big_c);
    pe_stats s0 = tu_stats();
    pe_array pa = pe_f32_1d(a, N), ps = pe_f32_1d(a + 1000, SMALL);
    pe_array e1 = pe_exp(pa), c1 = pe_cdf_norm(pe_mul(pa, 0.5f));
    assert_int_equal(pe_read_release(e1, big_e, N * sizeof *big_e), PE_OK);
    assert_int_equal(pe_read_release(c1, big_c, N * sizeof *big_c), PE_OK);
    pe_stats s1 = tu_stats();
    pe_array e2 = pe_exp(ps), c2 = pe_cdf_norm(pe_mul(ps, 0.5f));
    assert_int_equal(pe_read_release(e2, small_e, sizeof small_e), PE_OK);
    assert_int_equal(pe_read_release(c2, small_c, sizeof small_c), PE_OK);
    if (!tu_on_interpreter()) {
        assert_true(s1.streaming_launches > s0.streaming_launches);
        assert_int_equal(tu_stats().streaming_launches, s1.streaming_launches); /* under the threshold: ordinary */
    }
    for (int i = 0; i < SMALL; i++) {
        if (memcmp(&small_e[i], &big_e[1000 + i], sizeof(float)) != 0) fail_msg("exp, element %d differs", i);
        if (memcmp(&small_c[i], &big_c[1000 + i], sizeof(float)) != 0) fail_msg("cdf_norm, element %d differs", i);
    }
    for (int i = 0; i < N; i++) /* and near libm's */
        if (fabsf(big_e[i] - expf(a[i])) > 4e-7f * expf(a[i])) fail_msg("exp(%.9g) = %.9g", a[i], big_e[i]);
    pe_release(pa), pe_release(ps);
    free(a), free(big_e), free(big_c);
}

/* A kernel reading a view or reducing does not stream (kir_streamable):
 * its values are right and it counts no streaming launch. */
static void test_views_and_reductions_do_not_stream(void **state)
{
    (void)state;
    enum { R = 300, C = 400 };
    float *a = inputs(7, R * C), *t = malloc(R * C * sizeof *t), total;
    assert_non_null(t);
    int64_t shape[2] = {R, C};
    pe_array pa = pe_from_host(PE_F32, 2, shape, a);
    pe_stats s0 = tu_stats();
    assert_int_equal(pe_read_release(pe_add(pe_transpose(pa), 1.0f), t, R * C * sizeof *t), PE_OK);
    assert_int_equal(pe_read_release(pe_max(pe_mul(pa, pa)), &total, sizeof total), PE_OK);
    for (int i = 0; i < C; i++)
        for (int j = 0; j < R; j++)
            if (t[i * R + j] != a[j * C + i] + 1.0f) fail_msg("t[%d][%d] = %.9g", i, j, t[i * R + j]);
    float best = -INFINITY;
    for (int i = 0; i < R * C; i++) best = fmaxf(best, a[i] * a[i]);
    assert_true(total == best);
    if (!tu_on_interpreter()) assert_int_equal(tu_stats().streaming_launches, s0.streaming_launches);
    pe_release(pa);
    free(a), free(t);
}

int main(void)
{
    char threshold[16];
    snprintf(threshold, sizeof threshold, "%d", THRESHOLD);
    setenv("PE_STREAM_BYTES", threshold, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_triad_streams_into_aligned_and_unaligned_buffers, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_outputs_of_every_width, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_same_bits_as_the_ordinary_kernel, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_views_and_reductions_do_not_stream, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
