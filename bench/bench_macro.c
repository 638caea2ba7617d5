/* bench_macro.c — code reuse sections (PE_MACRO, issue 20): host time of a
 * 32-operation section on 1K f32 elements, replayed 10^5 times in a chain
 * (acc = step(acc, y)), against the same body recorded every time through
 * the trace cache.  Reported per execution: the application thread's time
 * inside the section statement (replay) or the plain body (recording), and
 * the whole loop's time (flushes every 8 steps, execution on the
 * E-scheduler, flow control included), median of 5 runs after a warm-up;
 * the hand-written C loop of the same arithmetic as the reference of the
 * work itself.  Both PE variants must give the C loop's values bitwise
 * (no FP contraction, the same f32 operations in the same order). */
#define _GNU_SOURCE
#include <pe.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#ifdef __linux__
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "bench_util.h"

enum { N = 1024, FLUSH_EVERY = 8, RUNS = 5, PAIRS = 16 /* 32 ops */ };

/* 10^5, or the first argument (fewer for a run under valgrind's callgrind,
 * the instruction count where the machine has no perf counter:
 * `valgrind --tool=callgrind --toggle-collect=pe_macro_begin_at bench_macro 2000`) */
static int STEPS = 100000;

static float coef(int k) { return 0.5f + 0.03125f * (float)k; }

/* 16 pairs: t * c_k, then + y or - y (32 requests, the releases between them). */
static pe_array body(pe_array acc, pe_array y)
{
    pe_array t = pe_retain(acc);
    for (int k = 0; k < PAIRS; k++) {
        pe_array m = pe_mul(t, coef(k));
        pe_array n = (k & 1) ? pe_sub(m, y) : pe_add(m, y);
        pe_release(m);
        pe_release(t);
        t = n;
    }
    return t;
}

static void c_step(float *acc, const float *y)
{
    for (int i = 0; i < N; i++) {
        float t = acc[i];
        for (int k = 0; k < PAIRS; k++) {
            float m = t * coef(k);
            t = (k & 1) ? m - y[i] : m + y[i];
        }
        acc[i] = t;
    }
}

/* The calling thread's CPU time: what the application thread spends, not
 * the time other processes of a loaded machine take from it. */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The application thread's user-mode instructions (Linux perf counter,
 * this thread only): unlike its time, not inflated by a loaded machine's
 * cache and scheduler effects.  -1 where the counter cannot be opened. */
static int insn_fd = -1;

static void insn_open(void)
{
#ifdef __linux__
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = PERF_COUNT_HW_INSTRUCTIONS;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    insn_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
#endif
}

static double insn_now(void)
{
    uint64_t v = 0;
#ifdef __linux__
    if (insn_fd >= 0 && read(insn_fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
#endif
    return (double)v;
}

/* What the timing itself adds to a step's CPU time (the clocks read around
 * an empty statement), subtracted from each. */
static double cpu_clock_cost(void)
{
    double t[1001];
    for (int k = 0; k < 1001; k++) {
        double c = cpu_now(), a = now();
        volatile double w = now() - a;
        (void)w;
        t[k] = cpu_now() - c;
    }
    return median(t, 1001);
}

/* The same for the instruction count (the clocks and the counter's read). */
static double insn_clock_cost(void)
{
    double t[1001];
    for (int k = 0; k < 1001; k++) {
        double i0 = insn_now(), c = cpu_now(), a = now();
        volatile double w = now() - a, v = cpu_now() - c;
        (void)w, (void)v;
        t[k] = insn_now() - i0;
    }
    return median(t, 1001);
}

typedef struct {
    double inside; /* seconds in the section statement / the plain body (wall clock) */
    double inside_cpu; /* the same, the thread's CPU time */
    double inside_insn; /* the same, the thread's user-mode instructions */
    double total;
    float out[N];
} run_result;

static void run(bool sectioned, const float *x, const float *yv, run_result *r)
{
    pe_array acc = pe_f32_1d(x, N), y = pe_f32_1d(yv, N);
    double inside = 0, inside_cpu = 0, inside_insn = 0, t0 = now();
    for (int s = 0; s < STEPS; s++) {
        double i0 = insn_now(), c = cpu_now(), a = now();
        pe_array next;
        if (sectioned) {
            pe_array ins[2] = {acc, y}, outs[1];
            PE_MACRO(step, ins, 2, outs, 1, NULL, 0) { outs[0] = body(ins[0], ins[1]); }
            next = outs[0];
        } else {
            next = body(acc, y);
        }
        inside += now() - a;
        inside_cpu += cpu_now() - c;
        inside_insn += insn_now() - i0;
        pe_release(acc);
        acc = next;
        if ((s + 1) % FLUSH_EVERY == 0) pe_flush();
    }
    if (pe_read(acc, r->out, sizeof r->out) != PE_OK) exit(1);
    r->total = now() - t0;
    r->inside = inside;
    r->inside_cpu = inside_cpu;
    r->inside_insn = inside_insn;
    pe_release(acc), pe_release(y);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (STEPS = atoi(argv[1])) < FLUSH_EVERY) {
        fprintf(stderr, "usage: bench_macro [steps >= %d]\n", FLUSH_EVERY);
        return 2;
    }
    if (pe_init(NULL) != PE_OK) return 1;
    float *x = filled(N, -1, 1, 1), *yv = filled(N, -0.5f, 0.5f, 2);
    static float want[N];
    memcpy(want, x, sizeof want);
    double c_times[RUNS];
    for (int run_i = 0; run_i < RUNS; run_i++) {
        float *acc = malloc(sizeof want);
        if (!acc) return 1;
        memcpy(acc, x, sizeof want);
        double t0 = now();
        for (int s = 0; s < STEPS; s++) c_step(acc, yv);
        c_times[run_i] = now() - t0;
        memcpy(want, acc, sizeof want);
        free(acc);
    }
    static run_result r;
    insn_open();
    double inside[2][RUNS], inside_cpu[2][RUNS], inside_insn[2][RUNS], total[2][RUNS], clock_cost = cpu_clock_cost(),
           insn_cost = insn_clock_cost();
    for (int v = 0; v < 2; v++) {
        run(v == 1, x, yv, &r); /* warm-up: compiles, records the section */
        for (int k = 0; k < RUNS; k++) {
            run(v == 1, x, yv, &r);
            if (memcmp(r.out, want, sizeof want) != 0) {
                fprintf(stderr, "bench_macro: %s result differs from the C loop\n", v ? "section" : "plain");
                return 1;
            }
            inside[v][k] = r.inside / STEPS * 1e6;
            inside_cpu[v][k] = (r.inside_cpu / STEPS - clock_cost) * 1e6;
            inside_insn[v][k] = r.inside_insn / STEPS - insn_cost;
            total[v][k] = r.total / STEPS * 1e6;
        }
    }
    pe_stats st;
    pe_get_stats(&st);
    printf("bench_macro: %d ops on %d f32 elements, %d executions chained, a flush every %d, median of %d\n", 2 * PAIRS,
           N, STEPS, FLUSH_EVERY, RUNS);
    printf("  C loop (serial, the arithmetic alone)     %8.3f us/step\n", median(c_times, RUNS) / STEPS * 1e6);
    printf("  (host: the application thread in the statement, wall clock and its CPU time less %.3f us of clock)\n",
           clock_cost * 1e6);
    printf("  plain body through the trace cache:  host %8.3f us/step (cpu %8.3f)   loop %8.3f us/step\n",
           median(inside[0], RUNS), median(inside_cpu[0], RUNS), median(total[0], RUNS));
    printf("  PE_MACRO replay:                     host %8.3f us/step (cpu %8.3f)   loop %8.3f us/step\n",
           median(inside[1], RUNS), median(inside_cpu[1], RUNS), median(total[1], RUNS));
    if (insn_fd >= 0)
        printf("  host instructions (user mode, the application thread, less %.0f of clocks): plain %.0f/step, "
               "replay %.0f/step\n",
               insn_cost, median(inside_insn[0], RUNS), median(inside_insn[1], RUNS));
    else
        printf("  host instructions: no perf counter here (perf_event_open refused)\n");
    printf("  section host / plain host: %.3f; results bitwise the C loop's; macro hits %llu, records %llu, trace hits "
           "%llu of %llu\n",
           median(inside[1], RUNS) / median(inside[0], RUNS), (unsigned long long)st.macro_hits,
           (unsigned long long)st.macro_records, (unsigned long long)st.trace_hits, (unsigned long long)st.trace_lookups);
    pe_shutdown();
    free(x), free(yv);
    return 0;
}
