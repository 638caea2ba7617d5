/* macro_rec.c — the recorder's notes for a code reuse section's first
 * execution (macro_rec.h): each port the body makes becomes an item whose
 * operands are refs (an input, an earlier item), and the application
 * references the body holds are counted, so that the section's end
 * (jit/macro/macro.c) knows what to give the application and what to
 * release — and a replay does the same without the body.  An operand from
 * outside the section that is not one of its inputs cannot be replayed (the
 * next execution would use it again, whatever the program meant): the
 * recording fails with PE_E_MACRO at the operation's line. */
#include <stdlib.h>
#include <string.h>

#include "macro_rec.h"
#include "../../exec/base/error.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/runtime.h"

_Thread_local pe_macro_frame *pe_macro_top;

#define NO_REF UINT32_MAX

static size_t slot_of(uint32_t idx, size_t cap) { return ((size_t)idx * 2654435761u) & (cap - 1); }

/* The item recording f made for port idx (a slot reused since is not it). */
static pe_macro_item *item_of(const pe_macro_frame *f, uint32_t idx)
{
    if (!f->map_cap) return NULL;
    for (size_t k = slot_of(idx, f->map_cap);; k = (k + 1) & (f->map_cap - 1)) {
        uint32_t v = f->map[k];
        if (v == 0) return NULL;
        pe_macro_item *it = &f->items[v - 1];
        if (it->port == idx) return it->gen == pe_port_at(idx)->gen ? it : NULL;
    }
}

uint32_t pe_macro_ref_of(const pe_macro_frame *f, uint32_t idx)
{
    pe_macro_item *it = item_of(f, idx);
    if (it) return (uint32_t)f->n_ins + (uint32_t)(it - f->items);
    uint32_t gen = pe_port_at(idx)->gen;
    for (int k = 0; k < f->n_ins; k++)
        if (f->in_port[k] == idx && f->in_gen[k] == gen) return (uint32_t)k;
    return NO_REF;
}

static bool map_insert(pe_macro_frame *f, uint32_t idx, uint32_t item)
{
    if (2 * (f->n_items + 1) > f->map_cap) {
        size_t cap = f->map_cap ? 2 * f->map_cap : 64;
        uint32_t *m = calloc(cap, sizeof *m);
        if (!m) return false;
        for (size_t i = 0; i < f->map_cap; i++) {
            uint32_t v = f->map[i];
            if (!v) continue;
            size_t k = slot_of(f->items[v - 1].port, cap);
            while (m[k]) k = (k + 1) & (cap - 1);
            m[k] = v;
        }
        free(f->map);
        f->map = m;
        f->map_cap = cap;
    }
    size_t k = slot_of(idx, f->map_cap);
    while (f->map[k] && f->items[f->map[k] - 1].port != idx) k = (k + 1) & (f->map_cap - 1);
    f->map[k] = item + 1; /* a reused slot's newer port replaces the older one */
    return true;
}

static pe_macro_item *new_item(pe_macro_frame *f, uint32_t idx, pe_macro_item_kind kind)
{
    if (!PE_GROW(f->items, f->cap_items, f->n_items + 1) || !map_insert(f, idx, (uint32_t)f->n_items)) {
        f->failed = true;
        pe_log_message(PE_LOG_WARN, "%s:%d: out of memory recording section %s: it is not cached", f->site->file,
                       f->site->line, f->name);
        return NULL;
    }
    pe_port *p = pe_port_at(idx);
    pe_macro_item *it = &f->items[f->n_items++];
    memset(it, 0, sizeof *it);
    it->kind = (uint8_t)kind;
    it->op = p->op;
    it->dtype = p->dtype;
    it->ctype = p->ctype;
    it->rank = p->rank;
    it->weak = p->weak;
    it->value = p->value;
    it->literal = p->literal;
    it->fresh_param = -1;
    memcpy(it->shape, p->shape, sizeof it->shape);
    it->numel = p->numel;
    memcpy(it->param, p->param, sizeof it->param);
    for (int k = 0; k < 2 * PE_MAX_RANK; k++)
        if (p->param[k]) it->n_params = (uint8_t)(k + 1);
    it->site = p->site;
    it->port = idx;
    it->gen = p->gen;
    return it;
}

void pe_macro_note_op(uint32_t idx)
{
    pe_macro_frame *f = pe_macro_capturing();
    if (!f || f->failed) return;
    pe_port *p = pe_port_at(idx);
    uint32_t refs[PE_PORT_MAX_INPUTS];
    for (int i = 0; i < p->n_in; i++) {
        refs[i] = pe_macro_ref_of(f, p->in[i]);
        if (refs[i] != NO_REF) continue;
        f->failed = f->macro_error = true;
        const pe_site *s = p->site;
        pe_raise(s, PE_E_MACRO, pe_op_table[p->op].name,
                 "operand %d was made outside section %s (%s:%d) and is not one of its inputs: a replay could not "
                 "see a different array there; pass it in the section's inputs",
                 i + 1, f->name, f->site->file, f->site->line);
        return;
    }
    for (int i = 0; i < p->n_in; i++) {
        if (refs[i] < (uint32_t)f->n_ins) continue;
        pe_macro_item *c = &f->items[refs[i] - f->n_ins];
        if (c->kind != PE_MACRO_ITEM_CONSTANT) continue;
        const pe_port *k = pe_port_at(c->port); /* as the op saw it: a wide C integer settled, a literal marked */
        c->dtype = k->dtype, c->ctype = k->ctype, c->value = k->value, c->literal = k->literal;
    }
    pe_macro_item *it = new_item(f, idx, PE_MACRO_ITEM_OP);
    if (!it) return;
    it->n_in = p->n_in;
    memcpy(it->in, refs, sizeof(uint32_t) * p->n_in);
}

void pe_macro_note_constant(uint32_t idx)
{
    pe_macro_frame *f = pe_macro_capturing();
    if (!f || f->failed) return;
    pe_macro_item *it = new_item(f, idx, PE_MACRO_ITEM_CONSTANT);
    if (!it) return;
    pe_port_ref(idx); /* kept until the section ends, consumed or not: a cache entry takes it over */
    it->held = true;
}

bool pe_macro_note_publish(uint32_t idx, uint32_t scope_depth)
{
    pe_macro_frame *f = pe_macro_capturing();
    if (!f) return true;
    uint32_t ref = pe_macro_ref_of(f, idx);
    if (ref == NO_REF) {
        f->failed = true; /* an invalid result of a failed request, whose error was raised; or see note_op */
        pe_macro_item *it = new_item(f, idx, PE_MACRO_ITEM_STRAY);
        if (!it) return true;
        ref = (uint32_t)(f->n_ins + f->n_items - 1);
    }
    if (ref < (uint32_t)f->n_ins) {
        f->in_body_refs[ref]++;
    } else {
        f->items[ref - f->n_ins].body_refs++;
        f->items[ref - f->n_ins].published = true;
    }
    return scope_depth != f->scope_depth; /* a scope the body opened ends what it made */
}

bool pe_macro_note_release(uint32_t idx, const pe_site *s)
{
    pe_macro_frame *f = pe_macro_capturing();
    if (!f) return true;
    uint32_t ref = pe_macro_ref_of(f, idx);
    if (ref == NO_REF) return true;
    if (ref >= (uint32_t)f->n_ins) {
        f->items[ref - f->n_ins].body_refs--;
        return true;
    }
    if (f->in_body_refs[ref] > 0) {
        f->in_body_refs[ref]--;
        return true;
    }
    f->failed = f->macro_error = true;
    pe_raise(s, PE_E_MACRO, "pe_release",
             "the body of section %s (%s:%d) releases its input %u: a body must not change its inputs", f->name,
             f->site->file, f->site->line, ref);
    return false;
}

void pe_macro_mark_fresh_param(uint32_t idx, int param, pe_macro_fresh_fn next, void *ctx)
{
    pe_macro_frame *f = pe_macro_capturing();
    if (!f || f->failed) return;
    pe_macro_item *it = item_of(f, idx);
    if (!it || param < 0 || param >= 2 * PE_MAX_RANK) return;
    it->fresh_param = (int8_t)param;
    if (it->n_params <= param) it->n_params = (uint8_t)(param + 1);
    it->fresh = next;
    it->fresh_ctx = ctx;
}

void pe_macro_frame_free(pe_macro_frame *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->n_items; i++)
        if (f->items[i].held) pe_port_unref(f->items[i].port);
    free(f->in_handles);
    free(f->in_port);
    free(f->in_gen);
    free(f->in_body_refs);
    free(f->items);
    free(f->map);
    free(f->signature);
    free(f);
}
