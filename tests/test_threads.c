/* test_threads.c — several application threads call the API at once: each
 * records chains, reductions, scopes and reads its own results, which must
 * equal a plain C computation.  Built under ThreadSanitizer by scripts/test. */
#include "test_util.h"

#include <pthread.h>

#define THREADS 4
#define ITERATIONS 60
#define N 2048

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    float x[N], v[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 97) * 0.01f + (float)id;
    for (int it = 0; it < ITERATIONS; it++) {
        pe_scope s = pe_scope_begin();
        float k = (float)(it % 5) + 0.5f;
        pe_array a = pe_f32_1d(x, N);
        pe_array r = pe_add(pe_mul(a, k), pe_sqrt(a));
        pe_array total = pe_sum(r);
        if (pe_read(r, v, sizeof v) != PE_OK) return (void *)1;
        for (int i = 0; i < N; i += 31)
            if (tu_ulps_f32(v[i], x[i] * k + sqrtf(x[i])) > 1) return (void *)2;
        double t, want = 0;
        if (pe_read_f64(total, &t) != PE_OK) return (void *)3;
        for (int i = 0; i < N; i++) want += (double)v[i];
        if (fabs(t - want) > 1e-6 * fabs(want)) return (void *)4;
        pe_scope_end(s);
    }
    return NULL;
}

/* Runs n threads of body (each given its index), expects each to return
 * NULL, and that they left no array alive. */
static void run_threads(int n, void *(*body)(void *))
{
    pthread_t t[n];
    for (int i = 0; i < n; i++) assert_int_equal(pthread_create(&t[i], NULL, body, (void *)(intptr_t)i), 0);
    for (int i = 0; i < n; i++) {
        void *rc;
        assert_int_equal(pthread_join(t[i], &rc), 0);
        assert_null(rc);
    }
    pe_stats st;
    pe_sync();
    pe_get_stats(&st);
    assert_int_equal(st.live_arrays, 0);
    tu_expect_no_error();
}

static void test_threads_share_the_runtime(void **state)
{
    (void)state;
    run_threads(THREADS, worker);
}

/* Work handed to the E-scheduler while the application goes on: consumers of
 * values still being computed, releases of values in flight, repeated so the
 * trace cache replays the batches. */
static void test_recording_overlaps_execution(void **state)
{
    (void)state;
    enum { M = 1 << 18 };
    float *x = malloc(M * sizeof *x), *v = malloc(M * sizeof *v);
    for (int i = 0; i < M; i++) x[i] = (float)(i % 1000) * 0.001f;
    pe_array a = pe_f32_1d(x, M);
    for (int it = 0; it < 20; it++) {
        pe_array b = pe_sin(pe_mul(a, 2.0f)); /* the nested product stays the application's */
        pe_flush();                           /* b is computed on the E-scheduler thread */
        pe_array c = pe_add(b, 1.0f);         /* a consumer of a value in flight */
        pe_release(b);                        /* released while in flight */
        pe_flush();
        pe_array d = pe_mul(c, c);
        pe_array total = pe_sum(d);
        assert_int_equal(pe_read(d, v, M * sizeof *v), PE_OK);
        for (int i = 0; i < M; i += 997) {
            float w = sinf(x[i] * 2.0f) + 1.0f;
            assert_true(tu_ulps_f32(v[i], w * w) <= 4);
        }
        double t;
        assert_int_equal(pe_read_f64(total, &t), PE_OK);
        assert_true(t > 0);
        pe_release(c), pe_release(d), pe_release(total);
    }
    pe_release(a);
    free(x), free(v);
    tu_expect_no_error();
}

/* Many threads recording small chains at once (issue 22): the queue is
 * the runtime's, so one thread's flush takes others' requests into its
 * batch; a batch submitted while another waits for flow control must still
 * find that one as its dependency.  Every value is checked against C. */
enum { STRESS_THREADS = 12, STRESS_ITERATIONS = 400, STRESS_N = 64 };

static void *stress_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    float x[STRESS_N], out[STRESS_N];
    for (int i = 0; i < STRESS_N; i++) x[i] = (float)i * 0.5f;
    for (int it = 0; it < STRESS_ITERATIONS; it++) {
        pe_scope s = pe_scope_begin(); /* the nested intermediates go with it */
        pe_array a = pe_f32_1d(x, STRESS_N);
        pe_array c = pe_exp(pe_mul(pe_add(pe_mul(a, (float)id), 1.0f), 0.001f));
        if (pe_read(c, out, sizeof out) != PE_OK) return (void *)1;
        pe_scope_end(s);
        for (int i = 0; i < STRESS_N; i++)
            if (tu_ulps_f32(out[i], expf((x[i] * (float)id + 1.0f) * 0.001f)) > 2) return (void *)2;
    }
    return NULL;
}

static void test_many_threads_small_batches(void **state)
{
    (void)state;
    run_threads(STRESS_THREADS, stress_worker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_threads_share_the_runtime, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_recording_overlaps_execution, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_many_threads_small_batches, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
