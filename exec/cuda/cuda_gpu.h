/* cuda_gpu.h — what the files of the CUDA executor share (internal, not
 * part of PE's API): the constants that size a GPU's streams, events,
 * memory pool and batches in flight; a GPU in use (cuda_gpu: its context,
 * streams, memory pool, staging buffers and compiled kernels); the driver's
 * API and the GPUs by ordinal; and the functions one of the files calls in
 * another.  cuda.c describes the executor as a whole; the files:
 *   cuda.c           launches, batches, a GPU's start and stop
 *   cuda_context.c   the API in use, the GPUs, the bound context, failures
 *   cuda_memory.c    the device memory pool
 *   cuda_transfer.c  residency: copies to the host, to a GPU, between GPUs
 *   cuda_kernels.c   compiled kernels, NVRTC, the disk cache, the compile ahead
 *   cuda_libs.c      cuBLAS, cuSOLVER, cuFFT, cuSPARSE loaded at run time
 *   cuda_intrinsics.c  library calls (matmul, LU, spmv) on cuBLAS, cuSOLVER and cuSPARSE */
#ifndef PE_EXEC_CUDA_GPU_H
#define PE_EXEC_CUDA_GPU_H

#include "cuda_driver.h"
#include "cuda_libs.h"
#include "../base/executor.h"

#define STREAMS 4
#define EVENTS 16
#define POOL_CLASSES 48
/* batches that may run on the GPU while the host goes on: the next waits
 * for the oldest (flow control, and the ring of their events) */
#define IN_FLIGHT 8
/* each of a GPU's two pinned staging buffers (cuda_gpu.staging) */
#define STAGING_BYTES (8u << 20)

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
    compiled **kernels; /* each its own allocation: the executor hands out pointers to them */
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
    size_t limit; /* what PE may hold: see pe_cuda_refresh_limit */
    size_t cap;   /* PE_CUDA_MEM_LIMIT, else no bound of its own */
    bool told_full; /* the warning that the memory is full went out */
    /* the libraries' handles on this GPU (cuda_intrinsics.c), made at its first call, on stream 0 */
    cublasHandle_t blas;
    cusolverDnHandle_t solver;
    cusparseHandle_t sparse;
    /* CSR structures whose indices were checked on this GPU's behalf (cuda_intrinsics.c): the
     * structure's port and generation (a value never changes under them) and the matrix's shape */
    struct {
        uint32_t port, gen;
        int64_t n_rows, n_cols;
        bool valid;
    } csr_checked[8];
    int csr_next;
    /* cuFFT plans made on this GPU (cuda_intrinsics.c), by transform type, lengths and batch; the
     * oldest is destroyed (after the stream drains) when a ninth is needed */
    struct {
        int type, rank, n[2], batch;
        cufftHandle plan;
        bool valid;
    } fft_plans[8];
    int fft_next;
} cuda_gpu;

/* the driver's API, loaded as the first GPU starts */
extern const pe_cuda_api *pe_cuda_api_in_use;
/* the GPUs by ordinal, started as they are first asked for (PE_DEVICE at
 * pe_init, then pe_set_device) */
extern cuda_gpu pe_cuda_gpus[PE_CUDA_MAX_DEVICES];

static inline bool in_use(const cuda_gpu *g) { return g->up && !g->disabled; }

static inline int sm_of(const cuda_gpu *g) { return g->dev->cc_major * 10 + g->dev->cc_minor; }

static inline void describe(CUresult r, char *out, size_t n) { pe_cuda_describe(r, out, n); }

/* cuda_context.c: failures (pe_cuda_disable: one warning, then the CPU does the
 * GPU's work) and the context this thread made current last (pe_cuda_bound;
 * pe_cuda_bind_again binds the one it was after work on another GPU). */
void pe_cuda_disable(cuda_gpu *g, const char *what, CUresult r);
extern __thread cuda_gpu *pe_cuda_bound;
CUresult pe_cuda_bind(cuda_gpu *g);
void pe_cuda_bind_again(cuda_gpu *was);

/* cuda_memory.c: the device memory pool; a port's device copy given back
 * to it (the executor's free_device_copy). */
void pe_cuda_port_free(pe_port *p);
void pe_cuda_pool_trim(cuda_gpu *g);
CUresult pe_cuda_drain(cuda_gpu *g);
void pe_cuda_refresh_limit(cuda_gpu *g);
CUdeviceptr pe_cuda_device_alloc(cuda_gpu *g, size_t bytes, const uint32_t *keep, int n_keep);
void pe_cuda_device_free(cuda_gpu *g, CUdeviceptr ptr, size_t bytes);

/* cuda_transfer.c: residency; a GPU result's host copy made (the
 * executor's host_copy, behind pe_port_host). */
bool pe_cuda_host_copy(pe_port *p);
int pe_cuda_gpu_track(cuda_gpu *g, const char *what);
void pe_cuda_give_copy(pe_port *q, const cuda_gpu *g, CUdeviceptr d);
bool pe_cuda_to_device(cuda_gpu *g, pe_port *q, const uint32_t *keep, int n_keep);

/* cuda_kernels.c: linked kernels (the executor's linked and link). */
const void *pe_cuda_linked(pe_executor *ex, int place, const kir_kernel *k);
bool pe_cuda_link(pe_executor *ex, int place, const pe_artifact *a, const kir_kernel *const *kernels, size_t n,
                  bool *fatal, char *err, size_t n_err);
void pe_cuda_forget_kernels(cuda_gpu *g);

/* cuda_intrinsics.c: whether the executor makes library call p (the
 * executor's `calls`); p made on GPU g's stream 0 (the members computed),
 * or -1 where the host makes it (dispatch.c, its operands copied down);
 * the handles given back as the GPU stops. */
bool pe_cuda_calls(pe_executor *ex, const pe_program *p);
int pe_cuda_intrinsic(cuda_gpu *g, const pe_program *p);
void pe_cuda_release_handles(cuda_gpu *g);

#endif
