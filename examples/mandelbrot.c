/* mandelbrot.c — the Mandelbrot set with PE: every pixel's z = z^2 + c
 * iterated as whole-image arrays, a select (pe_cond) freezing the points
 * that escaped and a count of the iterations each stayed bounded; a block of
 * ITERATIONS_PER_BLOCK iterations is recorded between pe_block_begin and
 * pe_block_end and fused into kernels together.  Writes the counts as a PGM
 * image and checks every count against a plain C loop doing the same f32
 * arithmetic in the same order.
 *
 *   mandelbrot [width] [height] [iterations] [out.pgm]
 *       defaults 640 480 100, no image; width, height >= 2, iterations >= 1 */
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#define ITERATIONS_PER_BLOCK 10
#define X0 (-2.2f)
#define X1 0.8f
#define Y0 (-1.2f)
#define Y1 1.2f

/* One iteration: z advances where |z|^2 <= 4 (count + 1 there), else stays. */
static void iterate(pe_array cr, pe_array ci, pe_array *zr, pe_array *zi, pe_array *count)
{
    pe_array zr2 = pe_mul(*zr, *zr), zi2 = pe_mul(*zi, *zi);
    pe_array bounded = pe_le(pe_add(zr2, zi2), 4.0f);
    pe_array next_r = pe_add(pe_sub(zr2, zi2), cr);
    pe_array next_i = pe_add(pe_mul(pe_mul(2.0f, *zr), *zi), ci);
    pe_array r = pe_cond(bounded, next_r, *zr), i = pe_cond(bounded, next_i, *zi);
    pe_array c = pe_add(*count, pe_cast(bounded, PE_I32));
    pe_release(*zr), pe_release(*zi), pe_release(*count);
    *zr = r, *zi = i, *count = c;
}

static float coordinate(float from, float to, int64_t k, int64_t n) { return from + (to - from) * (float)k / (float)(n - 1); }

int main(int argc, char **argv)
{
    int64_t w = argc > 1 ? atoll(argv[1]) : 640, h = argc > 2 ? atoll(argv[2]) : 480;
    long iterations = argc > 3 ? atol(argv[3]) : 100;
    const char *image = argc > 4 ? argv[4] : NULL;
    if (argc > 5 || w < 2 || h < 2 || w > 16384 || h > 16384 || iterations < 1) {
        fprintf(stderr, "usage: %s [width >= 2] [height >= 2] [iterations >= 1] [out.pgm]\n", argv[0]);
        return 2;
    }
    size_t n = (size_t)(w * h);
    float *re = malloc(n * sizeof *re), *im = malloc(n * sizeof *im);
    int32_t *count = malloc(n * sizeof *count);
    if (!re || !im || !count) return 1;
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) re[y * w + x] = coordinate(X0, X1, x, w), im[y * w + x] = coordinate(Y1, Y0, y, h);

    if (pe_init(NULL) != PE_OK) return 1;
    const int64_t shape[2] = {h, w};
    pe_array cr = pe_from_host(PE_F32, 2, shape, re), ci = pe_from_host(PE_F32, 2, shape, im);
    pe_array zr = pe_fill(PE_F32, 2, shape, 0.0), zi = pe_fill(PE_F32, 2, shape, 0.0), counts = pe_fill(PE_I32, 2, shape, 0.0);
    for (long k = 0; k < iterations; k += ITERATIONS_PER_BLOCK) {
        pe_block_begin();
        for (long j = k; j < iterations && j < k + ITERATIONS_PER_BLOCK; j++) iterate(cr, ci, &zr, &zi, &counts);
        pe_block_end();
    }
    int rc = pe_read(counts, count, n * sizeof *count);
    pe_release(cr), pe_release(ci), pe_release(zr), pe_release(zi), pe_release(counts);
    pe_shutdown();
    if (rc != PE_OK) return 1;

    size_t differ = 0, inside = 0;
    for (size_t p = 0; p < n; p++) {
        float zr_c = 0, zi_c = 0;
        int32_t c = 0;
        for (long j = 0; j < iterations; j++) {
            float zr2 = zr_c * zr_c, zi2 = zi_c * zi_c;
            if (!(zr2 + zi2 <= 4.0f)) continue; /* frozen, as the select leaves it */
            float nr = (zr2 - zi2) + re[p], ni = (2.0f * zr_c) * zi_c + im[p];
            zr_c = nr, zi_c = ni, c++;
        }
        differ += c != count[p];
        inside += count[p] == iterations;
    }
    if (image) {
        FILE *f = fopen(image, "wb");
        if (!f) {
            perror(image);
            return 1;
        }
        fprintf(f, "P5\n%lld %lld\n255\n", (long long)w, (long long)h);
        for (size_t p = 0; p < n; p++) fputc(count[p] == iterations ? 0 : 255 - (int)(255L * count[p] / iterations), f);
        if (fclose(f) != 0) return 1;
    }
    printf("Mandelbrot set, %lld x %lld, %ld iterations (PE %s)\n", (long long)w, (long long)h, iterations, pe_version());
    printf("points that stayed bounded: %zu of %zu (%.2f%%)%s%s\n", inside, n, 100.0 * (double)inside / (double)n,
           image ? "; image: " : "", image ? image : "");
    printf("iteration counts that differ from the plain C loop: %zu -> %s\n", differ, differ == 0 ? "OK" : "MISMATCH");
    free(re), free(im), free(count);
    return differ == 0 ? 0 : 1;
}
