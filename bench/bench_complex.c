/* bench_complex.c — complex element-wise chains through PE's generated
 * kernels (the pair lowering, jit/kir/kir_complex.c) against C99
 * complex loops with OpenMP on all cores (baseline_complex.c, -O3
 * -march=native -ffast-math -fopenmp), in the same process.  Measurements,
 * not tests: only a wrong value fails.
 *
 *   1. Mandelbrot steps, c64: z = c, then 8 times z = z * z + c (PE: one
 *      recorded chain of 16 ops, fused), n = 2^22 points
 *   2. |exp(i x) y|, x f64, y c128 -> f64, n = 2^22
 *
 * Each workload: a warm-up, then RUNS rounds of one C run and one PE run
 * (alternating), medians of CLOCK_MONOTONIC; PE = record + pe_read into a
 * preallocated buffer.  PE's result checked: the largest |PE - ref| /
 * max(1, |ref|) within 1e-4, ref the C loop's (|exp(i x) y|) or, for the
 * c64 chain, the same steps in double rounded to f32 per op (PE's
 * semantics; the C loop computes in float under -ffast-math).
 *
 *   bench_complex [runs]   (default 7) */
#include <complex.h>
#undef complex
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pe.h>

#include "baseline.h"
#include "baseline_complex.h"
#include "bench_util.h"

#define N (1 << 22)
#define STEPS 8
#define MAX_RUNS 101

static int runs = 7;

typedef struct {
    float _Complex *c, *z, *z_ref;
    double *x, *mod, *mod_ref;
    double _Complex *y;
    pe_array pc, px, py;
} inputs;

static void pe_mandelbrot(inputs *w)
{
    pe_scope scope = pe_scope_begin();
    pe_array z = w->pc;
    for (int s = 0; s < STEPS; s++) z = pe_add(pe_mul(z, z), w->pc);
    if (pe_read(z, w->z, (size_t)N * sizeof *w->z) != PE_OK) exit(1);
    pe_scope_end(scope);
}
static void c_mandelbrot_run(inputs *w) { c_mandelbrot_steps_c64(w->c, w->z_ref, N, STEPS); }

static void pe_phase(inputs *w)
{
    pe_scope scope = pe_scope_begin();
    pe_array ix = pe_complex(pe_mul(w->px, 0.0), w->px);
    pe_array m = pe_abs(pe_mul(pe_exp(ix), w->py));
    if (pe_read(m, w->mod, (size_t)N * sizeof *w->mod) != PE_OK) exit(1);
    pe_scope_end(scope);
}
static void c_phase(inputs *w) { c_phase_modulus_c128(w->x, w->y, w->mod_ref, N); }

typedef void (*work_fn)(inputs *w);

static void measure(const char *name, work_fn pe_fn, work_fn c_fn, inputs *w, double bytes, double diff_of(inputs *))
{
    double tp[MAX_RUNS], tc[MAX_RUNS];
    pe_stats before, after;
    pe_fn(w), c_fn(w); /* warm-up: compiles the kernels */
    pe_sync();
    pe_get_stats(&before);
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        c_fn(w);
        double t1 = now();
        pe_fn(w);
        double t2 = now();
        pe_sync();
        tc[r] = t1 - t0, tp[r] = t2 - t1;
    }
    pe_get_stats(&after);
    double c = median(tc, runs), p = median(tp, runs), d = diff_of(w);
    printf("%-32s %9.2f %9.2f %8.2fx %5.0f%%  %5.1f / %5.1f GB/s  kernels/round %.0f, interpreted %llu  %s (%.1e)\n", name,
           c * 1e3, p * 1e3, p / c, 100 * c / p, bytes / c / 1e9, bytes / p / 1e9,
           (double)(after.kernels_launched - before.kernels_launched) / runs,
           (unsigned long long)(after.ops_interpreted - before.ops_interpreted), d <= 1e-4 ? "ok" : "WRONG", d);
    if (!(d <= 1e-4)) exit(1);
}

/* PE's c64 chain against its own semantics, computed here serially: each
 * op in double, its parts rounded to f32 (the C loop computes in float
 * under -ffast-math: near the set's boundary 8 steps amplify that rounding
 * past any fixed tolerance, so it is only timed). */
static double diff_mandelbrot(inputs *w)
{
    double worst = 0;
    for (int64_t i = 0; i < N; i++) {
        double cr = crealf(w->c[i]), ci = cimagf(w->c[i]), zr = cr, zi = ci;
        for (int s = 0; s < STEPS; s++) {
            float pr = (float)(zr * zr - zi * zi), pi = (float)(zr * zi + zi * zr);
            zr = (float)(pr + cr), zi = (float)(pi + ci);
        }
        double d = hypot(crealf(w->z[i]) - zr, cimagf(w->z[i]) - zi) / fmax(1, hypot(zr, zi));
        if (isfinite(zr) && isfinite(zi) && !(d <= worst)) worst = d;
    }
    return worst;
}

static double diff_phase(inputs *w)
{
    double worst = 0;
    for (int64_t i = 0; i < N; i++) {
        double d = fabs(w->mod[i] - w->mod_ref[i]) / fmax(1, fabs(w->mod_ref[i]));
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

int main(int argc, char **argv)
{
    if (argc > 1) runs = atoi(argv[1]);
    if (runs < 1 || runs > MAX_RUNS) runs = 7;
    if (pe_init(NULL) != PE_OK) return 1;
    inputs w = {0};
    w.c = bench_alloc_or_exit(malloc(N * sizeof *w.c));
    w.z = bench_alloc_or_exit(calloc(N, sizeof *w.z));
    w.z_ref = bench_alloc_or_exit(calloc(N, sizeof *w.z_ref));
    w.x = bench_alloc_or_exit(malloc(N * sizeof *w.x));
    w.y = bench_alloc_or_exit(malloc(N * sizeof *w.y));
    w.mod = bench_alloc_or_exit(calloc(N, sizeof *w.mod));
    w.mod_ref = bench_alloc_or_exit(calloc(N, sizeof *w.mod_ref));
    srand(7);
    for (int64_t i = 0; i < N; i++) {
        double u = (double)rand() / RAND_MAX, v = (double)rand() / RAND_MAX;
        w.c[i] = CMPLXF((float)(-2.0 + 2.5 * u), (float)(-1.25 + 2.5 * v));
        w.x[i] = -10 + 20 * u;
        w.y[i] = CMPLX(v - 0.5, u - 0.5);
    }
    int64_t n = N;
    w.pc = pe_from_host(PE_C64, 1, &n, w.c);
    w.px = pe_from_host(PE_F64, 1, &n, w.x);
    w.py = pe_from_host(PE_C128, 1, &n, w.y);
    printf("PE complex kernels vs C99 complex loops; C: " PE_BENCH_C_FLAGS ", %d OpenMP threads\n",
           c_threads());
    printf("median of %d runs after a warm-up, n = %d\n", runs, N);
    printf("%-32s %9s %9s %9s %6s  %19s\n", "workload (ms)", "C loop", "PE", "PE/C", "C/PE", "bandwidth C / PE");
    measure("mandelbrot 8 steps c64", pe_mandelbrot, c_mandelbrot_run, &w, 2.0 * N * sizeof(float _Complex), diff_mandelbrot);
    measure("|exp(i x) y| c128 -> f64", pe_phase, c_phase, &w, (double)N * (8 + 16 + 8), diff_phase);
    pe_release(w.pc), pe_release(w.px), pe_release(w.py);
    pe_shutdown();
    free(w.c), free(w.z), free(w.z_ref), free(w.x), free(w.y), free(w.mod), free(w.mod_ref);
    return 0;
}
