/* cuda_kernels.c — the CUDA executor's linked kernels, per GPU: linking a
 * cubin (cuModuleLoadData) into the GPU's context, the modules it keeps
 * loaded, and the kernels (and reductions' combiners) found in them,
 * looked up by their kernel IR.  Compiling them is the GPU target's
 * (cuda_target.c, NVRTC); where code comes from (linked already, the disk
 * cache, the compile ahead, the compiler) is the provisioning's
 * (jit/provision/provision.c). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_gpu.h"
#include "../base/grow.h"
#include "cuda_emit.h"

static cuda_gpu *gpu_of(int place) { return &pe_cuda_gpus[place - 1]; }

static const compiled *lookup(cuda_gpu *g, const kir_kernel *k)
{
    uint64_t h = kir_hash(k);
    for (size_t i = 0; i < g->n_kernels; i++)
        if (g->kernels[i]->hash == h && kir_equal(g->kernels[i]->kir, k)) return g->kernels[i];
    return NULL;
}

const void *pe_cuda_linked(pe_executor *ex, int place, const kir_kernel *k)
{
    (void)ex;
    return place >= 1 && place <= PE_CUDA_MAX_DEVICES ? lookup(gpu_of(place), k) : NULL;
}

/* A full reduction (its partials have a combiner; an axis reduction's
 * kernel stores its results itself). */
static bool is_reduction(const kir_kernel *k) { return !k->axis_reduction && kir_reduction_of(k); }

/* Kernel k's function in a module (and its combiner, for a reduction). */
static CUresult functions_of(CUmodule module, const kir_kernel *k, compiled *c)
{
    char name[48];
    kir_kernel_name(k, name, sizeof name);
    c->combine = NULL;
    CUresult r = pe_cuda_api_in_use->cuModuleGetFunction(&c->fn, module, name);
    if (r == PE_CUDA_SUCCESS && is_reduction(k))
        r = pe_cuda_api_in_use->cuModuleGetFunction(&c->combine, module, PE_CUDA_COMBINER);
    return r;
}

static bool remember(cuda_gpu *g, const kir_kernel *k, compiled c)
{
    if (!PE_GROW(g->kernels, g->cap_kernels, g->n_kernels + 1)) return false;
    compiled *record = malloc(sizeof *record);
    kir_kernel *copy = malloc(sizeof *copy);
    if (!record || !copy) {
        free(record), free(copy);
        return false;
    }
    *copy = *k;
    c.kir = copy, c.hash = kir_hash(k);
    *record = c;
    g->kernels[g->n_kernels++] = record;
    return true;
}

static bool keep_module(cuda_gpu *g, CUmodule module)
{
    if (!PE_GROW(g->modules, g->cap_modules, g->n_modules + 1)) return false;
    g->modules[g->n_modules++] = module;
    return true;
}

/* Loads a cubin into the GPU's context and keeps the module; remembers
 * each of its kernels but those known already.  A CUDA error is *fatal
 * (the caller gives the GPU up); out of memory is not. */
bool pe_cuda_link(pe_executor *ex, int place, const pe_artifact *a, const kir_kernel *const *kernels, size_t n,
                  bool *fatal, char *err, size_t n_err)
{
    assert(pe_api_held());
    (void)ex;
    cuda_gpu *g = gpu_of(place), *was = pe_cuda_bound;
    const char *what = "cuCtxSetCurrent failed";
    CUmodule module = NULL;
    bool kept = false, ok = false;
    CUresult r = pe_cuda_bind(g);
    if (r == PE_CUDA_SUCCESS) {
        what = "cuModuleLoadData failed";
        r = pe_cuda_api_in_use->cuModuleLoadData(&module, a->bytes);
    }
    if (r == PE_CUDA_SUCCESS) {
        what = "out of memory";
        kept = keep_module(g, module);
        ok = kept;
        for (size_t i = 0; i < n && ok; i++) {
            compiled c;
            if (lookup(g, kernels[i])) continue;
            what = "cuModuleGetFunction failed";
            if ((r = functions_of(module, kernels[i], &c)) != PE_CUDA_SUCCESS) ok = false;
            else if (!remember(g, kernels[i], c)) what = "out of memory", ok = false;
        }
    }
    if (module && !kept) pe_cuda_api_in_use->cuModuleUnload(module);
    pe_cuda_bind_again(was);
    *fatal = !ok && r != PE_CUDA_SUCCESS;
    if (!ok) {
        char d[200] = "";
        if (r != PE_CUDA_SUCCESS) describe(r, d, sizeof d);
        snprintf(err, n_err, "%s%s%s", what, *d ? ": " : "", d);
    }
    return ok;
}

void pe_cuda_forget_kernels(cuda_gpu *g)
{
    for (size_t i = 0; i < g->n_kernels; i++) {
        free(g->kernels[i]->kir);
        free(g->kernels[i]);
    }
    free(g->kernels);
    for (size_t i = 0; i < g->n_modules; i++) pe_cuda_api_in_use->cuModuleUnload(g->modules[i]);
    free(g->modules);
}
