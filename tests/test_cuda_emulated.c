/* test_cuda_emulated.c — the CUDA executor when CUDA fails, on the host
 * emulation of the driver and NVRTC (tests/emul; ctest runs it as
 * test_cuda_emulated_on_host, and it skips elsewhere): a launch that fails,
 * a kernel that faults as it runs (the context is lost), device memory that
 * runs out, NVRTC rejecting the code.  Each time the results are the plain C
 * loop's — or, for a value that lived only in the lost context, a clear
 * error naming its line — and one warning names the reason. */
#include "test_util.h"

#include "emul/emul_checks.h"

#include <fcntl.h>
#include <unistd.h>

#define N (1 << 18)

static float x[N];

/* stderr into a temporary file while a scenario runs: the warnings */
static int saved_stderr = -1;
static char captured[4096];

static void capture_begin(void)
{
    fflush(stderr);
    saved_stderr = dup(2);
    FILE *f = tmpfile();
    assert_non_null(f);
    dup2(fileno(f), 2);
    fclose(f); /* fd 2 keeps it open */
}

static void capture_end(void)
{
    fflush(stderr);
    off_t n = lseek(2, 0, SEEK_CUR);
    lseek(2, 0, SEEK_SET);
    ssize_t got = read(2, captured, n < (off_t)sizeof captured - 1 ? (size_t)n : sizeof captured - 1);
    captured[got > 0 ? got : 0] = 0;
    dup2(saved_stderr, 2);
    close(saved_stderr);
    fputs(captured, stderr); /* shown with the test's output */
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

typedef struct {
    pe_stats stats;
    pe_status y_status, s_status;
    float y[N];
    double s;
} outcome;

/* Two batches: y = exp(x) * 2 + 1, then s = sum(y * 0.5) (both end in
 * flight: s is combined on the GPU), reading s, then y; with `sum_first`,
 * one batch does it all (from x, whose copy is on the host); `profiled`
 * makes batches end with a synchronisation (the profiler times each).  Under
 * `fail` (PE_EMUL_CUDA_FAIL, or "nvrtc" for PE_EMUL_NVRTC_FAIL). */
static void run_program(const char *fail, bool sum_first, bool profiled, outcome *o)
{
    char dir[] = "/tmp/pe-test-emulated-XXXXXX", profile[64];
    assert_non_null(mkdtemp(dir)); /* no cubins from an earlier scenario */
    if (fail && strcmp(fail, "nvrtc") == 0) setenv("PE_EMUL_NVRTC_FAIL", "1", 1);
    else if (fail) setenv("PE_EMUL_CUDA_FAIL", fail, 1);
    snprintf(profile, sizeof profile, "%s/run.pep", dir);
    capture_begin();
    assert_int_equal(pe_init(&(pe_config){.device = 2, .cache_dir = dir, .log_level = PE_LOG_WARN + 1,
                                          .profile = profiled ? profile : NULL}),
                     PE_OK);
    tu_errors_clear();
    pe_array a = pe_f32_1d(x, N), e = pe_exp(a), y = pe_add(pe_mul(e, 2.0f), 1.0f);
    pe_release(e);
    if (!sum_first) pe_sync();
    pe_array h = pe_mul(y, 0.5f), s = pe_sum(h);
    pe_release(h);
    o->s_status = pe_read_f64(s, &o->s);
    o->y_status = pe_read(y, o->y, sizeof o->y);
    pe_get_stats(&o->stats);
    pe_release(a), pe_release(y), pe_release(s);
    pe_shutdown();
    capture_end();
    unsetenv("PE_EMUL_CUDA_FAIL"), unsetenv("PE_EMUL_NVRTC_FAIL");
    tu_remove_dir(dir);
}

static void run(const char *fail, outcome *o) { run_program(fail, false, false, o); }

/* The values a plain C loop gives (exp within 2 ulp; the sum in double). */
static void assert_right(const outcome *o, bool y_too)
{
    double sum = 0;
    for (int i = 0; i < N; i++) {
        float want = expf(x[i]) * 2.0f + 1.0f;
        if (y_too) assert_true(fabsf(o->y[i] - want) <= 2.5e-7f * want);
        sum += 0.5 * (double)want;
    }
    assert_int_equal(o->s_status, PE_OK);
    assert_true(fabs(o->s - sum) <= 1e-6 * sum);
}

static void test_without_failures_the_gpu_computes(void **state)
{
    (void)state;
    static outcome o;
    run(NULL, &o);
    assert_int_equal(o.y_status, PE_OK);
    assert_right(&o, true);
    assert_int_equal(o.stats.gpu_batches, 2);
    assert_int_equal(count(captured, "warning"), 0);
}

static void test_a_failed_launch_falls_back_to_the_cpu(void **state)
{
    (void)state;
    static outcome o;
    run("launch:1", &o);
    assert_int_equal(o.y_status, PE_OK);
    assert_right(&o, true);
    assert_int_equal(o.stats.gpu_batches, 0);
    assert_int_equal(count(captured, "warning"), 1);
    assert_non_null(strstr(captured, "cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED"));
}

/* A profiled batch ends with a synchronisation: its kernel's fault is known
 * while its inputs are alive, and the CPU computes it again. */
static void test_a_kernel_fault_is_recomputed_on_the_cpu(void **state)
{
    (void)state;
    static outcome o;
    run_program("kernel:1", true, true, &o);
    assert_int_equal(o.y_status, PE_OK);
    assert_right(&o, true);
    assert_int_equal(o.stats.gpu_batches, 0);
    assert_int_equal(count(captured, "warning"), 1);
    assert_non_null(strstr(captured, "a kernel failed: CUDA_ERROR_LAUNCH_FAILED"));
}

/* The first batch ended in flight and its kernel faults: y lived only in
 * the lost context.  Reading it is an error naming y's line and the reason,
 * and so is the sum computed from it — never a wrong value.  The same when
 * the second batch's reduction kernel faults: y and s are on the GPU only. */
static void test_a_fault_loses_only_values_that_lived_on_the_gpu(void **state)
{
    (void)state;
    static outcome o;
    for (int k = 1; k <= 2; k++) {
        run(k == 1 ? "kernel:1" : "kernel:2", &o);
        assert_int_equal(o.stats.gpu_batches, k); /* the second batch launched (k = 2) or not */
        assert_int_equal(count(captured, "warning"), 1);
        assert_non_null(strstr(captured, "CUDA_ERROR_LAUNCH_FAILED"));
        assert_int_equal(o.s_status, PE_E_DEVICE); /* the read is the first report of the device's failure */
        assert_int_equal(o.y_status, PE_E_DEVICE);
        fprintf(stderr, "the read's error: %s\n", tu_errors.message);
        assert_non_null(strstr(tu_errors.message, "test_cuda_emulated.c"));
        assert_non_null(strstr(tu_errors.message, "the GPU result cannot be copied to the host"));
    }
}

/* A kernel's fault may surface at any later call that queues work: here at
 * a batch's closing cuEventRecord.  In the first batch, its kernel's inputs
 * are alive and the CPU computes everything; in the second, y lived only on
 * the GPU since the first batch ended in flight: y and the sum made from it
 * are errors naming their lines. */
static void test_a_fault_reported_by_an_event_record(void **state)
{
    (void)state;
    static outcome o;
    run("record:1", &o);
    assert_int_equal(o.y_status, PE_OK);
    assert_right(&o, true);
    assert_int_equal(o.stats.gpu_batches, 0);
    assert_int_equal(count(captured, "warning"), 1);
    assert_non_null(strstr(captured, "cuEventRecord failed: CUDA_ERROR_ILLEGAL_ADDRESS"));
    run("record:2", &o);
    assert_int_equal(o.stats.gpu_batches, 1);
    assert_int_equal(count(captured, "warning"), 1);
    assert_non_null(strstr(captured, "cuEventRecord failed: CUDA_ERROR_ILLEGAL_ADDRESS"));
    assert_int_equal(o.s_status, PE_E_DEVICE);
    assert_int_equal(o.y_status, PE_E_DEVICE);
    assert_non_null(strstr(tu_errors.message, "test_cuda_emulated.c"));
    assert_non_null(strstr(tu_errors.message, "the GPU result cannot be copied to the host"));
}

/* cuMemAlloc says out of memory once: the device is asked what it has free
 * (another user may have taken some), and the allocation tried again. */
static void test_a_failed_allocation_is_tried_again(void **state)
{
    (void)state;
    static outcome o;
    run("alloc:1", &o);
    assert_int_equal(o.y_status, PE_OK);
    assert_right(&o, true);
    assert_int_equal(o.stats.gpu_batches, 2);
    assert_int_equal(count(captured, "warning"), 0);
}

/* Less device memory than a kernel's buffers need (PE_CUDA_MEM_LIMIT: 1.5
 * arrays): that kernel runs on the CPU, with one warning. */
static void test_device_memory_running_out_leaves_the_work_to_the_cpu(void **state)
{
    (void)state;
    static outcome o;
    char limit[32];
    snprintf(limit, sizeof limit, "%zu", N * sizeof(float) * 3 / 2);
    setenv("PE_CUDA_MEM_LIMIT", limit, 1);
    run(NULL, &o);
    unsetenv("PE_CUDA_MEM_LIMIT");
    assert_int_equal(o.y_status, PE_OK);
    assert_right(&o, true);
    assert_int_equal(count(captured, "warning"), 1);
    assert_non_null(strstr(captured, "GPU 0's memory is full"));
}

/* The device's free memory is in pieces too small for a buffer (its
 * count says there is room, cuMemAlloc says there is none): older values go
 * to the host all the same until a buffer fits, and every kernel still runs
 * on the GPU. */
static void test_fragmented_device_memory_evicts(void **state)
{
    (void)state;
    const size_t mib = 1 << 20;
    char memory[32], fragmented[32];
    snprintf(memory, sizeof memory, "%zu", 8 * mib), snprintf(fragmented, sizeof fragmented, "%zu", 4 * mib);
    setenv("PE_EMUL_CUDA_MEMORY", memory, 1), setenv("PE_EMUL_CUDA_FRAGMENTED", fragmented, 1);
    capture_begin();
    assert_int_equal(pe_init(&(pe_config){.device = 2, .log_level = PE_LOG_WARN + 1}), PE_OK);
    unsetenv("PE_EMUL_CUDA_MEMORY"), unsetenv("PE_EMUL_CUDA_FRAGMENTED");
    long before = tu_emul_kernels_run(0);
    enum { K = 8 }; /* each result 1 MiB: 9 MiB live in all, 4 usable */
    pe_array a = pe_f32_1d(x, N), r[K];
    for (int k = 0; k < K; k++) {
        r[k] = pe_add(pe_mul(a, (float)k), 1.0f);
        pe_sync();
    }
    long ran = tu_emul_kernels_run(0) - before;
    for (int k = 0; k < K; k++) {
        static float got[N];
        assert_int_equal(pe_read(r[k], got, sizeof got), PE_OK);
        for (int i = 0; i < N; i++) assert_true(got[i] == x[i] * (float)k + 1.0f);
        pe_release(r[k]);
    }
    pe_release(a);
    pe_shutdown();
    capture_end();
    assert_int_equal(ran, K);
    assert_int_equal(count(captured, "warning"), 0);
}

/* A gather is a GPU kernel: the values the indices pick, plus one, from
 * the GPU with nothing interpreted; then an index out of range in a fused
 * consumer: the kernel reads element 0, sets its flag, and the interpreter
 * recomputes the members and reports the index at the gather's line (no
 * warning: the GPU stays on), and a kernel after it reads its values. */
static void test_a_gather_runs_on_the_gpu_and_reports_a_bad_index(void **state)
{
    (void)state;
    enum { M = 1000 };
    static int32_t idx[M];
    static float got[M];
    for (int i = 0; i < M; i++) idx[i] = (int32_t)((i * 7919L) % N);
    capture_begin();
    assert_int_equal(pe_init(&(pe_config){.device = 2, .log_level = PE_LOG_WARN + 1}), PE_OK);
    tu_errors_clear();
    pe_stats before, after;
    pe_get_stats(&before);
    long ran = tu_emul_kernels_run(0);
    int64_t m = M;
    pe_array a = pe_f32_1d(x, N), index = pe_from_host(PE_I32, 1, &m, idx);
    pe_array y = pe_add(pe_gather(a, index), 1.0f);
    assert_int_equal(pe_read(y, got, sizeof got), PE_OK);
    for (int i = 0; i < M; i++) assert_true(got[i] == x[idx[i]] + 1.0f);
    pe_get_stats(&after);
    assert_true(tu_emul_kernels_run(0) > ran);
    assert_int_equal(after.ops_interpreted, before.ops_interpreted);
    assert_true(after.gpu_batches > before.gpu_batches);
    pe_release(y);
    idx[M / 2] = N; /* one past the end */
    pe_array bad_index = pe_from_host(PE_I32, 1, &m, idx);
    int line = __LINE__ + 1;
    pe_array g = pe_gather(a, bad_index);
    pe_array z = pe_mul(pe_add(g, 1.0f), 2.0f);
    ran = tu_emul_kernels_run(0);
    assert_int_equal(pe_read(z, got, sizeof got), PE_E_ARG);
    assert_true(tu_emul_kernels_run(0) > ran); /* the GPU's kernel found it */
    char where[64];
    snprintf(where, sizeof where, "test_cuda_emulated.c:%d", line);
    assert_non_null(strstr(tu_errors.message, where));
    assert_non_null(strstr(tu_errors.message, "out of range"));
    tu_errors_clear();
    pe_release(g), pe_release(z), pe_release(index), pe_release(bad_index), pe_release(a);
    pe_shutdown();
    capture_end();
    assert_int_equal(count(captured, "warning"), 0);
    idx[M / 2] = (int32_t)(((M / 2) * 7919L) % N);
}

static void test_nvrtc_failing_leaves_the_work_to_the_cpu(void **state)
{
    (void)state;
    static outcome o;
    run("nvrtc", &o);
    assert_int_equal(o.y_status, PE_OK);
    assert_right(&o, true);
    assert_int_equal(o.stats.gpu_batches, 0);
    assert_non_null(strstr(captured, "NVRTC could not compile"));
    assert_int_equal(count(captured, "is off for this run"), 1);
}

int main(void)
{
    const char *driver = getenv("PE_CUDA_DRIVER");
    if (!driver || !strstr(driver, "cuda_driver_on_host")) {
        fprintf(stderr, "skipped: runs on the emulated CUDA driver only (PE_CUDA_DRIVER)\n");
        return 77;
    }
    for (int i = 0; i < N; i++) x[i] = (float)(i % 1000) / 1000.0f - 0.5f;
    pe_push_error_handler(tu_record_error, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_without_failures_the_gpu_computes),
        cmocka_unit_test(test_a_failed_launch_falls_back_to_the_cpu),
        cmocka_unit_test(test_a_kernel_fault_is_recomputed_on_the_cpu),
        cmocka_unit_test(test_a_fault_loses_only_values_that_lived_on_the_gpu),
        cmocka_unit_test(test_a_fault_reported_by_an_event_record),
        cmocka_unit_test(test_a_failed_allocation_is_tried_again),
        cmocka_unit_test(test_device_memory_running_out_leaves_the_work_to_the_cpu),
        cmocka_unit_test(test_fragmented_device_memory_evicts),
        cmocka_unit_test(test_nvrtc_failing_leaves_the_work_to_the_cpu),
        cmocka_unit_test(test_a_gather_runs_on_the_gpu_and_reports_a_bad_index),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (tu_emul_misuses() != 0) {
        fprintf(stderr, "the executor made %ld calls the emulated CUDA driver refuses\n", tu_emul_misuses());
        failed++;
    }
    return failed;
}
