/* scope.c — pe_scope_begin/end and pe_keep.  Each scope lists the handles of
 * the arrays created in it; the scope owns their creation reference.  At the
 * end of a scope every listed handle that is still live is released once; a
 * handle the application released itself, or moved out with pe_keep, is not;
 * nor one the runtime's own objects hold (a sparse matrix's, pe_scope_disown). */
#include <stdlib.h>

#include "record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/site.h"

/* Scopes belong to the thread that opens them: scopes[d - 1] lists the
 * arrays this thread created in its scope of depth d. */
typedef struct {
    pe_handle_list arrays;
    const pe_site *begin; /* where it began: a use after its end names it */
} scope_list;
static _Thread_local struct {
    scope_list *scopes;
    uint32_t scope_depth, scope_cap;
} my;

static bool list_push(pe_handle_list *l, pe_array h)
{
    if (!PE_GROW(l->items, l->cap, l->count + 1)) return false;
    l->items[l->count++] = h;
    return true;
}

void pe_scope_register(uint32_t idx)
{
    if (my.scope_depth == 0) return;
    if (!list_push(&my.scopes[my.scope_depth - 1].arrays, pe_handle_of(idx)))
        pe_log_message(PE_LOG_WARN, "out of memory in a scope: an array will outlive its scope");
}

uint32_t pe_scope_depth_here(void) { return my.scope_depth; }

pe_scope pe_scope_begin_at(const pe_site *s)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!pe_require_init(s, "pe_scope_begin")) return (pe_scope){0};
    if (!PE_GROW(my.scopes, my.scope_cap, (size_t)my.scope_depth + 1)) {
        pe_raise(s, PE_E_NOMEM, "pe_scope_begin", "out of memory");
        return (pe_scope){0};
    }
    my.scopes[my.scope_depth++] = (scope_list){.begin = s};
    return (pe_scope){my.scope_depth};
}

/* The port behind h if h is still a live application handle, else NULL. */
static pe_port *live_port(pe_array h, uint32_t *idx)
{
    pe_port *p = pe_port_peek(h, idx);
    return p && p->refs_app > 0 ? p : NULL;
}

void pe_scope_end_at(const pe_site *s, pe_scope sc)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!pe_require_init(s, "pe_scope_end")) return;
    if (sc.depth == 0 || sc.depth != my.scope_depth) {
        pe_raise(s, PE_E_ARG, "pe_scope_end",
                 "scope %u is not the innermost open scope (%u): scopes end in reverse order of their begin",
                 sc.depth, my.scope_depth);
        return;
    }
    scope_list *ended = &my.scopes[--my.scope_depth];
    pe_handle_list *l = &ended->arrays;
    /* the bound on what expressions retain is checked once the scope's
     * handles are all released: checked after each, a value only the
     * scope's expressions hold tripped it, and expressions the scope was
     * about to release were computed and stored for nothing */
    pe_retention.check_held = true;
    for (size_t i = 0; i < l->count; i++) {
        uint32_t idx;
        if (!live_port(l->items[i], &idx)) continue;
        pe_port_release_app(idx, s);
        pe_port *p = pe_port_at(idx);
        if (p->released_gen == pe_handle_gen(l->items[i])) p->release_scope = ended->begin;
    }
    pe_retention.check_held = false;
    pe_check_retained(s);
    free(l->items);
    *ended = (scope_list){0};
    if (my.scope_depth == 0) { /* the thread's outermost scope ended: nothing to keep (threads end) */
        free(my.scopes);
        my.scopes = NULL;
        my.scope_cap = 0;
    }
}

/* Takes a off the innermost scope's list; false if it was not there. */
static bool unlist(pe_array a)
{
    if (my.scope_depth == 0) return false;
    pe_handle_list *l = &my.scopes[my.scope_depth - 1].arrays;
    for (size_t i = l->count; i-- > 0;) {
        if (l->items[i].h != a.h) continue;
        l->items[i] = l->items[--l->count];
        return true;
    }
    return false;
}

pe_array pe_keep_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    uint32_t idx;
    if (!pe_port_lookup(s, a, "pe_keep", &idx)) return a;
    if (unlist(a) && my.scope_depth >= 2 && !list_push(&my.scopes[my.scope_depth - 2].arrays, a))
        pe_log_message(PE_LOG_WARN, "out of memory in a scope: a kept array will outlive its scope");
    return a;
}

void pe_scope_disown(pe_array a) { (void)unlist(a); }

void pe_scopes_free(void)
{
    for (uint32_t d = 0; d < my.scope_depth; d++) free(my.scopes[d].arrays.items);
    free(my.scopes);
    my.scopes = NULL;
    my.scope_depth = my.scope_cap = 0;
}
