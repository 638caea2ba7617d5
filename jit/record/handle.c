/* handle.c — the application's side of handles: looking a handle up (a
 * null, foreign, stale or released handle raises PE_E_HANDLE, naming where
 * it was released when the slot still knows), releasing the application's
 * reference (a RELEASE entry for the program generator), and the check that
 * PE is initialised.  The port table itself is the ground's
 * (exec/base/port.c). */
#include <stdio.h>

#include "record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"

bool pe_require_init(const pe_site *s, const char *api)
{
    if (pe_rt.shutting_down) {
        /* another thread's pe_shutdown runs: nothing may start now (README, Semantics) */
        pe_raise(s, PE_E_INVALID, api, "runtime shut down (pe_shutdown is running)");
        return false;
    }
    if (pe_rt.initialised) return true;
    /* after a shutdown, as before the first pe_init: pe_init may start it again */
    pe_raise(s, PE_E_ARG, api, pe_rt.shut_down ? "PE is not initialised (runtime shut down by pe_shutdown): call pe_init first"
                                               : "PE is not initialised: call pe_init first");
    return false;
}

static void describe_release(char *out, size_t n, const pe_site *r)
{
    if (r) snprintf(out, n, " (released at %s:%d: %s)", r->file, r->line, r->func);
    else out[0] = 0;
}

pe_port *pe_port_lookup(const pe_site *s, pe_array a, const char *api, uint32_t *idx_out)
{
    if (!pe_require_init(s, api)) return NULL;
    if (a.h == 0) {
        pe_raise(s, PE_E_HANDLE, api, "no array (null handle)");
        return NULL;
    }
    uint64_t idx64 = (a.h & 0xffffffffu) - 1;
    uint32_t gen = (uint32_t)(a.h >> 32);
    if (idx64 >= pe_rt.n_slots || gen == 0) {
        pe_raise(s, PE_E_HANDLE, api, "not an array handle (0x%llx)", (unsigned long long)a.h);
        return NULL;
    }
    uint32_t idx = (uint32_t)idx64;
    pe_port *p = pe_port_at(idx);
    char where[512];
    if (p->gen == gen && p->refs_app > 0 && p->state != PE_PORT_FREE) {
        if (idx_out) *idx_out = idx;
        return p;
    }
    if (p->released_gen == gen) {
        describe_release(where, sizeof where, p->release_site);
        pe_raise(s, PE_E_HANDLE, api, "array used after release%s", where);
    } else if (p->gen > gen || p->state == PE_PORT_FREE) {
        pe_raise(s, PE_E_HANDLE, api, "stale array handle: the array was released earlier");
    } else {
        pe_raise(s, PE_E_HANDLE, api, "not an array handle (0x%llx)", (unsigned long long)a.h);
    }
    return NULL;
}

void pe_port_release_app(uint32_t idx, const pe_site *s)
{
    pe_port *p = pe_port_at(idx);
    if (--p->refs_app == 0) {
        /* C-scalar temporaries never reach the application: keep the slot's
         * diagnostics about the application's own handles */
        if (!p->temp) {
            p->released_gen = p->gen;
            p->release_site = s;
        }
        /* Tell the program generator the value is dead from here on (only
         * its own batch can say so: an earlier batch may be running). */
        if (p->state == PE_PORT_PENDING && p->batch == pe_rt.batch_epoch) pe_queue_push(PE_ENTRY_RELEASE, idx);
    }
    pe_port_maybe_free(idx);
}
