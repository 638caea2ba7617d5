/* logreg_grad.c — logistic regression trained by automatic differentiation:
 * the program of logreg.c with its hand-written gradient replaced by
 * pe_grad of the loss.  Each step marks the weights as the variable
 * (pe_grad_enable: that also cuts the last step's history, so memory stays
 * flat), computes the mean log-loss (softplus(z) - y z, z = x·w), reads it,
 * and asks pe_grad for d loss / d w; the gradient PE derives is checked
 * against the hand-written one, xᵀ(σ(z) - y) / n, every step, and the
 * trained weights and every step's loss against logreg.c's plain C loop.
 *
 *   logreg_grad [n] [d] [steps]   n >= 1 (default 20000), 1 <= d <= 1024 (default 16),
 *                                 steps >= 1 (default 50) */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#include "logreg_c.h"

/* The largest difference of a from b, relative to b's largest element (read back, compared in C). */
static double largest_gap(pe_array a, pe_array b, int64_t d)
{
    double *va = malloc((size_t)d * sizeof *va), *vb = malloc((size_t)d * sizeof *vb), worst = INFINITY;
    if (va && vb && pe_read(a, va, (size_t)d * sizeof *va) == PE_OK && pe_read(b, vb, (size_t)d * sizeof *vb) == PE_OK) {
        double scale = 1e-300;
        for (int64_t j = 0; j < d; j++) scale = fmax(scale, fabs(vb[j]));
        worst = 0;
        for (int64_t j = 0; j < d; j++) worst = fmax(worst, fabs(va[j] - vb[j]) / scale);
    }
    free(va), free(vb);
    return worst;
}

/* One step from w (marked): the next weights, the loss at w, and how far
 * the derived gradient is from the hand-written one (relative). */
static pe_array step(pe_array x, pe_array y, pe_array w, int64_t n, int64_t d, double *loss, double *gap)
{
    pe_array z = pe_matmul(x, w);
    pe_array softplus = pe_add(pe_max(z, 0.0), pe_log1p(pe_exp(pe_neg(pe_abs(z)))));
    pe_array mean_loss = pe_mean(pe_sub(softplus, pe_mul(y, z)));
    pe_read_f64(mean_loss, loss);
    pe_array g;
    if (pe_grad(mean_loss, 1, &w, &g) != PE_OK) return (pe_array){0};
    pe_array by_hand = pe_div(pe_matmul(pe_transpose(x), pe_sub(pe_sigmoid(z), y)), (double)n);
    *gap = largest_gap(g, by_hand, d);
    return pe_grad_enable(pe_sub(w, pe_mul(g, LEARNING_RATE)));
}

static int train(const double *xs, const double *ys, int64_t n, int64_t d, long steps, double *w_out, double *losses,
                 double *worst_gap)
{
    pe_array x = pe_f64_2d(xs, n, d), y = pe_f64_1d(ys, n);
    pe_array w = pe_grad_enable(pe_fill(PE_F64, 1, (int64_t[]){d}, 0.0));
    *worst_gap = 0;
    for (long s = 0; s < steps; s++) {
        pe_scope scope = pe_scope_begin();
        double gap = 0;
        pe_array next = pe_keep(step(x, y, w, n, d, &losses[s], &gap));
        pe_scope_end(scope);
        pe_release(w);
        w = next;
        *worst_gap = fmax(*worst_gap, gap);
    }
    int rc = pe_read(w, w_out, (size_t)d * sizeof *w_out);
    pe_release(x), pe_release(y), pe_release(w);
    return rc;
}

int main(int argc, char **argv)
{
    logreg_run r;
    int bad = logreg_run_begin(argc, argv, &r);
    if (bad) return bad;
    if (pe_init(NULL) != PE_OK) return 1;
    double worst_gap;
    int rc = train(r.x, r.y, r.n, r.d, r.steps, r.w, r.loss, &worst_gap);
    pe_shutdown();
    if (rc != PE_OK) return 1;
    printf("logistic regression by pe_grad, %lld samples x %lld features, %ld steps (PE %s)\n", (long long)r.n,
           (long long)r.d, r.steps, pe_version());
    printf("derived gradient against the hand-written one: largest relative difference %.3g\n", worst_gap);
    bool ok = logreg_run_check(&r) && worst_gap <= 1e-12;
    logreg_run_end(&r);
    return ok ? 0 : 1;
}
