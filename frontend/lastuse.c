/* lastuse.c — last-use (kill) marks and loop-carried variables, from the
 * occurrences extract.c collected.  Conservative by construction: a mark is
 * set only where the runtime may release the operand's handle right after
 * the request without any later read of that value being possible.
 *
 * A variable qualifies when it is a local pe_array that is only ever
 * defined from a PE request (or {0}) and only ever read as a direct operand
 * of a request: no address taken, no copy into another variable or memory,
 * no call outside PE, no return (any of these is an escape).  A function
 * with goto gets no marks.  A use U of such a variable, as an operand of an
 * operation request or a read, is its value's last use when, following the text after
 * U, the next occurrence is a definition that surely runs (its nearest
 * enclosing branch — of an if or ?:, the right operand of && or || — or
 * loop body also encloses U; not a switch case; a definition in an if's
 * other branch does not run after U) —
 * or there is none; at the end of U's loop body the walk wraps to the body's
 * start, where the first occurrence must be such a definition at the body's
 * top level, and then continues after the loop in the enclosing one.  Every
 * loop around U must be closed (no break, continue, return or goto in it):
 * those would leave a definition unexecuted. */
#include <stdlib.h>
#include <string.h>

#include "extract.h"

static bool inside(pe_span outer, unsigned at) { return outer.begin <= at && at <= outer.end; }
static bool same(pe_span a, pe_span b) { return a.begin == b.begin && a.end == b.end; }

/* Occurrences in execution order: by offset, then uses by argument, then
 * the definition (x = pe_add(x, y) reads x before it assigns it). */
static bool before(unsigned offset_a, int order_a, unsigned offset_b, int order_b)
{
    return offset_a < offset_b || (offset_a == offset_b && order_a < order_b);
}

/* The first occurrence of `var` after position (offset, order) within `span`. */
static const pe_occurrence *next_in(const pe_function_facts *f, int var, unsigned offset, int order, pe_span span)
{
    const pe_occurrence *best = NULL;
    for (size_t i = 0; i < f->n_occ; i++) {
        const pe_occurrence *o = &f->occ[i];
        if (o->var != var || !before(offset, order, o->offset, o->order) || !inside(span, o->offset)) continue;
        if (!best || before(o->offset, o->order, best->offset, best->order)) best = o;
    }
    return best;
}

/* The loop region enclosing region r, or 0 (the body). */
static int enclosing_loop(const pe_ir_function *fn, int r)
{
    for (int64_t p = fn->regions[r].parent; p > 0; p = fn->regions[p].parent)
        if (fn->regions[p].kind == PE_REGION_LOOP) return (int)p;
    return 0;
}

static bool kills(const pe_ir_function *fn, const pe_function_facts *f, const pe_occurrence *u)
{
    for (int l = u->loop; l > 0; l = enclosing_loop(fn, l))
        if (!fn->regions[l].closed) return false;
    int loop = u->loop;
    unsigned pos = u->offset;
    int order = u->order;
    pe_span anchor = {u->offset, u->offset};
    for (;;) {
        pe_span body = f->region_body[loop];
        const pe_occurrence *n = next_in(f, u->var, pos, order, body);
        if (n) /* the next occurrence decides: a definition that surely runs after the anchor */
            return n->kind == PE_OCC_DEF && !n->construct_is_switch && inside(n->construct, anchor.begin) &&
                   inside(n->construct, anchor.end);
        if (loop == 0) return true; /* no later occurrence at all */
        /* around the back edge: the body's first occurrence must redefine it on every iteration */
        const pe_occurrence *first = next_in(f, u->var, body.begin == 0 ? 0 : body.begin - 1, 1000, body);
        if (!first || first->kind != PE_OCC_DEF || !same(first->construct, body) ||
            before(u->offset, u->order, first->offset, first->order))
            return false;
        /* and after the loop, the value left behind must not be read */
        anchor = body;
        pos = body.end;
        order = 1000;
        loop = enclosing_loop(fn, loop);
    }
}

void pe_mark_last_uses(pe_ir_function *fn, const pe_function_facts *f)
{
    for (size_t i = 0; i < f->n_occ && !f->has_goto; i++) {
        const pe_occurrence *u = &f->occ[i];
        if (u->kind != PE_OCC_USE || !f->vars[u->var].killable || u->request < 0) continue;
        pe_ir_request *rq = &fn->requests[u->request];
        /* operations and reads consume operands; pe_release, pe_map and the rest do not */
        bool consumes = *rq->op || strcmp(rq->api, "pe_read_at") == 0 || strcmp(rq->api, "pe_read_f32_at") == 0 ||
                        strcmp(rq->api, "pe_read_f64_at") == 0;
        if (!consumes || u->arg < 0 || (uint32_t)u->arg >= rq->n_args) continue;
        if (kills(fn, f, u)) rq->args[u->arg].kill = true;
    }
    /* loop-carried: read in the body before the body's first definition */
    for (uint32_t r = 1; r < fn->n_regions; r++) {
        if (fn->regions[r].kind != PE_REGION_LOOP) continue;
        pe_span body = f->region_body[r];
        for (size_t v = 0; v < f->n_vars; v++) {
            const pe_occurrence *first_use = NULL, *first_def = NULL;
            for (size_t i = 0; i < f->n_occ; i++) {
                const pe_occurrence *o = &f->occ[i];
                if (o->var != (int)v || !inside(body, o->offset)) continue;
                const pe_occurrence **slot = o->kind == PE_OCC_DEF ? &first_def : &first_use;
                if (!*slot || before(o->offset, o->order, (*slot)->offset, (*slot)->order)) *slot = o;
            }
            if (!first_use || !first_def || before(first_def->offset, first_def->order, first_use->offset, first_use->order))
                continue;
            char **c = realloc(fn->regions[r].carried, sizeof *c * (fn->regions[r].n_carried + 1));
            if (!c) return;
            fn->regions[r].carried = c;
            if ((c[fn->regions[r].n_carried] = strdup(f->vars[v].name))) fn->regions[r].n_carried++;
        }
    }
}
