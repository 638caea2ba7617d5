/* gccjit_loops.c — the CPU generator's loop shapes (gccjit_emit.h), the one
 * a kernel takes chosen by emit_kernel (cpu_gccjit.c): flat, row by row, in
 * tiles of the last two axes, axis reductions along an outer axis in blocks
 * of results (those along the last axis: gccjit_row_passes.c), full
 * reductions of views row by row, and the multi-pass reductions (var, stddev, f64 norm2) along an axis or over a
 * chunk.  Each shape sets where the element is and emits the body
 * (gccjit_ops.c) per element or lane; the order in which a reduction meets
 * its elements is fixed here, so a result is the same for any launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gccjit_emit.h"

/* --------------------------------------------------------- rows and tiles */

/* The coordinates of the axes before the last one from `row`, the row's
 * number over those axes (skipping `skip`, a reduced axis, or -1). */
void pe_gj_row_coordinates(emitter *e, gcc_jit_rvalue *row, int skip)
{
    gcc_jit_rvalue *r = row;
    for (int d = e->k->rank - 2; d >= 0; d--) {
        if (d == skip) continue;
        e->coord[d] = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MODULO, r, lng(e, e->k->shape[d])), e->t_long);
        r = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, r, lng(e, e->k->shape[d])), e->t_long);
    }
}

/* The flat index of coordinates (coord[0..last), c_last = 0). */
static gcc_jit_rvalue *row_start(emitter *e)
{
    gcc_jit_rvalue *flat = lng(e, 0);
    int64_t inner = e->k->shape[e->k->rank - 1];
    for (int d = e->k->rank - 2; d >= 0; d--) {
        flat = lbin(e, GCC_JIT_BINARY_OP_PLUS, flat, lbin(e, GCC_JIT_BINARY_OP_MULT, e->coord[d], lng(e, inner)));
        inner *= e->k->shape[d];
    }
    return to_local(e, flat, e->t_long);
}

static gcc_jit_rvalue *lmin(emitter *e, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, a, b), a, b);
}

static gcc_jit_rvalue *lmax(emitter *e, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return lselect(e, cmp(e, GCC_JIT_COMPARISON_GT, a, b), a, b);
}

/* Element `index` (flat) as the body's: in row mode (start, the row's
 * element 0, not NULL) with its coordinate along the last axis; into lane
 * `l` of ln, if any. */
static void at_element(emitter *e, gcc_jit_rvalue *index, gcc_jit_rvalue *start, const pe_gj_lanes *ln, int l)
{
    e->index = index;
    if (start) e->c_last = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, index, start), e->t_long);
    if (ln) e->acc = ln->acc[l], e->comp = ln->comp[l], e->at = ln->at[l], e->pos = index;
}

/* The body over flat elements [from, to) in order, every index linear (row
 * mode: the elements of one row from `start`, its element 0; flat: start
 * NULL).  With lanes: groups of ln->n consecutive elements from `from`,
 * element from + l into lane l (independent chains the vectoriser packs),
 * the rest into lane 0; with one lane or none: one element an iteration. */
static void each_element(emitter *e, const kir_kernel *k, gcc_jit_rvalue *from, gcc_jit_rvalue *to, gcc_jit_rvalue *start,
                         const pe_gj_lanes *ln)
{
    gcc_jit_lvalue *i = long_local(e, "i", from);
    if (ln && ln->n > 1) {
        pe_jit_loop groups = loop_while(e, "lanes", cmp(e, GCC_JIT_COMPARISON_LE, bin_long(e, GCC_JIT_BINARY_OP_PLUS, rv(i), ln->n), to));
        for (int l = 0; l < ln->n; l++) {
            at_element(e, to_local(e, bin_long(e, GCC_JIT_BINARY_OP_PLUS, rv(i), l), e->t_long), start, ln, l);
            pe_gj_emit_body(e, k);
        }
        loop_step_end(e, &groups, i, ln->n);
    }
    pe_jit_loop rest = loop_upto(e, "rest", i, to);
    at_element(e, rv(i), start, ln, 0);
    pe_gj_emit_body(e, k);
    loop_step_end(e, &rest, i, 1);
}

/* The shortest wrap a row is cut at (emit_wrap_span): a view tiling fewer
 * elements would cut rows into segments too short to pay. */
#define SEGMENT_MIN_WRAP 16

/* Whether parameter q wraps along the last axis (a periodic view: a
 * stencil's shifted neighbour, a roll) with no clamp there: what
 * emit_wrap_span cuts rows for. */
static bool wraps_along_rows(const kir_param *q, int last)
{
    return q->kind == KIR_IN_STRIDED && q->stride[last] != 0 && q->wrap[last] >= SEGMENT_MIN_WRAP && q->hi[last] == 0;
}

/* Flat elements [from, to) of the row whose element 0 is flat `start` (its
 * coordinates and views' row elements hoisted), into ln's lanes if any,
 * cut where a view wraps along the last axis: per segment each such view's
 * wrapped coordinate at its first element, then each_element over it,
 * every index linear (no modulo per element: the vectoriser's case), the
 * coordinates carried to the next segment by an add and a compare.
 * Without such views: each_element over [from, to). */
static void emit_wrap_span(emitter *e, const kir_kernel *k, gcc_jit_rvalue *from, gcc_jit_rvalue *to, gcc_jit_rvalue *start,
                           const pe_gj_lanes *ln)
{
    int last = k->rank - 1;
    gcc_jit_lvalue *w[KIR_MAX_PARAMS] = {0};
    bool any = false;
    for (int p = 0; p < k->n_params; p++) any |= wraps_along_rows(&k->params[p], last);
    if (!any) {
        each_element(e, k, from, to, start, ln);
        return;
    }
    gcc_jit_lvalue *c = long_local(e, "segment", from);
    gcc_jit_rvalue *c_first = lbin(e, GCC_JIT_BINARY_OP_MINUS, from, start);
    for (int p = 0; p < k->n_params; p++) {
        const kir_param *q = &k->params[p];
        if (!wraps_along_rows(q, last)) continue;
        w[p] = long_local(e, "wrapped", lbin(e, GCC_JIT_BINARY_OP_MODULO, lbin(e, GCC_JIT_BINARY_OP_PLUS, c_first, lng(e, q->shift[last])),
                                            lng(e, q->wrap[last])));
    }
    pe_jit_loop segments = loop_upto(e, "segments", c, to);
    gcc_jit_rvalue *len = lbin(e, GCC_JIT_BINARY_OP_MINUS, to, rv(c));
    for (int p = 0; p < k->n_params; p++)
        if (w[p]) len = lmin(e, len, lbin(e, GCC_JIT_BINARY_OP_MINUS, lng(e, k->params[p].wrap[last]), rv(w[p])));
    len = to_local(e, len, e->t_long);
    gcc_jit_rvalue *first = to_local(e, rv(c), e->t_long), *end = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, first, len), e->t_long);
    e->seg_first = first;
    for (int p = 0; p < k->n_params; p++)
        if (w[p]) e->seg_wrapped[p] = to_local(e, rv(w[p]), e->t_long);
    each_element(e, k, first, end, start, ln);
    memset(e->seg_wrapped, 0, sizeof e->seg_wrapped);
    e->seg_first = NULL;
    for (int p = 0; p < k->n_params; p++) { /* len never passes a wrap: at most onto it, which is 0 */
        if (!w[p]) continue;
        gcc_jit_rvalue *next = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(w[p]), len), e->t_long);
        gcc_jit_block_add_assignment(e->cur, NULL, w[p],
                                     lselect(e, cmp(e, GCC_JIT_COMPARISON_EQ, next, lng(e, k->params[p].wrap[last])), lng(e, 0), next));
    }
    gcc_jit_block_add_assignment(e->cur, NULL, c, end);
    loop_end(e, &segments);
}

/* The most static segments a row is cut into (each a copy of the body). */
#define MAX_STATIC_SEGMENTS 16

static void add_cut(int64_t *cut, int *n, int64_t at, int64_t n_last)
{
    if (at <= 0 || at >= n_last) return;
    for (int i = 0; i < *n; i++)
        if (cut[i] == at) return;
    cut[(*n)++] = at;
}

static int by_position(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The cuts of a row into static segments, sorted, 0 and the row's length
 * included: where a concat along the last axis switches parts and where a
 * view clamped along it (a concat's part) enters or leaves its range.  0
 * where there is nothing to cut for, or too much (MAX_STATIC_SEGMENTS). */
static int static_cuts(const kir_kernel *k, int64_t *cut)
{
    int last = k->rank - 1, n = 0;
    int64_t n_last = k->shape[last];
    bool any = false;
    for (int p = 0; p < k->n_params; p++) {
        const kir_param *q = &k->params[p];
        if (q->kind != KIR_IN_STRIDED || q->hi[last] <= 0) continue;
        any = true;
        add_cut(cut, &n, q->lo[last], n_last), add_cut(cut, &n, q->hi[last], n_last);
        if (n >= MAX_STATIC_SEGMENTS) return 0;
    }
    for (int i = 0; i < k->n_body; i++) {
        const kir_inst *in = &k->body[i];
        if (in->kind != KIR_OP || in->op != PE_OP_concat || in->a[2] != last) continue;
        any = true;
        add_cut(cut, &n, in->imm, n_last);
        if (n >= MAX_STATIC_SEGMENTS) return 0;
    }
    if (!any) return 0;
    cut[n++] = 0, cut[n++] = n_last;
    qsort(cut, (size_t)n, sizeof *cut, by_position);
    return n;
}

/* Flat elements [from, to) of the row whose element 0 is flat `start`,
 * into ln's lanes if any: in static segments where the kernel selects
 * between a concat's parts along the last axis or clamps a view there (each
 * segment's body with the select resolved and the clamps gone: linear
 * loads, the vectoriser's case; pad and slice_update), each cut further
 * where a view wraps (emit_wrap_span). */
void pe_gj_emit_row_span(emitter *e, const kir_kernel *k, gcc_jit_rvalue *from, gcc_jit_rvalue *to, gcc_jit_rvalue *start,
                          const pe_gj_lanes *ln)
{
    int64_t cut[2 * KIR_MAX_PARAMS + KIR_MAX_BODY + 2];
    int n = static_cuts(k, cut);
    if (n == 0) {
        emit_wrap_span(e, k, from, to, start, ln);
        return;
    }
    for (int s = 0; s + 1 < n; s++) {
        gcc_jit_rvalue *lo = lbin(e, GCC_JIT_BINARY_OP_PLUS, start, lng(e, cut[s]));
        gcc_jit_rvalue *hi = lbin(e, GCC_JIT_BINARY_OP_PLUS, start, lng(e, cut[s + 1]));
        gcc_jit_rvalue *seg_from = to_local(e, lselect(e, cmp(e, GCC_JIT_COMPARISON_GT, lo, from), lo, from), e->t_long);
        gcc_jit_rvalue *seg_to = to_local(e, lmin(e, hi, to), e->t_long);
        e->seg_static = true, e->seg_lo = cut[s], e->seg_hi = cut[s + 1];
        emit_wrap_span(e, k, seg_from, seg_to, start, ln); /* an empty segment: no iterations */
        e->seg_static = false;
    }
}

/* The row of flat element i in a walk of [i, end) by rows of n_last
 * elements: its coordinates and each view's element at its start hoisted;
 * the flat index of its element 0, and in *row_end where the walk leaves
 * it (its end, or end). */
static gcc_jit_rvalue *enter_row(emitter *e, gcc_jit_rvalue *i, gcc_jit_rvalue *end, int64_t n_last, gcc_jit_rvalue **row_end)
{
    gcc_jit_rvalue *row = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, i, lng(e, n_last)), e->t_long);
    gcc_jit_rvalue *start = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, row, lng(e, n_last)), e->t_long);
    gcc_jit_rvalue *stop = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, lng(e, n_last)), e->t_long);
    *row_end = lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, end, stop), end, stop);
    pe_gj_row_coordinates(e, row, -1);
    pe_gj_row_bases(e);
    return start;
}

/* The launch's [begin, end) row by row, each row's part spanned
 * (emit_row_span) into ln's lanes if any. */
static void walk_rows(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end, const pe_gj_lanes *ln)
{
    int64_t n_last = k->shape[k->rank - 1];
    gcc_jit_lvalue *i = long_local(e, "row_i", begin);
    pe_jit_loop rows = loop_upto(e, "rows", i, end);
    gcc_jit_rvalue *row_end, *start = enter_row(e, rv(i), end, n_last, &row_end);
    pe_gj_emit_row_span(e, k, rv(i), row_end, start, ln);
    gcc_jit_block_add_assignment(e->cur, NULL, i, row_end);
    loop_end(e, &rows);
}

/* An element-wise kernel with a shape, row by row: per row the coordinates
 * and each view's element at its start, then a loop along the last axis in
 * which every index is linear (the vectoriser's case). */
void pe_gj_emit_rows(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end) { walk_rows(e, k, begin, end, NULL); }

/* Tiles of the tiled walk: TILE x TILE elements of the last two axes (32:
 * bench_views' a + a^T measured 16 about alike and 64 a little slower). */
#define TILE 32
/* Bytes of a cache line: a view whose step along the last axis is at least
 * this touches a new line per element. */
#define CACHE_LINE 64

/* Whether an element-wise kernel with a shape reads a view across cache
 * lines along its last axis (a transpose; a permute moving the buffer's
 * contiguous axis off the last) but along or near lines over the axis
 * before it: walked row by row, each element of such a read loads a line
 * of which it uses one element, and by the time the next row wants the
 * line's neighbour a whole row of other lines went by (4096 of them,
 * 256 KiB, for a 4096-wide f32 transpose: long gone from L1).  Walked in TILE x TILE
 * tiles of the last two axes, the lines a tile's first row loads serve its
 * next rows.  A view whose steps are large along both (a permute whose
 * contiguous axis is further out) gains nothing from these tiles. */
bool pe_gj_reads_across_lines(const kir_kernel *k)
{
    int last = k->rank - 1;
    if (k->rank < 2 || k->shape[last] <= TILE || k->shape[last - 1] < 2) return false;
    for (int p = 0; p < k->n_params; p++) {
        const kir_param *q = &k->params[p];
        if (q->kind != KIR_IN_STRIDED) continue;
        int64_t size = (int64_t)pe_dtype_size((pe_dtype)q->dtype);
        int64_t along = q->stride[last] < 0 ? -q->stride[last] : q->stride[last];
        int64_t before = q->stride[last - 1] < 0 ? -q->stride[last - 1] : q->stride[last - 1];
        if (along * size >= CACHE_LINE && before * size < CACHE_LINE) return true;
    }
    return false;
}

/* Elements a row needs for pe_gj_emit_rows_reduce's setup per row (the
 * coordinates, each view's row element) to pay. */
#define ROWS_REDUCE_MIN 64

/* Whether a full reduction's kernel walks rows (pe_gj_emit_rows_reduce):
 * it has a shape of two axes or more with rows of ROWS_REDUCE_MIN elements
 * or more, and reads a view or a broadcast operand (a STRIDED parameter),
 * whose index the flat walk computes from the flat index per element. */
bool pe_gj_rows_reduce_pays(const kir_kernel *k)
{
    if (k->rank < 2 || k->shape[k->rank - 1] < ROWS_REDUCE_MIN) return false;
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_IN_STRIDED) return true;
    return false;
}

/* An element-wise kernel that reads across lines (pe_gj_reads_across_lines), in
 * TILE x TILE tiles of its last two axes.  The launch's [begin, end) is
 * flat and need not start or end on a row: its rows are walked in blocks of
 * up to TILE rows (aligned to TILE within their plane, the last two axes,
 * and never crossing one), each block tile by tile along the last axis and
 * each tile row by row, every row's columns clipped to [begin, end) — the
 * partial rows at the launch's ends are the blocks' first and last rows
 * with fewer columns, so every element is computed once, by one launch, as
 * in the row walk (element-wise: the order changes no value).  Per block
 * the coordinates of the outer axes and each view's element at their
 * start; per row of a tile its coordinate and the views' row elements; the
 * loop within a tile's row is linear, as the row walk's. */
void pe_gj_emit_tiles(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    int last = k->rank - 1;
    int64_t n_last = k->shape[last], n_rows = k->shape[last - 1];
    gcc_jit_lvalue *q = long_local(e, "q", lbin(e, GCC_JIT_BINARY_OP_DIVIDE, begin, lng(e, n_last)));
    gcc_jit_rvalue *q_end = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, lbin(e, GCC_JIT_BINARY_OP_PLUS, end, lng(e, n_last - 1)),
                                             lng(e, n_last)), e->t_long);
    pe_jit_loop blocks = loop_upto(e, "blocks", q, q_end);
    /* rows [q, q_block) of one plane, q_block at most the next multiple of TILE */
    pe_gj_row_coordinates(e, rv(q), -1);
    gcc_jit_rvalue *r0 = e->coord[last - 1];
    gcc_jit_rvalue *to_tile = lbin(e, GCC_JIT_BINARY_OP_MINUS, lng(e, TILE), lbin(e, GCC_JIT_BINARY_OP_MODULO, r0, lng(e, TILE)));
    gcc_jit_rvalue *to_plane = lbin(e, GCC_JIT_BINARY_OP_MINUS, lng(e, n_rows), r0);
    gcc_jit_rvalue *q_block = to_local(e, lmin(e, q_end, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(q), lmin(e, to_tile, to_plane))), e->t_long);
    gcc_jit_rvalue *outer[KIR_MAX_PARAMS];
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_IN_STRIDED) outer[p] = pe_gj_axes_base(e, &k->params[p], lng(e, k->params[p].offset), 0, last - 1);
    gcc_jit_lvalue *c0 = long_local(e, "c0", lng(e, 0));
    pe_jit_loop tiles = loop_upto(e, "tiles", c0, lng(e, n_last));
    gcc_jit_lvalue *row = long_local(e, "row", rv(q));
    gcc_jit_rvalue *c1 = to_local(e, lmin(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(c0), lng(e, TILE)), lng(e, n_last)), e->t_long);
    pe_jit_loop tile_rows = loop_upto(e, "tile_rows", row, q_block);
    /* this row's columns of the tile, clipped to the launch */
    gcc_jit_rvalue *start = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, rv(row), lng(e, n_last)), e->t_long);
    gcc_jit_rvalue *lo = lmax(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, rv(c0)), begin);
    gcc_jit_rvalue *hi = to_local(e, lmin(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, c1), end), e->t_long);
    e->coord[last - 1] = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, r0, lbin(e, GCC_JIT_BINARY_OP_MINUS, rv(row), rv(q))), e->t_long);
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_IN_STRIDED) e->base[p] = pe_gj_axes_base(e, &k->params[p], outer[p], last - 1, last);
    pe_gj_emit_row_span(e, k, lo, hi, start, NULL);
    loop_step_end(e, &tile_rows, row, 1);
    loop_step_end(e, &tiles, c0, TILE);
    gcc_jit_block_add_assignment(e->cur, NULL, q, q_block);
    loop_end(e, &blocks);
}

/* ------------------------------------------------- along an outer axis */

/* A reduction along an axis before the last: a block of up to
 * PE_GCCJIT_AXIS_BLOCK consecutive results along the last axis accumulated
 * side by side (the vectoriser's loop runs across the kept axis), the
 * reduced axis walked in order for each (the same result for any launch). */
void pe_gj_emit_axis_outer(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    const kir_inst *reduce = kir_reduction_of(k);
    int a = k->reduce_axis, last = k->rank - 1;
    int64_t len = k->shape[a], n_last = k->shape[last];
    bool with_comp = compensated(reduce);
    gcc_jit_type *arr = gcc_jit_context_new_array_type(e->ctx, NULL, e->t_double, PE_GCCJIT_AXIS_BLOCK);
    gcc_jit_lvalue *acc = gcc_jit_function_new_local(e->fn, NULL, gcc_jit_context_new_array_type(e->ctx, NULL, pe_gj_acc_type(e, reduce), PE_GCCJIT_AXIS_BLOCK),
                                                     "acc_block");
    gcc_jit_lvalue *comp = with_comp ? gcc_jit_function_new_local(e->fn, NULL, arr, "comp_block") : NULL;
    gcc_jit_lvalue *at = is_arg_extreme(reduce)
                             ? gcc_jit_function_new_local(e->fn, NULL, gcc_jit_context_new_array_type(e->ctx, NULL, e->t_long, PE_GCCJIT_AXIS_BLOCK), "at_block")
                             : NULL;
    gcc_jit_lvalue *o = long_local(e, "o", begin);
    pe_jit_loop blocks = loop_upto(e, "o", o, end);
    gcc_jit_rvalue *orow = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, rv(o), lng(e, n_last)), e->t_long);
    gcc_jit_rvalue *c0 = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, rv(o), lbin(e, GCC_JIT_BINARY_OP_MULT, orow, lng(e, n_last))), e->t_long);
    gcc_jit_rvalue *stop = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, lbin(e, GCC_JIT_BINARY_OP_MINUS, rv(o), c0), lng(e, n_last)), e->t_long);
    stop = lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, end, stop), end, stop);
    gcc_jit_rvalue *block_end = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(o), lng(e, PE_GCCJIT_AXIS_BLOCK)), e->t_long);
    stop = lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, block_end, stop), block_end, stop);
    gcc_jit_rvalue *nb = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, stop, rv(o)), e->t_long);
    pe_gj_row_coordinates(e, orow, a);
    gcc_jit_lvalue *j = long_local(e, "j", lng(e, 0));
    pe_jit_loop init = loop_upto(e, "init", j, lng(e, PE_GCCJIT_AXIS_BLOCK));
    gcc_jit_block_add_assignment(e->cur, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, rv(acc), rv(j)), pe_gj_acc_identity(e, reduce));
    if (at)
        gcc_jit_block_add_assignment(e->cur, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, rv(at), rv(j)), lng(e, 0));
    if (comp)
        gcc_jit_block_add_assignment(e->cur, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, rv(comp), rv(j)), num(e, PE_F64, 0.0));
    loop_step_end(e, &init, j, 1);
    gcc_jit_lvalue *kk = long_local(e, "k_outer", lng(e, 0));
    pe_jit_loop along = loop_upto(e, "k", kk, lng(e, len));
    e->coord[a] = rv(kk);
    pe_gj_row_bases(e);
    gcc_jit_rvalue *start = row_start(e);
    gcc_jit_block_add_assignment(e->cur, NULL, j, lng(e, 0));
    pe_jit_loop side = loop_upto(e, "j", j, nb);
    e->c_last = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, c0, rv(j)), e->t_long);
    e->index = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, e->c_last), e->t_long);
    e->acc = gcc_jit_context_new_array_access(e->ctx, NULL, rv(acc), rv(j));
    e->comp = comp ? gcc_jit_context_new_array_access(e->ctx, NULL, rv(comp), rv(j)) : NULL;
    e->at = at ? gcc_jit_context_new_array_access(e->ctx, NULL, rv(at), rv(j)) : NULL;
    e->pos = rv(kk);
    pe_gj_emit_body(e, k);
    loop_step_end(e, &side, j, 1);
    loop_step_end(e, &along, kk, 1);
    gcc_jit_block_add_assignment(e->cur, NULL, j, lng(e, 0));
    pe_jit_loop results = loop_upto(e, "fin", j, nb);
    gcc_jit_rvalue *hi = to_local(e, rv(gcc_jit_context_new_array_access(e->ctx, NULL, rv(acc), rv(j))), pe_gj_acc_type(e, reduce));
    gcc_jit_rvalue *lo = comp ? to_local(e, rv(gcc_jit_context_new_array_access(e->ctx, NULL, rv(comp), rv(j))), e->t_double)
                         : at ? to_local(e, rv(gcc_jit_context_new_array_access(e->ctx, NULL, rv(at), rv(j))), e->t_long)
                              : num(e, PE_F64, 0.0);
    gcc_jit_block_add_assignment(e->cur, NULL,
                                 gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[reduce->a[0]], lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(o), rv(j))),
                                 pe_gj_finish_axis_result(e, reduce, hi, lo, len));
    loop_step_end(e, &results, j, 1);
    gcc_jit_block_add_assignment(e->cur, NULL, o, stop);
    loop_end(e, &blocks);
}

/* ------------------------------------------------------------------- flat */

/* A chunk's partial: n doubles at partials[kir_partial_width * (begin / chunk)]. */
static void store_partial(emitter *e, const kir_inst *reduce, gcc_jit_rvalue *begin, gcc_jit_rvalue *const *parts, int n)
{
    int width = kir_partial_width((pe_op)reduce->op, (pe_dtype)reduce->ctype);
    gcc_jit_rvalue *slot = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, begin, lng(e, KIR_REDUCE_CHUNK)), lng(e, width)), e->t_long);
    for (int j = 0; j < n; j++)
        gcc_jit_block_add_assignment(e->cur, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[reduce->a[0]], bin_long(e, GCC_JIT_BINARY_OP_PLUS, slot, j)),
                                     parts[j]);
}

/* A chunk's partial from its lanes: partials[2 * (begin /
 * chunk)] = the lanes combined pairwise, in a fixed order. */
static void store_lanes(emitter *e, const kir_inst *reduce, gcc_jit_rvalue *begin, pe_gj_lanes *ln)
{
    gcc_jit_rvalue *hi, *lo;
    pe_gj_combine_all_lanes(e, reduce, ln->n, ln->acc, ln->comp, ln->at, &hi, &lo);
    if (pe_reduction_wraps((pe_op)reduce->op, (pe_dtype)reduce->ctype)) /* the chunk's wrapped i32, exact in double */
        hi = gcc_jit_context_new_cast(e->ctx, NULL, gcc_jit_context_new_cast(e->ctx, NULL, hi, e->t_of[PE_I32]), e->t_double);
    gcc_jit_rvalue *parts[2] = {hi, gcc_jit_context_new_cast(e->ctx, NULL, lo, e->t_double)}; /* argmax's index: < 2^31 */
    store_partial(e, reduce, begin, parts, 2);
}

/* A kernel without a shape, or ending in a full reduction: one flat loop
 * over [begin, end) (views' indices from the flat index), a reduction's
 * accumulators in lanes (pe_gj_walk_lanes) and its chunk's partial at the end. */
void pe_gj_emit_flat(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    const kir_inst *reduce = kir_reduction_of(k);
    pe_gj_lanes ln;
    if (reduce) ln.n = pe_gj_walk_lanes(e, reduce), pe_gj_lane_locals(e, reduce, ln.n, compensated(reduce), begin, ln.acc, ln.comp, ln.at);
    each_element(e, k, begin, end, NULL, reduce ? &ln : NULL);
    if (reduce) store_lanes(e, reduce, begin, &ln);
}

/* A full reduction over a kernel with a shape that reads views (STRIDED
 * parameters: a stencil's neighbours, a transpose), whose indices the flat
 * loop computes from the flat index with a division and a modulo per axis
 * and element: row by row instead, as pe_gj_emit_rows walks (each view's
 * row element hoisted, the last axis linear), each row's part of the
 * launch accumulated in lanes (pe_gj_walk_lanes: groups of consecutive elements
 * from each span's first, the rest into lane 0; a span: the row's part, cut
 * where a view wraps, emit_row_span), the lanes stored as the
 * chunk's partial as pe_gj_emit_flat stores them.  The order is the
 * launch's, a chunk of fixed bounds: the same result for any thread count. */
void pe_gj_emit_rows_reduce(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    const kir_inst *reduce = kir_reduction_of(k);
    pe_gj_lanes ln;
    ln.n = pe_gj_walk_lanes(e, reduce);
    pe_gj_lane_locals(e, reduce, ln.n, compensated(reduce), begin, ln.acc, ln.comp, ln.at);
    walk_rows(e, k, begin, end, &ln);
    store_lanes(e, reduce, begin, &ln);
}

/* ------------------------------------------- multi-pass reductions */

/* Where element kk of a multi-pass reduction's walk is: sets e->index, the
 * coordinates (row mode) and e->pos. */
typedef struct {
    int axis;                /* the reduced axis, or -1: a chunk of a full reduction */
    gcc_jit_rvalue *start;   /* the flat index of element 0 (the last axis reduced, or a chunk) */
    gcc_jit_rvalue *c_last;  /* an outer axis reduced: the result's coordinate along the last axis */
} walk;

static void place(emitter *e, const walk *w, gcc_jit_rvalue *kk)
{
    e->pos = kk;
    if (w->axis < 0 || w->axis == e->k->rank - 1) { /* contiguous: row bases hoisted by the caller */
        e->c_last = kk;
        e->index = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, w->start, kk), e->t_long);
        return;
    }
    e->coord[w->axis] = kk;
    e->c_last = w->c_last;
    pe_gj_row_bases(e);
    e->index = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, row_start(e), w->c_last), e->t_long);
}

/* What the passes of var, stddev (the sum, the exponent of the largest
 * deviation from the mean, the scaled squared deviations) and f64 norm2
 * (the largest magnitude, the squares divided by it) found. */
typedef struct {
    gcc_jit_rvalue *sum_hi, *sum_lo, *exponent, *squares, *squares_hi, *squares_lo, *scale, *scaled;
} pass_stats;

static gcc_jit_rvalue *neumaier_total(emitter *e, gcc_jit_rvalue *hi, gcc_jit_rvalue *lo)
{
    gcc_jit_rvalue *finite = cmp(e, GCC_JIT_COMPARISON_LT, math1(e, "fabs", PE_F64, hi), num(e, PE_F64, __builtin_inf()));
    return choose(e, finite, to_local(e, bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, hi, lo), e->t_double), hi, e->t_double);
}

/* The passes of a multi-pass reduction over n elements (n_real: as a
 * double), each walking them in order, one accumulator, Neumaier sums: the
 * reference's algorithm (interp.c, reduce_one) step by step. */
static pass_stats emit_passes(emitter *e, const kir_kernel *k, const kir_inst *reduce, const walk *w, gcc_jit_rvalue *n,
                              gcc_jit_rvalue *n_real)
{
    pass_stats st = {0};
    bool var = pe_gj_passes_of(reduce) == 3;
    gcc_jit_type *I = e->t_of[PE_I32];
    for (int pass = 0; pass < pe_gj_passes_of(reduce); pass++) {
        gcc_jit_lvalue *acc = double_local(e, "acc", 0.0), *comp = double_local(e, "comp", 0.0);
        gcc_jit_lvalue *kk = long_local(e, "kk", lng(e, 0));
        pe_jit_loop elements = loop_upto(e, "pass", kk, n);
        place(e, w, rv(kk));
        e->acc = acc, e->comp = comp, e->at = NULL, e->pass = pass;
        pe_gj_emit_body(e, k);
        loop_step_end(e, &elements, kk, 1);
        gcc_jit_rvalue *hi = to_local(e, rv(acc), e->t_double), *lo = to_local(e, rv(comp), e->t_double);
        if (var && pass == 0) {
            st.sum_hi = hi, st.sum_lo = lo;
            e->mean = to_local(e, bin(e, GCC_JIT_BINARY_OP_DIVIDE, PE_F64, neumaier_total(e, hi, lo), n_real), e->t_double);
        } else if (var && pass == 1) { /* as the reference: 0 unless the largest deviation is finite and not 0 */
            gcc_jit_rvalue *usable = and_(e, cmp(e, GCC_JIT_COMPARISON_GT, hi, num(e, PE_F64, 0.0)),
                                          cmp(e, GCC_JIT_COMPARISON_LT, hi, num(e, PE_F64, __builtin_inf())));
            gcc_jit_rvalue *lg = gcc_jit_context_new_call(e->ctx, NULL, gcc_jit_context_get_builtin_function(e->ctx, "__builtin_ilogb"), 1, &hi);
            st.exponent = choose(e, usable, to_local(e, lg, I), gcc_jit_context_zero(e->ctx, I), I);
            e->shift = to_local(e, gcc_jit_context_new_unary_op(e->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, I, st.exponent), I);
        } else if (!var && pass == 0) { /* norm2: squares divided by the scale where it is finite and not 0 */
            st.scale = hi;
            st.scaled = and_(e, cmp(e, GCC_JIT_COMPARISON_GT, hi, num(e, PE_F64, 0.0)),
                             cmp(e, GCC_JIT_COMPARISON_LT, hi, num(e, PE_F64, __builtin_inf())));
            e->divisor = choose(e, st.scaled, hi, num(e, PE_F64, 1.0), e->t_double);
        } else {
            st.squares_hi = hi, st.squares_lo = lo;
            st.squares = to_local(e, neumaier_total(e, hi, lo), e->t_double);
        }
    }
    return st;
}

static gcc_jit_rvalue *ldexp_(emitter *e, gcc_jit_rvalue *x, gcc_jit_rvalue *exponent)
{
    gcc_jit_rvalue *args[2] = {x, exponent};
    return math(e, "ldexp", PE_F64, 2, args);
}

/* A multi-pass reduction along any axis: per result, its elements walked
 * in order by each pass, re-evaluating the fused body (bitwise the
 * reference's value for f64). */
void pe_gj_emit_axis_passes(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    const kir_inst *reduce = kir_reduction_of(k);
    int a = k->reduce_axis, last = k->rank - 1;
    int64_t len = k->shape[a], n_last = k->shape[last];
    gcc_jit_lvalue *o = long_local(e, "o", begin);
    pe_jit_loop results = loop_upto(e, "o", o, end);
    walk w = {.axis = a};
    if (a == last) {
        pe_gj_row_coordinates(e, rv(o), -1);
        pe_gj_row_bases(e);
        w.start = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, rv(o), lng(e, len)), e->t_long);
    } else {
        gcc_jit_rvalue *orow = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, rv(o), lng(e, n_last)), e->t_long);
        w.c_last = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, rv(o), lbin(e, GCC_JIT_BINARY_OP_MULT, orow, lng(e, n_last))), e->t_long);
        pe_gj_row_coordinates(e, orow, a);
    }
    pass_stats st = emit_passes(e, k, reduce, &w, lng(e, len), num(e, PE_F64, (double)len));
    gcc_jit_rvalue *v;
    if (pe_gj_passes_of(reduce) == 3) {
        gcc_jit_type *I = e->t_of[PE_I32];
        gcc_jit_rvalue *scaled_var = to_local(e, bin(e, GCC_JIT_BINARY_OP_DIVIDE, PE_F64, st.squares, num(e, PE_F64, (double)len)), e->t_double);
        v = reduce->op == PE_OP_var
                ? ldexp_(e, scaled_var, gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_MULT, I,
                                                                      gcc_jit_context_new_rvalue_from_int(e->ctx, I, 2), st.exponent))
                : ldexp_(e, math1(e, "sqrt", PE_F64, scaled_var), st.exponent);
    } else {
        v = choose(e, st.scaled, to_local(e, bin(e, GCC_JIT_BINARY_OP_MULT, PE_F64, st.scale, math1(e, "sqrt", PE_F64, st.squares)), e->t_double),
                   st.scale, e->t_double);
    }
    gcc_jit_block_add_assignment(e->cur, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[reduce->a[0]], rv(o)),
                                 gcc_jit_context_new_cast(e->ctx, NULL, to_local(e, v, e->t_double), type_of(e, (pe_dtype)reduce->dtype)));
    loop_step_end(e, &results, o, 1);
}

/* A chunk of a multi-pass full reduction: its passes over [begin, end) and
 * its statistics as the chunk's partial (kir.h; combined by Chan's formula
 * or rescaled, partials.c). */
void pe_gj_emit_flat_passes(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    const kir_inst *reduce = kir_reduction_of(k);
    walk w = {.axis = -1, .start = begin};
    gcc_jit_rvalue *n = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, end, begin), e->t_long);
    pass_stats st = emit_passes(e, k, reduce, &w, n, to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, n, e->t_double), e->t_double));
    if (pe_gj_passes_of(reduce) == 3) {
        gcc_jit_rvalue *parts[4] = {st.sum_hi, st.sum_lo, gcc_jit_context_new_cast(e->ctx, NULL, st.exponent, e->t_double), st.squares};
        store_partial(e, reduce, begin, parts, 4);
    } else {
        gcc_jit_rvalue *parts[4] = {st.scale, st.squares_hi, st.squares_lo, num(e, PE_F64, 0.0)};
        store_partial(e, reduce, begin, parts, 4);
    }
}
