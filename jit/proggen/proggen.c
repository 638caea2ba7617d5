/* proggen.c — the program generator (the patent's ProgGen) over one batch of
 * the work queue:
 *   backward pass: live consumers of every port within the batch; a port the
 *     batch released (RELEASE entry) and no live consumer reads is dead and
 *     is skipped;
 *   forward pass: element-wise ports and generators of one iteration shape
 *     are fused into a kernel in queue order, and a full reduction of that
 *     shape ends it.  Values made and consumed inside the kernel stay
 *     in registers (scalar replacement: a released intermediate never gets a
 *     buffer, nor one the application holds but nothing demands: it stays an
 *     expression, exec/base/deferred.c); loads are shared and common subexpressions computed once
 *     (and, where the fusion rules say, stored once: members of equal value share the buffer);
 *     operands of other shapes are read through broadcast strides, views
 *     through their index maps (viewmap.c: a view nothing demands is never
 *     computed, PE_PROG_VIEW), a concat's parts through theirs, clamped, and
 *     selected by coordinate (a concat only concats read and the
 *     application let go is never computed either: its readers select from
 *     its parts, a nest of concats one multi-way select — pad, slice_update),
 *     a gather's array at the positions the kernel
 *     computes (out of range: a flag, see kir.h), and uniform constants are passed as scalar
 *     parameters.  A reduction along an axis ends its kernel as a full one
 *     does (launched over its results).  A port the code generator cannot
 *     emit closes the kernel and runs on the interpreter.  An intrinsic
 *     (a library call, intrinsic_plan.c) closes the kernel too: its
 *     producers were fused into the kernels before it, its consumers go into
 *     the kernels after it.
 * The sequence keeps queue order between programs, so every dependency is
 * met by the time a program runs. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "proggen.h"
#include "intrinsic_plan.h"
#include "../kir/codegen.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/shape.h"
#define NO_VALUE UINT16_MAX
/* The most parts a concat reads through the lazy concats among them (pad
 * on both sides is 3; a nest bounded so that a fresh kernel holds it). */
#define MAX_LAZY_CONCAT_LEAVES 8

typedef struct {
    uint32_t port;
    uint16_t value;
    bool member;            /* computed by this kernel (else a loaded parameter) */
    uint32_t internal_uses; /* consumer edges from members */
} binding;

typedef struct {
    bool open;
    int rank;
    int64_t shape[PE_MAX_RANK];
    kir_kernel *k;
    uint32_t bind[KIR_MAX_PARAMS];
    binding map[KIR_MAX_BODY];
    int n_map;
    uint32_t members[KIR_MAX_BODY];
    int n_members;
    uint32_t epoch; /* the batch's: ports' key fields of this epoch are this batch's key */
    bool shaped; /* a broadcast parameter or a generator needs the iteration shape in the kernel */
    bool shares_stores; /* the fusion rules': members of equal value share one store */
    int64_t stream_min_bytes; /* the fusion rules': outputs from this size stream past the caches (0: never) */
    int lowering_growth; /* instructions kir_lower will add to the body when the kernel is closed */
    int n_row_reductions; /* axis reductions the kernel holds (row_reduction_emittable) */
} group;

static bool seq_push(pe_program_seq *seq, pe_program p)
{
    if (!PE_GROW(seq->progs, seq->cap, seq->n + 1)) return false;
    seq->progs[seq->n++] = p;
    return true;
}

static bool same_shape(const pe_port *p, int rank, const int64_t *shape)
{
    if (p->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if (p->shape[d] != shape[d]) return false;
    return true;
}

static binding *lookup(group *g, uint32_t port)
{
    for (int i = 0; i < g->n_map; i++)
        if (g->map[i].port == port) return &g->map[i];
    return NULL;
}

static uint16_t append(group *g, kir_inst inst)
{
    g->k->body[g->k->n_body] = inst;
    return (uint16_t)g->k->n_body++;
}

/* Whether map m (over the group's shape) reads the results of an axis
 * reduction of the group broadcast back along its axis: result r of the
 * row at coordinates c (row-major over the other axes), whatever c[axis]. */
static bool is_row_broadcast(const group *g, const kir_param *m)
{
    if (!g->k->axis_reduction || m->offset != 0) return false;
    int64_t s = 1;
    for (int d = g->rank - 1; d >= 0; d--) {
        bool along = d == g->k->reduce_axis;
        if (g->shape[d] != 1 && (m->stride[d] != (along ? 0 : s) || m->wrap[d] || m->hi[d])) return false;
        if (!along) s *= g->shape[d];
    }
    return true;
}

/* The member whose value operand q is in the open kernel, where q reads a
 * row reduction of it broadcast back (directly or through lazy views);
 * NULL otherwise. */
static binding *row_result(group *g, uint32_t qi)
{
    if (!g->open || !g->k->axis_reduction) return NULL;
    const pe_port *q = pe_port_at(qi);
    kir_param m, placed;
    uint32_t root;
    if (!pe_view_map(qi, g->epoch, &m, &root)) return NULL;
    binding *b = lookup(g, root);
    if (!b || !b->member || pe_op_table[pe_port_at(root)->op].kind != PE_KIND_REDUCE) return NULL;
    pe_map_broadcast(&m, q->rank, q->shape, g->rank, g->shape, &placed);
    return is_row_broadcast(g, &placed) ? b : NULL;
}

/* The value of operand q inside the kernel: a member's, or a new load. */
static uint16_t operand_value(group *g, uint32_t qi)
{
    binding *b = lookup(g, qi);
    if (b && !(b->member && pe_op_table[pe_port_at(qi)->op].kind == PE_KIND_REDUCE)) {
        if (b->member) b->internal_uses++;
        return b->value;
    }
    b = row_result(g, qi); /* the pre-check (reads_member_unfused) let only these through */
    if (b) return b->value;
    pe_port *q = pe_port_at(qi);
    if (pe_port_is_uniform(q) && !q->literal && q->key_epoch == g->epoch && q->key_same_as != q->key_external)
        for (int i = 0; i < g->n_map; i++) { /* the key says an earlier scalar has its value: share its load */
            const pe_port *e = pe_port_at(g->map[i].port);
            if (!g->map[i].member && pe_port_is_uniform(e) && e->key_epoch == g->epoch &&
                e->key_same_as == q->key_same_as) {
                g->map[g->n_map++] = (binding){qi, g->map[i].value, false, 0};
                return g->map[i].value;
            }
        }
    kir_param *param = &g->k->params[g->k->n_params];
    memset(param, 0, sizeof *param);
    uint32_t bound = qi;
    if (pe_port_is_uniform(q) && q->literal) {
        param->kind = KIR_IN_LITERAL;
        param->value = q->value;
    } else if (pe_port_is_uniform(q)) {
        param->kind = KIR_IN_SCALAR;
    } else {
        kir_param m;
        pe_view_map(qi, g->epoch, &m, &bound); /* the pre-pass made every lazy view's map compose */
        pe_map_broadcast(&m, q->rank, q->shape, g->rank, g->shape, param);
        if (same_shape(q, g->rank, g->shape) && pe_map_is_contiguous(param, g->rank, g->shape)) {
            memset(param, 0, sizeof *param);
            param->kind = KIR_IN_CONTIG;
        } else {
            g->shaped = true;
        }
    }
    param->dtype = q->dtype;
    g->bind[g->k->n_params] = bound;
    uint16_t p = (uint16_t)g->k->n_params++;
    uint16_t v = append(g, (kir_inst){.kind = KIR_LOAD, .dtype = q->dtype, .n = 1, .a = {p}});
    g->map[g->n_map++] = (binding){qi, v, false, 0};
    return v;
}

/* A load of the array `root` through map `m` (its dtype set here); not
 * shared with other loads of it, whose maps differ. */
static uint16_t load_through(group *g, const kir_param *m, uint32_t root, pe_dtype dtype)
{
    kir_param *param = &g->k->params[g->k->n_params];
    *param = *m;
    param->dtype = dtype;
    g->shaped = true;
    g->bind[g->k->n_params] = root;
    return append(g, (kir_inst){.kind = KIR_LOAD, .dtype = dtype, .n = 1, .a = {(uint16_t)g->k->n_params++}});
}

/* Instructions the pair lowering (kir_complex.c) will add for port p, at
 * most: its op's steps, 2 for the second part of its store, and per
 * operand 3 (the second part of its load, or a real operand's conversion
 * and zero imaginary part, or a complex one's two conversions), but none
 * for a complex member of the kernel in p's part type (a pair already). */
static int complex_growth(const group *g, const pe_port *p)
{
    bool complex = pe_dtype_is_complex((pe_dtype)p->dtype) || pe_dtype_is_complex((pe_dtype)p->ctype);
    for (int k = 0; k < p->n_in; k++) complex = complex || pe_dtype_is_complex((pe_dtype)pe_port_at(p->in[k])->dtype);
    if (!complex) return 0;
    int n = kir_complex_growth((pe_op)p->op) + 2;
    for (int k = 0; k < p->n_in; k++) {
        pe_dtype t = (pe_dtype)pe_port_at(p->in[k])->dtype;
        bool member = false;
        for (int i = 0; i < g->n_map; i++) member = member || (g->map[i].port == p->in[k] && g->map[i].member);
        bool pair = member && pe_dtype_is_complex(t) && pe_dtype_real_part(t) == pe_dtype_real_part((pe_dtype)p->ctype);
        n += pair ? 0 : 3;
    }
    return n;
}

static void bind_member(group *g, uint32_t pi, uint16_t v)
{
    g->lowering_growth += complex_growth(g, pe_port_at(pi));
    g->map[g->n_map++] = (binding){pi, v, true, 0};
    g->members[g->n_members++] = pi;
}

/* A view computed by the kernel (read or mapped, or read by a program the
 * interpreter runs): its elements loaded through its map. */
static void add_view_member(group *g, uint32_t pi)
{
    kir_param m;
    uint32_t root;
    pe_view_map_through(pi, g->epoch, &m, &root); /* the pre-pass checked that it composes */
    bind_member(g, pi, load_through(g, &m, root, (pe_dtype)pe_port_at(pi)->dtype));
}

/* Instruction op's value: an equal one the body has (a common
 * subexpression), else op appended. */
static uint16_t value_of(group *g, kir_inst op)
{
    for (int i = 0; i < g->k->n_body; i++) {
        const kir_inst *b = &g->k->body[i];
        if (b->kind == op.kind && b->op == op.op && b->dtype == op.dtype && b->ctype == op.ctype && b->n == op.n &&
            b->imm == op.imm && memcmp(b->a, op.a, sizeof op.a) == 0) /* all of a[]: a generator keeps its axis there */
            return (uint16_t)i;
    }
    g->lowering_growth += op.kind == KIR_OP ? kir_lower_growth((pe_op)op.op) : 0;
    return append(g, op);
}

/* Whether q is a concat its consumer concats select from in place (one
 * multi-way select): lazy, never computed (choose_lazy_views). */
static bool is_lazy_concat(const pe_port *q, uint32_t epoch)
{
    return q->op == PE_OP_concat && pe_is_lazy_view(q, epoch);
}

/* The leaves of concat p: its parts, a lazy concat's counted through. */
static int concat_leaves(const pe_port *p, uint32_t epoch)
{
    int n = 0;
    for (int k = 0; k < 2; k++) {
        const pe_port *q = pe_port_at(p->in[k]);
        n += is_lazy_concat(q, epoch) ? concat_leaves(q, epoch) : 1;
    }
    return n;
}

/* The value of concat p placed at `offset` in the kernel's coordinates
 * (the kernel's element y is p's y - offset): each part loaded through its
 * map placed there (clamped into its own block on every axis it does not
 * span, so each load stays inside its array whichever part the select
 * keeps), a lazy concat's parts likewise one level in, then the select by
 * the kernel's coordinate along p's axis. */
static uint16_t concat_value(group *g, const pe_port *p, const int64_t *offset)
{
    int axis = (int)p->param[0];
    kir_inst op = {.kind = KIR_OP, .op = PE_OP_concat, .dtype = p->dtype, .ctype = p->ctype, .n = 2, .a = {0, 0, (uint16_t)axis}};
    /* the select reads the coordinate along the axis: the kernel iterates its shape even when
     * no part is loaded through a map (two uniform parts: a rank-0 kernel trapped, issue 36) */
    g->shaped = true;
    uint16_t part[2] = {NO_VALUE, NO_VALUE};
    int64_t start = 0;
    for (int k = 0; k < 2; k++) {
        const pe_port *q = pe_port_at(p->in[k]);
        int64_t count = q->shape[axis], at[PE_MAX_RANK];
        memcpy(at, offset, sizeof at[0] * (size_t)g->rank);
        at[axis] += start;
        if (k == 0) op.imm = offset[axis] + count;
        start += count;
        if (count > 0 && is_lazy_concat(q, g->epoch)) {
            part[k] = concat_value(g, q, at);
            continue;
        }
        kir_param m, placed;
        uint32_t root;
        pe_view_map(p->in[k], g->epoch, &m, &root);
        bool loaded = true;
        placed = m;
        for (int d = 0; d < g->rank && loaded; d++) /* clamped along each axis the part does not span */
            if (at[d] != 0 || q->shape[d] != g->shape[d]) {
                kir_param before = placed;
                loaded = pe_map_concat_part(&before, d, at[d], q->shape[d], &placed);
            }
        if (count > 0 && pe_port_is_uniform(pe_port_at(root))) /* zeros padding a shift (pe_conv): no buffer to load */
            part[k] = operand_value(g, root);
        else if (loaded) part[k] = load_through(g, &placed, root, (pe_dtype)q->dtype);
        else if (p->numel == 0) part[k] = load_through(g, &m, root, (pe_dtype)q->dtype); /* never read: no iterations */
    }
    op.a[0] = part[0] != NO_VALUE ? part[0] : part[1]; /* an empty part is never selected */
    op.a[1] = part[1] != NO_VALUE ? part[1] : part[0];
    return value_of(g, op);
}

static void add_concat_member(group *g, uint32_t pi)
{
    const int64_t at[PE_MAX_RANK] = {0};
    bind_member(g, pi, concat_value(g, pe_port_at(pi), at));
}

/* The kernel's out-of-range flag for gathers (one per kernel, bound to its
 * first gather). */
static uint16_t gather_flag(group *g, uint32_t pi)
{
    for (int i = 0; i < g->k->n_params; i++)
        if (g->k->params[i].kind == KIR_OUT_FLAG) return (uint16_t)i;
    g->k->params[g->k->n_params] = (kir_param){.kind = KIR_OUT_FLAG, .dtype = PE_I32};
    g->bind[g->k->n_params] = pi;
    return (uint16_t)g->k->n_params++;
}

/* gather: the index computed in the kernel, the array read at it (stored
 * before the kernel runs: never lazy, never a member). */
static void add_gather_member(group *g, uint32_t pi)
{
    pe_port *p = pe_port_at(pi), *x = pe_port_at(p->in[0]);
    uint16_t index = operand_value(g, p->in[1]);
    g->k->params[g->k->n_params] = (kir_param){.kind = KIR_IN_GATHERED, .dtype = x->dtype, .extent = x->numel};
    g->bind[g->k->n_params] = p->in[0];
    uint16_t array = (uint16_t)g->k->n_params++;
    uint16_t flag = gather_flag(g, pi);
    bind_member(g, pi, append(g, (kir_inst){.kind = KIR_GATHER, .dtype = x->dtype, .n = 3, .a = {array, index, flag}}));
}

/* The port a kernel reading q binds: q, or the array a lazy view q reads. */
static uint32_t root_of(uint32_t qi, uint32_t epoch)
{
    kir_param m;
    uint32_t root = qi;
    pe_view_map(qi, epoch, &m, &root);
    return root;
}

/* The composable views: index maps of their source (viewmap.c). */
static bool is_map_view(pe_op op)
{
    return op == PE_OP_reshape || op == PE_OP_transpose || op == PE_OP_slice || op == PE_OP_periodic || op == PE_OP_spread;
}

/* The arrays concat p's leaves read (a lazy concat's through it) into
 * roots from position n; the new count. */
static int concat_roots(const pe_port *p, uint32_t epoch, uint32_t *roots, int n)
{
    for (int k = 0; k < 2; k++) {
        const pe_port *q = pe_port_at(p->in[k]);
        if (is_lazy_concat(q, epoch)) n = concat_roots(q, epoch, roots, n);
        else roots[n++] = root_of(p->in[k], epoch);
    }
    return n;
}

/* Whether p reads an array the open kernel computes other than in
 * registers (a kernel reads only what is stored before it runs): through a
 * view (a view's source, a concat's parts, a gather's array, a lazy view's
 * root), or a reduction's results other than broadcast back along its
 * axis. */
static bool reads_member_unfused(group *g, const pe_port *p, uint32_t pi)
{
    if (!g->open) return false;
    uint32_t roots[MAX_LAZY_CONCAT_LEAVES + 2 * PE_PORT_MAX_INPUTS];
    int n = 0;
    if (p->op == PE_OP_concat) {
        n = concat_roots(p, g->epoch, roots, 0);
    } else if (p->op == PE_OP_gather) {
        roots[n++] = p->in[0];
    } else if (pe_op_table[p->op].kind == PE_KIND_VIEW) {
        kir_param m;
        pe_view_map_through(pi, g->epoch, &m, &roots[n]);
        n++;
    }
    for (int k = 0; k < p->n_in; k++) {
        const pe_port *q = pe_port_at(p->in[k]);
        if (row_result(g, p->in[k])) continue; /* each row's, in a register */
        if (is_lazy_concat(q, g->epoch)) continue; /* its parts' roots: concat_roots, above */
        if (pe_is_lazy_view(q, g->epoch) || pe_op_table[q->op].kind == PE_KIND_REDUCE) roots[n++] = root_of(p->in[k], g->epoch);
    }
    for (int i = 0; i < n; i++) {
        const binding *b = lookup(g, roots[i]);
        if (b && b->member) return true;
    }
    return false;
}

static void add_member(group *g, uint32_t pi)
{
    pe_port *p = pe_port_at(pi);
    kir_inst op = {.kind = KIR_OP, .op = p->op, .dtype = p->dtype, .ctype = p->ctype, .n = p->n_in};
    for (int k = 0; k < p->n_in; k++) op.a[k] = operand_value(g, p->in[k]);
    if (pe_op_table[p->op].kind == PE_KIND_GENERATOR) { /* values from the element's coordinates */
        if (p->op == PE_OP_index) op.a[0] = (uint16_t)p->param[0];
        if (kir_is_random(p->op)) op.imm = p->param[0]; /* the rounds; key and draw are the operands */
        g->shaped = true;
    }
    bind_member(g, pi, value_of(g, op));
}

/* Whether member binding b gets a store when its kernel closes: something
 * outside the kernel reads it, or the application holds it and demands it
 * or has nothing else compute from it (not the deferred ones:
 * exec/base/deferred.c). */
static bool gets_store(const binding *b)
{
    const pe_port *p = pe_port_at(b->port);
    if (!b->member || pe_op_table[p->op].kind == PE_KIND_REDUCE) return false; /* a reduction's result is the partials */
    uint32_t outside_uses = p->live_consumers - b->internal_uses;
    bool visible = !p->released_in_batch || outside_uses > 0;
    return visible && !pe_port_deferrable(p, outside_uses);
}

/* Room for one more member: its loads, its op, and the stores.  A store per
 * member bounds them; where that bound is too much (a long chain of held
 * values, most of them consumed inside) the stores are counted as they
 * would be made if the kernel closed now, plus the new member's: a later
 * member only ever adds internal uses, so the count never grows back. */
static bool has_room(const group *g, const pe_port *p)
{
    /* a lazy concat's parts are loads of this kernel too, and its select an instruction */
    int n_in = p->op == PE_OP_concat ? 2 * concat_leaves(p, g->epoch) : p->n_in;
    int body = g->k->n_body + g->lowering_growth + kir_lower_growth((pe_op)p->op) + complex_growth(g, p); /* once lowered */
    if (g->n_map + n_in + 1 >= KIR_MAX_BODY) return false;
    int stores = g->n_members;
    for (int pass = 0; pass < 2; pass++) {
        /* + 1: a gather's flag */
        if (g->k->n_params + n_in + 1 + stores + 1 < KIR_MAX_PARAMS && body + n_in + 1 + stores + 1 < KIR_MAX_BODY)
            return true;
        stores = 0;
        for (int i = 0; i < g->n_map; i++) stores += gets_store(&g->map[i]);
    }
    return false;
}

static bool open_group(group *g, int rank, const int64_t *shape, uint32_t epoch, const pe_fusion_rules *rules)
{
    memset(g, 0, sizeof *g);
    g->epoch = epoch;
    g->k = calloc(1, sizeof *g->k);
    if (!g->k) return false;
    g->open = true;
    g->shares_stores = rules->shares_stores;
    g->stream_min_bytes = rules->stream_min_bytes ? rules->stream_min_bytes() : 0;
    g->rank = rank;
    memcpy(g->shape, shape, sizeof g->shape[0] * (size_t)rank);
    return true;
}

/* A full reduction ends the kernel: its producers are fused into it and its
 * result is a partial per chunk, combined by the executor. */
static void add_reduction(group *g, uint32_t pi)
{
    pe_port *p = pe_port_at(pi);
    kir_inst red = {.kind = KIR_REDUCE, .op = p->op, .dtype = PE_F64, .ctype = p->ctype, .n = (uint8_t)(p->n_in + 1)};
    for (int k = 0; k < p->n_in; k++) red.a[k + 1] = operand_value(g, p->in[k]);
    g->k->params[g->k->n_params] = (kir_param){.kind = KIR_OUT_PARTIAL, .dtype = PE_F64};
    g->bind[g->k->n_params] = pi;
    red.a[0] = (uint16_t)g->k->n_params++;
    append(g, red);
    g->members[g->n_members++] = pi;
}

/* An axis reduction ends the kernel: its producers are fused into it, the
 * iteration shape is its operand's, and it stores its result. */
static void add_axis_reduction(group *g, uint32_t pi)
{
    pe_port *p = pe_port_at(pi);
    kir_inst red = {.kind = KIR_REDUCE, .op = p->op, .dtype = p->dtype, .ctype = p->ctype, .n = 2};
    red.a[1] = operand_value(g, p->in[0]);
    g->k->params[g->k->n_params] = (kir_param){.kind = KIR_OUT, .dtype = p->dtype};
    g->bind[g->k->n_params] = pi;
    red.a[0] = (uint16_t)g->k->n_params++;
    g->k->axis_reduction = true;
    g->k->reduce_axis = (uint8_t)p->param[0];
    g->shaped = true;
    g->n_row_reductions++;
    bind_member(g, pi, append(g, red)); /* later members read its value broadcast back (row_broadcast) */
}


static int member_index(const group *g, uint32_t port)
{
    for (int m = 0; m < g->n_members; m++)
        if (g->members[m] == port) return m;
    return -1;
}

/* Adds the stores of members a program outside the kernel reads, or the
 * application holds and demands or has nothing else compute from (not the
 * deferred ones: exec/base/deferred.c), and emits the kernel.  A value two
 * such members compute (a common subexpression) is stored once: by a member
 * a later program reads (it reads that port's buffer), else by the first;
 * the others share its buffer when the kernel has run (pe_program.shares),
 * where the fusion rules say so.  Only a second member that a later program
 * reads gets a store of its own. */
/* The bytes k stores per iteration. */
static int64_t out_bytes(const kir_kernel *k)
{
    int64_t bytes = 0;
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_OUT) bytes += (int64_t)pe_dtype_table[k->params[p].dtype].size;
    return bytes;
}

static bool close_group(group *g, pe_program_seq *seq)
{
    if (!g->open) return true;
    g->open = false;
    kir_kernel *k = g->k;
    int16_t owner[KIR_MAX_BODY]; /* per value: the map entry that stores it, -1 none */
    uint32_t outside[KIR_MAX_BODY];
    bool stores[KIR_MAX_BODY] = {0};
    memset(owner, 0xff, sizeof owner);
    for (int i = 0; i < g->n_map; i++) {
        binding *b = &g->map[i];
        if (!gets_store(b)) continue;
        pe_port *p = pe_port_at(b->port);
        outside[i] = p->live_consumers - b->internal_uses;
        stores[i] = true;
        if (owner[b->value] < 0 || (outside[i] > 0 && outside[owner[b->value]] == 0)) owner[b->value] = (int16_t)i;
    }
    int16_t shares[KIR_MAX_BODY];
    bool any_share = false;
    for (int m = 0; m < g->n_members; m++) shares[m] = -1;
    for (int i = 0; i < g->n_map; i++) {
        binding *b = &g->map[i];
        if (!stores[i]) continue;
        pe_port *p = pe_port_at(b->port);
        if (g->shares_stores && owner[b->value] != i && outside[i] == 0) {
            shares[member_index(g, b->port)] = (int16_t)member_index(g, g->map[owner[b->value]].port);
            any_share = true;
            continue;
        }
        k->params[k->n_params] = (kir_param){.kind = KIR_OUT, .dtype = p->dtype};
        g->bind[k->n_params] = b->port;
        uint16_t param = (uint16_t)k->n_params++;
        append(g, (kir_inst){.kind = KIR_STORE, .dtype = p->dtype, .n = 2, .a = {param, b->value}});
    }
    /* the generators take primitives only: composed ops become them here,
     * where every kernel passes (has_room kept the room for it) */
    if (!kir_lower(k)) {
        free(k);
        return false;
    }
    kir_schedule(k); /* one body for one computation, whatever the recording order */
    k->rank = g->shaped ? g->rank : 0;
    if (g->shaped) memcpy(k->shape, g->shape, sizeof k->shape);
    uint32_t last = g->members[g->n_members - 1];
    int64_t numel = pe_shape_numel(g->rank, g->shape);
    if (k->axis_reduction) { /* launched over results: one per row along the axis */
        numel = 1;
        for (int d = 0; d < g->rank; d++) numel *= d == k->reduce_axis ? 1 : g->shape[d];
    }
    k->stream_stores = g->stream_min_bytes > 0 && kir_streamable(k) && numel * out_bytes(k) >= g->stream_min_bytes;
    pe_program prog = {.kind = PE_PROG_KERNEL, .port = last, .numel = numel, .kir = k, .n_members = g->n_members};
    prog.bind = malloc(sizeof *prog.bind * (size_t)k->n_params);
    prog.members = malloc(sizeof *prog.members * (size_t)g->n_members);
    prog.shares = any_share ? malloc(sizeof *prog.shares * (size_t)g->n_members) : NULL;
    if (!prog.bind || !prog.members || (any_share && !prog.shares)) {
        free(prog.bind), free(prog.members), free(prog.shares), free(k);
        return false;
    }
    memcpy(prog.bind, g->bind, sizeof *prog.bind * (size_t)k->n_params);
    memcpy(prog.members, g->members, sizeof *prog.members * (size_t)g->n_members);
    if (any_share) memcpy(prog.shares, shares, sizeof *prog.shares * (size_t)g->n_members);
    if (!seq_push(seq, prog)) {
        free(prog.bind), free(prog.members), free(prog.shares), free(k);
        return false;
    }
    return true;
}

/* Whether p goes into a kernel (else the interpreter computes it). */
static bool goes_to_kernel(const pe_port *p, const pe_fusion_rules *rules)
{
    pe_op_kind kind = pe_op_table[p->op].kind;
    pe_dtype operand0 = p->n_in > 0 ? (pe_dtype)pe_port_at(p->in[0])->dtype : (pe_dtype)p->dtype;
    if (!pe_op_table[p->op].fusible) return false;
    if (kind == PE_KIND_VIEW) {
        if (!rules->views || !pe_dtype_table[p->dtype].generated) return false;
        if (is_map_view((pe_op)p->op)) return true;
        for (int k = 0; k < p->n_in; k++) /* concat, gather: the generator's column */
            if (!pe_dtype_table[pe_port_at(p->in[k])->dtype].generated) return false;
        return rules->emittable((pe_op)p->op, (pe_dtype)p->ctype, (pe_dtype)p->dtype, operand0);
    }
    if (kind == PE_KIND_REDUCE && p->param[0] >= 0)
        return rules->views && rules->axis_reduction_emittable &&
               rules->axis_reduction_emittable((pe_op)p->op, (pe_dtype)p->ctype, (pe_dtype)p->dtype) &&
               pe_dtype_table[operand0].generated;
    if (kind != PE_KIND_MAP && kind != PE_KIND_GENERATOR && kind != PE_KIND_REDUCE) return false;
    return rules->emittable((pe_op)p->op, (pe_dtype)p->ctype, (pe_dtype)p->dtype, operand0);
}

/* Which views the batch's kernels read through their maps instead of
 * computing them (pe_port.lazy_view): those nothing demands (a read, map
 * or hint; a value held with no consumer in the batch is stored, as any
 * other: deferred.c), whose every consumer goes into a kernel, and over
 * which every view built on them composes. */
static void choose_lazy_views(const pe_entry *entries, size_t n, uint32_t epoch, const pe_fusion_rules *rules)
{
    for (size_t i = 0; i < n; i++) {
        if (entries[i].kind != PE_ENTRY_COMPUTE) continue;
        pe_port *p = pe_port_at(entries[i].port);
        if (p->state != PE_PORT_PENDING) continue;
        bool candidate = goes_to_kernel(p, rules) && !p->demanded_in_batch;
        p->lazy_view = candidate && is_map_view((pe_op)p->op) && (p->released_in_batch || p->live_consumers > 0);
        /* a concat the application let go whose readers are all concats (below): pad's nest, slice_update's */
        if (p->op == PE_OP_concat) p->lazy_view = candidate && p->released_in_batch && p->live_consumers > 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (entries[i].kind != PE_ENTRY_COMPUTE) continue;
        pe_port *p = pe_port_at(entries[i].port);
        if (p->state != PE_PORT_PENDING || pe_port_dead_in_batch(p)) continue;
        bool takes = goes_to_kernel(p, rules);
        for (int k = 0; k < p->n_in; k++) {
            pe_port *q = pe_port_at(p->in[k]);
            if (pe_is_lazy_view(q, epoch) && !takes) q->lazy_view = false;
            if (is_lazy_concat(q, epoch) && (p->op != PE_OP_concat || p->n_in != 2 || p->in[0] == p->in[1]))
                q->lazy_view = false; /* read otherwise than by a select of concat's: computed */
        }
        if (p->op == PE_OP_concat && p->lazy_view && concat_leaves(p, epoch) > MAX_LAZY_CONCAT_LEAVES)
            p->lazy_view = false; /* a nest too large for one kernel: its top computed */
        kir_param m;
        uint32_t root;
        if (takes && is_map_view((pe_op)p->op) && !pe_view_map_through(entries[i].port, epoch, &m, &root))
            pe_port_at(p->in[0])->lazy_view = false; /* computed: p reads it as it is */
        if (p->op == PE_OP_gather) pe_port_at(p->in[0])->lazy_view = false; /* read at computed positions: stored */
    }
}

bool pe_proggen(const pe_entry *entries, size_t n, uint32_t epoch, const pe_fusion_rules *rules,
                pe_program_seq *out)
{
    assert(pe_api_held());
    pe_reduction_fusible_fn reduction_fusible = rules->reduction_fusible;
    *out = (pe_program_seq){0};
    pe_find_live_consumers(entries, n, epoch);
    choose_lazy_views(entries, n, epoch, rules);
    pe_intrinsic_plan plan;
    if (!pe_intrinsic_plan_make(entries, n, epoch, &plan)) return false;
    group g = {0};
    for (size_t i = 0; i < n; i++) {
        if (entries[i].kind != PE_ENTRY_COMPUTE) continue;
        uint32_t pi = entries[i].port;
        pe_port *p = pe_port_at(pi);
        if (p->state != PE_PORT_PENDING) continue;
        const pe_intrinsic_call *call = pe_port_dead_in_batch(p) ? NULL : pe_intrinsic_plan_at(&plan, pi);
        if (call) {
            pe_program prog;
            if (!close_group(&g, out) || !pe_intrinsic_program(call, &prog)) goto oom;
            if (!seq_push(out, prog)) {
                free(prog.members), free(prog.bind);
                goto oom;
            }
            continue;
        }
        if (pe_intrinsic_plan_claims(&plan, pi)) continue; /* computed by a call at another position */
        if (pe_port_dead_in_batch(p)) {
            if (!seq_push(out, (pe_program){.kind = PE_PROG_SKIP, .port = pi})) goto oom;
            continue;
        }
        if (p->lazy_view) { /* read through by its consumers' kernels */
            if (!seq_push(out, (pe_program){.kind = PE_PROG_VIEW, .port = pi})) goto oom;
            continue;
        }
        pe_op_kind kind = pe_op_table[p->op].kind;
        bool in_kernel = goes_to_kernel(p, rules);
        if (kind == PE_KIND_REDUCE && in_kernel) {
            pe_port *in[2] = {pe_port_at(p->in[0]), pe_port_at(p->in[p->n_in - 1])};
            int rank;
            int64_t shape[PE_MAX_RANK];
            pe_broadcast_shapes(in, p->n_in, &rank, shape);
            /* a reduction along the last axis the generator holds in row
             * passes keeps its kernel open; a kernel holding one takes
             * another only along the same axis */
            bool row = p->param[0] >= 0 && p->param[0] == rank - 1 && rules->row_reduction_emittable &&
                       rules->row_reduction_emittable((pe_op)p->op, (pe_dtype)p->ctype, (pe_dtype)p->dtype);
            bool joins = g.open && g.rank == rank && memcmp(g.shape, shape, sizeof shape[0] * (size_t)rank) == 0 &&
                         has_room(&g, p) && !reads_member_unfused(&g, p, pi) && (!reduction_fusible || reduction_fusible(g.k));
            if (g.open && g.k->axis_reduction)
                joins = joins && row && g.k->reduce_axis == p->param[0] && g.n_row_reductions < PE_MAX_ROW_REDUCTIONS;
            if (g.open && !joins && !close_group(&g, out)) goto oom;
            if (!g.open && !open_group(&g, rank, shape, epoch, rules)) goto oom;
            if (p->param[0] >= 0) add_axis_reduction(&g, pi);
            else add_reduction(&g, pi);
            if (!row && !close_group(&g, out)) goto oom;
            continue;
        }
        if (in_kernel && g.open && !(same_shape(p, g.rank, g.shape) && has_room(&g, p) && !reads_member_unfused(&g, p, pi)))
            if (!close_group(&g, out)) goto oom;
        if (!in_kernel) {
            if (!close_group(&g, out)) goto oom;
            if (!seq_push(out, (pe_program){.kind = PE_PROG_INTERP, .port = pi})) goto oom;
            continue;
        }
        if (!g.open && !open_group(&g, p->rank, p->shape, epoch, rules)) goto oom;
        if (p->op == PE_OP_concat) add_concat_member(&g, pi);
        else if (p->op == PE_OP_gather) add_gather_member(&g, pi);
        else if (kind == PE_KIND_VIEW) add_view_member(&g, pi);
        else add_member(&g, pi);
    }
    if (close_group(&g, out)) {
        pe_intrinsic_plan_free(&plan);
        return true;
    }
oom:
    if (g.open) free(g.k);
    pe_intrinsic_plan_free(&plan);
    pe_program_seq_free(out);
    return false;
}
