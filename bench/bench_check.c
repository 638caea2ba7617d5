/* bench_check.c — what PE_CHECK costs: the Black-Scholes workload (call +
 * put, 1M f32 options by default) with PE_CHECK off, copyout and all,
 * alternating rounds in one process so that every mode sees the same
 * machine state; each round is the median of RUNS runs after a warm-up,
 * the result the median over rounds, each mode as a ratio to off.  The
 * reference is the sequential interpreter in double, so checking costs
 * what PE_EXECUTOR=interp costs, on top of the run.  A measurement, not a
 * test.
 *
 *   bench_check [scale]     scale 1 = 1M options */
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "workloads.h"

#define RUNS 5
#define ROUNDS 3

static const char *const modes[] = {"off", "copyout", "all"};
enum { MODES = 3 };

/* One round: a fresh runtime with PE_CHECK=mode, a warm-up, RUNS timed runs. */
static double round_ms(const float *s, const float *x, const float *t, float *call, float *put, int64_t n,
                       const char *mode)
{
    if (pe_init(&(pe_config){.device = 1, .check = mode}) != PE_OK) exit(1);
    double times[RUNS];
    for (int r = -1; r < RUNS; r++) {
        double t0 = now();
        pe_array S = pe_f32_1d(s, n), X = pe_f32_1d(x, n), T = pe_f32_1d(t, n), P;
        pe_array C = wl_blackscholes(S, X, T, 0.02f, 0.30f, &P);
        if (pe_read(C, call, (size_t)n * sizeof *call) != PE_OK || pe_read(P, put, (size_t)n * sizeof *put) != PE_OK)
            exit(1);
        pe_release(S), pe_release(X), pe_release(T), pe_release(C), pe_release(P);
        if (r >= 0) times[r] = (now() - t0) * 1e3;
    }
    pe_shutdown();
    return median(times, RUNS);
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    int64_t n = (int64_t)(1e6 * scale);
    if (n < 1) return fprintf(stderr, "usage: %s [scale > 0]\n", argv[0]), 2;
    float *s = filled(n, 5.0f, 30.0f, 1), *x = filled(n, 1.0f, 100.0f, 2), *t = filled(n, 0.25f, 10.0f, 3);
    float *call = buffer(n), *put = buffer(n);
    double ms[MODES][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int m = 0; m < MODES; m++) ms[m][r] = round_ms(s, x, t, call, put, n, modes[m]);
    double off = median(ms[0], ROUNDS);
    printf("Black-Scholes %lld options (call + put read), median of %d rounds x %d runs\n", (long long)n, ROUNDS, RUNS);
    for (int m = 0; m < MODES; m++) {
        double v = median(ms[m], ROUNDS);
        printf("  PE_CHECK=%-8s %9.2f ms   x%.2f of off\n", modes[m], v, v / off);
    }
    free(s), free(x), free(t), free(call), free(put);
    return 0;
}
