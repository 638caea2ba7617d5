/* memory.h — host buffers for array values: aligned, pooled by size class,
 * accounted (pe_stats.live_bytes).  The ground's: the port table and every
 * executor allocate from it. */
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

#endif
