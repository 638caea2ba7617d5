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
#include "../exec/executor.h"
#include "../exec/refmath.h"
#include "../irformat/msgblob.h"
#include "../irformat/static_ir.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pe_ir_unit *units;
static _Atomic int n_units;
static uint64_t fingerprint; /* of the registered blobs, in any order */

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
        fingerprint += pe_blob_checksum(blob, len);
        atomic_fetch_add(&n_units, 1);
    } else {
        pe_ir_free(&u);
    }
    pthread_mutex_unlock(&lock);
}

uint64_t pe_ir_fingerprint(void)
{
    pthread_mutex_lock(&lock);
    uint64_t f = fingerprint;
    pthread_mutex_unlock(&lock);
    return f;
}

int pe_ir_unit_count(void)
{
    pthread_mutex_lock(&lock);
    int n = n_units;
    pthread_mutex_unlock(&lock);
    return n;
}

/* A unit's function is the site's: same file name and function (two units
 * compiled as "util.c" from different directories rarely share both). */
static bool same_function(const pe_ir_unit *u, const pe_ir_function *fn, const pe_site *s)
{
    return strcmp(u->file, s->file) == 0 && (!s->func || strcmp(fn->name, s->func) == 0);
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
            if (!same_function(&units[i], fn, s)) continue;
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
            if (!same_function(&units[i], fn, s)) continue;
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
    pe_site_record *facts = pe_site_record_of(s);
    if (!facts) return;
    if (facts->release_seen != registered) {
        facts->release = release_mask(s, api, n);
        facts->release_seen = registered;
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

/* Whether request q of fn begins a closed loop's body (the first request of
 * an iteration, in evaluation order) or is the first after such a loop. */
static bool region_within(const pe_ir_function *fn, int64_t r, int64_t loop)
{
    for (; r >= 0; r = fn->regions[r].parent)
        if (r == loop) return true;
    return false;
}

static bool starts_batch(const pe_ir_function *fn, uint32_t q)
{
    for (uint32_t l = 1; l < fn->n_regions; l++) {
        if (fn->regions[l].kind != PE_REGION_LOOP || !fn->regions[l].closed) continue;
        int64_t first = -1, last = -1;
        for (uint32_t i = 0; i < fn->n_requests; i++)
            if (region_within(fn, fn->requests[i].region, l)) {
                if (first < 0) first = i;
                last = i;
            }
        if (first < 0) continue;
        if ((int64_t)q == first) return true;
        if ((int64_t)q == last + 1 && !region_within(fn, fn->requests[q].region, l)) return true;
    }
    return false;
}

/* Every IR request at the site's line for this op must start a batch. */
static bool flush_before(const pe_site *s, const char *op)
{
    bool any = false, all = true;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_units && all; i++) {
        if (strcmp(units[i].file, s->file) != 0) continue;
        for (uint32_t f = 0; f < units[i].n_functions && all; f++) {
            const pe_ir_function *fn = &units[i].functions[f];
            if (!same_function(&units[i], fn, s)) continue;
            for (uint32_t q = 0; q < fn->n_requests && all; q++) {
                if (fn->requests[q].line != s->line || strcmp(fn->requests[q].op, op) != 0) continue;
                any = true;
                all = starts_batch(fn, q);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return any && all;
}

void pe_ir_begin_request(const pe_site *s, pe_op op)
{
    int registered = atomic_load_explicit(&n_units, memory_order_relaxed);
    if (registered == 0 || !s || !s->file || s->line <= 0) return;
    pe_site_record *facts = pe_site_record_of(s);
    if (!facts) return;
    if (facts->flush_seen != registered) {
        facts->flush = flush_before(s, pe_op_table[op].name);
        facts->flush_seen = registered;
    }
    /* where a batch has to be cut anyway (the queue is half way to its
     * limit), cut it at a loop header: every batch then starts at the same
     * point of the loop and holds the same number of iterations, so the trace
     * cache serves them from the second on; shorter loops stay one batch,
     * fused across their iterations */
    if (facts->flush && (int64_t)pe_rt.queue_len * 2 >= pe_rt.queue_limit && pe_rt.block_depth == 0) pe_queue_flush();
}

/* The operands every IR request at the site's line to this entry point
 * gives as the same source literal. */
static uint32_t literal_mask(const pe_site *s, const char *api, int n, double *value)
{
    char api_at[80];
    snprintf(api_at, sizeof api_at, "%s_at", api);
    uint32_t mask = 0;
    bool any = false;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_units; i++) {
        for (uint32_t f = 0; f < units[i].n_functions; f++) {
            const pe_ir_function *fn = &units[i].functions[f];
            if (!same_function(&units[i], fn, s)) continue;
            for (uint32_t q = 0; q < fn->n_requests; q++) {
                const pe_ir_request *rq = &fn->requests[q];
                if (rq->line != s->line || strcmp(rq->api, api_at) != 0 || rq->n_args != (uint32_t)n) continue;
                uint32_t m = 0;
                for (uint32_t a = 0; a < rq->n_args && a < PE_SITE_MAX_LITERALS; a++) {
                    if (rq->args[a].kind != PE_ARG_LITERAL) continue;
                    if (!any) value[a] = rq->args[a].value;
                    if (memcmp(&value[a], &rq->args[a].value, sizeof value[a]) == 0) m |= 1u << a;
                }
                mask = any ? mask & m : m;
                any = true;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return mask;
}

void pe_ir_mark_literals(const pe_site *s, const char *api, pe_port *const *in, int n)
{
    int registered = atomic_load_explicit(&n_units, memory_order_relaxed);
    if (registered == 0 || !s || !s->file || s->line <= 0) return;
    pe_site_record *facts = pe_site_record_of(s);
    if (!facts) return;
    if (facts->literal_seen != registered) {
        facts->literal = literal_mask(s, api, n, facts->value);
        facts->literal_seen = registered;
    }
    for (int k = 0; k < n && k < PE_SITE_MAX_LITERALS && facts->literal; k++) {
        if (!(facts->literal & (1u << k))) continue;
        pe_port *p = in[k];
        /* the dynamic operand must be that literal: a C-scalar constant of its value */
        if (p->op != PE_OP_constant || !p->temp || p->buf) continue;
        double want = pe_ref_round_to((pe_dtype)p->dtype, facts->value[k]);
        if (memcmp(&want, &p->value, sizeof want) == 0) p->literal = true;
    }
}

/* Below this a copy costs less than the bookkeeping. */
#define MIN_IN_PLACE_BYTES 16384

void pe_ir_lend_read_buffer(const pe_site *s, pe_array a, void *dst, size_t dst_bytes)
{
    int registered = atomic_load_explicit(&n_units, memory_order_relaxed);
    if (registered == 0 || !s || !s->file || s->line <= 0 || !dst || dst_bytes < MIN_IN_PLACE_BYTES) return;
    if (pe_rt.executor == &pe_cuda_executor) return; /* a GPU result is copied straight into dst already */
    pe_site_record *facts = pe_site_record_of(s);
    if (!facts) return;
    if (facts->release_seen != registered) {
        facts->release = release_mask(s, "pe_read", 1);
        facts->release_seen = registered;
    }
    if (!(facts->release & 1u)) return; /* this read is not the value's last use */
    uint64_t i = (a.h & 0xffffffffu) - 1;
    if (a.h == 0 || i >= pe_rt.n_slots) return;
    pe_port *p = pe_port_at((uint32_t)i);
    /* still to be computed, in the batch being recorded, element-wise, with no
     * consumer and no other reference: nothing else will ever read its buffer */
    if (p->gen != (uint32_t)(a.h >> 32) || p->state != PE_PORT_PENDING || p->batch != pe_rt.batch_epoch ||
        p->refs_app != 1 || p->refs_int > 1 || p->maps || p->buf || pe_op_table[p->op].kind != PE_KIND_MAP ||
        (size_t)p->numel * pe_dtype_size((pe_dtype)p->dtype) != dst_bytes || !p->site || !p->site->file ||
        strcmp(p->site->file, s->file) != 0)
        return;
    pe_port_lend_buffer(p, dst);
    pe_rt.stats.reads_in_place++;
}
