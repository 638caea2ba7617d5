/* target.c — the two targets (target.h): the CPU's (the kernel IR through
 * libgccjit into a shared object, cpu_gccjit.c) and the GPU's (the kernel
 * IR as CUDA C, cuda_emit.c, through NVRTC into a cubin, nvrtc.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_gccjit.h"
#include "cuda_emit.h"
#include "nvrtc.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/error.h"
#include "target.h"

/* libgccjit runs the assembler and linker as programs and writes temporary
 * files: without them every compilation would fail. */
static bool cpu_usable(void)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    if (access(tmp, W_OK | X_OK) != 0) {
        pe_log_message(PE_LOG_WARN, "TMPDIR %s is not writable: the CPU JIT is off, the interpreter computes", tmp);
        return false;
    }
    const char *path = getenv("PATH");
    char dir[4096];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(dir, sizeof dir, "%.*s/as", (int)len, p);
        if (access(dir, X_OK) == 0) return true;
        p += len + (p[len] == ':');
    }
    pe_log_message(PE_LOG_WARN, "no assembler (as, from binutils) on PATH: the CPU JIT is off, the interpreter computes");
    return false;
}

static bool cpu_compile(const kir_kernel *const *kernels, size_t n, const char *arch, const char *path, pe_artifact *a,
                        char *err, size_t n_err)
{
    if (!pe_gccjit_compile(kernels, n, arch, path, err, n_err)) return false;
    *a = (pe_artifact){.path = path};
    return true;
}

const pe_target pe_cpu_target = {
    .name = "the CPU",
    .rules = &pe_gccjit_fusion_rules,
    .executor = &pe_cpu_executor,
    .code_in_files = true,
    .retry_alone = true,
    .disk_tag = NULL,
    .usable = cpu_usable,
    .compile = cpu_compile,
};

static void cuda_disk_tag(const char *arch, char *out, size_t n)
{
    snprintf(out, n, "%s-nvrtc%d", arch, pe_nvrtc_version());
}

static bool cuda_usable(void) { return pe_nvrtc_available(NULL); }

/* arch: "sm_90" */
static bool cuda_compile(const kir_kernel *const *kernels, size_t n, const char *arch, const char *path,
                         pe_artifact *a, char *err, size_t n_err)
{
    (void)path;
    int sm = atoi(arch + 3);
    char *source = pe_cuda_emit(kernels, n);
    if (!source) {
        snprintf(err, n_err, "out of memory for the CUDA source");
        return false;
    }
    void *cubin = NULL;
    size_t size = 0;
    bool ok = pe_nvrtc_compile(source, "pe_kernels.cu", sm, false, &cubin, &size, err, n_err);
    free(source);
    if (ok) *a = (pe_artifact){.bytes = cubin, .size = size};
    return ok;
}

const pe_target pe_cuda_target = {
    .name = "the GPU",
    .rules = &pe_cuda_fusion_rules,
    .executor = &pe_cuda_executor,
    .code_in_files = false,
    .retry_alone = false,
    .disk_tag = cuda_disk_tag,
    .usable = cuda_usable,
    .compile = cuda_compile,
};
