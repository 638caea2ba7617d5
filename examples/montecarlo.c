/* montecarlo.c — a European call and put priced by Monte Carlo with PE's
 * random numbers, antithetic variates, checked against the Black-Scholes
 * closed form within the simulation's own statistical error.
 *
 *   montecarlo [N]     N paths (default 10^7), each a normal draw z and its
 *                      antithetic -z: S_T = S0 exp((r - v^2/2) T + v sqrt(T) z),
 *                      the payoff the mean of the pair's; the price is the
 *                      discounted mean, its standard error the discounted
 *                      standard deviation over sqrt(N).  Exit status 0 when
 *                      both prices lie within 4 standard errors of the
 *                      closed form.
 *
 * The draws are generated inside the kernels that compute the payoffs (the
 * normal array is never stored); the same seed gives the same prices on the
 * CPU JIT, the interpreter and any thread count. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

static double cnd(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 10000000;
    if (n <= 1) {
        fprintf(stderr, "usage: %s [N > 1]\n", argv[0]);
        return 2;
    }
    const double s0 = 100, k = 105, r = 0.05, v = 0.2, t = 1;
    const double drift = (r - 0.5 * v * v) * t, vol = v * sqrt(t), discount = exp(-r * t);

    /* closed form */
    double d1 = (log(s0 / k) + (r + 0.5 * v * v) * t) / vol, d2 = d1 - vol;
    double bs_call = s0 * cnd(d1) - k * discount * cnd(d2), bs_put = k * discount * cnd(-d2) - s0 * cnd(-d1);

    if (pe_init(NULL) != PE_OK) return 1;
    pe_rng rng = pe_rng_create(PE_RNG_PHILOX, 20261126);
    pe_scope scope = pe_scope_begin();
    pe_array z = pe_rng_normal(rng, PE_F64, 1, &n);
    pe_array up = pe_mul(s0, pe_exp(pe_add(drift, pe_mul(vol, z))));   /* S_T(z) */
    pe_array down = pe_mul(s0, pe_exp(pe_sub(drift, pe_mul(vol, z)))); /* S_T(-z) */
    pe_array call = pe_mul(0.5, pe_add(pe_max(pe_sub(up, k), 0.0), pe_max(pe_sub(down, k), 0.0)));
    pe_array put = pe_mul(0.5, pe_add(pe_max(pe_sub(k, up), 0.0), pe_max(pe_sub(k, down), 0.0)));
    double call_mean = 0, call_sd = 0, put_mean = 0, put_sd = 0;
    int rc = pe_read_f64(pe_mean(call), &call_mean);
    if (rc == PE_OK) rc = pe_read_f64(pe_stddev(call), &call_sd);
    if (rc == PE_OK) rc = pe_read_f64(pe_mean(put), &put_mean);
    if (rc == PE_OK) rc = pe_read_f64(pe_stddev(put), &put_sd);
    pe_scope_end(scope);
    pe_rng_destroy(rng);
    pe_shutdown();
    if (rc != PE_OK) return 1;

    double mc_call = discount * call_mean, mc_put = discount * put_mean;
    double se_call = discount * call_sd / sqrt((double)n), se_put = discount * put_sd / sqrt((double)n);
    bool ok = fabs(mc_call - bs_call) <= 4 * se_call && fabs(mc_put - bs_put) <= 4 * se_put;
    printf("S0 %.0f  K %.0f  r %.2f  v %.2f  T %.0f  paths %lld (antithetic pairs)\n", s0, k, r, v, t, (long long)n);
    printf("call: Monte Carlo %.5f +- %.5f, Black-Scholes %.5f (%.1f standard errors)\n", mc_call, se_call, bs_call,
           fabs(mc_call - bs_call) / se_call);
    printf("put:  Monte Carlo %.5f +- %.5f, Black-Scholes %.5f (%.1f standard errors)\n", mc_put, se_put, bs_put,
           fabs(mc_put - bs_put) / se_put);
    printf("%s\n", ok ? "OK" : "MISMATCH");
    return ok ? 0 : 1;
}
