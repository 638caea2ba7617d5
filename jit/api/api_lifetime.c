/* api_lifetime.c — pe_retain and pe_release: the application's references.
 * (Scopes, which release on the application's behalf, are in scope.c.) */
#include "../record/macro_rec.h"
#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/site.h"

pe_array pe_retain_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    uint32_t idx;
    pe_port *p = pe_port_lookup(s, a, "pe_retain", &idx);
    if (!p) return (pe_array){0};
    p->refs_app++;
    if (pe_macro_top) pe_macro_note_publish(idx, UINT32_MAX); /* the body holds another reference */
    return a;
}

void pe_release_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!pe_require_init(s, "pe_release")) return;
    uint64_t i = (a.h & 0xffffffffu) - 1;
    /* name the first release when it is done twice */
    if (a.h != 0 && i < pe_rt.n_slots) {
        pe_port *p = pe_port_at((uint32_t)i);
        if (p->released_gen == (uint32_t)(a.h >> 32) && (p->gen != p->released_gen || p->refs_app == 0)) {
            const pe_site *r = p->release_site;
            if (p->released_by_ir) { /* the program releases what the IR released for it: the IR's mark was extra */
                pe_ir_refuted(r, s, "pe_release");
                return;
            }
            if (p->release_scope && r)
                pe_raise(s, PE_E_HANDLE, "pe_release",
                         "array released twice: the end of the scope begun at %s:%d released it at %s:%d already "
                         "(pe_keep it inside that scope if it must outlive the scope)",
                         p->release_scope->file, p->release_scope->line, r->file, r->line);
            else
                pe_raise(s, PE_E_HANDLE, "pe_release", "array released twice (first released at %s:%d: %s)",
                         r ? r->file : "?", r ? r->line : 0, r ? r->func : "?");
            return;
        }
    }
    uint32_t idx;
    if (!pe_port_lookup(s, a, "pe_release", &idx)) return;
    pe_port_release_app(idx, s);
}
