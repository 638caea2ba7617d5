/* macro_rec.h — what the first execution of a code reuse section (PE_MACRO,
 * jit/macro/macro.c) records while its body runs: the recorder's hooks.
 * A section's body runs on one thread; that thread's open sections form a
 * stack of frames (innermost on top).  The outermost frame that records
 * (`capture`) takes notes of every port the body makes (an operation's
 * COMPUTE, a constant) and of the application references the body holds;
 * a section nested in a recording body is part of that recording.  Values
 * are named by refs: 0 .. n_ins - 1 the section's inputs, then one per item
 * in the order the body made them.  Everything here runs under the runtime
 * lock and calls nothing above the ground. */
#ifndef PE_RECORD_MACRO_REC_H
#define PE_RECORD_MACRO_REC_H

#include "../../exec/base/runtime.h"

typedef enum {
    PE_MACRO_ITEM_OP,      /* an operation: replayed as a new pending port */
    PE_MACRO_ITEM_CONSTANT, /* a uniform constant the body made (a C scalar, pe_scalar, a fold): the cache
                              entry holds the port and every replay uses it (a value never changes) */
    PE_MACRO_ITEM_STRAY     /* a port the body was handed that no replay could make (an invalid result, an
                              operation over an array from outside): the recording failed; counted so that the
                              section's end releases it */
} pe_macro_item_kind;

/* A parameter of a recorded operation that takes a fresh value on every
 * replay (a random generator's draw counter): `next(ctx, recorded)` gives
 * the value for this replay. */
typedef int64_t (*pe_macro_fresh_fn)(void *ctx, int64_t recorded);

typedef struct {
    uint8_t kind; /* pe_macro_item_kind */
    uint8_t op, dtype, ctype, rank, n_in;
    bool weak;
    bool published;    /* the body held a handle to it: replays release it at the section's end */
    int8_t fresh_param; /* -1: none; else the index of the parameter `fresh` renews on each replay */
    uint8_t n_params;   /* parameters up to the last nonzero one */
    uint32_t in[PE_PORT_MAX_INPUTS]; /* refs */
    int64_t shape[PE_MAX_RANK];
    int64_t numel;
    int64_t param[2 * PE_MAX_RANK];
    const pe_site *site;
    uint32_t port, gen; /* the port the body made */
    double value;       /* a constant's */
    bool held;          /* a constant's port, referenced by the frame (then by the cache entry) */
    bool literal;       /* a constant the static IR says is a source literal */
    int32_t body_refs;  /* application references the body holds to it now */
    pe_macro_fresh_fn fresh;
    void *fresh_ctx;
} pe_macro_item;

typedef struct pe_macro_frame {
    struct pe_macro_frame *outer;
    struct pe_macro_frame *capture; /* the recording frame notes go to: the outermost recording one */
    void *section;                  /* jit/macro's section (recursion is the same section twice on the stack) */
    const pe_site *site;            /* where the section is written (PE_MACRO's line) */
    const char *name;
    uint64_t serial;                /* names the frame to pe_macro_end_at (an abandoned frame is gone) */
    const void *state;              /* the frame of the function executing the section */
    bool records;                   /* this frame records (else it is part of an outer recording) */
    bool failed;                    /* the recording cannot be replayed: not cached (an error said why) */
    bool macro_error;               /* a PE_E_MACRO error was raised for it: its outputs become invalid */
    uint64_t errors_at_begin;       /* errors this thread had raised when the body began */
    uint32_t scope_depth;           /* the thread's scope depth when the body began */
    int n_ins, n_outs;
    pe_array *in_handles;           /* the inputs as given (the body must not reassign them) */
    uint32_t *in_port, *in_gen;
    int32_t *in_body_refs;          /* references the body took to an input (a fold x*1 -> x) */
    pe_macro_item *items;
    size_t n_items, cap_items;
    uint32_t *map;                  /* open addressing: port index + 1 -> item, for lookups by port */
    size_t map_cap;
    uint8_t *signature;             /* the inputs' signature and the control bytes: the cache key */
    size_t signature_len;
} pe_macro_frame;

/* The calling thread's innermost open section, or NULL (one TLS load on the
 * recorder's paths). */
extern _Thread_local pe_macro_frame *pe_macro_top;

/* The frame taking notes, or NULL. */
static inline pe_macro_frame *pe_macro_capturing(void) { return pe_macro_top ? pe_macro_top->capture : NULL; }

/* The ref of port idx in recording f: an input, an item, or UINT32_MAX (from outside). */
uint32_t pe_macro_ref_of(const pe_macro_frame *f, uint32_t idx);
/* Hooks of the recorder, each a no-op unless a section records on this thread: */
void pe_macro_note_op(uint32_t idx);          /* pe_enqueue_op made port idx */
void pe_macro_note_constant(uint32_t idx);    /* pe_make_constant made port idx */
/* pe_publish / pe_retain gave the body a reference to idx, the thread's
 * scope depth being scope_depth.  Returns whether the handle goes to that
 * scope: not at the body's own level (the section itself ends what its body
 * made). */
bool pe_macro_note_publish(uint32_t idx, uint32_t scope_depth);
/* The body releases a reference to idx; false (after raising PE_E_MACRO at s)
 * where it is an input the body holds no reference of its own to: a body
 * must not change its inputs. */
bool pe_macro_note_release(uint32_t idx, const pe_site *s);
/* The operation that made port idx (just recorded) has parameter `param`
 * renewed on every replay by next(ctx, recorded): the hook a random
 * generator's draw uses so that replays draw new numbers. */
void pe_macro_mark_fresh_param(uint32_t idx, int param, pe_macro_fresh_fn next, void *ctx);
/* Frees a frame's notes and lets go of the constants it holds. */
void pe_macro_frame_free(pe_macro_frame *f);

#endif
