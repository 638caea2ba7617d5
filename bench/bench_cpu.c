/* bench_cpu.c — PE's CPU executor against hand-written OpenMP loops
 * (baseline.c), in the same run: Black-Scholes, triad, a 16-op chain, sum and
 * dot, dispatch cost per call, compile latency.  Median of RUNS runs after
 * WARMUP; ratios are PE time / C time (lower is better) or % of the C loop's
 * bandwidth.  Usage: bench_cpu [scale]  (scale 1 = the sizes of the issue). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pe.h>

#include "baseline.h"

#define RUNS 7
#define WARMUP 2

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*work_fn)(void *ctx);
static double median_time(work_fn f, void *ctx)
{
    double t[RUNS];
    for (int i = 0; i < WARMUP; i++) f(ctx);
    for (int i = 0; i < RUNS; i++) {
        double t0 = now();
        f(ctx);
        t[i] = now() - t0;
    }
    qsort(t, RUNS, sizeof t[0], cmp_double);
    return t[RUNS / 2];
}

static float *filled(int64_t n, float lo, float hi, unsigned seed)
{
    float *p = malloc((size_t)n * sizeof *p);
    srand(seed);
    for (int64_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)rand() / (float)RAND_MAX;
    return p;
}

/* ------------------------------------------------------------ workloads */

typedef struct {
    int64_t n;
    float *S, *X, *T, *call, *put, *a, *b, *c;
    pe_array pS, pX, pT, pb, pc;
    double result;
    bool read; /* PE runs copy the result out (else pe_sync only) */
} bench;

static const float R = 0.02f, V = 0.30f;

/* r = expr, then the operand that expr consumed is released: intermediates
 * never stay the application's, so the program generator keeps them in
 * registers (with pecc this happens without writing it). */
#define THEN(r, expr, dead)  \
    do {                     \
        pe_array next_ = (expr); \
        pe_release(dead);    \
        (r) = next_;         \
    } while (0)

static void pe_bs(void *ctx)
{
    bench *w = ctx;
    pe_array sqrt_t = pe_sqrt(w->pT);
    pe_array ratio = pe_div(w->pS, w->pX), lg, drift = pe_mul(R + 0.5f * V * V, w->pT), num, den = pe_mul(V, sqrt_t);
    THEN(lg, pe_log(ratio), ratio);
    THEN(num, pe_add(lg, drift), lg);
    pe_release(drift);
    pe_array d1 = pe_div(num, den), d2;
    pe_release(num);
    THEN(d2, pe_sub(d1, den), den);
    pe_release(sqrt_t);
    pe_array c1 = pe_cdf_norm(d1), c2 = pe_cdf_norm(d2);
    pe_release(d1), pe_release(d2);
    pe_array e = pe_mul(-R, w->pT), disc;
    THEN(e, pe_exp(e), e);
    disc = pe_mul(w->pX, e);
    pe_release(e);
    pe_array sc1 = pe_mul(w->pS, c1), dc2 = pe_mul(disc, c2);
    pe_array call = pe_sub(sc1, dc2);
    pe_release(sc1), pe_release(dc2);
    pe_array n2 = pe_sub(1.0f, c2), n1 = pe_sub(1.0f, c1), p1, p2;
    pe_release(c1), pe_release(c2);
    THEN(p1, pe_mul(disc, n2), n2);
    THEN(p2, pe_mul(w->pS, n1), n1);
    pe_release(disc);
    pe_array put = pe_sub(p1, p2);
    pe_release(p1), pe_release(p2);
    if (w->read) {
        pe_read(call, w->call, (size_t)w->n * sizeof(float));
        pe_read(put, w->put, (size_t)w->n * sizeof(float));
    } else {
        pe_sync();
    }
    pe_release(call), pe_release(put);
}
static void c_bs(void *ctx)
{
    bench *w = ctx;
    c_blackscholes(w->S, w->X, w->T, R, V, w->call, w->put, w->n);
}

static void pe_triad(void *ctx)
{
    bench *w = ctx;
    pe_array sc = pe_mul(2.5f, w->pc), a = pe_add(w->pb, sc);
    pe_release(sc);
    if (w->read) pe_read(a, w->a, (size_t)w->n * sizeof(float));
    else pe_sync();
    pe_release(a);
}
static void c_triad_run(void *ctx)
{
    bench *w = ctx;
    c_triad(w->a, w->b, w->c, 2.5f, w->n);
}

static void pe_chain(void *ctx)
{
    bench *w = ctx;
    pe_array x = w->pb, y = w->pc, t = pe_mul(x, 1.5f), u;
    THEN(t, pe_add(t, y), t);
    THEN(t, pe_sub(t, 0.25f), t);
    THEN(t, pe_mul(t, t), t);
    THEN(t, pe_add(t, x), t);
    THEN(t, pe_add(t, 1.0f), t);
    THEN(t, pe_sqrt(t), t);
    THEN(t, pe_mul(t, 0.5f), t);
    THEN(t, pe_sub(t, y), t);
    u = pe_mul(x, x);
    THEN(u, pe_add(u, 1.0f), u);
    THEN(t, pe_div(t, u), t);
    pe_release(u);
    THEN(t, pe_neg(t), t);
    THEN(t, pe_add(t, 2.0f), t);
    THEN(t, pe_mul(t, y), t);
    THEN(t, pe_add(t, x), t);
    THEN(t, pe_mul(t, 0.125f), t);
    THEN(t, pe_sub(t, 3.0f), t);
    if (w->read) pe_read(t, w->a, (size_t)w->n * sizeof(float));
    else pe_sync();
    pe_release(t);
}

static void c_chain(void *ctx)
{
    bench *w = ctx;
    c_chain16(w->a, w->b, w->c, w->n);
}

static void pe_sum_run(void *ctx)
{
    bench *w = ctx;
    pe_array s = pe_sum(w->pb);
    pe_read_f64(s, &w->result);
    pe_release(s);
}
static void c_sum_run(void *ctx)
{
    bench *w = ctx;
    w->result = c_sum(w->b, w->n);
}
static void pe_dot_run(void *ctx)
{
    bench *w = ctx;
    pe_array s = pe_dot(w->pb, w->pc);
    pe_read_f64(s, &w->result);
    pe_release(s);
}
static void c_dot_run(void *ctx)
{
    bench *w = ctx;
    w->result = c_dot(w->b, w->c, w->n);
}

static void row(const char *name, double pe, double c, double bytes)
{
    if (bytes > 0)
        printf("%-34s %9.2f ms %9.2f ms %7.2fx  %6.1f GB/s  %5.0f%% of C bandwidth\n", name, pe * 1e3, c * 1e3, pe / c,
               bytes / pe / 1e9, 100.0 * (bytes / pe) / (bytes / c));
    else
        printf("%-34s %9.2f ms %9.2f ms %7.2fx\n", name, pe * 1e3, c * 1e3, pe / c);
}

/* `iterations` times: a 10-op chain (20 calls) on 16 elements, read, in a scope. */
static void small_chains(pe_array x16, float *out, int iterations)
{
    for (int k = 0; k < iterations; k++) {
        pe_scope sc = pe_scope_begin();
        pe_array t = x16;
        for (int op = 0; op < 10; op++) t = pe_add(pe_mul(t, 0.5f), 1.0f);
        pe_read(t, out, 16 * sizeof(float));
        pe_scope_end(sc);
    }
}

/* One element-wise workload: the C loop, then PE with the result left in PE
 * and PE with pe_read copying it out. */
static void compare_both_ways(const char *what, work_fn pe_run, work_fn c_run, bench *w, double bytes)
{
    double c_t = median_time(c_run, w);
    for (int read = 0; read < 2; read++) {
        w->read = read;
        char name[64];
        snprintf(name, sizeof name, "%s %.0fM (%s)", what, w->n / 1e6, read ? "PE + pe_read" : "result in PE");
        row(name, median_time(pe_run, w), c_t, bytes);
    }
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    char cache[] = "/tmp/pe-bench-XXXXXX";
    if (!mkdtemp(cache)) return 1;
    /* compile latency first, on a fresh kernel cache */
    double t0 = now();
    pe_init(&(pe_config){.cache_dir = cache});
    double t_init = now() - t0;
    float small[16];
    for (int i = 0; i < 16; i++) small[i] = (float)i;
    pe_array s16 = pe_f32_1d(small, 16);
    t0 = now();
    pe_array k1 = pe_sqrt(pe_add(pe_mul(s16, 3.0f), 1.0f));
    pe_read(k1, small, sizeof small);
    double t_first = now() - t0;
    pe_shutdown();
    pe_init(&(pe_config){.cache_dir = cache, .trace_cache_entries = -1});
    s16 = pe_f32_1d(small, 16);
    t0 = now();
    k1 = pe_sqrt(pe_add(pe_mul(s16, 3.0f), 1.0f));
    pe_read(k1, small, sizeof small);
    double t_disk = now() - t0;
    pe_release(k1);
    t0 = now();
    k1 = pe_sqrt(pe_add(pe_mul(s16, 3.0f), 1.0f));
    pe_read(k1, small, sizeof small);
    double t_memory = now() - t0;
    pe_shutdown();

    pe_init(&(pe_config){.cache_dir = cache});
    pe_device_info info;
    pe_device_info(0, &info);
    printf("PE %s on %s (%s, %d threads); C: -O3 -march=native -ffast-math -fopenmp\n", pe_version(), info.name,
           info.arch, info.cores);
    printf("median of %d runs after %d warm-up runs; PE times include recording and pe_read into host memory\n\n", RUNS,
           WARMUP);
    printf("%-34s %12s %12s %8s\n", "workload", "PE", "C loop", "PE/C");

    bench w = {0};
    /* Black-Scholes 10M */
    w.n = (int64_t)(10e6 * scale);
    w.S = filled(w.n, 5, 30, 1), w.X = filled(w.n, 1, 100, 2), w.T = filled(w.n, 0.25f, 10, 3);
    w.call = malloc((size_t)w.n * 4), w.put = malloc((size_t)w.n * 4);
    w.pS = pe_f32_1d(w.S, w.n), w.pX = pe_f32_1d(w.X, w.n), w.pT = pe_f32_1d(w.T, w.n);
    w.read = true;
    double pe_t = median_time(pe_bs, &w), c_t = median_time(c_bs, &w);
    char name[64];
    snprintf(name, sizeof name, "Black-Scholes %.0fM options", w.n / 1e6);
    row(name, pe_t, c_t, 0);
    printf("%-34s %9.1f M options/s (PE), %.1f M options/s (C)\n", "", w.n / pe_t / 1e6, w.n / c_t / 1e6);
    pe_release(w.pS), pe_release(w.pX), pe_release(w.pT);
    free(w.S), free(w.X), free(w.T), free(w.call), free(w.put);

    /* triad and chain, 32M */
    w.n = (int64_t)(32e6 * scale);
    w.a = malloc((size_t)w.n * 4), w.b = filled(w.n, 0.5f, 2, 4), w.c = filled(w.n, 0.5f, 2, 5);
    w.pb = pe_f32_1d(w.b, w.n), w.pc = pe_f32_1d(w.c, w.n);
    double bytes = 3.0 * 4 * (double)w.n;
    compare_both_ways("triad", pe_triad, c_triad_run, &w, bytes);
    compare_both_ways("16-op chain", pe_chain, c_chain, &w, bytes);
    pe_release(w.pb), pe_release(w.pc);
    free(w.a), free(w.b), free(w.c);

    /* sum and dot, 64M */
    w.n = (int64_t)(64e6 * scale);
    w.b = filled(w.n, -1, 1, 6), w.c = filled(w.n, -1, 1, 7);
    w.pb = pe_f32_1d(w.b, w.n), w.pc = pe_f32_1d(w.c, w.n);
    pe_t = median_time(pe_sum_run, &w), c_t = median_time(c_sum_run, &w);
    snprintf(name, sizeof name, "sum %.0fM f32", w.n / 1e6);
    row(name, pe_t, c_t, 4.0 * (double)w.n);
    pe_t = median_time(pe_dot_run, &w), c_t = median_time(c_dot_run, &w);
    snprintf(name, sizeof name, "dot %.0fM f32", w.n / 1e6);
    row(name, pe_t, c_t, 8.0 * (double)w.n);
    pe_release(w.pb), pe_release(w.pc);
    free(w.b), free(w.c);

    /* dispatch: a 10-op chain on 16 elements, trace-cache hits */
    pe_array x16 = pe_f32_1d(small, 16);
    int iters = 20000;
    small_chains(x16, small, 100); /* warm-up: compile, fill the trace cache */
    t0 = now();
    small_chains(x16, small, iters);
    double per_iter = (now() - t0) / iters;
    pe_stats st;
    pe_get_stats(&st);
    printf("\ndispatch: %.0f ns per API call (20 element-wise calls + read + scope per iteration, %.2f us), trace hits %llu/%llu\n",
           per_iter / 23 * 1e9, per_iter * 1e6, (unsigned long long)st.trace_hits, (unsigned long long)st.trace_lookups);
    printf("compile: pe_init %.1f ms; first kernel %.1f ms (compile); disk-cache hit %.2f ms; memory hit %.3f ms\n",
           t_init * 1e3, t_first * 1e3, t_disk * 1e3, t_memory * 1e3);
    pe_release(x16);
    pe_shutdown();
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
    return system(cmd);
}
