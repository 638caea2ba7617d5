/* cuda_kernels.c — the CUDA executor's compiled kernels, per GPU: the
 * kernels it has loaded (looked up by their kernel IR), the modules that
 * hold them, and where a kernel a batch needs comes from when the GPU has
 * not loaded it: the compile ahead (jit/aot.c), a cubin an earlier process
 * filed in the disk cache (tagged by architecture and NVRTC version), else
 * NVRTC, which compiles all the batch's missing kernels in one program.  The compile
 * ahead's entry points are here too: it compiles without the runtime lock
 * and files the cubin as a batch's would be. */
#include <stdio.h>
#include <stdlib.h>

#include "../jit/aot.h"
#include "../jit/codegen.h"
#include "../jit/cuda_emit.h"
#include "../jit/diskcache.h"
#include "../jit/nvrtc.h"
#include "../profiler/collect.h"
#include "cuda_gpu.h"

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
    pe_kernel_name(k, name, sizeof name);
    c->combine = NULL;
    CUresult r = pe_cuda_api_in_use->cuModuleGetFunction(&c->fn, module, name);
    if (r == PE_CUDA_SUCCESS && pe_cuda_is_reduction(k)) r = pe_cuda_api_in_use->cuModuleGetFunction(&c->combine, module, PE_CUDA_COMBINER);
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
    CUresult r = pe_cuda_api_in_use->cuModuleLoadData(&module, cubin);
    free(cubin);
    if (r == PE_CUDA_SUCCESS) r = functions_of(module, k, c);
    bool kept = r == PE_CUDA_SUCCESS && keep_module(g, module);
    if (!kept || !remember(g, k, *c)) {
        char name[48];
        *c = (compiled){0}; /* nothing from a module that goes */
        pe_kernel_name(k, name, sizeof name);
        if (module && !kept) pe_cuda_api_in_use->cuModuleUnload(module);
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
    if ((*r = pe_cuda_api_in_use->cuModuleLoadData(&module, cubin)) != PE_CUDA_SUCCESS) return false;
    *what = "out of memory";
    if (!keep_module(g, module)) {
        pe_cuda_api_in_use->cuModuleUnload(module);
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
bool pe_cuda_prepare(cuda_gpu *g, const pe_program_seq *seq, compiled *fns)
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
            pe_cuda_disable(g, "out of memory for the CUDA source", r);
            ok = false;
        } else if (!pe_nvrtc_compile(source, "pe_kernels.cu", sm, false, &cubin, &size, log, sizeof log)) {
            pe_log_message(PE_LOG_WARN, "NVRTC could not compile %zu kernel%s for sm_%d: %s", n_missing,
                           n_missing == 1 ? "" : "s", sm, log);
            pe_cuda_disable(g, "NVRTC failed", r);
            ok = false;
        } else if (!file_cubin(g, missing, n_missing, cubin, size, &what, &r)) {
            if (r != PE_CUDA_SUCCESS) pe_cuda_disable(g, what, r); /* out of memory: this batch on the CPU */
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
        cuda_gpu *g = &pe_cuda_gpus[i];
        char tag[64];
        if (!in_use(g) || lookup(g, k)) continue;
        cubin_tag(g, tag, sizeof tag);
        if (!pe_diskcache_has_blob(k, tag)) return false;
    }
    return true;
}

/* A cubin compiled ahead for architecture sm, filed into each GPU in use of
 * that architecture as pe_cuda_prepare() files a batch's (under the runtime lock). */
static bool adopt(int sm, const kir_kernel *const *kernels, size_t n, const void *cubin, size_t size, char *err,
                  size_t n_err)
{
    PE_API_GUARD;
    const char *what = "the GPU is off";
    CUresult r = PE_CUDA_ERROR_NO_DEVICE;
    bool filed = false;
    bool missed = false; /* a GPU of this architecture did not get them */
    for (int i = 0; i < PE_CUDA_MAX_DEVICES && !missed; i++) {
        cuda_gpu *g = &pe_cuda_gpus[i];
        if (!in_use(g) || sm_of(g) != sm) continue;
        what = "cuCtxSetCurrent failed";
        missed = (r = pe_cuda_bind(g)) != PE_CUDA_SUCCESS || !file_cubin(g, kernels, n, cubin, size, &what, &r);
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
            if (!in_use(&pe_cuda_gpus[i])) continue;
            int sm = sm_of(&pe_cuda_gpus[i]), seen = 0;
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
