/* mandelbrot.c — the Mandelbrot set with PE: every pixel's z = z^2 + c
 * iterated as whole-image arrays, a select (pe_cond) freezing the points
 * that escaped and a count of the iterations each stayed bounded; a block of
 * ITERATIONS_PER_BLOCK iterations is recorded between pe_block_begin and
 * pe_block_end and fused into kernels together.  Writes the counts as an
 * image (PGM, or PNG through png.h with a palette) and checks every count
 * against a plain C loop doing the same f32 arithmetic in the same order.
 *
 *   mandelbrot [width] [height] [iterations] [image ...]
 *       defaults 640 480 100, no image; width, height >= 2, iterations >= 1;
 *       up to two images, each a PNG when its name ends in .png, else a PGM,
 *       of the same pixel bytes: 0 inside the set, else
 *       255 - 255 * count / iterations (the PNG's palette colours them) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pe.h>

#include "png.h"

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

/* The iteration counts of the points re + i im (an h x w image) into count. */
static int counts_of(const float *re, const float *im, const int64_t shape[2], long iterations, int32_t *count)
{
    pe_array cr = pe_from_host(PE_F32, 2, shape, re), ci = pe_from_host(PE_F32, 2, shape, im);
    pe_array zr = pe_fill(PE_F32, 2, shape, 0.0), zi = pe_fill(PE_F32, 2, shape, 0.0), counts = pe_fill(PE_I32, 2, shape, 0.0);
    for (long k = 0; k < iterations; k += ITERATIONS_PER_BLOCK) {
        pe_block_begin();
        for (long j = k; j < iterations && j < k + ITERATIONS_PER_BLOCK; j++) iterate(cr, ci, &zr, &zi, &counts);
        pe_block_end();
    }
    int rc = pe_read(counts, count, (size_t)(shape[0] * shape[1]) * sizeof *count);
    pe_release(cr), pe_release(ci), pe_release(zr), pe_release(zi), pe_release(counts);
    return rc;
}

static float coordinate(float from, float to, int64_t k, int64_t n) { return from + (to - from) * (float)k / (float)(n - 1); }

/* The image's pixel bytes written to path: a PNG when the name ends in
 * .png (colour i: black at 0, the set; else a dark-blue-to-gold ramp in
 * sqrt of how deep the point got, Bernstein polynomials), else a PGM.
 * 0 on success. */
static int write_image(const char *path, const unsigned char *shade, int64_t w, int64_t h)
{
    size_t len = strlen(path);
    if (len >= 4 && strcmp(path + len - 4, ".png") == 0) {
        unsigned char palette[256][3];
        for (int i = 0; i < 256; i++) {
            double t = sqrt((255 - i) / 255.0); /* 1 at the set's edge, 0 for the first escapes */
            double rgb[3] = {9 * (1 - t) * t * t * t, 15 * (1 - t) * (1 - t) * t * t, 8.5 * (1 - t) * (1 - t) * (1 - t) * t};
            for (int c = 0; c < 3; c++) palette[i][c] = (unsigned char)lround(255 * fmin(1.0, rgb[c]));
        }
        return png_write(path, shade, w, h, (const unsigned char(*)[3])palette, 256);
    }
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fprintf(f, "P5\n%lld %lld\n255\n", (long long)w, (long long)h);
    size_t n = (size_t)(w * h), wrote = fwrite(shade, 1, n, f);
    return fclose(f) == 0 && wrote == n ? 0 : -1;
}

int main(int argc, char **argv)
{
    int64_t w = argc > 1 ? atoll(argv[1]) : 640, h = argc > 2 ? atoll(argv[2]) : 480;
    long iterations = argc > 3 ? atol(argv[3]) : 100;
    if (argc > 6 || w < 2 || h < 2 || w > 16384 || h > 16384 || iterations < 1) {
        fprintf(stderr, "usage: %s [width >= 2] [height >= 2] [iterations >= 1] [image.pgm|image.png ...(2 at most)]\n", argv[0]);
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
    int rc = counts_of(re, im, shape, iterations, count);
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
    unsigned char *shade = malloc(n);
    if (!shade) return 1;
    for (size_t p = 0; p < n; p++) shade[p] = (unsigned char)(count[p] == iterations ? 0 : 255 - (int)(255L * count[p] / iterations));
    for (int a = 4; a < argc; a++)
        if (write_image(argv[a], shade, w, h) != 0) {
            perror(argv[a]);
            return 1;
        }
    free(shade);
    printf("Mandelbrot set, %lld x %lld, %ld iterations (PE %s)\n", (long long)w, (long long)h, iterations, pe_version());
    printf("points that stayed bounded: %zu of %zu (%.2f%%)\n", inside, n, 100.0 * (double)inside / (double)n);
    for (int a = 4; a < argc; a++) printf("image: %s\n", argv[a]);
    printf("iteration counts that differ from the plain C loop: %zu -> %s\n", differ, differ == 0 ? "OK" : "MISMATCH");
    free(re), free(im), free(count);
    return differ == 0 ? 0 : 1;
}
