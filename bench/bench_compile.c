/* bench_compile.c — what compiling in a child process costs (issue 22,
 * item 4; exec/cpu/compile_process.c).  Two measurements, each with the
 * program holding BALLAST_MB of touched heap (fork copies page tables, so
 * the cost grows with what the parent maps):
 *   fork      pe_compile_in_child with a compilation that does nothing: the
 *             fork, the pipe and the wait alone (median of 50);
 *   compile   time to the first value of a new 3-op kernel with a fresh
 *             disk cache (libgccjit dominates), in a child
 *             (PE_JIT_ISOLATE=1) and in the program (PE_JIT_ISOLATE=0),
 *             alternating, 12 distinct kernels each (median).
 *
 *   bench_compile [BALLAST_MB ...]      default: 0 1024 4096 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec/cpu/compile_process.h"
#include "workloads.h"
#include <pe.h>

#define FORKS 50
#define KERNELS 12
#define N 4096

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static bool nothing(void *arg, char *err, size_t n_err)
{
    (void)arg, (void)err, (void)n_err;
    return true;
}

/* Kernel k: three element-wise ops picked by k's base-6 digits. */
static pe_array chain(pe_array x, int k)
{
    for (int d = 0; d < 3; d++, k /= 6) {
        switch (k % 6) {
        case 0: x = pe_sin(x); break;
        case 1: x = pe_exp(pe_neg(x)); break;
        case 2: x = pe_sqrt(pe_abs(x)); break;
        case 3: x = pe_tanh(x); break;
        case 4: x = pe_log1p(pe_abs(x)); break;
        default: x = pe_cos(x); break;
        }
    }
    return x;
}

static double first_value_ms(int k, const float *h, float *out)
{
    double t0 = now_ms();
    pe_array r = chain(pe_f32_1d(h, N), k);
    if (pe_read(r, out, sizeof(float) * N) != PE_OK) exit(1);
    return now_ms() - t0;
}

int main(int argc, char **argv)
{
    int sizes[8] = {0, 1024, 4096}, n_sizes = 3;
    if (argc > 1) {
        n_sizes = 0;
        for (int i = 1; i < argc && n_sizes < 8; i++) sizes[n_sizes++] = atoi(argv[i]);
    }
    static float h[N], out[N];
    for (int i = 0; i < N; i++) h[i] = (float)i / N;
    printf("%-10s %10s %12s %12s %12s\n", "ballast", "fork ms", "compile ms", "in-proc ms", "overhead");
    int next_kernel = 0;
    for (int s = 0; s < n_sizes; s++) {
        size_t bytes = (size_t)sizes[s] << 20;
        char *ballast = bytes ? malloc(bytes) : NULL;
        if (bytes && !ballast) return 1;
        if (ballast) memset(ballast, 1, bytes);
        double fork_ms[FORKS];
        char err[256];
        setenv("PE_JIT_ISOLATE", "1", 1);
        for (int i = 0; i < FORKS; i++) {
            double t0 = now_ms();
            if (!pe_compile_in_child(nothing, NULL, err, sizeof err)) return 1;
            fork_ms[i] = now_ms() - t0;
        }
        char cache[] = "/tmp/pe_bench_compile_XXXXXX";
        if (!mkdtemp(cache)) return 1;
        setenv("PE_CACHE_DIR", cache, 1);
        setenv("PE_TRACE_CACHE", "0", 1);
        setenv("PE_AOT", "0", 1);
        if (pe_init(NULL) != PE_OK) return 1;
        double child[KERNELS], in_proc[KERNELS];
        for (int i = 0; i < KERNELS; i++) {
            setenv("PE_JIT_ISOLATE", "1", 1);
            child[i] = first_value_ms(next_kernel++, h, out);
            setenv("PE_JIT_ISOLATE", "0", 1);
            in_proc[i] = first_value_ms(next_kernel++, h, out);
        }
        pe_shutdown();
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
        if (system(cmd) != 0) return 1;
        double c = wl_median(child, KERNELS), p = wl_median(in_proc, KERNELS);
        printf("%-7d MB %10.3f %12.1f %12.1f %+11.1f%%\n", sizes[s], wl_median(fork_ms, FORKS), c, p, (c - p) / p * 100);
        fflush(stdout);
        free(ballast);
    }
    return 0;
}
