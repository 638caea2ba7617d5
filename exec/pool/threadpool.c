/* threadpool.c — persistent worker threads for chunked parallel launches.
 * A launch publishes (kernel, args, n) under a generation number; workers and
 * the calling thread take fixed-size chunks from an atomic counter until none
 * is left; the caller waits for the last worker.  Small launches run on the
 * calling thread alone: waking workers costs more than it saves.  Launches
 * from several threads (the E-scheduler's kernels, an application thread's
 * copy) take turns.  Large copies of array data in and out run on it too. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "threadpool.h"
#include "../../profiler/collect.h"

#define MIN_PARALLEL 32768 /* elements below which one thread runs the launch */
#define CHUNK_ALIGN 64

static struct {
    pthread_t *threads;
    int n_workers;
    pthread_mutex_t mu;
    pthread_mutex_t launch; /* one multi-threaded launch at a time */
    pthread_cond_t work, done;
    uint64_t generation;
    bool stop;
    int busy;
    pe_kernel_fn fn;
    void *const *args;
    int64_t total, chunk;
    _Atomic int64_t next;
    _Atomic uint64_t launch_busy; /* the workers' time in this launch's chunks (profiler) */
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .launch = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* Pool utilisation (the profile's pool_busy_ns over pool_capacity_ns): each
 * launch adds the time its threads spent running chunks (busy) and, from
 * the launching thread, its wall time times the pool's threads (capacity).
 * The span runs from before the workers are woken to after the last one is
 * done, so every chunk of the launch lies inside it: a launch's busy time
 * never exceeds its capacity, and utilisation is at most 100% by
 * construction — whatever runs concurrently (a kernel on the E-scheduler,
 * a copy on an application thread: each launch counts its own). */
static void account(uint64_t t0, uint64_t t1, uint64_t busy)
{
    if (!t0 || !pe_prof_on) return;
    pe_prof_add(PE_PC_pool_busy_ns, busy);
    pe_prof_add(PE_PC_pool_capacity_ns, (t1 - t0) * (uint64_t)(pool.n_workers + 1));
}

/* Takes chunks until none is left; with the profiler on, the time this
 * thread spent on them (else 0). */
static uint64_t run_chunks(void)
{
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    for (;;) {
        int64_t begin = atomic_fetch_add(&pool.next, pool.chunk);
        if (begin >= pool.total) break;
        int64_t end = begin + pool.chunk < pool.total ? begin + pool.chunk : pool.total;
        pool.fn(begin, end, pool.args);
    }
    return t0 ? pe_prof_now() - t0 : 0;
}

static void *worker(void *arg)
{
    (void)arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (pool.generation == seen && !pool.stop) pthread_cond_wait(&pool.work, &pool.mu);
        if (pool.stop) break;
        seen = pool.generation;
        pthread_mutex_unlock(&pool.mu);
        uint64_t busy = run_chunks();
        if (busy) atomic_fetch_add_explicit(&pool.launch_busy, busy, memory_order_relaxed);
        pthread_mutex_lock(&pool.mu);
        if (--pool.busy == 0) pthread_cond_signal(&pool.done);
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

bool pe_pool_start(int threads)
{
    int workers = threads > 1 ? threads - 1 : 0;
    pool.threads = workers ? calloc((size_t)workers, sizeof *pool.threads) : NULL;
    if (workers && !pool.threads) return false;
    pool.stop = false;
    pool.generation = 0;
    pool.n_workers = 0;
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&pool.threads[i], NULL, worker, NULL) != 0) break;
        pool.n_workers++;
    }
    return true;
}

void pe_pool_stop(void)
{
    pthread_mutex_lock(&pool.mu);
    pool.stop = true;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < pool.n_workers; i++) pthread_join(pool.threads[i], NULL);
    free(pool.threads);
    pool.threads = NULL;
    pool.n_workers = 0;
}

void pe_pool_run(pe_kernel_fn fn, void *const *args, int64_t n, int64_t work) { pe_pool_run_grain(fn, args, n, work, 1); }

void pe_pool_run_grain(pe_kernel_fn fn, void *const *args, int64_t n, int64_t work, int64_t grain)
{
    if (work < 1) work = 1;
    if (grain < 1) grain = 1;
    if (n < 2 || n * work < MIN_PARALLEL || pool.n_workers == 0) {
        uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
        fn(0, n, args);
        if (t0) {
            uint64_t t1 = pe_prof_now();
            account(t0, t1, t1 - t0); /* one thread busy, the others idle */
        }
        return;
    }
    int64_t chunk = n / ((int64_t)(pool.n_workers + 1) * 4);
    int64_t align = work >= CHUNK_ALIGN ? 1 : CHUNK_ALIGN / work;      /* iterations per aligned step */
    align = (align + grain - 1) / grain * grain;
    int64_t least = (MIN_PARALLEL / 4 + work - 1) / work;              /* a chunk's least work */
    chunk = (chunk + align - 1) / align * align;
    if (chunk < least) chunk = least; /* at least 1: least >= 1 for work >= 1 */
    pe_pool_run_chunks(fn, args, n, chunk);
}

void pe_pool_run_chunks(pe_kernel_fn fn, void *const *args, int64_t n, int64_t chunk)
{
    if (n <= chunk || pool.n_workers == 0) {
        uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
        for (int64_t begin = 0; begin < n; begin += chunk) fn(begin, begin + chunk < n ? begin + chunk : n, args);
        if (t0) {
            uint64_t t1 = pe_prof_now();
            account(t0, t1, t1 - t0);
        }
        return;
    }
    pthread_mutex_lock(&pool.launch);
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0; /* before any worker can start on this launch */
    pthread_mutex_lock(&pool.mu);
    atomic_store_explicit(&pool.launch_busy, 0, memory_order_relaxed);
    pool.fn = fn;
    pool.args = args;
    pool.total = n;
    pool.chunk = chunk;
    atomic_store(&pool.next, 0);
    pool.busy = pool.n_workers;
    pool.generation++;
    pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.mu);
    uint64_t busy = run_chunks();
    pthread_mutex_lock(&pool.mu);
    while (pool.busy > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    /* every worker added its time before it counted itself done */
    if (t0) account(t0, pe_prof_now(), busy + atomic_load_explicit(&pool.launch_busy, memory_order_relaxed));
    pthread_mutex_unlock(&pool.launch);
}

/* ---------------------------------------------------------------- copies */

/* Below this one thread copies: waking the workers costs more. */
#define PARALLEL_COPY_BYTES (1u << 20)

static void copy_range(int64_t begin, int64_t end, void *const *args)
{
    memcpy((char *)args[0] + begin, (const char *)args[1] + begin, (size_t)(end - begin));
}

void pe_mem_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes < PARALLEL_COPY_BYTES) {
        memcpy(dst, src, bytes);
        return;
    }
    void *args[2] = {dst, (void *)src};
    pe_pool_run(copy_range, args, (int64_t)bytes, 1);
}
