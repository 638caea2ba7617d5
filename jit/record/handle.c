/* handle.c — the application's side of handles: looking a handle up (a
 * null, foreign, stale or released handle raises PE_E_HANDLE, naming where
 * it was released when the slot still knows), releasing the application's
 * reference (a RELEASE entry for the program generator), a handle the
 * static IR released wrongly and the program uses again (revive), and the
 * check that PE is initialised.  The port table itself is the ground's
 * (exec/base/port.c). */
#include <stdio.h>

#include "macro_rec.h"
#include "record.h"
#include "tape.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/site.h"

bool pe_require_init(const pe_site *s, const char *api)
{
    if (pe_rt.shutting_down) {
        /* another thread's pe_shutdown runs: nothing may start now (docs/semantics.md) */
        pe_raise(s, PE_E_INVALID, api, "runtime shut down (pe_shutdown is running)");
        return false;
    }
    if (pe_rt.initialised) return true;
    /* after a shutdown, as before the first pe_init: pe_init may start it again */
    pe_raise(s, PE_E_ARG, api, pe_rt.shut_down ? "PE is not initialised (runtime shut down by pe_shutdown): call pe_init first"
                                               : "PE is not initialised: call pe_init first");
    return false;
}

static void describe_release(char *out, size_t n, const pe_port *p)
{
    const pe_site *r = p->release_site, *scope = p->release_scope;
    if (r && scope)
        snprintf(out, n, " (released at %s:%d: %s, where the scope begun at %s:%d ended; "
                 "pe_keep it inside that scope to use it after the scope)", r->file, r->line, r->func,
                 scope->file, scope->line);
    else if (r)
        snprintf(out, n, " (released at %s:%d: %s%s)", r->file, r->line, r->func,
                 p->released_by_ir ? ", by the static IR's last-use mark, which this use contradicts; the value is gone" : "");
    else
        out[0] = 0;
}

void pe_ir_refuted(const pe_site *release_site, const pe_site *use_site, const char *api)
{
    pe_site_record *r = release_site ? pe_site_record_of(release_site) : NULL;
    if (r) r->release_refuted = true;
    static bool warned; /* under the runtime lock */
    if (warned || !release_site) return;
    warned = true;
    pe_log_message(PE_LOG_WARN,
                   "%s:%d: the static IR released an array there as its last use, but %s at %s:%d uses it "
                   "again: that IR mark was wrong and the site's marks are ignored from now on (rebuild with pecc)",
                   release_site->file, release_site->line, api, use_site && use_site->file ? use_site->file : "?",
                   use_site ? use_site->line : 0);
}

/* A handle the static IR released (a pecc last-use mark) that the program
 * uses again: the mark was wrong (another build's IR, a forged one).  The
 * IR is only a hint, so where the value is still there — its batch still
 * being recorded (a REVIVE entry makes it visible after the batch again),
 * or computed and kept alive by a consumer — the handle lives again and
 * the marks of that site are ignored from now on.  False when the value
 * is gone (then the use is an error, as without IR). */
static bool revive(pe_port *p, uint32_t idx, const pe_site *s, const char *api)
{
    if (p->gen != p->released_gen || p->state == PE_PORT_FREE || p->refs_app != 0) return false;
    pe_port_ref(idx); /* while it may be waited for */
    if (p->state == PE_PORT_PENDING && p->batch != pe_rec.batch_epoch) pe_queue_wait_port(p); /* submitted: is it stored? */
    bool recording = p->state == PE_PORT_PENDING && p->batch == pe_rec.batch_epoch;
    bool has_value = p->state == PE_PORT_INVALID || p->state == PE_PORT_DEFERRED ||
                     (p->state == PE_PORT_READY && (p->buf || p->dev_buf || p->op == PE_OP_constant));
    bool ok = (recording || has_value) && p->gen == p->released_gen &&
              (!recording || !p->released_in_batch || pe_queue_push(PE_ENTRY_REVIVE, idx));
    if (ok) {
        pe_ir_refuted(p->release_site, s, api);
        pe_site_record *producer = p->read_once ? pe_site_record_of(p->site) : NULL;
        if (producer) producer->release_refuted = true; /* its "read once" was wrong too */
        p->read_once = false;
        p->refs_app = 1;
        p->released_gen = 0;
        p->released_by_ir = false;
    }
    pe_port_unref(idx);
    return ok;
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
    if (p->released_gen == gen && p->released_by_ir && revive(p, idx, s, api)) {
        if (idx_out) *idx_out = idx;
        return p;
    }
    if (p->released_gen == gen) {
        describe_release(where, sizeof where, p);
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
    if (pe_macro_top && !pe_macro_note_release(idx, s)) return; /* a section's body releasing its input */
    pe_port_drop_app_ref(idx, s);
}

void pe_port_drop_app_ref(uint32_t idx, const pe_site *s)
{
    pe_port *p = pe_port_at(idx);
    if (--p->refs_app == 0) {
        if (p->tape) pe_tape_drop(idx); /* its history goes with its last holder */
        /* C-scalar temporaries never reach the application: keep the slot's
         * diagnostics about the application's own handles */
        if (!p->temp) {
            p->released_gen = p->gen;
            p->release_site = s;
            p->release_scope = NULL; /* scope.c says so after this when a scope's end released it */
            p->released_by_ir = false; /* the static IR's releases say so after this */
        }
        /* Tell the program generator the value is dead from here on (only
         * its own batch can say so: an earlier batch may be running). */
        if (p->state == PE_PORT_PENDING && p->batch == pe_rec.batch_epoch) pe_queue_push(PE_ENTRY_RELEASE, idx);
        pe_port_update_retained(p); /* expressions may hold it */
    }
    pe_port_maybe_free(idx);
    pe_check_retained(s);
}
