/* handle_table.c — generation-checked handle tables (handle_table.h): the
 * records of the random generators and the sparse matrices, each table a
 * growable array of fixed-size records led by a pe_handle_slot, and the
 * errors a misused handle raises. */
#include "handle_table.h"

#include <string.h>

#include "error.h"
#include "grow.h"

static pe_handle_slot *slot_at(const pe_handle_table *t, size_t i)
{
    return (pe_handle_slot *)(t->records + i * t->size);
}

bool pe_htable_reserve(pe_handle_table *t, const pe_site *s, const char *api)
{
    void *records = t->records;
    bool ok = pe_grow_size(&records, &t->cap, 16, t->n + 1, t->size); /* PE_GROW's growth, records of t->size bytes */
    t->records = records;
    if (!ok) pe_raise(s, PE_E_NOMEM, api, "out of memory for the %s table", t->noun);
    return ok;
}

void *pe_htable_add(pe_handle_table *t, uint64_t *handle)
{
    if (++t->next_generation == 0) t->next_generation = 1; /* 0 would make handle 0 possible */
    pe_handle_slot *slot = slot_at(t, t->n++);
    memset(slot, 0, t->size);
    slot->gen = t->next_generation;
    slot->live = true;
    *handle = pe_htable_handle(t, slot);
    return slot;
}

uint64_t pe_htable_handle(const pe_handle_table *t, const void *record)
{
    size_t i = (size_t)((const unsigned char *)record - t->records) / t->size;
    return ((uint64_t)((const pe_handle_slot *)record)->gen << 32) | (uint64_t)(i + 1);
}

void *pe_htable_lookup(pe_handle_table *t, const pe_site *s, const char *api, uint64_t h)
{
    uint64_t i = (h & 0xffffffffu) - 1;
    if (h == 0) {
        pe_raise(s, PE_E_HANDLE, api, "null %s handle", t->noun);
        return NULL;
    }
    if (i >= t->n || slot_at(t, i)->gen != (uint32_t)(h >> 32)) {
        pe_raise(s, PE_E_HANDLE, api, "not %s of this session (stale or foreign handle)", t->a_noun);
        return NULL;
    }
    pe_handle_slot *slot = slot_at(t, i);
    if (!slot->live) {
        const pe_site *d = slot->released;
        if (d && d->file)
            pe_raise(s, PE_E_HANDLE, api, "%s used after %s (destroyed at %s:%d)", t->noun, t->release_api, d->file,
                     d->line);
        else
            pe_raise(s, PE_E_HANDLE, api, "%s used after %s", t->noun, t->release_api);
        return NULL;
    }
    return slot;
}

void pe_htable_release(void *record, const pe_site *s)
{
    pe_handle_slot *slot = record;
    slot->live = false;
    slot->released = s;
}

void pe_htable_forget_all(pe_handle_table *t)
{
    free(t->records);
    t->records = NULL;
    t->n = t->cap = 0;
}
