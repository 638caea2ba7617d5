/* cuda_memory.c — the CUDA executor's device memory, per GPU: a pool of
 * blocks by power-of-two size class, reused rather than given back; a block
 * freed while batches that may still read it are in flight waits on the
 * deferred list until they have finished (drain, reclaim).  And what PE may
 * hold on the device, room made cheapest first: the pool's free blocks
 * given back, the device asked again, the batches in flight waited for,
 * values evicted to the host. */
#include <stdlib.h>

#include "cuda_gpu.h"
#include "../base/error.h"

static int size_class(size_t bytes)
{
    int c = 8; /* 256 bytes at least */
    while (((size_t)1 << c) < bytes && c < POOL_CLASSES - 1) c++;
    return c;
}

void pe_cuda_pool_trim(cuda_gpu *g)
{
    for (int c = 0; c < POOL_CLASSES; c++)
        while (g->pool[c]) {
            cached_block *b = g->pool[c];
            g->pool[c] = b->next;
            pe_cuda_api_in_use->cuMemFree(b->ptr);
            g->bytes_cached -= (size_t)1 << c;
            free(b);
        }
}

/* Copies READY values of this GPU down and frees their device copies
 * (except those in `keep`), until at most `goal` bytes are in use. */
static void evict(cuda_gpu *g, size_t goal, const uint32_t *keep, int n_keep)
{
    for (uint32_t i = 0; i < pe_rt.n_slots && g->bytes_in_use > goal; i++) {
        pe_port *p = pe_port_at(i);
        if (p->state != PE_PORT_READY || !p->dev_buf || p->dev_gpu != g->ordinal) continue;
        bool kept = false;
        for (int k = 0; k < n_keep && !kept; k++) kept = keep[k] == i;
        if (kept || !pe_port_host(p)) continue;
        pe_cuda_port_free(p);
    }
}

/* The deferred blocks freed in batches up to `serial` go to the pool. */
static void deferred_to_pool(cuda_gpu *g, uint64_t serial)
{
    for (cached_block **at = &g->deferred; *at;) {
        cached_block *b = *at;
        if (b->freed_in > serial) {
            at = &b->next;
            continue;
        }
        *at = b->next; /* its bytes count as cached already */
        b->next = g->pool[b->size_class];
        g->pool[b->size_class] = b;
    }
}

/* Waits for all the GPU's work so far (every stream): every block freed
 * until now is free to reuse.  In the middle of a batch's launches (an
 * interpreted op or an eviction needs a value on the host) the batch is not
 * finished: its later kernels may read what it frees from now on. */
CUresult pe_cuda_drain(cuda_gpu *g)
{
    CUresult r = PE_CUDA_SUCCESS;
    for (int i = 0; i < g->n_streams && r == PE_CUDA_SUCCESS; i++)
        if (i == 0 || g->busy & (1u << i)) r = pe_cuda_api_in_use->cuStreamSynchronize(g->streams[i]);
    if (r == PE_CUDA_SUCCESS) {
        g->busy = 0;
        g->finished = g->launching ? g->batches - 1 : g->batches;
        deferred_to_pool(g, UINT64_MAX);
    }
    return r;
}

/* Advances `finished` over the batches whose events have completed (every
 * batch with `wait`), then gives their deferred frees to the pool. */
static void reclaim(cuda_gpu *g, bool wait)
{
    /* the batches after `finished` ended in flight (one that ended with a
     * synchronisation set `finished`), but for the one being launched */
    while (g->finished < g->in_flight) {
        CUevent e = g->ended[(g->finished + 1) % IN_FLIGHT];
        CUresult r = wait ? pe_cuda_api_in_use->cuEventSynchronize(e) : pe_cuda_api_in_use->cuEventQuery(e);
        if (r == PE_CUDA_ERROR_NOT_READY) break;
        if (r != PE_CUDA_SUCCESS) {
            pe_cuda_disable(g, "a kernel failed", r);
            return; /* the blocks stay deferred: nothing reuses them */
        }
        g->finished++;
    }
    deferred_to_pool(g, g->finished);
}

/* What PE may hold on the device: what it holds plus what the device has
 * free now, less an eighth of that (modules, other users), at most the cap.
 * Asked again whenever memory runs out, so the bound follows other users of
 * the device both ways. */
void pe_cuda_refresh_limit(cuda_gpu *g)
{
    size_t free_bytes = 0, total = 0;
    if (pe_cuda_api_in_use->cuMemGetInfo(&free_bytes, &total) != PE_CUDA_SUCCESS) free_bytes = 0;
    size_t limit = g->bytes_in_use + g->bytes_cached + free_bytes - free_bytes / 8;
    g->limit = limit < g->cap ? limit : g->cap;
}

/* Evicts down to `goal` bytes in use and gives the blocks back to the
 * device: they are deferred (kernels of this batch may read them) until the
 * GPU has done all it was given.  False when that wait reports a failure. */
static bool evict_and_free(cuda_gpu *g, size_t goal, const uint32_t *keep, int n_keep)
{
    evict(g, goal, keep, n_keep);
    if (g->deferred) {
        CUresult r = pe_cuda_drain(g);
        if (r != PE_CUDA_SUCCESS) {
            pe_cuda_disable(g, "a kernel failed", r);
            return false;
        }
    }
    pe_cuda_pool_trim(g);
    return true;
}

/* Once: the kernels whose buffers do not fit run on the CPU. */
static void tell_full(cuda_gpu *g)
{
    if (!g->told_full)
        pe_log_message(PE_LOG_WARN, "GPU %d's memory is full (%zu MiB held by live values, limit %zu MiB): "
                       "kernels whose buffers do not fit run on the CPU", g->ordinal, g->bytes_in_use >> 20, g->limit >> 20);
    g->told_full = true;
}

/* Whether `size` more bytes fit under the limit, after each of these in
 * turn, cheapest first: giving the pool's free blocks back, asking the
 * device again, waiting for the batches in flight that hold deferred
 * blocks, evicting values not in `keep` to the host. */
static bool make_room(cuda_gpu *g, size_t size, const uint32_t *keep, int n_keep)
{
    for (int step = 0; g->bytes_in_use + g->bytes_cached + size > g->limit; step++) {
        switch (step) {
        case 0: pe_cuda_pool_trim(g); break;
        case 1: pe_cuda_refresh_limit(g); break;
        case 2: if (g->deferred) reclaim(g, true), pe_cuda_pool_trim(g); break;
        case 3:
            if (!evict_and_free(g, g->limit > size ? g->limit - size : 0, keep, n_keep)) return false;
            break;
        default:
            tell_full(g);
            return false;
        }
    }
    return true;
}

/* A device buffer of at least `bytes`, or 0 (out of device memory even
 * after trimming the pool and evicting values not in `keep` to the host). */
CUdeviceptr pe_cuda_device_alloc(cuda_gpu *g, size_t bytes, const uint32_t *keep, int n_keep)
{
    int c = size_class(bytes);
    size_t size = (size_t)1 << c;
    if (g->deferred) reclaim(g, false);
    if (g->pool[c]) {
        cached_block *b = g->pool[c];
        g->pool[c] = b->next;
        CUdeviceptr ptr = b->ptr;
        free(b);
        g->bytes_cached -= size;
        g->bytes_in_use += size;
        return ptr;
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        if (!make_room(g, size, keep, n_keep)) return 0;
        CUdeviceptr ptr = 0;
        CUresult r = pe_cuda_api_in_use->cuMemAlloc(&ptr, size);
        if (r == PE_CUDA_SUCCESS) {
            g->bytes_in_use += size;
            return ptr;
        }
        if (r != PE_CUDA_ERROR_OUT_OF_MEMORY) {
            pe_cuda_disable(g, "cuMemAlloc failed", r);
            return 0;
        }
        /* the device is fuller than our count says: other users (its free
         * memory now bounds us, and the next attempt evicts if that is too
         * little), or its free memory is in pieces smaller than `size`
         * (fragmentation): then values worth `size` bytes go to the host
         * all the same, so that a block of that size may come free */
        pe_cuda_pool_trim(g);
        pe_cuda_refresh_limit(g);
        if (g->bytes_in_use + size <= g->limit &&
            !evict_and_free(g, g->bytes_in_use > size ? g->bytes_in_use - size : 0, keep, n_keep))
            return 0;
    }
    tell_full(g);
    return 0;
}

/* Back to the pool, or while batches that may read it are in flight to the
 * deferred list (cuMemFree, the fallback, waits for the GPU itself). */
void pe_cuda_device_free(cuda_gpu *g, CUdeviceptr ptr, size_t bytes)
{
    int c = size_class(bytes);
    cached_block *b = malloc(sizeof *b);
    g->bytes_in_use -= (size_t)1 << c;
    if (!b) {
        cuda_gpu *was = pe_cuda_bound;
        if (pe_cuda_bind(g) == PE_CUDA_SUCCESS) pe_cuda_api_in_use->cuMemFree(ptr);
        pe_cuda_bind_again(was);
        return;
    }
    *b = (cached_block){ptr, g->batches, c, NULL};
    if (g->finished < g->batches) {
        b->next = g->deferred;
        g->deferred = b;
        g->bytes_cached += (size_t)1 << c; /* held, not in use: a full memory waits for them */
        return;
    }
    b->next = g->pool[c];
    g->pool[c] = b;
    g->bytes_cached += (size_t)1 << c;
}

void pe_cuda_port_free(pe_port *p)
{
    if (!p->dev_buf) return;
    cuda_gpu *g = &pe_cuda_gpus[p->dev_gpu];
    if (g->up) pe_cuda_device_free(g, (CUdeviceptr)(uintptr_t)p->dev_buf, pe_port_bytes(p));
    p->dev_buf = NULL;
}
