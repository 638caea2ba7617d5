/* leakloop.c — nested expressions and variables with no pe_release, in a
 * loop.  Built twice by the tests: plainly (every iteration leaves its
 * temporaries alive: live arrays grow) and through pecc (the static IR says
 * where each value is used last, the runtime releases it there: live arrays
 * stay flat).  Both builds must print the same values.
 *
 *   leakloop ITERATIONS     prints "values ..." and "growth N" (live arrays
 *                           added between iteration 10 and the last) */
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#define N 4096

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 200;
    float h[N];
    for (int i = 0; i < N; i++) h[i] = (float)(i % 97) / 97.0f;
    if (iterations < 11 || pe_init(NULL) != PE_OK) return 1;
    pe_array x = pe_f32_1d(h, N);
    double checksum = 0;
    int64_t live_at_10 = 0;
    for (int it = 0; it < iterations; it++) {
        pe_array e = pe_exp(pe_mul(x, 0.001f * (float)it));   /* a nested temporary */
        pe_array m = pe_add(pe_mul(e, 2.0f), x);                /* e's last use */
        pe_array s = pe_sum(m);                                 /* m's last use */
        float v;
        pe_read_f32(s, &v);
        pe_release(s);
        checksum += v;
        if (it == 10) {
            pe_stats st;
            pe_get_stats(&st);
            live_at_10 = st.live_arrays;
        }
    }
    pe_stats st;
    pe_get_stats(&st);
    printf("values %.9g\n", checksum);
    printf("growth %lld\n", (long long)(st.live_arrays - live_at_10));
    fprintf(stderr, "ir_releases %llu\nproggen_runs %llu\nkernels_compiled %llu\n", (unsigned long long)st.ir_releases,
            (unsigned long long)st.proggen_runs, (unsigned long long)st.kernels_compiled);
    pe_release(x);
    pe_shutdown();
    return 0;
}
