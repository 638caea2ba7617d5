/* test_rng.c — random numbers (pe_rng_*): the Philox block function against
 * the Random123 known-answer vectors; every draw's elements against that
 * block function through the counter mapping of irformat/philox.h, on the
 * executor of the run (ctest runs the JIT and the interpreter); the CPU JIT
 * bitwise equal to the interpreter for every dtype and PE_THREADS 1, 2, 3;
 * streams (draws advance, seeds differ, a draw is independent of earlier
 * draws' shapes); generation fused into its consumers (no random array
 * stored) and one compiled program for every seed and draw (trace cache
 * hits); moments and a chi-square of 10^8 draws in 1024 bins; bad input
 * errors naming the line. */
#include "test_util.h"

#include "exec/base/runtime.h"
#include "irformat/philox.h"
#include "jit/api/api_rng.h"

/* `test_rng gpu`: the draws on the CUDA executor (a GPU, or the host
 * emulation of the driver), whose log and cos are CUDA's: normal draws
 * within GPU_NORMAL_ULPS of the definition, uniform ones bitwise. */
static bool gpu_mode;
#define GPU_NORMAL_ULPS_F64 8.0
#define GPU_NORMAL_ULPS_F32 1.0

static int gpu_setup(void **state)
{
    if (tu_setup(state) != 0) return -1;
    return pe_set_device(1) == PE_OK ? 0 : -1;
}

static bool on_interpreter(void)
{
    const char *e = getenv("PE_EXECUTOR");
    return e && strcmp(e, "interp") == 0;
}

/* --------------------------------------------------- the block function */

/* Random123's kat_vectors for philox4x32 (counter[4] key[2] -> out[4]). */
static const struct {
    int rounds;
    uint32_t ctr[4], key[2], out[4];
} kat[] = {
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {10, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {10, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
    {7, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
    {7, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
};

static void test_philox_known_answers(void **state)
{
    (void)state;
    for (size_t v = 0; v < sizeof kat / sizeof kat[0]; v++) {
        uint32_t w[4];
        memcpy(w, kat[v].ctr, sizeof w);
        pe_philox4x32(w, kat[v].key[0], kat[v].key[1], kat[v].rounds);
        for (int j = 0; j < 4; j++)
            if (w[j] != kat[v].out[j])
                fail_msg("vector %zu word %d: %08x, want %08x", v, j, (unsigned)w[j], (unsigned)kat[v].out[j]);
    }
}

/* ------------------------------------------------------------ the draws */

/* Element i of a draw, from the block function (the test's oracle). */
static double expected(int kind, uint64_t seed, uint32_t draw, bool normal, pe_dtype t, uint64_t i)
{
    uint32_t w[4];
    pe_philox_element(w, (uint32_t)seed, (uint32_t)(seed >> 32), draw, i, kind == PE_RNG_FAST ? 7 : 10);
    if (normal) return t == PE_F32 ? (double)(float)pe_philox_normal(w) : pe_philox_normal(w);
    return pe_philox_uniform(w, t != PE_I32, t == PE_F64 ? 8 : 4);
}

/* The API's first element is the known answer itself: seed 0 is key (0, 0),
 * draw 0 element 0 is counter (0, 0, 0, 0). */
static void test_first_element_is_the_known_answer(void **state)
{
    (void)state;
    int64_t n = 3;
    pe_rng r = pe_rng_create(PE_RNG_PHILOX, 0), f = pe_rng_create(PE_RNG_FAST, 0);
    int32_t got[3], fast[3];
    assert_int_equal(pe_read(pe_rng_uniform(r, PE_I32, 1, &n), got, sizeof got), PE_OK);
    assert_int_equal(pe_read(pe_rng_uniform(f, PE_I32, 1, &n), fast, sizeof fast), PE_OK);
    assert_int_equal((uint32_t)got[0], 0x6627e8d5u);
    assert_int_equal((uint32_t)fast[0], 0x5f6fb709u);
    uint32_t w[4] = {1, 0, 0, 0}; /* element 1: counter (1, 0, 0, 0) */
    pe_philox4x32(w, 0, 0, 10);
    assert_int_equal((uint32_t)got[1], w[0]);
    pe_rng_destroy(r);
    pe_rng_destroy(f);
    tu_expect_no_error();
}

typedef struct {
    bool normal;
    pe_dtype t;
} draw_kind;

static const draw_kind draw_kinds[] = {
    {false, PE_F32}, {false, PE_F64}, {false, PE_I32}, {true, PE_F32}, {true, PE_F64},
};

/* Every element of draws of every kind, both generators, a 2-D shape over
 * several reduction chunks' worth of elements and a seed using both key
 * words: bitwise the block function's, on this run's executor. */
static void test_draws_match_the_counter_mapping(void **state)
{
    (void)state;
    const uint64_t seed = 0x0123456789abcdefull;
    int64_t shape[2] = {37, 1001}, n = shape[0] * shape[1];
    for (int kind = PE_RNG_PHILOX; kind <= PE_RNG_FAST; kind++) {
        pe_rng r = pe_rng_create(kind, seed);
        for (size_t d = 0; d < sizeof draw_kinds / sizeof draw_kinds[0]; d++) {
            const draw_kind *dk = &draw_kinds[d];
            pe_array a = dk->normal ? pe_rng_normal(r, dk->t, 2, shape) : pe_rng_uniform(r, dk->t, 2, shape);
            double *v = tu_read_as_f64(a, NULL);
            for (int64_t i = 0; i < n; i++) {
                double want = expected(kind, seed, (uint32_t)d, dk->normal, dk->t, (uint64_t)i);
                if (gpu_mode && dk->normal && tu_ulps_at(v[i], want, dk->t) <= (dk->t == PE_F32 ? GPU_NORMAL_ULPS_F32 : GPU_NORMAL_ULPS_F64))
                    continue;
                if (!tu_same_value(v[i], want))
                    fail_msg("kind %d draw %zu element %lld: %.17g, want %.17g", kind, d, (long long)i, v[i], want);
                if (!dk->normal && dk->t != PE_I32) assert_true(v[i] >= 0 && v[i] < 1);
            }
            free(v);
            pe_release(a);
        }
        pe_rng_destroy(r);
    }
    if (gpu_mode) {
        pe_stats st;
        pe_get_stats(&st);
        assert_true(st.gpu_batches >= 10); /* the draws ran on the GPU */
    }
    tu_expect_no_error();
}

/* Draw k's elements depend on (seed, k, i) only: the shapes of earlier
 * draws do not matter, equal seeds give equal streams, other seeds and
 * other draws other values. */
static void test_streams(void **state)
{
    (void)state;
    int64_t small = 5, big = 100000, n = 64;
    pe_rng a = pe_rng_create(PE_RNG_PHILOX, 42), b = pe_rng_create(PE_RNG_PHILOX, 42);
    pe_rng c = pe_rng_create(PE_RNG_PHILOX, 43), d = pe_rng_create(PE_RNG_PHILOX, 42ull << 32);
    pe_release(pe_rng_uniform(a, PE_F32, 1, &small));
    pe_release(pe_rng_normal(b, PE_F64, 1, &big)); /* another shape and dtype: draw 0 either way */
    pe_release(pe_rng_uniform(c, PE_F32, 1, &small));
    pe_release(pe_rng_uniform(d, PE_F32, 1, &small));
    int32_t va[64], vb[64], vc[64], vd[64], va2[64];
    assert_int_equal(pe_read(pe_rng_uniform(a, PE_I32, 1, &n), va, sizeof va), PE_OK);
    assert_int_equal(pe_read(pe_rng_uniform(b, PE_I32, 1, &n), vb, sizeof vb), PE_OK);
    assert_int_equal(pe_read(pe_rng_uniform(c, PE_I32, 1, &n), vc, sizeof vc), PE_OK);
    assert_int_equal(pe_read(pe_rng_uniform(d, PE_I32, 1, &n), vd, sizeof vd), PE_OK);
    assert_int_equal(pe_read(pe_rng_uniform(a, PE_I32, 1, &n), va2, sizeof va2), PE_OK);
    assert_memory_equal(va, vb, sizeof va);
    int same_c = 0, same_d = 0, same_next = 0;
    for (int i = 0; i < 64; i++) {
        same_c += va[i] == vc[i], same_d += va[i] == vd[i], same_next += va[i] == va2[i];
        assert_int_equal(va[i], (int32_t)expected(PE_RNG_PHILOX, 42, 1, false, PE_I32, (uint64_t)i));
    }
    assert_true(same_c < 2 && same_d < 2 && same_next < 2);
    pe_rng_destroy(a), pe_rng_destroy(b), pe_rng_destroy(c), pe_rng_destroy(d);
    tu_expect_no_error();
}

/* -------------------------------------------- kernels, caches, executors */

/* pe_sum(u < 0.5) is one kernel that stores nothing, and a loop drawing
 * each iteration reuses one program sequence and one compiled kernel. */
static void test_fused_and_compiled_once(void **state)
{
    (void)state;
    if (on_interpreter()) skip();
    int64_t n = 1 << 20;
    pe_rng r = pe_rng_create(PE_RNG_PHILOX, 7);
    pe_stats s0, s1, s2;
    double count[21];
    for (int k = 0; k < 21; k++) {
        if (k == 0) pe_get_stats(&s0);
        assert_int_equal(pe_read_f64(pe_sum(pe_lt(pe_rng_uniform(r, PE_F32, 1, &n), 0.5f)), &count[k]), PE_OK);
        if (k == 0) {
            pe_get_stats(&s1);
            assert_int_equal(s1.kernels_launched - s0.kernels_launched, 1);
            assert_int_equal(s1.kernel_outputs - s0.kernel_outputs, 0); /* no random array stored */
            assert_int_equal(s1.ops_interpreted - s0.ops_interpreted, 0);
        }
    }
    pe_get_stats(&s2);
    assert_int_equal(s2.kernels_compiled, s1.kernels_compiled);   /* nothing compiled again */
    assert_int_equal(s2.trace_hits - s1.trace_hits, 20);         /* every batch a hit */
    assert_int_equal(s2.kernel_outputs, s1.kernel_outputs);
    /* each draw its own values: about n/2 each, and not all equal */
    int differ = 0;
    for (int k = 0; k < 21; k++) {
        assert_true(fabs(count[k] - n / 2.0) < 6 * sqrt(n / 4.0));
        differ += count[k] != count[0];
    }
    assert_true(differ >= 18);
    pe_rng_destroy(r);
    tu_expect_no_error();
}

/* The same draws and fused consumers (a full sum, sums along the last and
 * an outer axis, element-wise expressions, a draw broadcast, a draw read
 * through a transpose) on the interpreter and on the JIT with 1, 2 and 3
 * threads: bitwise equal. */
#define AGREE_OUTPUTS 10
static void agreement_run(const char *executor, int threads, double *out[AGREE_OUTPUTS], int64_t counts[AGREE_OUTPUTS])
{
    pe_config cfg = {.executor = executor, .threads = threads};
    assert_int_equal(pe_init(&cfg), PE_OK);
    int64_t shape[2] = {5, 40009}; /* more than a reduction chunk per row */
    pe_rng r = pe_rng_create(PE_RNG_PHILOX, 0xfeedfacecafebeefull), f = pe_rng_create(PE_RNG_FAST, 3);
    pe_array outs[AGREE_OUTPUTS];
    outs[0] = pe_rng_uniform(r, PE_F32, 2, shape);
    outs[1] = pe_rng_uniform(r, PE_F64, 2, shape);
    outs[2] = pe_rng_normal(r, PE_F32, 2, shape);
    outs[3] = pe_rng_normal(f, PE_F64, 2, shape);
    outs[4] = pe_sum(pe_rng_normal(r, PE_F64, 2, shape));
    outs[5] = pe_sum_axis(pe_mul(pe_rng_uniform(f, PE_F32, 2, shape), 2.0f), 1);
    outs[6] = pe_add(pe_rng_uniform(r, PE_I32, 2, shape), pe_cast(pe_rng_normal(f, PE_F32, 2, shape), PE_I32));
    int64_t column[2] = {shape[0], 1}, small[2] = {300, 7};
    outs[7] = pe_add(pe_rng_uniform(r, PE_F32, 2, column), pe_rng_normal(r, PE_F32, 2, shape)); /* broadcast */
    outs[8] = pe_sum_axis(pe_rng_normal(f, PE_F64, 2, shape), 0);                                /* an outer axis */
    outs[9] = pe_mul(pe_transpose(pe_rng_uniform(r, PE_F64, 2, small)), 3.0);                     /* through a view */
    for (int k = 0; k < AGREE_OUTPUTS; k++) out[k] = tu_read_as_f64(outs[k], &counts[k]);
    pe_stats st;
    pe_get_stats(&st);
    if (strcmp(executor, "jit") == 0) assert_int_equal(st.ops_interpreted, 0);
    pe_rng_destroy(r), pe_rng_destroy(f);
    pe_shutdown();
    assert_int_equal(st.compile_failures, 0);
}

static void test_executors_agree_bitwise(void **state)
{
    (void)state;
    pe_shutdown(); /* this test makes its own runtimes */
    double *ref[AGREE_OUTPUTS], *got[AGREE_OUTPUTS];
    int64_t nref[AGREE_OUTPUTS], ngot[AGREE_OUTPUTS];
    agreement_run("interp", 1, ref, nref);
    for (int threads = 1; threads <= 3; threads++) {
        agreement_run("jit", threads, got, ngot);
        for (int k = 0; k < AGREE_OUTPUTS; k++) {
            assert_int_equal(ngot[k], nref[k]);
            for (int64_t i = 0; i < nref[k]; i++)
                if (memcmp(&got[k][i], &ref[k][i], sizeof(double)) != 0)
                    fail_msg("threads %d output %d element %lld: JIT %.17g, interpreter %.17g", threads, k,
                             (long long)i, got[k][i], ref[k][i]);
            free(got[k]);
        }
    }
    for (int k = 0; k < AGREE_OUTPUTS; k++) free(ref[k]);
    assert_int_equal(pe_init(NULL), PE_OK); /* for the teardown */
}

/* ------------------------------------------------------------- quality */

static void test_moments(void **state)
{
    (void)state;
    int64_t n = on_interpreter() || gpu_mode ? 1 << 20 : 1 << 24; /* gpu_mode: the host emulation is slow */
    double sd = 1 / sqrt((double)n);
    for (int kind = PE_RNG_PHILOX; kind <= PE_RNG_FAST; kind++) {
        pe_rng r = pe_rng_create(kind, 2024);
        double mean, var, nmean, nvar, m3, m4;
        assert_int_equal(pe_read_f64(pe_mean(pe_rng_uniform(r, PE_F64, 1, &n)), &mean), PE_OK);
        assert_int_equal(pe_read_f64(pe_var(pe_rng_uniform(r, PE_F32, 1, &n)), &var), PE_OK);
        assert_true(fabs(mean - 0.5) < 6 * sd * sqrt(1 / 12.0));
        assert_true(fabs(var - 1 / 12.0) < 6 * sd * sqrt(1 / 180.0)); /* var of (u - 1/2)^2 */
        pe_array z = pe_rng_normal(r, PE_F64, 1, &n); /* read four ways: stored once */
        assert_int_equal(pe_read_f64(pe_mean(z), &nmean), PE_OK);
        assert_int_equal(pe_read_f64(pe_var(z), &nvar), PE_OK);
        assert_int_equal(pe_read_f64(pe_mean(pe_mul(pe_mul(z, z), z)), &m3), PE_OK);
        assert_int_equal(pe_read_f64(pe_mean(pe_mul(pe_mul(z, z), pe_mul(z, z))), &m4), PE_OK);
        assert_true(fabs(nmean) < 6 * sd);
        assert_true(fabs(nvar - 1) < 6 * sd * sqrt(2.0));
        assert_true(fabs(m3) < 6 * sd * sqrt(15.0));
        assert_true(fabs(m4 - 3) < 6 * sd * sqrt(96.0));
        pe_release(z);
        pe_rng_destroy(r);
    }
    tu_expect_no_error();
}

/* 10^8 uniform f32 draws in 1024 equal bins: the kernels compute each
 * draw's bin (no histogram op: the counts are made here from the bins, 10^7
 * at a time); chi-square with 1023 degrees of freedom within 6 of its
 * standard deviations (sqrt(2046)) of 1023.  Both generators. */
static void test_chi_square_1e8(void **state)
{
    (void)state;
    if (on_interpreter()) skip(); /* the interpreter's 10^8 draws: minutes */
    enum { BINS = 1024, CHUNK = 10000000, CHUNKS = 10 };
    int32_t *bins = malloc(sizeof *bins * CHUNK);
    assert_non_null(bins);
    int64_t n = CHUNK;
    for (int kind = PE_RNG_PHILOX; kind <= PE_RNG_FAST; kind++) {
        pe_rng r = pe_rng_create(kind, 99);
        static int64_t count[BINS];
        memset(count, 0, sizeof count);
        for (int c = 0; c < CHUNKS; c++) {
            pe_array b = pe_cast(pe_floor(pe_mul(pe_rng_uniform(r, PE_F32, 1, &n), (float)BINS)), PE_I32);
            assert_int_equal(pe_read_release(b, bins, sizeof *bins * CHUNK), PE_OK);
            for (int64_t i = 0; i < CHUNK; i++) {
                assert_true(bins[i] >= 0 && bins[i] < BINS);
                count[bins[i]]++;
            }
        }
        double e = (double)CHUNK * CHUNKS / BINS, chi2 = 0;
        for (int k = 0; k < BINS; k++) chi2 += (count[k] - e) * (count[k] - e) / e;
        printf("kind %d: chi-square %.1f (1023 degrees of freedom)\n", kind, chi2);
        assert_true(fabs(chi2 - 1023) < 6 * sqrt(2046.0));
        pe_rng_destroy(r);
    }
    free(bins);
    tu_expect_no_error();
}

/* ----------------------------------------------------------- bad input */

static void test_bad_input_names_the_line(void **state)
{
    (void)state;
    int64_t n = 4, bad_shape = -1;
    pe_rng r = pe_rng_create(PE_RNG_PHILOX, 1);
    int line = __LINE__ + 1;
    pe_rng x = pe_rng_create(3, 1);
    tu_expect_error(PE_E_ARG, line);
    assert_true(x.h == 0);
    line = __LINE__ + 1;
    pe_array a = pe_rng_uniform(r, PE_BOOL, 1, &n);
    tu_expect_error(PE_E_TYPE, line);
    assert_int_equal(pe_read(a, NULL, 0), PE_E_INVALID);
    tu_errors_clear();
    line = __LINE__ + 1;
    pe_release(pe_rng_normal(r, PE_I32, 1, &n));
    tu_expect_error(PE_E_TYPE, line);
    line = __LINE__ + 1;
    pe_release(pe_rng_uniform(r, (pe_dtype)77, 1, &n));
    tu_expect_error(PE_E_TYPE, line);
    line = __LINE__ + 1;
    pe_release(pe_rng_uniform(r, PE_F32, 1, &bad_shape));
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    pe_release(pe_rng_normal(r, PE_F32, PE_MAX_RANK + 1, &n));
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    pe_release(pe_rng_uniform((pe_rng){0}, PE_F32, 1, &n));
    tu_expect_error(PE_E_HANDLE, line);
    int destroyed = __LINE__ + 1;
    pe_rng_destroy(r);
    tu_expect_no_error();
    line = __LINE__ + 1;
    pe_release(pe_rng_uniform(r, PE_F32, 1, &n));
    char where[64];
    snprintf(where, sizeof where, "destroyed at %s:%d", __FILE__, destroyed);
    assert_non_null(strstr(tu_errors.message, where));
    tu_expect_error(PE_E_HANDLE, line);
    line = __LINE__ + 1;
    pe_rng_destroy(r);
    tu_expect_error(PE_E_HANDLE, line);
    line = __LINE__ + 1;
    pe_rng_destroy((pe_rng){0x123456789ull});
    tu_expect_error(PE_E_HANDLE, line);
}

/* pe_rng_redraw and pe_rng_replay_operand, what a replay of a recorded
 * draw (a macro) calls: a draw's draw-number operand gives its generator's
 * next number (a new constant in its place) and advances it; the key words
 * are no draw numbers; a destroyed generator is an error. */
static void test_redraw_advances_the_generator(void **state)
{
    (void)state;
    int64_t n = 8;
    pe_rng r = pe_rng_create(PE_RNG_PHILOX, 11);
    pe_array a = pe_rng_uniform(r, PE_I32, 1, &n); /* draw 0, not computed yet: its operands are there */
    const pe_port *p = pe_port_peek(a, NULL);
    assert_non_null(p);
    assert_int_equal(p->op, PE_OP_random_uniform);
    assert_int_equal(p->n_in, 3);
    const pe_port *key = pe_port_at(p->in[0]), *number = pe_port_at(p->in[2]);
    assert_int_equal((int)number->value, 0);
    uint32_t d = 99;
    assert_false(pe_rng_redraw(NULL, key, &d));
    assert_true(pe_rng_redraw(NULL, number, &d)); /* the replay's draw: number 1 */
    assert_int_equal(d, 1);
    int32_t v[8];
    assert_int_equal(pe_read(pe_rng_uniform(r, PE_I32, 1, &n), v, sizeof v), PE_OK); /* so this one is draw 2 */
    for (int i = 0; i < 8; i++) assert_int_equal(v[i], (int32_t)expected(PE_RNG_PHILOX, 11, 2, false, PE_I32, (uint64_t)i));
    pe_array b = pe_rng_uniform(r, PE_F32, 1, &n); /* draw 3 */
    const pe_port *pb = pe_port_peek(b, NULL);
    const pe_port *number_b = pe_port_at(pb->in[2]);
    int guard = pe_api_lock(); /* as a replay inside the runtime holds it */
    assert_int_equal(pe_rng_replay_operand(NULL, pb->in[0]), pb->in[0]); /* a key word: itself */
    uint32_t fresh = pe_rng_replay_operand(NULL, pb->in[2]);              /* the draw number: draw 4's */
    assert_true(fresh != pb->in[2] && fresh != UINT32_MAX);
    assert_int_equal((int)pe_port_at(fresh)->value, 4);
    assert_true(pe_port_at(fresh)->unshared);
    assert_true(pe_rng_redraw(NULL, pe_port_at(fresh), &d)); /* it names the generator too */
    assert_int_equal(d, 5);
    pe_port_maybe_free(fresh);
    pe_api_unlock(&guard);
    pe_rng_destroy(r);
    int line = __LINE__ + 1;
    assert_false(pe_rng_redraw(PE_HERE, number_b, &d));
    tu_expect_error(PE_E_HANDLE, line);
    pe_release(a);
    pe_release(b);
}

/* A handle from an earlier runtime is stale in the next. */
static void test_handles_do_not_survive_shutdown(void **state)
{
    (void)state;
    int64_t n = 2;
    pe_rng r = pe_rng_create(PE_RNG_FAST, 5);
    pe_shutdown();
    assert_int_equal(pe_init(NULL), PE_OK);
    int line = __LINE__ + 1;
    pe_release(pe_rng_uniform(r, PE_F32, 1, &n));
    tu_expect_error(PE_E_HANDLE, line);
}

/* A draw inside a PE_MACRO body advances on every replay (spec): three
 * executions of a section adding a uniform draw to its input give the first
 * three draws of the same seed made plainly, bitwise, while the body ran
 * once and the other two were replays. */
static void test_draws_in_a_section_advance_on_every_replay(void **state)
{
    (void)state;
    enum { N = 64, TIMES = 3 };
    int64_t n = N;
    float got[TIMES][N], want[N];
    int body_runs = 0;
    pe_stats before, after;
    pe_get_stats(&before);
    pe_rng r = pe_rng_create(PE_RNG_PHILOX, 0x1234567890abcdefULL);
    pe_array x = pe_fill(PE_F32, 1, &n, 1.0);
    for (int k = 0; k < TIMES; k++) {
        pe_array ins[1] = {x}, outs[1];
        PE_MACRO(draw_and_add, ins, 1, outs, 1, NULL, 0)
        {
            body_runs++;
            outs[0] = pe_add(ins[0], pe_rng_uniform(r, PE_F32, 1, &n));
        }
        assert_int_equal(pe_read(outs[0], got[k], sizeof got[k]), PE_OK);
        pe_release(outs[0]);
    }
    pe_get_stats(&after);
    assert_int_equal(body_runs, 1);
    assert_int_equal(after.macro_hits - before.macro_hits, TIMES - 1);
    pe_rng plain = pe_rng_create(PE_RNG_PHILOX, 0x1234567890abcdefULL);
    for (int k = 0; k < TIMES; k++) {
        pe_scope scope = pe_scope_begin();
        assert_int_equal(pe_read(pe_add(x, pe_rng_uniform(plain, PE_F32, 1, &n)), want, sizeof want), PE_OK);
        pe_scope_end(scope);
        assert_memory_equal(got[k], want, sizeof want);
    }
    assert_true(memcmp(got[0], got[1], sizeof got[0]) != 0);
    pe_rng_destroy(r), pe_rng_destroy(plain);
    pe_release(x);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "gpu") == 0) {
        gpu_mode = true;
        pe_push_error_handler(tu_record_error, NULL);
        if (pe_init(NULL) != PE_OK) return 1;
        int devices = pe_device_count();
        pe_shutdown();
        pe_pop_error_handler();
        if (devices < 2) {
            fprintf(stderr, "skipped: no CUDA device\n");
            return 77;
        }
        const struct CMUnitTest gpu_tests[] = {
            cmocka_unit_test_setup_teardown(test_first_element_is_the_known_answer, gpu_setup, tu_teardown),
            cmocka_unit_test_setup_teardown(test_draws_match_the_counter_mapping, gpu_setup, tu_teardown),
            cmocka_unit_test_setup_teardown(test_streams, gpu_setup, tu_teardown),
            cmocka_unit_test_setup_teardown(test_moments, gpu_setup, tu_teardown),
        };
        return cmocka_run_group_tests(gpu_tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test_setup_teardown(test_first_element_is_the_known_answer, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_draws_match_the_counter_mapping, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_streams, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_fused_and_compiled_once, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_executors_agree_bitwise, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_moments, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_chi_square_1e8, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_bad_input_names_the_line, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_redraw_advances_the_generator, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_handles_do_not_survive_shutdown, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_draws_in_a_section_advance_on_every_replay, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
