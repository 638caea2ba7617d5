/* tape.h — the derivative tape (jit/record/tape.c): what automatic
 * differentiation (jit/grad) needs of the recorded program.  Ports hand
 * their inputs back once computed, so a value's history lives here: one
 * node per value that depends on a variable (pe_grad_enable), made when the
 * request is recorded (or replayed by PE_MACRO), holding an application
 * reference on each input, so that the values a derivative needs stay
 * reachable — as stored values or as expressions the on-demand machinery
 * computes again (exec/base/deferred.c), as it does for any handle a program
 * holds.  A node goes when its value's last application reference does,
 * letting go of its inputs in turn: a loop that marks its carried value
 * again each step keeps its memory flat. */
#ifndef PE_RECORD_TAPE_H
#define PE_RECORD_TAPE_H

#include "../../exec/base/runtime.h"

typedef struct {
    uint32_t port;              /* the value it describes (its slot; the slot's p->tape names the node) */
    uint64_t seq;               /* creation order: every input's node is older */
    bool variable;              /* a leaf pe_grad_enable marked: no inputs */
    uint8_t op, dtype, ctype, rank, n_in;
    uint32_t in[PE_PORT_MAX_INPUTS]; /* the inputs' ports, one application reference each */
    int64_t shape[PE_MAX_RANK];
    int64_t param[2 * PE_MAX_RANK];
    uint32_t mark;              /* a sweep's scratch (jit/grad) */
    uint32_t next_free;
} pe_tape_node;

/* Variables alive: zero means no request pays more than this one test. */
extern uint32_t pe_tape_variables;

/* Notes the port just described (inputs set): a node when an input has one
 * and the tape is not paused.  False when out of memory (raised at s). */
bool pe_tape_note(uint32_t idx, const pe_site *s);
/* Makes port idx a variable: a leaf, its earlier history let go.  False
 * when out of memory (raised at s). */
bool pe_tape_mark_variable(uint32_t idx, const pe_site *s);
/* The port's last application reference went: its node lets go of its
 * inputs (a work list, never a deep recursion). */
void pe_tape_drop(uint32_t idx);
/* The node of port idx, or NULL. */
pe_tape_node *pe_tape_node_of(uint32_t idx);
/* Requests this thread records while paused (a sweep's own) make no nodes. */
void pe_tape_pause(void);
void pe_tape_resume(void);
/* At shutdown, after the ports went. */
void pe_tape_free_all(void);

#endif
