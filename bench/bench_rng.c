/* bench_rng.c — random numbers (issue 20) against a hand-written OpenMP C
 * loop (baseline.c: -O3 -march=native -ffast-math -fopenmp, all cores), in
 * the same process.  A measurement, not a test: nothing here fails on a
 * slow figure, only on a wrong count.
 *
 *   Monte Carlo pi: n = 5 * 10^7 points, x and y two uniform f32 draws of
 *   PE_RNG_PHILOX (10^8 draws in all), counted inside the unit circle:
 *       pe_sum(pe_lt(pe_add(pe_mul(x, x), pe_mul(y, y)), 1.0f))
 *   one kernel that generates, tests and sums (no random array stored),
 *   against c_monte_carlo_pi, the same Philox4x32-10 stream (irformat/philox.h)
 *   in an OpenMP loop.  The same again with PE_RNG_FAST (7 rounds) for PE
 *   alone.
 *
 * Each round: one C loop run, one PE run (alternating, so a machine whose
 * speed drifts slows both alike); WARMUP rounds first, then the median of
 * RUNS.  The counts must agree with the C loop's for the same draws within
 * a few points: the C loop is built with -ffast-math, which may contract
 * x * x + y * y into an FMA and move a point on the circle's edge.
 *
 *   bench_rng [runs] [millions of points]     defaults 7 and 50
 *
 * It re-executes itself with OMP_WAIT_POLICY=passive unless that is set
 * (see bench_views.c). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pe.h>

#include "baseline.h"
#include "bench_util.h"

#define WARMUP 2
#define MAX_RUNS 99
#define SEED 20261126u

/* One PE Monte Carlo pi: draws 2k and 2k + 1 of r. */
static double pe_inside(pe_rng r, int64_t n)
{
    pe_scope s = pe_scope_begin();
    pe_array x = pe_rng_uniform(r, PE_F32, 1, &n);
    pe_array y = pe_rng_uniform(r, PE_F32, 1, &n);
    pe_array inside = pe_sum(pe_lt(pe_add(pe_mul(x, x), pe_mul(y, y)), 1.0f));
    double count = -1;
    if (pe_read_f64(inside, &count) != PE_OK) count = -1;
    pe_scope_end(s);
    return count;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 7;
    double millions = argc > 2 ? atof(argv[2]) : 50;
    if (runs < 1 || runs > MAX_RUNS || !(millions > 0)) {
        fprintf(stderr, "usage: %s [runs 1..%d] [millions of points > 0]\n", argv[0], MAX_RUNS);
        return 2;
    }
    if (!getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    int64_t n = (int64_t)(millions * 1e6);
    if (pe_init(&(pe_config){.device = 1 /* the CPU */}) != PE_OK) return 1;
    pe_device_info info;
    pe_device_info(0, &info);
    const char *pe_threads = getenv("PE_THREADS");
    printf("PE %s on %s (ISA %s, %d hardware threads, PE threads %s); C: " PE_BENCH_C_FLAGS ", "
           "%d OpenMP threads\n",
           pe_version(), info.name, info.arch, info.cores, pe_threads ? pe_threads : "all", c_threads());
    printf("Monte Carlo pi, %lld points = %lld uniform f32 draws; median of %d rounds after %d warm-up\n\n",
           (long long)n, 2 * (long long)n, runs, WARMUP);

    pe_rng philox = pe_rng_create(PE_RNG_PHILOX, SEED), fast = pe_rng_create(PE_RNG_FAST, SEED);
    double t_c[MAX_RUNS], t_pe[MAX_RUNS], t_fast[MAX_RUNS];
    int64_t c_count = 0;
    double pe_count = 0, fast_count = 0;
    uint32_t draw = 0; /* philox's next draw number */
    for (int round = 0; round < WARMUP + runs; round++) {
        double t0 = now();
        c_count = c_monte_carlo_pi(SEED, draw, draw + 1, n);
        double t1 = now();
        pe_count = pe_inside(philox, n);
        double t2 = now();
        fast_count = pe_inside(fast, n);
        double t3 = now();
        draw += 2;
        if (round >= WARMUP) t_c[round - WARMUP] = t1 - t0, t_pe[round - WARMUP] = t2 - t1, t_fast[round - WARMUP] = t3 - t2;
    }
    double mc = median(t_c, runs), mp = median(t_pe, runs), mf = median(t_fast, runs);
    bool ok = pe_count >= 0 && fabs(pe_count - (double)c_count) <= 16;
    printf("%-28s %10s %10s  %s\n", "implementation", "ms", "draws/ns", "pi");
    printf("%-28s %10.2f %10.2f  %.6f\n", "C loop (OpenMP, Philox-10)", mc * 1e3, 2.0 * n / (mc * 1e9),
           4.0 * (double)c_count / (double)n);
    printf("%-28s %10.2f %10.2f  %.6f  PE at %.0f%% of the C loop; count %s the C loop's (%lld vs %lld)\n",
           "PE PE_RNG_PHILOX", mp * 1e3, 2.0 * n / (mp * 1e9), 4.0 * pe_count / (double)n, 100 * mc / mp,
           ok ? (pe_count == (double)c_count ? "equals" : "within 16 of") : "WRONG against", (long long)pe_count,
           (long long)c_count);
    printf("%-28s %10.2f %10.2f  %.6f  %.2fx PHILOX's speed\n", "PE PE_RNG_FAST", mf * 1e3, 2.0 * n / (mf * 1e9),
           4.0 * fast_count / (double)n, mp / mf);
    pe_rng_destroy(philox);
    pe_rng_destroy(fast);
    pe_shutdown();
    return ok ? 0 : 1;
}
