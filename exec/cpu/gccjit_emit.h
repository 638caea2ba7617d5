/* gccjit_emit.h — internal to the CPU code generator: cpu_gccjit.c (the
 * driver) and its pieces gccjit_ops.c, gccjit_reduce.c, gccjit_loops.c and
 * gccjit_stream.c include it, nothing else does.  It holds the state of the
 * kernel being emitted (emitter) and what the pieces share: the small
 * libgccjit wrappers, static inline here so that every piece builds the
 * same calls the one file did, and the functions one piece calls in
 * another, named pe_gj_ so that no short name (cast, num, block...)
 * becomes a symbol of the library. */
#ifndef PE_CPU_GCCJIT_EMIT_H
#define PE_CPU_GCCJIT_EMIT_H

#include <libgccjit.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../../jit/kir/codegen.h"
#include "cpu_gccjit.h"
#include "cpu_prims.h"
#include "gccjit_build.h"

/* Accumulators of a reduction kernel (consecutive elements, one per lane).
 * A flat reduction and a row pass whose body has a costly op use
 * REDUCE_LANES: eight doubles, two AVX-512 halves or two AVX2 vectors, and
 * the body emitted eight times.  A row pass with a cheap body (a row sum, a
 * softmax's max and its sum of the exp copy) reads its row from cache, where
 * two chains of 4-cycle adds would bound it at 2 elements a cycle: ROW_LANES
 * give four independent AVX-512 (eight AVX2) chains.  The lane count fixes
 * the combination order, so each kernel's choice is part of its result. */
#define REDUCE_LANES 8
#define ROW_LANES 32
#define MAX_LANES 32

/* The kernel being emitted and where its emission stands: the loop shapes
 * set the element and the lane, the body reads them. */
typedef struct {
    gcc_jit_context *ctx;
    gcc_jit_function *fn;
    gcc_jit_block *cur;
    gcc_jit_type *t_void, *t_bool, *t_long, *t_u32, *t_double, *t_voidp;
    gcc_jit_type *t_of[PE_DTYPE__COUNT]; /* by pe_dtype (irformat/dtypes.def) */
    gcc_jit_rvalue *ptr[KIR_MAX_PARAMS]; /* typed buffer pointers, or scalar values */
    gcc_jit_rvalue *val[KIR_MAX_BODY];
    const kir_kernel *k;
    gcc_jit_rvalue *index; /* the element the body being emitted works on (flat, in the iteration shape) */
    /* Row mode (kernels with a shape): coordinates of the axes before the
     * last one, hoisted per row, the coordinate along the last axis, and
     * each STRIDED parameter's element at c_last = 0 */
    bool rows;
    gcc_jit_rvalue *coord[PE_MAX_RANK], *c_last;
    gcc_jit_rvalue *base[KIR_MAX_PARAMS];
    /* Row segments (gccjit_loops.c, emit_row_span): within a segment no
     * view wraps along the last axis, so a wrapping view's coordinate there
     * is its wrapped coordinate at the segment's first element (flat
     * seg_first) plus the distance from it: no modulo per element (NULL:
     * not in a segment, or the parameter does not wrap) */
    gcc_jit_rvalue *seg_first;
    gcc_jit_rvalue *seg_wrapped[KIR_MAX_PARAMS];
    /* Static row segments (emit_row_span): [seg_lo, seg_hi) of the last
     * axis, cut where a concat along it switches parts and where a clamped
     * view enters or leaves its range, so that in a segment each such select
     * is one part and each clamp none or a constant (seg_static false: not
     * in one) */
    bool seg_static;
    int64_t seg_lo, seg_hi;
    gcc_jit_lvalue *bad;   /* kernels that gather: nonzero once an index was out of range */
    gcc_jit_lvalue *acc;   /* reduction kernels: the accumulator of the lane being emitted (u32 where i32 wraps) */
    gcc_jit_lvalue *comp;  /* its compensation (f64 sums, Neumaier), a keyed float extreme's NaN flag, or NULL */
    gcc_jit_lvalue *at;    /* argmax, argmin: the index of the lane's extreme */
    gcc_jit_rvalue *pos;   /* argmax, argmin: the element's index along the reduction */
    /* Multi-pass reductions (var, stddev, f64 norm2): the pass being emitted
     * and what the passes before it found */
    int pass;
    gcc_jit_rvalue *mean, *shift, *divisor;
    /* Row passes (pe_gj_emit_row_passes): which instructions the pass emits, and
     * each reduction's accumulators in the lane being emitted */
    const bool *emits;
    gcc_jit_lvalue *acc_of[KIR_MAX_BODY], *comp_of[KIR_MAX_BODY], *at_of[KIR_MAX_BODY];
    /* a value kept for later passes in a row-long local array: stored in
     * the pass computing it (spill_here), loaded in a later one (reload) */
    gcc_jit_lvalue *row_copy[KIR_MAX_BODY];
    /* Streaming stores (pe_gj_emit_streaming): where a store goes instead of the
     * output at index (a tile), or NULL */
    gcc_jit_rvalue *store_index;
    int vector_bytes;      /* the ISA's widest vector: 64 (x86-64-v4), 32 (v3) or 16 */
    const bool *spill_here, *reload;
    pe_prims *prims;       /* vectorisable routines of this context */
    bool use_prims;        /* the kernel being emitted can vectorise (see pe_gj_vectorisable) */
    int n_locals;
    int perturbed_op;      /* PE_TEST_PERTURB_OP's op, else -1 */
} emitter;

/* What the CPU generator alone knows of an op: a row of cpu_ops.def
 * (cpu_ops.c). */
typedef struct {
    uint8_t emits;        /* PE_EMITS_*: the compute types it emits the op in */
    bool vectorises;      /* a loop with it can still vectorise */
    const char *f32_prim; /* cpu_prims.c's f32 routine, or NULL */
} pe_cpu_op;

extern const pe_cpu_op pe_cpu_op_table[PE_OP__COUNT];

static inline const pe_cpu_op *pe_cpu_op_of(pe_op op) { return &pe_cpu_op_table[op]; }

/* ------------------------------------------------------------- helpers */

static inline bool is_float(pe_dtype t) { return pe_dtype_is_float(t); }

static inline gcc_jit_type *type_of(emitter *e, pe_dtype t) { return e->t_of[t]; }

static inline pe_jit_cursor cursor(emitter *e) { return (pe_jit_cursor){e->ctx, e->fn, e->cur, &e->n_locals}; }

static inline gcc_jit_rvalue *to_local(emitter *e, gcc_jit_rvalue *v, gcc_jit_type *t) { return pe_jit_local(cursor(e), v, t); }

static inline gcc_jit_rvalue *cast(emitter *e, gcc_jit_rvalue *v, pe_dtype from, pe_dtype to)
{
    if (from == to) return v;
    if (to == PE_BOOL) { /* nonzero is true (NaN too) */
        gcc_jit_rvalue *zero = gcc_jit_context_zero(e->ctx, type_of(e, from));
        gcc_jit_rvalue *c = gcc_jit_context_new_comparison(e->ctx, NULL, GCC_JIT_COMPARISON_NE, v, zero);
        return gcc_jit_context_new_cast(e->ctx, NULL, c, e->t_of[PE_BOOL]);
    }
    return gcc_jit_context_new_cast(e->ctx, NULL, v, type_of(e, to));
}

static inline gcc_jit_rvalue *bool_to_u8(emitter *e, gcc_jit_rvalue *c)
{
    return gcc_jit_context_new_cast(e->ctx, NULL, c, e->t_of[PE_BOOL]);
}

/* c ? a : b without a branch (see pe_jit_select). */
static inline gcc_jit_rvalue *choose(emitter *e, gcc_jit_rvalue *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b, gcc_jit_type *t)
{
    bool wide = t == e->t_double, is_float = wide || t == e->t_of[PE_F32];
    gcc_jit_type *U = wide ? gcc_jit_context_get_type(e->ctx, GCC_JIT_TYPE_UNSIGNED_LONG_LONG) : e->t_u32;
    return pe_jit_select(cursor(e), c, a, b, t, U, is_float);
}

static inline gcc_jit_rvalue *math(emitter *e, const char *name, pe_dtype t, int n, gcc_jit_rvalue **args)
{
    gcc_jit_function *prim = e->use_prims ? pe_prims_get(e->prims, name, t == PE_F32) : NULL;
    if (prim) return gcc_jit_context_new_call(e->ctx, NULL, prim, n, args);
    char builtin[48];
    snprintf(builtin, sizeof builtin, "__builtin_%s%s", name, t == PE_F32 ? "f" : "");
    gcc_jit_function *f = gcc_jit_context_get_builtin_function(e->ctx, builtin);
    return gcc_jit_context_new_call(e->ctx, NULL, f, n, args);
}

static inline gcc_jit_rvalue *math1(emitter *e, const char *name, pe_dtype t, gcc_jit_rvalue *a)
{
    return math(e, name, t, 1, &a);
}

static inline gcc_jit_rvalue *num(emitter *e, pe_dtype t, double v)
{
    return gcc_jit_context_new_rvalue_from_double(e->ctx, type_of(e, t), v);
}

static inline gcc_jit_rvalue *bin(emitter *e, enum gcc_jit_binary_op op, pe_dtype t, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, op, type_of(e, t), a, b);
}

static inline gcc_jit_rvalue *cmp(emitter *e, enum gcc_jit_comparison op, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_comparison(e->ctx, NULL, op, a, b);
}

/* i32 arithmetic wraps: compute in unsigned. */
static inline gcc_jit_rvalue *wrap(emitter *e, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    gcc_jit_rvalue *ua = gcc_jit_context_new_cast(e->ctx, NULL, a, e->t_u32);
    gcc_jit_rvalue *ub = gcc_jit_context_new_cast(e->ctx, NULL, b, e->t_u32);
    gcc_jit_rvalue *r = gcc_jit_context_new_binary_op(e->ctx, NULL, op, e->t_u32, ua, ub);
    return gcc_jit_context_new_cast(e->ctx, NULL, r, e->t_of[PE_I32]);
}

static inline gcc_jit_rvalue *lng(emitter *e, int64_t v) { return gcc_jit_context_new_rvalue_from_long(e->ctx, e->t_long, v); }

static inline gcc_jit_rvalue *lbin(emitter *e, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, op, e->t_long, a, b);
}

static inline gcc_jit_rvalue *lselect(emitter *e, gcc_jit_rvalue *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return pe_jit_select(cursor(e), c, a, b, e->t_long, gcc_jit_context_get_type(e->ctx, GCC_JIT_TYPE_UNSIGNED_LONG_LONG), false);
}

static inline gcc_jit_rvalue *and_(emitter *e, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, e->t_bool, a, b);
}

static inline gcc_jit_rvalue *or_(emitter *e, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, e->t_bool, a, b);
}

static inline gcc_jit_rvalue *not_(emitter *e, gcc_jit_rvalue *a)
{
    return gcc_jit_context_new_unary_op(e->ctx, NULL, GCC_JIT_UNARY_OP_LOGICAL_NEGATE, e->t_bool, a);
}

static inline gcc_jit_rvalue *is_nan(emitter *e, gcc_jit_rvalue *x) { return cmp(e, GCC_JIT_COMPARISON_NE, x, x); }

/* f64 sums are compensated: double lanes alone would lose what the
 * reference keeps.  (f32 operands summed in double need no compensation.) */
static inline bool compensated(const kir_inst *reduce)
{
    return reduce->ctype == PE_F64 && pe_reduction_of((pe_op)reduce->op)->acc == PE_ACC_SUM;
}

static inline gcc_jit_rvalue *bin_long(emitter *e, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, long b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, op, e->t_long, a, gcc_jit_context_new_rvalue_from_long(e->ctx, e->t_long, b));
}

static inline bool is_arg_extreme(const kir_inst *reduce)
{
    pe_acc_kind kind = (pe_acc_kind)pe_reduction_of((pe_op)reduce->op)->acc;
    return kind == PE_ACC_ARGMAX || kind == PE_ACC_ARGMIN;
}

/* A new block (a branch's target; loops come from loop_while). */
static inline gcc_jit_block *block(emitter *e, const char *name)
{
    return gcc_jit_function_new_block(e->fn, name);
}

/* A new local of type t set to init in the current block (a loop's counter, an accumulator). */
static inline gcc_jit_lvalue *init_local(emitter *e, gcc_jit_type *t, const char *name, gcc_jit_rvalue *init)
{
    char unique[32];
    snprintf(unique, sizeof unique, "%s%d", name, e->n_locals++);
    gcc_jit_lvalue *l = gcc_jit_function_new_local(e->fn, NULL, t, unique);
    gcc_jit_block_add_assignment(e->cur, NULL, l, init);
    return l;
}

static inline gcc_jit_lvalue *long_local(emitter *e, const char *name, gcc_jit_rvalue *init) { return init_local(e, e->t_long, name, init); }

static inline gcc_jit_rvalue *rv(gcc_jit_lvalue *l) { return gcc_jit_lvalue_as_rvalue(l); }

static inline gcc_jit_lvalue *double_local(emitter *e, const char *name, double init)
{
    return init_local(e, e->t_double, name, num(e, PE_F64, init));
}

/* The kernel's loops (pe_jit_loop, gccjit_build.h) at the emitter's block:
 * while (cond), and the common `for (; counter < to; counter += step)`
 * whose counter the caller set before. */
static inline pe_jit_loop loop_while(emitter *e, const char *name, gcc_jit_rvalue *cond)
{
    return pe_jit_loop_while(e->fn, &e->cur, name, cond);
}

static inline void loop_end(emitter *e, const pe_jit_loop *l) { pe_jit_loop_end(l, &e->cur); }

static inline pe_jit_loop loop_upto(emitter *e, const char *name, gcc_jit_lvalue *counter, gcc_jit_rvalue *to)
{
    return loop_while(e, name, cmp(e, GCC_JIT_COMPARISON_LT, rv(counter), to));
}

static inline void loop_step_end(emitter *e, const pe_jit_loop *l, gcc_jit_lvalue *counter, int64_t step)
{
    gcc_jit_block_add_assignment_op(e->cur, NULL, counter, GCC_JIT_BINARY_OP_PLUS, lng(e, step));
    loop_end(e, l);
}

/* ------------------------------------------------- across the pieces */

/* gccjit_ops.c: where a parameter's elements are, the kernel body, and
 * whether the primitives pay in a kernel */
gcc_jit_rvalue *pe_gj_axes_base(emitter *e, const kir_param *p, gcc_jit_rvalue *off, int from, int to);
void pe_gj_row_bases(emitter *e);
void pe_gj_emit_body(emitter *e, const kir_kernel *k);
bool pe_gj_vectorisable(pe_prims *prims, const kir_kernel *k);

/* gccjit_reduce.c: a reduction's passes, one element's accumulation, the
 * lanes' accumulators, their combination and the result */
int pe_gj_passes_of(const kir_inst *reduce);
void pe_gj_emit_reduce(emitter *e, const kir_inst *in);
gcc_jit_type *pe_gj_acc_type(emitter *e, const kir_inst *reduce);
gcc_jit_rvalue *pe_gj_acc_identity(emitter *e, const kir_inst *reduce);
void pe_gj_lane_locals(emitter *e, const kir_inst *reduce, int n_lanes, bool with_comp, gcc_jit_rvalue *first,
                       gcc_jit_lvalue **acc, gcc_jit_lvalue **comp, gcc_jit_lvalue **at);
void pe_gj_combine_all_lanes(emitter *e, const kir_inst *reduce, int n_lanes, gcc_jit_lvalue **acc, gcc_jit_lvalue **comp,
                             gcc_jit_lvalue **at, gcc_jit_rvalue **hi_out, gcc_jit_rvalue **lo_out);
gcc_jit_rvalue *pe_gj_finish_axis_result(emitter *e, const kir_inst *reduce, gcc_jit_rvalue *hi, gcc_jit_rvalue *lo,
                                         int64_t len);
int pe_gj_walk_lanes(emitter *e, const kir_inst *reduce);

/* The reduction lanes a walk accumulates into: n of each (pe_gj_walk_lanes). */
typedef struct {
    int n;
    gcc_jit_lvalue *acc[MAX_LANES], *comp[MAX_LANES], *at[MAX_LANES];
} pe_gj_lanes;

/* gccjit_loops.c: which shape a kernel takes, and the shapes, each a loop
 * over the launch's [begin, end) from e->cur, leaving e->cur at the block
 * after it; the row walk's pieces the row passes share */
bool pe_gj_reads_across_lines(const kir_kernel *k);
void pe_gj_row_coordinates(emitter *e, gcc_jit_rvalue *row, int skip);
void pe_gj_emit_row_span(emitter *e, const kir_kernel *k, gcc_jit_rvalue *from, gcc_jit_rvalue *to, gcc_jit_rvalue *start,
                         const pe_gj_lanes *ln);
void pe_gj_emit_flat(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end);
bool pe_gj_rows_reduce_pays(const kir_kernel *k);
void pe_gj_emit_rows_reduce(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end);
void pe_gj_emit_rows(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end);
void pe_gj_emit_tiles(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end);
void pe_gj_emit_axis_outer(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end);
void pe_gj_emit_axis_passes(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end);
void pe_gj_emit_flat_passes(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end);

/* gccjit_row_passes.c: reductions along the last axis, each row in passes
 * (or short rows walked across the results) */
bool pe_gj_row_kernel(const kir_kernel *k);
void pe_gj_emit_row_passes(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end);

/* gccjit_stream.c: a flat element-wise kernel with streaming stores (args:
 * the kernel's argument array, for the outputs' alignment) */
void pe_gj_emit_streaming(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end, gcc_jit_rvalue *args);

#endif
