/* cuda_kernels.c — the CUDA C that PE makes for a benchmark workload, and its
 * cubin, on any machine (no GPU needed): the workload runs on the CPU
 * executor, its program sequences are taken from the trace cache, and the
 * CUDA emitter and NVRTC turn their kernels into what a GPU would run.  For
 * reading the generated code and counting its instructions
 * (bench/sass_mix.py with cuobjdump), not a measurement of time.
 *
 *   cuda_kernels blackscholes|triad|chain16|sum|dot SM OUT.cu OUT.cubin */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pe.h>

#include "workloads.h"
#include "exec/cuda/cuda_emit.h"
#include "exec/cuda/nvrtc.h"
#include "jit/trace/trace.h"

#define MAX_KERNELS 256

typedef struct {
    const kir_kernel *k[MAX_KERNELS];
    size_t n;
} kernel_set;

static void collect(const pe_trace_record *r, void *ctx)
{
    kernel_set *set = ctx;
    for (size_t i = 0; i < r->seq->n && set->n < MAX_KERNELS; i++)
        if (r->seq->progs[i].kind == PE_PROG_KERNEL) set->k[set->n++] = r->seq->progs[i].kir;
}

static int write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "cuda_kernels: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5 || atoi(argv[2]) < 75) {
        fprintf(stderr, "usage: %s blackscholes|triad|chain16|sum|dot SM(>= 75) OUT.cu OUT.cubin\n", argv[0]);
        return 2;
    }
    setenv("PE_AOT", "0", 1);
    /* a fresh cache: the trace cache on disk would bring other programs' kernels */
    char cache[] = "/tmp/pe-cuda-kernels-XXXXXX";
    if (!mkdtemp(cache) || pe_init(&(pe_config){.device = 1 /* the CPU */, .cache_dir = cache}) != PE_OK) return 1;
    const int64_t n = 1 << 16;
    float *x = malloc((size_t)n * sizeof *x);
    for (int64_t i = 0; i < n; i++) x[i] = 1.0f + (float)(i % 100) * 0.1f;
    pe_array S = pe_f32_1d(x, n), X = pe_f32_1d(x, n), T = pe_f32_1d(x, n), put = {0}, r;
    if (strcmp(argv[1], "blackscholes") == 0) r = wl_blackscholes(S, X, T, 0.02f, 0.3f, &put);
    else if (strcmp(argv[1], "triad") == 0) r = wl_triad(S, X, 2.5f);
    else if (strcmp(argv[1], "chain16") == 0) r = wl_chain16(S, X);
    else if (strcmp(argv[1], "sum") == 0) r = pe_sum(S);
    else if (strcmp(argv[1], "dot") == 0) r = pe_dot(S, X);
    else {
        fprintf(stderr, "cuda_kernels: unknown workload %s\n", argv[1]);
        return 2;
    }
    pe_sync();
    kernel_set set = {0};
    pe_trace_each(collect, &set);
    char *src = pe_cuda_emit(set.k, set.n);
    if (!src) return 1;
    void *cubin = NULL;
    size_t size = 0;
    static char log[1 << 16];
    int rc = write_file(argv[3], src, strlen(src));
    if (!rc && !pe_nvrtc_compile(src, "kernels.cu", atoi(argv[2]), false, &cubin, &size, log, sizeof log)) {
        fprintf(stderr, "cuda_kernels: NVRTC: %s\n", log);
        rc = 1;
    }
    if (!rc) rc = write_file(argv[4], cubin, size);
    if (!rc) printf("%s: %zu kernel%s, %zu bytes of CUDA C, cubin for sm_%s %zu bytes\n", argv[1], set.n,
                    set.n == 1 ? "" : "s", strlen(src), argv[2], size);
    free(src), free(cubin), free(x);
    pe_release(r), pe_release(S), pe_release(X), pe_release(T);
    if (put.h) pe_release(put);
    pe_shutdown();
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
    if (system(cmd) != 0) fprintf(stderr, "cuda_kernels: could not remove %s\n", cache);
    return rc;
}
