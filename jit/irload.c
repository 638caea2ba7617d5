/* irload.c — the static-IR loader.  pecc's constructors call
 * pe__register_ir before main (or when a shared library is loaded), perhaps
 * before pe_init: units are decoded at once — an IR from another build or a
 * damaged one is refused with a warning and the program runs without it —
 * and kept until exit.  Lookups are by the site's file and line: the file
 * is __FILE__ as the compiler saw it, which is the name pecc recorded. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irload.h"
#include "runtime.h"
#include "../irformat/static_ir.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pe_ir_unit *units;
static _Atomic int n_units;

void pe__register_ir(const void *blob, unsigned long len)
{
    pe_ir_unit u;
    char err[400];
    if (!pe_ir_decode(&u, blob, len, err, sizeof err)) {
        fprintf(stderr, "pe: warning: a static IR embedded by pecc is unusable (%s); running without it\n", err);
        return;
    }
    pthread_mutex_lock(&lock);
    pe_ir_unit *grown = realloc(units, sizeof *units * (size_t)(n_units + 1));
    if (grown) {
        units = grown;
        units[n_units] = u;
        atomic_fetch_add(&n_units, 1);
    } else {
        pe_ir_free(&u);
    }
    pthread_mutex_unlock(&lock);
}

int pe_ir_unit_count(void)
{
    pthread_mutex_lock(&lock);
    int n = n_units;
    pthread_mutex_unlock(&lock);
    return n;
}

int pe_ir_column_of(const pe_site *s)
{
    if (!s || !s->file) return 0;
    int column = 0;
    bool ambiguous = false;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_units && !ambiguous; i++) {
        if (strcmp(units[i].file, s->file) != 0) continue;
        for (uint32_t f = 0; f < units[i].n_functions; f++) {
            const pe_ir_function *fn = &units[i].functions[f];
            for (uint32_t q = 0; q < fn->n_requests; q++) {
                if (fn->requests[q].line != s->line) continue;
                if (column && column != fn->requests[q].column) ambiguous = true;
                column = (int)fn->requests[q].column;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return ambiguous ? 0 : column;
}

/* What the static IR says of a site's operands, cached in the site (its `rt`
 * belongs to the runtime): which to release after the request. */
typedef struct {
    int units_seen; /* recomputed when a unit is registered later (dlopen) */
    uint32_t release;
} site_facts;

/* The operands every IR request at the site's line to this entry point
 * with this arity releases (a nested request's temporary, or a variable's
 * last use); the site has no column, so several requests of one line must
 * all agree. */
static uint32_t release_mask(const pe_site *s, const char *api, int n)
{
    char api_at[80];
    snprintf(api_at, sizeof api_at, "%s_at", api);
    uint32_t mask = 0;
    bool any = false;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_units; i++) {
        if (strcmp(units[i].file, s->file) != 0) continue;
        for (uint32_t f = 0; f < units[i].n_functions; f++) {
            const pe_ir_function *fn = &units[i].functions[f];
            for (uint32_t q = 0; q < fn->n_requests; q++) {
                const pe_ir_request *rq = &fn->requests[q];
                if (rq->line != s->line || strcmp(rq->api, api_at) != 0 || rq->n_args != (uint32_t)n) continue;
                uint32_t m = 0;
                for (uint32_t a = 0; a < rq->n_args && a < 32; a++)
                    if (rq->args[a].kind == PE_ARG_REQUEST || rq->args[a].kill) m |= 1u << a;
                mask = any ? mask & m : m;
                any = true;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return mask;
}

void pe_ir_release_operands(const pe_site *s, const char *api, const pe_array *ins, int n)
{
    int registered = atomic_load_explicit(&n_units, memory_order_relaxed);
    if (registered == 0 || !s || !s->file || s->line <= 0) return; /* built without pecc */
    site_facts *facts = s->rt;
    if (!facts || facts->units_seen != registered) {
        if (!facts && !(facts = calloc(1, sizeof *facts))) return;
        facts->release = release_mask(s, api, n);
        facts->units_seen = registered;
        ((pe_site *)s)->rt = facts; /* sites are the application's static objects: one per call site */
    }
    for (int k = 0; k < n && facts->release; k++) {
        if (!(facts->release & (1u << k))) continue;
        /* the dynamic stream must agree: a live handle with one reference,
         * made by a request of the same file (a nested request's temporary,
         * or a variable defined from one) */
        uint64_t i = (ins[k].h & 0xffffffffu) - 1;
        if (ins[k].h == 0 || i >= pe_rt.n_slots) continue;
        pe_port *p = pe_port_at((uint32_t)i);
        if (p->gen != (uint32_t)(ins[k].h >> 32) || p->state == PE_PORT_FREE || p->refs_app != 1 || p->temp ||
            !p->site || !p->site->file || strcmp(p->site->file, s->file) != 0)
            continue;
        pe_port_release_app((uint32_t)i, s);
        pe_rt.stats.ir_releases++;
    }
}
