/* progcache.h — the program cache: compiled kernels in memory, keyed by the
 * kernel IR's canonical hash (and compared in full on a hit). */
#ifndef PE_JIT_PROGCACHE_H
#define PE_JIT_PROGCACHE_H

#include "cpu_gccjit.h"

/* The compiled kernel for k, or NULL. */
pe_kernel_fn pe_progcache_lookup(const kir_kernel *k);
/* Adds kernels compiled together in `unit` (the cache owns the unit). */
bool pe_progcache_insert(const kir_kernel *const *kernels, const pe_kernel_fn *fns, size_t n, pe_gccjit_unit *unit);
void pe_progcache_clear(void);

#endif
