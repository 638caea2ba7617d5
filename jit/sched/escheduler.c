/* escheduler.c — the E-scheduler (patent: execution scheduler): its own
 * thread runs submitted batches on the executor; the application thread goes
 * on recording and waits only to read a value that is not computed yet, or
 * when MAX_OUTSTANDING batches are waiting already (flow control by
 * counters).
 *
 * Submitted batches wait in a pending table with the batches they depend on
 * (those computing an input of one of their ports).  A batch is ready when
 * none of those is still in the table; after every completion the table is
 * looked at again.  The next batch to run is the oldest one an application
 * thread is waiting for, or the oldest batch that one needs, else the
 * oldest: a read does not wait behind earlier work it does not depend on.
 * Values are immutable and buffers live by reference counts, so a batch
 * needs no other order than its inputs'.
 *
 * Locking: port structures are guarded by the runtime lock; the E-scheduler
 * holds it while it plans, allocates and finishes a batch, and the CPU
 * executor lets go of it while kernels run (kernels touch only buffers that
 * the batch's references keep alive).  One batch runs at a time. */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#include "batch.h"
#include "escheduler.h"
#include "../trace/trace.h"
#include "../../exec/base/executor.h"
#include "../../exec/base/grow.h"
#include "../../profiler/collect.h"

#define MAX_OUTSTANDING 4

typedef struct job {
    pe_entry *entries;
    size_t n;
    pe_trace_key key;
    uint32_t epoch;
    int device; /* pe_batch.device */
    uint32_t *deps; /* epochs of earlier batches computing its inputs */
    size_t n_deps, deps_cap;
    bool wanted; /* an application thread waits for one of its ports */
    struct job *next;
} job;

static struct {
    pthread_t thread;
    pthread_cond_t work, done;
    job *head, *tail; /* the pending table, oldest first */
    int outstanding;  /* submitted and not finished */
    bool stop, running;
    bool inline_running; /* a batch runs on an application thread: the E-scheduler waits */
    bool hold;           /* tests: run only batches an application thread waits for */
} es = {.work = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* The batches in the table that j's ports take inputs from (their ports
 * are pending in an earlier batch).  A port's batch enters the table when
 * it is submitted and stays there until it has run; one that is not there
 * has run (or runs now, on this thread or inline, before any other).
 * False when out of memory. */
static bool find_deps(job *j)
{
    j->n_deps = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (j->entries[i].kind != PE_ENTRY_COMPUTE) continue;
        const pe_port *p = pe_port_at(j->entries[i].port);
        for (int k = 0; k < p->n_in; k++) {
            const pe_port *q = pe_port_at(p->in[k]);
            if (q->state != PE_PORT_PENDING || q->batch == j->epoch) continue;
            bool known = false;
            for (size_t d = 0; d < j->n_deps && !known; d++) known = j->deps[d] == q->batch;
            if (known) continue;
            if (!PE_GROW(j->deps, j->deps_cap, j->n_deps + 1)) return false;
            j->deps[j->n_deps++] = q->batch;
        }
    }
    return true;
}

static job *job_of_epoch(uint32_t epoch)
{
    for (job *j = es.head; j; j = j->next)
        if (j->epoch == epoch) return j;
    return NULL;
}

/* The oldest batch an application thread waits for, or NULL. */
static job *first_wanted(void)
{
    for (job *j = es.head; j; j = j->next)
        if (j->wanted) return j;
    return NULL;
}

/* The batch to run next, or NULL (nothing, or holding with nothing wanted).
 * Nothing runs while this chooses, so the oldest batch is always ready:
 * its dependencies are older still, and have run. */
static job *pick(void)
{
    job *wanted = first_wanted();
    if (!wanted) return es.hold ? NULL : es.head;
    /* the oldest batch the wanted one needs, directly or through others */
    for (;;) {
        job *dep = NULL;
        for (size_t d = 0; d < wanted->n_deps && !dep; d++) dep = job_of_epoch(wanted->deps[d]);
        if (!dep) return wanted;
        wanted = dep;
    }
}

static void unlink_job(job *j)
{
    job **at = &es.head, *prev = NULL;
    while (*at != j) prev = *at, at = &(*at)->next;
    *at = j->next;
    if (es.tail == j) es.tail = prev;
}

static void run_batch(pe_entry *entries, size_t n, pe_trace_key *key, uint32_t epoch, int device)
{
    pe_batch batch = {entries, n, key, epoch, device};
    pe_counters.ops_executed += pe_batch_run(&batch);
    for (size_t i = 0; i < n; i++)
        if (entries[i].kind == PE_ENTRY_COMPUTE) pe_port_unref(entries[i].port);
    free(entries);
    pe_trace_key_free(key);
}

static void run_job(job *j)
{
    run_batch(j->entries, j->n, &j->key, j->epoch, j->device);
    free(j->deps);
    free(j);
}

static void *esched_main(void *arg)
{
    (void)arg;
    pe_prof_name_thread("E-scheduler");
    pe_api_internal_thread(); /* pe_shutdown stops it itself (pe_esched_stop) */
    PE_API_GUARD;
    for (;;) {
        job *j;
        while ((!(j = pick()) || es.inline_running) && !(es.stop && !es.inline_running))
            pe_api_wait(&es.work);
        if (es.inline_running) continue;
        if (!j) j = es.head; /* stopping: what is left runs, held or not */
        if (!j) break;       /* stop, and nothing left */
        if (j != es.head) pe_counters.batches_run_ahead++;
        unlink_job(j);
        run_job(j);
        es.outstanding--;
        pthread_cond_broadcast(&es.done);
    }
    return NULL;
}

bool pe_esched_start(void)
{
    es.stop = false;
    es.hold = false;
    es.head = es.tail = NULL;
    es.outstanding = 0;
    es.running = pthread_create(&es.thread, NULL, esched_main, NULL) == 0;
    return es.running;
}

void pe_esched_stop(void)
{
    assert(pe_api_held());
    if (!es.running) return;
    es.stop = true;
    pthread_cond_broadcast(&es.work);
    int depth = pe_api_suspend();
    pthread_join(es.thread, NULL);
    pe_api_resume(depth);
    es.running = false;
}

void pe_esched_submit(pe_entry *entries, size_t n, pe_trace_key key, uint32_t epoch, int device)
{
    assert(pe_api_held());
    job *j = malloc(sizeof *j);
    if (j) *j = (job){.entries = entries, .n = n, .key = key, .epoch = epoch, .device = device};
    if (!j || !find_deps(j)) { /* no memory for the message: run it here, after what is queued */
        if (j) free(j->deps), free(j);
        while (es.outstanding > 0) pe_esched_wait();
        pe_esched_run_here(entries, n, key, epoch, device);
        return;
    }
    /* Into the table at once, in batch order: a batch that other threads
     * submit while this one waits for flow control below must find it as
     * the batch computing its inputs (it ran before it, found nothing, and
     * read inputs never computed: issue 22). */
    if (es.tail) es.tail->next = j;
    else es.head = j;
    es.tail = j;
    es.outstanding++;
    pthread_cond_signal(&es.work);
    /* flow control holds the application back (timed for the profile) */
    uint64_t t0 = pe_prof_on && es.outstanding > MAX_OUTSTANDING ? pe_prof_now() : 0;
    while (es.outstanding > MAX_OUTSTANDING) pe_esched_wait();
    if (t0) pe_prof_add(PE_PC_queue_flow_waits, 1), pe_prof_add(PE_PC_queue_flow_wait_ns, pe_prof_now() - t0);
}

/* The caller holds the runtime lock and nothing is outstanding.  The
 * E-scheduler thread stays off while the batch runs here (the executor lets
 * go of the lock during kernels): batches must run one at a time, in order. */
void pe_esched_run_here(pe_entry *entries, size_t n, pe_trace_key key, uint32_t epoch, int device)
{
    assert(pe_api_held());
    es.outstanding++;
    es.inline_running = true;
    run_batch(entries, n, &key, epoch, device);
    es.inline_running = false;
    es.outstanding--;
    pthread_cond_broadcast(&es.done);
    if (es.head) pthread_cond_signal(&es.work); /* batches submitted meanwhile */
}

void pe_esched_wait(void)
{
    assert(pe_api_held());
    if (es.hold && es.head && !first_wanted()) { /* held: a waiting thread lets at least the oldest batch go */
        es.head->wanted = true;
        pthread_cond_signal(&es.work);
    }
    pe_api_wait(&es.done);
}

void pe_esched_want(uint32_t epoch)
{
    job *j = job_of_epoch(epoch);
    if (!j || j->wanted) return;
    j->wanted = true;
    pthread_cond_signal(&es.work);
}

void pe_esched_hold(bool hold)
{
    PE_API_GUARD; /* called by tests from outside the API */
    es.hold = hold;
    pthread_cond_signal(&es.work);
}

int pe_esched_outstanding(void) { return es.outstanding; }
