/* baseline.c — the hand-written C loops PE is measured against: the same
 * workloads as bench_cpu.c and bench_views.c, written as a C programmer would
 * write them for speed and built (only this file) with -O3 -march=native
 * -ffast-math -fopenmp, OpenMP on all cores.  PE itself is not built with
 * fast-math. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"

int c_threads(void) { return omp_get_max_threads(); }

static inline float cnd(float x) { return 0.5f * erfcf(-x * 0.70710678f); } /* standard normal CDF */

/* The formulas of examples/blackscholes.c: four CDFs, put through N(-d). */
void c_blackscholes(const float *S, const float *X, const float *T, float r, float v, float *call, float *put, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float sqrt_t = sqrtf(T[i]);
        float d1 = (logf(S[i] / X[i]) + (r + 0.5f * v * v) * T[i]) / (v * sqrt_t);
        float d2 = d1 - v * sqrt_t;
        float disc = X[i] * expf(-r * T[i]);
        call[i] = S[i] * cnd(d1) - disc * cnd(d2);
        put[i] = disc * cnd(-d2) - S[i] * cnd(-d1);
    }
}

/* The call's price and its closed-form derivatives by S, X and T (bench_grad's
 * baseline for pe_grad of the price): delta N(d1), -e^(-rT) N(d2), and
 * theta's opposite S phi(d1) v / (2 sqrt T) + r X e^(-rT) N(d2). */
void c_blackscholes_greeks(const float *S, const float *X, const float *T, float r, float v, float *call, float *d_s,
                           float *d_x, float *d_t, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float sqrt_t = sqrtf(T[i]);
        float d1 = (logf(S[i] / X[i]) + (r + 0.5f * v * v) * T[i]) / (v * sqrt_t);
        float d2 = d1 - v * sqrt_t;
        float growth = expf(-r * T[i]), n1 = cnd(d1), n2 = cnd(d2);
        float density = 0.3989422804f * expf(-0.5f * d1 * d1);
        call[i] = S[i] * n1 - X[i] * growth * n2;
        d_s[i] = n1;
        d_x[i] = -growth * n2;
        d_t[i] = S[i] * density * v / (2 * sqrt_t) + r * X[i] * growth * n2;
    }
}

void c_triad(float *a, const float *b, const float *c, float s, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

/* 16 operations, the same as pe_chain16 in bench_cpu.c, on one element. */
static inline float chain16(float x, float y)
{
    float t = x * 1.5f; /* 1 */
    t = t + y;          /* 2 */
    t = t - 0.25f;      /* 3 */
    t = t * t;          /* 4 */
    t = t + x;          /* 5 */
    t = t + 1.0f;       /* 6 */
    t = sqrtf(t);       /* 7 */
    t = t * 0.5f;       /* 8 */
    t = t - y;          /* 9 */
    float u = x * x;    /* 10 */
    u = u + 1.0f;       /* 11 */
    t = t / u;          /* 12 */
    t = -t;             /* 13 */
    t = t + 2.0f;       /* 14 */
    t = t * y;          /* 15 */
    return t - 3.0f;    /* 16 */
}

void c_chain16(float *out, const float *x, const float *y, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = chain16(x[i], y[i]);
}

/* Dr.Jit's longer row (issue 41): c_chain16's 16 operations and 8 more, a
 * second square root among them; still two loads and a store an element. */
void c_chain24(float *out, const float *x, const float *y, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float t = chain16(x[i], y[i]) * 0.75f; /* 17 */
        t = t + x[i];                          /* 18 */
        t = fabsf(t);                          /* 19 */
        t = t + 0.5f;                          /* 20 */
        t = sqrtf(t);                          /* 21 */
        t = t * y[i];                          /* 22 */
        t = t - x[i];                          /* 23 */
        out[i] = t * 2.0f;                     /* 24 */
    }
}

double c_sum(const float *x, int64_t n)
{
    double acc = 0;
#pragma omp parallel for simd reduction(+ : acc) schedule(static)
    for (int64_t i = 0; i < n; i++) acc += x[i];
    return acc;
}

double c_dot(const float *x, const float *y, int64_t n)
{
    double acc = 0;
#pragma omp parallel for simd reduction(+ : acc) schedule(static)
    for (int64_t i = 0; i < n; i++) acc += (double)x[i] * y[i];
    return acc;
}

/* ------------------------------------------------ bench_views.c's loops */

/* 5-point stencil over the interior of an n x n array; out is (n-2) x (n-2). */
void c_stencil5(const float *a, float *out, int64_t n)
{
    int64_t m = n - 2;
#pragma omp parallel for schedule(static)
    for (int64_t i = 1; i <= m; i++) {
        const float *up = a + (i - 1) * n, *row = a + i * n, *down = a + (i + 1) * n;
        float *o = out + (i - 1) * m;
#pragma omp simd
        for (int64_t j = 1; j <= m; j++) o[j - 1] = 0.25f * ((up[j] + down[j]) + (row[j + 1] + row[j - 1])) - row[j];
    }
}

/* 3x3 box blur over the interior of an n x n array; out is (n-2) x (n-2). */
void c_blur3(const float *a, float *out, int64_t n)
{
    int64_t m = n - 2;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; i++) {
        float *o = out + i * m;
#pragma omp simd
        for (int64_t j = 0; j < m; j++) {
            float acc = 0;
            for (int dy = 0; dy < 3; dy++)
                for (int dx = 0; dx < 3; dx++) acc += a[(i + dy) * n + j + dx];
            o[j] = acc * (1.0f / 9.0f);
        }
    }
}

/* PE sums f32 in double (the interpreter and the JIT alike): so do the two
 * loops below, each sum rounded to f32 once at the end. */
void c_row_sums(const float *a, float *out, int64_t rows, int64_t cols)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; i++) {
        const float *r = a + i * cols;
        double acc = 0;
#pragma omp simd reduction(+ : acc)
        for (int64_t j = 0; j < cols; j++) acc += r[j];
        out[i] = (float)acc;
    }
}

/* Threads split the columns in blocks; a block's partials (one double per
 * column) take one row after the other, vectorised across the columns. */
#define COLUMN_BLOCK 1024
void c_column_sums(const float *a, float *out, int64_t rows, int64_t cols)
{
    int64_t blocks = (cols + COLUMN_BLOCK - 1) / COLUMN_BLOCK;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t j0 = b * COLUMN_BLOCK, w = cols - j0 < COLUMN_BLOCK ? cols - j0 : COLUMN_BLOCK;
        double acc[COLUMN_BLOCK];
        for (int64_t j = 0; j < w; j++) acc[j] = 0;
        for (int64_t i = 0; i < rows; i++) {
            const float *r = a + i * cols + j0;
#pragma omp simd
            for (int64_t j = 0; j < w; j++) acc[j] += r[j];
        }
        for (int64_t j = 0; j < w; j++) out[j0 + j] = (float)acc[j];
    }
}

/* Softmax of each row: the row's max, exp(x - max) (libm's expf, which
 * -O3 -march=native -ffast-math vectorises through libmvec), their sum (in
 * double, as PE sums), the row scaled by 1 / sum. */
void c_softmax_rows(const float *x, float *y, int64_t rows, int64_t cols)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; i++) {
        const float *r = x + i * cols;
        float *o = y + i * cols;
        float m = r[0];
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < cols; j++) m = r[j] > m ? r[j] : m;
        double s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < cols; j++) {
            float e = expf(r[j] - m);
            o[j] = e;
            s += e;
        }
        float scale = 1.0f / (float)s;
#pragma omp simd
        for (int64_t j = 0; j < cols; j++) o[j] *= scale;
    }
}

/* out = a + a^T (n x n) in TRANSPOSE_TILE x TRANSPOSE_TILE tiles, so that
 * the tile of a read down its columns stays in cache; threads take rows of
 * tiles. */
#define TRANSPOSE_TILE 64
void c_add_transpose(const float *a, float *out, int64_t n)
{
    int64_t tiles = (n + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE;
#pragma omp parallel for schedule(static)
    for (int64_t ti = 0; ti < tiles; ti++)
        for (int64_t tj = 0; tj < tiles; tj++) {
            int64_t i0 = ti * TRANSPOSE_TILE, j0 = tj * TRANSPOSE_TILE;
            int64_t i1 = i0 + TRANSPOSE_TILE < n ? i0 + TRANSPOSE_TILE : n;
            int64_t j1 = j0 + TRANSPOSE_TILE < n ? j0 + TRANSPOSE_TILE : n;
            for (int64_t i = i0; i < i1; i++)
#pragma omp simd
                for (int64_t j = j0; j < j1; j++) out[i * n + j] = a[i * n + j] + a[j * n + i];
        }
}

void c_gather(const float *a, const int32_t *index, float *out, int64_t n)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = a[index[i]];
}

/* y = A x for a CSR matrix, a row per iteration, as a C programmer writes it
 * (bench_intrinsics: pe_spmv's baseline) */
void c_spmv_f64(const int32_t *row_ptr, const int32_t *col, const double *val, const double *x, double *y, int64_t n_rows)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n_rows; i++) {
        double s = 0;
        for (int32_t k = row_ptr[i]; k < row_ptr[i + 1]; k++) s += val[k] * x[col[k]];
        y[i] = s;
    }
}

void c_spmv_f32(const int32_t *row_ptr, const int32_t *col, const float *val, const float *x, float *y, int64_t n_rows)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n_rows; i++) {
        float s = 0;
        for (int32_t k = row_ptr[i]; k < row_ptr[i + 1]; k++) s += val[k] * x[col[k]];
        y[i] = s;
    }
}

/* Word 0 of Philox4x32-10 (Salmon et al. 2011) of counter (i mod 2^32,
 * i >> 32, draw, 0) under key (key0, key1): PE's PHILOX element i of a
 * draw (irformat/philox.h), written out here as a C programmer would. */
static inline uint32_t philox10_word0(uint32_t key0, uint32_t key1, uint32_t draw, uint64_t i)
{
    uint32_t c0 = (uint32_t)i, c1 = (uint32_t)(i >> 32), c2 = draw, c3 = 0;
    for (uint32_t r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ (key0 + r * 0x9E3779B9u);
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ (key1 + r * 0xBB67AE85u);
        c1 = (uint32_t)p1, c3 = (uint32_t)p0, c0 = n0, c2 = n2;
    }
    return c0;
}

/* Monte Carlo pi on PE's PHILOX stream: point i is (x_i, y_i), x_i element
 * i of draw draw_x, y_i of draw draw_y, each uniform f32 (w0 >> 8) * 2^-24;
 * the count of points inside the unit circle. */
int64_t c_monte_carlo_pi(uint64_t seed, uint32_t draw_x, uint32_t draw_y, int64_t n)
{
    int64_t inside = 0;
    uint32_t key0 = (uint32_t)seed, key1 = (uint32_t)(seed >> 32);
#pragma omp parallel for simd schedule(static) reduction(+ : inside)
    for (int64_t i = 0; i < n; i++) {
        float x = (float)(philox10_word0(key0, key1, draw_x, (uint64_t)i) >> 8) * 0x1p-24f;
        float y = (float)(philox10_word0(key0, key1, draw_y, (uint64_t)i) >> 8) * 0x1p-24f;
        inside += x * x + y * y < 1.0f;
    }
    return inside;
}

/* ---------------------------------------------------------- the gallery */

/* heat2d.c's steps: the interior's five-point update, the boundary kept. */
void c_heat_steps(float *u, float *tmp, int64_t n, int steps, float alpha)
{
    for (int s = 0; s < steps; s++) {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) {
            const float *up = u + (i - 1) * n, *row = u + i * n, *down = u + (i + 1) * n;
            float *o = tmp + i * n;
            if (i == 0 || i == n - 1) {
                for (int64_t j = 0; j < n; j++) o[j] = row[j];
                continue;
            }
            o[0] = row[0], o[n - 1] = row[n - 1];
#pragma omp simd
            for (int64_t j = 1; j < n - 1; j++) o[j] = row[j] + alpha * (((up[j] + down[j]) + row[j - 1]) + row[j + 1] - 4.0f * row[j]);
        }
        float *t = u;
        u = tmp, tmp = t;
    }
    if (steps % 2) memcpy(tmp, u, (size_t)(n * n) * sizeof *u); /* the result where the caller's u is */
}

double c_jacobi_sweeps(double *u, double *tmp, int64_t n, int sweeps)
{
    double change = 0.0;
    for (int s = 0; s < sweeps; s++) {
        change = 0.0;
#pragma omp parallel for schedule(static) reduction(max : change)
        for (int64_t i = 0; i < n; i++) {
            const double *up = u + (i - 1) * n, *row = u + i * n, *down = u + (i + 1) * n;
            double *o = tmp + i * n;
            if (i == 0 || i == n - 1) {
                for (int64_t j = 0; j < n; j++) o[j] = row[j];
                continue;
            }
            o[0] = row[0], o[n - 1] = row[n - 1];
            double largest = 0.0;
#pragma omp simd reduction(max : largest)
            for (int64_t j = 1; j < n - 1; j++) {
                o[j] = ((up[j] + down[j]) + (row[j - 1] + row[j + 1])) * 0.25;
                double d = fabs(o[j] - row[j]);
                largest = d > largest ? d : largest;
            }
            change = largest > change ? largest : change;
        }
        double *t = u;
        u = tmp, tmp = t;
    }
    if (sweeps % 2) memcpy(tmp, u, (size_t)(n * n) * sizeof *u); /* the result where the caller's u is */
    return change;
}

/* Written for speed: the scores, the loss and the residuals each a loop of
 * their own, so that gcc vectorises exp and log1p through libmvec. */
void c_logreg_steps(const double *x, const double *y, double *w, double *z, int64_t n, int64_t d, long steps, double lr,
                    double *losses)
{
    for (int64_t j = 0; j < d; j++) w[j] = 0;
    double g[1024];
    for (long s = 0; s < steps; s++) {
        double loss = 0;
#pragma omp parallel
        {
#pragma omp for schedule(static)
            for (int64_t i = 0; i < n; i++) {
                const double *row = x + i * d;
                double zi = 0;
#pragma omp simd reduction(+ : zi)
                for (int64_t j = 0; j < d; j++) zi += row[j] * w[j];
                z[i] = zi;
            }
#pragma omp for simd schedule(static) reduction(+ : loss)
            for (int64_t i = 0; i < n; i++) loss += fmax(z[i], 0.0) + log1p(exp(-fabs(z[i]))) - y[i] * z[i];
#pragma omp for simd schedule(static)
            for (int64_t i = 0; i < n; i++) z[i] = 1.0 / (1.0 + exp(-z[i])) - y[i]; /* the residuals */
        }
        losses[s] = loss / (double)n;
        for (int64_t j = 0; j < d; j++) g[j] = 0;
#pragma omp parallel
        {
            double mine[1024];
            for (int64_t j = 0; j < d; j++) mine[j] = 0;
#pragma omp for schedule(static)
            for (int64_t i = 0; i < n; i++) {
                const double *row = x + i * d;
                double r = z[i];
#pragma omp simd
                for (int64_t j = 0; j < d; j++) mine[j] += row[j] * r;
            }
#pragma omp critical
            for (int64_t j = 0; j < d; j++) g[j] += mine[j];
        }
        for (int64_t j = 0; j < d; j++) w[j] -= g[j] * (lr / (double)n);
    }
}

double c_loopstep(float *x, int64_t n)
{
    double total = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : total)
    for (int64_t i = 0; i < n; i++) {
        float a = x[i] * 0.999f, b = a + 0.001f, c = b * b, d = c - b;
        float h = (sqrtf(fabsf(d)) + a) * 0.5f;
        float next = fmaxf(fminf(h, 10.0f), -10.0f);
        x[i] = next;
        total += next;
    }
    return total;
}

/* nbody.c's accelerations, all pairs, summed in double. */
void c_nbody_accelerations(const float *x, const float *m, float *a, int64_t n, float softening)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double acc0 = 0, acc1 = 0, acc2 = 0;
#pragma omp simd reduction(+ : acc0, acc1, acc2)
        for (int64_t j = 0; j < n; j++) {
            float d0 = x[j] - x[i], d1 = x[n + j] - x[n + i], d2 = x[2 * n + j] - x[2 * n + i];
            float r2 = d0 * d0 + d1 * d1 + d2 * d2 + softening;
            float w = m[j] / (r2 * sqrtf(r2));
            acc0 += d0 * w, acc1 += d1 * w, acc2 += d2 * w;
        }
        a[i] = (float)acc0, a[n + i] = (float)acc1, a[2 * n + i] = (float)acc2;
    }
}

/* mandelbrot.c's counts, as C is written: each point's loop stops when it escapes. */
void c_mandelbrot(const float *re, const float *im, int32_t *count, int64_t n, int iterations)
{
#pragma omp parallel for schedule(dynamic, 1024)
    for (int64_t p = 0; p < n; p++) {
        float zr = 0, zi = 0;
        int32_t c = 0;
        for (int k = 0; k < iterations; k++) {
            float zr2 = zr * zr, zi2 = zi * zi;
            if (!(zr2 + zi2 <= 4.0f)) break;
            float nr = (zr2 - zi2) + re[p];
            zi = (2.0f * zr) * zi + im[p], zr = nr, c++;
        }
        count[p] = c;
    }
}

/* kmeans.c's Lloyd iterations (2-d points): the nearest centroid per point,
 * then the means (per-thread sums, added in thread order). */
void c_kmeans(const float *x, float *centroids, int32_t *assign, int64_t n, int64_t k, int iterations)
{
    for (int it = 0; it < iterations; it++) {
        double *sum = calloc((size_t)k * 3, sizeof *sum);
        if (!sum) return;
#pragma omp parallel
        {
            double *local = calloc((size_t)k * 3, sizeof *local);
#pragma omp for schedule(static)
            for (int64_t i = 0; i < n; i++) {
                float best = INFINITY;
                int32_t at = 0;
                for (int64_t j = 0; j < k; j++) {
                    float e0 = x[2 * i] - centroids[2 * j], e1 = x[2 * i + 1] - centroids[2 * j + 1];
                    float d = (float)((double)(e0 * e0) + (double)(e1 * e1));
                    if (d < best) best = d, at = (int32_t)j;
                }
                assign[i] = at;
                if (local) local[3 * at] += 1, local[3 * at + 1] += x[2 * i], local[3 * at + 2] += x[2 * i + 1];
            }
#pragma omp critical
            for (int64_t j = 0; local && j < 3 * k; j++) sum[j] += local[j];
            free(local);
        }
        for (int64_t j = 0; j < k; j++)
            if (sum[3 * j] > 0)
                centroids[2 * j] = (float)(sum[3 * j + 1] / sum[3 * j]), centroids[2 * j + 1] = (float)(sum[3 * j + 2] / sum[3 * j]);
        free(sum);
    }
}

/* ------------------------------------------ bench_ops's: scans and bins */

/* The inclusive sum of x, by PE's method (chunks of 16384: their totals,
 * the offsets, each chunk from its offset), chunks over the threads. */
void c_cumsum_f32(const float *x, float *y, int64_t n)
{
    enum { CHUNK = 16384 };
    int64_t chunks = (n + CHUNK - 1) / CHUNK;
    float *totals = malloc(sizeof *totals * (size_t)(chunks ? chunks : 1));
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; c++) {
        float s = 0;
        for (int64_t i = c * CHUNK; i < (c + 1) * CHUNK && i < n; i++) s += x[i];
        totals[c] = s;
    }
    float running = 0;
    for (int64_t c = 0; c < chunks; c++) {
        float t = totals[c];
        totals[c] = running;
        running += t;
    }
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; c++) {
        float s = totals[c];
        for (int64_t i = c * CHUNK; i < (c + 1) * CHUNK && i < n; i++) y[i] = s += x[i];
    }
    free(totals);
}

/* bins counts of lo <= x <= hi in equal bins (x == hi in the last), private bins per thread */
void c_histogram_f32(const float *x, int64_t n, int32_t *counts, int bins, float lo, float hi)
{
    for (int b = 0; b < bins; b++) counts[b] = 0;
    float scale = (float)bins / (hi - lo);
#pragma omp parallel
    {
        int32_t *mine = calloc((size_t)bins, sizeof *mine);
#pragma omp for schedule(static) nowait
        for (int64_t i = 0; i < n; i++) {
            float v = x[i];
            if (v >= lo && v <= hi) {
                int b = (int)((v - lo) * scale);
                mine[b < bins ? b : bins - 1]++;
            }
        }
#pragma omp critical
        for (int b = 0; b < bins; b++) counts[b] += mine[b];
        free(mine);
    }
}

/* out[idx[i]] += w[i] (out zeroed first), private sums in double per thread */
void c_bincount_f32(const int32_t *idx, const float *w, int64_t n, float *out, int len)
{
    double *total = calloc((size_t)len, sizeof *total);
#pragma omp parallel
    {
        double *mine = calloc((size_t)len, sizeof *mine);
#pragma omp for schedule(static) nowait
        for (int64_t i = 0; i < n; i++) mine[idx[i]] += w[i];
#pragma omp critical
        for (int b = 0; b < len; b++) total[b] += mine[b];
        free(mine);
    }
    for (int b = 0; b < len; b++) out[b] = (float)total[b];
    free(total);
}

/* y = x + 0.5 * roll(x, shift) */
void c_roll_add(const float *x, float *y, int64_t n, int64_t shift)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < shift; i++) y[i] = x[i] + 0.5f * x[n - shift + i];
#pragma omp parallel for simd schedule(static)
    for (int64_t i = shift; i < n; i++) y[i] = x[i] + 0.5f * x[i - shift];
}

/* y = 2 * pad(x, before, after, edge): n + before + after elements */
void c_pad_edge_scale(const float *x, float *y, int64_t n, int64_t before, int64_t after)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n + before + after; i++) {
        int64_t k = i - before;
        y[i] = 2.0f * x[k < 0 ? 0 : k >= n ? n - 1 : k];
    }
}

/* y = 2 * (x with x[start .. start + m) replaced by v) */
void c_slice_update_scale(const float *x, const float *v, float *y, int64_t n, int64_t start, int64_t m)
{
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = 2.0f * (i >= start && i < start + m ? v[i - start] : x[i]);
}

/* bench_short_axes's: reductions along short axes (issue 38 item 3). */
void c_sum_last(const float *x, float *y, int64_t rows, int64_t len)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; i++) {
        float s = 0;
        for (int64_t c = 0; c < len; c++) s += x[i * len + c];
        y[i] = s;
    }
}

void c_sum_first(const float *x, float *y, int64_t n, int64_t k)
{
    for (int64_t j = 0; j < k; j++) y[j] = 0;
#pragma omp parallel
    {
        float local[256] = {0};
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < k; j++) local[j] += x[i * k + j];
#pragma omp critical
        for (int64_t j = 0; j < k; j++) y[j] += local[j];
    }
}

void c_argmin_last(const float *x, int32_t *at, int64_t rows, int64_t len)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; i++) {
        float best = x[i * len];
        int32_t b = 0;
        for (int64_t c = 1; c < len; c++)
            if (x[i * len + c] < best) best = x[i * len + c], b = (int32_t)c;
        at[i] = b;
    }
}

void c_sq_distances(const float *p, const float *c, float *d2, int64_t n, int64_t k, int64_t dims)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < k; j++) {
            float s = 0;
            for (int64_t d = 0; d < dims; d++) {
                float e = p[i * dims + d] - c[j * dims + d];
                s += e * e;
            }
            d2[i * k + j] = s;
        }
}
