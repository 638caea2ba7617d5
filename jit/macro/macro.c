/* macro.c — the macro cache (seed 000's "macro cache"; PE_MACRO in pe.h).
 *
 * A code reuse section is a statement written at one place of the program
 * (its site).  pe_macro_begin_at looks the execution's key up among the
 * section's entries: the inputs' signature (dtype, shape, whether uniform
 * constant and then its value and weakness, since record-time folds
 * specialise on them) and the control bytes.  A miss runs the body under
 * a recording frame (jit/record/macro_rec.c takes the notes); at the
 * body's end (pe_macro_end_at, the for-loop's step of PE_MACRO) the
 * section keeps one reference per output, releases everything else the
 * body held, and files the recording as an entry.  A hit replays the entry
 * in one call, the body skipped: each recorded operation becomes a pending
 * port over the new inputs with its COMPUTE entry, in the order the body
 * made them, the outputs are published, the body's other values released
 * (RELEASE entries) — the same queue the body would make, so the batch's
 * trace key repeats and the trace cache hands back the compiled program
 * sequence; the entries' key bytes are appended in one piece the entry made
 * when filed (jit/trace/trace.c, pe_trace_piece).  Replays never go through the API's checks, folds or the
 * static IR's facts: those were decided once, when recording, for this
 * signature.
 *
 * The entries of every section share one LRU bound (PE_MACRO_CACHE).
 * Errors (PE_E_MACRO, at the user's line): host reads and writes inside a
 * body, a body that releases or reassigns an input, recursion of the same
 * section, outputs the body did not make, and a body left without reaching
 * its end (break, return, goto): found when the section begins again in
 * the same function, at the end of a section around it, or at the next host
 * access.  A recording that raised any error is not cached; one with a
 * PE_E_MACRO error found at its end gives invalid outputs and releases what
 * its body held.  A host access abandons the thread's open sections at once
 * (their bodies may have been left for good): they go on as plain code, and
 * what they make is the application's. */
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "../record/macro_rec.h"
#include "../record/record.h"
#include "../record/tape.h"
#include "../trace/trace.h"
#include "../../exec/base/error.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"
#include "../../profiler/collect.h"

#define NO_REF UINT32_MAX
#define NO_SLOT UINT32_MAX
#define MAX_INPUTS 4096
#define SECTION_BUCKETS 256

typedef struct macro_section macro_section;

typedef struct macro_entry {
    struct macro_entry *next;               /* the section's entries, most recently used first */
    struct macro_entry *lru_prev, *lru_next; /* every entry, most recently used first */
    macro_section *section;
    uint8_t *signature;
    size_t signature_len;
    int n_ins, n_outs;
    pe_macro_item *items;
    size_t n_items;
    uint32_t *out_refs;
    uint32_t *released; /* items the body held and the section releases at its end */
    size_t n_released;
    uint32_t *ports;    /* a replay's scratch: the port of each ref */
    pe_trace_piece *piece; /* a replay's part of the trace key, or NULL: keyed entry by entry */
} macro_entry;

struct macro_section {
    macro_section *next; /* in its bucket */
    const pe_site *site;
    const char *name;
    macro_entry *entries;
};

static struct {
    macro_section *buckets[SECTION_BUCKETS];
    macro_entry *lru_head, *lru_tail;
    size_t n_entries, limit;
    uint64_t next_serial;
    uint8_t *key;      /* the key being looked up */
    size_t key_cap;
    pe_macro_replay_operand_fn replay_operand;
} mc;

/* ------------------------------------------------------------ the cache */

static void lru_unlink(macro_entry *e)
{
    if (e->lru_prev) e->lru_prev->lru_next = e->lru_next;
    else mc.lru_head = e->lru_next;
    if (e->lru_next) e->lru_next->lru_prev = e->lru_prev;
    else mc.lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_push_front(macro_entry *e)
{
    e->lru_next = mc.lru_head;
    e->lru_prev = NULL;
    if (mc.lru_head) mc.lru_head->lru_prev = e;
    mc.lru_head = e;
    if (!mc.lru_tail) mc.lru_tail = e;
}

static void entry_free(macro_entry *e)
{
    for (size_t i = 0; i < e->n_items; i++) {
        if (!e->items[i].held) continue;
        pe_counters.live_arrays++; /* counted again as it goes (pe_port_unref may free it) */
        pe_port_unref(e->items[i].port);
    }
    free(e->signature);
    free(e->items);
    free(e->out_refs);
    free(e->released);
    free(e->ports);
    pe_trace_piece_free(e->piece);
    free(e);
}

/* Removes e from its section and the LRU list and frees it. */
static void entry_drop(macro_entry *e)
{
    macro_entry **at = &e->section->entries;
    while (*at != e) at = &(*at)->next;
    *at = e->next;
    lru_unlink(e);
    mc.n_entries--;
    entry_free(e);
}

static macro_section *section_of(const pe_site *site, const char *name)
{
    size_t b = ((uintptr_t)site >> 4) % SECTION_BUCKETS;
    for (macro_section *sec = mc.buckets[b]; sec; sec = sec->next)
        if (sec->site == site) return sec;
    macro_section *sec = calloc(1, sizeof *sec);
    if (!sec) return NULL;
    sec->site = site;
    sec->name = name;
    sec->next = mc.buckets[b];
    mc.buckets[b] = sec;
    return sec;
}

void pe_macro_start(int entries, pe_macro_replay_operand_fn replay_operand)
{
    mc.limit = entries > 0 ? (size_t)entries : 0;
    mc.replay_operand = replay_operand;
}

static void free_frames_here(void)
{
    while (pe_macro_top) {
        pe_macro_frame *f = pe_macro_top;
        pe_macro_top = f->outer;
        pe_macro_frame_free(f);
    }
}

void pe_macro_stop(void)
{
    free_frames_here();
    for (size_t b = 0; b < SECTION_BUCKETS; b++) {
        while (mc.buckets[b]) {
            macro_section *sec = mc.buckets[b];
            while (sec->entries) entry_drop(sec->entries);
            mc.buckets[b] = sec->next;
            free(sec);
        }
    }
    free(mc.key);
    mc.key = NULL;
    mc.key_cap = 0;
}

/* ----------------------------------------------------------- signatures */

static bool key_put(size_t *len, const void *bytes, size_t n)
{
    if (!PE_GROW(mc.key, mc.key_cap, *len + n)) return false;
    memcpy(mc.key + *len, bytes, n);
    *len += n;
    return true;
}

/* The key of this execution in mc.key: the number of inputs and outputs,
 * each input's dtype, shape, constness (a uniform constant's value and
 * weakness: folds and type promotion depended on them), the control bytes. */
static bool make_key(pe_port *const *in, int n_ins, int n_outs, const void *ctl, size_t ctl_bytes, size_t *len)
{
    *len = 0;
    int32_t counts[2] = {n_ins, n_outs};
    uint64_t nctl = ctl_bytes;
    bool ok = key_put(len, counts, sizeof counts) && key_put(len, &nctl, sizeof nctl);
    for (int k = 0; ok && k < n_ins; k++) {
        const pe_port *p = in[k];
        uint8_t head[4] = {p->dtype, p->rank, pe_port_is_uniform(p), p->weak};
        ok = key_put(len, head, sizeof head) && key_put(len, p->shape, sizeof(int64_t) * p->rank);
        if (ok && head[2]) ok = key_put(len, &p->value, sizeof p->value);
    }
    return ok && (ctl_bytes == 0 || key_put(len, ctl, ctl_bytes));
}

static macro_entry *find_entry(macro_section *sec, size_t len)
{
    for (macro_entry **at = &sec->entries; *at; at = &(*at)->next) {
        macro_entry *e = *at;
        if (e->signature_len != len || memcmp(e->signature, mc.key, len) != 0) continue;
        *at = e->next; /* most recently used first, in its section and overall */
        e->next = sec->entries;
        sec->entries = e;
        lru_unlink(e);
        lru_push_front(e);
        return e;
    }
    return NULL;
}

/* -------------------------------------------------------------- outputs */

static void outputs_invalid(const pe_site *s, pe_array *outs, int n_outs, pe_status code, bool raised,
                            const char *message)
{
    if (!outs) return;
    for (int j = 0; j < n_outs; j++) outs[j] = pe_publish_invalid(s, PE_OP_constant, code, raised, message);
}

static void outputs_after_error(const pe_site *s, pe_array *outs, int n_outs)
{
    const pe_error *e = pe_last_error();
    outputs_invalid(s, outs, n_outs, e ? e->code : PE_E_MACRO, true, e ? e->message : NULL);
}

/* --------------------------------------------------------------- replay */

/* The fields pe_port_describe gives a recorded operation's port, as the
 * item holds them (its operands aside). */
static void describe(const pe_macro_item *it, pe_port *p)
{
    p->op = it->op, p->dtype = it->dtype, p->ctype = it->ctype, p->rank = it->rank, p->n_in = it->n_in;
    for (int d = 0; d < it->rank; d++) p->shape[d] = it->shape[d];
    for (int k = 0; k < it->n_params; k++) p->param[k] = it->param[k]; /* the rest is zero, as recorded */
    p->numel = it->numel;
    p->weak = it->weak;
    p->site = it->site;
}

/* The trace key of the entries the replay queued from `base`. */
static void key_replay(const macro_entry *e, size_t base)
{
    if (pe_rec.queue_len == base) return; /* nothing queued (the queue may not exist yet) */
    pe_trace_append_piece(&pe_rec.trace_key, e->piece, pe_rec.queue + base, pe_rec.queue_len - base, base);
}

/* A replay stopped at item `made`: out of memory (raised here), or an
 * error a draw raised already (`raised`). */
static void replay_failed(macro_entry *e, size_t base, size_t made, const pe_site *s, pe_array *outs, bool raised)
{
    key_replay(e, base);
    if (!raised) pe_raise(s, PE_E_NOMEM, "PE_MACRO", "out of memory replaying section %s", e->section->name);
    for (size_t i = 0; i < made; i++) {
        uint32_t idx = e->ports[e->n_ins + i];
        pe_port *p = pe_port_at(idx);
        if (e->items[i].kind == PE_MACRO_ITEM_OP && p->state == PE_PORT_PENDING && p->batch == pe_rec.batch_epoch)
            pe_queue_push(PE_ENTRY_RELEASE, idx);
    }
    outputs_after_error(s, outs, e->n_outs);
}

/* The queue the body would make, without the body: a pending port per
 * operation, its COMPUTE entry, the outputs published, RELEASE entries for
 * the body's other values; keyed in one piece at the end. */
static void replay(macro_entry *e, const pe_site *s, const uint32_t *in_idx, pe_array *outs)
{
    size_t base = pe_rec.queue_len;
    for (int k = 0; k < e->n_ins; k++) e->ports[k] = in_idx[k];
    for (size_t i = 0; i < e->n_items; i++) {
        pe_macro_item *it = &e->items[i];
        if (it->kind == PE_MACRO_ITEM_CONSTANT) { /* held by the entry; a draw number is a new one each time */
            uint32_t q = mc.replay_operand ? mc.replay_operand(s, it->port) : it->port;
            if (q == NO_SLOT) return replay_failed(e, base, i, s, outs, true);
            e->ports[e->n_ins + i] = q;
            continue;
        }
        uint32_t idx = pe_port_new();
        if (idx == NO_SLOT) return replay_failed(e, base, i, s, outs, false);
        e->ports[e->n_ins + i] = idx;
        pe_port *p = pe_port_at(idx);
        if (it->fresh) it->param[it->fresh_param] = it->fresh(it->fresh_ctx, it->param[it->fresh_param]);
        describe(it, p);
        for (int k = 0; k < it->n_in; k++) {
            p->in[k] = e->ports[it->in[k]];
            pe_port_at(p->in[k])->refs_int++; /* pe_port_ref: the pending consumer's */
        }
        if (pe_prof_on) pe_prof_call(it->site);
        if (!pe_queue_push_unkeyed(PE_ENTRY_COMPUTE, idx)) {
            pe_port_drop_inputs(p);
            p->state = PE_PORT_INVALID;
            p->err_code = PE_E_NOMEM;
            pe_port_maybe_free(idx);
            return replay_failed(e, base, i, s, outs, false);
        }
    }
    if (pe_tape_variables) /* the derivative tape sees the operations the body would have recorded */
        for (size_t i = 0; i < e->n_items; i++)
            if (e->items[i].kind == PE_MACRO_ITEM_OP) pe_tape_note(e->ports[e->n_ins + i], s);
    for (int j = 0; j < e->n_outs; j++) outs[j] = pe_publish(e->ports[e->out_refs[j]]);
    for (size_t r = 0; r < e->n_released; r++) {
        uint32_t idx = e->ports[e->n_ins + e->released[r]];
        pe_port *p = pe_port_at(idx);
        if (p->refs_app == 0 && p->state == PE_PORT_PENDING && p->batch == pe_rec.batch_epoch)
            pe_queue_push_unkeyed(PE_ENTRY_RELEASE, idx);
    }
    /* then the nodes of the values the body let go: what they held is let go
     * in turn, each value once, its RELEASE entry made then */
    for (size_t r = 0; pe_tape_variables && r < e->n_released; r++) {
        uint32_t idx = e->ports[e->n_ins + e->released[r]];
        if (pe_port_at(idx)->refs_app == 0 && pe_port_at(idx)->tape) pe_tape_drop(idx);
    }
    key_replay(e, base);
    pe_counters.macro_hits++;
    pe_counters.macro_ops_replayed += e->n_items;
    pe_check_retained(s);
    pe_queue_maybe_flush();
}

/* The trace-key piece of e's replays: its operations' COMPUTE entries (an
 * operand made by an earlier operation named by that one's entry, an input
 * or a constant left to each replay), then the RELEASE entries.  NULL
 * (replays keyed entry by entry) when a parameter takes a fresh value per
 * replay, or out of memory. */
static pe_trace_piece *make_piece(const macro_entry *e)
{
    for (size_t i = 0; i < e->n_items; i++)
        if (e->items[i].fresh) return NULL;
    pe_trace_piece *pc = pe_trace_piece_new();
    uint32_t *entry_of = malloc((e->n_items ? e->n_items : 1) * sizeof *entry_of);
    if (!pc || !entry_of) {
        pe_trace_piece_free(pc);
        free(entry_of);
        return NULL;
    }
    uint32_t n_entries = 0;
    for (size_t i = 0; i < e->n_items; i++) {
        const pe_macro_item *it = &e->items[i];
        entry_of[i] = it->kind == PE_MACRO_ITEM_OP ? n_entries++ : PE_TRACE_PIECE_OUTSIDE;
        if (it->kind != PE_MACRO_ITEM_OP) continue;
        pe_port p;
        memset(&p, 0, sizeof p);
        describe(it, &p);
        uint32_t rel[PE_PORT_MAX_INPUTS];
        for (int k = 0; k < it->n_in; k++)
            rel[k] = it->in[k] < (uint32_t)e->n_ins ? PE_TRACE_PIECE_OUTSIDE : entry_of[it->in[k] - e->n_ins];
        pe_trace_piece_compute(pc, &p, rel);
    }
    for (size_t r = 0; r < e->n_released; r++) pe_trace_piece_position(pc, PE_ENTRY_RELEASE, entry_of[e->released[r]]);
    free(entry_of);
    return pc;
}

/* ------------------------------------------------------------ recording */

static pe_macro_frame *push_frame(macro_section *sec, const pe_site *s, const void *state, bool records)
{
    pe_macro_frame *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->outer = pe_macro_top;
    f->section = sec;
    f->site = s;
    f->name = sec->name;
    f->serial = ++mc.next_serial;
    f->records = records;
    f->state = state;
    f->capture = records ? f : pe_macro_capturing();
    f->errors_at_begin = pe_errors_raised_here();
    f->scope_depth = pe_scope_depth_here();
    pe_macro_top = f;
    return f;
}

static bool frame_inputs(pe_macro_frame *f, const pe_array *ins, const uint32_t *in_idx, int n_ins)
{
    f->n_ins = n_ins;
    size_t n = n_ins ? (size_t)n_ins : 1;
    f->in_handles = malloc(n * sizeof *f->in_handles);
    f->in_port = malloc(n * sizeof *f->in_port);
    f->in_gen = malloc(n * sizeof *f->in_gen);
    f->in_body_refs = calloc(n, sizeof *f->in_body_refs);
    if (!f->in_handles || !f->in_port || !f->in_gen || !f->in_body_refs) return false;
    for (int k = 0; k < n_ins; k++) {
        f->in_handles[k] = ins[k];
        f->in_port[k] = in_idx[k];
        f->in_gen[k] = pe_port_at(in_idx[k])->gen;
    }
    return true;
}

/* Releases the references f's body still holds (its items', the inputs'). */
static void release_body_refs(pe_macro_frame *f, const pe_site *s)
{
    for (size_t i = 0; i < f->n_items; i++) {
        pe_macro_item *it = &f->items[i];
        for (; it->body_refs > 0; it->body_refs--) pe_port_release_app(it->port, s);
    }
    for (int k = 0; k < f->n_ins; k++)
        for (; f->in_body_refs[k] > 0; f->in_body_refs[k]--) pe_port_release_app(f->in_port[k], s);
}

/* The output handles: each keeps one reference the body held (or a new
 * one: an input given back, an output named twice) and goes to the
 * thread's scope, as the result of a request does. */
static void keep_outputs(pe_macro_frame *f, const pe_array *outs, const uint32_t *out_refs)
{
    for (int j = 0; j < f->n_outs; j++) {
        uint32_t ref = out_refs[j], idx;
        if (ref == NO_REF || !pe_port_peek(outs[j], &idx)) continue;
        int32_t *held = ref < (uint32_t)f->n_ins ? &f->in_body_refs[ref] : &f->items[ref - f->n_ins].body_refs;
        if (*held > 0) (*held)--;
        else pe_port_at(idx)->refs_app++;
        pe_scope_register(idx);
    }
}

static macro_entry *make_entry(pe_macro_frame *f, const uint32_t *out_refs)
{
    macro_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->n_ins = f->n_ins;
    e->n_outs = f->n_outs;
    e->out_refs = malloc((size_t)f->n_outs * sizeof *e->out_refs);
    e->released = malloc((f->n_items ? f->n_items : 1) * sizeof *e->released);
    e->ports = malloc(((size_t)f->n_ins + f->n_items + 1) * sizeof *e->ports);
    e->items = malloc((f->n_items ? f->n_items : 1) * sizeof *e->items);
    if (!e->out_refs || !e->released || !e->ports || !e->items) {
        free(e->out_refs), free(e->released), free(e->ports), free(e->items), free(e);
        return NULL;
    }
    memcpy(e->out_refs, out_refs, (size_t)f->n_outs * sizeof *out_refs);
    memcpy(e->items, f->items, f->n_items * sizeof *e->items);
    for (size_t i = 0; i < f->n_items; i++) {
        bool output = false;
        for (int j = 0; j < f->n_outs; j++) output = output || out_refs[j] == f->n_ins + i;
        if (f->items[i].kind == PE_MACRO_ITEM_OP && f->items[i].published && !output) e->released[e->n_released++] = (uint32_t)i;
        if (!f->items[i].held) continue;
        /* every replay uses the port itself (a value never changes): the entry takes the frame's
           reference, and the port is not counted among the arrays alive (pe_stats.live_arrays),
           like the compiled code it stands beside */
        f->items[i].held = false;
        pe_counters.live_arrays--;
    }
    e->n_items = f->n_items;
    e->piece = make_piece(e);
    e->signature = f->signature; /* the entry's key */
    e->signature_len = f->signature_len;
    f->signature = NULL;
    return e;
}

static void file_entry(macro_section *sec, macro_entry *e)
{
    e->section = sec;
    e->next = sec->entries;
    sec->entries = e;
    lru_push_front(e);
    mc.n_entries++;
    while (mc.n_entries > mc.limit && mc.lru_tail) {
        entry_drop(mc.lru_tail);
        pe_counters.macro_evictions++;
    }
}

/* The body of recording frame f (popped) ended at s. */
static void finish_recording(pe_macro_frame *f, const pe_site *s, pe_macro_state *st)
{
    f->n_outs = st->n_outs;
    for (int k = 0; k < f->n_ins && !f->macro_error; k++) {
        if (st->ins[k].h == f->in_handles[k].h) continue;
        f->macro_error = true;
        pe_raise(s, PE_E_MACRO, "PE_MACRO", "the body of section %s reassigned its input %d: a body must not change its inputs",
                 f->name, k);
    }
    bool raised = pe_errors_raised_here() != f->errors_at_begin;
    uint32_t *out_refs = malloc((size_t)st->n_outs * sizeof *out_refs);
    if (!out_refs) {
        f->failed = true;
        pe_raise(s, PE_E_NOMEM, "PE_MACRO", "out of memory ending section %s", f->name);
    }
    for (int j = 0; out_refs && j < st->n_outs; j++) {
        uint32_t idx;
        pe_port *p = pe_port_peek(st->outs[j], &idx);
        out_refs[j] = p && p->refs_app > 0 ? pe_macro_ref_of(f, idx) : NO_REF;
        if (out_refs[j] != NO_REF || raised || f->macro_error) continue; /* an invalid output: its error was raised */
        f->macro_error = true;
        pe_raise(s, PE_E_MACRO, "PE_MACRO", "the body of section %s did not assign outs[%d] an array it made (or an input)",
                 f->name, j);
    }
    if (f->macro_error || !out_refs) {
        release_body_refs(f, s);
        outputs_after_error(s, st->outs, st->n_outs);
    } else {
        keep_outputs(f, st->outs, out_refs);
        for (int j = 0; j < st->n_outs; j++) /* not assigned, after an error the body raised */
            if (out_refs[j] == NO_REF && st->outs[j].h == 0) outputs_after_error(s, &st->outs[j], 1);
        if (!f->failed && !raised && mc.limit > 0) {
            macro_entry *e = make_entry(f, out_refs);
            if (e) file_entry(f->section, e);
        }
        release_body_refs(f, s);
    }
    free(out_refs);
    pe_macro_frame_free(f);
}

/* Frames above `keep` (exclusive; NULL: all) were left without reaching
 * their end: dropped, their recordings lost (what their bodies made stays
 * the application's, as plain code's). */
static void abandon_frames(pe_macro_frame *keep)
{
    while (pe_macro_top && pe_macro_top != keep) {
        pe_macro_frame *f = pe_macro_top;
        pe_macro_top = f->outer;
        pe_macro_frame_free(f);
    }
}

bool pe_macro_refuse_host(const pe_site *s, const char *api)
{
    if (!pe_macro_top) return false;
    pe_macro_frame *f = pe_macro_top;
    pe_raise(s, PE_E_MACRO, api,
             "inside the body of section %s (%s:%d): a section's body may not read or write host data (or its body was "
             "left by break, return or goto without reaching its end); the section is abandoned",
             f->name, f->site->file, f->site->line);
    abandon_frames(NULL);
    return true;
}

/* --------------------------------------------------------- entry points */

pe_macro_state pe_macro_begin_at(const pe_site *s, const void *self, const char *name, pe_array *ins,
                                 int n_ins, pe_array *outs, int n_outs, const void *ctl, size_t ctl_bytes)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    pe_macro_state st = {0, 0, ins, n_ins, outs, n_outs};
    const char *api = "PE_MACRO";
    if (!pe_require_init(s, api)) return st;
    if (n_ins < 0 || n_ins > MAX_INPUTS || n_outs < 1 || n_outs > MAX_INPUTS || (n_ins && !ins) || !outs ||
        (ctl_bytes && !ctl)) {
        pe_raise(s, PE_E_ARG, api, "section %s: bad arguments (%d inputs at %p, %d outputs at %p, %zu control bytes at %p)",
                 name ? name : "?", n_ins, (void *)ins, n_outs, (void *)outs, ctl_bytes, ctl);
        if (outs && n_outs > 0 && n_outs <= MAX_INPUTS) outputs_after_error(s, outs, n_outs);
        return st;
    }
    macro_section *sec = section_of(s, name ? name : "?");
    if (!sec) {
        pe_raise(s, PE_E_NOMEM, api, "out of memory");
        outputs_after_error(s, outs, n_outs);
        return st;
    }
    for (pe_macro_frame *f = pe_macro_top; f; f = f->outer) {
        if (f->section != sec) continue;
        if (f->state == self) { /* the same statement again, its last execution never reached its end */
            pe_raise(s, PE_E_MACRO, api,
                     "section %s begins again but its last execution's body was left without reaching its end (break, "
                     "return or goto): that execution is abandoned", sec->name);
            abandon_frames(f->outer);
            break;
        }
        pe_raise(s, PE_E_MACRO, api, "section %s begins again inside its own body (recursion): its outputs are invalid",
                 sec->name);
        outputs_after_error(s, outs, n_outs);
        return st;
    }
    pe_port *in[MAX_INPUTS > 64 ? 64 : MAX_INPUTS], **inp = in;
    uint32_t in_idx_small[64], *in_idx = in_idx_small;
    if (n_ins > 64) {
        inp = malloc((size_t)n_ins * sizeof *inp);
        in_idx = malloc((size_t)n_ins * sizeof *in_idx);
    }
    if (!inp || !in_idx) {
        pe_raise(s, PE_E_NOMEM, api, "out of memory");
        outputs_after_error(s, outs, n_outs);
        goto done;
    }
    for (int k = 0; k < n_ins; k++) {
        inp[k] = pe_port_lookup(s, ins[k], api, &in_idx[k]);
        if (!inp[k]) {
            outputs_after_error(s, outs, n_outs);
            goto done;
        }
    }
    for (int k = 0; k < n_ins; k++) {
        if (inp[k]->state != PE_PORT_INVALID) continue;
        outputs_invalid(s, outs, n_outs, inp[k]->err_code, inp[k]->err_raised, inp[k]->err_msg);
        goto done;
    }
    if (pe_macro_capturing()) { /* part of an outer section's recording: the body runs, noted there */
        pe_macro_frame *f = push_frame(sec, s, self, false);
        if (f && frame_inputs(f, ins, in_idx, n_ins)) {
            st.serial = f->serial;
            st.run_body = 1;
        } else {
            if (f) pe_macro_top = f->outer, pe_macro_frame_free(f);
            pe_raise(s, PE_E_NOMEM, api, "out of memory");
            outputs_after_error(s, outs, n_outs);
        }
        goto done;
    }
    size_t key_len = 0;
    bool keyed = make_key(inp, n_ins, n_outs, ctl, ctl_bytes, &key_len);
    macro_entry *e = keyed && mc.limit > 0 ? find_entry(sec, key_len) : NULL;
    if (e) {
        for (int k = 0; k < n_ins; k++) {
            if (pe_demand(s, in_idx[k], false, api)) continue; /* a deferred input: computed again */
            outputs_after_error(s, outs, n_outs);
            goto done;
        }
        replay(e, s, in_idx, outs);
        goto done;
    }
    pe_counters.macro_records++;
    pe_macro_frame *f = push_frame(sec, s, self, true);
    if (f && frame_inputs(f, ins, in_idx, n_ins) && keyed && (f->signature = malloc(key_len ? key_len : 1))) {
        memcpy(f->signature, mc.key, key_len);
        f->signature_len = key_len;
    } else if (f) {
        f->failed = true; /* out of memory: the body runs, uncached */
        if (!f->in_body_refs) {
            pe_macro_top = f->outer;
            pe_macro_frame_free(f);
            f = NULL;
        }
    }
    if (!f) {
        pe_raise(s, PE_E_NOMEM, api, "out of memory");
        outputs_after_error(s, outs, n_outs);
        goto done;
    }
    for (int j = 0; j < n_outs; j++) outs[j] = (pe_array){0};
    st.serial = f->serial;
    st.run_body = 1;
done:
    if (inp != in) free(inp);
    if (in_idx != in_idx_small) free(in_idx);
    return st;
}

int pe_macro_end_at(const pe_site *s, pe_macro_state *st)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!st || !pe_rt.initialised) return 0;
    pe_macro_frame *f = pe_macro_top;
    while (f && f->serial != st->serial) f = f->outer;
    if (!f) /* abandoned by an error raised meanwhile (a host access): the body ran as plain code, what it made
               (the outputs too) is the application's */
        return 0;
    if (f != pe_macro_top) {
        pe_macro_frame *inner = pe_macro_top;
        while (inner->outer != f) inner = inner->outer;
        pe_raise(inner->site, PE_E_MACRO, "PE_MACRO",
                 "the body of section %s was left without reaching its end (break, return or goto): section %s (%s:%d) "
                 "ended around it", inner->name, f->name, s->file, s->line);
        abandon_frames(f);
        pe_macro_frame *rec = f->records ? f : f->capture; /* the recording this belongs to: its outputs invalid */
        if (rec) rec->failed = rec->macro_error = true;
    }
    pe_macro_top = f->outer;
    if (f->records) {
        finish_recording(f, s, st);
        return 0;
    }
    for (int k = 0; k < f->n_ins; k++) {
        if (st->ins[k].h == f->in_handles[k].h) continue;
        if (f->capture) f->capture->failed = f->capture->macro_error = true;
        pe_raise(s, PE_E_MACRO, "PE_MACRO", "the body of section %s reassigned its input %d: a body must not change its inputs",
                 f->name, k);
        break;
    }
    pe_macro_frame_free(f);
    return 0;
}
