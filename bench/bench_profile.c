/* bench_profile.c — what PE_PROFILE costs: the Black-Scholes workload
 * (10M f32 options, call + put) with profiling off and on, alternating
 * rounds in one process so that both see the same machine state; each
 * round is the median of RUNS runs after a warm-up, the result the median
 * over rounds.  A measurement, not a test.
 *
 *   bench_profile [scale]     scale 1 = 10M options */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "workloads.h"

#define RUNS 7
#define ROUNDS 5

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One round: a fresh runtime (profiled or not), a warm-up, RUNS timed runs. */
static double round_ms(const float *s, const float *x, const float *t, float *call, float *put, int64_t n,
                       const char *profile)
{
    if (profile) setenv("PE_PROFILE", profile, 1);
    else unsetenv("PE_PROFILE");
    if (pe_init(&(pe_config){.device = 1}) != PE_OK) exit(1);
    double times[RUNS];
    for (int r = -1; r < RUNS; r++) {
        double t0 = now();
        pe_array S = pe_f32_1d(s, n), X = pe_f32_1d(x, n), T = pe_f32_1d(t, n), P;
        pe_array C = wl_blackscholes(S, X, T, 0.02f, 0.30f, &P);
        pe_read(C, call, (size_t)n * sizeof *call);
        pe_read(P, put, (size_t)n * sizeof *put);
        pe_release(S), pe_release(X), pe_release(T), pe_release(C), pe_release(P);
        if (r >= 0) times[r] = (now() - t0) * 1e3;
    }
    pe_shutdown(); /* writes the profile, if on (outside the timed runs) */
    return wl_median(times, RUNS);
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    int64_t n = (int64_t)(10e6 * scale);
    if (n < 1) return fprintf(stderr, "usage: %s [scale > 0]\n", argv[0]), 2;
    float *s = malloc(sizeof *s * n), *x = malloc(sizeof *x * n), *t = malloc(sizeof *t * n);
    float *call = malloc(sizeof *call * n), *put = malloc(sizeof *put * n);
    if (!s || !x || !t || !call || !put) return 1;
    srand(1);
    for (int64_t i = 0; i < n; i++) {
        s[i] = 5.0f + 25.0f * (float)rand() / (float)RAND_MAX;
        x[i] = 1.0f + 99.0f * (float)rand() / (float)RAND_MAX;
        t[i] = 0.25f + 9.75f * (float)rand() / (float)RAND_MAX;
    }
    char profile[64];
    snprintf(profile, sizeof profile, "/tmp/bench_profile.%d.pep", (int)getpid());
    double off[ROUNDS], on[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        off[r] = round_ms(s, x, t, call, put, n, NULL);
        on[r] = round_ms(s, x, t, call, put, n, profile);
    }
    double m_off = wl_median(off, ROUNDS), m_on = wl_median(on, ROUNDS);
    printf("Black-Scholes %lld options, median of %d rounds x %d runs\n", (long long)n, ROUNDS, RUNS);
    printf("  PE_PROFILE off  %8.2f ms\n", m_off);
    printf("  PE_PROFILE on   %8.2f ms   (%+.1f%%)\n", m_on, 100 * (m_on - m_off) / m_off);
    unlink(profile);
    free(s), free(x), free(t), free(call), free(put);
    return 0;
}
