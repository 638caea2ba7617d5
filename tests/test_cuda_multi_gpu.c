/* test_cuda_multi_gpu.c — the CUDA executor on two GPUs (ctest label `gpu`;
 * exit 77 with fewer than two): pe_set_device starts and picks each GPU,
 * values move from one GPU to the other where a batch needs them, the
 * automatic choice follows the data, kernels are compiled and loaded per
 * device.  Values against plain C loops; which GPU ran a kernel from the
 * host emulation's counters (tests/emul, PE_EMUL_CUDA_DEVICES=90,86: the
 * second device is an sm_86 with slow f64), where it runs. */
#include "test_util.h"

#include "emul/emul_checks.h"

#define N (1 << 19)

static float x[N], out[N];

/* on the emulated driver (tests/emul): kernels run per device, misuses */
static bool emulated;

static long ran_on(int device) { return tu_emul_kernels_run(device); }

static char cache_dir[64];

static void start(void)
{
    setenv("PE_AOT", "0", 1); /* compiles here count kernels per device: none compiled ahead */
    strcpy(cache_dir, "/tmp/pe-test-multi-gpu-XXXXXX");
    assert_non_null(mkdtemp(cache_dir)); /* nothing compiled before */
    /* two CPU threads: what automatic placement weighs the GPUs against */
    assert_int_equal(pe_init(&(pe_config){.device = 2, .threads = 2, .cache_dir = cache_dir}), PE_OK);
    emulated = tu_emul_kernels_run(0) >= 0;
    tu_errors_clear();
}

static void stop(void)
{
    pe_shutdown();
    if (emulated) assert_int_equal(tu_emul_misuses(), 0);
    tu_remove_dir(cache_dir);
}

static void fill_x(void)
{
    for (int i = 0; i < N; i++) x[i] = (float)((i % 1013) - 500) / 250.0f;
}

static uint64_t gpu_batches(void)
{
    pe_stats s;
    pe_get_stats(&s);
    return s.gpu_batches;
}

static void test_both_gpus_are_listed(void **state)
{
    (void)state;
    assert_true(pe_device_count() >= 3);
    for (int dev = 1; dev <= 2; dev++) {
        pe_device_info info;
        assert_int_equal(pe_device_info(dev, &info), PE_OK);
        assert_int_equal(info.kind, PE_DEVICE_CUDA);
        assert_true(strncmp(info.arch, "sm_", 3) == 0);
        printf("device %d: %s, %s, %d SMs\n", dev, info.name, info.arch, info.cores);
    }
}

/* pe_set_device(2) starts the second GPU; each computes what it is given. */
static void test_each_gpu_computes_what_it_is_given(void **state)
{
    (void)state;
    fill_x();
    start();
    long before0 = ran_on(0), before1 = ran_on(1);
    assert_int_equal(pe_set_device(1), PE_OK);
    pe_array a = pe_f32_1d(x, N), y0 = pe_add(pe_mul(pe_exp(a), 2.0f), 1.0f);
    pe_sync();
    long after0 = ran_on(0);
    assert_int_equal(pe_set_device(2), PE_OK);
    pe_array y1 = pe_mul(pe_sin(a), 3.0f);
    pe_sync();
    assert_int_equal(ran_on(0), after0); /* the second batch went to the second GPU */
    if (emulated) assert_true(after0 > before0 && ran_on(1) > before1);
    assert_int_equal(gpu_batches(), 2);
    assert_int_equal(pe_read(y0, out, sizeof out), PE_OK);
    for (int i = 0; i < N; i++) assert_true(tu_ulps_f32(out[i], (float)(exp((double)x[i]) * 2 + 1)) <= 4);
    assert_int_equal(pe_read(y1, out, sizeof out), PE_OK);
    for (int i = 0; i < N; i++) assert_true(tu_ulps_f32(out[i], (float)(sin((double)x[i]) * 3)) <= 4);
    pe_release(a), pe_release(y0), pe_release(y1);
    tu_expect_no_error();
    stop();
}

/* Values computed on one GPU feed batches on the other, back and forth,
 * never read in between: each moves to the GPU that needs it once that GPU
 * computed it (the emulation's random pauses make a missing wait show). */
static void test_values_move_between_gpus(void **state)
{
    (void)state;
    fill_x();
    start();
    static double a_ref[N], b_ref[N];
    pe_array a = pe_f32_1d(x, N);
    double sum = 0;
    for (int i = 0; i < N; i++) a_ref[i] = (double)x[i];
    const int rounds = 6;
    for (int round = 0; round < rounds; round++) {
        /* odd rounds on the second GPU: a moves there and back */
        assert_int_equal(pe_set_device(1 + round % 2), PE_OK);
        pe_array m = pe_mean(a), b = pe_add(pe_mul(a, 0.5f), m);
        pe_release(m);
        pe_release(a);
        a = b;
        sum = 0;
        for (int i = 0; i < N; i++) sum += a_ref[i];
        for (int i = 0; i < N; i++) b_ref[i] = a_ref[i] * 0.5 + sum / N;
        memcpy(a_ref, b_ref, sizeof a_ref);
    } /* each pe_set_device ends a batch, which ends without waiting for its GPU */
    pe_sync();
    pe_stats s;
    pe_get_stats(&s);
    assert_int_equal(s.gpu_batches, rounds);
    assert_true(s.bytes_between_devices >= (uint64_t)(rounds - 1) * N * sizeof(float));
    assert_int_equal(pe_read(a, out, sizeof out), PE_OK);
    for (int i = 0; i < N; i++) assert_float_equal(out[i], a_ref[i], 1e-5 * (1 + fabs(a_ref[i])));
    pe_release(a);
    tu_expect_no_error();
    stop();
}

/* Automatic: a batch goes to the GPU that holds its inputs (copying them
 * costs more than the launch); f64 work heavy enough goes to a GPU good at
 * f64 although its inputs are on another (on the emulation, the first: the
 * second is slow at f64), light f64 work stays with its inputs. */
static void test_automatic_choice_follows_the_data(void **state)
{
    (void)state;
    fill_x();
    start();
    assert_int_equal(pe_set_device(2), PE_OK);
    pe_array a = pe_f32_1d(x, N), b = pe_mul(a, 2.0f);
    pe_sync(); /* b on the second GPU */
    assert_int_equal(pe_set_device(-1), PE_OK);
    long before0 = ran_on(0), before1 = ran_on(1);
    uint64_t batches = gpu_batches();
    pe_array c = pe_add(b, 1.0f);
    pe_sync();
    assert_int_equal(gpu_batches(), batches + 1);
    if (emulated) assert_true(ran_on(0) == before0 && ran_on(1) > before1);
    assert_int_equal(pe_read(c, out, sizeof out), PE_OK);
    for (int i = 0; i < N; i++) assert_true(out[i] == x[i] * 2.0f + 1.0f);

    pe_device_info info;
    assert_int_equal(pe_device_info(2, &info), PE_OK);
    if (emulated && strcmp(info.arch, "sm_86") == 0) { /* the emulation's consumer part */
        long on0 = ran_on(0);
        pe_array light = pe_add(pe_cast(b, PE_F64), 0.25);
        pe_sync();
        assert_int_equal(ran_on(1), before1 + 2); /* c's kernel, light's */
        assert_int_equal(ran_on(0), on0);
        pe_array heavy = pe_exp(pe_sin(pe_cos(pe_cast(b, PE_F64))));
        pe_sync();
        assert_int_equal(ran_on(1), before1 + 2);
        assert_int_equal(ran_on(0), on0 + 1);
        double *got = malloc(N * sizeof *got);
        assert_int_equal(pe_read(heavy, got, N * sizeof *got), PE_OK);
        for (int i = 0; i < N; i++) {
            double want = exp(sin(cos((double)(x[i] * 2.0f))));
            assert_true(fabs(got[i] - want) <= 1e-14 * want);
        }
        assert_int_equal(pe_read(light, got, N * sizeof *got), PE_OK);
        for (int i = 0; i < N; i++) assert_true(got[i] == (double)(x[i] * 2.0f) + 0.25);
        free(got);
        pe_release(heavy), pe_release(light);
    }
    pe_release(a), pe_release(b), pe_release(c);
    tu_expect_no_error();
    stop();
}

/* Automatic, inputs on the host (the emulated GPUs against two CPU
 * threads): a light map stays on the CPU, copying its input would take
 * longer than computing it there; an arithmetic-heavy map goes to a GPU. */
static void test_automatic_choice_weighs_copies_against_work(void **state)
{
    (void)state;
    fill_x();
    start();
    if (!emulated) { /* a real GPU's speeds decide otherwise: nothing fixed to assert */
        stop();
        return;
    }
    assert_int_equal(pe_set_device(-1), PE_OK);
    uint64_t batches = gpu_batches();
    pe_array h = pe_f32_1d(x, N), light = pe_add(h, 1.0f);
    pe_sync();
    assert_int_equal(gpu_batches(), batches);
    pe_array heavy = pe_exp(pe_sin(pe_cos(pe_sin(h))));
    pe_sync();
    assert_int_equal(gpu_batches(), batches + 1);
    assert_int_equal(pe_read(light, out, sizeof out), PE_OK);
    for (int i = 0; i < N; i++) assert_true(out[i] == x[i] + 1.0f);
    assert_int_equal(pe_read(heavy, out, sizeof out), PE_OK);
    for (int i = 0; i < N; i++) {
        double want = exp(sin(cos(sin((double)x[i]))));
        assert_true(fabs(out[i] - want) <= 1e-6 * want);
    }
    pe_release(h), pe_release(light), pe_release(heavy);
    tu_expect_no_error();
    stop();
}

/* Code is per device: a kernel compiled for the first GPU is compiled (or
 * taken from the disk cache) and loaded again for the second, once. */
static void test_kernels_are_compiled_per_device(void **state)
{
    (void)state;
    fill_x();
    start();
    pe_stats s0, s1, s2;
    pe_array a = pe_f32_1d(x, N);
    for (int dev = 1; dev <= 2; dev++) {
        assert_int_equal(pe_set_device(dev), PE_OK);
        for (int again = 0; again < 2; again++) {
            pe_get_stats(&s0);
            pe_array y = pe_sqrt(pe_add(pe_mul(a, a), 3.0f));
            assert_int_equal(pe_read(y, out, sizeof out), PE_OK);
            pe_get_stats(&s1);
            for (int i = 0; i < N; i++) assert_true(tu_ulps_f32(out[i], (float)sqrt((double)x[i] * x[i] + 3)) <= 2);
            pe_release(y);
            uint64_t fetched = (s1.kernels_compiled - s0.kernels_compiled) + (s1.disk_cache_hits - s0.disk_cache_hits);
            assert_int_equal(fetched, again ? 0 : 1); /* once per device */
        }
    }
    pe_get_stats(&s2);
    assert_int_equal(s2.gpu_batches, 4);
    pe_release(a);
    tu_expect_no_error();
    stop();
}

/* The first GPU loses its context (an emulated kernel fault) while the
 * second goes on: an input the host has too still reaches the second GPU,
 * a value that lived only on the first is lost (reading what depends on it
 * is an error naming its line), and the first cannot be picked again. */
static void test_a_lost_gpu_leaves_the_other_working(void **state)
{
    (void)state;
    fill_x();
    setenv("PE_EMUL_CUDA_FAIL", "kernel:2", 1);
    start();
    unsetenv("PE_EMUL_CUDA_FAIL");
    if (!emulated) { /* a real driver: faults cannot be injected */
        stop();
        return;
    }
    assert_int_equal(pe_set_device(1), PE_OK);
    pe_array a = pe_f32_1d(x, N);
    int w_line = __LINE__ + 1;
    pe_array w = pe_mul(a, 3.0f); /* kernel 1: on the first GPU only */
    pe_sync();
    pe_array y = pe_mul(a, 2.0f); /* kernel 2 faults: the first GPU's context is lost */
    assert_int_equal(pe_set_device(2), PE_OK);
    long before1 = ran_on(1);
    pe_array z = pe_add(a, 1.0f);
    pe_sync();
    assert_int_equal(ran_on(1), before1 + 1);
    pe_array v = pe_add(w, 1.0f); /* w is lost */
    pe_sync();
    assert_int_equal(ran_on(1), before1 + 1);
    assert_int_equal(pe_read(z, out, sizeof out), PE_OK);
    for (int i = 0; i < N; i++) assert_true(out[i] == x[i] + 1.0f);
    tu_errors_clear();
    assert_int_equal(pe_read(v, out, sizeof out), PE_E_DEVICE); /* the first report of the GPU's failure */
    assert_true(tu_errors.count == 1 && tu_errors.code == PE_E_DEVICE);
    char where[64];
    snprintf(where, sizeof where, "test_cuda_multi_gpu.c:%d", w_line);
    assert_non_null(strstr(tu_errors.message, where));
    tu_errors_clear();
    assert_int_equal(pe_read(y, out, sizeof out), PE_E_DEVICE); /* computed in the lost context */
    tu_errors_clear();
    int line = __LINE__ + 1;
    assert_int_equal(pe_set_device(1), PE_E_DEVICE);
    tu_expect_error(PE_E_DEVICE, line);
    pe_release(a), pe_release(w), pe_release(y), pe_release(z), pe_release(v);
    stop();
}

static void test_a_device_that_does_not_exist_is_an_error(void **state)
{
    (void)state;
    start();
    int line = __LINE__ + 1;
    assert_int_equal(pe_set_device(pe_device_count()), PE_E_DEVICE);
    tu_expect_error(PE_E_DEVICE, line);
    stop();
}

int main(void)
{
    pe_push_error_handler(tu_record_error, NULL);
    int devices = pe_device_count();
    if (devices < 3) {
        fprintf(stderr, "skipped: fewer than two CUDA devices\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_gpus_are_listed),
        cmocka_unit_test(test_each_gpu_computes_what_it_is_given),
        cmocka_unit_test(test_values_move_between_gpus),
        cmocka_unit_test(test_automatic_choice_follows_the_data),
        cmocka_unit_test(test_automatic_choice_weighs_copies_against_work),
        cmocka_unit_test(test_kernels_are_compiled_per_device),
        cmocka_unit_test(test_a_lost_gpu_leaves_the_other_working),
        cmocka_unit_test(test_a_device_that_does_not_exist_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
