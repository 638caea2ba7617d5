/* parallel.c — where the library calls of PE's own (sparse.c, scan.c,
 * sort.c, bins.c) run their loops: the CPU executor's pool, lent at its
 * start (pe_intrinsics_set_pool: this stage cannot call up), or the calling
 * thread without one.  A file of its own so that the loops and the
 * dispatcher that calls them (dispatch.c) do not call each other. */
#include "intrinsics.h"

static pe_parallel_fn pool_run;

void pe_intrinsics_set_pool(pe_parallel_fn run) { pool_run = run; }

void pe_intrinsic_parallel(pe_range_fn fn, void *const *args, int64_t n, int64_t work)
{
    if (pool_run) pool_run(fn, args, n, work);
    else if (n > 0) fn(0, n, args);
}
