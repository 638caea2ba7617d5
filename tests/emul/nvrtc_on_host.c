/* nvrtc_on_host.c — NVRTC's entry points as PE calls them (exec/cuda/nvrtc.c),
 * with the host's C++ compiler in NVRTC's place: the "cubin" of a program is
 * a shared object of its CUDA C built over tests/cuda_on_host.hpp, which
 * tests/emul/cuda_driver_on_host.cpp loads and runs.  PE_NVRTC_LIBRARY=<this
 * library> selects it (tests only).  Its version, 99.0, keeps its cubins
 * apart from real ones in the disk cache.  While PE_EMUL_NVRTC_FAIL=1 is
 * set, every compilation fails, as NVRTC's would on code it rejects. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SUCCESS = 0, OUT_OF_MEMORY = 1, INVALID_INPUT = 3, INVALID_PROGRAM = 4, INVALID_OPTION = 5, COMPILATION = 6 };

typedef struct {
    char *source;
    char *log;
    char *image;
    size_t image_size;
} program;

int nvrtcVersion(int *major, int *minor)
{
    *major = 99, *minor = 0;
    return SUCCESS;
}

const char *nvrtcGetErrorString(int r)
{
    switch (r) {
    case SUCCESS: return "NVRTC_SUCCESS";
    case OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
    case INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
    case INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
    case INVALID_OPTION: return "NVRTC_ERROR_INVALID_OPTION";
    case COMPILATION: return "NVRTC_ERROR_COMPILATION";
    default: return "NVRTC_ERROR_UNKNOWN";
    }
}

int nvrtcCreateProgram(program **p, const char *src, const char *name, int n_headers, const char *const *headers,
                       const char *const *include_names)
{
    (void)name, (void)headers, (void)include_names;
    if (!p || !src || n_headers) return INVALID_INPUT;
    if (!(*p = calloc(1, sizeof **p)) || !((*p)->source = strdup(src))) {
        free(*p);
        return OUT_OF_MEMORY;
    }
    return SUCCESS;
}

int nvrtcDestroyProgram(program **p)
{
    if (!p || !*p) return INVALID_PROGRAM;
    free((*p)->source), free((*p)->log), free((*p)->image), free(*p);
    *p = NULL;
    return SUCCESS;
}

static char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) free(data), data = NULL;
    if (data) data[n] = 0, *size = (size_t)n;
    fclose(f);
    return data;
}

int nvrtcCompileProgram(program *p, int n_options, const char *const *options)
{
    if (!p) return INVALID_PROGRAM;
    int arch = 0;
    for (int i = 0; i < n_options; i++)
        if (strncmp(options[i], "--gpu-architecture=", 19) == 0) arch = strncmp(options[i] + 19, "sm_", 3) == 0 ? 1 : -1;
    if (arch < 0) {
        p->log = strdup("the host emulation of NVRTC makes cubins (sm_XX) only, not PTX");
        return INVALID_OPTION;
    }
    const char *fail = getenv("PE_EMUL_NVRTC_FAIL");
    if (fail && strcmp(fail, "1") == 0) {
        p->log = strdup("pe_kernels.cu: error: compilation failed (PE_EMUL_NVRTC_FAIL)");
        return COMPILATION;
    }
    char dir[] = "/tmp/pe-nvrtc-on-host-XXXXXX", path[96], cmd[1024];
    if (!mkdtemp(dir)) return OUT_OF_MEMORY;
    snprintf(path, sizeof path, "%s/k.cpp", dir);
    FILE *f = fopen(path, "w");
    if (!f) return OUT_OF_MEMORY;
    fprintf(f, "%s\nPE_EMUL_ENTRY\n", p->source);
    fclose(f);
    /* the flags must be those the precompiled header was built with */
    snprintf(cmd, sizeof cmd, "%s %s -include %s -o %s/k.so %s 2>%s/log", PE_EMUL_CXX, PE_EMUL_CXX_FLAGS,
             PE_EMUL_HEADER, dir, path, dir);
    int rc = system(cmd);
    size_t n = 0;
    snprintf(path, sizeof path, "%s/%s", dir, rc == 0 ? "k.so" : "log");
    char *out = slurp(path, &n);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) { /* a temporary directory left behind */
    }
    if (rc != 0) {
        p->log = out ? out : strdup("the host's C++ compiler failed");
        return COMPILATION;
    }
    if (!out) return OUT_OF_MEMORY;
    p->image = out, p->image_size = n;
    return SUCCESS;
}

int nvrtcGetProgramLogSize(program *p, size_t *size)
{
    if (!p) return INVALID_PROGRAM;
    *size = p->log ? strlen(p->log) + 1 : 1;
    return SUCCESS;
}

int nvrtcGetProgramLog(program *p, char *log)
{
    if (!p) return INVALID_PROGRAM;
    strcpy(log, p->log ? p->log : "");
    return SUCCESS;
}

int nvrtcGetCUBINSize(program *p, size_t *size)
{
    if (!p || !p->image) return INVALID_PROGRAM;
    *size = p->image_size;
    return SUCCESS;
}

int nvrtcGetCUBIN(program *p, char *cubin)
{
    if (!p || !p->image) return INVALID_PROGRAM;
    memcpy(cubin, p->image, p->image_size);
    return SUCCESS;
}

int nvrtcGetPTXSize(program *p, size_t *size)
{
    (void)p, (void)size;
    return INVALID_PROGRAM;
}

int nvrtcGetPTX(program *p, char *ptx)
{
    (void)p, (void)ptx;
    return INVALID_PROGRAM;
}
