/* progcache.h — the CPU executor's linked code (progcache.c): compiled
 * kernels in memory, keyed by the kernel IR's canonical hash (and compared
 * in full on a hit). */
#ifndef PE_JIT_PROGCACHE_H
#define PE_JIT_PROGCACHE_H

#include "../pool/threadpool.h"
#include "../../jit/kir/kir.h"

/* The compiled kernel for k, or NULL. */
pe_kernel_fn pe_progcache_lookup(const kir_kernel *k);
/* Adds kernels loaded together from the shared object `unit` (a dlopen
 * handle), which the cache owns from this call on, whatever it returns
 * (false: out of memory; kernels added before that stay). */
bool pe_progcache_insert(const kir_kernel *const *kernels, const pe_kernel_fn *fns, size_t n, void *unit);
void pe_progcache_clear(void);

#endif
