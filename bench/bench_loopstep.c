/* bench_loopstep.c — the cost of one step of a loop as users write it
 * (issue 38, item 2): a scope per step, a 10-op element-wise body on the
 * carried array (named intermediates), the carried value kept, one scalar
 * read per step (a residual: the sum).  Each step is one batch: its host
 * cost (recording, the trace cache's lookup, launching, the read) is what
 * a solver pays per iteration beyond its kernels.  Against the same step as
 * an OpenMP C loop (baseline.c: -O3 -march=native -ffast-math -fopenmp, all
 * cores), at 1M elements (kernels dominate) and 1K (the host cost shows).
 *
 *   bench_loopstep [steps]   steps per run (default 2000); the median of
 *                            RUNS runs after a warm-up, C and PE alternating
 *
 * Prints per size: C and PE microseconds per step, their ratio, and PE's
 * microseconds per step beyond the C loop's (at 1K: the host cost). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pe.h>

#include "baseline.h"
#include "bench_util.h"

#define RUNS 5

/* One step: the 10 ops of c_loopstep (baseline.c), x the caller's (taken
 * over: released here), the next x kept; the sum read into *residual. */
static pe_array step(pe_array x, double *residual)
{
    pe_scope scope = pe_scope_begin();
    pe_array a = pe_mul(x, 0.999f), b = pe_add(a, 0.001f), c = pe_mul(b, b), d = pe_sub(c, b);
    pe_array e = pe_abs(d), f = pe_sqrt(e), g = pe_add(f, a), h = pe_mul(g, 0.5f);
    pe_array next = pe_keep(pe_max(pe_min(h, 10.0f), -10.0f));
    pe_read_f64(pe_sum(next), residual);
    pe_scope_end(scope);
    pe_release(x);
    return next;
}

static double pe_run(const float *x0, int64_t n, int steps, double *residual)
{
    double t0 = now();
    pe_array x = pe_f32_1d(x0, n);
    for (int s = 0; s < steps; s++) x = step(x, residual);
    pe_release(x);
    return now() - t0;
}

static double c_run(const float *x0, float *x, int64_t n, int steps, double *residual)
{
    double t0 = now();
    memcpy(x, x0, sizeof(float) * (size_t)n);
    for (int s = 0; s < steps; s++) *residual = c_loopstep(x, n);
    return now() - t0;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 2000;
    if (argc > 2 || steps < 1) {
        fprintf(stderr, "usage: %s [steps >= 1]\n", argv[0]);
        return 2;
    }
    if (!getenv("OMP_WAIT_POLICY")) { /* spinning OpenMP threads would take the PE run's cores */
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    if (pe_init(NULL) != PE_OK) return 1;
    pe_device_info info;
    pe_device_info(0, &info);
    printf("PE %s on %s (ISA %s, %d hardware threads); C: " PE_BENCH_C_FLAGS ", %d OpenMP threads\n",
           pe_version(), info.name, info.arch, info.cores, c_threads());
    printf("a loop step: scope, 10 element-wise ops on the carried f32 array, keep, one sum read; %d steps a run,\n"
           "median of %d runs after a warm-up\n\n", steps, RUNS);
    printf("%-12s %12s %12s %8s %22s  %s\n", "elements", "C us/step", "PE us/step", "PE/C", "PE - C us/step", "residual check");
    int wrong = 0;
    const int64_t sizes[2] = {1 << 20, 1 << 10};
    for (int k = 0; k < 2; k++) {
        int64_t n = sizes[k];
        float *x0 = filled(n, -2, 2, 7 + (unsigned)k), *x = buffer(n);
        double t_c[RUNS], t_pe[RUNS], r_c = 0, r_pe = 0;
        int run_steps = n > 4096 ? (steps / 10 > 0 ? steps / 10 : 1) : steps;
        c_run(x0, x, n, run_steps, &r_c), pe_run(x0, n, run_steps, &r_pe); /* warm-up: compiles, pages */
        for (int r = 0; r < RUNS; r++) {
            t_c[r] = c_run(x0, x, n, run_steps, &r_c);
            t_pe[r] = pe_run(x0, n, run_steps, &r_pe);
        }
        double c_us = median(t_c, RUNS) / run_steps * 1e6, pe_us = median(t_pe, RUNS) / run_steps * 1e6;
        double diff = fabs(r_pe - r_c) / fmax(1.0, fabs(r_c));
        bool ok = diff <= 1e-3;
        wrong += !ok;
        printf("%-12lld %12.2f %12.2f %7.2fx %22.2f  %s (last residual %.6g, C %.6g)\n", (long long)n, c_us, pe_us, pe_us / c_us,
               pe_us - c_us, ok ? "ok" : "WRONG", r_pe, r_c);
        free(x0), free(x);
    }
    pe_shutdown();
    return wrong ? 1 : 0;
}
