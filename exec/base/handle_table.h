/* handle_table.h — a table of records behind generation-checked handles,
 * for the objects the API hands out besides arrays: the random generators
 * (jit/api/api_rng.c) and the sparse matrices (jit/api/api_sparse.c).
 *
 * A handle is (generation << 32) | (index + 1): 0 is no handle, and the
 * generation (one counter per table, kept across pe_init/pe_shutdown
 * cycles) makes a handle of an earlier session, or of another table's
 * numbering, "not of this session".  A record released stays in its slot,
 * marked with where it was released, so a later use says where; slots are
 * never reused, so that message never turns into "stale".
 *
 * The arrays' port table (port.c) is not one of these: its records live in
 * pages that never move (pointers to ports are held across growth), slots
 * are reused (FIFO, behind a reserve) with a generation per slot, and its
 * release marks outlive the slot's next port (jit/record/handle.c). */
#ifndef PE_BASE_HANDLE_TABLE_H
#define PE_BASE_HANDLE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

/* The first member of every record of a table. */
typedef struct {
    uint32_t gen;            /* the generation its handle carries */
    bool live;               /* false once released */
    const pe_site *released; /* where it was released (diagnostics) */
} pe_handle_slot;

typedef struct {
    /* What the table holds, for its errors: "null <noun> handle",
     * "not <a_noun> of this session (stale or foreign handle)", "<noun>
     * used after <release_api> (destroyed at FILE:LINE)", "out of memory for
     * the <noun> table". */
    const char *noun, *a_noun, *release_api;
    size_t size;              /* bytes per record, pe_handle_slot first */
    unsigned char *records;
    size_t n, cap;
    uint32_t next_generation; /* never reset: old handles stay stale */
} pe_handle_table;

#define PE_HANDLE_TABLE(record_type, noun, a_noun, release_api) \
    {(noun), (a_noun), (release_api), sizeof(record_type), NULL, 0, 0, 0}

/* Room for one more record: false after raising PE_E_NOMEM at s.  Made
 * apart from pe_htable_add so that a creation can still fail in between
 * without using up a slot or a generation. */
bool pe_htable_reserve(pe_handle_table *t, const pe_site *s, const char *api);
/* After a reserve: a new live record, zeroed past its slot, and its handle. */
void *pe_htable_add(pe_handle_table *t, uint64_t *handle);
/* The live record of handle h, or NULL after raising PE_E_HANDLE at s
 * naming the misuse: a null handle, one not of this table's session, or a
 * record released (and where). */
void *pe_htable_lookup(pe_handle_table *t, const pe_site *s, const char *api, uint64_t h);
/* The handle of a record of t. */
uint64_t pe_htable_handle(const pe_handle_table *t, const void *record);
/* Marks a live record released at s; its handle then names s when used. */
void pe_htable_release(void *record, const pe_site *s);
/* Forgets every record (pe_shutdown): their handles become stale. */
void pe_htable_forget_all(pe_handle_table *t);

#endif
