/* kmeans.c — k-means clustering with PE (Lloyd's iterations): squared
 * distances from every point to every centroid by broadcasting (an
 * N x K x D array that is never stored: it feeds a sum along the last
 * axis), the nearest centroid by argmin along an axis, and each centroid
 * moved to the mean of its points through a one-hot N x K x D product summed
 * along the points' axis.  Checked against the same iterations as a plain C
 * loop: the assignments exactly, the centroids within 1e-5.
 *
 *   kmeans [points] [clusters] [iterations]
 *       points >= clusters >= 1 (defaults 20000, 8), iterations >= 1 (default 10) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#define D 2 /* dimensions */

/* One Lloyd iteration: the assignment of every point, and the new
 * centroids (a centroid without points stays where it is). */
static pe_array lloyd(pe_array points, pe_array centroids, int64_t n, int64_t k, pe_array *assignment)
{
    pe_array p = pe_reshape(points, 3, ((int64_t[]){n, 1, D})), c = pe_reshape(centroids, 3, ((int64_t[]){1, k, D}));
    pe_array diff = pe_sub(p, c);
    pe_array d2 = pe_sum_axis(pe_mul(diff, diff), 2); /* n x k */
    *assignment = pe_argmin_axis(d2, 1);                /* n, i32 */
    pe_array clusters = pe_index(PE_I32, 2, ((int64_t[]){1, k}), 1);
    pe_array one_hot = pe_cast(pe_eq(pe_reshape(*assignment, 2, ((int64_t[]){n, 1})), clusters), PE_F32); /* n x k */
    pe_array members = pe_sum_axis(one_hot, 0);                                                           /* k */
    pe_array sums = pe_sum_axis(pe_mul(pe_reshape(one_hot, 3, ((int64_t[]){n, k, 1})), p), 0);          /* k x D */
    pe_array count = pe_reshape(members, 2, ((int64_t[]){k, 1}));
    return pe_cond(pe_gt(count, 0.0f), pe_div(sums, pe_max(count, 1.0f)), centroids);
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 20000, k = argc > 2 ? atoll(argv[2]) : 8;
    long iterations = argc > 3 ? atol(argv[3]) : 10;
    if (argc > 4 || k < 1 || n < k || n > 10000000 || k > 4096 || iterations < 1) {
        fprintf(stderr, "usage: %s [points >= clusters] [clusters >= 1] [iterations >= 1]\n", argv[0]);
        return 2;
    }
    float *x = malloc((size_t)(n * D) * sizeof *x), *cent = malloc((size_t)(k * D) * sizeof *cent);
    float *got = malloc((size_t)(k * D) * sizeof *got), *cc = malloc((size_t)(k * D) * sizeof *cc);
    double *sum = malloc((size_t)(k * D) * sizeof *sum);
    int32_t *assign = malloc((size_t)n * sizeof *assign), *c_assign = malloc((size_t)n * sizeof *c_assign);
    float *members = malloc((size_t)k * sizeof *members);
    if (!x || !cent || !got || !cc || !sum || !assign || !c_assign || !members) return 1;
    srand(11);
    for (int64_t i = 0; i < n; i++) { /* blobs around k centres on a circle */
        int64_t blob = i % k;
        for (int d = 0; d < D; d++) {
            float centre = 4.0f * (float)(d == 0 ? cos(6.2831853 * (double)blob / (double)k) : sin(6.2831853 * (double)blob / (double)k));
            x[i * D + d] = centre + 1.5f * ((float)rand() / (float)RAND_MAX - 0.5f);
        }
    }
    for (int64_t j = 0; j < k * D; j++) cent[j] = x[j * 7 % (n * D) / D * D + j % D]; /* k of the points */

    if (pe_init(NULL) != PE_OK) return 1;
    pe_array points = pe_from_host(PE_F32, 2, ((int64_t[]){n, D}), x), c = pe_from_host(PE_F32, 2, ((int64_t[]){k, D}), cent);
    pe_array a = {0};
    for (long it = 0; it < iterations; it++) {
        pe_scope scope = pe_scope_begin();
        pe_array assignment;
        pe_array next = pe_keep(lloyd(points, c, n, k, &assignment));
        if (a.h) pe_release(a);
        a = pe_keep(assignment);
        pe_scope_end(scope);
        pe_release(c);
        c = next;
    }
    int rc = pe_read(c, got, (size_t)(k * D) * sizeof *got);
    if (rc == PE_OK) rc = pe_read(a, assign, (size_t)n * sizeof *assign);
    pe_release(points), pe_release(c), pe_release(a);
    pe_shutdown();
    if (rc != PE_OK) return 1;

    for (int64_t j = 0; j < k * D; j++) cc[j] = cent[j];
    for (long it = 0; it < iterations; it++) {
        for (int64_t i = 0; i < n; i++) { /* the first nearest centroid, distances as PE sums them */
            double best = INFINITY;
            for (int64_t j = 0; j < k; j++) {
                double d2 = 0;
                for (int d = 0; d < D; d++) {
                    float e = x[i * D + d] - cc[j * D + d];
                    d2 += (double)(e * e);
                }
                float d2f = (float)d2;
                if (d2f < best) best = d2f, c_assign[i] = (int32_t)j;
            }
        }
        for (int64_t j = 0; j < k; j++) {
            members[j] = 0;
            for (int d = 0; d < D; d++) sum[j * D + d] = 0;
        }
        for (int64_t i = 0; i < n; i++) {
            members[c_assign[i]] += 1.0f;
            for (int d = 0; d < D; d++) sum[c_assign[i] * D + d] += x[i * D + d];
        }
        for (int64_t j = 0; j < k; j++)
            if (members[j] > 0)
                for (int d = 0; d < D; d++) cc[j * D + d] = (float)sum[j * D + d] / members[j];
    }
    size_t moved = 0;
    for (int64_t i = 0; i < n; i++) moved += assign[i] != c_assign[i];
    double worst = 0;
    for (int64_t j = 0; j < k * D; j++) worst = fmax(worst, fabs((double)got[j] - cc[j]) / fmax(1.0, fabs(cc[j])));
    printf("k-means, %lld points in %lld clusters, %ld iterations (PE %s)\n", (long long)n, (long long)k, iterations, pe_version());
    for (int64_t j = 0; j < k && j < 4; j++) printf("  centroid %lld: (%.4f, %.4f)\n", (long long)j, got[j * D], got[j * D + 1]);
    printf("assignments that differ from the plain C loop: %zu; largest centroid difference: %.3g -> %s\n", moved, worst,
           moved == 0 && worst <= 1e-5 ? "OK" : "MISMATCH");
    free(x), free(cent), free(got), free(cc), free(sum), free(assign), free(c_assign), free(members);
    return moved == 0 && worst <= 1e-5 ? 0 : 1;
}
