/* bench_short_axes.c — reductions along short axes (issue 38 item 3), each
 * against a hand-written OpenMP C loop (baseline.c, -O3 -march=native
 * -ffast-math -fopenmp) timed in the same process: WARMUP runs, then RUNS
 * rounds of one C run and one PE run (alternating), medians; the row
 * prints C time / PE time (1.00: the C loop's speed) and checks PE's
 * result against the C loop's.  Measurements, not tests.
 *
 *   sum_axis(x, 1) of rows x L, L = 4, 16, 64 (4M elements)
 *   sum_axis(x, 0) of n x 16 (n = 1M)
 *   argmin_axis(x, 1) of n x 16 (n = 1M)
 *   k-means' distances: sum_axis((p[n,1,D] - c[1,K,D])^2, 2), n = 200000, K = D = 16
 *
 *   bench_short_axes [runs]   runs: 1..100, default 9 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pe.h>

#include "baseline.h"
#include "bench_util.h"

#define WARMUP 2
#define MAX_RUNS 100

static int runs = 9, wrong = 0;

typedef struct {
    const float *x, *p, *c;
    int64_t rows, len, n, k, dims;
    pe_array px, pp, pc;
    void *out_c, *out_pe;
    size_t out_bytes;
} shape;

static void sum_last_c(shape *s) { c_sum_last(s->x, s->out_c, s->rows, s->len); }
static void sum_last_pe(shape *s)
{
    pe_scope sc = pe_scope_begin();
    if (pe_read(pe_sum_axis(s->px, 1), s->out_pe, s->out_bytes) != PE_OK) exit(1);
    pe_scope_end(sc);
}
static void sum_first_c(shape *s) { c_sum_first(s->x, s->out_c, s->rows, s->len); }
static void sum_first_pe(shape *s)
{
    pe_scope sc = pe_scope_begin();
    if (pe_read(pe_sum_axis(s->px, 0), s->out_pe, s->out_bytes) != PE_OK) exit(1);
    pe_scope_end(sc);
}
static void argmin_c(shape *s) { c_argmin_last(s->x, s->out_c, s->rows, s->len); }
static void argmin_pe(shape *s)
{
    pe_scope sc = pe_scope_begin();
    if (pe_read(pe_argmin_axis(s->px, 1), s->out_pe, s->out_bytes) != PE_OK) exit(1);
    pe_scope_end(sc);
}
static void dist_c(shape *s) { c_sq_distances(s->p, s->c, s->out_c, s->n, s->k, s->dims); }
static void dist_pe(shape *s)
{
    pe_scope sc = pe_scope_begin();
    pe_array p = pe_reshape(s->pp, 3, ((int64_t[]){s->n, 1, s->dims})), c = pe_reshape(s->pc, 3, ((int64_t[]){1, s->k, s->dims}));
    pe_array diff = pe_sub(p, c);
    if (pe_read(pe_sum_axis(pe_mul(diff, diff), 2), s->out_pe, s->out_bytes) != PE_OK) exit(1);
    pe_scope_end(sc);
}

static void measure(const char *name, shape *s, void (*c)(shape *), void (*pe)(shape *), int is_index, double tol)
{
    double tc[MAX_RUNS], tp[MAX_RUNS];
    for (int r = 0; r < WARMUP; r++) c(s), pe(s);
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        c(s);
        double t1 = now();
        pe(s);
        tc[r] = t1 - t0, tp[r] = now() - t1;
    }
    int64_t n = (int64_t)(s->out_bytes / 4);
    double diff = 0;
    if (is_index) {
        int64_t differ = 0;
        for (int64_t i = 0; i < n; i++) differ += ((int32_t *)s->out_c)[i] != ((int32_t *)s->out_pe)[i];
        diff = (double)differ;
    } else {
        diff = rel_diff_above(s->out_pe, s->out_c, n, 1.0);
    }
    bool ok = diff <= tol;
    if (!ok) wrong++;
    double mc = median(tc, runs), mp = median(tp, runs);
    printf("%-44s C %8.3f ms  PE %8.3f ms  C/PE %5.2f  %s %.2g%s\n", name, 1e3 * mc, 1e3 * mp, mc / mp,
           is_index ? "indices differing" : "rel diff", diff, ok ? "" : "  WRONG");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc > 1) runs = atoi(argv[1]);
    if (runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "usage: %s [runs 1..100]\n", argv[0]);
        return 2;
    }
    if (pe_init(NULL) != PE_OK) return 1;
    const int64_t total = 4 << 20;
    float *x = filled(total, -1.0f, 1.0f, 7);
    pe_array px = pe_from_host(PE_F32, 1, ((int64_t[]){total}), x);
    float *out_c = buffer(total), *out_pe = buffer(total);
    char name[96];
    for (int64_t len = 4; len <= 64; len *= 4) { /* 4, 16, 64 */
        shape s = {.x = x, .rows = total / len, .len = len, .out_c = out_c, .out_pe = out_pe, .out_bytes = (size_t)(total / len) * 4};
        s.px = pe_reshape(px, 2, ((int64_t[]){s.rows, len}));
        snprintf(name, sizeof name, "sum_axis(x, 1), %lld x %lld f32", (long long)s.rows, (long long)len);
        measure(name, &s, sum_last_c, sum_last_pe, 0, 1e-5);
        pe_release(s.px);
    }
    {
        shape s = {.x = x, .rows = total / 16, .len = 16, .out_c = out_c, .out_pe = out_pe, .out_bytes = 16 * 4};
        s.px = pe_reshape(px, 2, ((int64_t[]){s.rows, 16}));
        snprintf(name, sizeof name, "sum_axis(x, 0), %lld x 16 f32", (long long)s.rows);
        measure(name, &s, sum_first_c, sum_first_pe, 0, 1e-4);
        snprintf(name, sizeof name, "argmin_axis(x, 1), %lld x 16 f32", (long long)s.rows);
        s.out_bytes = (size_t)s.rows * 4;
        measure(name, &s, argmin_c, argmin_pe, 1, 0);
        pe_release(s.px);
    }
    {
        const int64_t n = 200000, k = 16, dims = 16;
        float *p = filled(n * dims, -4.0f, 4.0f, 11), *c = filled(k * dims, -4.0f, 4.0f, 12);
        shape s = {.p = p, .c = c, .n = n, .k = k, .dims = dims, .out_c = bench_alloc_or_exit(malloc((size_t)(n * k) * 4)),
                   .out_pe = bench_alloc_or_exit(malloc((size_t)(n * k) * 4)), .out_bytes = (size_t)(n * k) * 4};
        s.pp = pe_from_host(PE_F32, 2, ((int64_t[]){n, dims}), p);
        s.pc = pe_from_host(PE_F32, 2, ((int64_t[]){k, dims}), c);
        measure("k-means distances, 200000 x 16 x 16 f32", &s, dist_c, dist_pe, 0, 1e-5);
        pe_release(s.pp), pe_release(s.pc);
        free(p), free(c), free(s.out_c), free(s.out_pe);
    }
    pe_release(px);
    pe_shutdown();
    free(x), free(out_c), free(out_pe);
    return wrong ? 1 : 0;
}
