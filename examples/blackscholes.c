/* blackscholes.c — European option prices with PE, checked against a plain C
 * computation of the same formulas in double precision.
 *
 *   blackscholes [N]     prices N options (default 100000), prints a few and
 *                        the largest difference from the plain C prices. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

static double cnd(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* The prices of n options (spot S, strike X, years T; rate r, volatility v)
 * into call and put; PE_OK or the read's error.  (tests/cpp compares
 * blackscholes.cpp's C++ prices with these, bitwise.) */
int blackscholes_prices(int64_t n, const float *S, const float *X, const float *T, float r, float v, float *call, float *put);
int blackscholes_prices(int64_t n, const float *S, const float *X, const float *T, float r, float v, float *call, float *put)
{
    pe_scope scope = pe_scope_begin();
    pe_array s = pe_f32_1d(S, n), x = pe_f32_1d(X, n), t = pe_f32_1d(T, n);
    pe_array sqrt_t = pe_sqrt(t);
    pe_array d1 = pe_div(pe_add(pe_log(pe_div(s, x)), pe_mul(r + 0.5f * v * v, t)), pe_mul(v, sqrt_t));
    pe_array d2 = pe_sub(d1, pe_mul(v, sqrt_t));
    pe_array discounted = pe_mul(x, pe_exp(pe_mul(-r, t)));
    pe_array c = pe_sub(pe_mul(s, pe_cdf_norm(d1)), pe_mul(discounted, pe_cdf_norm(d2)));
    pe_array p = pe_sub(pe_mul(discounted, pe_cdf_norm(pe_neg(d2))), pe_mul(s, pe_cdf_norm(pe_neg(d1))));
    int rc = pe_read(c, call, (size_t)n * sizeof *call);
    if (rc == PE_OK) rc = pe_read(p, put, (size_t)n * sizeof *put);
    pe_scope_end(scope);
    return rc;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 100000;
    if (n <= 0) {
        fprintf(stderr, "usage: %s [N > 0]\n", argv[0]);
        return 2;
    }
    float *S = malloc(n * sizeof *S), *X = malloc(n * sizeof *X), *T = malloc(n * sizeof *T);
    float *call = malloc(n * sizeof *call), *put = malloc(n * sizeof *put);
    if (!S || !X || !T || !call || !put) return 1;
    srand(42);
    for (int64_t i = 0; i < n; i++) {
        S[i] = 5.0f + 25.0f * (float)rand() / (float)RAND_MAX;   /* spot */
        X[i] = 1.0f + 99.0f * (float)rand() / (float)RAND_MAX;   /* strike */
        T[i] = 0.25f + 9.75f * (float)rand() / (float)RAND_MAX;  /* years */
    }
    const float r = 0.02f, v = 0.30f;

    if (pe_init(NULL) != PE_OK) return 1;
    int rc = blackscholes_prices(n, S, X, T, r, v, call, put);
    pe_shutdown();
    if (rc != PE_OK) return 1;

    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double sd = S[i], xd = X[i], td = T[i], rd = r, vd = v;
        double e1 = (log(sd / xd) + (rd + 0.5 * vd * vd) * td) / (vd * sqrt(td));
        double e2 = e1 - vd * sqrt(td);
        double cc = sd * cnd(e1) - xd * exp(-rd * td) * cnd(e2);
        double pp = xd * exp(-rd * td) * cnd(-e2) - sd * cnd(-e1);
        double err = fmax(fabs(call[i] - cc) / fmax(1.0, fabs(cc)), fabs(put[i] - pp) / fmax(1.0, fabs(pp)));
        if (err > worst) worst = err;
    }
    printf("Black-Scholes, %lld options (PE %s)\n", (long long)n, pe_version());
    printf("%8s %8s %8s %10s %10s\n", "spot", "strike", "years", "call", "put");
    for (int64_t i = 0; i < n && i < 5; i++)
        printf("%8.3f %8.3f %8.3f %10.5f %10.5f\n", S[i], X[i], T[i], call[i], put[i]);
    printf("largest relative difference from plain C (double): %.3g -> %s\n", worst,
           worst < 1e-4 ? "OK" : "MISMATCH");
    free(S), free(X), free(T), free(call), free(put);
    return worst < 1e-4 ? 0 : 1;
}
