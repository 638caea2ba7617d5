/* memory.c — host buffers for array values (64-byte aligned for vector
 * loads) and the live-byte accounting behind pe_stats. */
#include <stdint.h>
#include <stdlib.h>

#include "memory.h"
#include "../jit/runtime.h"

#define ALIGNMENT 64

void *pe_mem_alloc(size_t bytes)
{
    if (bytes > SIZE_MAX - ALIGNMENT) return NULL;
    size_t rounded = (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    void *p = aligned_alloc(ALIGNMENT, rounded ? rounded : ALIGNMENT);
    if (p) pe_rt.stats.live_bytes += (int64_t)bytes;
    return p;
}

void pe_mem_free(void *p, size_t bytes)
{
    if (!p) return;
    free(p);
    pe_rt.stats.live_bytes -= (int64_t)bytes;
}

void pe_mem_account(long long delta) { pe_rt.stats.live_bytes += delta; }
