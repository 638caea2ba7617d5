/* nbody.c — all-pairs gravity with PE: the pairwise separations come from
 * broadcasting a row of positions against a column of them (N x N arrays
 * that are never stored: views and element-wise ops fused into the
 * reductions), the accelerations are sums along an axis, and the bodies
 * move by leapfrog (kick, drift, kick).  Checked against the same
 * computation as a plain C loop, and by the drift of the total energy.
 *
 *   nbody [bodies] [steps]   bodies >= 2 (default 1024), steps >= 1 (default 20) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#define DT 1e-3f
#define SOFTENING 1e-2f /* eps^2 added to every squared distance */

typedef struct {
    pe_array x[3], v[3], m;
} bodies;

/* The acceleration of every body: a_i = sum_j m_j d_ij / (|d_ij|^2 + eps^2)^(3/2),
 * d_ij = x_j - x_i (the j = i term is 0). */
static void accelerations(const bodies *b, int64_t n, pe_array a[3])
{
    const int64_t row[2] = {1, n}, column[2] = {n, 1};
    pe_array d[3];
    for (int k = 0; k < 3; k++) d[k] = pe_sub(pe_reshape(b->x[k], 2, row), pe_reshape(b->x[k], 2, column));
    pe_array r2 = pe_add(pe_add(pe_add(pe_mul(d[0], d[0]), pe_mul(d[1], d[1])), pe_mul(d[2], d[2])), SOFTENING);
    pe_array weight = pe_div(pe_reshape(b->m, 2, row), pe_mul(r2, pe_sqrt(r2)));
    for (int k = 0; k < 3; k++) a[k] = pe_sum_axis(pe_mul(d[k], weight), 1);
}

/* Kinetic plus potential energy, in double: sum m v^2 / 2 - sum_{i<j} m_i m_j / sqrt(r^2 + eps^2). */
static double energy(const float *x, const float *v, const float *m, int64_t n)
{
    double e = 0;
    for (int64_t i = 0; i < n; i++) {
        double v2 = 0;
        for (int k = 0; k < 3; k++) v2 += (double)v[k * n + i] * v[k * n + i];
        e += 0.5 * m[i] * v2;
        for (int64_t j = i + 1; j < n; j++) {
            double r2 = SOFTENING;
            for (int k = 0; k < 3; k++) r2 += ((double)x[k * n + j] - x[k * n + i]) * ((double)x[k * n + j] - x[k * n + i]);
            e -= (double)m[i] * m[j] / sqrt(r2);
        }
    }
    return e;
}

/* The same leapfrog as a C loop (accelerations summed in double, as PE's
 * sums are). */
static void c_accelerations(const float *x, const float *m, float *a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double acc[3] = {0, 0, 0};
        for (int64_t j = 0; j < n; j++) {
            float d[3];
            for (int k = 0; k < 3; k++) d[k] = x[k * n + j] - x[k * n + i];
            float r2 = ((d[0] * d[0] + d[1] * d[1]) + d[2] * d[2]) + SOFTENING;
            float weight = m[j] / (r2 * sqrtf(r2));
            for (int k = 0; k < 3; k++) acc[k] += (double)(d[k] * weight);
        }
        for (int k = 0; k < 3; k++) a[k * n + i] = (float)acc[k];
    }
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 1024;
    long steps = argc > 2 ? atol(argv[2]) : 20;
    if (argc > 3 || n < 2 || n > 100000 || steps < 1) {
        fprintf(stderr, "usage: %s [bodies >= 2] [steps >= 1]\n", argv[0]);
        return 2;
    }
    float *x = malloc(3 * (size_t)n * sizeof *x), *v = malloc(3 * (size_t)n * sizeof *v), *m = malloc((size_t)n * sizeof *m);
    float *cx = malloc(3 * (size_t)n * sizeof *cx), *cv = malloc(3 * (size_t)n * sizeof *cv), *ca = malloc(3 * (size_t)n * sizeof *ca);
    float *got_x = malloc(3 * (size_t)n * sizeof *got_x), *got_v = malloc(3 * (size_t)n * sizeof *got_v);
    if (!x || !v || !m || !cx || !cv || !ca || !got_x || !got_v) return 1;
    srand(7);
    for (int64_t i = 0; i < n; i++) { /* a cold ball of equal masses */
        for (int k = 0; k < 3; k++) x[k * n + i] = 2.0f * (float)rand() / (float)RAND_MAX - 1.0f, v[k * n + i] = 0.0f;
        m[i] = 1.0f / (float)n;
    }
    double e0 = energy(x, v, m, n);

    if (pe_init(NULL) != PE_OK) return 1;
    bodies b;
    for (int k = 0; k < 3; k++) b.x[k] = pe_f32_1d(x + k * n, n), b.v[k] = pe_f32_1d(v + k * n, n);
    b.m = pe_f32_1d(m, n);
    pe_array a[3];
    accelerations(&b, n, a);
    for (long s = 0; s < steps; s++) {
        pe_scope scope = pe_scope_begin();
        for (int k = 0; k < 3; k++) { /* kick half a step, drift a whole one */
            pe_array half = pe_keep(pe_add(b.v[k], pe_mul(0.5f * DT, a[k])));
            pe_array moved = pe_keep(pe_add(b.x[k], pe_mul(DT, half)));
            pe_release(b.v[k]), pe_release(b.x[k]), pe_release(a[k]);
            b.v[k] = half, b.x[k] = moved;
        }
        pe_array next[3];
        accelerations(&b, n, next);
        for (int k = 0; k < 3; k++) { /* kick the other half */
            pe_array kicked = pe_keep(pe_add(b.v[k], pe_mul(0.5f * DT, next[k])));
            a[k] = pe_keep(next[k]);
            pe_release(b.v[k]);
            b.v[k] = kicked;
        }
        pe_scope_end(scope);
    }
    int rc = PE_OK;
    for (int k = 0; k < 3 && rc == PE_OK; k++) {
        rc = pe_read(b.x[k], got_x + k * n, (size_t)n * sizeof *got_x);
        if (rc == PE_OK) rc = pe_read(b.v[k], got_v + k * n, (size_t)n * sizeof *got_v);
    }
    for (int k = 0; k < 3; k++) pe_release(b.x[k]), pe_release(b.v[k]), pe_release(a[k]);
    pe_release(b.m);
    pe_shutdown();
    if (rc != PE_OK) return 1;

    for (int64_t k = 0; k < 3 * n; k++) cx[k] = x[k], cv[k] = v[k];
    c_accelerations(cx, m, ca, n);
    for (long s = 0; s < steps; s++) {
        for (int64_t k = 0; k < 3 * n; k++) cv[k] = cv[k] + (0.5f * DT) * ca[k], cx[k] = cx[k] + DT * cv[k];
        c_accelerations(cx, m, ca, n);
        for (int64_t k = 0; k < 3 * n; k++) cv[k] = cv[k] + (0.5f * DT) * ca[k];
    }
    double worst = 0;
    for (int64_t k = 0; k < 3 * n; k++) worst = fmax(worst, fabs((double)got_x[k] - cx[k]));
    double e1 = energy(got_x, got_v, m, n), drift = fabs((e1 - e0) / e0);
    printf("n-body, %lld bodies, %ld leapfrog steps of %g (PE %s)\n", (long long)n, steps, (double)DT, pe_version());
    printf("energy %.9f -> %.9f: relative drift %.2e\n", e0, e1, drift);
    printf("largest position difference from the plain C loop: %.3g -> %s\n", worst,
           worst <= 1e-5 && drift <= 1e-4 ? "OK" : "MISMATCH");
    free(x), free(v), free(m), free(cx), free(cv), free(ca), free(got_x), free(got_v);
    return worst <= 1e-5 && drift <= 1e-4 ? 0 : 1;
}
