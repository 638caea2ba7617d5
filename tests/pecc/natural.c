/* natural.c — Black-Scholes written the way a new user writes it: in a
 * scope, named intermediates never released, calls nested in other calls'
 * arguments, then pe_read of call and put.  Built through pecc, every
 * intermediate is released at its last use — a nested call's anonymous
 * result by the call it is passed to, a name by its one reader, also on a
 * line with other requests of the same entry point (three pe_mul) — so the
 * one kernel stores exactly the two values read, nothing is left an
 * expression, and pe_scope_end finds nothing alive.  Built plainly the
 * kernel stores the same two (values on demand), and the intermediates the
 * program still holds stay expressions until the scope ends.
 *
 * Second, the smallest case of each: a nested call's result, and a name
 * read once and otherwise held to the scope's end, on a line where pecc's
 * other marks disagree (the inner pe_mul's operand is read again).
 *
 *   natural N    prints "values ...", then for each part the kernels, the
 *                arrays they wrote, the values left expressions and what
 *                pe_scope_end still finds alive; exits 1 when a price is
 *                off the same formulas computed in double. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

static double cnd(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

static pe_stats stats(void)
{
    pe_stats st;
    pe_get_stats(&st);
    return st;
}

static void report(const char *part, pe_stats before, pe_stats after, int64_t alive)
{
    printf("%s: kernels %llu outputs %llu deferred %llu alive at scope end %lld\n", part,
           (unsigned long long)(after.kernels_launched - before.kernels_launched),
           (unsigned long long)(after.kernel_outputs - before.kernel_outputs),
           (unsigned long long)(after.values_deferred - before.values_deferred), (long long)alive);
}

static int black_scholes(int64_t n, const float *S, const float *X, const float *T, float *call, float *put)
{
    const float r = 0.02f, v = 0.30f;
    pe_stats before = stats();
    pe_scope scope = pe_scope_begin();
    pe_array s = pe_f32_1d(S, n), x = pe_f32_1d(X, n), t = pe_f32_1d(T, n);
    pe_array sqrt_t = pe_sqrt(t);
    pe_array d1 = pe_div(pe_add(pe_log(pe_div(s, x)), pe_mul(r + 0.5f * v * v, t)), pe_mul(v, sqrt_t));
    pe_array d2 = pe_sub(d1, pe_mul(v, sqrt_t));
    pe_array ert = pe_exp(pe_mul(-r, t));
    pe_array c1 = pe_cdf_norm(d1), c2 = pe_cdf_norm(d2);
    pe_array c = pe_sub(pe_mul(s, c1), pe_mul(pe_mul(x, ert), c2));
    pe_array p = pe_sub(pe_mul(pe_mul(x, ert), pe_cdf_norm(pe_neg(d2))), pe_mul(s, pe_cdf_norm(pe_neg(d1))));
    int rc = pe_read(c, call, (size_t)n * sizeof *call);
    if (rc == PE_OK) rc = pe_read(p, put, (size_t)n * sizeof *put);
    pe_stats after = stats();
    pe_scope_end(scope);
    report("black-scholes", before, after, after.live_arrays - stats().live_arrays);

    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double sd = S[i], xd = X[i], td = T[i], rd = r, vd = v;
        double e1 = (log(sd / xd) + (rd + 0.5 * vd * vd) * td) / (vd * sqrt(td)), e2 = e1 - vd * sqrt(td);
        double cc = sd * cnd(e1) - xd * exp(-rd * td) * cnd(e2);
        double pp = xd * exp(-rd * td) * cnd(-e2) - sd * cnd(-e1);
        double err = fmax(fabs(call[i] - cc) / fmax(1.0, fabs(cc)), fabs(put[i] - pp) / fmax(1.0, fabs(pp)));
        if (err > worst) worst = err;
    }
    if (rc != PE_OK || !(worst < 1e-4)) {
        fprintf(stderr, "black-scholes: largest relative difference from C (double) %.3g\n", worst);
        return 1;
    }
    return 0;
}

static int held_to_scope_end(int64_t n, const float *X, float *out)
{
    const float k = 1.5f;
    pe_stats before = stats();
    pe_scope scope = pe_scope_begin();
    pe_array x = pe_f32_1d(X, n);
    pe_array w = pe_exp(pe_neg(x));         /* a name read once, below */
    pe_array u = pe_mul(pe_mul(x, k), w);   /* the nested pe_mul's result is anonymous; x is read again */
    pe_array y = pe_add(u, x);
    int rc = pe_read(y, out, (size_t)n * sizeof *out);
    pe_stats after = stats();
    pe_scope_end(scope);
    report("held", before, after, after.live_arrays - stats().live_arrays);
    for (int64_t i = 0; i < n; i++) {
        double want = (double)X[i] * k * exp(-(double)X[i]) + X[i];
        if (rc != PE_OK || !(fabs(out[i] - want) <= 1e-5 * fmax(1.0, fabs(want)))) {
            fprintf(stderr, "held: element %lld is %.9g, C says %.9g\n", (long long)i, out[i], want);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 100000;
    float *S = malloc(sizeof *S * (size_t)n), *X = malloc(sizeof *X * (size_t)n), *T = malloc(sizeof *T * (size_t)n);
    float *call = malloc(sizeof *call * (size_t)n), *put = malloc(sizeof *put * (size_t)n);
    if (n <= 0 || !S || !X || !T || !call || !put || pe_init(NULL) != PE_OK) return 1;
    for (int64_t i = 0; i < n; i++) {
        S[i] = 5.0f + 25.0f * (float)(i % 97) / 97.0f;  /* spot */
        X[i] = 1.0f + 99.0f * (float)(i % 89) / 89.0f;  /* strike */
        T[i] = 0.25f + 9.75f * (float)(i % 83) / 83.0f; /* years */
    }
    int failed = black_scholes(n, S, X, T, call, put);
    printf("values %.9g %.9g\n", call[n / 3], put[n - 1]);
    failed |= held_to_scope_end(n, X, call);
    printf("values %.9g\n", call[n / 2]);
    pe_shutdown();
    free(S), free(X), free(T), free(call), free(put);
    return failed;
}
