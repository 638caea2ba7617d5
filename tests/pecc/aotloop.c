/* aotloop.c — a loop whose body is a fused element-wise chain with source
 * literals and a full reduction, for the compile ahead (jit/aot/aot.c).  Built
 * through pecc and plainly by the tests (tests/pecc/aot.sh).
 *
 *   aotloop N ITERATIONS f32|f64   prints "values ..." and the first
 *                                  elements; on stderr the counters after
 *                                  the first batch and at the end */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pe.h>

int main(int argc, char **argv)
{
    if (argc != 4) return 2;
    int64_t n = atoll(argv[1]);
    int iterations = atoi(argv[2]);
    bool f64 = strcmp(argv[3], "f64") == 0;
    if (n <= 0 || iterations <= 0 || pe_init(NULL) != PE_OK) return 2;
    /* the input data is made after pe_init, as programs do: the compile
     * ahead runs meanwhile */
    double *host = malloc(sizeof *host * (size_t)n);
    float *out = malloc(sizeof *out * (size_t)n);
    if (!host || !out) return 1;
    for (int64_t i = 0; i < n; i++) host[i] = (double)(i % 1000) / 1000.0 - 0.25;
    pe_array x;
    if (f64) { /* the guess (f32) is wrong here: its kernels go unused, the values stay right */
        x = pe_from_host(PE_F64, 1, &n, host);
    } else {
        float *h32 = malloc(sizeof *h32 * (size_t)n);
        if (!h32) return 1;
        for (int64_t i = 0; i < n; i++) h32[i] = (float)host[i];
        x = pe_f32_1d(h32, n);
        free(h32);
    }
    double checksum = 0;
    pe_stats first = {0};
    for (int it = 0; it < iterations; it++) {
        pe_array e = pe_exp(pe_mul(x, 0.5f));
        pe_array y = pe_sub(pe_mul(e, 2.0f), pe_div(x, 3.0f));
        pe_array s = pe_sum(y);
        double v;
        pe_read_f64(s, &v);
        pe_release(s);
        if (it == 0) pe_get_stats(&first);
        checksum += v;
        if (it == iterations - 1) {
            pe_array y32 = pe_cast(y, PE_F32);
            pe_read(y32, out, sizeof *out * (size_t)n);
            pe_release(y32);
        }
        pe_release(y);
    }
    pe_stats last;
    pe_get_stats(&last);
    printf("values %.17g\n", checksum);
    for (int64_t i = 0; i < n && i < 4; i++) printf("y[%lld] %.9g\n", (long long)i, out[i]);
    fprintf(stderr, "first_batch_kernels_compiled %llu\nfirst_batch_aot_used %llu\naot_kernels_compiled %llu\n"
                    "aot_kernels_used %llu\nkernels_compiled %llu\n",
            (unsigned long long)first.kernels_compiled, (unsigned long long)first.aot_kernels_used,
            (unsigned long long)last.aot_kernels_compiled, (unsigned long long)last.aot_kernels_used,
            (unsigned long long)last.kernels_compiled);
    pe_release(x);
    pe_shutdown();
    free(host), free(out);
    return 0;
}
