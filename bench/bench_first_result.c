/* bench_first_result.c — time to first result of a Black-Scholes program,
 * for the compile ahead (jit/aot/aot.c).  Built through pecc (bench/CMakeLists:
 * bench_first_result_pecc).  The input data is made between pe_init and the
 * first request, as programs do, so the background compile overlaps with it.
 *
 *   bench_first_result N     prints "first_result_ms T" (pe_init to the
 *                            first pe_read returning) and the counters
 * Run it with a fresh PE_CACHE_DIR each time, PE_AOT=1 and PE_AOT=0
 * (bench/RESULTS.md has the driver loop). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <pe.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 2000000;
    if (n <= 0) return 2;
    double t0 = now_ms();
    if (pe_init(NULL) != PE_OK) return 1;
    float *S = malloc(n * sizeof *S), *X = malloc(n * sizeof *X), *T = malloc(n * sizeof *T);
    float *call = malloc(n * sizeof *call), *put = malloc(n * sizeof *put);
    if (!S || !X || !T || !call || !put) return 1;
    srand(42);
    for (int64_t i = 0; i < n; i++) {
        S[i] = 5.0f + 25.0f * (float)rand() / (float)RAND_MAX;
        X[i] = 1.0f + 99.0f * (float)rand() / (float)RAND_MAX;
        T[i] = 0.25f + 9.75f * (float)rand() / (float)RAND_MAX;
    }
    double t_data = now_ms();
    const float r = 0.02f, v = 0.30f;
    pe_scope scope = pe_scope_begin();
    pe_array s = pe_f32_1d(S, n), x = pe_f32_1d(X, n), t = pe_f32_1d(T, n);
    pe_array sqrt_t = pe_sqrt(t);
    pe_array d1 = pe_div(pe_add(pe_log(pe_div(s, x)), pe_mul(r + 0.5f * v * v, t)), pe_mul(v, sqrt_t));
    pe_array d2 = pe_sub(d1, pe_mul(v, sqrt_t));
    pe_array discounted = pe_mul(x, pe_exp(pe_mul(-r, t)));
    pe_array c = pe_sub(pe_mul(s, pe_cdf_norm(d1)), pe_mul(discounted, pe_cdf_norm(d2)));
    pe_array p = pe_sub(pe_mul(discounted, pe_cdf_norm(pe_neg(d2))), pe_mul(s, pe_cdf_norm(pe_neg(d1))));
    int rc = pe_read(c, call, n * sizeof *call);
    double t_first = now_ms();
    if (rc == PE_OK) rc = pe_read(p, put, n * sizeof *put);
    pe_scope_end(scope);
    pe_stats st;
    pe_get_stats(&st);
    pe_shutdown();
    printf("first_result_ms %.2f\ndata_ms %.2f\ncall[0] %.6f put[0] %.6f\n", t_first - t0, t_data - t0, call[0], put[0]);
    printf("kernels_compiled %llu aot_kernels_compiled %llu aot_kernels_used %llu\n",
           (unsigned long long)st.kernels_compiled, (unsigned long long)st.aot_kernels_compiled,
           (unsigned long long)st.aot_kernels_used);
    free(S), free(X), free(T), free(call), free(put);
    return rc == PE_OK ? 0 : 1;
}
