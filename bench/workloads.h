/* workloads.h — the benchmark workloads as PE programs (workloads.c). */
#ifndef PE_BENCH_WORKLOADS_H
#define PE_BENCH_WORKLOADS_H

#include <pe.h>

/* Returns the call prices; *put the put prices. */
pe_array wl_blackscholes(pe_array S, pe_array X, pe_array T, float r, float v, pe_array *put);
pe_array wl_triad(pe_array b, pe_array c, float s);
pe_array wl_chain16(pe_array x, pe_array y);
/* The dispatch workload: 10 element-wise ops on x16's 16 floats, each
 * intermediate released, the result read into out (bench_cpu's dispatch
 * figure, dispatch_count's instruction count). */
void wl_small_chain(pe_array x16, float *out);
/* The median of n timings (sorts v). */
double wl_median(double *v, int n);

#endif
