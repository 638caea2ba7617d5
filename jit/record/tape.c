/* tape.c — the derivative tape's nodes: made as requests are recorded,
 * dropped with their value's last holder (tape.h says why it exists). */
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "tape.h"
#include "../../exec/base/error.h"
#include "../../exec/base/grow.h"

#define NO_NODE UINT32_MAX

uint32_t pe_tape_variables;

static struct {
    pe_tape_node *nodes;
    size_t n, cap;
    uint32_t free_head;
    uint64_t seq;
    uint32_t *dropping; /* ports whose nodes are being let go (a work list) */
    size_t n_dropping, cap_dropping;
    bool draining;
} tape = {.free_head = NO_NODE};

/* per thread: a sweep pauses its own requests, never another thread's */
static _Thread_local int paused;

void pe_tape_pause(void) { paused++; }
void pe_tape_resume(void) { paused--; }

pe_tape_node *pe_tape_node_of(uint32_t idx)
{
    uint32_t t = pe_port_at(idx)->tape;
    return t ? &tape.nodes[t - 1] : NULL;
}

static uint32_t node_new(const pe_site *s)
{
    uint32_t k;
    if (tape.free_head != NO_NODE) {
        k = tape.free_head;
        tape.free_head = tape.nodes[k].next_free;
    } else {
        if (tape.n >= UINT32_MAX - 1 || !PE_GROW(tape.nodes, tape.cap, tape.n + 1)) {
            pe_raise(s, PE_E_NOMEM, "pe_grad", "out of memory for the derivative tape");
            return NO_NODE;
        }
        k = (uint32_t)tape.n++;
    }
    memset(&tape.nodes[k], 0, sizeof tape.nodes[k]);
    tape.nodes[k].seq = ++tape.seq;
    return k;
}

static void describe(pe_tape_node *n, uint32_t idx, const pe_port *p)
{
    n->port = idx;
    n->op = p->op, n->dtype = p->dtype, n->ctype = p->ctype, n->rank = p->rank;
    memcpy(n->shape, p->shape, sizeof n->shape);
    memcpy(n->param, p->param, sizeof n->param);
}

bool pe_tape_note(uint32_t idx, const pe_site *s)
{
    if (!pe_tape_variables || paused) return true;
    pe_port *p = pe_port_at(idx);
    bool depends = false;
    for (int i = 0; i < p->n_in; i++) depends |= pe_port_at(p->in[i])->tape != 0;
    if (!depends) return true;
    uint32_t k = node_new(s);
    if (k == NO_NODE) return false;
    pe_tape_node *n = &tape.nodes[k];
    describe(n, idx, p);
    n->n_in = p->n_in;
    for (int i = 0; i < p->n_in; i++) {
        pe_port *q = pe_port_at(p->in[i]);
        n->in[i] = p->in[i];
        if (q->temp) q->temp = false; /* a C scalar's one reference, which its op would let go: the node's now */
        else q->refs_app++;           /* the node's: the value stays reachable for a sweep */
    }
    p->tape = k + 1;
    return true;
}

bool pe_tape_mark_variable(uint32_t idx, const pe_site *s)
{
    pe_port *p = pe_port_at(idx);
    if (p->tape) pe_tape_drop(idx); /* a leaf from here on: its history is cut */
    uint32_t k = node_new(s);
    if (k == NO_NODE) return false;
    describe(&tape.nodes[k], idx, p);
    tape.nodes[k].variable = true;
    p->tape = k + 1;
    pe_tape_variables++;
    return true;
}

void pe_tape_drop(uint32_t idx)
{
    if (!PE_GROW(tape.dropping, tape.cap_dropping, tape.n_dropping + 1)) {
        pe_log_message(PE_LOG_WARN, "out of memory on the derivative tape: a value's history is kept");
        return;
    }
    tape.dropping[tape.n_dropping++] = idx;
    if (tape.draining) return; /* the loop below takes it */
    tape.draining = true;
    while (tape.n_dropping) {
        uint32_t port = tape.dropping[--tape.n_dropping];
        pe_port *p = pe_port_at(port);
        if (!p->tape) continue;
        uint32_t k = p->tape - 1;
        p->tape = 0;
        pe_tape_node n = tape.nodes[k];
        tape.nodes[k].next_free = tape.free_head;
        tape.free_head = k;
        if (n.variable) pe_tape_variables--;
        for (int i = 0; i < n.n_in; i++) pe_port_drop_app_ref(n.in[i], pe_port_at(n.in[i])->site);
    }
    tape.draining = false;
}

void pe_tape_free_all(void)
{
    free(tape.nodes);
    free(tape.dropping);
    tape = (typeof(tape)){.free_head = NO_NODE};
    pe_tape_variables = 0;
}
