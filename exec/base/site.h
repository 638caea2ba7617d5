/* site.h — call sites (site.c): the application's `pe_site` objects, the
 * runtime's record of each, sites made from a caller's address. */
#ifndef PE_BASE_SITE_H
#define PE_BASE_SITE_H

#include "runtime.h"

/* What the runtime keeps per call site, in the site's `rt` (sites are the
 * application's static objects, one per call site, living for the process):
 * an id that is the same in every run of the program, and the static IR's
 * facts about the site (irload.c), each computed on first use. */
#define PE_SITE_MAX_LITERALS 4
typedef struct {
    uint64_t stable_id;            /* hash of file, line and function */
    int operands_seen, flush_seen; /* IR units registered when computed (dlopen adds units) */
    uint32_t release;              /* operands to release after the request */
    bool flush;                    /* the request begins a loop iteration or follows a loop */
    bool release_refuted;          /* the program used or released a value the IR released here: no more */
    int once_seen;                 /* units registered when `once` was computed */
    bool once;                     /* its result is read once, by its last use (irload.c) */
    uint32_t recomputed_in;        /* the runtime's life (pe_rt.life) in which a value made here was
                                      computed again after a kernel computed it without storing it
                                      (demand.c): that life stores them (pe_port.store_when_held) */
    uint32_t literal;              /* operands that are source literals ... */
    double value[PE_SITE_MAX_LITERALS]; /* ... with these values */
} pe_site_record;
/* The site's record, made on first use; NULL when out of memory. */
pe_site_record *pe_site_record_of(const pe_site *s);
/* The site's stable id (0 for no site, or out of memory). */
uint64_t pe_site_stable_id(const pe_site *s);

/* The site of an _at call: the given one, or one made from the caller's address. */
#define PE_SITE_OR_CALLER(s) ((s) ? (s) : pe_site_from_address(__builtin_return_address(0)))
const pe_site *pe_site_from_address(void *addr);
/* The site's column where the static IR knows it, else 0 (messages and
 * profiles name it); `fn` answers it (the static IR's registry registers
 * itself). */
int pe_site_column(const pe_site *s);
void pe_site_columns_from(int (*fn)(const pe_site *s));

#endif
