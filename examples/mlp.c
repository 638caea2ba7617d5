/* mlp.c — a two-layer network trained by gradient descent, its gradients by
 * pe_grad: h = tanh(x W1 + b1), out = h W2 + b2, loss = mean((out - y)^2)
 * on synthetic data (y = sin(3 x0) + x1 x2 / 2).  The four parameters are
 * the variables; each step marks the new ones again.  Checked against a C
 * implementation of the same forward and backward passes in double: the
 * gradients of the first step, every step's loss, and the loss falling.
 *
 *   mlp [n] [hidden] [steps]   n >= 1 (default 4096), 1 <= hidden <= 256 (default 32),
 *                              steps >= 1 (default 200) */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pe.h>

#define IN 3
#define LEARNING_RATE 0.1

typedef struct {
    double *w1, *b1, *w2, b2; /* [IN][hidden], [hidden], [hidden] */
} params;

static double uniform(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (double)((*state >> 8) & 0xffffff) / 16777216.0 * 2 - 1;
}

/* ------------------------------------------------------------ in C */

/* Loss at p; with grad non-NULL, the gradients too (the backward pass by hand). */
static double c_loss(const double *x, const double *y, int64_t n, int hidden, const params *p, params *grad)
{
    double *h = malloc((size_t)hidden * sizeof *h), loss = 0;
    if (!h) return NAN;
    if (grad) {
        memset(grad->w1, 0, sizeof(double) * IN * (size_t)hidden);
        memset(grad->b1, 0, sizeof(double) * (size_t)hidden);
        memset(grad->w2, 0, sizeof(double) * (size_t)hidden);
        grad->b2 = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        double out = p->b2;
        for (int k = 0; k < hidden; k++) {
            double a = p->b1[k];
            for (int j = 0; j < IN; j++) a += x[i * IN + j] * p->w1[j * hidden + k];
            h[k] = tanh(a);
            out += h[k] * p->w2[k];
        }
        double r = out - y[i];
        loss += r * r;
        if (!grad) continue;
        double dout = 2 * r / (double)n;
        grad->b2 += dout;
        for (int k = 0; k < hidden; k++) {
            grad->w2[k] += h[k] * dout;
            double da = dout * p->w2[k] * (1 - h[k] * h[k]);
            grad->b1[k] += da;
            for (int j = 0; j < IN; j++) grad->w1[j * hidden + k] += x[i * IN + j] * da;
        }
    }
    free(h);
    return loss / (double)n;
}

/* ------------------------------------------------------------ in PE */

/* The loss of the network with parameters v[0..3] = W1, b1, W2, b2. */
static pe_array pe_network_loss(pe_array x, pe_array y, const pe_array *v)
{
    pe_array h = pe_tanh(pe_add(pe_matmul(x, v[0]), v[1]));
    pe_array r = pe_sub(pe_add(pe_matmul(h, v[2]), v[3]), y);
    return pe_mean(pe_mul(r, r));
}

static double largest_gap(pe_array got, const double *want, int64_t count)
{
    double *g = malloc((size_t)count * sizeof *g), worst = 0, scale = 0;
    if (!g || pe_read(got, g, (size_t)count * sizeof *g) != PE_OK) {
        free(g);
        return INFINITY;
    }
    for (int64_t i = 0; i < count; i++) scale = fmax(scale, fabs(want[i]));
    for (int64_t i = 0; i < count; i++) worst = fmax(worst, fabs(g[i] - want[i]) / fmax(scale, 1e-300));
    free(g);
    return worst;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
    int hidden = argc > 2 ? atoi(argv[2]) : 32;
    long steps = argc > 3 ? atol(argv[3]) : 200;
    if (argc > 4 || n < 1 || n > (1 << 24) || hidden < 1 || hidden > 256 || steps < 1 || steps > 100000) {
        fprintf(stderr, "usage: %s [n >= 1] [1 <= hidden <= 256] [steps >= 1]\n", argv[0]);
        return 2;
    }
    unsigned seed = 11;
    double *x = malloc((size_t)n * IN * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    double *mem = calloc((size_t)(IN + 2) * (size_t)hidden * 2, sizeof *mem);
    double *loss = malloc((size_t)steps * sizeof *loss), *loss_c = malloc((size_t)steps * sizeof *loss_c);
    if (!x || !y || !mem || !loss || !loss_c) return 1;
    for (int64_t i = 0; i < n; i++) {
        for (int j = 0; j < IN; j++) x[i * IN + j] = uniform(&seed);
        y[i] = sin(3 * x[i * IN]) + 0.5 * x[i * IN + 1] * x[i * IN + 2];
    }
    params p = {mem, mem + IN * hidden, mem + (IN + 1) * hidden, 0.0}, g = {mem + (IN + 2) * hidden,
                mem + (2 * IN + 2) * hidden, mem + (2 * IN + 3) * hidden, 0.0};
    for (int k = 0; k < IN * hidden; k++) p.w1[k] = uniform(&seed);
    for (int k = 0; k < hidden; k++) p.w2[k] = 0.5 * uniform(&seed);

    if (pe_init(NULL) != PE_OK) return 1;
    pe_array xs = pe_f64_2d(x, n, IN), ys = pe_f64_1d(y, n);
    pe_array v[4] = {pe_grad_enable(pe_f64_2d(p.w1, IN, hidden)), pe_grad_enable(pe_f64_1d(p.b1, hidden)),
                     pe_grad_enable(pe_f64_1d(p.w2, hidden)), pe_grad_enable(pe_scalar(PE_F64, p.b2))};
    double gap = 0;
    for (long s = 0; s < steps; s++) {
        pe_scope scope = pe_scope_begin();
        pe_array l = pe_network_loss(xs, ys, v), grads[4];
        pe_read_f64(l, &loss[s]);
        if (pe_grad(l, 4, v, grads) != PE_OK) return 1;
        if (s == 0) { /* the derived gradients against the hand-written backward pass */
            c_loss(x, y, n, hidden, &p, &g);
            gap = fmax(gap, largest_gap(grads[0], g.w1, IN * hidden));
            gap = fmax(gap, largest_gap(grads[1], g.b1, hidden));
            gap = fmax(gap, largest_gap(grads[2], g.w2, hidden));
            gap = fmax(gap, largest_gap(grads[3], &g.b2, 1));
        }
        pe_array next[4];
        for (int k = 0; k < 4; k++) next[k] = pe_keep(pe_grad_enable(pe_sub(v[k], pe_mul(grads[k], LEARNING_RATE))));
        pe_scope_end(scope);
        for (int k = 0; k < 4; k++) pe_release(v[k]), v[k] = next[k];
    }
    pe_shutdown();

    for (long s = 0; s < steps; s++) { /* the same descent in C */
        loss_c[s] = c_loss(x, y, n, hidden, &p, &g);
        for (int k = 0; k < IN * hidden; k++) p.w1[k] -= LEARNING_RATE * g.w1[k];
        for (int k = 0; k < hidden; k++) p.b1[k] -= LEARNING_RATE * g.b1[k], p.w2[k] -= LEARNING_RATE * g.w2[k];
        p.b2 -= LEARNING_RATE * g.b2;
    }
    double worst_loss = 0;
    for (long s = 0; s < steps; s++) worst_loss = fmax(worst_loss, fabs(loss[s] - loss_c[s]) / loss_c[s]);
    bool ok = gap <= 1e-12 && worst_loss <= 1e-9 && loss[steps - 1] < 0.5 * loss[0];
    printf("two-layer network (%d -> %d tanh -> 1) by pe_grad, %lld samples, %ld steps (PE %s)\n", IN, hidden,
           (long long)n, steps, pe_version());
    printf("loss %.6f -> %.6f\n", loss[0], loss[steps - 1]);
    printf("first step's gradients against the hand-written backward pass: largest relative difference %.3g\n", gap);
    printf("every step's loss against the C descent: largest relative difference %.3g -> %s\n", worst_loss,
           ok ? "OK" : "MISMATCH");
    free(x), free(y), free(mem), free(loss), free(loss_c);
    return ok ? 0 : 1;
}
