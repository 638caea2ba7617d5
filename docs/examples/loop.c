/* loop.c — the loop of docs/guide.md: Newton's iteration for the square
 * roots of n numbers, x <- (x + a / x) / 2, until the largest change is
 * below a tolerance, the change read every iteration.  Each iteration's
 * temporaries live in a scope; the new x is kept out of it, the old one
 * released.  `./loop noscope` runs the same loop without the scope (every
 * temporary stays alive until pe_shutdown) to show what that holds.
 * Prints the iterations and what is alive afterwards (pe_get_stats). */
#include <math.h>
#include <pe.h>
#include <stdio.h>
#include <string.h>

enum { N = 1 << 20, ITERATIONS = 300 };

/* The loop as the guide shows it: returns the last x. */
static pe_array newton(pe_array a, pe_array x, int *iterations)
{
    int k;
    for (k = 0; k < ITERATIONS; k++) {
        double change;
        pe_scope scope = pe_scope_begin();
        pe_array next = pe_keep(pe_mul(pe_add(x, pe_div(a, x)), 0.5)); /* kept: it outlives the scope */
        pe_array delta = pe_norminf(pe_sub(next, x));                   /* released at the scope's end */
        int rc = pe_read_f64(delta, &change);
        pe_scope_end(scope);
        pe_release(x); /* the old x: kept by the iteration before, so ours to release */
        x = next;
        if (rc != PE_OK || change < 1e-9) break;
    }
    *iterations = k + 1;
    return x;
}

/* The same loop with nothing released: every iteration's arrays stay alive. */
static pe_array newton_leaky(pe_array a, pe_array x, int *iterations)
{
    int k;
    for (k = 0; k < ITERATIONS; k++) {
        double change;
        pe_array next = pe_mul(pe_add(x, pe_div(a, x)), 0.5);
        int rc = pe_read_f64(pe_norminf(pe_sub(next, x)), &change);
        x = next;
        if (rc != PE_OK || change < 1e-9) break;
    }
    *iterations = k + 1;
    return x;
}

int main(int argc, char **argv)
{
    int scoped = !(argc > 1 && strcmp(argv[1], "noscope") == 0);
    if (pe_init(NULL) != PE_OK) return 1;
    static double data[N], root[N];
    for (int i = 0; i < N; i++) data[i] = 1.0 + i;

    pe_array a = pe_f64_1d(data, N);
    pe_array x = pe_fill(PE_F64, 1, (int64_t[]){N}, 1.0);
    pe_stats before, after;
    pe_get_stats(&before);
    int iterations = 0;
    x = scoped ? newton(a, x, &iterations) : newton_leaky(a, x, &iterations);
    if (pe_read(x, root, sizeof root) != PE_OK) return 1;
    pe_get_stats(&after);
    printf("%s: %d iterations, sqrt(%g) = %.15g; alive after the loop: %lld arrays (%lld before), %.1f MB\n",
           scoped ? "scoped" : "no scope", iterations, data[N - 1], root[N - 1], (long long)after.live_arrays,
           (long long)before.live_arrays, after.live_bytes / 1e6);
    int ok = fabs(root[N - 1] - sqrt(data[N - 1])) < 1e-9 * sqrt(data[N - 1]);
    if (scoped && after.live_arrays > before.live_arrays) ok = 0; /* the loop holds nothing it made */
    pe_release(x), pe_release(a);
    pe_shutdown();
    return ok ? 0 : 1;
}
