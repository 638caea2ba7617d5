/* bench_formulations.c — the same computation written the ways users write
 * it (issue 19), each against the hand-written OpenMP C loop (baseline.c,
 * -O3 -march=native -ffast-math -fopenmp) timed in the same process.  PE's
 * speed must not depend on the user releasing every temporary.  These are
 * measurements, not tests.
 *
 *   Black-Scholes 10M f32, call and put read with plain pe_read:
 *     (a) every temporary released by hand (bench/workloads.c)
 *     (b) in a scope, named intermediates, nested calls, no releases
 *     (c) one nested expression per output, no releases
 *     (d) as (b), the put through 1 - N(d) instead of N(-d)
 *     (e) (b) built through pecc (bench_formulations_pecc, run by this one)
 *   16-op chain 32M, every intermediate held in a scope, plain pe_read
 *   24-op chain 32M (Dr.Jit's row), the same
 *   triad 32M, a = b + s c, plain pe_read
 *
 * Each formulation runs in a child process of its own (forked before PE
 * starts), so that its peak RSS is its own: WARMUP runs, then RUNS rounds of
 * one C loop run and one PE run, medians.  PE's time is what a user sees:
 * recording plus the reads into preallocated buffers; per PE run it also
 * counts the minor page faults (memory taken fresh from the kernel rather
 * than reused) and the values left as expressions and computed again.  The children run
 * with OMP_WAIT_POLICY=passive (unless set): OpenMP's threads spinning after
 * the C loop took both cores from the PE run that followed it (triad: PE at
 * 1.5x the C loop's time, 1.08x with passive threads; the C loop's own time
 * does not change).
 *
 *   bench_formulations [scale] [formulation]   scale 1 = 10M / 32M elements */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pe.h>

#include "baseline.h"
#include "bench_util.h"
#include "workloads.h"

#define RUNS 9
#define WARMUP 2

static const float R = 0.02f, V = 0.30f;

typedef struct {
    int64_t n;
    float *S, *X, *T, *b, *c; /* inputs */
    pe_array pS, pX, pT, pb, pc;
    float *out1, *out2, *ref1, *ref2;
} bench;

static void read_both(bench *w, pe_array call, pe_array put)
{
    size_t bytes = (size_t)w->n * sizeof(float);
    if (pe_read(call, w->out1, bytes) != PE_OK || pe_read(put, w->out2, bytes) != PE_OK) exit(1);
}

/* ------------------------------------------------------- Black-Scholes */

static void bs_released(bench *w) /* (a) */
{
    pe_array put, call = wl_blackscholes(w->pS, w->pX, w->pT, R, V, &put);
    read_both(w, call, put);
    pe_release(call), pe_release(put);
}

static void bs_named(bench *w) /* (b), and (e) through pecc */
{
    pe_scope scope = pe_scope_begin();
    pe_array S = w->pS, X = w->pX, T = w->pT;
    pe_array sqrt_t = pe_sqrt(T);
    pe_array d1 = pe_div(pe_add(pe_log(pe_div(S, X)), pe_mul(R + 0.5f * V * V, T)), pe_mul(V, sqrt_t));
    pe_array d2 = pe_sub(d1, pe_mul(V, sqrt_t));
    pe_array ert = pe_exp(pe_mul(-R, T));
    pe_array c1 = pe_cdf_norm(d1), c2 = pe_cdf_norm(d2);
    pe_array call = pe_sub(pe_mul(S, c1), pe_mul(pe_mul(X, ert), c2));
    pe_array put = pe_sub(pe_mul(pe_mul(X, ert), pe_cdf_norm(pe_neg(d2))), pe_mul(S, pe_cdf_norm(pe_neg(d1))));
    read_both(w, call, put);
    pe_scope_end(scope);
}

static void bs_nested(bench *w) /* (c) */
{
    pe_scope scope = pe_scope_begin();
    pe_array S = w->pS, X = w->pX, T = w->pT;
    pe_array call = pe_sub(
        pe_mul(S, pe_cdf_norm(pe_div(pe_add(pe_log(pe_div(S, X)), pe_mul(R + 0.5f * V * V, T)), pe_mul(V, pe_sqrt(T))))),
        pe_mul(pe_mul(X, pe_exp(pe_mul(-R, T))),
               pe_cdf_norm(pe_sub(pe_div(pe_add(pe_log(pe_div(S, X)), pe_mul(R + 0.5f * V * V, T)), pe_mul(V, pe_sqrt(T))),
                                  pe_mul(V, pe_sqrt(T))))));
    pe_array put = pe_sub(
        pe_mul(pe_mul(X, pe_exp(pe_mul(-R, T))),
               pe_cdf_norm(pe_neg(pe_sub(pe_div(pe_add(pe_log(pe_div(S, X)), pe_mul(R + 0.5f * V * V, T)), pe_mul(V, pe_sqrt(T))),
                                         pe_mul(V, pe_sqrt(T)))))),
        pe_mul(S, pe_cdf_norm(pe_neg(pe_div(pe_add(pe_log(pe_div(S, X)), pe_mul(R + 0.5f * V * V, T)), pe_mul(V, pe_sqrt(T)))))));
    read_both(w, call, put);
    pe_scope_end(scope);
}

static void bs_one_minus(bench *w) /* (d) */
{
    pe_scope scope = pe_scope_begin();
    pe_array S = w->pS, X = w->pX, T = w->pT;
    pe_array sqrt_t = pe_sqrt(T);
    pe_array d1 = pe_div(pe_add(pe_log(pe_div(S, X)), pe_mul(R + 0.5f * V * V, T)), pe_mul(V, sqrt_t));
    pe_array d2 = pe_sub(d1, pe_mul(V, sqrt_t));
    pe_array disc = pe_mul(X, pe_exp(pe_mul(-R, T)));
    pe_array c1 = pe_cdf_norm(d1), c2 = pe_cdf_norm(d2);
    pe_array call = pe_sub(pe_mul(S, c1), pe_mul(disc, c2));
    pe_array put = pe_sub(pe_mul(disc, pe_sub(1.0f, c2)), pe_mul(S, pe_sub(1.0f, c1)));
    read_both(w, call, put);
    pe_scope_end(scope);
}

static void c_bs(bench *w) { c_blackscholes(w->S, w->X, w->T, R, V, w->ref1, w->ref2, w->n); }

/* ------------------------------------------------------ chain and triad */

/* The 16 ops of c_chain16, every intermediate named (they stay held until
 * the caller's scope ends) */
static pe_array chain16_named(pe_array x, pe_array y)
{
    pe_array t1 = pe_mul(x, 1.5f), t2 = pe_add(t1, y), t3 = pe_sub(t2, 0.25f), t4 = pe_mul(t3, t3);
    pe_array t5 = pe_add(t4, x), t6 = pe_add(t5, 1.0f), t7 = pe_sqrt(t6), t8 = pe_mul(t7, 0.5f);
    pe_array t9 = pe_sub(t8, y), u10 = pe_mul(x, x), u11 = pe_add(u10, 1.0f), t12 = pe_div(t9, u11);
    pe_array t13 = pe_neg(t12), t14 = pe_add(t13, 2.0f), t15 = pe_mul(t14, y);
    return pe_sub(t15, 3.0f);
}

static void chain_held(bench *w)
{
    pe_scope scope = pe_scope_begin();
    if (pe_read(chain16_named(w->pb, w->pc), w->out1, (size_t)w->n * sizeof(float)) != PE_OK) exit(1);
    pe_scope_end(scope);
}

static void c_chain(bench *w) { c_chain16(w->ref1, w->b, w->c, w->n); }

static void chain24_held(bench *w) /* the 24 ops of c_chain24, every intermediate named */
{
    pe_scope scope = pe_scope_begin();
    pe_array x = w->pb, y = w->pc, t16 = chain16_named(x, y);
    pe_array t17 = pe_mul(t16, 0.75f), t18 = pe_add(t17, x), t19 = pe_abs(t18), t20 = pe_add(t19, 0.5f);
    pe_array t21 = pe_sqrt(t20), t22 = pe_mul(t21, y), t23 = pe_sub(t22, x), t24 = pe_mul(t23, 2.0f);
    if (pe_read(t24, w->out1, (size_t)w->n * sizeof(float)) != PE_OK) exit(1);
    pe_scope_end(scope);
}

static void c_chain24_run(bench *w) { c_chain24(w->ref1, w->b, w->c, w->n); }

static void triad_read(bench *w)
{
    pe_scope scope = pe_scope_begin();
    pe_array a = pe_add(w->pb, pe_mul(2.5f, w->pc));
    if (pe_read(a, w->out1, (size_t)w->n * sizeof(float)) != PE_OK) exit(1);
    pe_scope_end(scope);
}

static void c_triad_run(bench *w) { c_triad(w->ref1, w->b, w->c, 2.5f, w->n); }

/* ------------------------------------------------------------- driver */

typedef void (*work_fn)(bench *w);
typedef struct {
    const char *key, *what;
    work_fn pe, c;
    bool blackscholes; /* else: chain / triad inputs */
    double tolerance;  /* of the max rel diff against the C loop (-ffast-math, another put formula) */
} formulation;

static const formulation formulations[] = {
    {"a", "Black-Scholes (a) released by hand", bs_released, c_bs, true, 1e-4},
    {"b", "Black-Scholes (b) scope, named", bs_named, c_bs, true, 1e-4},
    {"c", "Black-Scholes (c) nested", bs_nested, c_bs, true, 1e-4},
    {"d", "Black-Scholes (d) put by 1 - N(d)", bs_one_minus, c_bs, true, 1e-4},
    {"chain", "16-op chain, all held", chain_held, c_chain, false, 1e-5},
    {"chain24", "24-op chain, all held", chain24_held, c_chain24_run, false, 1e-5},
    {"triad", "triad, plain pe_read", triad_read, c_triad_run, false, 1e-6},
};

/* One formulation in this process: prints its row. */
static int run_one(const formulation *f, double scale, const char *label)
{
    if (pe_init(&(pe_config){.device = 1 /* the CPU, also where a GPU is */}) != PE_OK) return 1;
    bench w = {0};
    w.n = (int64_t)((f->blackscholes ? 10e6 : 32e6) * scale);
    if (f->blackscholes) {
        w.S = filled(w.n, 5, 30, 1), w.X = filled(w.n, 1, 100, 2), w.T = filled(w.n, 0.25f, 10, 3);
        w.pS = pe_f32_1d(w.S, w.n), w.pX = pe_f32_1d(w.X, w.n), w.pT = pe_f32_1d(w.T, w.n);
    } else {
        w.b = filled(w.n, 0.5f, 2, 4), w.c = filled(w.n, 0.5f, 2, 5);
        w.pb = pe_f32_1d(w.b, w.n), w.pc = pe_f32_1d(w.c, w.n);
    }
    w.out1 = buffer(w.n), w.out2 = buffer(w.n), w.ref1 = buffer(w.n), w.ref2 = buffer(w.n);
    double t_pe[RUNS], t_c[RUNS];
    long faults = 0; /* minor page faults during the PE runs: memory PE did not reuse */
    for (int i = 0; i < WARMUP; i++) f->c(&w), f->pe(&w);
    pe_stats s0;
    pe_get_stats(&s0);
    for (int i = 0; i < RUNS; i++) {
        double t0 = now();
        f->c(&w);
        struct rusage before, after;
        getrusage(RUSAGE_SELF, &before);
        double t1 = now();
        f->pe(&w);
        t_pe[i] = now() - t1, t_c[i] = t1 - t0;
        getrusage(RUSAGE_SELF, &after);
        faults += after.ru_minflt - before.ru_minflt;
    }
    pe_stats s1;
    pe_get_stats(&s1);
    double d = rel_diff(w.out1, w.ref1, w.n);
    if (f->blackscholes) d = fmax(d, rel_diff(w.out2, w.ref2, w.n));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double pe_ms = median(t_pe, RUNS) * 1e3, c_ms = median(t_c, RUNS) * 1e3;
    printf("%-38s %8.2f %8.2f %7.2fx %6.0f%% %9.0f %7.0f %6.1f %6.1f  %s %.1e\n", label ? label : f->what, c_ms, pe_ms,
           pe_ms / c_ms, 100 * c_ms / pe_ms, ru.ru_maxrss / 1024.0, (double)faults / RUNS,
           (double)(s1.values_deferred - s0.values_deferred) / RUNS,
           (double)(s1.values_recomputed - s0.values_recomputed) / RUNS, d <= f->tolerance ? "ok" : "WRONG", d);
    fflush(stdout);
    pe_shutdown();
    return d <= f->tolerance ? 0 : 1;
}

/* Runs `args` (this binary or its pecc build) in a child; its exit status. */
static int in_child(char *const args[])
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execv(args[0], args);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(scale > 0)) {
        fprintf(stderr, "usage: %s [scale > 0] [formulation]\n", argv[0]);
        return 2;
    }
    if (argc > 2 && !getenv("OMP_WAIT_POLICY")) { /* run by hand: OpenMP reads it at its start */
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    if (argc > 2) { /* one formulation, in this process */
        for (size_t i = 0; i < sizeof formulations / sizeof formulations[0]; i++)
            if (strcmp(formulations[i].key, argv[2]) == 0) return run_one(&formulations[i], scale, argc > 3 ? argv[3] : NULL);
        fprintf(stderr, "%s: no formulation %s\n", argv[0], argv[2]);
        return 2;
    }
    setenv("OMP_WAIT_POLICY", "passive", 0); /* read by each child's OpenMP at its start */
    printf("PE %s; C: " PE_BENCH_C_FLAGS ", %d OpenMP threads (OMP_WAIT_POLICY=%s); median of %d "
           "rounds after %d warm-ups, each formulation in a process of its own\n\n",
           pe_version(), c_threads(), getenv("OMP_WAIT_POLICY"), RUNS, WARMUP);
    printf("%-38s %8s %8s %8s %7s %9s %7s %6s %6s  %s\n", "formulation (ms)", "C loop", "PE", "PE/C", "%C", "peak MiB",
           "faults", "defer", "recomp", "check vs C");
    int failed = 0;
    char scale_text[32];
    snprintf(scale_text, sizeof scale_text, "%g", scale);
    for (size_t i = 0; i < sizeof formulations / sizeof formulations[0]; i++) {
        failed |= in_child((char *[]){argv[0], scale_text, (char *)formulations[i].key, NULL, NULL});
        if (strcmp(formulations[i].key, "d") == 0) { /* (e): (b) built through pecc, beside this binary */
            char pecc_build[4096];
            snprintf(pecc_build, sizeof pecc_build, "%s_pecc", argv[0]);
            if (access(pecc_build, X_OK) == 0)
                failed |= in_child((char *[]){pecc_build, scale_text, "b", "Black-Scholes (e) = (b) through pecc", NULL});
            else
                printf("%-38s (no %s: built where pecc is)\n", "Black-Scholes (e)", pecc_build);
        }
    }
    return failed;
}
