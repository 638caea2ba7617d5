/* trace.h — the trace cache: program sequences remembered by the shape of
 * the work that produced them, so that a repeated stream of requests (a loop
 * body) skips the program generator. */
#ifndef PE_JIT_TRACE_H
#define PE_JIT_TRACE_H

#include "proggen.h"
#include "runtime.h"

/* Called by the queue for every entry it appends at `position`. */
void pe_trace_append(pe_trace_key *key, const pe_entry *entry, size_t position);
void pe_trace_key_free(pe_trace_key *key);

/* Sets limits: `entries` programs sequences at most (0: the cache is off). */
void pe_trace_configure(int entries);
/* On a hit, *seq is the cached sequence instantiated with this batch's ports. */
bool pe_trace_lookup(const pe_trace_key *key, const pe_entry *entries, size_t n, pe_program_seq *seq);
/* Remembers the sequence made for this batch (which must still be pending). */
void pe_trace_store(const pe_trace_key *key, const pe_entry *entries, size_t n, uint32_t epoch,
                    const pe_program_seq *seq);
void pe_trace_clear(void);

/* A batch's program sequence, as every executor gets it: from the trace
 * cache (*hit), else from the program generator with `emittable`; counts
 * lookups, hits and generator runs.  False when out of memory. */
bool pe_trace_or_proggen(const pe_batch *b, pe_emittable_fn emittable, pe_program_seq *seq, bool *hit);

#endif
