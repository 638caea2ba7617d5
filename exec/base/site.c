/* site.c — call sites for requests that come without PE_HERE (bindings call
 * the _at functions with site == NULL): one stable pe_site per caller address,
 * named after the object file and symbol found by dladdr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "site.h"
#include "../../irformat/fnv.h"

typedef struct address_site {
    void *addr;
    pe_site site;
    char func[96];
    struct address_site *next;
} address_site;

#define BUCKETS 256
static address_site *buckets[BUCKETS];
static pe_site unknown_site = {"?", 0, "?", 0};

const pe_site *pe_site_from_address(void *addr)
{
    size_t b = ((uintptr_t)addr >> 4) % BUCKETS;
    for (address_site *e = buckets[b]; e; e = e->next)
        if (e->addr == addr) return &e->site;
    address_site *e = calloc(1, sizeof *e);
    if (!e) return &unknown_site;
    Dl_info info;
    const char *file = "?";
    if (dladdr(addr, &info) && info.dli_fname) file = info.dli_fname;
    if (dladdr(addr, &info) && info.dli_sname)
        snprintf(e->func, sizeof e->func, "%s+0x%lx", info.dli_sname,
                 (unsigned long)((char *)addr - (char *)info.dli_saddr));
    else
        snprintf(e->func, sizeof e->func, "%p", addr);
    e->addr = addr;
    e->site = (pe_site){file, 0, e->func, 0};
    e->next = buckets[b];
    buckets[b] = e;
    return &e->site;
}

/* Sites live as long as the process: ports of a later pe_init may not point
 * at them, but error messages printed earlier may have; nothing to free. */

pe_site_record *pe_site_record_of(const pe_site *s)
{
    if (!s) return NULL;
    pe_site_record *r = s->rt;
    if (r) return r;
    if (!(r = calloc(1, sizeof *r))) return NULL;
    /* FNV-1a over file, line and function: stable across runs (addresses are not) */
    uint64_t h = pe_fnv_string(PE_FNV_OFFSET, s->file ? s->file : "?");
    h = pe_fnv_mix(h, (uint32_t)s->line);
    h = pe_fnv_string(h, s->func ? s->func : "?");
    r->stable_id = h ? h : 1;
    ((pe_site *)s)->rt = r; /* the runtime's field of the application's site object */
    return r;
}

uint64_t pe_site_stable_id(const pe_site *s)
{
    pe_site_record *r = pe_site_record_of(s);
    return r ? r->stable_id : 0;
}

/* Where columns come from: the static IR's registry (jit/record/irload.c)
 * registers its lookup when it gets units, so that this ground module
 * never calls up into it. */
static int (*column_source)(const pe_site *s);

void pe_site_columns_from(int (*fn)(const pe_site *s)) { __atomic_store_n(&column_source, fn, __ATOMIC_RELEASE); }

int pe_site_column(const pe_site *s)
{
    int (*source)(const pe_site *) = __atomic_load_n(&column_source, __ATOMIC_ACQUIRE);
    return source && s ? source(s) : 0;
}
