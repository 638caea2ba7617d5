/* loopkeys.c — a loop with no read inside.  Built with pecc, each iteration
 * is one batch whose trace key starts at the loop header (the static IR says
 * where the loop body begins), so the trace cache hits from the second
 * iteration on; built plainly, the loop is whatever the queue limit cuts.
 * Both builds print the same value.
 *
 *   loopkeys ITERATIONS     prints "value ..." and "loop trace HITS/LOOKUPS" */
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#define N 1000

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 50;
    float h[N];
    for (int i = 0; i < N; i++) h[i] = (float)(i % 10) / 10.0f;
    if (pe_init(NULL) != PE_OK) return 1;
    pe_array x = pe_f32_1d(h, N);
    pe_array acc = pe_mul(x, 0.0f);
    pe_stats before, after;
    pe_get_stats(&before);
    for (int i = 0; i < iterations; i++) {
        acc = pe_add(pe_mul(acc, 0.5f), pe_exp(x));
    }
    pe_array total = pe_sum(acc);
    pe_sync();
    pe_get_stats(&after);
    float v;
    pe_read_f32(total, &v);
    printf("value %.9g\n", v);
    printf("loop trace %llu/%llu\n", (unsigned long long)(after.trace_hits - before.trace_hits),
           (unsigned long long)(after.trace_lookups - before.trace_lookups));
    pe_release(total), pe_release(acc), pe_release(x);
    pe_shutdown();
    return 0;
}
