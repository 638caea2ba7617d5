/* nvrtc.c — NVRTC through dlopen: libnvrtc.so.13 (or libnvrtc.so, or the
 * toolkit's copy under $CUDA_HOME or /usr/local/cuda; PE_NVRTC_LIBRARY names
 * another, for tests), entry points by dlsym.  NVRTC needs no GPU: code
 * generation is tested on every machine. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvrtc.h"

typedef int nvrtc_result;
typedef struct nvrtc_program_st *nvrtc_program;

static struct {
    pthread_once_t once;
    bool usable;
    char reason[256];
    int version;
    nvrtc_result (*version_fn)(int *major, int *minor);
    const char *(*error_string)(nvrtc_result r);
    nvrtc_result (*create)(nvrtc_program *p, const char *src, const char *name, int n_headers, const char *const *headers,
                           const char *const *include_names);
    nvrtc_result (*destroy)(nvrtc_program *p);
    nvrtc_result (*compile)(nvrtc_program p, int n_options, const char *const *options);
    nvrtc_result (*log_size)(nvrtc_program p, size_t *size);
    nvrtc_result (*log)(nvrtc_program p, char *log);
    nvrtc_result (*ptx_size)(nvrtc_program p, size_t *size);
    nvrtc_result (*ptx)(nvrtc_program p, char *ptx);
    nvrtc_result (*cubin_size)(nvrtc_program p, size_t *size);
    nvrtc_result (*cubin)(nvrtc_program p, char *cubin);
} nv = {.once = PTHREAD_ONCE_INIT};

static void *open_library(void)
{
    const char *chosen = getenv("PE_NVRTC_LIBRARY");
    if (chosen && *chosen) return dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
    const char *names[] = {"libnvrtc.so.13", "libnvrtc.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib) return lib;
    }
    char path[4096];
    const char *home = getenv("CUDA_HOME");
    const char *roots[] = {home && *home ? home : "/usr/local/cuda", "/usr/local/cuda"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/lib64/libnvrtc.so.13", roots[i]);
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (lib) return lib;
    }
    return NULL;
}

static void load_once(void)
{
    void *lib = open_library();
    if (!lib) {
        const char *e = dlerror();
        const char *chosen = getenv("PE_NVRTC_LIBRARY");
        snprintf(nv.reason, sizeof nv.reason, "no NVRTC (%s: %s)", chosen && *chosen ? chosen : "libnvrtc.so.13",
                 e ? e : "not found");
        return;
    }
#define SYM(field, name)                                                                      \
    if (!(*(void **)&nv.field = dlsym(lib, name))) {                                         \
        snprintf(nv.reason, sizeof nv.reason, "the NVRTC library has no %s", name);          \
        return;                                                                              \
    }
    SYM(version_fn, "nvrtcVersion") SYM(error_string, "nvrtcGetErrorString") SYM(create, "nvrtcCreateProgram")
    SYM(destroy, "nvrtcDestroyProgram") SYM(compile, "nvrtcCompileProgram") SYM(log_size, "nvrtcGetProgramLogSize")
    SYM(log, "nvrtcGetProgramLog") SYM(ptx_size, "nvrtcGetPTXSize") SYM(ptx, "nvrtcGetPTX")
    SYM(cubin_size, "nvrtcGetCUBINSize") SYM(cubin, "nvrtcGetCUBIN")
#undef SYM
    int major = 0, minor = 0;
    if (nv.version_fn(&major, &minor) != 0) {
        snprintf(nv.reason, sizeof nv.reason, "nvrtcVersion failed");
        return;
    }
    nv.version = major * 1000 + minor * 10;
    nv.usable = true;
}

bool pe_nvrtc_available(const char **reason)
{
    pthread_once(&nv.once, load_once);
    if (reason) *reason = nv.usable ? NULL : nv.reason;
    return nv.usable;
}

int pe_nvrtc_version(void) { return pe_nvrtc_available(NULL) ? nv.version : 0; }

bool pe_nvrtc_compile(const char *source, const char *name, int sm, bool ptx, void **image, size_t *size, char *log,
                      size_t log_size)
{
    const char *why;
    *image = NULL;
    *size = 0;
    if (log_size) log[0] = 0;
    if (!pe_nvrtc_available(&why)) {
        snprintf(log, log_size, "%s", why);
        return false;
    }
    nvrtc_program prog = NULL;
    nvrtc_result r = nv.create(&prog, source, name, 0, NULL, NULL);
    if (r != 0) {
        snprintf(log, log_size, "nvrtcCreateProgram: %s", nv.error_string(r));
        return false;
    }
    char arch[48];
    /* a cubin needs a real architecture (sm_XX); PTX a virtual one */
    snprintf(arch, sizeof arch, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm", sm);
    /* -default-device: no __device__ annotations needed.  No contraction of
     * a * b + c into an FMA (--fmad=false, the CPU kernels' -ffp-contract=off):
     * a value must not depend on whether fusion kept its operand in a register
     * or stored it (contracted, b + s * c rounds once on the GPU and twice in
     * the interpreter and on the CPU).  Polynomials call fma by name, so they keep it
     * (costs 2% of the Black-Scholes kernel's instructions).  No fast-math:
     * the primitives' accuracy is the CPU's contract too. */
    const char *options[] = {arch, "--std=c++17", "-default-device", "--fmad=false", "--extra-device-vectorization"};
    r = nv.compile(prog, (int)(sizeof options / sizeof options[0]), options);
    bool ok = r == 0;
    if (!ok) {
        size_t n = 0;
        int len = snprintf(log, log_size, "nvrtcCompileProgram: %s", nv.error_string(r));
        if (nv.log_size(prog, &n) == 0 && n > 1 && len >= 0 && (size_t)len + 2 < log_size) {
            char *text = malloc(n);
            if (text && nv.log(prog, text) == 0) snprintf(log + len, log_size - (size_t)len, "\n%s", text);
            free(text);
        }
    } else {
        size_t n = 0;
        r = ptx ? nv.ptx_size(prog, &n) : nv.cubin_size(prog, &n);
        char *out = r == 0 && n ? malloc(n) : NULL;
        if (!out || (ptx ? nv.ptx(prog, out) : nv.cubin(prog, out)) != 0) {
            snprintf(log, log_size, "%s", out ? "nvrtcGet(PTX|CUBIN) failed" : "out of memory for the compiled code");
            free(out);
            ok = false;
        } else {
            *image = out;
            *size = n;
        }
    }
    nv.destroy(&prog);
    return ok;
}
