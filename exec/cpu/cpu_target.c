/* cpu_target.c — the CPU's target (jit/kir/target.h): the kernel IR through
 * libgccjit (cpu_gccjit.c) into a shared object, compiled in a child process
 * (compile_process.c), linked and run by the CPU executor (cpu.c). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile_process.h"
#include "cpu.h"
#include "cpu_gccjit.h"
#include "cpu_spmv.h"
#include "../../jit/kir/target.h"

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

static bool run_spmv_gccjit(void *path, char *err, size_t n_err)
{
    return pe_gccjit_spmv_compile(pe_cpu_isa(), path, err, n_err);
}

static bool cpu_spmv_compile(const char *path, char *err, size_t n_err)
{
    return pe_compile_in_child(run_spmv_gccjit, (void *)path, err, n_err);
}

/* Linked from memory (pe_cpu_dlopen_bytes: what runs is what was checked). */
static void *cpu_spmv_link(const void *bytes, size_t size, void *rows[PE_DTYPE__COUNT], char *err, size_t n_err)
{
    for (int t = 0; t < PE_DTYPE__COUNT; t++) rows[t] = NULL;
    void *unit = pe_cpu_dlopen_bytes(bytes, size, err, n_err);
    for (int t = 0; unit && t < PE_DTYPE__COUNT; t++) {
        if (!pe_gccjit_spmv_dtype((pe_dtype)t)) continue;
        if (!(rows[t] = dlsym(unit, pe_gccjit_spmv_name((pe_dtype)t)))) {
            snprintf(err, n_err, "lacks %s", pe_gccjit_spmv_name((pe_dtype)t));
            for (int u = 0; u < PE_DTYPE__COUNT; u++) rows[u] = NULL;
            dlclose(unit);
            unit = NULL;
        }
    }
    return unit;
}

const pe_target pe_cpu_target = {
    .index = PE_TARGET_HOST,
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
    .spmv_compile = cpu_spmv_compile,
    .spmv_link = cpu_spmv_link,
};
