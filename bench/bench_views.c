/* bench_views.c — views, per-axis reductions and gathers (issue 18) against
 * hand-written OpenMP C loops (baseline.c, -O3 -march=native -ffast-math
 * -fopenmp, all cores), in the same process.  These are measurements, not
 * tests: nothing here fails on a slow figure, only on a wrong value.
 *
 *   1. 5-point stencil: five pe_slice views of an n x n f32 array (n = 4096),
 *      out = 0.25 (north + south + east + west) - centre over the interior
 *      ((n-2) x (n-2))
 *   2. 3x3 blur: the nine shifted slices of the same array summed, times 1/9
 *   3. row sums pe_sum_axis(a, 1) and column sums pe_sum_axis(a, 0) of an
 *      8192 x 4096 f32 array, each its own row (the C loops sum in double,
 *      as PE does; the column sums vectorise across columns)
 *   4. softmax of each row of a 4096 x 4096 f32 array: pe_max_axis, the max
 *      reshaped to a column (rows x 1) to broadcast back, pe_exp of the
 *      difference, pe_sum_axis, the division
 *   5. a + pe_transpose(a), n x n f32, against a tiled C loop (64 x 64 tiles)
 *   6. pe_gather of 16M random i32 indices from a 16M f32 array
 *
 * The PE side is written as a user writes it: in a scope, named
 * intermediates, then pe_read into a preallocated host buffer (the inputs
 * are made once with pe_f32_2d / pe_from_host).  Each workload: WARMUP
 * rounds, then RUNS rounds of one C loop run and one PE run (alternating, so
 * that a machine whose speed drifts slows both alike), medians of
 * clock_gettime(CLOCK_MONOTONIC); the row prints C time / PE time as "PE at
 * N% of the C loop", the time pe_sync() then waited for work PE left
 * running after pe_read returned ("after": counted in neither time, and
 * finished before the next C run; left running, it slowed the stencil's C
 * loop from 5-8 ms to 14-15 ms) and the fused-kernel launches per round (0:
 * the reference interpreter computed it all).  PE's last result (its buffer
 * cleared before that run) is checked against the C loop's: the largest
 * relative difference (denominator max(1, |C|); softmax, whose values are
 * small and positive: |C| itself) must stay within 1e-4, the gather must be
 * exact; otherwise the row says WRONG and the exit status is 1.
 *
 *   bench_views [runs] [scale]   runs: RUNS (default 5); scale (default 1)
 *                                multiplies each workload's element count:
 *                                the square arrays' sides by sqrt(scale)
 *                                (a multiple of 64), the other arrays' rows
 *                                and the gather's length by scale
 *
 * It re-executes itself with OMP_WAIT_POLICY=passive unless that is set
 * (OpenMP's threads spinning after the C loop would take the cores of the
 * PE run that follows it; see bench_formulations.c).  With BENCH_TSV=file in
 * the environment, rows "workload<TAB>impl<TAB>value<TAB>unit" are appended
 * to the file (scripts/bench builds its summary table from them; the same
 * workloads in NumPy and numexpr are in bench/peers.py, under the same
 * names). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pe.h>

#include "baseline.h"
#include "bench_util.h"

#define WARMUP 1
#define MAX_RUNS 100
#define TOLERANCE 1e-4

typedef struct {
    int64_t rows, cols;  /* the input's shape (the gather's: 1 x n) */
    float *a;            /* the input */
    int32_t *index;      /* the gather's indices */
    pe_array pa, pindex; /* the same in PE, made once */
    int64_t out_n;       /* result elements */
    float *out, *ref;    /* PE's result, the C loop's (preallocated) */
} views;

typedef void (*work_fn)(views *v);

static void read_result(views *v, pe_array y)
{
    if (pe_read(y, v->out, (size_t)v->out_n * sizeof(float)) != PE_OK) {
        fprintf(stderr, "bench_views: pe_read failed\n");
        exit(1);
    }
}

/* ------------------------------------------------------------ workloads */

static void pe_stencil(views *v) /* 1 */
{
    pe_scope scope = pe_scope_begin();
    int64_t n = v->rows;
    const int64_t count[2] = {n - 2, n - 2};
    const int64_t at_centre[2] = {1, 1}, at_north[2] = {0, 1}, at_south[2] = {2, 1};
    const int64_t at_west[2] = {1, 0}, at_east[2] = {1, 2};
    pe_array centre = pe_slice(v->pa, at_centre, count);
    pe_array north = pe_slice(v->pa, at_north, count), south = pe_slice(v->pa, at_south, count);
    pe_array west = pe_slice(v->pa, at_west, count), east = pe_slice(v->pa, at_east, count);
    pe_array vertical = pe_add(north, south), horizontal = pe_add(east, west);
    pe_array neighbours = pe_add(vertical, horizontal);
    pe_array out = pe_sub(pe_mul(neighbours, 0.25f), centre);
    read_result(v, out);
    pe_scope_end(scope);
}
static void c_stencil(views *v) { c_stencil5(v->a, v->ref, v->rows); }

static void pe_blur(views *v) /* 2 */
{
    pe_scope scope = pe_scope_begin();
    int64_t n = v->rows;
    const int64_t count[2] = {n - 2, n - 2};
    pe_array total = {0};
    for (int64_t dy = 0; dy < 3; dy++)
        for (int64_t dx = 0; dx < 3; dx++) {
            const int64_t at[2] = {dy, dx};
            pe_array shifted = pe_slice(v->pa, at, count);
            total = total.h ? pe_add(total, shifted) : shifted;
        }
    pe_array out = pe_mul(total, 1.0f / 9.0f);
    read_result(v, out);
    pe_scope_end(scope);
}
static void c_blur(views *v) { c_blur3(v->a, v->ref, v->rows); }

static void pe_row_sums(views *v) /* 3 */
{
    pe_scope scope = pe_scope_begin();
    pe_array sums = pe_sum_axis(v->pa, 1);
    read_result(v, sums);
    pe_scope_end(scope);
}
static void c_row_sums_run(views *v) { c_row_sums(v->a, v->ref, v->rows, v->cols); }

static void pe_column_sums(views *v)
{
    pe_scope scope = pe_scope_begin();
    pe_array sums = pe_sum_axis(v->pa, 0);
    read_result(v, sums);
    pe_scope_end(scope);
}
static void c_column_sums_run(views *v) { c_column_sums(v->a, v->ref, v->rows, v->cols); }

/* pe_max_axis and pe_sum_axis remove the axis ({rows}); broadcasting as in
 * NumPy aligns the last axes, so each goes back as a column {rows, 1}. */
static void pe_rows_softmax(views *v) /* 4 */
{
    pe_scope scope = pe_scope_begin();
    const int64_t column[2] = {v->rows, 1};
    pe_array x = v->pa;
    pe_array row_max = pe_max_axis(x, 1);
    pe_array shifted = pe_sub(x, pe_reshape(row_max, 2, column));
    pe_array e = pe_exp(shifted);
    pe_array row_sum = pe_sum_axis(e, 1);
    pe_array y = pe_div(e, pe_reshape(row_sum, 2, column));
    read_result(v, y);
    pe_scope_end(scope);
}
static void c_softmax(views *v) { c_softmax_rows(v->a, v->ref, v->rows, v->cols); }

static void pe_transpose_add(views *v) /* 5 */
{
    pe_scope scope = pe_scope_begin();
    pe_array at = pe_transpose(v->pa);
    pe_array out = pe_add(v->pa, at);
    read_result(v, out);
    pe_scope_end(scope);
}
static void c_transpose_add(views *v) { c_add_transpose(v->a, v->ref, v->rows); }

static void pe_gather_run(views *v) /* 6 */
{
    pe_scope scope = pe_scope_begin();
    pe_array picked = pe_gather(v->pa, v->pindex);
    read_result(v, picked);
    pe_scope_end(scope);
}
static void c_gather_run(views *v) { c_gather(v->a, v->index, v->ref, v->out_n); }

/* ------------------------------------------------------------- driver */

static int runs = 5;
static FILE *tsv;
static bool wrong;

static void record(const char *workload, const char *impl, double value, const char *unit)
{
    if (tsv) fprintf(tsv, "%s\t%s\t%.6g\t%s\n", workload, impl, value, unit);
}

/* One workload's row.  least: the floor of the relative difference's
 * denominator; exact: PE's values must equal the C loop's bit for bit. */
static void measure(const char *name, views *v, work_fn c, work_fn pe, double least, bool exact)
{
    printf("%-20s", name);
    fflush(stdout); /* the interpreter's workloads take a while */
    size_t bytes = (size_t)v->out_n * sizeof(float);
    double t_c[MAX_RUNS], t_pe[MAX_RUNS], t_after[MAX_RUNS];
    for (int i = 0; i < WARMUP; i++) c(v), pe(v), pe_sync();
    pe_stats s0, s1;
    pe_get_stats(&s0);
    for (int i = 0; i < runs; i++) {
        if (i == runs - 1) memset(v->out, 0, bytes);
        double t0 = now();
        c(v);
        double t1 = now();
        pe(v);
        double t2 = now();
        pe_sync(); /* work PE left running after the read: not counted, not in the next C run either */
        t_after[i] = now() - t2, t_pe[i] = t2 - t1, t_c[i] = t1 - t0;
    }
    pe_get_stats(&s1);
    char check[64];
    bool ok;
    if (exact) {
        int64_t differ = 0;
        for (int64_t i = 0; i < v->out_n; i++) differ += memcmp(&v->out[i], &v->ref[i], sizeof(float)) != 0;
        ok = differ == 0;
        snprintf(check, sizeof check, "%lld differ", (long long)differ);
    } else {
        double d = rel_diff_above(v->out, v->ref, v->out_n, least);
        ok = d <= TOLERANCE;
        snprintf(check, sizeof check, "max rel diff %.1e", d);
    }
    double c_ms = median(t_c, runs) * 1e3, pe_ms = median(t_pe, runs) * 1e3;
    printf(" %10.2f %10.2f %8.2fx  PE at %5.1f%% of the C loop %8.2f %8.1f  %s %s\n", c_ms, pe_ms, pe_ms / c_ms,
           100 * c_ms / pe_ms, median(t_after, runs) * 1e3, (double)(s1.kernels_launched - s0.kernels_launched) / runs,
           check, ok ? "ok" : "WRONG");
    fflush(stdout);
    if (!ok) {
        fprintf(stderr, "bench_views: %s: PE's values differ from the C loop's (%s)\n", name, check);
        wrong = true;
    }
    record(name, "C", c_ms, "ms");
    record(name, "PE", pe_ms, "ms");
}

/* A square side: base * sqrt(scale), a multiple of 64, at least 64 (peers.py: the same). */
static int64_t side(double base, double scale)
{
    int64_t s = (int64_t)floor(base * sqrt(scale) / 64 + 0.5) * 64;
    return s < 64 ? 64 : s;
}
static int64_t scaled(double base, double scale)
{
    int64_t n = (int64_t)(base * scale);
    return n < 1 ? 1 : n;
}

/* An input of uniform values in [lo, hi] (host only), with room for a result of its size. */
static void setup(views *v, int64_t rows, int64_t cols, float lo, float hi, unsigned seed)
{
    *v = (views){.rows = rows, .cols = cols, .a = filled(rows * cols, lo, hi, seed)};
    v->out = buffer(rows * cols), v->ref = buffer(rows * cols);
}
static void teardown(views *v)
{
    pe_release(v->pa);
    if (v->pindex.h) pe_release(v->pindex);
    free(v->a), free(v->index), free(v->out), free(v->ref);
}

int main(int argc, char **argv)
{
    runs = argc > 1 ? atoi(argv[1]) : 5;
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    if (runs < 1 || runs > MAX_RUNS || !(scale > 0)) {
        fprintf(stderr, "usage: %s [runs 1..%d] [scale > 0]\n", argv[0], MAX_RUNS);
        return 2;
    }
    if (!getenv("OMP_WAIT_POLICY")) { /* OpenMP reads it at its start */
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    const char *tsv_path = getenv("BENCH_TSV");
    if (tsv_path && *tsv_path) tsv = fopen(tsv_path, "a");
    if (pe_init(&(pe_config){.device = 1 /* the CPU, also where a GPU is */}) != PE_OK) return 1;
    pe_device_info info;
    pe_device_info(0, &info);
    const char *pe_threads = getenv("PE_THREADS");
    printf("PE %s on %s (ISA %s, %d hardware threads, PE threads %s); C: " PE_BENCH_C_FLAGS ", "
           "%d OpenMP threads (OMP_WAIT_POLICY=%s)\n",
           pe_version(), info.name, info.arch, info.cores, pe_threads ? pe_threads : "all", c_threads(),
           getenv("OMP_WAIT_POLICY"));
    printf("median of %d rounds (one C loop run, one PE run) after %d warm-up; PE = record + pe_read into a "
           "preallocated buffer; scale %g\n\n",
           runs, WARMUP, scale);
    printf("%-20s %10s %10s %9s  %-30s %8s %8s  %s\n", "workload (ms)", "C loop", "PE", "PE/C", "C time / PE time",
           "after", "kernels", "check against the C loop");

    char name[64];
    views sq, v;
    /* 1, 2 (and 5 below): the square array */
    int64_t n = side(4096, scale);
    setup(&sq, n, n, -1, 1, 11);
    sq.pa = pe_f32_2d(sq.a, n, n);
    sq.out_n = (n - 2) * (n - 2);
    snprintf(name, sizeof name, "stencil %lldx%lld", (long long)n, (long long)n);
    measure(name, &sq, c_stencil, pe_stencil, 1, false);
    snprintf(name, sizeof name, "blur3x3 %lldx%lld", (long long)n, (long long)n);
    measure(name, &sq, c_blur, pe_blur, 1, false);

    /* 3. row and column sums */
    int64_t rows = scaled(8192, scale), cols = 4096;
    setup(&v, rows, cols, -1, 1, 12);
    v.pa = pe_f32_2d(v.a, rows, cols);
    v.out_n = rows;
    snprintf(name, sizeof name, "row sums %lldx%lld", (long long)rows, (long long)cols);
    measure(name, &v, c_row_sums_run, pe_row_sums, 1, false);
    v.out_n = cols;
    snprintf(name, sizeof name, "col sums %lldx%lld", (long long)rows, (long long)cols);
    measure(name, &v, c_column_sums_run, pe_column_sums, 1, false);
    teardown(&v);

    /* 4. softmax: values small and positive, their relative difference itself */
    rows = scaled(4096, scale);
    setup(&v, rows, cols, -4, 4, 13);
    v.pa = pe_f32_2d(v.a, rows, cols);
    v.out_n = rows * cols;
    snprintf(name, sizeof name, "softmax %lldx%lld", (long long)rows, (long long)cols);
    measure(name, &v, c_softmax, pe_rows_softmax, 1e-30, false);
    teardown(&v);

    /* 5. a + a^T */
    sq.out_n = n * n;
    snprintf(name, sizeof name, "a+a^T %lldx%lld", (long long)n, (long long)n);
    measure(name, &sq, c_transpose_add, pe_transpose_add, 1, false);
    teardown(&sq);

    /* 6. gather: random indices (xorshift64), exact */
    int64_t len = scaled(16e6, scale);
    setup(&v, 1, len, -1, 1, 14);
    v.out_n = len;
    v.index = bench_alloc_or_exit(malloc((size_t)len * sizeof *v.index));
    uint64_t state = 0x9e3779b97f4a7c15u;
    for (int64_t i = 0; i < len; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        v.index[i] = (int32_t)(state % (uint64_t)len);
    }
    v.pa = pe_f32_1d(v.a, len);
    v.pindex = pe_from_host(PE_I32, 1, &len, v.index);
    snprintf(name, sizeof name, "gather %gM", len / 1e6);
    measure(name, &v, c_gather_run, pe_gather_run, 0, true);
    teardown(&v);

    pe_shutdown();
    if (tsv) fclose(tsv);
    return wrong ? 1 : 0;
}
