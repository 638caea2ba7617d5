/* test_threads.c — several application threads call the API at once: each
 * records chains, reductions, scopes and reads its own results, which must
 * equal a plain C computation; and threads sharing one handle, reading it
 * while others release it, must see its value or an error, never other
 * data; gradients taken on several threads at once.  Built under
 * ThreadSanitizer by scripts/test. */
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>

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
/* Gradients on several threads at once (issue 43): each thread marks its
 * own variable, records sin(x) x, and asks pe_grad while the others record
 * theirs; the tape is shared, a sweep's pause is its own thread's: every
 * gradient is cos(x) x + sin(x), and nothing stays alive after. */
static void *gradient_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    double x[64], g[64];
    for (int i = 0; i < 64; i++) x[i] = 0.01 * i + 0.5 * id;
    for (int it = 0; it < 40; it++) {
        pe_scope s = pe_scope_begin();
        pe_array v = pe_grad_enable(pe_f64_1d(x, 64)), out;
        pe_array y = pe_sum(pe_mul(pe_sin(v), v));
        if (pe_grad(y, 1, &v, &out) != PE_OK || pe_read(out, g, sizeof g) != PE_OK) return (void *)1;
        for (int i = 0; i < 64; i++)
            if (fabs(g[i] - (cos(x[i]) * x[i] + sin(x[i]))) > 1e-14) return (void *)2;
        pe_scope_end(s);
    }
    return NULL;
}

static void test_gradients_on_threads(void **state)
{
    (void)state;
    run_threads(THREADS, gradient_worker);
}

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

/* Issue 36: a read racing a release of the same handle in another thread.
 * Each round makes y = x*2/2 (pending; under the JIT a read computes it
 * into the reader's buffer and y stays an expression, so nearly every read
 * waits for a batch with the runtime lock let go), shares the handle with
 * all threads, and while six read it two release it.  The contract: a read
 * returns exactly x's values or raises an error at its line (use after
 * release); never other data.  A reader that woke up after the port was
 * freed copied zeros (a freed port has no buffer): tens of wrong reads in
 * ~40,000 a run, in 4 runs of 5 at 1000 rounds; 2000 rounds (under a
 * second) catch it nearly every run. */
enum { RACE_THREADS = 8, RACE_READERS = 6, RACE_ROUNDS = 2000, RACE_READS = 16, RACE_N = 4096 };

static struct {
    pthread_barrier_t start, end;
    pe_array y;          /* the shared handle, set by the main thread before `start` */
    const float *want;   /* x's values this round */
    int round;
    atomic_int reads_ok, reads_failed, wrong, unexpected;
} race;

/* Errors of the race are the contract's (the handle released, or stale);
 * anything else counts as unexpected.  The handler stack is the runtime's,
 * called under its lock, but the counters are read by the test's threads. */
static int race_error(const pe_error *e, void *user)
{
    (void)user;
    if (e->code != PE_E_HANDLE && e->code != PE_E_INVALID) {
        atomic_fetch_add(&race.unexpected, 1);
        fprintf(stderr, "unexpected error in the race: %s\n", e->message ? e->message : "");
    }
    return 1;
}

static void free_adopted(void *data, void *ctx)
{
    (void)ctx;
    free(data);
}

static void *race_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    float *got = malloc(RACE_N * sizeof *got);
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(id + 1);
    for (;;) {
        pthread_barrier_wait(&race.start);
        if (race.round < 0) break;
        pe_array y = race.y;
        if (id < RACE_READERS) {
            for (int r = 0; r < RACE_READS; r++) {
                int rc = pe_read(y, got, RACE_N * sizeof *got);
                if (rc != PE_OK) {
                    atomic_fetch_add(&race.reads_failed, 1);
                    if (rc != PE_E_HANDLE && rc != PE_E_INVALID) atomic_fetch_add(&race.unexpected, 1);
                    break; /* released: every later read fails too */
                }
                atomic_fetch_add(&race.reads_ok, 1);
                if (memcmp(got, race.want, RACE_N * sizeof *got) != 0) atomic_fetch_add(&race.wrong, 1);
            }
        } else {
            /* a little later each time, so the release lands at every point of a read */
            for (volatile int spin = (int)((tu_uniform(&rng) + 1) * 20000); spin > 0; spin--) {
            }
            pe_release(y); /* one releaser wins; the others' is an error (released twice) */
        }
        pthread_barrier_wait(&race.end);
    }
    free(got);
    return NULL;
}

static void test_read_races_release(void **state)
{
    (void)state;
    memset(&race, 0, sizeof race);
    pe_push_error_handler(race_error, NULL);
    assert_int_equal(pthread_barrier_init(&race.start, NULL, RACE_THREADS + 1), 0);
    assert_int_equal(pthread_barrier_init(&race.end, NULL, RACE_THREADS + 1), 0);
    pthread_t t[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, race_worker, (void *)(intptr_t)i), 0);
    float *want = malloc(RACE_N * sizeof *want);
    for (int round = 0; round < RACE_ROUNDS; round++) {
        /* values of this round only: a read of another round's port is caught */
        float *x = malloc(RACE_N * sizeof *x);
        for (int i = 0; i < RACE_N; i++) want[i] = x[i] = (float)(round * RACE_N + i);
        pe_array xa = pe_adopt(PE_F32, 1, (int64_t[]){RACE_N}, x, free_adopted, NULL);
        pe_array twice = pe_mul(xa, 2.0f);
        race.y = pe_div(twice, 2.0f);
        pe_release(twice), pe_release(xa); /* y's expression holds them */
        race.want = want;
        race.round = round;
        pthread_barrier_wait(&race.start);
        pthread_barrier_wait(&race.end);
    }
    race.round = -1;
    pthread_barrier_wait(&race.start);
    for (int i = 0; i < RACE_THREADS; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&race.start);
    pthread_barrier_destroy(&race.end);
    free(want);
    pe_pop_error_handler();
    print_message("read racing release: %d reads right, %d wrong, %d failed (released), %d unexpected errors\n",
                  atomic_load(&race.reads_ok), atomic_load(&race.wrong), atomic_load(&race.reads_failed),
                  atomic_load(&race.unexpected));
    assert_int_equal(atomic_load(&race.wrong), 0);
    assert_int_equal(atomic_load(&race.unexpected), 0);
    assert_true(atomic_load(&race.reads_ok) > 0);
    assert_true(atomic_load(&race.reads_failed) > 0); /* the releases did race the reads */
    assert_int_equal(tu_live_arrays(), 0); /* every y released once, every x with it */
    tu_expect_no_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_threads_share_the_runtime, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_recording_overlaps_execution, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_gradients_on_threads, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_many_threads_small_batches, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_read_races_release, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
