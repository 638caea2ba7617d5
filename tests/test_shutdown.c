/* test_shutdown.c — pe_shutdown while other threads are inside the API
 * (issue 22, item 2): threads loop recording and reading while the main
 * thread shuts the runtime down at a random moment.  Every read either
 * gives the value of a plain C loop or fails: with PE_E_INVALID "runtime
 * shut down" while the shutdown runs, PE_E_ARG "not initialised (runtime
 * shut down ...)" after it; no thread crashes or waits forever (an alarm
 * turns a hang into a failure); a new pe_init works again.  Repeated over many rounds to meet the race;
 * also run under ThreadSanitizer (scripts/test). */
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define N 64
#define ROUNDS 40

static atomic_int shut_down_errors, other_errors;
static char other_message[1024];

/* Runs for every thread: counts errors (handlers are process-wide). */
static int count_error(const pe_error *e, void *user)
{
    (void)user;
    if ((e->code == PE_E_INVALID || e->code == PE_E_ARG) && strstr(e->message, "runtime shut down")) {
        atomic_fetch_add(&shut_down_errors, 1);
    } else if (atomic_fetch_add(&other_errors, 1) == 0) {
        snprintf(other_message, sizeof other_message, "%d: %s", (int)e->code, e->message);
    }
    return 1;
}

typedef struct {
    int id;
    long reads_ok, wrong_values;
    int last_rc;
} reader;

static void *read_loop(void *arg)
{
    reader *r = arg;
    float x[N], out[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i + r->id) * 0.25f;
    for (;;) {
        pe_array a = pe_f32_1d(x, N);
        pe_array c = pe_exp(pe_mul(pe_add(pe_mul(a, 2.0f), 1.0f), 0.001f));
        int rc = pe_read(c, out, sizeof out);
        r->last_rc = rc;
        if (rc != PE_OK) break; /* the runtime is shut down: its arrays went with it */
        for (int i = 0; i < N; i++) {
            float want = expf((x[i] * 2.0f + 1.0f) * 0.001f); /* the oracle */
            if (fabsf(out[i] - want) > 2e-6f * want) r->wrong_values++;
        }
        r->reads_ok++;
        pe_release(a);
        pe_release(c);
    }
    return NULL;
}

static void test_shutdown_while_threads_read(void **state)
{
    (void)state;
    alarm(300); /* a reader left waiting forever fails the test instead of hanging it */
    pe_push_error_handler(count_error, NULL);
    unsigned seed = 22;
    long total_ok = 0;
    for (int round = 0; round < ROUNDS; round++) {
        assert_int_equal(pe_init(NULL), PE_OK);
        atomic_store(&shut_down_errors, 0);
        reader r[THREADS];
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++) {
            r[i] = (reader){.id = i};
            assert_int_equal(pthread_create(&t[i], NULL, read_loop, &r[i]), 0);
        }
        /* shut down at a random moment: before the first read, or amid many */
        struct timespec pause = {0, (long)(rand_r(&seed) % 3000) * 1000};
        nanosleep(&pause, NULL);
        pe_shutdown();
        for (int i = 0; i < THREADS; i++) {
            assert_int_equal(pthread_join(t[i], NULL), 0);
            assert_int_equal(r[i].wrong_values, 0);
            /* each loop ends on the shutdown's error: during it, or after it */
            assert_true(r[i].last_rc == PE_E_INVALID || r[i].last_rc == PE_E_ARG);
            total_ok += r[i].reads_ok;
        }
        if (atomic_load(&other_errors)) fail_msg("an error other than the shutdown's: %s", other_message);
        assert_true(atomic_load(&shut_down_errors) >= THREADS);
        /* after the shutdown: "not initialised (runtime shut down ...)", naming this line */
        float v[N];
        atomic_store(&shut_down_errors, 0);
        assert_int_equal(pe_read((pe_array){0}, v, sizeof v), PE_E_ARG);
        assert_int_equal(atomic_load(&shut_down_errors), 1);
        assert_int_equal(pe_last_error()->line, __LINE__ - 2);
    }
    /* the runtime starts again and computes */
    assert_int_equal(pe_init(NULL), PE_OK);
    float x[4] = {1, 2, 3, 4}, out[4];
    pe_array s = pe_add(pe_f32_1d(x, 4), 1.0f);
    assert_int_equal(pe_read(s, out, sizeof out), PE_OK);
    for (int i = 0; i < 4; i++) assert_true(out[i] == x[i] + 1.0f);
    pe_shutdown();
    pe_pop_error_handler();
    alarm(0);
    print_message("%ld reads completed before the shutdowns\n", total_ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shutdown_while_threads_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
