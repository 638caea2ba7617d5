/* target.c — the two targets (target.h): the CPU's (the kernel IR through
 * libgccjit into a shared object, cpu_gccjit.c) and the GPU's (the kernel
 * IR as CUDA C, cuda_emit.c, through NVRTC into a cubin, nvrtc.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen.h"
#include "compile_process.h"
#include "cpu_gccjit.h"
#include "cuda_emit.h"
#include "nvrtc.h"
#include "target.h"
#include "../../exec/cpu/cpu.h"
#include "../../exec/cuda/cuda.h"
/* libgccjit runs the assembler and linker as programs and writes temporary
 * files: without them every compilation would fail. */
static bool cpu_usable(const char **why)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    if (access(tmp, W_OK | X_OK) != 0) {
        static char reason[4200];
        snprintf(reason, sizeof reason, "TMPDIR %s is not writable", tmp);
        *why = reason;
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
    *why = "no assembler (as, from binutils) on PATH";
    return false;
}

typedef struct {
    const kir_kernel *const *kernels;
    size_t n;
    const char *arch, *path;
} gccjit_job;

static bool run_gccjit(void *arg, char *err, size_t n_err)
{
    const gccjit_job *j = arg;
    return pe_gccjit_compile(j->kernels, j->n, j->arch, j->path, err, n_err);
}

/* In a child process: libgccjit out of memory ends the process it runs in
 * (compile_process.c). */
static bool cpu_compile(const kir_kernel *const *kernels, size_t n, const char *arch, const char *path, pe_artifact *a,
                        char *err, size_t n_err)
{
    gccjit_job job = {kernels, n, arch, path};
    if (!pe_compile_in_child(run_gccjit, &job, err, n_err)) return false;
    *a = (pe_artifact){.path = path};
    return true;
}

const pe_target pe_cpu_target = {
    .index = PE_TARGET_CPU,
    .name = "the CPU",
    .compiler = "libgccjit",
    .rules = &pe_gccjit_fusion_rules,
    .executor = &pe_cpu_executor,
    .code_in_files = true,
    .one_place = true,
    .retry_alone = true,
    .disk_tag = NULL,
    .usable = cpu_usable,
    .compile = cpu_compile,
};

static void cuda_disk_tag(const char *arch, char *out, size_t n)
{
    int perturbed = pe_codegen_perturbed_op(); /* a test's wrong kernels (codegen.c): a tag of their own */
    if (perturbed >= 0) snprintf(out, n, "%s-nvrtc%d-%s", arch, pe_nvrtc_version(), pe_op_table[perturbed].name);
    else snprintf(out, n, "%s-nvrtc%d", arch, pe_nvrtc_version());
}

static bool cuda_usable(const char **why) { return pe_nvrtc_available(why); }

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
    .index = PE_TARGET_GPU,
    .name = "the GPU",
    .compiler = "NVRTC",
    .rules = &pe_cuda_fusion_rules,
    .executor = &pe_cuda_executor,
    .code_in_files = false,
    .one_place = false,
    .retry_alone = false,
    .disk_tag = cuda_disk_tag,
    .usable = cuda_usable,
    .compile = cuda_compile,
};
