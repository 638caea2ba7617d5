/* gccjit_row_passes.c — the CPU generator's reductions along the last axis
 * (gccjit_emit.h): each row in passes, a value computed in the pass after
 * the reductions it reads (x - mean_axis(x, 1), softmax: results broadcast
 * back), a costly value a later pass reads kept in a row-long copy, the
 * reductions of a pass in lanes; rows of at most SHORT_ROW elements walked
 * across the results instead (k-means' distances over a few features). The
 * row's span itself (static segments, wraps) is gccjit_loops.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gccjit_emit.h"

/* The pass over each row in which instruction v is computed (row passes):
 * a reduction's result exists from the pass after the one accumulating it,
 * so a value is computed in the pass after the last reduction it reads. */
static int pass_of(const kir_kernel *k, int v, const int *phase)
{
    int first, n = kir_value_operands(&k->body[v], &first), p = 0; /* a reduction: the pass accumulating it */
    for (int j = first; j < first + n; j++) p = phase[k->body[v].a[j]] > p ? phase[k->body[v].a[j]] : p;
    return p;
}

/* Whether k's reductions run along the last axis each in one pass over the
 * elements (pe_gj_emit_row_passes; var, stddev and f64 norm2 take several:
 * pe_gj_emit_axis_passes). */
bool pe_gj_row_kernel(const kir_kernel *k)
{
    if (!k->axis_reduction || k->reduce_axis != k->rank - 1) return false;
    for (int v = 0; v < k->n_body; v++)
        if (k->body[v].kind == KIR_REDUCE && pe_gj_passes_of(&k->body[v]) > 1) return false;
    return true;
}

/* What pass p over a row emits (emits[v]): its stores and reductions and,
 * back from them, what they read — but a result of an earlier pass (a
 * local already) and a value an earlier pass kept (kept[v]: reload[v]
 * instead).  Its reductions in body order. */
static int pass_emits(const kir_kernel *k, const int *pass, int p, const bool *kept, bool *emits, bool *reload, int *reductions)
{
    int n_red = 0;
    memset(emits, 0, sizeof emits[0] * KIR_MAX_BODY);
    memset(reload, 0, sizeof reload[0] * KIR_MAX_BODY);
    for (int v = k->n_body - 1; v >= 0; v--) {
        const kir_inst *in = &k->body[v];
        bool root = (in->kind == KIR_STORE || in->kind == KIR_REDUCE) && pass[v] == p;
        if (!root && !emits[v]) continue;
        if (!root && kept[v] && pass[v] < p) { /* loaded from the row's copy: its operands are not needed */
            reload[v] = true;
            continue;
        }
        emits[v] = true;
        if (in->kind == KIR_REDUCE) reductions[n_red++] = v;
        int first, n = kir_value_operands(in, &first);
        for (int j = first; j < first + n; j++) emits[in->a[j]] = emits[in->a[j]] || k->body[in->a[j]].kind != KIR_REDUCE;
    }
    for (int r = 0; r < n_red / 2; r++) { /* in body order */
        int t = reductions[r];
        reductions[r] = reductions[n_red - 1 - r], reductions[n_red - 1 - r] = t;
    }
    return n_red;
}

/* Values no longer than a row's copy may hold (elements): a pass keeps a
 * costly value a later pass reads in such a copy (ROW_COPY_MAX of f64 is
 * 64 KB of the launching thread's stack) instead of the later pass
 * computing it again. */
#define ROW_COPY_MAX 8192
#define ROW_COPY_COST 4 /* the catalog's cost (ops.def) from which a copy pays: a store and a load in cache */

/* Value v's row-long local array (made once). */
static void row_copy(emitter *e, const kir_kernel *k, int v, int64_t len)
{
    if (e->row_copy[v]) return;
    gcc_jit_type *row = gcc_jit_context_new_array_type(e->ctx, NULL, type_of(e, (pe_dtype)k->body[v].dtype), (int)len);
    char name[24];
    snprintf(name, sizeof name, "row_copy%d", v);
    e->row_copy[v] = gcc_jit_function_new_local(e->fn, NULL, row, name);
}

/* Whether what a pass emits computes a costly op (the catalog's cost; a
 * value reloaded from its row copy costs a load). */
static bool emits_costly_op(const kir_kernel *k, const bool *emits, const bool *reload)
{
    for (int v = 0; v < k->n_body; v++)
        if (emits[v] && !reload[v] && k->body[v].kind == KIR_OP && pe_op_table[k->body[v].op].cost >= ROW_COPY_COST) return true;
    return false;
}

/* The lanes of a row pass: ROW_LANES where each of its reductions adds
 * doubles (sum, mean, norms: lanes the vectoriser packs whole into
 * registers) and nothing costly is computed, else REDUCE_LANES (keyed
 * extremes in 32 lanes made gcc interleave 16 iterations of the group with
 * permutes, slower than 8). */
static int row_lanes(emitter *e, const kir_kernel *k, const int *reductions, int n_red, const bool *emits, const bool *reload)
{
    int lanes = ROW_LANES;
    if (emits_costly_op(k, emits, reload)) lanes = REDUCE_LANES;
    for (int r = 0; r < n_red; r++) {
        const kir_inst *red = &k->body[reductions[r]];
        if (pe_gj_acc_type(e, red) != e->t_double || is_arg_extreme(red) || pe_reduction_of((pe_op)red->op)->acc == PE_ACC_PROD) lanes = REDUCE_LANES;
    }
    /* no more lanes than the row has elements: a row of 2 (k-means'
     * distances over 2-d points) combined 32 lanes per result */
    while (lanes > 1 && lanes > k->shape[k->rank - 1]) lanes /= 2;
    return lanes;
}

/* One loop along the row at flat index `start` emitting what e->emits
 * says (vectorisable: no lanes, no reduction). */
static void emit_row_loop(emitter *e, const kir_kernel *k, gcc_jit_rvalue *start, int64_t len)
{
    pe_gj_emit_row_span(e, k, start, to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, lng(e, len)), e->t_long), start, NULL);
}

/* A kernel of row passes (pe_gj_emit_row_passes): the pass computing each
 * value, the values the pass computing them keeps for a later one, and
 * what the pass being emitted emits (the emitter's emits, reload,
 * spill_here point here). */
typedef struct {
    int64_t len; /* the row's elements */
    int n_passes;
    int pass[KIR_MAX_BODY];
    bool kept[KIR_MAX_BODY], emits[KIR_MAX_BODY], reload[KIR_MAX_BODY], spill_here[KIR_MAX_BODY];
    int reductions[KIR_MAX_BODY]; /* the pass's reductions, in body order */
} row_plan;

/* Each value's pass, the number of passes, and the values kept (each in a
 * row copy made here). */
static void plan_row_passes(emitter *e, const kir_kernel *k, row_plan *rp)
{
    int64_t len = rp->len;
    int *pass = rp->pass, phase[KIR_MAX_BODY], n_passes = 1;
    for (int v = 0; v < k->n_body; v++) {
        pass[v] = pass_of(k, v, phase);
        phase[v] = pass[v] + (k->body[v].kind == KIR_REDUCE); /* the pass its value exists from */
        if (pass[v] + 1 > n_passes) n_passes = pass[v] + 1;
    }
    /* which values the pass computing them keeps for a later one: costly
     * ones a later pass would compute again */
    bool *kept = rp->kept, *emits = rp->emits, *reload = rp->reload;
    bool computed_in_own_pass[KIR_MAX_BODY] = {0}, read_later[KIR_MAX_BODY] = {0};
    int *reductions = rp->reductions, n_copies = 0;
    for (int p = 0; p < n_passes && len <= ROW_COPY_MAX; p++) {
        pass_emits(k, pass, p, kept, emits, reload, reductions);
        for (int v = 0; v < k->n_body; v++) {
            if (!emits[v]) continue;
            if (pass[v] == p) computed_in_own_pass[v] = true;
            else read_later[v] = true;
        }
    }
    for (int v = 0; v < k->n_body; v++) {
        const kir_inst *in = &k->body[v];
        kept[v] = in->kind == KIR_OP && pe_op_table[in->op].cost >= ROW_COPY_COST && computed_in_own_pass[v] && read_later[v] &&
                  n_copies < 4;
        if (kept[v]) row_copy(e, k, v, len), n_copies++;
    }
    rp->n_passes = n_passes;
}

/* The lanes the reductions of a pass (rp->reductions, n_red of them)
 * accumulate a row in: n of each (row_lanes). */
typedef struct {
    int n;
    gcc_jit_lvalue *acc[KIR_MAX_BODY][MAX_LANES], *comp[KIR_MAX_BODY][MAX_LANES], *at[KIR_MAX_BODY][MAX_LANES];
} row_accumulators;

/* The lanes' locals, at the reductions' identities. */
static void open_row_lanes(emitter *e, const kir_kernel *k, const row_plan *rp, int n_red, row_accumulators *ra)
{
    ra->n = row_lanes(e, k, rp->reductions, n_red, rp->emits, rp->reload);
    for (int r = 0; r < n_red; r++) {
        const kir_inst *red = &k->body[rp->reductions[r]];
        pe_gj_lane_locals(e, red, ra->n, compensated(red), lng(e, 0), ra->acc[r], ra->comp[r], ra->at[r]);
    }
}

/* The body emitted next accumulates into lane l. */
static void into_lane(emitter *e, const row_plan *rp, int n_red, const row_accumulators *ra, int l)
{
    for (int r = 0; r < n_red; r++) {
        int v = rp->reductions[r];
        e->acc_of[v] = ra->acc[r][l], e->comp_of[v] = ra->comp[r][l], e->at_of[v] = ra->at[r][l];
    }
}

/* Each reduction's lanes combined in a fixed order and finished: the row's
 * result, stored at result index `row`, and a local for the passes after. */
static void close_row_lanes(emitter *e, const kir_kernel *k, const row_plan *rp, int n_red, row_accumulators *ra,
                            gcc_jit_rvalue *row)
{
    for (int r = 0; r < n_red; r++) {
        const kir_inst *red = &k->body[rp->reductions[r]];
        gcc_jit_rvalue *hi, *lo;
        pe_gj_combine_all_lanes(e, red, ra->n, ra->acc[r], ra->comp[r], ra->at[r], &hi, &lo);
        gcc_jit_rvalue *result = to_local(e, pe_gj_finish_axis_result(e, red, hi, lo, rp->len), type_of(e, (pe_dtype)red->dtype));
        gcc_jit_block_add_assignment(e->cur, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[red->a[0]], row), result);
        e->val[rp->reductions[r]] = result;
    }
}

/* The reductions of a pass over the row at flat index `start` in lanes,
 * each combined into the row's result: stored at o, and a local for the
 * passes after. */
static void emit_row_lanes(emitter *e, const kir_kernel *k, const row_plan *rp, int n_red, gcc_jit_rvalue *start, gcc_jit_lvalue *o)
{
    int64_t len = rp->len;
    row_accumulators ra;
    open_row_lanes(e, k, rp, n_red, &ra);
    gcc_jit_lvalue *kk = long_local(e, "k", lng(e, 0));
    pe_jit_loop groups = loop_while(e, "lanes", cmp(e, GCC_JIT_COMPARISON_LE, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(kk), lng(e, ra.n)), lng(e, len)));
    for (int l = 0; l < ra.n; l++) {
        e->c_last = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(kk), lng(e, l)), e->t_long);
        e->index = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, e->c_last), e->t_long);
        e->pos = e->c_last;
        into_lane(e, rp, n_red, &ra, l);
        pe_gj_emit_body(e, k);
    }
    loop_step_end(e, &groups, kk, ra.n);
    pe_jit_loop rest = loop_upto(e, "rest", kk, lng(e, len)); /* the elements after the last whole group, into lane 0 */
    e->c_last = rv(kk);
    e->index = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, rv(kk)), e->t_long);
    e->pos = rv(kk);
    into_lane(e, rp, n_red, &ra, 0);
    pe_gj_emit_body(e, k);
    loop_step_end(e, &rest, kk, 1);
    close_row_lanes(e, k, rp, n_red, &ra, rv(o));
}

/* Pass p over the row at flat index `start` (its results at o). */
static void emit_row_pass(emitter *e, const kir_kernel *k, row_plan *rp, int p, gcc_jit_rvalue *start, gcc_jit_lvalue *o)
{
    int64_t len = rp->len;
    const bool *kept = rp->kept;
    bool *emits = rp->emits, *reload = rp->reload, *spill_here = rp->spill_here;
    const int *pass = rp->pass;
    int *reductions = rp->reductions;
    int n_red = pass_emits(k, pass, p, kept, emits, reload, reductions);
    for (int v = 0; v < k->n_body; v++) spill_here[v] = kept[v] && pass[v] == p && emits[v];
    e->emits = emits;
    /* costly values under a reduction (exp of a softmax): one loop
     * computes them into the row's copies (a loop the vectoriser takes,
     * where eight lanes of inline exp are not), then the lanes reduce
     * the copies */
    bool split = n_red > 0 && len <= ROW_COPY_MAX && emits_costly_op(k, emits, reload);
    if (split)
        for (int r = 0; r < n_red; r++) {
            const kir_inst *red = &k->body[reductions[r]];
            emits[reductions[r]] = false;
            for (int j = 1; j < red->n; j++) row_copy(e, k, red->a[j], len), spill_here[red->a[j]] = true;
        }
    if (n_red == 0 || split) { /* stores (and copies) only: one loop along the row */
        emit_row_loop(e, k, start, len);
        if (!split) return;
        memset(emits, 0, sizeof rp->emits), memset(reload, 0, sizeof rp->reload), memset(spill_here, 0, sizeof rp->spill_here);
        for (int r = 0; r < n_red; r++) {
            const kir_inst *red = &k->body[reductions[r]];
            emits[reductions[r]] = true;
            for (int j = 1; j < red->n; j++) emits[red->a[j]] = reload[red->a[j]] = true;
        }
    }
    emit_row_lanes(e, k, rp, n_red, start, o);
}

/* Rows no longer than this (elements) whose reductions take one pass are
 * walked across the results (emit_short_rows).  Rows of 64 took twice the
 * row walk's time that way (sum_axis(x, 1) of 65536 x 64 f32: 1.2-1.4 ms
 * against 0.7-0.8, on x86-64-v3 and v4); rows of 32 about the same. */
#define SHORT_ROW 32

/* Whether k's row passes are one pass over rows of at most SHORT_ROW
 * elements computing nothing costly (emits and reductions of pass 0 left
 * in rp). */
static bool short_rows(const kir_kernel *k, row_plan *rp, int *n_red)
{
    if (k->rank < 2 || rp->len > SHORT_ROW || rp->n_passes != 1) return false;
    *n_red = pass_emits(k, rp->pass, 0, rp->kept, rp->emits, rp->reload, rp->reductions);
    return *n_red > 0 && !emits_costly_op(k, rp->emits, rp->reload);
}

/* Short rows (k-means' distances over 16 features, argmin over 16
 * centroids): one row's loop is a few iterations, and a loop along it left
 * each result scalar (the lanes' setup, combination and finish per row, no
 * vector instruction).  Here the loop runs across consecutive results
 * along the axis before the last (a block: up to the end of that axis or
 * of the launch, coordinates before it hoisted) and each result's row is
 * unrolled into the same lanes in the same order as emit_row_lanes (element
 * c into lane c mod the lanes but the rest after the last whole group,
 * which go into lane 0), combined by the same tree: bitwise the same
 * results, but a loop whose iterations are independent results, which the
 * vectoriser packs. */
static void emit_short_rows(emitter *e, const kir_kernel *k, row_plan *rp, int n_red, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    int64_t len = rp->len, n_kept = k->shape[k->rank - 2];
    memset(rp->spill_here, 0, sizeof rp->spill_here);
    e->emits = rp->emits;
    gcc_jit_lvalue *o = long_local(e, "o", begin);
    pe_jit_loop blocks = loop_upto(e, "o", o, end);
    pe_gj_row_coordinates(e, rv(o), -1);
    gcc_jit_rvalue *c0 = e->coord[k->rank - 2];
    gcc_jit_rvalue *stop = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, lbin(e, GCC_JIT_BINARY_OP_MINUS, rv(o), c0), lng(e, n_kept)), e->t_long);
    stop = to_local(e, lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, end, stop), end, stop), e->t_long);
    gcc_jit_rvalue *nb = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, stop, rv(o)), e->t_long);
    gcc_jit_lvalue *j = long_local(e, "j", lng(e, 0));
    pe_jit_loop side = loop_upto(e, "j", j, nb);
    gcc_jit_rvalue *r = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(o), rv(j)), e->t_long);
    e->coord[k->rank - 2] = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, c0, rv(j)), e->t_long);
    pe_gj_row_bases(e);
    gcc_jit_rvalue *start = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, r, lng(e, len)), e->t_long);
    row_accumulators ra;
    open_row_lanes(e, k, rp, n_red, &ra);
    int64_t grouped = len / ra.n * ra.n;
    for (int64_t c = 0; c < len; c++) {
        e->c_last = lng(e, c);
        e->index = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, lng(e, c)), e->t_long);
        e->pos = e->c_last;
        into_lane(e, rp, n_red, &ra, c < grouped ? (int)(c % ra.n) : 0);
        pe_gj_emit_body(e, k);
    }
    close_row_lanes(e, k, rp, n_red, &ra, r);
    loop_step_end(e, &side, j, 1);
    gcc_jit_block_add_assignment(e->cur, NULL, o, stop);
    loop_end(e, &blocks);
    e->emits = NULL;
}

/* Reductions along the last axis, one result per launch index (a row):
 * pass 0 accumulates the reductions of values the row's elements give,
 * pass p those of values computed from the results of the passes before it
 * (x - mean_axis(x, 1), softmax: the results broadcast back), each in
 * row_lanes lanes (element k in lane k mod the lanes, combined in a
 * fixed order: the same result for any launch); a pass also stores the
 * members it computes.  Each pass loads the row again (from cache) and
 * recomputes what it needs, so nothing between the reductions is stored. */
void pe_gj_emit_row_passes(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    memset(e->row_copy, 0, sizeof e->row_copy);
    row_plan rp = {.len = k->shape[k->rank - 1]};
    plan_row_passes(e, k, &rp);
    e->reload = rp.reload;
    e->spill_here = rp.spill_here;
    int n_red;
    if (short_rows(k, &rp, &n_red)) {
        emit_short_rows(e, k, &rp, n_red, begin, end);
        return;
    }
    gcc_jit_lvalue *o = long_local(e, "o", begin);
    pe_jit_loop rows = loop_upto(e, "o", o, end);
    pe_gj_row_coordinates(e, rv(o), -1);
    pe_gj_row_bases(e);
    gcc_jit_rvalue *start = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, rv(o), lng(e, rp.len)), e->t_long);
    for (int p = 0; p < rp.n_passes; p++) emit_row_pass(e, k, &rp, p, start, o);
    e->emits = NULL;
    loop_step_end(e, &rows, o, 1);
}
