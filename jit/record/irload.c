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
#include "record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/site.h"
#include "../../exec/interp/refmath.h"
#include "../../irformat/msgblob.h"
#include "../../irformat/static_ir.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pe_ir_unit *units;
static _Atomic int n_units;
static uint64_t fingerprint; /* of the registered blobs, in any order */
static void (*units_listener)(void); /* the compile ahead's (pe_ir_on_units_added) */

void pe_ir_on_units_added(void (*fn)(void)) { __atomic_store_n(&units_listener, fn, __ATOMIC_RELEASE); }

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
    /* error messages name the column of a site the IR knows */
    pe_site_columns_from(pe_ir_column_of);
    /* a shared library loaded after pe_init: its regions are compiled ahead too */
    void (*listener)(void) = __atomic_load_n(&units_listener, __ATOMIC_ACQUIRE);
    if (grown && listener) listener();
}

uint64_t pe_ir_fingerprint(void)
{
    pthread_mutex_lock(&lock);
    uint64_t f = fingerprint;
    pthread_mutex_unlock(&lock);
    return f;
}

bool pe_ir_unit_at(int i, pe_ir_unit *out)
{
    pthread_mutex_lock(&lock);
    bool found = i >= 0 && i < n_units;
    if (found) *out = units[i];
    pthread_mutex_unlock(&lock);
    return found;
}

int pe_ir_unit_count(void)
{
    pthread_mutex_lock(&lock);
    int n = n_units;
    pthread_mutex_unlock(&lock);
    return n;
}

/* ------------------------------------------------ facts about a site
 * The runtime knows a site by file, line and function only (PE_HERE has no
 * column), so a fact holds where every IR request on that line of that
 * function to the same entry point says it.  Each fact is a fold over those
 * requests, computed under the lock. */

typedef void (*request_visitor)(const pe_ir_request *rq, const pe_ir_function *fn, uint32_t q, void *ctx);

/* Calls visit for each IR request at the site's line in the site's function
 * (same file name and function: two units compiled as "util.c" from
 * different directories rarely share both). */
static void each_request_at(const pe_site *s, request_visitor visit, void *ctx)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_units; i++) {
        if (strcmp(units[i].file, s->file) != 0) continue;
        for (uint32_t f = 0; f < units[i].n_functions; f++) {
            const pe_ir_function *fn = &units[i].functions[f];
            if (s->func && strcmp(fn->name, s->func) != 0) continue;
            for (uint32_t q = 0; q < fn->n_requests; q++)
                if (fn->requests[q].line == s->line) visit(&fn->requests[q], fn, q, ctx);
        }
    }
    pthread_mutex_unlock(&lock);
}

/* The site's record when the program has static IR and the site a line;
 * NULL otherwise.  *registered: the units registered now (a fact computed
 * with fewer is computed again: a shared library loaded later). */
static pe_site_record *site_with_ir(const pe_site *s, int *registered)
{
    *registered = atomic_load_explicit(&n_units, memory_order_relaxed);
    if (*registered == 0 || !s || !s->file || s->line <= 0) return NULL; /* built without pecc */
    return pe_site_record_of(s);
}

typedef struct {
    int column;
    bool ambiguous;
} column_fold;

static void fold_column(const pe_ir_request *rq, const pe_ir_function *fn, uint32_t q, void *ctx)
{
    (void)fn, (void)q;
    column_fold *c = ctx;
    if (c->column && c->column != rq->column) c->ambiguous = true;
    c->column = (int)rq->column;
}

int pe_ir_column_of(const pe_site *s)
{
    if (!s || !s->file) return 0;
    column_fold c = {0, false};
    each_request_at(s, fold_column, &c);
    return c.ambiguous ? 0 : c.column;
}

/* Operand masks agreed on by every request to one entry point with one
 * arity: the operands released after it (a nested request's temporary, or
 * a variable's last use), and those that are the same source literal. */
typedef struct {
    char api_at[80];
    const char *file; /* the site's, for the warning */
    uint32_t n;
    bool any;
    uint32_t release, literal;
    double *value; /* literal values, PE_SITE_MAX_LITERALS */
} operand_fold;

/* ------------------------------------- last-use marks checked against the IR
 * A kill mark is pecc's claim that a variable's value is not read again.
 * The IR also lists every read of every array variable by a request, so a
 * mark that the IR's own reads contradict — a later read before the
 * variable is defined again, or, inside a loop, a value that would be read
 * again in the next iteration — is wrong (a forged IR, another build's):
 * it is ignored, with one warning.  What the IR does not list (a read the
 * IR lost) the runtime catches where it happens (handle.c: revive). */

static bool reads_variable(const pe_ir_request *rq, const char *name)
{
    for (uint32_t a = 0; a < rq->n_args; a++)
        if (rq->args[a].kind == PE_ARG_VARIABLE && strcmp(rq->args[a].text, name) == 0) return true;
    return false;
}

static bool region_within(const pe_ir_function *fn, int64_t r, int64_t loop);

/* Request index of a read of `name` that contradicts its kill at q, or -1. */
static int64_t read_after_kill(const pe_ir_function *fn, uint32_t q, const char *name)
{
    /* later in evaluation order, until the variable is defined again (by q itself: x = f(x)) */
    if (strcmp(fn->requests[q].result, name) != 0)
        for (uint32_t r = q + 1; r < fn->n_requests; r++) {
            if (reads_variable(&fn->requests[r], name)) return r;
            if (strcmp(fn->requests[r].result, name) == 0) break;
        }
    /* around each loop holding q: the value killed must be defined again in
     * the loop, and no other request may read it before that definition
     * (it would read the previous iteration's value, released at q) */
    for (int64_t l = fn->requests[q].region; l >= 0; l = fn->regions[l].parent) {
        if (fn->regions[l].kind != PE_REGION_LOOP) continue;
        int64_t defined = -1, read_first = -1;
        for (uint32_t r = 0; r < fn->n_requests && defined < 0; r++) {
            if (!region_within(fn, fn->requests[r].region, l)) continue;
            if (r != q && read_first < 0 && reads_variable(&fn->requests[r], name)) read_first = r;
            if (strcmp(fn->requests[r].result, name) == 0) defined = r;
        }
        if (read_first >= 0) return read_first;
        if (defined < 0) return q; /* never defined in the loop: the same value is killed every iteration */
    }
    return -1;
}

static void warn_contradiction(const char *file, int64_t line, const char *name, int64_t at)
{
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&warned)) return;
    pe_log_message(PE_LOG_WARN,
                   "the static IR of %s marks line %lld as the last use of %s, but %s is read again (line %lld): "
                   "last-use marks that contradict the program are ignored (rebuild it with pecc)",
                   file, (long long)line, name, name, (long long)at);
}

static void fold_operands(const pe_ir_request *rq, const pe_ir_function *fn, uint32_t q, void *ctx)
{
    operand_fold *o = ctx;
    if (strcmp(rq->api, o->api_at) != 0 || rq->n_args != o->n) return;
    uint32_t release = 0, literal = 0;
    for (uint32_t a = 0; a < rq->n_args && a < 32; a++) {
        const pe_ir_arg *arg = &rq->args[a];
        bool kill = arg->kind == PE_ARG_VARIABLE && arg->kill;
        int64_t contradiction = kill ? read_after_kill(fn, q, arg->text) : -1;
        if (contradiction >= 0) warn_contradiction(o->file, rq->line, arg->text, fn->requests[contradiction].line);
        if (arg->kind == PE_ARG_REQUEST || (kill && contradiction < 0)) release |= 1u << a;
        if (arg->kind != PE_ARG_LITERAL || a >= PE_SITE_MAX_LITERALS) continue;
        if (!o->any) o->value[a] = arg->value;
        if (memcmp(&o->value[a], &arg->value, sizeof arg->value) == 0) literal |= 1u << a;
    }
    o->release = o->any ? o->release & release : release;
    o->literal = o->any ? o->literal & literal : literal;
    o->any = true;
}

/* ------------------------------------------------------ values read once
 * The fold above asks of a consumer which of its operands die there, and a
 * line with several requests to one entry point (a Black-Scholes line has
 * three pe_mul) keeps only the operands all of them release: the runtime
 * cannot tell which of them a site is (PE_HERE has no column).  The same
 * fact asked of the producer has the other line's ambiguity, and in natural
 * code rarely both: a result the IR shows read exactly once, by an
 * operation or a read that is its last use, is released by whatever request
 * consumes it.  A nested request's result is read once by construction (C
 * hands it straight to the enclosing call); a variable's value is when the
 * only read before the variable is defined again is a last use the IR's own
 * reads do not contradict (read_after_kill), which also rules out a read
 * around a loop's back edge. */

/* Operations release their operands after them (record.c), reads theirs
 * after the copy (api_read.c); views, lifetime calls and maps do not. */
static bool consumes_operands(const pe_ir_request *rq)
{
    for (int op = 0; op < PE_OP__COUNT && *rq->op; op++)
        if (strcmp(pe_op_table[op].name, rq->op) == 0)
            return pe_op_table[op].kind == PE_KIND_MAP || pe_op_table[op].kind == PE_KIND_REDUCE;
    return strcmp(rq->api, "pe_read_at") == 0 || strcmp(rq->api, "pe_read_f32_at") == 0 ||
           strcmp(rq->api, "pe_read_f64_at") == 0;
}

bool pe_ir_read_once(const pe_ir_function *fn, uint32_t q)
{
    const char *name = fn->requests[q].result;
    int reads = 0;
    bool last = false;
    for (uint32_t r = q + 1; r < fn->n_requests; r++) {
        const pe_ir_request *rq = &fn->requests[r];
        for (uint32_t a = 0; a < rq->n_args; a++) {
            const pe_ir_arg *arg = &rq->args[a];
            if (*name ? arg->kind != PE_ARG_VARIABLE || strcmp(arg->text, name) != 0
                      : arg->kind != PE_ARG_REQUEST || arg->request != (int64_t)q)
                continue;
            reads++;
            last = consumes_operands(rq) && (!*name || (arg->kill && read_after_kill(fn, r, name) < 0));
        }
        if (*name && strcmp(rq->result, name) == 0) break;
    }
    return reads == 1 && last;
}

typedef struct {
    const char *op;
    uint32_t n;
    bool any, all;
} once_fold;

static void fold_once(const pe_ir_request *rq, const pe_ir_function *fn, uint32_t q, void *ctx)
{
    once_fold *o = ctx;
    if (strcmp(rq->op, o->op) != 0 || rq->n_args != o->n) return;
    o->any = true;
    o->all = o->all && pe_ir_read_once(fn, q);
}

void pe_ir_mark_read_once(const pe_site *s, pe_op op, int n, pe_array result)
{
    int registered;
    pe_site_record *r = site_with_ir(s, &registered);
    if (!r) return;
    if (r->once_seen != registered) { /* every request of the line making this op agrees */
        once_fold o = {pe_op_table[op].name, (uint32_t)n, false, true};
        each_request_at(s, fold_once, &o);
        r->once = o.any && o.all;
        r->once_seen = registered;
    }
    pe_port *p = pe_port_peek(result, NULL);
    /* the handle returned is the value's only one: a fold may return a port others hold */
    if (r->once && !r->release_refuted && p && p->refs_app == 1 && !p->temp && p->state != PE_PORT_INVALID)
        p->read_once = true;
}

/* The site's operand facts for entry point `api` ("pe_add") with n operands. */
static pe_site_record *operand_facts(const pe_site *s, const char *api, int n)
{
    int registered;
    pe_site_record *r = site_with_ir(s, &registered);
    if (!r || r->operands_seen == registered) return r;
    operand_fold o = {.file = s->file, .n = (uint32_t)n, .value = r->value};
    snprintf(o.api_at, sizeof o.api_at, "%s_at", api);
    each_request_at(s, fold_operands, &o);
    r->release = o.release;
    r->literal = o.literal;
    r->operands_seen = registered;
    return r;
}

/* A handle the dynamic stream lets go of for the IR: live, one reference,
 * not a C-scalar temporary, made by a request of the site's file (a nested
 * request's result, or a variable defined from one). */
static pe_port *agrees(const pe_site *s, pe_array a, uint32_t *idx)
{
    pe_port *p = pe_port_peek(a, idx);
    if (!p || p->refs_app != 1 || p->temp || !p->site || !p->site->file || strcmp(p->site->file, s->file) != 0)
        return NULL;
    return p;
}

void pe_ir_release_operands(const pe_site *s, const char *api, const pe_array *ins, int n)
{
    pe_site_record *facts = operand_facts(s, api, n);
    if (!facts || facts->release_refuted) return;
    for (int k = 0; k < n; k++) {
        uint32_t idx;
        pe_port *p = pe_port_peek(ins[k], NULL);
        bool once = p && p->read_once; /* its producer's fact: this is its one read */
        if (!(facts->release & (1u << k)) && !once) continue;
        if (!agrees(s, ins[k], &idx)) {
            if (once) p->read_once = false; /* read, and still held: the fact is spent */
            continue;
        }
        pe_port_release_app(idx, s);
        pe_port_at(idx)->released_by_ir = true; /* a later use may prove the mark wrong (handle.c) */
        pe_counters.ir_releases++;
    }
}

void pe_ir_mark_literals(const pe_site *s, const char *api, pe_port *const *in, int n)
{
    pe_site_record *facts = operand_facts(s, api, n);
    for (int k = 0; facts && k < n && k < PE_SITE_MAX_LITERALS && facts->literal; k++) {
        if (!(facts->literal & (1u << k))) continue;
        pe_port *p = in[k];
        /* the dynamic operand must be that literal: a C-scalar constant of its value */
        if (!pe_port_is_uniform(p) || !p->temp) continue;
        double want = pe_ref_round_to((pe_dtype)p->dtype, facts->value[k]);
        if (memcmp(&want, &p->value, sizeof want) == 0) p->literal = true;
    }
}

bool pe_ir_read_is_last_use(const pe_site *s, pe_array a)
{
    pe_site_record *facts = operand_facts(s, "pe_read", 1);
    uint32_t idx;
    pe_port *p = pe_port_peek(a, NULL);
    return facts && !facts->release_refuted && ((facts->release & 1u) || (p && p->read_once)) && agrees(s, a, &idx);
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

typedef struct {
    const char *op;
    bool any, all;
} flush_fold;

static void fold_flush(const pe_ir_request *rq, const pe_ir_function *fn, uint32_t q, void *ctx)
{
    flush_fold *f = ctx;
    if (strcmp(rq->op, f->op) != 0) return;
    f->any = true;
    f->all = f->all && starts_batch(fn, q);
}

void pe_ir_begin_request(const pe_site *s, pe_op op)
{
    int registered;
    pe_site_record *facts = site_with_ir(s, &registered);
    if (!facts) return;
    if (facts->flush_seen != registered) { /* every request of the line for this op must start a batch */
        flush_fold f = {pe_op_table[op].name, false, true};
        each_request_at(s, fold_flush, &f);
        facts->flush = f.any && f.all;
        facts->flush_seen = registered;
    }
    /* where a batch has to be cut anyway (the queue is half way to its
     * limit), cut it at a loop header: every batch then starts at the same
     * point of the loop and holds the same number of iterations, so the trace
     * cache serves them from the second on; shorter loops stay one batch,
     * fused across their iterations */
    if (facts->flush && (int64_t)pe_rec.queue_len * 2 >= pe_rt.queue_limit && pe_rec.block_depth == 0) pe_queue_flush();
}
