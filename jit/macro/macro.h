/* macro.h — the macro cache: code reuse sections (PE_MACRO), see macro.c. */
#ifndef PE_MACRO_MACRO_H
#define PE_MACRO_MACRO_H

#include <stdbool.h>

#include "pe.h"

/* The cache's bound (PE_MACRO_CACHE, read at pe_init): entries over every
 * section, least recently used evicted first; 0 runs every body. */
void pe_macro_start(int entries);
/* Frees the cache and the calling thread's open sections (pe_shutdown). */
void pe_macro_stop(void);
/* An entry point that reads or writes host data (`api`, at s): inside a
 * section's body that is an error (PE_E_MACRO raised, the thread's open
 * sections abandoned: true, and the caller fails); else false. */
bool pe_macro_refuse_host(const pe_site *s, const char *api);

#endif
