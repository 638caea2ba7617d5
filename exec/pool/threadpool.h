/* threadpool.h — the host's persistent worker threads: the CPU executor's
 * kernels, the intrinsics' loops and large copies of array data run on them. */
#ifndef PE_EXEC_THREADPOOL_H
#define PE_EXEC_THREADPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A compiled kernel (the CPU code generator's ABI, exec/cpu/cpu_gccjit.c):
 * computes iterations [begin, end).  args[p] points to parameter p's
 * buffer, or for a scalar parameter to a double holding it. */
typedef void (*pe_kernel_fn)(int64_t begin, int64_t end, void *const *args);

/* Starts threads - 1 workers (the calling thread is the last one). */
bool pe_pool_start(int threads);
void pe_pool_stop(void);
/* Runs fn over [0, n) in chunks on all threads; returns when all are done.
 * `work` is the elements one iteration touches (1 for an element-wise
 * kernel; a row's length for a reduction along an axis, whose iterations
 * are its results): the split is sized by n * work, so 8192 row sums of
 * 4096 elements each run on every core, not on one. */
void pe_pool_run(pe_kernel_fn fn, void *const *args, int64_t n, int64_t work);
/* pe_pool_run with chunks a multiple of `grain` iterations (one launch
 * takes them all where n <= grain): an outer-axis reduction's results that
 * read the same cache lines stay in one launch. */
void pe_pool_run_grain(pe_kernel_fn fn, void *const *args, int64_t n, int64_t work, int64_t grain);
/* The same with launches cut exactly at multiples of `chunk`, on any number
 * of threads (reductions write one partial per chunk). */
void pe_pool_run_chunks(pe_kernel_fn fn, void *const *args, int64_t n, int64_t chunk);

/* memcpy for array data: a large copy runs on every core (one core cannot
 * saturate memory bandwidth: 128 MB took 11 ms on one, 6 ms on two). */
void pe_mem_copy(void *dst, const void *src, size_t bytes);

#endif
