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

#define LEARNING_RATE 0.5

/* The samples: x uniform in [-1, 1), labels from a hidden weight vector
 * with 10% of them flipped (so the loss does not go to 0). */
static void logreg_samples(double *x, double *y, int64_t n, int64_t d, unsigned seed)
{
    srand(seed);
    double *hidden = malloc((size_t)d * sizeof *hidden);
    if (!hidden) return;
    for (int64_t j = 0; j < d; j++) hidden[j] = 2.0 * rand() / RAND_MAX - 1.0;
    for (int64_t i = 0; i < n; i++) {
        double z = 0;
        for (int64_t j = 0; j < d; j++) z += (x[i * d + j] = 2.0 * rand() / RAND_MAX - 1.0) * hidden[j];
        bool label = z > 0;
        if (rand() % 10 == 0) label = !label;
        y[i] = label;
    }
    free(hidden);
}

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

/* The same steps in C. */
static void logreg_c_train(const double *x, const double *y, int64_t n, int64_t d, long steps, double *w, double *losses)
{
    double *z = malloc((size_t)n * sizeof *z), *g = malloc((size_t)d * sizeof *g);
    if (!z || !g) {
        free(z), free(g);
        return;
    }
    for (int64_t j = 0; j < d; j++) w[j] = 0;
    for (long s = 0; s < steps; s++) {
        double loss = 0;
        for (int64_t i = 0; i < n; i++) {
            double zi = 0;
            for (int64_t j = 0; j < d; j++) zi += x[i * d + j] * w[j];
            z[i] = zi;
            loss += fmax(zi, 0.0) + log1p(exp(-fabs(zi))) - y[i] * zi;
        }
        losses[s] = loss / (double)n;
        for (int64_t j = 0; j < d; j++) g[j] = 0;
        for (int64_t i = 0; i < n; i++) {
            double r = 1.0 / (1.0 + exp(-z[i])) - y[i];
            for (int64_t j = 0; j < d; j++) g[j] += x[i * d + j] * r;
        }
        for (int64_t j = 0; j < d; j++) w[j] -= g[j] * (LEARNING_RATE / (double)n);
    }
    free(z), free(g);
}

static double rel_error(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-12); }

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 20000, d = argc > 2 ? atoll(argv[2]) : 16;
    long steps = argc > 3 ? atol(argv[3]) : 50;
    if (argc > 4 || n < 1 || n > (1 << 26) || d < 1 || d > 1024 || steps < 1 || steps > 100000) {
        fprintf(stderr, "usage: %s [n >= 1] [1 <= d <= 1024] [steps >= 1]\n", argv[0]);
        return 2;
    }
    double *x = malloc((size_t)(n * d) * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double *w = malloc((size_t)d * sizeof *w), *w_c = malloc((size_t)d * sizeof *w_c);
    double *loss = malloc((size_t)steps * sizeof *loss), *loss_c = malloc((size_t)steps * sizeof *loss_c);
    if (!x || !y || !w || !w_c || !loss || !loss_c) return 1;
    logreg_samples(x, y, n, d, 7);

    if (pe_init(NULL) != PE_OK) return 1;
    int rc = logreg_train(x, y, n, d, steps, w, loss);
    pe_shutdown();
    if (rc != PE_OK) return 1;
    logreg_c_train(x, y, n, d, steps, w_c, loss_c);

    double worst_w = 0, worst_loss = 0;
    for (int64_t j = 0; j < d; j++) worst_w = fmax(worst_w, rel_error(w[j], w_c[j]));
    for (long s = 0; s < steps; s++) worst_loss = fmax(worst_loss, rel_error(loss[s], loss_c[s]));
    bool ok = worst_w <= 1e-9 && worst_loss <= 1e-9 && loss[steps - 1] < loss[0];
    printf("logistic regression, %lld samples x %lld features, %ld steps (PE %s)\n", (long long)n, (long long)d, steps,
           pe_version());
    printf("loss %.6f -> %.6f; w[0] = %.9f\n", loss[0], loss[steps - 1], w[0]);
    printf("largest relative difference from the plain C loop: weights %.3g, losses %.3g -> %s\n", worst_w, worst_loss,
           ok ? "OK" : "MISMATCH");
    free(x), free(y), free(w), free(w_c), free(loss), free(loss_c);
    return ok ? 0 : 1;
}
