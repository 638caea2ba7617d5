/* trace.c — the trace cache (patent: Trace Cache).
 *
 * Key: while requests are recorded, every queue entry appends to the batch's
 * key, in O(1): for a COMPUTE entry its site, op, dtypes, shape, parameters
 * and operand references numbered within the key (the queue position of a
 * producer in the batch, or the number of an external operand, whose kind,
 * dtype and shape are appended once); for a RELEASE, REVIVE or HINT entry
 * (of a port in the batch) the position it names.  A replayed code reuse
 * section appends its entries' bytes as one piece made when it was recorded
 * (pe_trace_piece, the same bytes).  Scalar values are not in the key (source literals the static
 * IR names are, being compiled in): uniform constants are kernel
 * parameters read at launch; which of them are equal is (so a kernel
 * passes a value given twice once, and shares what is computed from it).  So two batches with equal keys get equal
 * program sequences from the program generator.
 * Store: buckets by the first entry's site, entries newest first, at most
 * MAX_COMPARE comparisons per lookup, one global LRU list bounded by
 * PE_TRACE_CACHE entries.  A cached sequence holds key positions instead of
 * ports; a hit instantiates it with the batch's ports.  An entry holds the
 * id of the fusion rules that made it: a lookup with other rules (the CPU's
 * and the GPU's differ on reductions) misses it. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "../../exec/base/error.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/site.h"
#include "../../profiler/collect.h"
#define EXTERNAL_BIT PE_TRACE_EXTERNAL_BIT
#define MAX_COMPARE 8
#define BUCKETS 1024

typedef struct trace_entry {
    uint8_t *key;
    size_t key_len;
    uint64_t first_site;
    uint32_t n_externals;
    uint8_t rules;      /* the fusion rules that made seq (pe_fusion_rules.id) */
    bool verified;      /* made by the program generator, or checked against a batch (trace_check.c) */
    pe_program_seq seq; /* ports replaced by key codes */
    struct trace_entry *bucket_next, *bucket_prev, *lru_next, *lru_prev;
} trace_entry;

static struct {
    int limit;
    int count;
    bool stored; /* an entry was stored since configuration */
    trace_entry *buckets[BUCKETS];
    trace_entry *lru_head, *lru_tail; /* head: most recently used */
} tc;

/* ------------------------------------------------------------- the key */

static void put_growing(pe_trace_key *k, const void *p, size_t n)
{
    if (k->broken) return;
    /* a key starts at 1 KB: most batches' keys fit, and each batch makes one */
    if (!PE_GROW_FROM(k->bytes, k->cap, k->len + n, 1024)) {
        k->broken = true;
        return;
    }
    memcpy(k->bytes + k->len, p, n);
    k->len += n;
}

void pe_trace_key_reserve(pe_trace_key *k, size_t bytes)
{
    (void)PE_GROW_FROM(k->bytes, k->cap, bytes, 1024); /* else put grows it later, or breaks it */
}

/* Inline for the common case, so that each field's copy has its constant
 * size (every queue entry puts 2 to 6 of them: a replayed PE_MACRO section
 * spends half its time here). */
static inline void put(pe_trace_key *k, const void *p, size_t n)
{
    if (k->len + n <= k->cap && !k->broken) {
        memcpy(k->bytes + k->len, p, n);
        k->len += n;
        return;
    }
    put_growing(k, p, n);
}

/* How far back an external scalar looks for an equal one (a bound on the
 * key's cost per operand; the program generator shares only what the key
 * records). */
#define SAME_SCALAR_WINDOW 64

static uint32_t external_code(pe_trace_key *k, uint32_t qi)
{
    pe_port *q = pe_port_at(qi);
    if (q->key_epoch == pe_rec.batch_epoch) return EXTERNAL_BIT | q->key_external;
    if (!PE_GROW(k->externals, k->externals_cap, (size_t)k->n_externals + 1)) {
        k->broken = true;
        return EXTERNAL_BIT;
    }
    q->key_epoch = pe_rec.batch_epoch;
    q->key_external = q->key_same_as = k->n_externals;
    bool scalar = pe_port_is_uniform(q);
    if (scalar && !q->literal && !q->unshared) /* equal C scalars (a name's value passed again): one kernel parameter */
        for (uint32_t j = k->n_externals > SAME_SCALAR_WINDOW ? k->n_externals - SAME_SCALAR_WINDOW : 0;
             j < k->n_externals; j++) {
            const pe_port *e = pe_port_at(k->externals[j]);
            if (pe_port_is_uniform(e) && !e->literal && !e->unshared && e->dtype == q->dtype &&
                memcmp(&e->value, &q->value, sizeof q->value) == 0) {
                q->key_same_as = e->key_same_as;
                break;
            }
        }
    k->externals[k->n_externals++] = qi;
    bool shared = q->key_same_as != q->key_external;
    uint8_t sig[5] = {'X', (uint8_t)(scalar | shared << 1), q->dtype, q->rank, q->literal};
    put(k, sig, sizeof sig);
    if (shared) put(k, &q->key_same_as, sizeof q->key_same_as);
    if (q->literal) put(k, &q->value, sizeof q->value); /* compiled into the kernels: part of the key */
    put(k, q->shape, sizeof q->shape[0] * q->rank);
    return EXTERNAL_BIT | q->key_external;
}

/* A COMPUTE entry's bytes that depend on its port alone: head, site, shape,
 * parameters (reductions, views).  The one definition of them, for
 * pe_trace_append and for a replay's piece. */
#define FIXED_MAX (6 + sizeof(uint64_t) + sizeof(int64_t) * PE_MAX_RANK + sizeof(int64_t) * 2 * PE_MAX_RANK)

static size_t fixed_bytes(const pe_port *p, uint64_t site, uint8_t out[FIXED_MAX])
{
    /* a value stored where it could stay an expression makes other programs */
    uint8_t head[6] = {p->store_when_held ? 'S' : 'C', p->op, p->dtype, p->ctype, p->rank, p->n_in}, *o = out;
    memcpy(o, head, sizeof head), o += sizeof head;
    memcpy(o, &site, sizeof site), o += sizeof site;
    memcpy(o, p->shape, sizeof p->shape[0] * p->rank), o += sizeof p->shape[0] * p->rank;
    if (pe_op_table[p->op].kind != PE_KIND_MAP) memcpy(o, p->param, sizeof p->param), o += sizeof p->param;
    return (size_t)(o - out);
}

/* An operand's code: its producer's queue position in the batch, or its
 * external number (its signature appended at its first use). */
static inline uint32_t operand_code(pe_trace_key *k, uint32_t qi)
{
    pe_port *q = pe_port_at(qi);
    if (q->state == PE_PORT_PENDING && q->batch == pe_rec.batch_epoch) return q->queue_pos; /* in the batch */
    if (q->key_epoch == pe_rec.batch_epoch) return EXTERNAL_BIT | q->key_external;     /* numbered already */
    return external_code(k, qi);
}

/* The entry kinds other than COMPUTE name a position: a tag and it. */
static uint8_t position_tag(pe_entry_kind kind)
{
    return kind == PE_ENTRY_RELEASE ? 'R' : kind == PE_ENTRY_REVIVE ? 'V' : 'H';
}

void pe_trace_append(pe_trace_key *k, const pe_entry *entry, size_t position)
{
    pe_port *p = pe_port_at(entry->port);
    if (entry->kind == PE_ENTRY_HINT && !p->demanded_in_batch) return;
    if (entry->kind != PE_ENTRY_COMPUTE) {
        /* a revived port is visible again, a demanded one stored: the key tells them apart */
        uint8_t tag = position_tag((pe_entry_kind)entry->kind);
        uint32_t pos = p->queue_pos;
        put(k, &tag, 1);
        put(k, &pos, sizeof pos);
        return;
    }
    /* sites by their stable ids, not addresses: a key means the same in the
     * next run of the program (the persistent trace cache) */
    uint64_t site = pe_site_stable_id(p->site);
    if (position == 0 || !k->first_site) k->first_site = site;
    uint8_t fixed[FIXED_MAX];
    put(k, fixed, fixed_bytes(p, site, fixed));
    for (int i = 0; i < p->n_in; i++) {
        uint32_t code = operand_code(k, p->in[i]);
        put(k, &code, sizeof code);
    }
}

/* ------------------------------------------------ a replay's key piece */

/* A piece's bytes are its entries' as pe_trace_append would append them at
 * positions counted from the replay's first entry, less the operands from
 * outside the replay (the section's inputs, its constants), which are
 * appended where they go at each replay (`holes`: an external's signature
 * comes with its first use in the batch).  `relative`: the offsets of the
 * positions that name one of the replay's entries, moved by the replay's
 * first position. */
typedef struct {
    uint32_t at;      /* offset in the piece's bytes */
    uint32_t entry;   /* the entry (counted from the replay's first) whose operand goes there */
    uint32_t operand; /* which of its port's operands */
} piece_hole;

struct pe_trace_piece {
    uint8_t *bytes;
    size_t len, cap;
    uint8_t *kinds; /* each entry's kind: the replay's entries must match them */
    size_t n_entries, kinds_cap;
    uint32_t *relative;
    size_t n_relative, relative_cap;
    piece_hole *holes;
    size_t n_holes, holes_cap;
    uint64_t first_site; /* the first nonzero site id of its COMPUTE entries (0: none) */
    bool broken;         /* out of memory while building: replays are keyed entry by entry */
};

size_t pe_trace_pieces_appended;

pe_trace_piece *pe_trace_piece_new(void) { return calloc(1, sizeof(pe_trace_piece)); }

void pe_trace_piece_free(pe_trace_piece *pc)
{
    if (!pc) return;
    free(pc->bytes);
    free(pc->kinds);
    free(pc->relative);
    free(pc->holes);
    free(pc);
}

static bool piece_put(pe_trace_piece *pc, const void *p, size_t n)
{
    if (pc->broken || !PE_GROW_FROM(pc->bytes, pc->cap, pc->len + n, 256)) return !(pc->broken = true);
    memcpy(pc->bytes + pc->len, p, n);
    pc->len += n;
    return true;
}

static bool piece_entry(pe_trace_piece *pc, pe_entry_kind kind)
{
    if (pc->broken || !PE_GROW(pc->kinds, pc->kinds_cap, pc->n_entries + 1)) return !(pc->broken = true);
    pc->kinds[pc->n_entries++] = (uint8_t)kind;
    return true;
}

/* A position naming entry `rel` of the replay. */
static void piece_relative(pe_trace_piece *pc, uint32_t rel)
{
    if (pc->broken || !PE_GROW(pc->relative, pc->relative_cap, pc->n_relative + 1)) {
        pc->broken = true;
        return;
    }
    pc->relative[pc->n_relative++] = (uint32_t)pc->len;
    piece_put(pc, &rel, sizeof rel);
}

void pe_trace_piece_compute(pe_trace_piece *pc, const pe_port *p, const uint32_t *rel)
{
    uint32_t entry = (uint32_t)pc->n_entries;
    if (!piece_entry(pc, PE_ENTRY_COMPUTE)) return;
    uint64_t site = pe_site_stable_id(p->site);
    if (!pc->first_site) pc->first_site = site;
    uint8_t fixed[FIXED_MAX];
    piece_put(pc, fixed, fixed_bytes(p, site, fixed));
    for (int i = 0; i < p->n_in && !pc->broken; i++) {
        if (rel[i] != PE_TRACE_PIECE_OUTSIDE) {
            piece_relative(pc, rel[i]);
            continue;
        }
        if (!PE_GROW(pc->holes, pc->holes_cap, pc->n_holes + 1)) {
            pc->broken = true;
            return;
        }
        pc->holes[pc->n_holes++] = (piece_hole){(uint32_t)pc->len, entry, (uint32_t)i};
    }
}

void pe_trace_piece_position(pe_trace_piece *pc, pe_entry_kind kind, uint32_t rel)
{
    assert(kind == PE_ENTRY_RELEASE || kind == PE_ENTRY_REVIVE); /* a HINT's bytes depend on the batch */
    uint8_t tag = position_tag(kind);
    if (piece_entry(pc, kind) && piece_put(pc, &tag, 1)) piece_relative(pc, rel);
}

/* Whether the replay queued the entries the piece stands for. */
static bool piece_matches(const pe_trace_piece *pc, const pe_entry *entries, size_t n)
{
    if (!pc || pc->broken || n != pc->n_entries) return false;
    for (size_t i = 0; i < n; i++)
        if (entries[i].kind != pc->kinds[i]) return false;
    return true;
}

void pe_trace_append_piece(pe_trace_key *k, const pe_trace_piece *pc, const pe_entry *entries, size_t n, size_t base)
{
    if (n == 0) return;
    if (!piece_matches(pc, entries, n) || base + n > UINT32_MAX) {
        for (size_t i = 0; i < n; i++) pe_trace_append(k, &entries[i], base + i);
        return;
    }
    pe_trace_pieces_appended++;
    if (base == 0 || !k->first_site) k->first_site = pc->first_site;
    /* the bytes up to each hole, their relative positions moved, then the hole's operand */
    size_t from = 0, r = 0;
    for (size_t h = 0;; h++) {
        size_t to = h < pc->n_holes ? pc->holes[h].at : pc->len, at = k->len;
        put(k, pc->bytes + from, to - from);
        if (k->broken) return;
        for (; r < pc->n_relative && pc->relative[r] < to; r++) {
            uint8_t *q = k->bytes + at + (pc->relative[r] - from);
            uint32_t pos;
            memcpy(&pos, q, sizeof pos);
            pos += (uint32_t)base;
            memcpy(q, &pos, sizeof pos);
        }
        if (h == pc->n_holes) return;
        const piece_hole *hole = &pc->holes[h];
        uint32_t code = operand_code(k, pe_port_at(entries[hole->entry].port)->in[hole->operand]);
        put(k, &code, sizeof code);
        from = to;
    }
}

void pe_trace_key_free(pe_trace_key *k)
{
    free(k->bytes);
    free(k->externals);
    *k = (pe_trace_key){0};
}

/* ---------------------------------------------------------- the store */

void pe_trace_configure(int entries)
{
    tc.limit = entries;
    tc.stored = false;
}

static size_t bucket_of(uint64_t site) { return (size_t)(site % BUCKETS); }

static void unlink_entry(trace_entry *e)
{
    size_t b = bucket_of(e->first_site);
    if (e->bucket_prev) e->bucket_prev->bucket_next = e->bucket_next;
    else tc.buckets[b] = e->bucket_next;
    if (e->bucket_next) e->bucket_next->bucket_prev = e->bucket_prev;
    if (e->lru_prev) e->lru_prev->lru_next = e->lru_next;
    else tc.lru_head = e->lru_next;
    if (e->lru_next) e->lru_next->lru_prev = e->lru_prev;
    else tc.lru_tail = e->lru_prev;
    tc.count--;
}

static void link_front(trace_entry *e)
{
    size_t b = bucket_of(e->first_site);
    e->bucket_prev = NULL;
    e->bucket_next = tc.buckets[b];
    if (tc.buckets[b]) tc.buckets[b]->bucket_prev = e;
    tc.buckets[b] = e;
    e->lru_prev = NULL;
    e->lru_next = tc.lru_head;
    if (tc.lru_head) tc.lru_head->lru_prev = e;
    tc.lru_head = e;
    if (!tc.lru_tail) tc.lru_tail = e;
    tc.count++;
}

static void free_entry(trace_entry *e)
{
    free(e->key);
    pe_program_seq_free(&e->seq);
    free(e);
}

typedef struct {
    const pe_trace_key *key;
    uint32_t epoch;
    bool lost; /* a port neither in the batch nor among its externals */
} coding;

/* A port's code in the key: its queue position in the batch, or its external
 * number (looked up in the key: the ports' own scratch fields may already
 * serve the next batch's key). */
static uint32_t map_to_code(uint32_t port, const void *ctx)
{
    coding *c = (coding *)ctx;
    pe_port *p = pe_port_at(port);
    if (p->state == PE_PORT_PENDING && p->batch == c->epoch) return p->queue_pos;
    for (uint32_t i = 0; i < c->key->n_externals; i++)
        if (c->key->externals[i] == port) return EXTERNAL_BIT | i;
    c->lost = true;
    return EXTERNAL_BIT;
}

static uint32_t from_code(uint32_t code, const pe_entry *entries, const pe_trace_key *key)
{
    return code & EXTERNAL_BIT ? key->externals[code & ~EXTERNAL_BIT] : entries[code].port;
}

/* Copies a sequence, translating every port through `map`; `own_kir` copies
 * the kernels too (else they are borrowed from `from`). */
static bool translate(const pe_program_seq *from, pe_program_seq *to, bool own_kir, uint32_t (*map)(uint32_t, const void *),
                      const void *ctx)
{
    *to = (pe_program_seq){0};
    to->progs = calloc(from->n ? from->n : 1, sizeof *to->progs);
    if (!to->progs) return false;
    to->cap = from->n;
    to->kir_borrowed = !own_kir;
    for (size_t i = 0; i < from->n; i++) {
        const pe_program *a = &from->progs[i];
        pe_program *b = &to->progs[to->n++];
        *b = *a;
        b->port = map(a->port, ctx);
        b->bind = NULL, b->members = NULL, b->shares = NULL, b->kir = NULL;
        if (a->kind == PE_PROG_INTRINSIC) { /* members and operands, no kernel */
            b->members = malloc(sizeof *b->members * (size_t)a->n_members);
            b->bind = malloc(sizeof *b->bind * (size_t)(a->n_bind ? a->n_bind : 1));
            if (!b->members || !b->bind) {
                pe_program_seq_free(to);
                return false;
            }
            for (int m = 0; m < a->n_members; m++) b->members[m] = map(a->members[m], ctx);
            for (int k = 0; k < a->n_bind; k++) b->bind[k] = map(a->bind[k], ctx);
            continue;
        }
        if (a->kind != PE_PROG_KERNEL) continue;
        b->bind = malloc(sizeof *b->bind * (size_t)a->kir->n_params);
        b->members = malloc(sizeof *b->members * (size_t)a->n_members);
        b->shares = a->shares ? malloc(sizeof *b->shares * (size_t)a->n_members) : NULL;
        b->kir = own_kir ? malloc(sizeof *b->kir) : a->kir;
        if (!b->bind || !b->members || !b->kir || (a->shares && !b->shares)) {
            pe_program_seq_free(to);
            return false;
        }
        if (own_kir) memcpy(b->kir, a->kir, sizeof *b->kir);
        if (a->shares) memcpy(b->shares, a->shares, sizeof *b->shares * (size_t)a->n_members); /* member positions */
        for (int k = 0; k < a->kir->n_params; k++) b->bind[k] = map(a->bind[k], ctx);
        for (int m = 0; m < a->n_members; m++) b->members[m] = map(a->members[m], ctx);
    }
    return true;
}


typedef struct {
    const pe_entry *entries;
    size_t n;
    const pe_trace_key *key;
    bool bad; /* a code outside the batch (an entry from disk that does not fit) */
} instantiation;

static uint32_t map_from_code(uint32_t code, const void *ctx)
{
    instantiation *in = (instantiation *)ctx;
    if (code & EXTERNAL_BIT ? (code & ~EXTERNAL_BIT) >= in->key->n_externals : code >= in->n) {
        in->bad = true;
        return in->entries[0].port;
    }
    return from_code(code, in->entries, in->key);
}

bool pe_trace_lookup(const pe_trace_key *key, const pe_fusion_rules *rules, const pe_entry *entries, size_t n,
                     pe_program_seq *seq)
{
    assert(pe_api_held());
    if (tc.limit <= 0 || key->broken || !key->first_site) return false;
    int compared = 0;
    for (trace_entry *e = tc.buckets[bucket_of(key->first_site)]; e && compared < MAX_COMPARE; e = e->bucket_next) {
        if (e->first_site != key->first_site || e->rules != rules->id) continue;
        compared++;
        if (e->key_len != key->len || e->n_externals != key->n_externals || memcmp(e->key, key->bytes, key->len) != 0)
            continue;
        instantiation in = {entries, n, key, false};
        if (n == 0 || !translate(&e->seq, seq, false, map_from_code, &in)) return false;
        /* Every hit is checked, not only a sequence from disk: equal keys
         * mean equal batches only if the key records every fact the program
         * generator read, and a fact it missed (an operand's kind changed
         * between the request and the run: issue 36) must cost a
         * regeneration, never a wrong value.  One pass over the sequence. */
        char why[160];
        if (!in.bad && !pe_trace_fits(seq, entries, n, why, sizeof why)) {
            if (e->verified) {
                pe_log_message(PE_LOG_WARN, "trace cache: a sequence made for an equal key does not fit this batch (%s): "
                               "the key misses a fact the program generator read (a defect in PE); the batch is "
                               "generated again", why);
                pe_counters.trace_misfits++;
            } else
                pe_log_message(PE_LOG_WARN, "a saved program sequence does not fit its batch (%s): discarded, the batch "
                               "is generated again", why);
            in.bad = true;
        }
        if (in.bad) {
            pe_program_seq_free(seq);
            unlink_entry(e); /* it will never fit: equal keys, equal batches */
            free_entry(e);
            return false;
        }
        e->verified = true;
        unlink_entry(e); /* most recently used: front of its bucket and of the LRU list */
        link_front(e);
        return true;
    }
    return false;
}

void pe_trace_store(const pe_trace_key *key, const pe_fusion_rules *rules, const pe_entry *entries, size_t n,
                    uint32_t epoch, const pe_program_seq *seq)
{
    assert(pe_api_held());
#ifndef NDEBUG
    for (size_t i = 0; i < n; i++) /* the batch has not run: its sequence still names its ports */
        assert(entries[i].kind != PE_ENTRY_COMPUTE || pe_port_at(entries[i].port)->batch == epoch);
#endif
    (void)entries, (void)n;
    if (tc.limit <= 0 || key->broken || !key->first_site) return;
    trace_entry *e = calloc(1, sizeof *e);
    if (!e) return;
    e->key = malloc(key->len ? key->len : 1);
    coding c = {key, epoch, false};
    if (!e->key || !translate(seq, &e->seq, true, map_to_code, &c) || c.lost) {
        if (e->key && e->seq.progs) pe_program_seq_free(&e->seq);
        free(e->key);
        free(e);
        return;
    }
    memcpy(e->key, key->bytes, key->len);
    e->key_len = key->len;
    e->first_site = key->first_site;
    e->n_externals = key->n_externals;
    e->rules = rules->id;
    e->verified = true;
    link_front(e);
    tc.stored = true;
    while (tc.count > tc.limit) {
        trace_entry *old = tc.lru_tail;
        unlink_entry(old);
        free_entry(old);
    }
}

void pe_trace_clear(void)
{
    while (tc.lru_head) {
        trace_entry *e = tc.lru_head;
        unlink_entry(e);
        free_entry(e);
    }
}

bool pe_trace_each(void (*fn)(const pe_trace_record *r, void *ctx), void *ctx)
{
    for (trace_entry *e = tc.lru_tail; e; e = e->lru_prev) {
        pe_trace_record r = {e->key, e->key_len, e->first_site, e->n_externals, e->rules, &e->seq};
        fn(&r, ctx);
    }
    return tc.stored;
}

static uint32_t same_code(uint32_t code, const void *ctx)
{
    (void)ctx;
    return code;
}

bool pe_trace_adopt(const pe_trace_record *r)
{
    if (tc.limit <= 0 || !r->first_site) return false;
    trace_entry *e = calloc(1, sizeof *e);
    if (!e) return false;
    e->key = malloc(r->key_len ? r->key_len : 1);
    if (!e->key || !translate(r->seq, &e->seq, true, same_code, NULL)) {
        free(e->key);
        free(e);
        return false;
    }
    memcpy(e->key, r->key, r->key_len);
    e->key_len = r->key_len;
    e->first_site = r->first_site;
    e->n_externals = r->n_externals;
    e->rules = r->rules;
    link_front(e);
    while (tc.count > tc.limit) {
        trace_entry *old = tc.lru_tail;
        unlink_entry(old);
        free_entry(old);
    }
    return true;
}
