/* workloads.c — the PE side of the benchmark workloads, shared by the CPU
 * and GPU benchmarks: each records its operations, releasing every
 * intermediate as soon as it is consumed (so fusion keeps them in
 * registers), and returns the result arrays unread. */
#include <stdlib.h>

#include "workloads.h"

/* r = expr, then release the operand expr consumed. */
#define THEN(r, expr, dead)      \
    do {                         \
        pe_array next_ = (expr); \
        pe_release(dead);        \
        (r) = next_;             \
    } while (0)

/* examples/blackscholes.c: call and put, four CDFs (the put through N(-d)). */
pe_array wl_blackscholes(pe_array S, pe_array X, pe_array T, float r, float v, pe_array *put_out)
{
    pe_array sqrt_t = pe_sqrt(T);
    pe_array ratio = pe_div(S, X), lg, num;
    THEN(lg, pe_log(ratio), ratio);
    pe_array drift = pe_mul(r + 0.5f * v * v, T);
    THEN(num, pe_add(lg, drift), lg);
    pe_release(drift);
    pe_array den = pe_mul(v, sqrt_t);
    pe_release(sqrt_t);
    pe_array d1 = pe_div(num, den), d2;
    pe_release(num);
    THEN(d2, pe_sub(d1, den), den);
    pe_array e = pe_mul(-r, T), disc;
    THEN(e, pe_exp(e), e);
    THEN(disc, pe_mul(X, e), e);
    /* call = S N(d1) - disc N(d2) */
    pe_array n1 = pe_cdf_norm(d1), n2 = pe_cdf_norm(d2), t1, t2;
    THEN(t1, pe_mul(S, n1), n1);
    THEN(t2, pe_mul(disc, n2), n2);
    pe_array call = pe_sub(t1, t2);
    pe_release(t1), pe_release(t2);
    /* put = disc N(-d2) - S N(-d1) */
    pe_array m1, m2;
    THEN(m2, pe_neg(d2), d2);
    THEN(m1, pe_neg(d1), d1);
    THEN(m2, pe_cdf_norm(m2), m2);
    THEN(m1, pe_cdf_norm(m1), m1);
    THEN(m2, pe_mul(disc, m2), m2);
    THEN(m1, pe_mul(S, m1), m1);
    pe_release(disc);
    *put_out = pe_sub(m2, m1);
    pe_release(m1), pe_release(m2);
    return call;
}

/* a = b + s c */
pe_array wl_triad(pe_array b, pe_array c, float s)
{
    pe_array sc = pe_mul(s, c), a;
    THEN(a, pe_add(b, sc), sc);
    return a;
}

/* 16 operations, the same as c_chain16 in baseline.c. */
pe_array wl_chain16(pe_array x, pe_array y)
{
    pe_array t = pe_mul(x, 1.5f), u; /* 1 */
    THEN(t, pe_add(t, y), t);        /* 2 */
    THEN(t, pe_sub(t, 0.25f), t);    /* 3 */
    THEN(t, pe_mul(t, t), t);        /* 4 */
    THEN(t, pe_add(t, x), t);        /* 5 */
    THEN(t, pe_add(t, 1.0f), t);     /* 6 */
    THEN(t, pe_sqrt(t), t);          /* 7 */
    THEN(t, pe_mul(t, 0.5f), t);     /* 8 */
    THEN(t, pe_sub(t, y), t);        /* 9 */
    u = pe_mul(x, x);                /* 10 */
    THEN(u, pe_add(u, 1.0f), u);     /* 11 */
    THEN(t, pe_div(t, u), t);        /* 12 */
    pe_release(u);
    THEN(t, pe_neg(t), t);           /* 13 */
    THEN(t, pe_add(t, 2.0f), t);     /* 14 */
    THEN(t, pe_mul(t, y), t);        /* 15 */
    THEN(t, pe_sub(t, 3.0f), t);     /* 16 */
    return t;
}

void wl_small_chain(pe_array x16, float *out)
{
    pe_array t = x16;
    for (int op = 0; op < 10; op++) {
        pe_array next = (op & 1) ? pe_add(t, 1.0f) : pe_mul(t, 0.5f);
        if (op) pe_release(t);
        t = next;
    }
    pe_read(t, out, 16 * sizeof(float));
    pe_release(t);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double wl_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[n / 2];
}
