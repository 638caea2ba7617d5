/* memory.c — host buffers for array values: 64-byte aligned (vector loads),
 * recycled through size-class free lists so that a loop allocating the same
 * sizes every iteration stops paying for fresh pages (Accelerate's nursery),
 * with the live-byte accounting behind pe_stats.  Cached buffers are bounded
 * by PE_POOL_MAX bytes and given back at pe_shutdown (pe_mem_trim).  Under
 * AddressSanitizer cached buffers are poisoned, so a use after free is still
 * caught. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <string.h>

#include "memory.h"
#include "runtime.h"

#if defined(__SANITIZE_ADDRESS__)
#define PE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PE_ASAN 1
#endif
#endif
#ifdef PE_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define ALIGNMENT 64
#define N_CLASSES 96
#define DEFAULT_POOL_MAX (1ll << 31)

typedef struct free_buffer {
    struct free_buffer *next;
} free_buffer;

static struct {
    pthread_mutex_t mu;
    free_buffer *lists[N_CLASSES];
    long long cached, max;
    bool configured;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Classes: 64 B, then two per power of two (2^k and 1.5 * 2^k), so rounding
 * wastes at most a third. */
static int class_of(size_t bytes, size_t *class_bytes)
{
    size_t size = ALIGNMENT;
    for (int c = 0; c < N_CLASSES; c++) {
        if (bytes <= size) {
            *class_bytes = size;
            return c;
        }
        size_t pow2 = (size_t)1 << (63 - __builtin_clzll(size));
        size = size == pow2 ? pow2 + pow2 / 2 : pow2 * 2;
    }
    *class_bytes = bytes;
    return -1;
}

void *pe_mem_alloc(size_t bytes)
{
    if (bytes > SIZE_MAX / 2) return NULL;
    size_t class_bytes;
    int c = class_of(bytes ? bytes : 1, &class_bytes);
    void *p = NULL;
    if (c >= 0) {
        pthread_mutex_lock(&pool.mu);
        free_buffer *f = pool.lists[c];
        if (f) {
            UNPOISON(f, class_bytes);
            pool.lists[c] = f->next;
            pool.cached -= (long long)class_bytes;
            p = f;
        }
        pthread_mutex_unlock(&pool.mu);
    }
    if (!p) p = aligned_alloc(ALIGNMENT, (class_bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT);
    if (p) pe_counters.live_bytes += (int64_t)bytes;
    return p;
}

void pe_mem_free(void *p, size_t bytes)
{
    if (!p) return;
    pe_counters.live_bytes -= (int64_t)bytes;
    size_t class_bytes;
    int c = class_of(bytes ? bytes : 1, &class_bytes);
    pthread_mutex_lock(&pool.mu);
    if (!pool.configured) {
        const char *max = getenv("PE_POOL_MAX");
        pool.max = max && *max ? atoll(max) : DEFAULT_POOL_MAX;
        if (pool.max < 0) pool.max = 0;
        pool.configured = true;
    }
    if (c >= 0 && pool.cached + (long long)class_bytes <= pool.max) {
        free_buffer *f = p;
        f->next = pool.lists[c];
        pool.lists[c] = f;
        pool.cached += (long long)class_bytes;
        POISON((char *)p + sizeof *f, class_bytes - sizeof *f);
        p = NULL;
    }
    pthread_mutex_unlock(&pool.mu);
    free(p);
}

void pe_mem_trim(void)
{
    pthread_mutex_lock(&pool.mu);
    for (int c = 0; c < N_CLASSES; c++) {
        while (pool.lists[c]) {
            free_buffer *f = pool.lists[c];
            pool.lists[c] = f->next;
            free(f);
        }
    }
    pool.cached = 0;
    pool.configured = false;
    pthread_mutex_unlock(&pool.mu);
}

void pe_mem_account(long long delta) { pe_counters.live_bytes += delta; }

