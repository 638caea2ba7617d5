/* escheduler.c — the E-scheduler (patent: execution scheduler): its own
 * thread takes submitted batches in order and runs them on the executor; the
 * application thread goes on recording and waits only to read a value that is
 * not computed yet, or when MAX_OUTSTANDING batches are waiting already
 * (flow control by counters).
 *
 * Locking: port structures are guarded by the runtime lock; the E-scheduler
 * holds it while it plans, allocates and finishes a batch, and the CPU
 * executor lets go of it while kernels run (kernels touch only buffers that
 * the batch's references keep alive).  Batches run one after the other, so a
 * batch's inputs from earlier batches are complete when it starts. */
#include <pthread.h>
#include <stdlib.h>

#include "escheduler.h"
#include "executor.h"
#include "../jit/trace.h"
#include "../profiler/collect.h"

#define MAX_OUTSTANDING 4

typedef struct job {
    pe_entry *entries;
    size_t n;
    pe_trace_key key;
    uint32_t epoch;
    struct job *next;
} job;

static struct {
    pthread_t thread;
    pthread_cond_t work, done;
    job *head, *tail;
    int outstanding; /* submitted and not finished */
    bool stop, running;
    bool inline_running; /* a batch runs on an application thread: the E-scheduler waits */
} es = {.work = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static void run_batch(pe_entry *entries, size_t n, pe_trace_key *key, uint32_t epoch)
{
    pe_batch batch = {entries, n, key, epoch};
    pe_rt.stats.ops_executed += pe_rt.executor->run(pe_rt.executor, &batch);
    for (size_t i = 0; i < n; i++)
        if (entries[i].kind == PE_ENTRY_COMPUTE) pe_port_unref(entries[i].port);
    free(entries);
    pe_trace_key_free(key);
}

static void run_job(job *j)
{
    run_batch(j->entries, j->n, &j->key, j->epoch);
    free(j);
}

static void *esched_main(void *arg)
{
    (void)arg;
    pe_prof_name_thread("E-scheduler");
    PE_API_GUARD;
    for (;;) {
        while ((!es.head || es.inline_running) && !es.stop) pe_api_wait(&es.work);
        if (es.inline_running) continue;
        if (!es.head) break; /* stop, and nothing left */
        job *j = es.head;
        es.head = j->next;
        if (!es.head) es.tail = NULL;
        run_job(j);
        es.outstanding--;
        pthread_cond_broadcast(&es.done);
    }
    return NULL;
}

bool pe_esched_start(void)
{
    es.stop = false;
    es.head = es.tail = NULL;
    es.outstanding = 0;
    es.running = pthread_create(&es.thread, NULL, esched_main, NULL) == 0;
    return es.running;
}

void pe_esched_stop(void)
{
    if (!es.running) return;
    es.stop = true;
    pthread_cond_broadcast(&es.work);
    int depth = pe_api_suspend();
    pthread_join(es.thread, NULL);
    pe_api_resume(depth);
    es.running = false;
}

void pe_esched_submit(pe_entry *entries, size_t n, pe_trace_key key, uint32_t epoch)
{
    job *j = malloc(sizeof *j);
    if (!j) { /* no memory for the message: run it here, after what is queued */
        while (es.outstanding > 0) pe_esched_wait();
        pe_esched_run_here(entries, n, key, epoch);
        return;
    }
    *j = (job){entries, n, key, epoch, NULL};
    /* flow control holds the application back (timed for the profile) */
    uint64_t t0 = pe_prof_on && es.outstanding >= MAX_OUTSTANDING ? pe_prof_now() : 0;
    while (es.outstanding >= MAX_OUTSTANDING) pe_esched_wait();
    if (t0) pe_prof_add(PE_PC_queue_flow_waits, 1), pe_prof_add(PE_PC_queue_flow_wait_ns, pe_prof_now() - t0);
    if (es.tail) es.tail->next = j;
    else es.head = j;
    es.tail = j;
    es.outstanding++;
    pthread_cond_signal(&es.work);
}

/* The caller holds the runtime lock and nothing is outstanding.  The
 * E-scheduler thread stays off while the batch runs here (the executor lets
 * go of the lock during kernels): batches must run one at a time, in order. */
void pe_esched_run_here(pe_entry *entries, size_t n, pe_trace_key key, uint32_t epoch)
{
    es.outstanding++;
    es.inline_running = true;
    run_batch(entries, n, &key, epoch);
    es.inline_running = false;
    es.outstanding--;
    pthread_cond_broadcast(&es.done);
    if (es.head) pthread_cond_signal(&es.work); /* batches submitted meanwhile */
}

void pe_esched_wait(void) { pe_api_wait(&es.done); }

int pe_esched_outstanding(void) { return es.outstanding; }
