/* bench_grad.c — what automatic differentiation costs (issue 43), medians
 * of alternating runs after warm-up, each with its baseline from the same
 * run:
 *   1. Black-Scholes call prices of N f32 options, and their gradient by
 *      all three array inputs (S, X, T) through pe_grad: PE's gradient
 *      against PE's forward pass (reverse mode's bound is 3x) and against
 *      the closed-form derivatives written as an OpenMP C loop
 *      (baseline.c's c_blackscholes_greeks); PE's forward against
 *      c_blackscholes's call.
 *   2. A logistic regression step (examples/logreg.c's loop, n x d f64, the
 *      loss read each step): the gradient derived by pe_grad against the
 *      hand-written one in PE (floor 1.2x).
 * Results are checked against the C loops before any timing counts.
 *
 *   bench_grad [options N] [samples n] [features d] [steps] */
#define _GNU_SOURCE
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#include "baseline.h"
#include "bench_util.h"

#define main logreg_main
#include "../examples/logreg.c"
#undef main

#define RUNS 7
#define R 0.02f
#define V 0.30f

/* ------------------------------------------------------ Black-Scholes */

static pe_array bs_call(pe_array s, pe_array x, pe_array t)
{
    pe_array sqrt_t = pe_sqrt(t);
    pe_array d1 = pe_div(pe_add(pe_log(pe_div(s, x)), pe_mul(R + 0.5f * V * V, t)), pe_mul(V, sqrt_t));
    pe_array d2 = pe_sub(d1, pe_mul(V, sqrt_t));
    return pe_sub(pe_mul(s, pe_cdf_norm(d1)), pe_mul(pe_mul(x, pe_exp(pe_mul(-R, t))), pe_cdf_norm(d2)));
}

typedef struct {
    int64_t n;
    float *s, *x, *t, *call, *d_s, *d_x, *d_t;
} bs_data;

static void bs_forward(bs_data *b)
{
    pe_scope sc = pe_scope_begin();
    pe_array s = pe_f32_1d(b->s, b->n), x = pe_f32_1d(b->x, b->n), t = pe_f32_1d(b->t, b->n);
    pe_read(bs_call(s, x, t), b->call, (size_t)b->n * sizeof(float));
    pe_scope_end(sc);
}

static void bs_gradient(bs_data *b)
{
    pe_scope sc = pe_scope_begin();
    pe_array v[3] = {pe_grad_enable(pe_f32_1d(b->s, b->n)), pe_grad_enable(pe_f32_1d(b->x, b->n)),
                     pe_grad_enable(pe_f32_1d(b->t, b->n))}, g[3];
    pe_array call = bs_call(v[0], v[1], v[2]);
    pe_grad(call, 3, v, g);
    pe_hint_read(call);
    float *out[4] = {b->call, b->d_s, b->d_x, b->d_t};
    pe_array read[4] = {call, g[0], g[1], g[2]};
    for (int k = 0; k < 4; k++) pe_read(read[k], out[k], (size_t)b->n * sizeof(float));
    pe_scope_end(sc);
}

static double worst_of(const float *a, const float *b, int64_t n) { return rel_diff_above(a, b, n, 1e-2); }

static void black_scholes(int64_t n)
{
    bs_data pe = {n, filled(n, 5, 30, 1), filled(n, 1, 100, 2), filled(n, 0.25f, 10, 3), buffer(n), buffer(n), buffer(n),
                  buffer(n)};
    bs_data c = pe;
    c.call = buffer(n), c.d_s = buffer(n), c.d_x = buffer(n), c.d_t = buffer(n);
    float *put = buffer(n);
    double t_fwd[RUNS], t_grad[RUNS], t_c_fwd[RUNS], t_c_grad[RUNS];
    for (int r = -2; r < RUNS; r++) {
        double t0 = now();
        bs_forward(&pe);
        double t1 = now();
        bs_gradient(&pe);
        double t2 = now();
        c_blackscholes(c.s, c.x, c.t, R, V, c.call, put, n);
        double t3 = now();
        c_blackscholes_greeks(c.s, c.x, c.t, R, V, c.call, c.d_s, c.d_x, c.d_t, n);
        double t4 = now();
        if (r < 0) continue;
        t_fwd[r] = t1 - t0, t_grad[r] = t2 - t1, t_c_fwd[r] = t3 - t2, t_c_grad[r] = t4 - t3;
    }
    double check = fmax(fmax(worst_of(pe.call, c.call, n), worst_of(pe.d_s, c.d_s, n)),
                        fmax(worst_of(pe.d_x, c.d_x, n), worst_of(pe.d_t, c.d_t, n)));
    double fwd = median(t_fwd, RUNS), grad = median(t_grad, RUNS), cf = median(t_c_fwd, RUNS), cg = median(t_c_grad, RUNS);
    printf("black-scholes, %lld f32 options: forward PE %.2f ms (C %.2f ms, %.2fx C's time); gradient by S, X, T "
           "PE %.2f ms (closed-form C %.2f ms, %.2fx C's time); gradient / forward in PE %.2fx (bound 3); check %.1e\n",
           (long long)n, fwd * 1e3, cf * 1e3, fwd / cf, grad * 1e3, cg * 1e3, grad / cg, grad / fwd, check);
    free(pe.s), free(pe.x), free(pe.t), free(pe.call), free(pe.d_s), free(pe.d_x), free(pe.d_t);
    free(c.call), free(c.d_s), free(c.d_x), free(c.d_t), free(put);
}

/* ------------------------------------------------ logistic regression */

/* One step with the gradient derived: the loss read, the next weights (marked). */
static pe_array logreg_grad_step(pe_array x, pe_array y, pe_array w, double *loss)
{
    pe_array z = pe_matmul(x, w);
    pe_array softplus = pe_add(pe_max(z, 0.0), pe_log1p(pe_exp(pe_neg(pe_abs(z)))));
    pe_array mean_loss = pe_mean(pe_sub(softplus, pe_mul(y, z)));
    pe_read_f64(mean_loss, loss);
    pe_array g;
    pe_grad(mean_loss, 1, &w, &g);
    return pe_grad_enable(pe_sub(w, pe_mul(g, LEARNING_RATE)));
}

/* steps of either kind from w = 0: seconds per step (median), the weights in w_out */
static double logreg_run_steps(pe_array x, pe_array y, int64_t n, int64_t d, long steps, bool derived, double *w_out)
{
    double *t = bench_alloc_or_exit(malloc((size_t)steps * sizeof *t)), loss;
    pe_array w = pe_fill(PE_F64, 1, (int64_t[]){d}, 0.0);
    if (derived) {
        pe_array marked = pe_grad_enable(w);
        pe_release(w);
        w = marked;
    }
    for (long s = 0; s < steps; s++) {
        double t0 = now();
        pe_scope sc = pe_scope_begin();
        pe_array next = pe_keep(derived ? logreg_grad_step(x, y, w, &loss) : logreg_step(x, y, w, n, &loss));
        pe_scope_end(sc);
        pe_release(w);
        w = next;
        t[s] = now() - t0;
    }
    pe_read(w, w_out, (size_t)d * sizeof *w_out);
    pe_release(w);
    double m = median(t + 2, (int)steps - 2); /* the first two compile */
    free(t);
    return m;
}

static void logistic_regression(int64_t n, int64_t d, long steps)
{
    double *xs = bench_alloc_or_exit(malloc((size_t)(n * d) * sizeof *xs)), *ys = bench_alloc_or_exit(malloc((size_t)n * sizeof *ys));
    double *w_hand = bench_alloc_or_exit(malloc((size_t)d * sizeof(double))), *w_derived = bench_alloc_or_exit(malloc((size_t)d * sizeof(double)));
    logreg_samples(xs, ys, n, d, 7);
    pe_array x = pe_f64_2d(xs, n, d), y = pe_f64_1d(ys, n);
    double hand[3], derived[3];
    for (int r = 0; r < 3; r++) { /* alternating */
        hand[r] = logreg_run_steps(x, y, n, d, steps, false, w_hand);
        derived[r] = logreg_run_steps(x, y, n, d, steps, true, w_derived);
    }
    double worst = 0;
    for (int64_t j = 0; j < d; j++) worst = fmax(worst, fabs(w_hand[j] - w_derived[j]) / fmax(fabs(w_hand[j]), 1e-12));
    double h = median(hand, 3), g = median(derived, 3);
    printf("logistic regression step, %lld x %lld f64, the loss read each step: hand-written gradient %.3f ms, "
           "derived by pe_grad %.3f ms, %.2fx (floor 1.2); weights differ by %.1e\n",
           (long long)n, (long long)d, h * 1e3, g * 1e3, g / h, worst);
    pe_release(x), pe_release(y);
    free(xs), free(ys), free(w_hand), free(w_derived);
}

int main(int argc, char **argv)
{
    int64_t options = argc > 1 ? atoll(argv[1]) : 4 << 20, n = argc > 2 ? atoll(argv[2]) : 200000;
    int64_t d = argc > 3 ? atoll(argv[3]) : 32;
    long steps = argc > 4 ? atol(argv[4]) : 20;
    if (options < 1 || n < 1 || d < 1 || steps < 5) {
        fprintf(stderr, "usage: %s [options >= 1] [samples >= 1] [features >= 1] [steps >= 5]\n", argv[0]);
        return 2;
    }
    if (pe_init(NULL) != PE_OK) return 1;
    printf("bench_grad: %d C threads (%s)\n", c_threads(), PE_BENCH_C_FLAGS);
    black_scholes(options);
    logistic_regression(n, d, steps);
    pe_shutdown();
    return 0;
}
