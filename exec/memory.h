/* memory.h — host buffers for array values: aligned, pooled by size class,
 * accounted (pe_stats.live_bytes); and copies of array data in and out. */
#ifndef PE_EXEC_MEMORY_H
#define PE_EXEC_MEMORY_H
#include <stddef.h>

/* 64-byte aligned, at least one byte; NULL when out of memory. */
void *pe_mem_alloc(size_t bytes);
void pe_mem_free(void *p, size_t bytes);
/* Gives the cached free buffers back to the system (pe_shutdown). */
void pe_mem_trim(void);
/* Accounts for a buffer the application handed over (pe_adopt). */
void pe_mem_account(long long delta);
/* memcpy for array data: a large copy runs on every core (one core cannot
 * saturate memory bandwidth: 128 MB took 11 ms on one, 6 ms on two). */
void pe_mem_copy(void *dst, const void *src, size_t bytes);

#endif
