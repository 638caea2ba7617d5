/* bench_ops.c — the operations users reach for (issue 39) at 10^7
 * elements against plain C (baseline.c: -O3 -march=native -ffast-math
 * -fopenmp, all cores): the scan by PE's own two-pass method, a histogram
 * and a bincount with private bins per thread, the consumers of roll, pad
 * and slice_update as one loop; sort and argsort against glibc's qsort
 * (one thread: what C offers).  NumPy's figures for the same rows come from
 * bench/peers.py ops.
 *
 *   bench_ops [n]   elements (default 10^7); the median of RUNS runs after a
 *                   warm-up, C and PE alternating
 *
 * Prints per row: C and PE milliseconds, PE's speed as a fraction of C's,
 * and whether PE's result matches the C loop's. */
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
#define BINS 256
#define LEN  1000

typedef struct {
    int64_t n;
    float *x, *v, *y_c, *y_pe;
    int32_t *idx, *i_c, *i_pe;
    pe_array ax, aidx, av;
} inputs;

typedef struct {
    float v;
    int32_t i;
} keyed;

static int by_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static int by_key(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    return x->v < y->v ? -1 : x->v > y->v ? 1 : x->i - y->i; /* stable */
}

typedef enum { CUMSUM, SORT, ARGSORT, HISTOGRAM, BINCOUNT, SCATTER_ADD, ROLL, PAD, SLICE_UPDATE, N_ROWS } row;
static const char *const names[N_ROWS] = {"cumsum f32",    "sort f32",         "argsort f32",
                                          "histogram 256", "bincount w 1000",  "scatter_add 1000",
                                          "x + roll(x)/2", "2 * pad(x) edge",  "2 * slice_update"};

#define SHIFT  12345
#define PAD_BY 3
#define BLOCK  1000000
#define START  2000000

static double run_c(row r, inputs *in)
{
    int64_t n = in->n;
    double t0 = now();
    switch (r) {
    case CUMSUM: c_cumsum_f32(in->x, in->y_c, n); break;
    case SORT:
        memcpy(in->y_c, in->x, sizeof *in->x * (size_t)n);
        qsort(in->y_c, (size_t)n, sizeof *in->y_c, by_float);
        break;
    case ARGSORT: {
        keyed *k = bench_alloc_or_exit(malloc(sizeof *k * (size_t)n));
        for (int64_t i = 0; i < n; i++) k[i] = (keyed){in->x[i], (int32_t)i};
        qsort(k, (size_t)n, sizeof *k, by_key);
        for (int64_t i = 0; i < n; i++) in->i_c[i] = k[i].i;
        free(k);
        break;
    }
    case HISTOGRAM: c_histogram_f32(in->x, n, in->i_c, BINS, -1.0f, 1.0f); break;
    case BINCOUNT: c_bincount_f32(in->idx, in->x, n, in->y_c, LEN); break;
    case SCATTER_ADD:
        c_bincount_f32(in->idx, in->x, n, in->y_c, LEN);
        for (int b = 0; b < LEN; b++) in->y_c[b] += 0.5f;
        break;
    case ROLL: c_roll_add(in->x, in->y_c, n, SHIFT); break;
    case PAD: c_pad_edge_scale(in->x, in->y_c, n, PAD_BY, PAD_BY); break;
    case SLICE_UPDATE: c_slice_update_scale(in->x, in->v, in->y_c, n, START, BLOCK); break;
    default: break;
    }
    return now() - t0;
}

static double run_pe(row r, inputs *in)
{
    double t0 = now();
    pe_scope sc = pe_scope_begin();
    pe_array x = in->ax;
    int status = PE_OK;
    switch (r) {
    case CUMSUM: status = pe_read(pe_cumsum(x, 0), in->y_pe, sizeof(float) * (size_t)in->n); break;
    case SORT: status = pe_read(pe_sort(x, 0, false), in->y_pe, sizeof(float) * (size_t)in->n); break;
    case ARGSORT: status = pe_read(pe_argsort(x, 0, false), in->i_pe, sizeof(int32_t) * (size_t)in->n); break;
    case HISTOGRAM: status = pe_read(pe_histogram(x, BINS, -1.0, 1.0), in->i_pe, sizeof(int32_t) * BINS); break;
    case BINCOUNT: status = pe_read(pe_bincount(in->aidx, x, LEN), in->y_pe, sizeof(float) * LEN); break;
    case SCATTER_ADD:
        status = pe_read(pe_scatter_add(pe_fill(PE_F32, 1, (int64_t[]){LEN}, 0.5), in->aidx, x), in->y_pe,
                         sizeof(float) * LEN);
        break;
    case ROLL: status = pe_read(pe_add(x, pe_mul(pe_roll(x, SHIFT, 0), 0.5f)), in->y_pe, sizeof(float) * (size_t)in->n); break;
    case PAD:
        status = pe_read(pe_mul(pe_pad(x, 0, PAD_BY, PAD_BY, PE_PAD_EDGE, 0), 2.0f), in->y_pe,
                         sizeof(float) * (size_t)(in->n + 2 * PAD_BY));
        break;
    case SLICE_UPDATE:
        status = pe_read(pe_mul(pe_slice_update(x, in->av, (int64_t[]){START}), 2.0f), in->y_pe,
                         sizeof(float) * (size_t)in->n);
        break;
    default: break;
    }
    pe_scope_end(sc);
    if (status != PE_OK) {
        fprintf(stderr, "bench_ops: %s failed: %s\n", names[r], pe_last_error() ? pe_last_error()->message : "?");
        exit(1);
    }
    return now() - t0;
}

/* Whether PE's result is the C loop's: indices and counts exactly, sorted values exactly, sums closely. */
static bool same(row r, const inputs *in)
{
    int64_t n = in->n;
    switch (r) {
    case SORT: return memcmp(in->y_c, in->y_pe, sizeof(float) * (size_t)n) == 0;
    case ARGSORT: return memcmp(in->i_c, in->i_pe, sizeof(int32_t) * (size_t)n) == 0;
    case HISTOGRAM: {
        int64_t off = 0; /* the C loop's bin is the plain estimate: a value on an edge may move by one */
        for (int b = 0; b < BINS; b++) off += labs((long)in->i_c[b] - in->i_pe[b]);
        return off <= n / 100000 + 2;
    }
    case BINCOUNT:
    case SCATTER_ADD: return rel_diff_above(in->y_pe, in->y_c, LEN, 1.0) <= 1e-5;
    case CUMSUM: { /* two f32 scans differ by their rounding, which grows with the running sum's magnitude */
        double big = 1;
        for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(in->y_c[i]));
        return rel_diff_above(in->y_pe, in->y_c, n, big) <= 1e-5;
    }
    case PAD: return rel_diff_above(in->y_pe, in->y_c, n + 2 * PAD_BY, 1e-6) == 0;
    default: return rel_diff_above(in->y_pe, in->y_c, n, 1e-6) <= 1e-6;
    }
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 10000000;
    if (argc > 2 || n < START + BLOCK) {
        fprintf(stderr, "usage: %s [n >= %d]\n", argv[0], START + BLOCK);
        return 2;
    }
    if (!getenv("OMP_WAIT_POLICY")) { /* spinning OpenMP threads would take the PE run's cores */
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    if (pe_init(NULL) != PE_OK) return 1;
    pe_device_info info;
    pe_device_info(0, &info);
    printf("PE %s on %s (ISA %s, %d hardware threads); C: " PE_BENCH_C_FLAGS ", %d OpenMP "
           "threads (sorts: glibc qsort, one thread)\n",
           pe_version(), info.name, info.arch, info.cores, c_threads());
    printf("%lld elements, median of %d runs after a warm-up, C and PE alternating\n\n", (long long)n, RUNS);
    inputs in = {.n = n, .x = filled(n, -1, 1, 5), .v = filled(BLOCK, -1, 1, 6), .y_c = buffer(n + 2 * PAD_BY),
                 .y_pe = buffer(n + 2 * PAD_BY)};
    in.idx = bench_alloc_or_exit(malloc(sizeof *in.idx * (size_t)n));
    in.i_c = bench_alloc_or_exit(calloc((size_t)n, sizeof *in.i_c));
    in.i_pe = bench_alloc_or_exit(calloc((size_t)n, sizeof *in.i_pe));
    for (int64_t i = 0; i < n; i++) in.idx[i] = (int32_t)((in.x[i] + 1.0f) * 0.5f * (LEN - 1));
    in.ax = pe_f32_1d(in.x, n);
    in.aidx = pe_from_host(PE_I32, 1, &n, in.idx);
    in.av = pe_f32_1d(in.v, BLOCK);
    printf("%-18s %10s %10s %10s  %s\n", "op", "C ms", "PE ms", "PE/C speed", "check");
    int wrong = 0;
    for (row r = 0; r < N_ROWS; r++) {
        int runs = r == SORT || r == ARGSORT ? 3 : RUNS; /* qsort of 10^7 takes a second */
        double t_c[RUNS], t_pe[RUNS];
        run_c(r, &in), run_pe(r, &in); /* warm-up: compiles, pages */
        for (int k = 0; k < runs; k++) t_c[k] = run_c(r, &in), t_pe[k] = run_pe(r, &in);
        double c_ms = median(t_c, runs) * 1e3, pe_ms = median(t_pe, runs) * 1e3;
        bool ok = same(r, &in);
        wrong += !ok;
        printf("%-18s %10.2f %10.2f %9.2fx  %s\n", names[r], c_ms, pe_ms, c_ms / pe_ms, ok ? "ok" : "DIFFERS");
    }
    pe_release(in.ax), pe_release(in.aidx), pe_release(in.av);
    pe_shutdown();
    free(in.x), free(in.v), free(in.y_c), free(in.y_pe), free(in.idx), free(in.i_c), free(in.i_pe);
    return wrong ? 1 : 0;
}
