/* readlast.c — a triad whose result is read once and never used again, with
 * no pe_release.  Either way the kernel writes straight into the caller's
 * buffer (no copy).  Built through pecc, the read is the value's last use:
 * the value and its nested temporary are released after the read (without
 * pecc both would stay alive as expressions: the program never releases
 * them).
 *
 *   readlast N ITERATIONS    prints "values ...", "in place K", "live arrays L",
 *                            and the median ms per iteration
 * Built with -DRELEASE it releases every value by hand as soon as it is
 * consumed: what a program built without pecc should do, the baseline for
 * the time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <pe.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 100000;
    int iterations = argc > 2 ? atoi(argv[2]) : 5;
    float *hb = malloc(sizeof *hb * (size_t)n), *hc = malloc(sizeof *hc * (size_t)n), *out = malloc(sizeof *out * (size_t)n);
    double *ms = malloc(sizeof *ms * (size_t)(iterations > 0 ? iterations : 1));
    if (!hb || !hc || !out || !ms || iterations < 1 || pe_init(NULL) != PE_OK) return 1;
    for (int64_t i = 0; i < n; i++) hb[i] = (float)(i % 1000), hc[i] = (float)(i % 7) * 0.5f;
    pe_array b = pe_f32_1d(hb, n), c = pe_f32_1d(hc, n);
    double checksum = 0;
    for (int it = 0; it < iterations; it++) {
        double t0 = now_ms();
#ifdef RELEASE /* every value released as soon as it is consumed, by hand */
        pe_array m = pe_mul(c, 1.5f + (float)it);
        pe_array y = pe_add(b, m);
        pe_release(m);
        pe_read(y, out, (size_t)n * sizeof *out);
        pe_release(y);
#else
        pe_array y = pe_add(b, pe_mul(c, 1.5f + (float)it));
        pe_read(y, out, (size_t)n * sizeof *out);
#endif
        ms[it] = now_ms() - t0;
        checksum += out[n / 3] + out[n - 1];
    }
    pe_stats st;
    pe_get_stats(&st);
    qsort(ms, (size_t)iterations, sizeof *ms, by_value);
    printf("values %.9g\n", checksum);
    printf("in place %llu\n", (unsigned long long)st.reads_in_place);
    printf("live arrays %lld\n", (long long)st.live_arrays);
    fprintf(stderr, "median %.3f ms per iteration\n", ms[iterations / 2]);
    pe_release(b), pe_release(c);
    pe_shutdown();
    free(hb), free(hc), free(out), free(ms);
    return 0;
}
