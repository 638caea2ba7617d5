/* departures.c — control flow the static IR does not follow step by step:
 * branches that skip a definition, early returns, goto, break and continue
 * in loops, a variable read after its loop.  Built with and without pecc,
 * it must print the same values, with no error (a wrong release would be a
 * "used after release" error, fatal under the default handler). */
#include <stdio.h>

#include <pe.h>

#define N 64

static float read_sum(pe_array a)
{
    float v;
    pe_read_f32(pe_sum(a), &v);
    return v;
}

static float branches(pe_array x, int k)
{
    pe_array y = pe_exp(x);
    if (k & 1) y = pe_mul(y, 2.0f); /* a conditional redefinition */
    pe_array z = pe_add(y, x);
    float v = read_sum(z);
    if (k & 2) return v + read_sum(y); /* early return reading y again */
    pe_release(y), pe_release(z);
    return v;
}

static float jumps(pe_array x, int k)
{
    pe_array y = pe_sin(x);
    float v = 0;
    if (k > 1) goto skip;
    y = pe_cos(y);
skip:
    v = read_sum(pe_add(y, x));
    pe_release(y);
    return v;
}

static float loops(pe_array x, int n)
{
    pe_array acc = pe_mul(x, 0.0f), last = pe_neg(x);
    for (int i = 0; i < n; i++) {
        if (i == 3) continue;
        last = pe_mul(x, (float)i);
        acc = pe_add(acc, last);
        if (i == n - 2) break;
    }
    float v = read_sum(acc) + read_sum(last);
    pe_release(acc), pe_release(last);
    return v;
}

/* last uses inside branches and before an early return */
static float kills_in_branches(pe_array x, int k)
{
    float v;
    pe_array y = pe_exp(x);
    if (k) {
        pe_array t = pe_mul(y, 2.0f);
        pe_read_f32(pe_sum(t), &v);
    } else {
        pe_read_f32(pe_sum(pe_add(y, x)), &v);
    }
    return v;
}

/* a last use in one branch while the other defines the variable again: the
 * value is read after the if when the first branch ran */
static float redefined_in_the_other_branch(pe_array x, int k)
{
    float v = 0, w;
    pe_array y = pe_exp(x);
    if (k) {
        pe_read_f32(pe_sum(pe_neg(y)), &v);
    } else {
        y = pe_sin(x);
    }
    pe_array z = pe_add(y, x);
    pe_read_f32(pe_sum(z), &w);
    return v + w;
}

static float early(pe_array x, int k)
{
    pe_array y = pe_log1p(x);
    if (k) return 1.0f;
    pe_array z = pe_mul(y, y);
    float v;
    pe_read_f32(pe_sum(z), &v);
    return v;
}

int main(void)
{
    float h[N];
    for (int i = 0; i < N; i++) h[i] = (float)i / N;
    if (pe_init(NULL) != PE_OK) return 1;
    pe_array x = pe_f32_1d(h, N);
    for (int k = 0; k < 4; k++) printf("branches %d %.6g\n", k, branches(x, k));
    for (int k = 0; k < 3; k++) printf("jumps %d %.6g\n", k, jumps(x, k));
    printf("loops %.6g\n", loops(x, 7));
    for (int k = 0; k < 2; k++) printf("kills_in_branches %d %.6g\n", k, kills_in_branches(x, k));
    for (int k = 0; k < 2; k++) printf("redefined_in_the_other_branch %d %.6g\n", k, redefined_in_the_other_branch(x, k));
    for (int k = 0; k < 2; k++) printf("early %d %.6g\n", k, early(x, k));
    pe_stats st;
    pe_get_stats(&st);
    fprintf(stderr, "ir_releases %llu\n", (unsigned long long)st.ir_releases);
    pe_release(x);
    pe_shutdown();
    return 0;
}
