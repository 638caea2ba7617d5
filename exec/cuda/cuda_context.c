/* cuda_context.c — what every file of the CUDA executor shares at run
 * time: the driver's API in use, the GPUs by ordinal, the context this
 * thread made current last (pe_cuda_bind), and a GPU's failure (one
 * warning, then the CPU does its work).  A file of its own so that the
 * executor's parts (memory, transfers, kernels, library calls) depend on
 * it and not on cuda.c, which depends on them. */
#include "cuda_gpu.h"
#include "../base/error.h"

const pe_cuda_api *pe_cuda_api_in_use;
cuda_gpu pe_cuda_gpus[PE_CUDA_MAX_DEVICES];

/* One warning, then the CPU does this GPU's work. */
void pe_cuda_disable(cuda_gpu *g, const char *what, CUresult r)
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
__thread cuda_gpu *pe_cuda_bound;

CUresult pe_cuda_bind(cuda_gpu *g)
{
    CUresult r = pe_cuda_api_in_use->cuCtxSetCurrent(g->ctx);
    pe_cuda_bound = r == PE_CUDA_SUCCESS ? g : NULL;
    return r;
}

void pe_cuda_bind_again(cuda_gpu *was)
{
    if (was && was != pe_cuda_bound && was->up) pe_cuda_bind(was);
}
