/* progcache.c — the CPU executor's linked code: an open hash table from
 * kernel IR (hash, then full comparison) to entry points, and the shared
 * objects (dlopen handles) that hold them.  Cleared when the executor stops. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "progcache.h"
#include "../base/grow.h"

typedef struct {
    uint64_t hash;
    kir_kernel *kir;
    pe_kernel_fn fn;
} entry;

static entry *table;
static size_t cap, count;
static void **units; /* dlopen handles */
static size_t n_units, units_cap;

pe_kernel_fn pe_progcache_lookup(const kir_kernel *k)
{
    if (!cap) return NULL;
    uint64_t h = kir_hash(k);
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        if (!table[i].kir) return NULL;
        if (table[i].hash == h && kir_equal(table[i].kir, k)) return table[i].fn;
    }
}

static bool grow(void)
{
    size_t ncap = cap ? cap * 2 : 256;
    entry *nt = calloc(ncap, sizeof *nt);
    if (!nt) return false;
    for (size_t i = 0; i < cap; i++) {
        if (!table[i].kir) continue;
        size_t j = table[i].hash & (ncap - 1);
        while (nt[j].kir) j = (j + 1) & (ncap - 1);
        nt[j] = table[i];
    }
    free(table);
    table = nt;
    cap = ncap;
    return true;
}

bool pe_progcache_insert(const kir_kernel *const *kernels, const pe_kernel_fn *fns, size_t n, void *unit)
{
    if (!PE_GROW(units, units_cap, n_units + 1)) {
        dlclose(unit);
        return false;
    }
    units[n_units++] = unit;
    for (size_t k = 0; k < n; k++) {
        if ((count + 1) * 2 > cap && !grow()) return false;
        if (pe_progcache_lookup(kernels[k])) continue;
        kir_kernel *copy = malloc(sizeof *copy);
        if (!copy) return false;
        memcpy(copy, kernels[k], sizeof *copy);
        uint64_t h = kir_hash(copy);
        size_t i = h & (cap - 1);
        while (table[i].kir) i = (i + 1) & (cap - 1);
        table[i] = (entry){h, copy, fns[k]};
        count++;
    }
    return true;
}

void pe_progcache_clear(void)
{
    for (size_t i = 0; i < cap; i++) free(table[i].kir);
    free(table);
    table = NULL;
    cap = count = 0;
    for (size_t i = 0; i < n_units; i++) dlclose(units[i]);
    free(units);
    units = NULL;
    n_units = units_cap = 0;
}
