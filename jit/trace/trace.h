/* trace.h — the trace cache: program sequences remembered by the shape of
 * the work that produced them, so that a repeated stream of requests (a loop
 * body) skips the program generator. */
#ifndef PE_JIT_TRACE_H
#define PE_JIT_TRACE_H

#include "../proggen/proggen.h"
#include "../../exec/base/runtime.h"

/* Called by the queue for every entry it appends at `position` (a COMPUTE
 * entry's port has its queue_pos set already). */
void pe_trace_append(pe_trace_key *key, const pe_entry *entry, size_t position);
void pe_trace_key_free(pe_trace_key *key);
/* Room for `bytes` in an empty key (a batch's key starts as long as the
 * last one's: no growth step by step); out of memory leaves it as it was. */
void pe_trace_key_reserve(pe_trace_key *key, size_t bytes);

/* A replayed code reuse section's part of the key (jit/macro), made once
 * from its recording: the bytes its queue entries append, with positions
 * counted from the replay's first entry, appended in one call, byte for byte
 * what pe_trace_append makes entry by entry (it leaves the operands from
 * outside the replay, inputs and constants, to each replay: whether one is
 * in the batch, and its external number, are the batch's). */
typedef struct pe_trace_piece pe_trace_piece;
#define PE_TRACE_PIECE_OUTSIDE UINT32_MAX /* an operand from outside the replay */
pe_trace_piece *pe_trace_piece_new(void); /* NULL: out of memory */
void pe_trace_piece_free(pe_trace_piece *piece);
/* The next entry: COMPUTE of a port with p's fields, whose operand i is the
 * replay's entry rel[i] (counted from its first) or from outside; a RELEASE
 * or REVIVE of the replay's entry rel.  Out of memory leaves the piece
 * broken, which keys every replay entry by entry. */
void pe_trace_piece_compute(pe_trace_piece *piece, const pe_port *p, const uint32_t *rel);
void pe_trace_piece_position(pe_trace_piece *piece, pe_entry_kind kind, uint32_t rel);
/* Appends the key of the n entries queued from `base`: the piece's bytes
 * when the entries are those it stands for (their kinds, in order), else
 * (or with no piece) entry by entry. */
void pe_trace_append_piece(pe_trace_key *key, const pe_trace_piece *piece, const pe_entry *entries, size_t n,
                           size_t base);
extern size_t pe_trace_pieces_appended; /* how many replays were keyed from their piece (tests) */

/* Sets limits: `entries` programs sequences at most (0: the cache is off). */
void pe_trace_configure(int entries);
/* On a hit, *seq is the sequence cached for this key under these fusion
 * rules, instantiated with this batch's ports. */
bool pe_trace_lookup(const pe_trace_key *key, const pe_fusion_rules *rules, const pe_entry *entries, size_t n,
                     pe_program_seq *seq);
/* Remembers the sequence `rules` made for this batch (which must still be
 * pending). */
void pe_trace_store(const pe_trace_key *key, const pe_fusion_rules *rules, const pe_entry *entries, size_t n,
                    uint32_t epoch, const pe_program_seq *seq);
void pe_trace_clear(void);
/* trace_check.c: whether seq, instantiated for this batch, fits it (every
 * field an executor trusts); false with why.  Entries read from disk are
 * checked at their first hit. */
bool pe_trace_fits(const pe_program_seq *seq, const pe_entry *entries, size_t n, char *why, size_t why_len);


/* One cached entry, as the persistent trace cache sees it: the key, the
 * bucket's stable site id, and the sequence with ports as key codes. */
typedef struct {
    const uint8_t *key;
    size_t key_len;
    uint64_t first_site;
    uint32_t n_externals;
    uint8_t rules; /* pe_fusion_rules.id */
    const pe_program_seq *seq;
} pe_trace_record;
#define PE_TRACE_EXTERNAL_BIT 0x80000000u /* a code: external operand number, else queue position */
/* Visits the entries, least recently used first; true if any entry was
 * stored since the cache was configured (there is something new to keep). */
bool pe_trace_each(void (*fn)(const pe_trace_record *r, void *ctx), void *ctx);
/* Adds a copy of r as the most recently used entry; false when out of memory. */
bool pe_trace_adopt(const pe_trace_record *r);

/* trace_persist.c: the trace cache across runs, in PE_CACHE_DIR, one file
 * per program build (its path, the code generator's build, its static IR:
 * `ir_fingerprint`, pe_ir_fingerprint). */
#define PE_TRACE_FILE_MAGIC "PETC"
#define PE_TRACE_FILE_VERSION 8 /* 2: entries carry their fusion rules; 3: their kernels are lowered (kir_lower.c);
                                   4: kernels say which members share another's store; 5: views read
                                   through index maps (PE_PROG_VIEW, STRIDED maps), axis reductions;
                                   6: gathers and concats in kernels (KIR_GATHER, kir_inst.imm), a kernel
                                   stored cut to its parameter and instruction counts; 7: complex values
                                   as pairs (kir_complex.c: a part's load and store in imm, constant
                                   immediates); 8: kernels that stream their stores
                                   (kir_kernel.stream_stores) */
void pe_trace_persist_load(uint64_t ir_fingerprint);
/* Decodes a trace file's bytes and adopts its entries (the libFuzzer target
 * tests/fuzz_trace_file.c calls it directly); see trace_persist.c. */
bool pe_trace_persist_decode(const uint8_t *data, size_t len, bool *stale, char *err, size_t err_len);
void pe_trace_persist_save(uint64_t ir_fingerprint);

#endif
