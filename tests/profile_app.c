/* profile_app.c — the program the pe-prof end-to-end test profiles twice:
 * `profile_app` and `profile_app slow`, which does 20x the work at the line
 * marked PLANTED (the slowdown pe-prof diff must find); the line marked
 * UNREAD makes a value that is stored and never read (pe-prof's summary
 * must name it); the line marked WAITED reads the result of an expensive
 * chain (marked CHAIN), computing nothing itself: the application blocks
 * there for at least the chain's kernel time (the summary's top lines must
 * rank it, its wait in its own column); a PE_MACRO section runs MACRO_RUNS
 * times, recorded once and replayed after (the macro cache's counters). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pe.h>

#define N (1 << 20)
#define CHAIN 4
#define MACRO_RUNS 5

static pe_array scaled(pe_array a)
{
    pe_array ins[1] = {a}, outs[1];
    PE_MACRO(scaled, ins, 1, outs, 1, NULL, 0)
    {
        outs[0] = pe_mul(pe_add(ins[0], 1.0f), 0.5f);
    }
    return outs[0];
}

int main(int argc, char **argv)
{
    int planted_reps = argc > 1 && strcmp(argv[1], "slow") == 0 ? 40 : 2;
    float *h = malloc(sizeof *h * N);
    if (!h || pe_init(NULL) != PE_OK) return 1;
    for (int i = 0; i < N; i++) h[i] = (float)(i % 977) / 977.0f;
    pe_array x = pe_f32_1d(h, N);
    double total = 0;
    for (int it = 0; it < 10; it++) {
        pe_array y = pe_exp(x);
        pe_array z = pe_mul(y, x);
        pe_array s = pe_sum(z);
        float v;
        pe_read_f32(s, &v);
        total += v;
        pe_release(y), pe_release(z), pe_release(s);
    }
    for (int r = 0; r < planted_reps; r++) {
        pe_array w = pe_sum(pe_pow(pe_sin(x), pe_cos(x))); /* PLANTED */
        float v;
        pe_read_f32(w, &v);
        total += v;
        pe_release(w);
    }
    /* an expensive chain, then a read that waits for it */
    pe_array c = pe_add(x, 0.0f);
    for (int k = 0; k < CHAIN; k++) {
        pe_array next = pe_sin(pe_mul(c, pe_cos(x))); /* CHAIN */
        pe_release(c);
        c = next;
    }
    pe_array cs = pe_sum(c);
    pe_release(c);
    float waited;
    pe_read_f32(cs, &waited); /* WAITED */
    total += waited;
    pe_release(cs);
    for (int r = 0; r < MACRO_RUNS; r++) {
        pe_array m = scaled(x), ms = pe_sum(m);
        float v;
        pe_read_f32(ms, &v);
        total += v;
        pe_release(m), pe_release(ms);
    }
    pe_array kept = pe_add(x, 1.0f); /* UNREAD: a result kept, never read, alive until pe_shutdown */
    (void)kept;
    pe_release(x);
    pe_shutdown();
    printf("total %.6g\n", total);
    free(h);
    return isfinite(total) ? 0 : 1;
}
