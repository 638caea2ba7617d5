/* intrinsic_plan.c — the program generator's intrinsic programs
 * (PE_PROG_INTRINSIC: one library call each, exec/intrinsics), planned over
 * the batch before the forward pass (proggen.c), which then cuts its
 * kernels around them:
 *   - every intrinsic port is a call of its own, run at its queue position;
 *   - an lu and the lu_pivots pe_lu recorded over the same matrix are one
 *     call (one getrf), at the lu's position;
 *   - a matmul operand that is a plain 2-d transpose of an array stored
 *     before the call, read by nothing else and invisible after the batch,
 *     is bound as that array with PE_INTR_TRANS_A/B (cblas's CblasTrans):
 *     the transpose stays a lazy view, never computed;
 *   - the epilogue alpha * (a @ b) + beta * c (alpha, beta 0-d constants,
 *     either left out; the product, its scaling and beta * c each read once
 *     and released in the batch) is one gemm with alpha and beta, run at
 *     the add's position: the product and the map after it are never
 *     stored apart.
 * Every decision reads only what the batch's trace key fixes (liveness,
 * releases, shapes, dtypes, which operands are constants), so a cached
 * sequence fits every batch of its key. */
#include <stdlib.h>
#include <string.h>

#include "intrinsic_plan.h"
#include "../../exec/base/grow.h"

static bool in_batch(const pe_port *p, uint32_t epoch) { return p->state == PE_PORT_PENDING && p->batch == epoch; }

/* Read once, by a consumer in the batch, and invisible after it. */
static bool read_once_inside(const pe_port *p, uint32_t epoch)
{
    return in_batch(p, epoch) && p->released_in_batch && p->live_consumers == 1 && !p->demanded_in_batch;
}

static bool is_scalar_constant(const pe_port *q)
{
    return pe_port_is_uniform(q) && q->numel == 1;
}

static bool same_shape(const pe_port *a, const pe_port *b)
{
    return a->rank == b->rank && memcmp(a->shape, b->shape, sizeof a->shape[0] * a->rank) == 0;
}

/* The live consumer in the batch of p (read once), or UINT32_MAX. */
static uint32_t consumer_of(const pe_entry *entries, size_t n, uint32_t pi, uint32_t epoch)
{
    for (size_t j = pe_port_at(pi)->queue_pos + 1; j < n; j++) {
        if (entries[j].kind != PE_ENTRY_COMPUTE) continue;
        const pe_port *q = pe_port_at(entries[j].port);
        if (!in_batch(q, epoch) || pe_port_dead_in_batch(q)) continue;
        for (int k = 0; k < q->n_in; k++)
            if (q->in[k] == pi) return entries[j].port;
    }
    return UINT32_MAX;
}

/* mul(s, x) or mul(x, s) with s a 0-d constant, over x's shape and dtype:
 * the constant's port, else UINT32_MAX. */
static uint32_t scaling_of(const pe_port *m, uint32_t xi)
{
    const pe_port *x = pe_port_at(xi);
    if (m->op != PE_OP_mul || m->dtype != x->dtype || !same_shape(m, x)) return UINT32_MAX;
    for (int k = 0; k < 2; k++)
        if (m->in[k] == xi && is_scalar_constant(pe_port_at(m->in[1 - k]))) return m->in[1 - k];
    return UINT32_MAX;
}

static bool claim(pe_intrinsic_plan *plan, uint32_t port)
{
    if (!PE_GROW(plan->claimed, plan->cap_claimed, plan->n_claimed + 1)) return false;
    plan->claimed[plan->n_claimed++] = port;
    return true;
}

bool pe_intrinsic_plan_claims(const pe_intrinsic_plan *plan, uint32_t port)
{
    for (size_t i = 0; i < plan->n_claimed; i++)
        if (plan->claimed[i] == port) return true;
    return false;
}

const pe_intrinsic_call *pe_intrinsic_plan_at(const pe_intrinsic_plan *plan, uint32_t port)
{
    for (size_t i = 0; i < plan->n; i++)
        if (plan->calls[i].at == port) return &plan->calls[i];
    return NULL;
}

/* A matmul operand: the array it transposes where that can be read in place
 * (PE_INTR_TRANS_A << k), else itself. */
static uint32_t operand(uint32_t qi, int k, uint32_t epoch, uint8_t *flags)
{
    pe_port *t = pe_port_at(qi);
    if (t->op != PE_OP_transpose || t->rank != 2 || t->param[0] != 1 || !read_once_inside(t, epoch)) return qi;
    const pe_port *x = pe_port_at(t->in[0]);
    /* stored before the call: computed by the batch as a value of its own (not read through), or a value */
    bool stored = in_batch(x, epoch) ? !x->lazy_view : x->state == PE_PORT_READY && !pe_port_is_uniform(x);
    if (!stored || x->rank != 2) return qi;
    t->lazy_view = true; /* never computed: the call reads x */
    *flags |= (uint8_t)(PE_INTR_TRANS_A << k);
    return t->in[0];
}

#define NONE UINT32_MAX

/* Whether a call planned before `call` (this one is the plan's last) runs
 * at port or takes it as a member. */
static bool taken_by_earlier_call(const pe_intrinsic_plan *plan, const pe_intrinsic_call *call, uint32_t port)
{
    for (const pe_intrinsic_call *c = plan->calls; c < call; c++)
        if (c->at == port) return true;
    return pe_intrinsic_plan_claims(plan, port);
}

/* A matmul and the epilogue after it that its call takes. */
static bool plan_matmul(pe_intrinsic_plan *plan, const pe_entry *entries, size_t n, uint32_t mi, uint32_t epoch,
                        pe_intrinsic_call *call)
{
    const pe_port *m = pe_port_at(mi);
    call->bind[0] = operand(m->in[0], 0, epoch, &call->flags);
    call->bind[1] = operand(m->in[1], 1, epoch, &call->flags);
    call->n_bind = 2;
    uint32_t scaled = NONE, alpha = NONE, sum = NONE, c = NONE, scaled_c = NONE, beta = NONE, top = mi;
    uint32_t next = pe_dtype_is_float((pe_dtype)m->dtype) && read_once_inside(m, epoch) ? consumer_of(entries, n, mi, epoch) : NONE;
    /* an add of two products is one call's epilogue, not both's: the other
     * product (scaled or not) is then its c, computed by its own call before
     * (two calls at the add each took the other as c, and one product was
     * lost); a map another call takes is that call's */
    if (next != NONE && taken_by_earlier_call(plan, call, next)) next = NONE;
    if (next != NONE && (alpha = scaling_of(pe_port_at(next), mi)) != NONE) { /* alpha * (a @ b) */
        scaled = top = next;
        next = read_once_inside(pe_port_at(scaled), epoch) ? consumer_of(entries, n, scaled, epoch) : NONE;
    }
    if (next != NONE && taken_by_earlier_call(plan, call, next)) next = NONE;
    const pe_port *q = next != NONE ? pe_port_at(next) : NULL;
    if (q && q->op == PE_OP_add && q->dtype == m->dtype && same_shape(q, m) && q->in[0] != q->in[1]) {
        uint32_t other = q->in[0] == top ? q->in[1] : q->in[0];
        const pe_port *o = pe_port_at(other);
        if (read_once_inside(o, epoch) && o->op == PE_OP_mul) /* beta * c */
            for (int k = 0; k < 2 && c == NONE; k++)
                if (is_scalar_constant(pe_port_at(o->in[1 - k])) && scaling_of(o, o->in[k]) != NONE)
                    beta = o->in[1 - k], c = o->in[k], scaled_c = other;
        if (c == NONE) c = other;
        const pe_port *cp = pe_port_at(c);
        /* c is read from its buffer: not a lazy view */
        if (cp->dtype == m->dtype && same_shape(cp, m) && !pe_is_lazy_view(cp, epoch)) sum = next;
        else c = scaled_c = beta = NONE;
    }
    /* members in queue order: the product, its scaling and beta * c, the sum */
    call->members[call->n_members++] = mi;
    if (scaled != NONE && scaled_c != NONE && pe_port_at(scaled_c)->queue_pos < pe_port_at(scaled)->queue_pos) {
        call->members[call->n_members++] = scaled_c;
        call->members[call->n_members++] = scaled;
    } else {
        if (scaled != NONE) call->members[call->n_members++] = scaled;
        if (scaled_c != NONE) call->members[call->n_members++] = scaled_c;
    }
    if (sum != NONE) call->members[call->n_members++] = sum;
    uint32_t extra[3] = {c, alpha, beta};
    uint8_t flag[3] = {PE_INTR_C, PE_INTR_ALPHA, PE_INTR_BETA};
    for (int i = 0; i < 3; i++)
        if (extra[i] != NONE) {
            call->bind[call->n_bind++] = extra[i];
            call->flags |= flag[i];
        }
    call->at = call->members[call->n_members - 1];
    for (int i = 0; i < call->n_members - 1; i++)
        if (!claim(plan, call->members[i])) return false;
    return true;
}

/* lu and lu_pivots of one matrix: one call at the first of them. */
static bool plan_lu(pe_intrinsic_plan *plan, const pe_entry *entries, size_t n, uint32_t li, uint32_t epoch,
                    pe_intrinsic_call *call)
{
    const pe_port *l = pe_port_at(li);
    call->members[call->n_members++] = li;
    call->bind[call->n_bind++] = l->in[0];
    call->at = li;
    pe_op partner = l->op == PE_OP_lu ? PE_OP_lu_pivots : PE_OP_lu;
    for (size_t j = l->queue_pos + 1; j < n; j++) {
        if (entries[j].kind != PE_ENTRY_COMPUTE) continue;
        uint32_t pi = entries[j].port;
        const pe_port *p = pe_port_at(pi);
        if (p->op != partner || p->in[0] != l->in[0] || !in_batch(p, epoch) || pe_port_dead_in_batch(p) ||
            pe_intrinsic_plan_claims(plan, pi))
            continue;
        call->members[call->n_members++] = pi;
        return claim(plan, pi);
    }
    return true;
}

bool pe_intrinsic_plan_make(const pe_entry *entries, size_t n, uint32_t epoch, pe_intrinsic_plan *plan)
{
    *plan = (pe_intrinsic_plan){0};
    for (size_t i = 0; i < n; i++) {
        if (entries[i].kind != PE_ENTRY_COMPUTE) continue;
        uint32_t pi = entries[i].port;
        const pe_port *p = pe_port_at(pi);
        if (pe_op_table[p->op].kind != PE_KIND_INTRINSIC || !in_batch(p, epoch) || pe_port_dead_in_batch(p) ||
            pe_intrinsic_plan_claims(plan, pi))
            continue;
        if (!PE_GROW(plan->calls, plan->cap, plan->n + 1)) goto oom;
        pe_intrinsic_call *call = &plan->calls[plan->n++];
        *call = (pe_intrinsic_call){0};
        bool ok;
        if (p->op == PE_OP_matmul) {
            ok = plan_matmul(plan, entries, n, pi, epoch, call);
        } else if (p->op == PE_OP_lu || p->op == PE_OP_lu_pivots) {
            ok = plan_lu(plan, entries, n, pi, epoch, call);
        } else {
            call->members[call->n_members++] = pi;
            for (int k = 0; k < p->n_in; k++) call->bind[call->n_bind++] = p->in[k];
            call->at = pi;
            ok = true;
        }
        if (!ok) goto oom;
    }
    return true;
oom:
    pe_intrinsic_plan_free(plan);
    return false;
}

bool pe_intrinsic_program(const pe_intrinsic_call *call, pe_program *out)
{
    *out = (pe_program){.kind = PE_PROG_INTRINSIC, .port = call->at, .numel = pe_port_at(call->at)->numel,
                        .n_members = call->n_members, .n_bind = call->n_bind, .flags = call->flags};
    out->members = malloc(sizeof *out->members * (size_t)call->n_members);
    out->bind = malloc(sizeof *out->bind * (size_t)call->n_bind);
    if (!out->members || !out->bind) {
        free(out->members), free(out->bind);
        return false;
    }
    memcpy(out->members, call->members, sizeof *out->members * (size_t)call->n_members);
    memcpy(out->bind, call->bind, sizeof *out->bind * (size_t)call->n_bind);
    return true;
}

void pe_intrinsic_plan_free(pe_intrinsic_plan *plan)
{
    free(plan->calls);
    free(plan->claimed);
    *plan = (pe_intrinsic_plan){0};
}
