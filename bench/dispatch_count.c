/* dispatch_count.c — bench_cpu's dispatch loop alone, N times, for counting
 * instructions: the runtime's cost per recorded request, which timing on a
 * shared machine cannot settle.  Run it twice under callgrind and take the
 * difference, so that start-up and the first compilation cancel:
 *   PE_THREADS=1 PE_AOT=0 valgrind --tool=callgrind build/bench/dispatch_count 1000
 *   PE_THREADS=1 PE_AOT=0 valgrind --tool=callgrind build/bench/dispatch_count 3000
 *   instructions per chain = (I(3000) - I(1000)) / 2000
 * A chain is 10 element-wise ops on 16 floats, 10 releases and one read
 * (workloads.c's wl_small_chain, bench_cpu's dispatch loop). */
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#include "workloads.h"

int main(int argc, char **argv)
{
    long chains = argc > 1 ? atol(argv[1]) : 1000;
    if (pe_init(NULL) != PE_OK) return 1;
    float in[16], out[16];
    for (int i = 0; i < 16; i++) in[i] = (float)i;
    pe_array x16 = pe_f32_1d(in, 16);
    for (int i = 0; i < 200; i++) wl_small_chain(x16, out); /* compile, fill the trace cache */
    for (long i = 0; i < chains; i++) wl_small_chain(x16, out);
    printf("%ld chains, out[15] = %g\n", chains, out[15]);
    pe_release(x16);
    pe_shutdown();
    return 0;
}
