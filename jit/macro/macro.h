/* macro.h — the macro cache: code reuse sections (PE_MACRO), see macro.c. */
#ifndef PE_MACRO_MACRO_H
#define PE_MACRO_MACRO_H

#include <stdbool.h>

#include "pe.h"

/* A replayed section's recorded operand: the port to bind in its place —
 * the same one, but for a random draw's draw number, which advances on
 * every replay (jit/api/api_rng.c's; NO_SLOT after an error was raised at
 * s).  A hook because the generators' API sits above the macro cache. */
typedef uint32_t (*pe_macro_replay_operand_fn)(const pe_site *s, uint32_t port);

/* The cache's bound (PE_MACRO_CACHE, read at pe_init): entries over every
 * section, least recently used evicted first; 0 runs every body.  The
 * hook rewrites recorded operands on replay (NULL: none). */
void pe_macro_start(int entries, pe_macro_replay_operand_fn replay_operand);
/* Frees the cache and the calling thread's open sections (pe_shutdown). */
void pe_macro_stop(void);
/* An entry point that reads or writes host data (`api`, at s): inside a
 * section's body that is an error (PE_E_MACRO raised, the thread's open
 * sections abandoned: true, and the caller fails); else false. */
bool pe_macro_refuse_host(const pe_site *s, const char *api);

#endif
