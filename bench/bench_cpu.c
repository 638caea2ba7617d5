/* bench_cpu.c — PE's CPU executor against hand-written OpenMP C loops
 * (baseline.c, -O3 -march=native -ffast-math -fopenmp), in the same process.
 * These are measurements, not tests: nothing here fails on a slow figure.
 *
 *   1. Black-Scholes (call + put, cdf_norm, the formulas of examples/blackscholes.c)
 *   2. triad a = b + s*c
 *   3. a 16-op element-wise chain (add/mul/sub/div/sqrt/neg, scalar operands)
 *   4. sum and dot (f32 in, double result)
 *   5. dispatch: cost per API call on 16-element arrays
 *   6. compile: first-kernel latency and cache-hit latencies
 *
 * Every workload: WARMUP runs, then the median of RUNS runs, timed with
 * clock_gettime(CLOCK_MONOTONIC); the C loop and PE's variants alternate,
 * one run each per round.  The PE time is what a user sees: recording
 * the operations plus pe_read into a preallocated host buffer.  Each PE run
 * also marks the moment pe_map() has returned a zero-copy pointer to the
 * results, before the read: "PE compute" is the time of a user who reads the
 * results in place, without the copy out.  A second PE row per workload
 * reads with pe_read_release (the read is the result's last use, so the
 * kernel writes into the caller's buffer).  Intermediates are released as soon as they
 * are consumed, so memory stays flat and fusion keeps them in registers.
 *
 *   bench_cpu [scale]   scale 1 = the sizes of issue 3 (10M, 32M, 64M)
 *
 * With BENCH_TSV=file in the environment, rows "workload<TAB>impl<TAB>value<TAB>unit" are
 * appended to the file (scripts/bench builds its summary table from them). */
#include <math.h>
#include <sys/resource.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pe.h>

#include "baseline.h"
#include "bench_util.h"
#include "workloads.h"

#define RUNS 7
#define WARMUP 2

static FILE *tsv;
static void record(const char *workload, const char *impl, double value, const char *unit)
{
    if (tsv) fprintf(tsv, "%s\t%s\t%.6g\t%s\n", workload, impl, value, unit);
}

/* ------------------------------------------------------------ workloads */

typedef struct {
    int64_t n;
    float *S, *X, *T;          /* Black-Scholes inputs */
    float *b, *c;              /* triad / chain / sum / dot inputs */
    float *out1, *out2;        /* PE results (host, preallocated) */
    float *ref1, *ref2;        /* C results */
    pe_array pS, pX, pT, pb, pc;
    double result, t_sync;     /* reductions' value; when pe_sync returned */
} bench;

static const float R = 0.02f, V = 0.30f;

/* Waits for the results through pe_map (a zero-copy pointer a user can read
 * in place: the moment is "PE compute"), then copies them out with pe_read
 * as well (the "PE" time). */
static void finish(bench *w, pe_array a, float *dst, pe_array b2, float *dst2)
{
    const float *va = pe_map(a), *vb = dst2 ? pe_map(b2) : NULL;
    w->t_sync = now();
    if (!va || (dst2 && !vb)) fprintf(stderr, "bench_cpu: pe_map failed\n");
    pe_read(a, dst, (size_t)w->n * sizeof(float));
    if (dst2) pe_read(b2, dst2, (size_t)w->n * sizeof(float));
    pe_unmap(a);
    if (dst2) pe_unmap(b2);
}

static void pe_bs(bench *w)
{
    pe_array put, call = wl_blackscholes(w->pS, w->pX, w->pT, R, V, &put);
    finish(w, call, w->out1, put, w->out2);
    pe_release(call), pe_release(put);
}
static void pe_bs_rr(bench *w)
{
    pe_array put, call = wl_blackscholes(w->pS, w->pX, w->pT, R, V, &put);
    pe_read_release(call, w->out1, (size_t)w->n * sizeof(float));
    pe_read_release(put, w->out2, (size_t)w->n * sizeof(float));
}
static void c_bs(bench *w) { c_blackscholes(w->S, w->X, w->T, R, V, w->ref1, w->ref2, w->n); }

static void pe_triad(bench *w)
{
    pe_array a = wl_triad(w->pb, w->pc, 2.5f);
    finish(w, a, w->out1, a, NULL);
    pe_release(a);
}
static void pe_triad_rr(bench *w)
{
    pe_read_release(wl_triad(w->pb, w->pc, 2.5f), w->out1, (size_t)w->n * sizeof(float));
}
static void c_triad_run(bench *w) { c_triad(w->ref1, w->b, w->c, 2.5f, w->n); }

static void pe_chain16(bench *w)
{
    pe_array t = wl_chain16(w->pb, w->pc);
    finish(w, t, w->out1, t, NULL);
    pe_release(t);
}
static void pe_chain16_rr(bench *w)
{
    pe_read_release(wl_chain16(w->pb, w->pc), w->out1, (size_t)w->n * sizeof(float));
}
static void c_chain_run(bench *w) { c_chain16(w->ref1, w->b, w->c, w->n); }

static void pe_sum_run(bench *w)
{
    pe_array s = pe_sum(w->pb);
    pe_read_f64(s, &w->result);
    pe_release(s);
    w->t_sync = now();
}
static void c_sum_run(bench *w) { w->result = c_sum(w->b, w->n); }
static void pe_dot_run(bench *w)
{
    pe_array s = pe_dot(w->pb, w->pc);
    pe_read_f64(s, &w->result);
    pe_release(s);
    w->t_sync = now();
}
static void c_dot_run(bench *w) { w->result = c_dot(w->b, w->c, w->n); }

typedef void (*work_fn)(bench *w);
typedef struct {
    double total, compute; /* medians: whole run; until pe_map returned (PE) */
} timing;

static timing median_timing(double *t, double *c) { return (timing){median(t, RUNS), median(c, RUNS)}; }

/* Times the implementations of one workload (the C loop first) in rounds,
 * one run of each per round, so that a machine whose speed drifts (a
 * shared VM) slows them alike and the ratios hold. */
#define MAX_IMPLS 3
static void measure(const work_fn *f, int n, bench *w, timing *out)
{
    double t[MAX_IMPLS][RUNS], c[MAX_IMPLS][RUNS];
    for (int i = 0; i < WARMUP; i++)
        for (int k = 0; k < n; k++) f[k](w);
    for (int i = 0; i < RUNS; i++)
        for (int k = 0; k < n; k++) {
            w->t_sync = 0;
            double t0 = now();
            f[k](w);
            double t1 = now();
            t[k][i] = t1 - t0;
            c[k][i] = (w->t_sync ? w->t_sync : t1) - t0;
        }
    for (int k = 0; k < n; k++) out[k] = median_timing(t[k], c[k]);
}

/* Runs f once into a cleared out1 (its values then checked). */
static void run_clean(work_fn f, bench *w)
{
    memset(w->out1, 0, (size_t)w->n * sizeof(float));
    f(w);
}

/* One workload's rows: C loop, PE (record + pe_read), PE compute only. */
static void report(const char *name, timing pe, timing c, double bytes, bool has_copy, const char *check)
{
    printf("%-26s %10.2f %10.2f", name, c.total * 1e3, pe.total * 1e3);
    if (has_copy) printf(" %10.2f", pe.compute * 1e3);
    else printf(" %10s", "-");
    printf(" %7.2fx %6.0f%%", pe.total / c.total, 100.0 * c.total / pe.total);
    if (has_copy) printf(" %6.0f%%", 100.0 * c.total / pe.compute);
    else printf(" %7s", "-");
    if (bytes > 0) printf("  %5.1f / %5.1f GB/s", bytes / c.total / 1e9, bytes / pe.total / 1e9);
    else printf("  %19s", "");
    printf("  %s\n", check);
    record(name, "C", c.total * 1e3, "ms");
    record(name, "PE", pe.total * 1e3, "ms");
    if (has_copy) record(name, "PE compute", pe.compute * 1e3, "ms");
}

/* The pe_read_release row of workload `name` (same C loop). */
static void report_read_release(const char *name, timing pe, timing c, double bytes, const char *check)
{
    printf("%-26s %10s %10.2f %10s %7.2fx %6.0f%% %7s", "  with pe_read_release", "", pe.total * 1e3, "",
           pe.total / c.total, 100.0 * c.total / pe.total, "");
    if (bytes > 0) printf("  %5s   %5.1f GB/s", "", bytes / pe.total / 1e9);
    else printf("  %19s", "");
    printf("  %s\n", check);
    record(name, "PE read_release", pe.total * 1e3, "ms");
}

/* ---------------------------------------------------- dispatch, compile */

#define DISPATCH_ITERS 2000
#define DISPATCH_CALLS 21 /* 10 operations + 10 releases + 1 read */

/* One iteration: a 10-op chain on 16 elements with scalar operands, each
 * intermediate released once consumed, the result read once and released. */
static void dispatch_bench(void)
{
    float in[16], out[16];
    for (int i = 0; i < 16; i++) in[i] = (float)i;
    pe_array x16 = pe_f32_1d(in, 16);
    pe_stats s0, s1;
    for (int i = 0; i < 200; i++) wl_small_chain(x16, out); /* compile, fill the trace cache */
    pe_get_stats(&s0);
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        for (int i = 0; i < DISPATCH_ITERS; i++) wl_small_chain(x16, out);
        t[r] = (now() - t0) / DISPATCH_ITERS;
    }
    pe_get_stats(&s1);
    double it = median(t, RUNS);
    printf("dispatch (16 elements, 10-op chain: 10 ops + 10 releases + 1 read = %d calls, median of %d x %d iterations)\n",
           DISPATCH_CALLS, RUNS, DISPATCH_ITERS);
    printf("  %.2f us per chain, %.0f ns per API call (%.0f ns per recorded op, the whole chain charged to its 10 ops); "
           "trace-cache hits %llu of %llu batches, live arrays %lld\n",
           it * 1e6, it / DISPATCH_CALLS * 1e9, it / 10 * 1e9, (unsigned long long)(s1.trace_hits - s0.trace_hits),
           (unsigned long long)(s1.trace_lookups - s0.trace_lookups), (long long)s1.live_arrays);
    record("dispatch per API call", "PE", it / DISPATCH_CALLS * 1e9, "ns");
    record("dispatch per 10-op chain", "PE", it * 1e6, "us");
    if (out[15] != out[15]) printf("  (NaN)\n");
    pe_release(x16);
}

static pe_array compile_chain(pe_array x)
{
    pe_array t = pe_mul(x, 3.0f), u = pe_add(t, 1.0f), r;
    pe_release(t);
    r = pe_sqrt(u);
    pe_release(u);
    return r;
}

/* Seconds to record the chain on x and read it (16 floats into out). */
static double timed_chain(pe_array x, float *out)
{
    double t0 = now();
    pe_array k = compile_chain(x);
    pe_read(k, out, 16 * sizeof *out);
    double t = now() - t0;
    pe_release(k);
    return t;
}

/* One fresh runtime on an empty kernel cache directory: pe_init, first read
 * (compiles), the same chain again (trace + program cache), then a second
 * fresh runtime on the same directory with the trace cache off: first read
 * (disk cache), again (memory program cache). */
typedef struct {
    double init, first, again, disk, memory;
    unsigned long long compiled, disk_hits;
} compile_times;

static compile_times compile_once(void)
{
    compile_times r = {0};
    char dir[] = "/tmp/pe-bench-cc-XXXXXX";
    if (!mkdtemp(dir)) return r;
    float in[16], out[16];
    for (int i = 0; i < 16; i++) in[i] = (float)i;
    pe_stats st;

    double t0 = now();
    pe_init(&(pe_config){.cache_dir = dir, .device = 1 /* the CPU */});
    r.init = now() - t0;
    pe_array x = pe_f32_1d(in, 16);
    r.first = timed_chain(x, out);
    r.again = timed_chain(x, out);
    pe_get_stats(&st);
    r.compiled = st.kernels_compiled;
    pe_release(x);
    pe_shutdown();

    pe_init(&(pe_config){.cache_dir = dir, .trace_cache_entries = -1, .device = 1});
    x = pe_f32_1d(in, 16);
    r.disk = timed_chain(x, out);
    r.memory = timed_chain(x, out);
    pe_get_stats(&st);
    r.disk_hits = st.disk_cache_hits;
    pe_release(x);
    pe_shutdown();

    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "bench_cpu: could not remove %s\n", dir);
    return r;
}

static void compile_bench(void)
{
    compile_times cold = compile_once(); /* the process's first libgccjit use */
    double init[RUNS], first[RUNS], again[RUNS], disk[RUNS], memory[RUNS];
    unsigned long long compiled = 0, disk_hits = 0;
    for (int i = 0; i < RUNS; i++) {
        compile_times c = compile_once();
        init[i] = c.init, first[i] = c.first, again[i] = c.again, disk[i] = c.disk, memory[i] = c.memory;
        compiled += c.compiled, disk_hits += c.disk_hits;
    }
    double m_first = median(first, RUNS), m_again = median(again, RUNS);
    printf("compile (3-op chain on 16 elements, fresh pe_init on an empty cache directory; median of %d, "
           "kernels compiled %llu, disk-cache hits %llu)\n",
           RUNS, compiled, disk_hits);
    printf("  pe_init %.2f ms; first kernel (record + compile + read) %.1f ms (first in the process: %.1f ms)\n",
           median(init, RUNS) * 1e3, m_first * 1e3, cold.first * 1e3);
    printf("  same chain again: %.1f us (trace + program cache); after pe_shutdown + pe_init: disk-cache hit %.2f ms, "
           "then program-cache hit %.1f us (trace cache off)\n",
           m_again * 1e6, median(disk, RUNS) * 1e3, median(memory, RUNS) * 1e6);
    record("first kernel", "PE", m_first * 1e3, "ms");
    record("program-cache hit (same chain again)", "PE", m_again * 1e6, "us");
    record("disk-cache hit (after re-init)", "PE", median(disk, RUNS) * 1e3, "ms");
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(scale > 0)) {
        fprintf(stderr, "usage: %s [scale > 0]\n", argv[0]);
        return 2;
    }
    const char *tsv_path = getenv("BENCH_TSV");
    if (tsv_path && *tsv_path) tsv = fopen(tsv_path, "a");

    /* 6 first: compile latency wants a process that has not compiled yet */
    compile_bench();
    printf("\n");

    char cache[] = "/tmp/pe-bench-XXXXXX";
    if (!mkdtemp(cache)) return 1;
    if (pe_init(&(pe_config){.cache_dir = cache, .device = 1 /* the CPU, also where a GPU is */}) != PE_OK) return 1;
    pe_device_info info;
    pe_device_info(0, &info);
    printf("PE %s on %s (%s, %d PE threads); C: " PE_BENCH_C_FLAGS ", %d OpenMP threads\n",
           pe_version(), info.name, info.arch, info.cores, c_threads());
    printf("median of %d runs after %d warm-ups; PE = record + pe_read into a preallocated buffer; "
           "PE compute = until pe_map() returns a zero-copy pointer to the result\n\n",
           RUNS, WARMUP);
    printf("%-26s %10s %10s %10s %8s %7s %7s  %19s  %s\n", "workload (ms)", "C loop", "PE", "PE compute", "PE/C",
           "%C", "%C cmp", "GB/s C / PE", "check");

    bench w = {0};
    char name[64], check[64];

    /* 1. Black-Scholes */
    w.n = (int64_t)(10e6 * scale);
    w.S = filled(w.n, 5, 30, 1), w.X = filled(w.n, 1, 100, 2), w.T = filled(w.n, 0.25f, 10, 3);
    w.out1 = buffer(w.n), w.out2 = buffer(w.n), w.ref1 = buffer(w.n), w.ref2 = buffer(w.n);
    w.pS = pe_f32_1d(w.S, w.n), w.pX = pe_f32_1d(w.X, w.n), w.pT = pe_f32_1d(w.T, w.n);
    timing tm[MAX_IMPLS];
    measure((work_fn[]){c_bs, pe_bs, pe_bs_rr}, 3, &w, tm);
    run_clean(pe_bs, &w);
    double d = fmax(rel_diff(w.out1, w.ref1, w.n), rel_diff(w.out2, w.ref2, w.n));
    snprintf(check, sizeof check, "max rel diff %.1e", d);
    snprintf(name, sizeof name, "Black-Scholes %gM", w.n / 1e6);
    report(name, tm[1], tm[0], 0, true, check);
    run_clean(pe_bs_rr, &w);
    d = fmax(rel_diff(w.out1, w.ref1, w.n), rel_diff(w.out2, w.ref2, w.n));
    snprintf(check, sizeof check, "max rel diff %.1e", d);
    report_read_release(name, tm[2], tm[0], 0, check);
    pe_release(w.pS), pe_release(w.pX), pe_release(w.pT);
    free(w.S), free(w.X), free(w.T), free(w.out1), free(w.out2), free(w.ref1), free(w.ref2);

    /* 2, 3. triad and the 16-op chain */
    w.n = (int64_t)(32e6 * scale);
    w.b = filled(w.n, 0.5f, 2, 4), w.c = filled(w.n, 0.5f, 2, 5);
    w.out1 = buffer(w.n), w.ref1 = buffer(w.n);
    w.pb = pe_f32_1d(w.b, w.n), w.pc = pe_f32_1d(w.c, w.n);
    double bytes = 3.0 * sizeof(float) * (double)w.n; /* 2 loads + 1 store per element */
    measure((work_fn[]){c_triad_run, pe_triad, pe_triad_rr}, 3, &w, tm);
    c_triad_run(&w);
    run_clean(pe_triad, &w);
    snprintf(check, sizeof check, "max rel diff %.1e", rel_diff(w.out1, w.ref1, w.n));
    snprintf(name, sizeof name, "triad %gM", w.n / 1e6);
    report(name, tm[1], tm[0], bytes, true, check);
    run_clean(pe_triad_rr, &w);
    snprintf(check, sizeof check, "max rel diff %.1e", rel_diff(w.out1, w.ref1, w.n));
    report_read_release(name, tm[2], tm[0], bytes, check);
    measure((work_fn[]){c_chain_run, pe_chain16, pe_chain16_rr}, 3, &w, tm);
    c_chain_run(&w);
    run_clean(pe_chain16, &w);
    snprintf(check, sizeof check, "max rel diff %.1e", rel_diff(w.out1, w.ref1, w.n));
    snprintf(name, sizeof name, "16-op chain %gM", w.n / 1e6);
    report(name, tm[1], tm[0], bytes, true, check);
    run_clean(pe_chain16_rr, &w);
    snprintf(check, sizeof check, "max rel diff %.1e", rel_diff(w.out1, w.ref1, w.n));
    report_read_release(name, tm[2], tm[0], bytes, check);
    pe_release(w.pb), pe_release(w.pc);
    free(w.b), free(w.c), free(w.out1), free(w.ref1);

    /* 4. sum and dot */
    w.n = (int64_t)(64e6 * scale);
    w.b = filled(w.n, -1, 1, 6), w.c = filled(w.n, -1, 1, 7);
    w.pb = pe_f32_1d(w.b, w.n), w.pc = pe_f32_1d(w.c, w.n);
    measure((work_fn[]){c_sum_run, pe_sum_run}, 2, &w, tm);
    c_sum_run(&w);
    double c_val = w.result;
    pe_sum_run(&w);
    snprintf(check, sizeof check, "PE %.6g C %.6g", w.result, c_val);
    snprintf(name, sizeof name, "sum %gM", w.n / 1e6);
    report(name, tm[1], tm[0], sizeof(float) * (double)w.n, false, check);
    measure((work_fn[]){c_dot_run, pe_dot_run}, 2, &w, tm);
    c_dot_run(&w);
    c_val = w.result;
    pe_dot_run(&w);
    snprintf(check, sizeof check, "PE %.6g C %.6g", w.result, c_val);
    snprintf(name, sizeof name, "dot %gM", w.n / 1e6);
    report(name, tm[1], tm[0], 2.0 * sizeof(float) * (double)w.n, false, check);
    pe_release(w.pb), pe_release(w.pc);
    free(w.b), free(w.c);

    pe_stats st;
    pe_get_stats(&st);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("(after the workloads: live arrays %lld, live bytes %.1f MiB; peak RSS of the process %.0f MiB)\n\n",
           (long long)st.live_arrays, st.live_bytes / 1048576.0, ru.ru_maxrss / 1024.0);

    /* 5. dispatch */
    dispatch_bench();
    pe_shutdown();

    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
    if (system(cmd) != 0) fprintf(stderr, "bench_cpu: could not remove %s\n", cache);
    if (tsv) fclose(tsv);
    return 0;
}
