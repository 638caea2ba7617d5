/* logreg_c.h — logistic regression's data and its plain C loop: the
 * samples logreg.c and logreg_grad.c train on and the oracle both check
 * their weights and losses against. */
#ifndef PE_EXAMPLES_LOGREG_C_H
#define PE_EXAMPLES_LOGREG_C_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

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

/* The same steps in C: steps steps of gradient descent from w = 0, each step's loss in losses. */
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

/* A run of either program: its arguments, samples, and results next to the C loop's. */
typedef struct {
    int64_t n, d;
    long steps;
    double *x, *y, *w, *w_c, *loss, *loss_c;
} logreg_run;

static void logreg_run_end(logreg_run *r)
{
    free(r->x), free(r->y), free(r->w), free(r->w_c), free(r->loss), free(r->loss_c);
}

/* Reads [n] [d] [steps], makes room and the samples: 0, or main's exit code
 * (2: a bad argument, 1: out of memory). */
static int logreg_run_begin(int argc, char **argv, logreg_run *r)
{
    r->n = argc > 1 ? atoll(argv[1]) : 20000, r->d = argc > 2 ? atoll(argv[2]) : 16;
    r->steps = argc > 3 ? atol(argv[3]) : 50;
    if (argc > 4 || r->n < 1 || r->n > (1 << 26) || r->d < 1 || r->d > 1024 || r->steps < 1 || r->steps > 100000) {
        fprintf(stderr, "usage: %s [n >= 1] [1 <= d <= 1024] [steps >= 1]\n", argv[0]);
        return 2;
    }
    r->x = malloc((size_t)(r->n * r->d) * sizeof *r->x), r->y = malloc((size_t)r->n * sizeof *r->y);
    r->w = malloc((size_t)r->d * sizeof *r->w), r->w_c = malloc((size_t)r->d * sizeof *r->w_c);
    r->loss = malloc((size_t)r->steps * sizeof *r->loss), r->loss_c = malloc((size_t)r->steps * sizeof *r->loss_c);
    if (!r->x || !r->y || !r->w || !r->w_c || !r->loss || !r->loss_c) {
        logreg_run_end(r);
        return 1;
    }
    logreg_samples(r->x, r->y, r->n, r->d, 7);
    return 0;
}

static double logreg_rel_error(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-12); }

/* The same steps in C, and PE's weights and losses against them (1e-9
 * relative), the loss falling; prints what it found. */
static bool logreg_run_check(logreg_run *r)
{
    logreg_c_train(r->x, r->y, r->n, r->d, r->steps, r->w_c, r->loss_c);
    double worst_w = 0, worst_loss = 0;
    for (int64_t j = 0; j < r->d; j++) worst_w = fmax(worst_w, logreg_rel_error(r->w[j], r->w_c[j]));
    for (long s = 0; s < r->steps; s++) worst_loss = fmax(worst_loss, logreg_rel_error(r->loss[s], r->loss_c[s]));
    bool ok = worst_w <= 1e-9 && worst_loss <= 1e-9 && r->loss[r->steps - 1] < r->loss[0];
    printf("loss %.6f -> %.6f; w[0] = %.9f\n", r->loss[0], r->loss[r->steps - 1], r->w[0]);
    printf("largest relative difference from the plain C loop: weights %.3g, losses %.3g -> %s\n", worst_w, worst_loss,
           ok ? "OK" : "MISMATCH");
    return ok;
}

#endif
