/* aot.c — the background compile of the kernels that the static IR's closed
 * regions will ask for (issue 4, item e).  At pe_init the speculation
 * (aot_speculate.c) turns each region's op list into kernel IR under the
 * runtime lock (microseconds); a thread then compiles every kernel that no
 * cache holds, all at once as the executor compiles a batch, and files the
 * result where the executor looks, so that the first batch finds its
 * kernels compiled while the application was still making its input data.
 * The target is the executor's (target.h): the CPU JIT, or with GPUs in use
 * the GPU (once per architecture among them); the provisioning compiles
 * and files the kernels as it does a batch's (pe_provision_ahead).
 *
 * A real batch that needs a kernel the thread has in hand waits for it
 * (pe_aot_await) instead of compiling it a second time; otherwise nothing
 * of this is on the application's path.  The thread never holds the
 * runtime lock while compiling, and only briefly to look in and file into
 * the caches (which belong to the runtime lock); its own mutex guards the
 * job list and is never held while taking the runtime lock.  A failure (a
 * compile error, out of memory, no assembler) only logs at debug level:
 * the real batch then compiles what it needs as it always did.  PE_AOT=0
 * turns it off. */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aot.h"
#include "../provision/provision.h"
#include "../record/irload.h"
#include "../../exec/base/error.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/runtime.h"
#include "../../exec/backends.h"

typedef enum {
    JOB_QUEUED,   /* waiting for the thread */
    JOB_COMPILING,
    JOB_FILED,    /* compiled and in the program cache: ours */
    JOB_DROPPED   /* a cache had it already, or the compile failed */
} job_state;

typedef struct {
    kir_kernel kir;
    uint64_t hash;
    job_state state;
    bool served; /* counted in aot_kernels_used */
} job;

static struct {
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    job *jobs;
    size_t n_jobs, cap;
    pthread_t thread;
    bool thread_started; /* joinable */
    bool thread_done;    /* it found no queued job and is leaving */
    bool stopping;
    bool enabled;
    const pe_target *target;
    int units_seen; /* static-IR units speculated over */
} aot = {.mutex = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};

static job *find_job(uint64_t hash, const kir_kernel *k)
{
    for (size_t i = 0; i < aot.n_jobs; i++)
        if (aot.jobs[i].hash == hash && kir_equal(&aot.jobs[i].kir, k)) return &aot.jobs[i];
    return NULL;
}

/* The speculation's sink (runtime lock held): a new job for each kernel
 * not seen before. */
static void add_job(const kir_kernel *k, void *ctx)
{
    assert(pe_api_held());
    (void)ctx;
    uint64_t hash = kir_hash(k);
    pthread_mutex_lock(&aot.mutex);
    if (!find_job(hash, k) && !pe_provision_has(aot.target, k)) {
        if (PE_GROW(aot.jobs, aot.cap, aot.n_jobs + 1)) aot.jobs[aot.n_jobs++] = (job){*k, hash, JOB_QUEUED, false};
        if (pe_rt.log_level >= PE_LOG_DEBUG) {
            char text[4096] = "";
            kir_print(k, text, sizeof text);
            pe_log_message(PE_LOG_DEBUG, "aot: speculated kernel\n%s", text);
        }
    }
    pthread_mutex_unlock(&aot.mutex);
}

static void set_state(job_state from, job_state to, size_t *count)
{
    for (size_t i = 0; i < aot.n_jobs; i++)
        if (aot.jobs[i].state == from) aot.jobs[i].state = to, (*count)++;
}

/* Takes the queued jobs that no cache holds (runtime lock, then the job
 * mutex); the others are dropped.  Fills kernels with copies. */
static size_t take_jobs(kir_kernel **kernels)
{
    PE_API_GUARD;
    pthread_mutex_lock(&aot.mutex);
    size_t n = 0;
    *kernels = NULL;
    if (!aot.stopping) {
        *kernels = malloc(sizeof **kernels * (aot.n_jobs ? aot.n_jobs : 1));
        for (size_t i = 0; *kernels && i < aot.n_jobs; i++) {
            job *j = &aot.jobs[i];
            if (j->state != JOB_QUEUED) continue;
            if (pe_provision_has(aot.target, &j->kir)) {
                j->state = JOB_DROPPED;
                continue;
            }
            j->state = JOB_COMPILING;
            (*kernels)[n++] = j->kir;
        }
    }
    if (n == 0) {
        free(*kernels);
        *kernels = NULL;
        aot.thread_done = true;
    }
    pthread_cond_broadcast(&aot.changed);
    pthread_mutex_unlock(&aot.mutex);
    return n;
}

/* ------------------------------------------------------------ the thread */

static void *compile_thread(void *arg)
{
    (void)arg;
    pe_api_internal_thread(); /* pe_shutdown stops it itself (pe_aot_stop) */
    for (;;) {
        kir_kernel *kernels;
        size_t n = take_jobs(&kernels);
        if (n == 0) return NULL;
        const kir_kernel **list = malloc(sizeof *list * n);
        char err[512] = "out of memory";
        bool filed = false;
        if (list) {
            for (size_t i = 0; i < n; i++) list[i] = &kernels[i];
            filed = pe_provision_ahead(aot.target, list, n, err, sizeof err);
        }
        /* on failure the real batches compile what they need, and report what fails */
        if (filed) pe_log_message(PE_LOG_DEBUG, "aot: compiled %zu kernel%s ahead", n, n == 1 ? "" : "s");
        else pe_log_message(PE_LOG_DEBUG, "aot: compiling %zu kernels ahead failed (%s)", n, err);
        pthread_mutex_lock(&aot.mutex);
        size_t count = 0;
        set_state(JOB_COMPILING, filed ? JOB_FILED : JOB_DROPPED, &count);
        pthread_cond_broadcast(&aot.changed);
        pthread_mutex_unlock(&aot.mutex);
        free(list), free(kernels);
    }
}

/* Speculates over units not seen yet and makes sure a thread compiles what
 * is queued (runtime lock held). */
static void speculate_and_compile(void)
{
    assert(pe_api_held());
    int n_units = pe_ir_unit_count();
    for (; aot.units_seen < n_units; aot.units_seen++) {
        pe_ir_unit u;
        if (pe_ir_unit_at(aot.units_seen, &u)) pe_aot_speculate_unit(&u, aot.target->rules, add_job, NULL);
    }
    pthread_mutex_lock(&aot.mutex);
    size_t queued = 0;
    for (size_t i = 0; i < aot.n_jobs; i++) queued += aot.jobs[i].state == JOB_QUEUED;
    bool start = queued > 0 && !aot.stopping && (!aot.thread_started || aot.thread_done);
    bool join = start && aot.thread_started;
    pthread_mutex_unlock(&aot.mutex);
    if (!start) return;
    if (join) pthread_join(aot.thread, NULL); /* it has left its loop: no lock to wait for */
    aot.thread_started = aot.thread_done = false;
    if (pthread_create(&aot.thread, NULL, compile_thread, NULL) == 0) {
        aot.thread_started = true;
        pe_log_message(PE_LOG_DEBUG, "aot: compiling %zu kernels ahead for %s", queued, aot.target->name);
    } else {
        pthread_mutex_lock(&aot.mutex);
        size_t count = 0;
        set_state(JOB_QUEUED, JOB_DROPPED, &count);
        pthread_mutex_unlock(&aot.mutex);
        pe_log_message(PE_LOG_DEBUG, "aot: no thread for the compile ahead");
    }
}

/* What the provisioning asks of the compile ahead (bottom of this file). */
static bool await_kernel(const kir_kernel *k, const pe_target *asker);
static void note_served(const kir_kernel *k, const pe_target *asker);
static const pe_compile_ahead ahead = {await_kernel, note_served};

void pe_aot_start(void)
{
    assert(pe_api_held());
    const char *env = getenv("PE_AOT");
    /* the GPU's kernels when there is one: the batches worth compiling
     * ahead for are the large ones, which go there */
    aot.target = !(pe_rt.executor->caps & PE_EXEC_RUNS_KERNELS)  ? NULL
                 : pe_rt.executor->caps & PE_EXEC_DEVICE_MEMORY ? pe_device_backend.target
                 : pe_target_on(pe_host_backend.target)         ? pe_host_backend.target
                                                                : NULL;
    aot.enabled = !(env && strcmp(env, "0") == 0) && aot.target;
    aot.stopping = false;
    aot.units_seen = 0;
    pe_ir_on_units_added(pe_aot_units_added);
    pe_provision_compiled_ahead_by(aot.enabled ? &ahead : NULL);
    if (aot.enabled) speculate_and_compile();
}

void pe_aot_units_added(void)
{
    PE_API_GUARD;
    if (pe_rt.initialised && aot.enabled) speculate_and_compile();
}

void pe_aot_stop(void)
{
    assert(pe_api_held());
    pthread_mutex_lock(&aot.mutex);
    aot.stopping = true;
    pthread_mutex_unlock(&aot.mutex);
    if (aot.thread_started) {
        int depth = pe_api_suspend(); /* the thread may be waiting for the runtime lock */
        pthread_join(aot.thread, NULL);
        pe_api_resume(depth);
    }
    aot.thread_started = aot.thread_done = false;
    pthread_mutex_lock(&aot.mutex);
    free(aot.jobs);
    aot.jobs = NULL;
    aot.n_jobs = aot.cap = 0;
    pthread_mutex_unlock(&aot.mutex);
    aot.enabled = false;
    pe_provision_compiled_ahead_by(NULL);
}

static bool await_kernel(const kir_kernel *k, const pe_target *asker)
{
    if (!aot.enabled || aot.target != asker) return false;
    uint64_t hash = kir_hash(k);
    pthread_mutex_lock(&aot.mutex);
    job *j = find_job(hash, k);
    bool in_hand = j && (j->state == JOB_QUEUED || j->state == JOB_COMPILING) && aot.thread_started && !aot.thread_done;
    pthread_mutex_unlock(&aot.mutex);
    if (!in_hand) return false;
    int depth = pe_api_suspend(); /* the thread files its kernels under the runtime lock */
    pthread_mutex_lock(&aot.mutex);
    for (;;) {
        j = find_job(hash, k);
        if (!j || (j->state != JOB_QUEUED && j->state != JOB_COMPILING) || aot.thread_done) break;
        pthread_cond_wait(&aot.changed, &aot.mutex);
    }
    pthread_mutex_unlock(&aot.mutex);
    pe_api_resume(depth);
    return true;
}

static void note_served(const kir_kernel *k, const pe_target *asker)
{
    if (!aot.enabled || aot.target != asker) return;
    uint64_t hash = kir_hash(k);
    pthread_mutex_lock(&aot.mutex);
    job *j = find_job(hash, k);
    if (j && j->state == JOB_FILED && !j->served) {
        j->served = true;
        pe_counters.aot_kernels_used++;
    }
    pthread_mutex_unlock(&aot.mutex);
}
