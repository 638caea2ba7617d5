/* cuda_transfer.c — residency of array values for the CUDA executor: a
 * value computed on a GPU stays there and comes to the host only when the
 * host needs it (pe_port_host, pe_port_copy_out); an input goes to the GPU
 * that needs it once, uploaded from the host or moved from the GPU that has
 * it (a value has one device copy).  Large copies either way go in chunks
 * through the GPU's two pinned staging buffers; a copy that fails turns the
 * GPU off, and a value lost with it is invalid, with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "cuda_gpu.h"
#include "../base/error.h"
#include "../base/memory.h"
#include "../interp/interp.h"
#include "../../profiler/collect.h"
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

/* Device to host: through the pinned buffers when it is large and they
 * exist, else directly. */
static CUresult download_untimed(cuda_gpu *g, void *dst, CUdeviceptr src, size_t bytes);

/* The profile's track for this GPU's copies or kernels. */
int pe_cuda_gpu_track(cuda_gpu *g, const char *what)
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
    if (pe_prof_on && r == PE_CUDA_SUCCESS) pe_prof_transfer(false, bytes, t0, pe_prof_now(), pe_cuda_gpu_track(g, "copies"));
    return r;
}

static CUresult download_untimed(cuda_gpu *g, void *dst, CUdeviceptr src, size_t bytes)
{
    CUresult r;
    if (bytes < 2 * STAGING_BYTES || !g->staging[1]) {
        r = pe_cuda_api_in_use->cuMemcpyDtoHAsync(dst, src, bytes, g->stream);
        return r == PE_CUDA_SUCCESS ? pe_cuda_api_in_use->cuStreamSynchronize(g->stream) : r;
    }
    size_t done = 0, pending = 0; /* bytes of the chunk waiting in staging[(k - 1) % 2] */
    for (int k = 0; done + pending < bytes || pending; k++) {
        size_t off = done + pending, n = bytes - off < STAGING_BYTES ? bytes - off : STAGING_BYTES;
        if (n && (r = pe_cuda_api_in_use->cuMemcpyDtoHAsync(g->staging[k % 2], src + off, n, g->stream)) != PE_CUDA_SUCCESS) return r;
        if (pending) memcpy((char *)dst + done, g->staging[(k + 1) % 2], pending); /* while chunk k moves */
        done += pending;
        if ((r = pe_cuda_api_in_use->cuStreamSynchronize(g->stream)) != PE_CUDA_SUCCESS) return r;
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
        r = pe_cuda_api_in_use->cuMemcpyHtoDAsync(dst, src, bytes, stream);
        return r == PE_CUDA_SUCCESS ? pe_cuda_api_in_use->cuStreamSynchronize(stream) : r;
    }
    for (size_t off = 0, k = 0; off < bytes && r == PE_CUDA_SUCCESS; off += STAGING_BYTES, k++) {
        size_t n = bytes - off < STAGING_BYTES ? bytes - off : STAGING_BYTES;
        if (k >= 2 && (r = pe_cuda_api_in_use->cuEventSynchronize(g->staged[k % 2])) != PE_CUDA_SUCCESS) break;
        memcpy(g->staging[k % 2], (const char *)src + off, n);
        r = pe_cuda_api_in_use->cuMemcpyHtoDAsync(dst + off, g->staging[k % 2], n, stream);
        if (r == PE_CUDA_SUCCESS) r = pe_cuda_api_in_use->cuEventRecord(g->staged[k % 2], stream);
    }
    CUresult done = pe_cuda_api_in_use->cuStreamSynchronize(stream); /* also when a chunk failed: the buffers are free after */
    return r != PE_CUDA_SUCCESS ? r : done;
}

/* A GPU result into host memory at dst: its GPU's streams are waited for
 * (its kernel may be on any of them). */
static CUresult copy_down(pe_port *p, void *dst)
{
    cuda_gpu *g = &pe_cuda_gpus[p->dev_gpu], *was = pe_cuda_bound;
    CUresult r = g->up ? pe_cuda_bind(g) : PE_CUDA_ERROR_NO_DEVICE;
    if (r == PE_CUDA_SUCCESS) r = pe_cuda_drain(g);
    if (r == PE_CUDA_SUCCESS) r = download(g, dst, (CUdeviceptr)(uintptr_t)p->dev_buf, pe_port_bytes(p));
    if (r != PE_CUDA_SUCCESS && g->up) pe_cuda_disable(g, "a copy to the host failed", r);
    pe_cuda_bind_again(was);
    return r;
}

bool pe_port_copy_out(pe_port *p, void *dst)
{
    CUresult r = copy_down(p, dst);
    if (r != PE_CUDA_SUCCESS) {
        fail_port(p, "the GPU result cannot be copied to the host", r);
        return false;
    }
    pe_counters.bytes_to_host += pe_port_bytes(p);
    return true;
}

bool pe_cuda_host_copy(pe_port *p)
{
    size_t bytes = pe_port_bytes(p);
    void *buf = pe_mem_alloc(bytes);
    if (!buf) {
        fail_port(p, "out of host memory for the copy of a GPU result", PE_CUDA_SUCCESS);
        return false;
    }
    if (!pe_port_copy_out(p, buf)) {
        pe_mem_free(buf, bytes);
        return false;
    }
    p->buf = buf;
    p->host_stale = false;
    return true;
}

/* Copies to the GPU go on a stream of their own, not behind the batches in
 * flight (where there is one), and complete before any kernel reads them. */
static CUstream upload_stream(const cuda_gpu *g) { return g->overlap ? g->uploads : g->stream; }

/* q's device copy is d, on GPU g. */
void pe_cuda_give_copy(pe_port *q, const cuda_gpu *g, CUdeviceptr d)
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
    cuda_gpu *h = &pe_cuda_gpus[q->dev_gpu];
    size_t bytes = pe_port_bytes(q);
    CUresult r = pe_cuda_bind(h);
    if (r == PE_CUDA_SUCCESS) r = pe_cuda_drain(h);
    if (r != PE_CUDA_SUCCESS) pe_cuda_disable(h, "a kernel failed", r);
    CUresult rebound = pe_cuda_bind(g);
    if (rebound != PE_CUDA_SUCCESS) {
        pe_cuda_disable(g, "cuCtxSetCurrent failed", rebound);
        return 0;
    }
    if (r != PE_CUDA_SUCCESS) return -1;
    CUdeviceptr d = pe_cuda_device_alloc(g, bytes, keep, n_keep), src = (CUdeviceptr)(uintptr_t)q->dev_buf;
    if (!d) return 0;
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    CUstream stream = upload_stream(g);
    r = pe_cuda_api_in_use->cuMemcpyPeerAsync(d, g->ctx, src, h->ctx, bytes, stream);
    if (r == PE_CUDA_SUCCESS) r = pe_cuda_api_in_use->cuStreamSynchronize(stream);
    if (r != PE_CUDA_SUCCESS) {
        pe_cuda_device_free(g, d, bytes);
        pe_cuda_disable(g, "a copy between GPUs failed", r);
        return 0;
    }
    if (pe_prof_on) pe_prof_transfer(true, bytes, t0, pe_prof_now(), pe_cuda_gpu_track(g, "copies"));
    pe_cuda_device_free(h, src, bytes); /* h has finished with it: drained */
    pe_cuda_give_copy(q, g, d);
    pe_counters.bytes_between_devices += bytes;
    return 1;
}

/* Gives an input its device copy on this GPU: an upload from the host, or a
 * move from the GPU that computed it.  A value on another GPU that the host
 * has too is uploaded (no waiting for the other GPU) and the other's copy
 * goes; one on a GPU that went off comes down first if it still can (else
 * it is invalid: lost with that GPU).  False when it has no copy here. */
bool pe_cuda_to_device(cuda_gpu *g, pe_port *q, const uint32_t *keep, int n_keep)
{
    if (q->dev_buf && q->dev_gpu == g->ordinal) return true;
    if (q->dev_buf) {
        cuda_gpu *h = &pe_cuda_gpus[q->dev_gpu];
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
    CUdeviceptr d = pe_cuda_device_alloc(g, bytes, keep, n_keep);
    if (!d) return false;
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    CUstream stream = upload_stream(g);
    CUresult r = upload_untimed(g, d, q->buf, bytes, stream);
    if (pe_prof_on && r == PE_CUDA_SUCCESS) pe_prof_transfer(true, bytes, t0, pe_prof_now(), pe_cuda_gpu_track(g, "copies"));
    if (r != PE_CUDA_SUCCESS) {
        pe_cuda_device_free(g, d, bytes);
        pe_cuda_disable(g, "a copy to the GPU failed", r);
        return false;
    }
    pe_cuda_give_copy(q, g, d);
    pe_counters.bytes_to_device += bytes;
    return true;
}
