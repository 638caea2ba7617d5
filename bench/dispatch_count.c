/* dispatch_count.c — bench_cpu's dispatch loop alone, N times, for counting
 * instructions: the runtime's cost per recorded request, which timing on a
 * shared machine cannot settle.  Run it twice under callgrind and take the
 * difference, so that start-up and the first compilation cancel:
 *   PE_THREADS=1 PE_AOT=0 valgrind --tool=callgrind build/bench/dispatch_count 1000
 *   PE_THREADS=1 PE_AOT=0 valgrind --tool=callgrind build/bench/dispatch_count 3000
 *   instructions per chain = (I(3000) - I(1000)) / 2000
 * A chain is 10 element-wise ops on 16 floats, 10 releases and one read
 * (bench_cpu.c's small_chain). */
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

static void small_chain(pe_array x16, float *out)
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

int main(int argc, char **argv)
{
    long chains = argc > 1 ? atol(argv[1]) : 1000;
    if (pe_init(NULL) != PE_OK) return 1;
    float in[16], out[16];
    for (int i = 0; i < 16; i++) in[i] = (float)i;
    pe_array x16 = pe_f32_1d(in, 16);
    for (int i = 0; i < 200; i++) small_chain(x16, out); /* compile, fill the trace cache */
    for (long i = 0; i < chains; i++) small_chain(x16, out);
    printf("%ld chains, out[15] = %g\n", chains, out[15]);
    pe_release(x16);
    pe_shutdown();
    return 0;
}
