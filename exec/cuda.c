/* cuda.c — the CUDA executor: runs a batch's program sequence on a GPU.
 * The program generator and kernel IR are the CPU executor's (proggen.c,
 * kir.h); kernels become CUDA C (jit/cuda_emit.c), are compiled by NVRTC for
 * the device's architecture (jit/nvrtc.c) all together, once per batch, and
 * loaded into the device's primary context (cuModuleLoadData).
 *
 * Several GPUs: each in use has its own context, streams, memory pool and
 * compiled kernels (compiled for its architecture, loaded into its
 * context), and is started when first asked for: the GPU PE_DEVICE names
 * (the first one for auto) at pe_init, others at pe_set_device.
 *
 * Device choice per batch: the device preferred when it was recorded
 * (PE_DEVICE / pe_set_device), else (automatic) the CPU or the GPU in use
 * that the cost model of placement.c expects to have its results soonest,
 * counting the copies its inputs need.  A batch no GPU takes goes to the
 * CPU executor.
 *
 * Residency: array values are immutable, so a copy on either side never goes
 * stale; a port computed on the GPU is READY with its value in dev_buf (on
 * GPU dev_gpu) and host_stale set, and pe_port_host() copies it down only
 * when the host needs it (a read, a map, a CPU kernel or the interpreter).
 * Inputs are uploaded once and keep their device copy while they live; a
 * batch on another GPU moves the copy there (peer copy).
 *
 * Kernels of a batch go to up to STREAMS streams, with the event waits that
 * stream_sync.c plans from their dependencies (independent kernels overlap;
 * uploads go on a stream of their own and complete before any kernel uses
 * them).  A reduction's partials are combined on the GPU too, by the
 * combiner launched after it (cuda_emit.h), so its value stays there like any
 * other result.  A batch ends without waiting for the GPU: its
 * streams join into stream 0, which records the batch's event, and the next
 * batch's streams wait for that event, so the GPU works on while the host
 * plans and launches the next batch (up to IN_FLIGHT batches ahead).  The
 * device memory its kernels read may go back to the pool at once (members'
 * inputs are dropped), so a freed block is reused only once the batches that
 * may still use it have finished (deferred frees, by batch serial).  The
 * host waits where it reads: a copy to the host drains every stream.
 *
 * A batch run under the profiler (kernel time is measured per batch) ends
 * with one synchronisation of every stream, before members' inputs are
 * dropped.
 *
 * Failures: a launch that fails, or a failure a synchronisation reports
 * while the batch's inputs are alive, sends the batch's remaining work to
 * the CPU; the GPU is switched off with one warning naming the reason.  A
 * kernel that faults after its batch ended without waiting loses the
 * context, and with it the values that lived only on the GPU: reading one
 * is an error naming its line and the reason, never a wrong value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_driver.h"
#include "executor.h"
#include "memory.h"
#include "../profiler/collect.h"
#include "../jit/aot.h"
#include "../jit/cpu_gccjit.h"
#include "../jit/cuda_emit.h"
#include "../jit/diskcache.h"
#include "../jit/nvrtc.h"
#include "../jit/proggen.h"
#include "../jit/trace.h"
#include "placement.h"
#include "stream_sync.h"

#define BLOCK 256
#define STREAMS 4
#define EVENTS 16
#define POOL_CLASSES 48
/* batches that may run on the GPU while the host goes on: the next waits
 * for the oldest (flow control, and the ring of their events) */
#define IN_FLIGHT 8

typedef struct {
    kir_kernel *kir; /* a copy: the key */
    uint64_t hash;
    CUfunction fn;
    CUfunction combine; /* a reduction's: its module's combiner (cuda_emit.h) */
} compiled;

typedef struct cached_block {
    CUdeviceptr ptr;
    uint64_t freed_in; /* a deferred free: reusable once batch `freed_in` has finished */
    int size_class;
    struct cached_block *next;
} cached_block;

/* One GPU in use: its context, streams, memory pool and compiled kernels
 * (code is specialised per device: its architecture, its module). */
typedef struct {
    const pe_cuda_device *dev;
    int ordinal;          /* index in pe_cuda_device_at */
    pe_place_speed speed; /* what automatic placement expects of it */
    CUcontext ctx;
    CUstream stream; /* streams[0]: copies to the host go there, and the batches' joins */
    CUstream streams[STREAMS];
    CUstream uploads; /* copies to the GPU, waited for at once */
    CUevent events[EVENTS];
    CUevent joins[STREAMS];   /* stream i done with the batch (i > 0), for stream 0 */
    CUevent ended[IN_FLIGHT]; /* batch k done: ended[k % IN_FLIGHT], recorded on stream 0 */
    uint64_t batches;         /* serial of the latest batch begun on the GPU (0: none yet) */
    uint64_t in_flight;       /* serial of the latest batch that ended without waiting */
    uint64_t finished;        /* every batch up to this serial has finished on the GPU */
    bool launching;           /* batch `batches` is being launched: not finished, whatever drains */
    bool overlap;             /* the streams and events for batches in flight exist */
    int n_streams;
    unsigned busy; /* streams given work since the last drain (bit per stream; 0 always counts) */
    bool up;       /* context and stream made */
    bool disabled; /* a CUDA failure: everything runs on the CPU from now on */
    compiled *kernels;
    size_t n_kernels, cap_kernels;
    CUmodule *modules;
    size_t n_modules, cap_modules;
    /* two pinned host buffers: large copies either way go through them in
     * chunks, the host's copy of one chunk overlapping the transfer of the
     * next (the driver stages pageable memory itself, at a fraction of the
     * bus's speed); staged[i]: the last upload from staging[i] is done */
    void *staging[2];
    CUevent staged[2];
    /* device memory pool: free blocks by power-of-two size class, and
     * blocks freed while batches that may use them are still in flight */
    cached_block *pool[POOL_CLASSES];
    cached_block *deferred;
    size_t bytes_in_use, bytes_cached;
    size_t limit; /* what PE may hold: see refresh_limit */
    size_t cap;   /* PE_CUDA_MEM_LIMIT, else no bound of its own */
    bool told_full; /* the warning that the memory is full went out */
} cuda_gpu;

static const pe_cuda_api *cu;
/* the GPUs by ordinal, started as they are first asked for (PE_DEVICE at
 * pe_init, then pe_set_device) */
static cuda_gpu gpus[PE_CUDA_MAX_DEVICES];

static bool in_use(const cuda_gpu *g) { return g->up && !g->disabled; }

static int sm_of(const cuda_gpu *g) { return g->dev->cc_major * 10 + g->dev->cc_minor; }

/* ------------------------------------------------------------- failures */

static void describe(CUresult r, char *out, size_t n) { pe_cuda_describe(r, out, n); }

/* One warning, then the CPU does this GPU's work. */
static void disable(cuda_gpu *g, const char *what, CUresult r)
{
    if (g->disabled) return;
    char d[200] = "";
    if (r != PE_CUDA_SUCCESS) describe(r, d, sizeof d);
    /* CUDA reports a kernel's fault at a later call: name the suspects */
    const char *late = g->finished < g->in_flight ? " (or a kernel of a batch still running then)" : "";
    pe_log_message(PE_LOG_WARN, "GPU %d (%s) is off for this run: %s%s%s%s; the CPU computes", g->ordinal, g->dev->name,
                   what, late, *d ? ": " : "", d);
    g->disabled = true;
}

/* The GPU whose context this thread made current last (the CUDA calls
 * that follow go to it): one that works on another GPU midway (a value
 * copied down or across) binds the first again after. */
static __thread cuda_gpu *bound;

static CUresult bind(cuda_gpu *g)
{
    CUresult r = cu->cuCtxSetCurrent(g->ctx);
    bound = r == PE_CUDA_SUCCESS ? g : NULL;
    return r;
}

static void bind_again(cuda_gpu *was)
{
    if (was && was != bound && was->up) bind(was);
}

static bool current(cuda_gpu *g)
{
    CUresult r = bind(g);
    if (r != PE_CUDA_SUCCESS) disable(g, "cuCtxSetCurrent failed", r);
    return r == PE_CUDA_SUCCESS;
}

/* ------------------------------------------------------- device memory */

static int size_class(size_t bytes)
{
    int c = 8; /* 256 bytes at least */
    while (((size_t)1 << c) < bytes && c < POOL_CLASSES - 1) c++;
    return c;
}

static void pool_trim(cuda_gpu *g)
{
    for (int c = 0; c < POOL_CLASSES; c++)
        while (g->pool[c]) {
            cached_block *b = g->pool[c];
            g->pool[c] = b->next;
            cu->cuMemFree(b->ptr);
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

static CUresult drain(cuda_gpu *g);

/* Advances `finished` over the batches whose events have completed (every
 * batch with `wait`), then gives their deferred frees to the pool. */
static void reclaim(cuda_gpu *g, bool wait)
{
    /* the batches after `finished` ended in flight (one that ended with a
     * synchronisation set `finished`), but for the one being launched */
    while (g->finished < g->in_flight) {
        CUevent e = g->ended[(g->finished + 1) % IN_FLIGHT];
        CUresult r = wait ? cu->cuEventSynchronize(e) : cu->cuEventQuery(e);
        if (r == PE_CUDA_ERROR_NOT_READY) break;
        if (r != PE_CUDA_SUCCESS) {
            disable(g, "a kernel failed", r);
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
static void refresh_limit(cuda_gpu *g)
{
    size_t free_bytes = 0, total = 0;
    if (cu->cuMemGetInfo(&free_bytes, &total) != PE_CUDA_SUCCESS) free_bytes = 0;
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
        CUresult r = drain(g);
        if (r != PE_CUDA_SUCCESS) {
            disable(g, "a kernel failed", r);
            return false;
        }
    }
    pool_trim(g);
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
        case 0: pool_trim(g); break;
        case 1: refresh_limit(g); break;
        case 2: if (g->deferred) reclaim(g, true), pool_trim(g); break;
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
static CUdeviceptr device_alloc(cuda_gpu *g, size_t bytes, const uint32_t *keep, int n_keep)
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
        CUresult r = cu->cuMemAlloc(&ptr, size);
        if (r == PE_CUDA_SUCCESS) {
            g->bytes_in_use += size;
            return ptr;
        }
        if (r != PE_CUDA_ERROR_OUT_OF_MEMORY) {
            disable(g, "cuMemAlloc failed", r);
            return 0;
        }
        /* the device is fuller than our count says: other users (its free
         * memory now bounds us, and the next attempt evicts if that is too
         * little), or its free memory is in pieces smaller than `size`
         * (fragmentation): then values worth `size` bytes go to the host
         * all the same, so that a block of that size may come free */
        pool_trim(g);
        refresh_limit(g);
        if (g->bytes_in_use + size <= g->limit &&
            !evict_and_free(g, g->bytes_in_use > size ? g->bytes_in_use - size : 0, keep, n_keep))
            return 0;
    }
    tell_full(g);
    return 0;
}

/* Back to the pool, or while batches that may read it are in flight to the
 * deferred list (cuMemFree, the fallback, waits for the GPU itself). */
static void device_free(cuda_gpu *g, CUdeviceptr ptr, size_t bytes)
{
    int c = size_class(bytes);
    cached_block *b = malloc(sizeof *b);
    g->bytes_in_use -= (size_t)1 << c;
    if (!b) {
        cuda_gpu *was = bound;
        if (bind(g) == PE_CUDA_SUCCESS) cu->cuMemFree(ptr);
        bind_again(was);
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
    cuda_gpu *g = &gpus[p->dev_gpu];
    if (g->up) device_free(g, (CUdeviceptr)(uintptr_t)p->dev_buf, pe_port_bytes(p));
    p->dev_buf = NULL;
}

/* --------------------------------------------------------- residency */

static void fail_port(pe_port *p, const char *what, CUresult r)
{
    char d[200] = "", api[64];
    if (r != PE_CUDA_SUCCESS) describe(r, d, sizeof d);
    snprintf(api, sizeof api, "pe_%s", pe_op_table[p->op].name);
    free(p->err_msg);
    p->state = PE_PORT_INVALID;
    p->err_code = PE_E_DEVICE;
    p->err_msg = pe_format_error(p->site, api, "%s%s%s", what, *d ? ": " : "", d);
}

/* Waits for all the GPU's work so far (every stream): every block freed
 * until now is free to reuse.  In the middle of a batch's launches (an
 * interpreted op or an eviction needs a value on the host) the batch is not
 * finished: its later kernels may read what it frees from now on. */
static CUresult drain(cuda_gpu *g)
{
    CUresult r = PE_CUDA_SUCCESS;
    for (int i = 0; i < g->n_streams && r == PE_CUDA_SUCCESS; i++)
        if (i == 0 || g->busy & (1u << i)) r = cu->cuStreamSynchronize(g->streams[i]);
    if (r == PE_CUDA_SUCCESS) {
        g->busy = 0;
        g->finished = g->launching ? g->batches - 1 : g->batches;
        deferred_to_pool(g, UINT64_MAX);
    }
    return r;
}

#define STAGING_BYTES (8u << 20)

/* Device to host: through the pinned buffers when it is large and they
 * exist, else directly. */
static CUresult download_untimed(cuda_gpu *g, void *dst, CUdeviceptr src, size_t bytes);

/* The profile's track for this GPU's copies or kernels. */
static int gpu_track(cuda_gpu *g, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "cuda:%d %s", g->ordinal, what);
    return (int)pe_prof_track(name);
}

/* A device-to-host copy, timed for the profile. */
static CUresult download(cuda_gpu *g, void *dst, CUdeviceptr src, size_t bytes)
{
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    CUresult r = download_untimed(g, dst, src, bytes);
    if (pe_prof_on && r == PE_CUDA_SUCCESS) pe_prof_transfer(false, bytes, t0, pe_prof_now(), gpu_track(g, "copies"));
    return r;
}

static CUresult download_untimed(cuda_gpu *g, void *dst, CUdeviceptr src, size_t bytes)
{
    CUresult r;
    if (bytes < 2 * STAGING_BYTES || !g->staging[1]) {
        r = cu->cuMemcpyDtoHAsync(dst, src, bytes, g->stream);
        return r == PE_CUDA_SUCCESS ? cu->cuStreamSynchronize(g->stream) : r;
    }
    size_t done = 0, pending = 0; /* bytes of the chunk waiting in staging[(k - 1) % 2] */
    for (int k = 0; done + pending < bytes || pending; k++) {
        size_t off = done + pending, n = bytes - off < STAGING_BYTES ? bytes - off : STAGING_BYTES;
        if (n && (r = cu->cuMemcpyDtoHAsync(g->staging[k % 2], src + off, n, g->stream)) != PE_CUDA_SUCCESS) return r;
        if (pending) memcpy((char *)dst + done, g->staging[(k + 1) % 2], pending); /* while chunk k moves */
        done += pending;
        if ((r = cu->cuStreamSynchronize(g->stream)) != PE_CUDA_SUCCESS) return r;
        pending = n;
    }
    return PE_CUDA_SUCCESS;
}

/* Host to device on `stream`, complete on return: large copies through the
 * pinned buffers in chunks, the host filling one buffer while the other's
 * chunk moves (a buffer is refilled once its last chunk has gone: its
 * event), else directly. */
static CUresult upload_untimed(cuda_gpu *g, CUdeviceptr dst, const void *src, size_t bytes, CUstream stream)
{
    CUresult r = PE_CUDA_SUCCESS;
    if (bytes < 2 * STAGING_BYTES || !g->staging[1]) {
        r = cu->cuMemcpyHtoDAsync(dst, src, bytes, stream);
        return r == PE_CUDA_SUCCESS ? cu->cuStreamSynchronize(stream) : r;
    }
    for (size_t off = 0, k = 0; off < bytes && r == PE_CUDA_SUCCESS; off += STAGING_BYTES, k++) {
        size_t n = bytes - off < STAGING_BYTES ? bytes - off : STAGING_BYTES;
        if (k >= 2 && (r = cu->cuEventSynchronize(g->staged[k % 2])) != PE_CUDA_SUCCESS) break;
        memcpy(g->staging[k % 2], (const char *)src + off, n);
        r = cu->cuMemcpyHtoDAsync(dst + off, g->staging[k % 2], n, stream);
        if (r == PE_CUDA_SUCCESS) r = cu->cuEventRecord(g->staged[k % 2], stream);
    }
    CUresult done = cu->cuStreamSynchronize(stream); /* also when a chunk failed: the buffers are free after */
    return r != PE_CUDA_SUCCESS ? r : done;
}

/* A GPU result into host memory at dst: its GPU's streams are waited for
 * (its kernel may be on any of them). */
static CUresult copy_down(pe_port *p, void *dst)
{
    cuda_gpu *g = &gpus[p->dev_gpu], *was = bound;
    CUresult r = g->up ? bind(g) : PE_CUDA_ERROR_NO_DEVICE;
    if (r == PE_CUDA_SUCCESS) r = drain(g);
    if (r == PE_CUDA_SUCCESS) r = download(g, dst, (CUdeviceptr)(uintptr_t)p->dev_buf, pe_port_bytes(p));
    if (r != PE_CUDA_SUCCESS && g->up) disable(g, "a copy to the host failed", r);
    bind_again(was);
    return r;
}

bool pe_port_copy_out(pe_port *p, void *dst)
{
    CUresult r = copy_down(p, dst);
    if (r != PE_CUDA_SUCCESS) {
        fail_port(p, "the GPU result cannot be copied to the host", r);
        return false;
    }
    pe_rt.stats.bytes_to_host += pe_port_bytes(p);
    return true;
}

bool pe_port_host(pe_port *p)
{
    if (!p->host_stale) return true;
    size_t bytes = pe_port_bytes(p);
    void *buf = pe_mem_alloc(bytes);
    if (!buf) {
        fail_port(p, "out of host memory for the copy of a GPU result", PE_CUDA_SUCCESS);
        return false;
    }
    CUresult r = copy_down(p, buf);
    if (r != PE_CUDA_SUCCESS) {
        pe_mem_free(buf, bytes);
        fail_port(p, "the GPU result cannot be copied to the host", r);
        return false;
    }
    p->buf = buf;
    p->host_stale = false;
    pe_rt.stats.bytes_to_host += bytes;
    return true;
}

/* Copies to the GPU go on a stream of their own, not behind the batches in
 * flight (where there is one), and complete before any kernel reads them. */
static CUstream upload_stream(const cuda_gpu *g) { return g->overlap ? g->uploads : g->stream; }

/* q's device copy is d, on GPU g. */
static void give_copy(pe_port *q, const cuda_gpu *g, CUdeviceptr d)
{
    q->dev_buf = (void *)(uintptr_t)d;
    q->dev_gpu = (uint8_t)g->ordinal;
}

/* A value only another GPU has moves to this one: copied across once the
 * other GPU has computed it (cuMemcpyPeerAsync: direct between GPUs with
 * peer access, else the driver stages it through the host), and the other's
 * copy goes: a value has one device copy.  1 when moved; 0 when this GPU's
 * memory or the copy failed; -1 when the other GPU failed (it is off now). */
static int from_peer(cuda_gpu *g, pe_port *q, const uint32_t *keep, int n_keep)
{
    cuda_gpu *h = &gpus[q->dev_gpu];
    size_t bytes = pe_port_bytes(q);
    CUresult r = bind(h);
    if (r == PE_CUDA_SUCCESS) r = drain(h);
    if (r != PE_CUDA_SUCCESS) disable(h, "a kernel failed", r);
    CUresult rebound = bind(g);
    if (rebound != PE_CUDA_SUCCESS) {
        disable(g, "cuCtxSetCurrent failed", rebound);
        return 0;
    }
    if (r != PE_CUDA_SUCCESS) return -1;
    CUdeviceptr d = device_alloc(g, bytes, keep, n_keep), src = (CUdeviceptr)(uintptr_t)q->dev_buf;
    if (!d) return 0;
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    CUstream stream = upload_stream(g);
    r = cu->cuMemcpyPeerAsync(d, g->ctx, src, h->ctx, bytes, stream);
    if (r == PE_CUDA_SUCCESS) r = cu->cuStreamSynchronize(stream);
    if (r != PE_CUDA_SUCCESS) {
        device_free(g, d, bytes);
        disable(g, "a copy between GPUs failed", r);
        return 0;
    }
    if (pe_prof_on) pe_prof_transfer(true, bytes, t0, pe_prof_now(), gpu_track(g, "copies"));
    device_free(h, src, bytes); /* h has finished with it: drained */
    give_copy(q, g, d);
    pe_rt.stats.bytes_between_devices += bytes;
    return 1;
}

/* Gives an input its device copy on this GPU: an upload from the host, or a
 * move from the GPU that computed it.  A value on another GPU that the host
 * has too is uploaded (no waiting for the other GPU) and the other's copy
 * goes; one on a GPU that went off comes down first if it still can (else
 * it is invalid: lost with that GPU).  False when it has no copy here. */
static bool to_device(cuda_gpu *g, pe_port *q, const uint32_t *keep, int n_keep)
{
    if (q->dev_buf && q->dev_gpu == g->ordinal) return true;
    if (q->dev_buf) {
        cuda_gpu *h = &gpus[q->dev_gpu];
        if (q->host_stale && in_use(h)) {
            int moved = from_peer(g, q, keep, n_keep);
            if (moved >= 0) return moved == 1;
        }
        if (!pe_port_host(q)) return false; /* lost with h: q is invalid, with the reason */
        if (in_use(h)) pe_cuda_port_free(q); /* deferred while h's batches may read it */
        q->dev_buf = NULL; /* an off GPU's block stays where it is: its context frees it */
    }
    if (!q->buf && !pe_interp_materialise(q)) return false; /* a uniform constant as an array */
    size_t bytes = pe_port_bytes(q);
    CUdeviceptr d = device_alloc(g, bytes, keep, n_keep);
    if (!d) return false;
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    CUstream stream = upload_stream(g);
    CUresult r = upload_untimed(g, d, q->buf, bytes, stream);
    if (pe_prof_on && r == PE_CUDA_SUCCESS) pe_prof_transfer(true, bytes, t0, pe_prof_now(), gpu_track(g, "copies"));
    if (r != PE_CUDA_SUCCESS) {
        device_free(g, d, bytes);
        disable(g, "a copy to the GPU failed", r);
        return false;
    }
    give_copy(q, g, d);
    pe_rt.stats.bytes_to_device += bytes;
    return true;
}

/* ------------------------------------------------------------ kernels */

static void cubin_tag(cuda_gpu *g, char *out, size_t n);

static const compiled *lookup(cuda_gpu *g, const kir_kernel *k)
{
    uint64_t h = kir_hash(k);
    for (size_t i = 0; i < g->n_kernels; i++)
        if (g->kernels[i].hash == h && kir_equal(g->kernels[i].kir, k)) return &g->kernels[i];
    return NULL;
}

/* Kernel k's function in a module (and its combiner, for a reduction). */
static CUresult functions_of(CUmodule module, const kir_kernel *k, compiled *c)
{
    char name[48];
    pe_gccjit_kernel_name(k, name, sizeof name);
    c->combine = NULL;
    CUresult r = cu->cuModuleGetFunction(&c->fn, module, name);
    if (r == PE_CUDA_SUCCESS && pe_cuda_is_reduction(k)) r = cu->cuModuleGetFunction(&c->combine, module, PE_CUDA_COMBINER);
    return r;
}

static bool remember(cuda_gpu *g, const kir_kernel *k, compiled c)
{
    if (g->n_kernels == g->cap_kernels) {
        size_t cap = g->cap_kernels ? 2 * g->cap_kernels : 64;
        compiled *more = realloc(g->kernels, cap * sizeof *more);
        if (!more) return false;
        g->kernels = more, g->cap_kernels = cap;
    }
    kir_kernel *copy = malloc(sizeof *copy);
    if (!copy) return false;
    *copy = *k;
    c.kir = copy, c.hash = kir_hash(k);
    g->kernels[g->n_kernels++] = c;
    return true;
}

/* The disk cache's name for code of this device and compiler. */
static void cubin_tag(cuda_gpu *g, char *out, size_t n)
{
    snprintf(out, n, "sm_%d%d-nvrtc%d", g->dev->cc_major, g->dev->cc_minor, pe_nvrtc_version());
}

static bool keep_module(cuda_gpu *g, CUmodule module)
{
    if (g->n_modules == g->cap_modules) {
        size_t cap = g->cap_modules ? 2 * g->cap_modules : 16;
        CUmodule *more = realloc(g->modules, cap * sizeof *more);
        if (!more) return false;
        g->modules = more, g->cap_modules = cap;
    }
    g->modules[g->n_modules++] = module;
    return true;
}

/* A kernel compiled by an earlier process: its cubin from the disk cache. */
static bool from_disk(cuda_gpu *g, const kir_kernel *k, compiled *c)
{
    char tag[64];
    size_t size = 0;
    cubin_tag(g, tag, sizeof tag);
    void *cubin = pe_diskcache_load_blob(k, tag, &size);
    if (!cubin) return false;
    CUmodule module = NULL;
    CUresult r = cu->cuModuleLoadData(&module, cubin);
    free(cubin);
    if (r == PE_CUDA_SUCCESS) r = functions_of(module, k, c);
    bool kept = r == PE_CUDA_SUCCESS && keep_module(g, module);
    if (!kept || !remember(g, k, *c)) {
        char name[48];
        *c = (compiled){0}; /* nothing from a module that goes */
        pe_gccjit_kernel_name(k, name, sizeof name);
        if (module && !kept) cu->cuModuleUnload(module);
        pe_log_message(PE_LOG_WARN, "a cached cubin for %s does not load: the kernel is recompiled", name);
        return false;
    }
    pe_rt.stats.disk_cache_hits++;
    return true;
}

/* A cubin just compiled for these kernels: loaded into the context and
 * kept, each kernel remembered (but those known already) and the cubin
 * filed on disk.  False on a failure: *what names it, with its CUDA error
 * in *r (success: out of memory). */
static bool file_cubin(cuda_gpu *g, const kir_kernel *const *kernels, size_t n, const void *cubin, size_t size, const char **what,
                       CUresult *r)
{
    CUmodule module = NULL;
    *what = "cuModuleLoadData failed";
    if ((*r = cu->cuModuleLoadData(&module, cubin)) != PE_CUDA_SUCCESS) return false;
    *what = "out of memory";
    if (!keep_module(g, module)) {
        cu->cuModuleUnload(module);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        compiled c;
        if (lookup(g, kernels[i])) continue;
        *what = "cuModuleGetFunction failed";
        if ((*r = functions_of(module, kernels[i], &c)) != PE_CUDA_SUCCESS) return false;
        *what = "out of memory";
        if (!remember(g, kernels[i], c)) return false;
    }
    char tag[64];
    cubin_tag(g, tag, sizeof tag);
    pe_diskcache_store_blob(kernels, n, tag, cubin, size);
    return true;
}

/* Compiles every kernel of the sequence not compiled yet, in one NVRTC
 * program and one module; false (the GPU is then off) on any failure. */
static bool prepare(cuda_gpu *g, const pe_program_seq *seq, compiled *fns)
{
    const kir_kernel **missing = malloc(sizeof *missing * (seq->n ? seq->n : 1));
    if (!missing) return false;
    size_t n_missing = 0;
    for (size_t i = 0; i < seq->n; i++) {
        const pe_program *p = &seq->progs[i];
        fns[i] = (compiled){0};
        if (p->kind != PE_PROG_KERNEL) continue;
        const compiled *known = lookup(g, p->kir);
        /* the compile ahead (jit/aot.c) may have it in hand: wait for it */
        if (!known && pe_aot_await(p->kir, &pe_cuda_executor)) known = lookup(g, p->kir);
        if (known) {
            fns[i] = *known;
            seq->progs[i].served = p->served == PE_SERVED_trace ? PE_SERVED_trace : PE_SERVED_memory;
            pe_aot_note_served(p->kir, &pe_cuda_executor);
            continue;
        }
        if (from_disk(g, p->kir, &fns[i])) {
            seq->progs[i].served = PE_SERVED_disk;
            continue;
        }
        seq->progs[i].served = PE_SERVED_compiler;
        bool twin = false;
        for (size_t j = 0; j < n_missing && !twin; j++) twin = kir_equal(missing[j], p->kir);
        if (!twin) missing[n_missing++] = p->kir;
    }
    bool ok = true;
    if (n_missing) {
        char *source = pe_cuda_emit(missing, n_missing);
        void *cubin = NULL;
        size_t size = 0;
        char log[2048];
        int sm = sm_of(g);
        CUresult r = PE_CUDA_SUCCESS;
        const char *what = NULL;
        uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
        if (!source) {
            disable(g, "out of memory for the CUDA source", r);
            ok = false;
        } else if (!pe_nvrtc_compile(source, "pe_kernels.cu", sm, false, &cubin, &size, log, sizeof log)) {
            pe_log_message(PE_LOG_WARN, "NVRTC could not compile %zu kernel%s for sm_%d: %s", n_missing,
                           n_missing == 1 ? "" : "s", sm, log);
            disable(g, "NVRTC failed", r);
            ok = false;
        } else if (!file_cubin(g, missing, n_missing, cubin, size, &what, &r)) {
            if (r != PE_CUDA_SUCCESS) disable(g, what, r); /* out of memory: this batch on the CPU */
            ok = false;
        } else {
            pe_rt.stats.kernels_compiled += n_missing;
        }
        free(source), free(cubin);
        if (pe_prof_on) pe_prof_compile(ok ? (int)n_missing : 0, t0, pe_prof_now());
    }
    free(missing);
    for (size_t i = 0; ok && i < seq->n; i++) {
        if (seq->progs[i].kind != PE_PROG_KERNEL || fns[i].fn) continue;
        const compiled *known = lookup(g, seq->progs[i].kir);
        if ((ok = known != NULL)) fns[i] = *known;
    }
    return ok;
}

/* ------------------------------------------------------ compile ahead */

/* Whether every GPU in use has the kernel compiled, or its cubin on disk
 * (runtime lock held). */
bool pe_cuda_executor_has(const kir_kernel *k)
{
    for (int i = 0; i < PE_CUDA_MAX_DEVICES; i++) {
        cuda_gpu *g = &gpus[i];
        char tag[64];
        if (!in_use(g) || lookup(g, k)) continue;
        cubin_tag(g, tag, sizeof tag);
        if (!pe_diskcache_has_blob(k, tag)) return false;
    }
    return true;
}

/* A cubin compiled ahead for architecture sm, filed into each GPU in use of
 * that architecture as prepare() files a batch's (under the runtime lock). */
static bool adopt(int sm, const kir_kernel *const *kernels, size_t n, const void *cubin, size_t size, char *err,
                  size_t n_err)
{
    PE_API_GUARD;
    const char *what = "the GPU is off";
    CUresult r = PE_CUDA_ERROR_NO_DEVICE;
    bool filed = false;
    bool missed = false; /* a GPU of this architecture did not get them */
    for (int i = 0; i < PE_CUDA_MAX_DEVICES && !missed; i++) {
        cuda_gpu *g = &gpus[i];
        if (!in_use(g) || sm_of(g) != sm) continue;
        what = "cuCtxSetCurrent failed";
        missed = (r = bind(g)) != PE_CUDA_SUCCESS || !file_cubin(g, kernels, n, cubin, size, &what, &r);
        filed |= !missed;
    }
    if (filed && !missed) {
        pe_rt.stats.aot_kernels_compiled += n;
        return true;
    }
    char d[200] = "";
    if (r != PE_CUDA_SUCCESS) describe(r, d, sizeof d);
    snprintf(err, n_err, "%s%s%s", what, *d ? ": " : "", d);
    return false;
}

/* The compile ahead's kernels for every GPU in use: one NVRTC program per
 * architecture among them, compiled without the runtime lock. */
bool pe_cuda_compile_ahead(const kir_kernel *const *kernels, size_t n, char *err, size_t n_err)
{
    int sms[PE_CUDA_MAX_DEVICES], n_sms = 0;
    {
        PE_API_GUARD;
        for (int i = 0; i < PE_CUDA_MAX_DEVICES; i++) {
            if (!in_use(&gpus[i])) continue;
            int sm = sm_of(&gpus[i]), seen = 0;
            while (seen < n_sms && sms[seen] != sm) seen++;
            if (seen == n_sms) sms[n_sms++] = sm;
        }
    }
    if (!n_sms) {
        snprintf(err, n_err, "the GPU is off");
        return false;
    }
    char *source = pe_cuda_emit(kernels, n); /* pure: no lock */
    bool ok = source != NULL;
    if (!source) snprintf(err, n_err, "out of memory for the CUDA source");
    for (int a = 0; a < n_sms && ok; a++) {
        void *cubin = NULL;
        size_t size = 0;
        ok = pe_nvrtc_compile(source, "pe_kernels_ahead.cu", sms[a], false, &cubin, &size, err, n_err) &&
             adopt(sms[a], kernels, n, cubin, size, err, n_err);
        free(cubin);
    }
    free(source);
    return ok;
}

/* Launches one fused kernel: inputs to the device, outputs allocated there.
 * A reduction kernel leaves per-chunk partials, which its module's combiner
 * (cuda_emit.h) turns into the result right after it on the same stream, so
 * the value stays on the GPU until the host asks for it.  Members are READY
 * at once (later work is ordered after them on the GPU); their inputs are
 * dropped at the batch's end.  *launched: whether a kernel went to the GPU
 * (not when every member is invalid already).  False when it could not
 * launch: the caller computes the members on the CPU. */
static bool launch(cuda_gpu *g, const pe_program *p, const compiled *fn, bool *launched, const pe_sync_op *sync, const int *waits)
{
    const kir_kernel *k = p->kir;
    pe_cuda_args args, combine_args;
    uint32_t keep[KIR_MAX_PARAMS];
    memset(&args, 0, sizeof args);
    memset(&combine_args, 0, sizeof combine_args);
    *launched = false;
    for (int i = 0; i < k->n_params; i++) keep[i] = p->bind[i];
    for (int i = 0; i < k->n_params; i++) {
        pe_port *q = pe_port_at(p->bind[i]);
        if (k->params[i].kind != KIR_OUT && k->params[i].kind != KIR_OUT_PARTIAL && q->state == PE_PORT_INVALID) {
            for (int m = 0; m < p->n_members; m++) {
                pe_port_inherit_invalid(pe_port_at(p->members[m]), q);
                pe_port_drop_inputs(pe_port_at(p->members[m]));
            }
            return true; /* nothing to compute: every member is invalid */
        }
    }
    int result = -1; /* a reduction's parameter */
    for (int i = 0; i < k->n_params; i++) {
        pe_port *q = pe_port_at(p->bind[i]);
        switch (k->params[i].kind) {
        case KIR_IN_SCALAR:
            args.p[i].value = q->value;
            break;
        case KIR_IN_LITERAL: /* compiled in */
            break;
        case KIR_IN_CONTIG: case KIR_IN_BROADCAST:
            if (!to_device(g, q, keep, k->n_params)) return false;
            args.p[i].ptr = (CUdeviceptr)(uintptr_t)q->dev_buf;
            break;
        case KIR_OUT: case KIR_OUT_PARTIAL: {
            CUdeviceptr d = device_alloc(g, pe_port_bytes(q), keep, k->n_params);
            if (!d) return false;
            give_copy(q, g, d);
            args.p[i].ptr = d;
            if (k->params[i].kind == KIR_OUT_PARTIAL) result = i;
            break;
        }
        }
    }
    long long n = p->numel, n_chunks = (n + KIR_REDUCE_CHUNK - 1) / KIR_REDUCE_CHUNK;
    size_t partial_bytes = sizeof(double) * 2 * (size_t)(n_chunks ? n_chunks : 1);
    CUdeviceptr partials = 0;
    if (result >= 0) {
        const pe_port *r = pe_port_at(p->bind[result]);
        if (!fn->combine || !(partials = device_alloc(g, partial_bytes, keep, k->n_params))) return false;
        combine_args.p[0].ptr = partials;
        combine_args.p[1].ptr = args.p[result].ptr;
        combine_args.p[2].value = (double)n;
        combine_args.p[3].value = r->op;
        combine_args.p[4].value = r->dtype == PE_F32;
        args.p[result].ptr = partials; /* the kernel writes the partials */
    }
    void *params[] = {&n, &args}, *combine_params[] = {&n_chunks, &combine_args};
    CUstream stream = g->streams[sync->stream];
    g->busy |= 1u << sync->stream;
    CUresult r = PE_CUDA_SUCCESS;
    for (int w = 0; w < sync->n_waits && r == PE_CUDA_SUCCESS; w++)
        r = cu->cuStreamWaitEvent(stream, g->events[waits[sync->wait_begin + w]], 0);
    if (r != PE_CUDA_SUCCESS) {
    } else if (partials) {
        if (n_chunks > 0)
            r = cu->cuLaunchKernel(fn->fn, (unsigned)n_chunks, 1, 1, PE_CUDA_REDUCE_THREADS, 1, 1, 0, stream, params,
                                       NULL);
        if (r == PE_CUDA_SUCCESS)
            r = cu->cuLaunchKernel(fn->combine, 1, 1, 1, PE_CUDA_REDUCE_THREADS, 1, 1, 0, stream, combine_params, NULL);
    } else if (n > 0) {
        /* at most 32 blocks per SM, each thread striding over several
         * elements: measured on an H100, one element per thread made the
         * triad 68% and the chain 50% of the copy bandwidth instead of 79
         * and 68% */
        long long blocks = (n + BLOCK - 1) / BLOCK, most = (long long)g->dev->sms * 32;
        r = cu->cuLaunchKernel(fn->fn, (unsigned)(blocks < most ? blocks : most), 1, 1, BLOCK, 1, 1, 0, stream,
                                   params, NULL);
    }
    if (partials) device_free(g, partials, partial_bytes); /* deferred: reused once this batch has finished */
    /* the record goes even when nothing launched (n = 0): a later wait needs it */
    if (r == PE_CUDA_SUCCESS && sync->record_event >= 0) r = cu->cuEventRecord(g->events[sync->record_event], stream);
    if (r != PE_CUDA_SUCCESS) {
        disable(g, "cuLaunchKernel failed", r);
        return false;
    }
    *launched = true;
    pe_rt.stats.kernels_launched++;
    for (int i = 0; i < k->n_params; i++)
        if (k->params[i].kind == KIR_OUT || k->params[i].kind == KIR_OUT_PARTIAL) pe_port_at(p->bind[i])->host_stale = true;
    for (int m = 0; m < p->n_members; m++) {
        pe_port *q = pe_port_at(p->members[m]);
        if (q->state == PE_PORT_PENDING) q->state = PE_PORT_READY;
    }
    return true;
}

/* Undoes a launch that did not happen (or whose results are lost): device
 * buffers go, members are pending again for the CPU. */
static void unlaunch(cuda_gpu *g, const pe_program *p)
{
    for (int i = 0; i < p->kir->n_params; i++) {
        pe_port *q = pe_port_at(p->bind[i]);
        kir_param_kind kind = p->kir->params[i].kind;
        if ((kind == KIR_OUT || kind == KIR_OUT_PARTIAL) && q->state != PE_PORT_INVALID) {
            if (!g->disabled) pe_cuda_port_free(q);
            if (q->buf) pe_mem_free(q->buf, pe_port_bytes(q)); /* a host copy made mid-batch */
            q->buf = NULL;
            q->dev_buf = NULL;
            q->host_stale = false;
            q->state = PE_PORT_PENDING;
        }
    }
}

/* ------------------------------------------------------------- batches */

/* Streams and events for the batch's kernels: kernel k depends on an earlier
 * kernel that computes one of its inputs. */
static bool plan_streams(cuda_gpu *g, const pe_program_seq *seq, pe_sync_plan *plan)
{
    size_t n = 0, n_edges = 0;
    for (size_t i = 0; i < seq->n; i++)
        if (seq->progs[i].kind == PE_PROG_KERNEL) n++, n_edges += (size_t)seq->progs[i].kir->n_params;
    int *start = malloc(sizeof *start * (n + 1)), *preds = malloc(sizeof *preds * (n_edges ? n_edges : 1));
    const pe_program **kernels = malloc(sizeof *kernels * (n ? n : 1));
    bool ok = start && preds && kernels;
    if (ok) {
        size_t k = 0, e = 0;
        for (size_t i = 0; i < seq->n; i++)
            if (seq->progs[i].kind == PE_PROG_KERNEL) kernels[k++] = &seq->progs[i];
        for (k = 0; k < n; k++) {
            start[k] = (int)e;
            const pe_program *p = kernels[k];
            for (int a = 0; a < p->kir->n_params; a++) {
                if (p->kir->params[a].kind == KIR_OUT || p->kir->params[a].kind == KIR_OUT_PARTIAL) continue;
                for (size_t j = 0; j < k; j++) {
                    bool made_there = false;
                    for (int m = 0; m < kernels[j]->n_members && !made_there; m++) made_there = kernels[j]->members[m] == p->bind[a];
                    if (made_there) {
                        preds[e++] = (int)j;
                        break;
                    }
                }
            }
        }
        start[n] = (int)e;
        pe_sync_dag dag = {(int)n, start, preds};
        ok = pe_sync_plan_make(&dag, g->n_streams, EVENTS, plan);
    }
    free(start), free(preds), free(kernels);
    return ok;
}


/* The GPU of a batch, or NULL for the CPU: the one PE_DEVICE /
 * pe_set_device names; else (automatic) the place the cost model
 * (placement.c) says has the results of the batch's program sequence
 * soonest: the CPU or a GPU in use. */
static cuda_gpu *gpu_for(const pe_batch *b, const pe_program_seq *seq)
{
    if (b->device > 0) return &gpus[b->device - 1]; /* in use: cuda_run sent the others to the CPU */
    pe_batch_needs needs;
    if (!pe_place_needs(seq, &needs)) return NULL; /* out of memory: the CPU */
    pe_place_speed cpu = pe_place_cpu_speed(pe_rt.threads);
    const pe_place_speed *speeds[PE_PLACES] = {&cpu};
    for (int i = 0; i < PE_CUDA_MAX_DEVICES; i++)
        if (in_use(&gpus[i])) speeds[1 + i] = &gpus[i].speed;
    double seconds;
    int place = pe_place_cheapest(&needs, speeds, &seconds);
    cuda_gpu *choice = place == PE_PLACE_HOST ? NULL : &gpus[place - 1];
    if (pe_rt.log_level >= PE_LOG_DEBUG) {
        char where[16] = "the CPU";
        if (choice) snprintf(where, sizeof where, "GPU %d", choice->ordinal);
        pe_log_message(PE_LOG_DEBUG, "batch %u placed on %s: estimated %.1f us (CPU %.1f us)", b->epoch, where,
                       seconds * 1e6, pe_place_seconds(&needs, PE_PLACE_HOST, &cpu) * 1e6);
    }
    return choice;
}

/* Computes a port on the CPU's interpreter, its inputs copied to the host
 * first; an input whose GPU copy is lost makes it invalid. */
static size_t interpret(pe_port *p)
{
    for (int k = 0; k < p->n_in; k++) {
        pe_port *q = pe_port_at(p->in[k]);
        if (q->state == PE_PORT_READY && !pe_port_host(q)) {
            pe_port_inherit_invalid(p, q);
            pe_port_drop_inputs(p);
            return 0;
        }
    }
    return pe_interp_execute(p) ? 1 : 0;
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The profile's kernel records of a GPU batch.  Kernels run asynchronously
 * on several streams and are timed here per batch (host clock, launch to the
 * end of the synchronisation): each launched kernel gets the share of that
 * time its estimated work (elements x catalog cost of its ops) has, so the
 * records are estimates. */
static void profile_gpu_kernels(cuda_gpu *g, const pe_program_seq *seq, const bool *launched, uint64_t start, uint64_t end)
{
    double total = 0;
    double *work = calloc(seq->n ? seq->n : 1, sizeof *work);
    if (!work) return;
    for (size_t i = 0; i < seq->n; i++) {
        const pe_program *p = &seq->progs[i];
        if (p->kind != PE_PROG_KERNEL || !launched[i]) continue;
        double cost = 0;
        for (int m = 0; m < p->n_members; m++) cost += pe_op_table[pe_port_at(p->members[m])->op].cost + 1;
        total += work[i] = cost * (double)(p->numel > 0 ? p->numel : 1);
    }
    char device[16];
    snprintf(device, sizeof device, "cuda:%d", g->ordinal);
    int track = gpu_track(g, "kernels (batch time shared by estimated work)");
    uint64_t at = start;
    for (size_t i = 0; i < seq->n && total > 0; i++) {
        const pe_program *p = &seq->progs[i];
        if (!work[i]) continue;
        uint64_t span = (uint64_t)((double)(end - start) * work[i] / total);
        pe_prof_kernel_run run = {.hash = kir_hash(p->kir), .device = device, .members = p->members,
                                  .n_members = p->n_members, .elements = p->numel, .served = p->served,
                                  .compile_ns = p->compile_ns};
        pe_program_traffic(p, &run.bytes_read, &run.bytes_written);
        pe_prof_kernel_ran(&run, at, at + span, track);
        at += span;
    }
    free(work);
}

/* Begins a batch on the GPU: its serial, and its streams wait for the
 * previous batch to finish (its event on stream 0, which they do not follow
 * otherwise): its results are this batch's inputs, and the planner's events
 * are reused. */
static bool begin_batch(cuda_gpu *g)
{
    g->batches++;
    g->launching = true;
    if (g->finished + 1 >= g->batches) return true;
    CUevent previous = g->ended[(g->batches - 1) % IN_FLIGHT]; /* it ended in flight */
    CUresult r = PE_CUDA_SUCCESS;
    for (int i = 1; i < g->n_streams && r == PE_CUDA_SUCCESS; i++) r = cu->cuStreamWaitEvent(g->streams[i], previous, 0);
    if (r != PE_CUDA_SUCCESS) disable(g, "cuStreamWaitEvent failed", r);
    return r == PE_CUDA_SUCCESS;
}

/* Ends a batch without waiting for it: the streams it used join into
 * stream 0, which records the batch's event; at most IN_FLIGHT batches are
 * in flight (the oldest is waited for).  False on a CUDA failure. */
static bool end_batch_in_flight(cuda_gpu *g)
{
    uint64_t serial = g->batches;
    if (g->finished + IN_FLIGHT < serial) { /* its event's slot is the oldest batch's, IN_FLIGHT ago */
        int depth = pe_api_suspend(); /* the application records on meanwhile */
        CUresult r = cu->cuEventSynchronize(g->ended[serial % IN_FLIGHT]);
        pe_api_resume(depth);
        if (r != PE_CUDA_SUCCESS) {
            disable(g, "a kernel failed", r);
            return false;
        }
        g->finished = serial - IN_FLIGHT;
    }
    CUresult r = PE_CUDA_SUCCESS;
    for (int i = 1; i < g->n_streams && r == PE_CUDA_SUCCESS; i++) {
        if (!(g->busy & (1u << i))) continue;
        r = cu->cuEventRecord(g->joins[i], g->streams[i]);
        if (r == PE_CUDA_SUCCESS) r = cu->cuStreamWaitEvent(g->stream, g->joins[i], 0);
    }
    if (r == PE_CUDA_SUCCESS) r = cu->cuEventRecord(g->ended[serial % IN_FLIGHT], g->stream);
    if (r != PE_CUDA_SUCCESS) {
        disable(g, "cuEventRecord failed", r);
        return false;
    }
    g->in_flight = serial;
    return true;
}

static size_t cuda_run(pe_executor *ex, const pe_batch *b)
{
    (void)ex;
    double t0 = pe_rt.log_level >= PE_LOG_DEBUG ? seconds() : 0;
    if (b->device == 0 || (b->device > 0 && !in_use(&gpus[b->device - 1])))
        return pe_cpu_executor.run(&pe_cpu_executor, b);
    /* the program sequence: from the trace cache (sequences are the same on
     * every GPU, compiled code is looked up per device), else from the
     * program generator; placement weighs its kernels.  A batch placed on
     * the CPU gets the CPU executor's own sequence (its fusion rules differ
     * on reductions), this one kept for the batch's next placement. */
    pe_program_seq seq;
    bool hit;
    if (!pe_trace_or_proggen(b, &pe_cuda_fusion_rules, &seq, &hit)) return pe_cpu_executor.run(&pe_cpu_executor, b);
    cuda_gpu *g = gpu_for(b, &seq);
    if (!g || !current(g)) {
        if (!hit) pe_trace_store(b->key, &pe_cuda_fusion_rules, b->entries, b->n, b->epoch, &seq);
        pe_program_seq_free(&seq);
        return pe_cpu_executor.run(&pe_cpu_executor, b);
    }
    compiled *fns = calloc(seq.n ? seq.n : 1, sizeof *fns);
    bool *launched = calloc(seq.n ? seq.n : 1, sizeof *launched);
    pe_sync_plan plan = {0};
    if (!fns || !launched || !prepare(g, &seq, fns) || !plan_streams(g, &seq, &plan)) {
        free(fns), free(launched);
        pe_program_seq_free(&seq);
        return pe_cpu_executor.run(&pe_cpu_executor, b);
    }
    if (!hit) pe_trace_store(b->key, &pe_cuda_fusion_rules, b->entries, b->n, b->epoch, &seq);
    size_t computed = 0;
    int kernel_no = 0;
    double t1 = t0 ? seconds() : 0;
    begin_batch(g);
    uint64_t prof_start = pe_prof_on ? pe_prof_now() : 0;
    for (size_t i = 0; i < seq.n; i++) {
        const pe_program *p = &seq.progs[i];
        pe_port *port = pe_port_at(p->port);
        switch (p->kind) {
        case PE_PROG_SKIP:
            pe_port_drop_inputs(port);
            port->state = PE_PORT_READY;
            break;
        case PE_PROG_INTERP: /* its inputs from the GPU come down first */
            computed += interpret(port);
            break;
        case PE_PROG_KERNEL:
            if (g->disabled || !launch(g, p, &fns[i], &launched[i], &plan.ops[kernel_no], plan.waits)) {
                unlaunch(g, p);
                for (int m = 0; m < p->n_members; m++) computed += interpret(pe_port_at(p->members[m]));
            }
            kernel_no++;
            break;
        }
    }
    pe_sync_plan_free(&plan);
    g->launching = false;
    double t2 = t0 ? seconds() : 0;
    /* The batch ends in flight, unless the profiler times it (per batch) or
     * that fails: then every stream is waited for, the application
     * recording on meanwhile. */
    bool in_flight = g->overlap && !pe_prof_on && !g->disabled && end_batch_in_flight(g);
    CUresult r = PE_CUDA_SUCCESS;
    if (!in_flight) {
        int depth = pe_api_suspend();
        for (int i = 0; i < g->n_streams && r == PE_CUDA_SUCCESS; i++) /* every stream: `busy` is the lock holder's */
            r = cu->cuStreamSynchronize(g->streams[i]);
        pe_api_resume(depth);
        if (r == PE_CUDA_SUCCESS) {
            g->busy = 0;
            g->finished = g->batches; /* every batch before it too */
        } else {
            disable(g, "a kernel failed", r);
        }
        if (pe_prof_on && r == PE_CUDA_SUCCESS) profile_gpu_kernels(g, &seq, launched, prof_start, pe_prof_now());
    }
    if (!g->disabled) pe_rt.stats.gpu_batches++; /* a batch that lost the GPU midway counts as the CPU's */
    for (size_t i = 0; i < seq.n; i++) {
        const pe_program *p = &seq.progs[i];
        if (p->kind != PE_PROG_KERNEL || !launched[i]) continue;
        if (r != PE_CUDA_SUCCESS) { /* results lost with the context: the CPU computes them */
            unlaunch(g, p);
            for (int m = 0; m < p->n_members; m++) computed += interpret(pe_port_at(p->members[m]));
            continue;
        }
        computed += (size_t)p->n_members;
        for (int m = 0; m < p->n_members; m++) pe_port_drop_inputs(pe_port_at(p->members[m]));
    }
    if (t0)
        pe_log_message(PE_LOG_DEBUG, "GPU %d batch of %zu programs: plan+compile %.1f us, launch %.1f us, %s %.1f us",
                       g->ordinal, seq.n, (t1 - t0) * 1e6, (t2 - t1) * 1e6, in_flight ? "in flight after" : "wait+finish",
                       (seconds() - t2) * 1e6);
    free(fns), free(launched);
    pe_program_seq_free(&seq);
    return computed;
}

pe_executor pe_cuda_executor = {"cuda", cuda_run};

void pe_cuda_executor_wait(void)
{
    cuda_gpu *was = bound;
    for (int i = 0; i < PE_CUDA_MAX_DEVICES; i++) {
        cuda_gpu *g = &gpus[i];
        if (!in_use(g) || g->finished == g->batches || !current(g)) continue;
        CUresult r = drain(g);
        if (r != PE_CUDA_SUCCESS) disable(g, "a kernel failed", r);
    }
    bind_again(was);
}

bool pe_cuda_executor_serves(int ordinal)
{
    return ordinal >= 0 && ordinal < PE_CUDA_MAX_DEVICES && in_use(&gpus[ordinal]);
}

/* Gives back all a GPU holds (also one that failed as it started, or
 * later: no kernel runs any more then). */
static void stop_gpu(cuda_gpu *g)
{
    if (!g->ctx || bind(g) != PE_CUDA_SUCCESS) g->up = false; /* nothing to wait for */
    if (g->up) drain(g);
    pool_trim(g);
    while (g->deferred) {
        cached_block *b = g->deferred;
        g->deferred = b->next;
        cu->cuMemFree(b->ptr);
        free(b);
    }
    for (size_t i = 0; i < g->n_kernels; i++) free(g->kernels[i].kir);
    free(g->kernels);
    for (size_t i = 0; i < g->n_modules; i++) cu->cuModuleUnload(g->modules[i]);
    free(g->modules);
    for (int i = 0; i < 2; i++) {
        if (g->staging[i]) cu->cuMemFreeHost(g->staging[i]);
        if (g->staged[i]) cu->cuEventDestroy(g->staged[i]);
    }
    for (int i = 0; i < g->n_streams; i++) cu->cuStreamDestroy(g->streams[i]);
    if (g->uploads) cu->cuStreamDestroy(g->uploads);
    for (int e = 0; e < EVENTS; e++)
        if (g->events[e]) cu->cuEventDestroy(g->events[e]);
    for (int i = 0; i < STREAMS; i++)
        if (g->joins[i]) cu->cuEventDestroy(g->joins[i]);
    for (int k = 0; k < IN_FLIGHT; k++)
        if (g->ended[k]) cu->cuEventDestroy(g->ended[k]);
    if (g->ctx) cu->cuDevicePrimaryCtxRelease(g->dev->handle);
    memset(g, 0, sizeof *g);
}

/* Starts GPU `ordinal` (its context, streams, events, staging buffers), once;
 * false (with a warning) when it cannot be used. */
bool pe_cuda_executor_start(int ordinal)
{
    const char *why = NULL;
    cu = pe_cuda_load(&why);
    if (!cu) {
        pe_log_message(PE_LOG_INFO, "no GPU: %s", why);
        return false;
    }
    if (!pe_nvrtc_available(&why)) {
        pe_log_message(PE_LOG_WARN, "a GPU is present but %s: the CPU computes", why);
        return false;
    }
    const pe_cuda_device *dev = pe_cuda_device_at(ordinal);
    if (!dev) {
        pe_log_message(PE_LOG_WARN, "there is no CUDA device %d (%d found)", ordinal, pe_cuda_device_count());
        return false;
    }
    cuda_gpu *g = &gpus[ordinal];
    if (g->up && g->disabled)
        pe_log_message(PE_LOG_WARN, "GPU %d (%s) went off after a CUDA failure earlier in this run", ordinal, dev->name);
    if (g->up) return !g->disabled;
    cuda_gpu *was = bound;
    g->ordinal = ordinal;
    g->dev = dev;
    CUresult r = cu->cuDevicePrimaryCtxRetain(&g->ctx, g->dev->handle);
    if (r == PE_CUDA_SUCCESS) r = bind(g);
    if (r == PE_CUDA_SUCCESS) r = cu->cuStreamCreate(&g->streams[0], 1 /* non-blocking */);
    g->stream = g->streams[0];
    g->n_streams = r == PE_CUDA_SUCCESS;
    /* more streams and the event pool: without them, one stream does it all */
    bool extra = r == PE_CUDA_SUCCESS;
    for (int e = 0; e < EVENTS && extra; e++) extra = cu->cuEventCreate(&g->events[e], 2 /* no timing */) == PE_CUDA_SUCCESS;
    for (int i = 1; i < STREAMS && extra; i++) {
        extra = cu->cuStreamCreate(&g->streams[i], 1) == PE_CUDA_SUCCESS;
        if (extra) g->n_streams = i + 1;
    }
    /* batches in flight: without these, every batch waits for its end */
    bool overlap = r == PE_CUDA_SUCCESS && cu->cuStreamCreate(&g->uploads, 1) == PE_CUDA_SUCCESS;
    for (int i = 1; i < g->n_streams && overlap; i++) overlap = cu->cuEventCreate(&g->joins[i], 2) == PE_CUDA_SUCCESS;
    for (int k = 0; k < IN_FLIGHT && overlap; k++) overlap = cu->cuEventCreate(&g->ended[k], 2) == PE_CUDA_SUCCESS;
    g->overlap = overlap;
    if (r != PE_CUDA_SUCCESS) {
        char d[200];
        describe(r, d, sizeof d);
        pe_log_message(PE_LOG_WARN, "the GPU %s cannot be used (%s): the CPU computes", g->dev->name, d);
        stop_gpu(g);
        bind_again(was);
        return false;
    }
    g->cap = SIZE_MAX;
    const char *limit = getenv("PE_CUDA_MEM_LIMIT");
    if (limit && *limit) {
        char *end;
        unsigned long long v = strtoull(limit, &end, 10);
        if (*end || v == 0) pe_log_message(PE_LOG_WARN, "PE_CUDA_MEM_LIMIT=%s is not a byte count; ignored", limit);
        else g->cap = (size_t)v;
    }
    refresh_limit(g);
    bool staging = true; /* optional: without the buffers copies go directly */
    for (int i = 0; i < 2 && staging; i++) {
        if (!(staging = cu->cuMemHostAlloc(&g->staging[i], STAGING_BYTES, 0) == PE_CUDA_SUCCESS)) g->staging[i] = NULL;
        if (staging && !(staging = cu->cuEventCreate(&g->staged[i], 2) == PE_CUDA_SUCCESS)) g->staged[i] = NULL;
    }
    for (int i = 0; i < 2 && !staging; i++) {
        if (g->staging[i]) cu->cuMemFreeHost(g->staging[i]);
        if (g->staged[i]) cu->cuEventDestroy(g->staged[i]);
        g->staging[i] = NULL, g->staged[i] = NULL;
    }
    g->up = true;
    g->disabled = false;
    g->speed = pe_place_gpu_speed(dev);
    bind_again(was);
    pe_log_message(PE_LOG_INFO, "GPU %d: %s (sm_%d%d, %d SMs, %.1f GiB), NVRTC %d.%d; expected %.0f GB/s, %.1f Tunits/s, f64 1/%.0f",
                   ordinal, g->dev->name, g->dev->cc_major, g->dev->cc_minor, g->dev->sms,
                   (double)g->dev->memory_bytes / (1 << 30), pe_nvrtc_version() / 1000, pe_nvrtc_version() % 1000 / 10,
                   g->speed.bytes_per_s / 1e9, g->speed.work_per_s / 1e12, g->speed.f64_ratio);
    return true;
}

void pe_cuda_executor_stop(void)
{
    for (int i = 0; i < PE_CUDA_MAX_DEVICES; i++)
        if (gpus[i].ctx) stop_gpu(&gpus[i]);
    if (cu) cu->cuCtxSetCurrent(NULL); /* the application's thread keeps no released context */
    bound = NULL;
}
