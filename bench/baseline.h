/* baseline.h — the hand-written C loops of baseline.c (built with
 * -O3 -march=$PE_BENCH_MARCH (native by default) -ffast-math -fopenmp, OpenMP on all cores): bench_cpu's
 * workloads, then bench_views's (2-d arrays row-major, rows x cols). */
#ifndef PE_BENCH_BASELINE_H
#define PE_BENCH_BASELINE_H
#include <stdint.h>
void c_blackscholes(const float *S, const float *X, const float *T, float r, float v, float *call, float *put, int64_t n);
void c_blackscholes_greeks(const float *S, const float *X, const float *T, float r, float v, float *call, float *d_s,
                           float *d_x, float *d_t, int64_t n);
void c_triad(float *a, const float *b, const float *c, float s, int64_t n);
void c_chain16(float *out, const float *x, const float *y, int64_t n);
void c_chain24(float *out, const float *x, const float *y, int64_t n);
double c_sum(const float *x, int64_t n);
double c_dot(const float *x, const float *y, int64_t n);
int c_threads(void);

void c_stencil5(const float *a, float *out, int64_t n);      /* n x n -> (n-2) x (n-2) */
void c_blur3(const float *a, float *out, int64_t n);         /* n x n -> (n-2) x (n-2) */
void c_row_sums(const float *a, float *out, int64_t rows, int64_t cols);
void c_column_sums(const float *a, float *out, int64_t rows, int64_t cols);
void c_softmax_rows(const float *x, float *y, int64_t rows, int64_t cols);
void c_add_transpose(const float *a, float *out, int64_t n); /* n x n */
void c_gather(const float *a, const int32_t *index, float *out, int64_t n);

int64_t c_monte_carlo_pi(uint64_t seed, uint32_t draw_x, uint32_t draw_y, int64_t n); /* bench_rng's */
/* bench_gallery's: the gallery programs' computations (examples/) */
void c_heat_steps(float *u, float *tmp, int64_t n, int steps, float alpha); /* u updated in place (tmp: n x n) */
/* jacobi.c's sweeps: the interior the mean of its four neighbours, the
 * boundary kept, the largest change of each sweep found; u updated in place
 * (tmp: n x n); the last sweep's change. */
double c_jacobi_sweeps(double *u, double *tmp, int64_t n, int sweeps);
/* Logistic regression (examples/logreg.c): steps gradient steps from w = 0
 * on x (n x d, d <= 1024), labels y, each step's loss in losses; z: n scratch. */
void c_logreg_steps(const double *x, const double *y, double *w, double *z, int64_t n, int64_t d, long steps, double lr,
                    double *losses);
/* bench_loopstep's step: the 10 ops on x in place; the sum of the result. */
double c_loopstep(float *x, int64_t n);
void c_nbody_accelerations(const float *x, const float *m, float *a, int64_t n, float softening); /* x, a: 3 x n */
void c_mandelbrot(const float *re, const float *im, int32_t *count, int64_t n, int iterations);
void c_kmeans(const float *x, float *centroids, int32_t *assign, int64_t n, int64_t k, int iterations); /* x: n x 2 */
/* bench_intrinsics's: y = A x, A in CSR (row_ptr of n_rows + 1, col and val of nnz) */
void c_spmv_f64(const int32_t *row_ptr, const int32_t *col, const double *val, const double *x, double *y, int64_t n_rows);
void c_spmv_f32(const int32_t *row_ptr, const int32_t *col, const float *val, const float *x, float *y, int64_t n_rows);
/* bench_ops's: the scan by PE's two-pass method, a histogram and a bincount with private bins per
 * thread, and the consumers of roll, pad (edge) and slice_update */
void c_cumsum_f32(const float *x, float *y, int64_t n);
void c_histogram_f32(const float *x, int64_t n, int32_t *counts, int bins, float lo, float hi);
void c_bincount_f32(const int32_t *idx, const float *w, int64_t n, float *out, int len);
void c_roll_add(const float *x, float *y, int64_t n, int64_t shift);
void c_pad_edge_scale(const float *x, float *y, int64_t n, int64_t before, int64_t after);
void c_slice_update_scale(const float *x, const float *v, float *y, int64_t n, int64_t start, int64_t m);
/* bench_short_axes's (issue 38 item 3): y[i] = sum of row i (rows x len); y[j] = sum over i of x[i, j]
 * (n x k, k <= 256); at[i] = the first index of row i's minimum; d2[i, j] = |p_i - c_j|^2 (p: n x dims, c: k x dims) */
void c_sum_last(const float *x, float *y, int64_t rows, int64_t len);
void c_sum_first(const float *x, float *y, int64_t n, int64_t k);
void c_argmin_last(const float *x, int32_t *at, int64_t rows, int64_t len);
void c_sq_distances(const float *p, const float *c, float *d2, int64_t n, int64_t k, int64_t dims);
#endif
