/* logreg.c — logistic regression by gradient descent: the loop users write,
 * and the program whose third iteration once came back wrong from a
 * replayed trace (issue 36).  Each step computes the scores x·w (a matrix-
 * vector product), the loss (the mean of the stable log-loss, softplus(z) -
 * y z) which it reads back, and the gradient xᵀ(σ(z) - y) / n (a second
 * product, through a transposed view); the new weights are kept, everything
 * else goes at the scope's end.  Checked against the same steps as a plain
 * C loop in double: the weights and every step's loss within 1e-9 relative
 * (the products sum in OpenBLAS's order, the C loop in its own).
 *
 *   logreg [n] [d] [steps]   n >= 1 (default 20000), 1 <= d <= 1024 (default 16),
 *                            steps >= 1 (default 50) */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#include "logreg_c.h"

/* One step from w: the next weights (kept out of the caller's scope by the
 * caller) and the loss at w, read back. */
static pe_array logreg_step(pe_array x, pe_array y, pe_array w, int64_t n, double *loss)
{
    pe_array z = pe_matmul(x, w); /* n scores */
    pe_array softplus = pe_add(pe_max(z, 0.0), pe_log1p(pe_exp(pe_neg(pe_abs(z)))));
    pe_read_f64(pe_mean(pe_sub(softplus, pe_mul(y, z))), loss);
    pe_array g = pe_matmul(pe_transpose(x), pe_sub(pe_sigmoid(z), y)); /* d */
    return pe_sub(w, pe_mul(g, LEARNING_RATE / (double)n));
}

/* steps steps from w = 0: the weights in w_out, each step's loss in losses. */
static int logreg_train(const double *xs, const double *ys, int64_t n, int64_t d, long steps, double *w_out, double *losses)
{
    pe_array x = pe_f64_2d(xs, n, d), y = pe_f64_1d(ys, n);
    pe_array w = pe_fill(PE_F64, 1, (int64_t[]){d}, 0.0);
    for (long s = 0; s < steps; s++) {
        pe_scope scope = pe_scope_begin();
        pe_array next = pe_keep(logreg_step(x, y, w, n, &losses[s]));
        pe_scope_end(scope);
        pe_release(w);
        w = next;
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
    int rc = logreg_train(r.x, r.y, r.n, r.d, r.steps, r.w, r.loss);
    pe_shutdown();
    if (rc != PE_OK) return 1;
    printf("logistic regression, %lld samples x %lld features, %ld steps (PE %s)\n", (long long)r.n, (long long)r.d,
           r.steps, pe_version());
    bool ok = logreg_run_check(&r);
    logreg_run_end(&r);
    return ok ? 0 : 1;
}
