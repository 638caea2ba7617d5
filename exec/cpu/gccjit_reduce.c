/* gccjit_reduce.c — the CPU generator's reductions (gccjit_emit.h): one
 * element's accumulation (Neumaier sums for f64, extremes on
 * order-preserving integer keys, argmax's and argmin's index, the passes of
 * var, stddev and f64 norm2), the lanes' accumulators, and their
 * combination in a fixed order into a result: the loop shapes
 * (gccjit_loops.c) decide where the lanes run, this file what they hold. */
#include <string.h>

#include "gccjit_emit.h"

/* Neumaier: x into (e->acc, e->comp), the low part the sum loses to comp. */
static void neumaier_add(emitter *e, gcc_jit_rvalue *x)
{
    gcc_jit_rvalue *acc = gcc_jit_lvalue_as_rvalue(e->acc);
    gcc_jit_rvalue *t = to_local(e, bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, acc, x), e->t_double);
    gcc_jit_rvalue *acc_big = cmp(e, GCC_JIT_COMPARISON_GE, math1(e, "fabs", PE_F64, acc), math1(e, "fabs", PE_F64, x));
    gcc_jit_rvalue *lost_x = bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, bin(e, GCC_JIT_BINARY_OP_MINUS, PE_F64, acc, t), x);
    gcc_jit_rvalue *lost_acc = bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, bin(e, GCC_JIT_BINARY_OP_MINUS, PE_F64, x, t), acc);
    gcc_jit_rvalue *lost = choose(e, acc_big, to_local(e, lost_x, e->t_double), to_local(e, lost_acc, e->t_double), e->t_double);
    gcc_jit_block_add_assignment_op(e->cur, NULL, e->comp, GCC_JIT_BINARY_OP_PLUS, lost);
    gcc_jit_block_add_assignment(e->cur, NULL, e->acc, t);
}

/* f64 norm2 in two passes, as the reference: the squares of values divided
 * by the largest magnitude neither overflow nor underflow. */
static bool scaled_norm2(const kir_inst *reduce)
{
    return reduce->op == PE_OP_norm2 && reduce->ctype == PE_F64;
}

/* The passes over its elements a reduction takes: var and stddev three (the
 * mean, the largest deviation from it, the scaled squared deviations), f64
 * norm2 two (the largest magnitude, the scaled squares), the others one. */
int pe_gj_passes_of(const kir_inst *reduce)
{
    if (pe_reduction_of((pe_op)reduce->op)->acc == PE_ACC_VAR) return 3;
    return scaled_norm2(reduce) ? 2 : 1;
}

/* ------------------------------------------- extremes on integer keys */

/* max, min, norminf, any and all accumulate an integer key ordered as the
 * values are, not the value in double: gcc 12 vectorises an integer max/min
 * reduction (phiopt turns an if-diamond into MAX_EXPR) but no float one
 * short of -ffinite-math-only and -fno-signed-zeros, nor one made of bit
 * mask selects; in double they ran ~10x slower than a sum.  A float's key
 * is its bits, the magnitude bits flipped where the sign is set, as a
 * signed integer: float order, +0 above -0 (the reference leaves the sign
 * of a zero that ties to the elements' order).  NaN has no place in that
 * order: a flag per lane (ORed, in the key's type so that it vectorises
 * alongside) makes the result NaN, as the reference's max meeting a NaN.
 * norminf's key is the bits of |x|; an i32 or bool operand is its own key,
 * any's and all's is x != 0 (never NaN).  Along the last axis and in
 * full reductions; along an outer axis see key_of. */
typedef enum { KEY_NONE, KEY_F32, KEY_F64, KEY_INT } key_kind;

static key_kind key_of(emitter *e, const kir_inst *reduce)
{
    pe_op op = (pe_op)reduce->op;
    const pe_reduction *r = pe_reduction_of(op);
    if (!pe_reduction_is_extreme(op)) return KEY_NONE;
    /* along an outer axis the loop runs across results, no reduction in it:
     * the double form vectorises there, and ran faster than keys (4.6 ms
     * against 5.6 for a 4096 x 4096 f32 max_axis(x, 0)) */
    if (e->k->axis_reduction && e->k->reduce_axis != e->k->rank - 1) return KEY_NONE;
    if (r->element == PE_ELEM_NONZERO) return KEY_INT;
    pe_dtype t = (pe_dtype)e->k->body[reduce->a[1]].dtype;
    if (t == PE_F32 || t == PE_F64) return t == PE_F32 ? KEY_F32 : KEY_F64;
    return r->element == PE_ELEM_VALUE && (t == PE_I32 || t == PE_BOOL) ? KEY_INT : KEY_NONE; /* |INT_MIN|: no i32 key */
}

static gcc_jit_type *key_type(emitter *e, key_kind kind) { return kind == KEY_F64 ? e->t_long : e->t_of[PE_I32]; }

/* bits ^ ((bits >> (width - 1)) & magnitude): a float's bits to its key and
 * back (the map is its own inverse). */
static gcc_jit_rvalue *key_flip(emitter *e, gcc_jit_type *K, gcc_jit_rvalue *bits)
{
    bool wide = K == e->t_long;
    gcc_jit_rvalue *magnitude = wide ? lng(e, INT64_MAX) : gcc_jit_context_new_rvalue_from_int(e->ctx, K, INT32_MAX);
    gcc_jit_rvalue *sign = gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_RSHIFT, K, bits,
                                                         gcc_jit_context_new_rvalue_from_int(e->ctx, K, wide ? 63 : 31));
    gcc_jit_rvalue *flip = gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_BITWISE_AND, K, sign, magnitude);
    return gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_BITWISE_XOR, K, bits, flip);
}

/* The key of an element x (the reduction's operand, in its dtype). */
static gcc_jit_rvalue *element_key(emitter *e, const kir_inst *reduce, key_kind kind, gcc_jit_rvalue *x)
{
    gcc_jit_type *K = key_type(e, kind);
    pe_dtype t = (pe_dtype)e->k->body[reduce->a[1]].dtype;
    if (pe_reduction_of((pe_op)reduce->op)->element == PE_ELEM_NONZERO) /* NaN is nonzero */
        return gcc_jit_context_new_cast(e->ctx, NULL, cmp(e, GCC_JIT_COMPARISON_NE, x, gcc_jit_context_zero(e->ctx, type_of(e, t))), K);
    if (kind == KEY_INT) return gcc_jit_context_new_cast(e->ctx, NULL, x, K);
    gcc_jit_rvalue *bits = to_local(e, gcc_jit_context_new_bitcast(e->ctx, NULL, x, K), K);
    if (pe_reduction_of((pe_op)reduce->op)->element == PE_ELEM_ABS) /* |x|: the sign cleared, a key already */
        return gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_BITWISE_AND, K, bits,
                                             kind == KEY_F64 ? lng(e, INT64_MAX) : gcc_jit_context_new_rvalue_from_int(e->ctx, K, INT32_MAX));
    return key_flip(e, K, bits);
}

/* The key of the reduction's identity (-inf, +inf, 0, 1), computed here. */
static gcc_jit_rvalue *key_identity(emitter *e, const kir_inst *reduce, key_kind kind)
{
    double id = pe_reduction_of((pe_op)reduce->op)->identity;
    if (kind == KEY_F64) {
        int64_t bits;
        memcpy(&bits, &id, sizeof bits);
        return lng(e, bits ^ ((bits >> 63) & INT64_MAX));
    }
    int32_t key;
    if (kind == KEY_F32) {
        float f = (float)id;
        memcpy(&key, &f, sizeof key);
        key ^= (key >> 31) & INT32_MAX;
    } else { /* an integer key: the infinities as its ends */
        key = id == -__builtin_inf() ? INT32_MIN : id == __builtin_inf() ? INT32_MAX : (int32_t)id;
    }
    return gcc_jit_context_new_rvalue_from_int(e->ctx, e->t_of[PE_I32], key);
}

/* Of two lanes' keys the better for the reduction (branch-free). */
static gcc_jit_rvalue *key_better(emitter *e, const kir_inst *reduce, gcc_jit_type *K, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    bool is_min = pe_reduction_of((pe_op)reduce->op)->acc == PE_ACC_MIN;
    gcc_jit_rvalue *better = cmp(e, is_min ? GCC_JIT_COMPARISON_LT : GCC_JIT_COMPARISON_GT, b, a);
    return K == e->t_long ? lselect(e, better, b, a) : choose(e, better, b, a, K);
}

/* The value (a double) of an accumulated key and NaN flag. */
static gcc_jit_rvalue *keyed_value(emitter *e, key_kind kind, gcc_jit_rvalue *key, gcc_jit_rvalue *nan)
{
    if (kind == KEY_INT) return gcc_jit_context_new_cast(e->ctx, NULL, key, e->t_double);
    gcc_jit_type *K = key_type(e, kind), *F = kind == KEY_F64 ? e->t_double : e->t_of[PE_F32];
    gcc_jit_rvalue *v = gcc_jit_context_new_cast(e->ctx, NULL, gcc_jit_context_new_bitcast(e->ctx, NULL, key_flip(e, K, key), F), e->t_double);
    gcc_jit_rvalue *met_nan = cmp(e, GCC_JIT_COMPARISON_NE, nan, gcc_jit_context_zero(e->ctx, K));
    return choose(e, met_nan, num(e, PE_F64, __builtin_nan("")), to_local(e, v, e->t_double), e->t_double);
}

/* The type of a keyed float extreme's NaN flag (its key's), else NULL. */
static gcc_jit_type *nan_flag_type(emitter *e, const kir_inst *reduce)
{
    key_kind kind = key_of(e, reduce);
    return kind == KEY_F32 || kind == KEY_F64 ? key_type(e, kind) : NULL;
}

/* One element into a keyed extreme: the NaN flag ORed, then
 * `if (key better than acc) acc = key` as a diamond of blocks (e->cur
 * moves to its join), the form gcc turns into MAX_EXPR/MIN_EXPR. */
static void emit_keyed(emitter *e, const kir_inst *in, key_kind kind)
{
    gcc_jit_type *K = key_type(e, kind);
    gcc_jit_rvalue *x = e->val[in->a[1]];
    gcc_jit_rvalue *key = to_local(e, element_key(e, in, kind, x), K), *acc = gcc_jit_lvalue_as_rvalue(e->acc);
    if (kind != KEY_INT)
        gcc_jit_block_add_assignment_op(e->cur, NULL, e->comp, GCC_JIT_BINARY_OP_BITWISE_OR,
                                        gcc_jit_context_new_cast(e->ctx, NULL, cmp(e, GCC_JIT_COMPARISON_NE, x, x), K));
    bool is_min = pe_reduction_of((pe_op)in->op)->acc == PE_ACC_MIN;
    gcc_jit_block *take = gcc_jit_function_new_block(e->fn, "key_take"), *join = gcc_jit_function_new_block(e->fn, "key_join");
    gcc_jit_block_end_with_conditional(e->cur, NULL, cmp(e, is_min ? GCC_JIT_COMPARISON_LT : GCC_JIT_COMPARISON_GT, key, acc), take, join);
    gcc_jit_block_add_assignment(take, NULL, e->acc, key);
    gcc_jit_block_end_with_jump(take, NULL, join);
    e->cur = join;
}

/* ---------------------------------------------------- accumulators */

/* The accumulation of one element (for wrapping i32: in u32; extremes on
 * keys). */
void pe_gj_emit_reduce(emitter *e, const kir_inst *in)
{
    const pe_reduction *r = pe_reduction_of((pe_op)in->op);
    pe_dtype ct = (pe_dtype)in->ctype;
    key_kind key = key_of(e, in);
    if (key != KEY_NONE) {
        emit_keyed(e, in, key);
        return;
    }
    if (pe_reduction_wraps((pe_op)in->op, ct)) { /* sums, products, dot of i32: mod 2^32, in any order */
        gcc_jit_rvalue *v[2];
        for (int j = 0; j + 1 < in->n; j++) v[j] = cast(e, e->val[in->a[j + 1]], (pe_dtype)e->k->body[in->a[j + 1]].dtype, PE_I32);
        gcc_jit_rvalue *x = r->element == PE_ELEM_PRODUCT ? wrap(e, GCC_JIT_BINARY_OP_MULT, v[0], v[1]) : v[0];
        x = gcc_jit_context_new_cast(e->ctx, NULL, x, e->t_u32);
        gcc_jit_block_add_assignment_op(e->cur, NULL, e->acc,
                                        r->acc == PE_ACC_PROD ? GCC_JIT_BINARY_OP_MULT : GCC_JIT_BINARY_OP_PLUS, x);
        return;
    }
    gcc_jit_rvalue *v[2];
    for (int j = 0; j + 1 < in->n; j++) { /* operands meet in ctype, then widen exactly */
        gcc_jit_rvalue *x = e->val[in->a[j + 1]];
        pe_dtype from = (pe_dtype)e->k->body[in->a[j + 1]].dtype;
        if (r->element == PE_ELEM_PRODUCT) x = cast(e, x, from, ct), from = ct;
        v[j] = gcc_jit_context_new_cast(e->ctx, NULL, x, e->t_double);
    }
    gcc_jit_rvalue *x = v[0], *acc = gcc_jit_lvalue_as_rvalue(e->acc);
    if (r->element == PE_ELEM_PRODUCT) x = bin(e, GCC_JIT_BINARY_OP_MULT, PE_F64, v[0], v[1]);
    if (r->element == PE_ELEM_ABS) x = math1(e, "fabs", PE_F64, x);
    if (r->element == PE_ELEM_SQUARE && !scaled_norm2(in)) x = bin(e, GCC_JIT_BINARY_OP_MULT, PE_F64, x, x);
    if (r->element == PE_ELEM_NONZERO) /* NaN is nonzero */
        x = choose(e, cmp(e, GCC_JIT_COMPARISON_NE, x, num(e, PE_F64, 0.0)), num(e, PE_F64, 1.0), num(e, PE_F64, 0.0), e->t_double);
    x = to_local(e, x, e->t_double);
    pe_acc_kind kind = (pe_acc_kind)r->acc;
    if (kind == PE_ACC_VAR && e->pass == 1) { /* the largest deviation, as the reference: !(d <= largest) */
        gcc_jit_rvalue *d = to_local(e, math1(e, "fabs", PE_F64, bin(e, GCC_JIT_BINARY_OP_MINUS, PE_F64, x, e->mean)), e->t_double);
        gcc_jit_block_add_assignment(e->cur, NULL, e->acc, choose(e, not_(e, cmp(e, GCC_JIT_COMPARISON_LE, d, acc)), d, acc, e->t_double));
        return;
    }
    if (kind == PE_ACC_VAR && e->pass == 2) { /* deviations scaled by 2^-shift, squared */
        gcc_jit_rvalue *args[2] = {bin(e, GCC_JIT_BINARY_OP_MINUS, PE_F64, x, e->mean), e->shift};
        gcc_jit_rvalue *d = to_local(e, math(e, "ldexp", PE_F64, 2, args), e->t_double);
        neumaier_add(e, to_local(e, bin(e, GCC_JIT_BINARY_OP_MULT, PE_F64, d, d), e->t_double));
        return;
    }
    if (scaled_norm2(in)) {
        if (e->pass == 0) { /* the largest magnitude, NaN sticking */
            gcc_jit_rvalue *m = to_local(e, math1(e, "fabs", PE_F64, x), e->t_double);
            gcc_jit_rvalue *take = and_(e, not_(e, is_nan(e, acc)), or_(e, is_nan(e, m), cmp(e, GCC_JIT_COMPARISON_GT, m, acc)));
            gcc_jit_block_add_assignment(e->cur, NULL, e->acc, choose(e, take, m, acc, e->t_double));
        } else {
            gcc_jit_rvalue *q = to_local(e, bin(e, GCC_JIT_BINARY_OP_DIVIDE, PE_F64, x, e->divisor), e->t_double);
            neumaier_add(e, to_local(e, bin(e, GCC_JIT_BINARY_OP_MULT, PE_F64, q, q), e->t_double));
        }
        return;
    }
    if (kind == PE_ACC_ARGMAX || kind == PE_ACC_ARGMIN) {
        /* a NaN, or a strictly better value; a NaN held sticks (the lane's
         * first NaN).  A lane starts at the identity with the index of its
         * first element, which an element equal to the identity keeps. */
        gcc_jit_rvalue *better = cmp(e, kind == PE_ACC_ARGMIN ? GCC_JIT_COMPARISON_LT : GCC_JIT_COMPARISON_GT, x, acc);
        gcc_jit_rvalue *take = to_local(e, bool_to_u8(e, and_(e, not_(e, is_nan(e, acc)), or_(e, is_nan(e, x), better))),
                                        e->t_of[PE_BOOL]);
        gcc_jit_rvalue *taken = cmp(e, GCC_JIT_COMPARISON_NE, take, gcc_jit_context_zero(e->ctx, e->t_of[PE_BOOL]));
        gcc_jit_block_add_assignment(e->cur, NULL, e->at, lselect(e, taken, e->pos, gcc_jit_lvalue_as_rvalue(e->at)));
        gcc_jit_block_add_assignment(e->cur, NULL, e->acc, choose(e, taken, x, acc, e->t_double));
    } else if (kind == PE_ACC_MAX || kind == PE_ACC_MIN) {
        /* a NaN sticks: once acc is NaN no comparison replaces it */
        gcc_jit_rvalue *better = cmp(e, kind == PE_ACC_MIN ? GCC_JIT_COMPARISON_LT : GCC_JIT_COMPARISON_GT, x, acc);
        gcc_jit_block_add_assignment(e->cur, NULL, e->acc, choose(e, or_(e, is_nan(e, x), better), x, acc, e->t_double));
    } else if (kind == PE_ACC_PROD) {
        gcc_jit_block_add_assignment_op(e->cur, NULL, e->acc, GCC_JIT_BINARY_OP_MULT, x);
    } else if (e->comp) {
        neumaier_add(e, x);
    } else {
        gcc_jit_block_add_assignment_op(e->cur, NULL, e->acc, GCC_JIT_BINARY_OP_PLUS, x);
    }
}

/* The type of a reduction's accumulator: u32 where i32 wraps, an extreme's
 * key, else double. */
gcc_jit_type *pe_gj_acc_type(emitter *e, const kir_inst *reduce)
{
    key_kind kind = key_of(e, reduce);
    if (kind != KEY_NONE) return key_type(e, kind);
    return pe_reduction_wraps((pe_op)reduce->op, (pe_dtype)reduce->ctype) ? e->t_u32 : e->t_double;
}

gcc_jit_rvalue *pe_gj_acc_identity(emitter *e, const kir_inst *reduce)
{
    const pe_reduction *r = pe_reduction_of((pe_op)reduce->op);
    key_kind kind = key_of(e, reduce);
    if (kind != KEY_NONE) return key_identity(e, reduce, kind);
    if (pe_reduction_wraps((pe_op)reduce->op, (pe_dtype)reduce->ctype))
        return gcc_jit_context_new_rvalue_from_int(e->ctx, e->t_u32, r->acc == PE_ACC_PROD);
    return num(e, PE_F64, r->identity);
}

/* The lanes a flat or row walk accumulates a full reduction in: one where
 * the result does not depend on the order the elements meet (a keyed
 * extreme: the largest key and the ORed NaN flags; i32 sums and products
 * wrapping mod 2^32), a plain loop-carried reduction the vectoriser packs
 * itself (lanes made it interleave each lane's elements across groups: a
 * Jacobi sweep's max(abs(next - u)) over periodic views ran at a third of the
 * C loop's speed); else REDUCE_LANES, which fix the order of the sums. */
int pe_gj_walk_lanes(emitter *e, const kir_inst *reduce)
{
    bool any_order = key_of(e, reduce) != KEY_NONE || pe_reduction_wraps((pe_op)reduce->op, (pe_dtype)reduce->ctype);
    return any_order && !is_arg_extreme(reduce) ? 1 : REDUCE_LANES;
}

/* n_lanes lanes' accumulators at their identity, compensations (or a
 * keyed float extreme's NaN flags, else NULL), argmax's and argmin's
 * indices (else NULL): lane l's first element, first + l (past the
 * elements for a lane that gets none, which then loses every tie). */
void pe_gj_lane_locals(emitter *e, const kir_inst *reduce, int n_lanes, bool with_comp, gcc_jit_rvalue *first, gcc_jit_lvalue **acc,
                        gcc_jit_lvalue **comp, gcc_jit_lvalue **at)
{
    gcc_jit_type *flag = nan_flag_type(e, reduce);
    for (int l = 0; l < n_lanes; l++) {
        acc[l] = init_local(e, pe_gj_acc_type(e, reduce), "acc", pe_gj_acc_identity(e, reduce));
        comp[l] = with_comp ? double_local(e, "comp", 0.0) : flag ? init_local(e, flag, "nan", gcc_jit_context_zero(e->ctx, flag)) : NULL;
        at[l] = is_arg_extreme(reduce) ? long_local(e, "at", bin_long(e, GCC_JIT_BINARY_OP_PLUS, first, l)) : NULL;
    }
}

/* Two lanes' accumulators combined: a sum or product (wrapping in u32 for
 * i32), or the extreme with NaN sticking. */
static gcc_jit_rvalue *combine_lanes(emitter *e, const kir_inst *reduce, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    pe_op op = (pe_op)reduce->op;
    pe_acc_kind kind = (pe_acc_kind)pe_reduction_of(op)->acc;
    gcc_jit_type *T = pe_gj_acc_type(e, reduce);
    enum gcc_jit_binary_op how = kind == PE_ACC_PROD ? GCC_JIT_BINARY_OP_MULT : GCC_JIT_BINARY_OP_PLUS;
    if (!pe_reduction_is_extreme(op)) return to_local(e, gcc_jit_context_new_binary_op(e->ctx, NULL, how, T, a, b), T);
    gcc_jit_rvalue *better = cmp(e, kind == PE_ACC_MIN ? GCC_JIT_COMPARISON_LT : GCC_JIT_COMPARISON_GT, b, a);
    gcc_jit_rvalue *take = and_(e, not_(e, is_nan(e, a)), or_(e, is_nan(e, b), better));
    return choose(e, take, b, a, e->t_double);
}

/* Two lanes' (extreme, index) of argmax, argmin combined: a NaN over a
 * number, the better value, and of two equal ones (or two NaNs) the first
 * index. */
static void combine_arg_lanes(emitter *e, const kir_inst *reduce, gcc_jit_rvalue **a, gcc_jit_rvalue **ia, gcc_jit_rvalue *b,
                              gcc_jit_rvalue *ib)
{
    bool is_min = pe_reduction_of((pe_op)reduce->op)->acc == PE_ACC_ARGMIN;
    gcc_jit_rvalue *a_nan = is_nan(e, *a), *b_nan = is_nan(e, b);
    gcc_jit_rvalue *better = cmp(e, is_min ? GCC_JIT_COMPARISON_LT : GCC_JIT_COMPARISON_GT, b, *a);
    gcc_jit_rvalue *tie = or_(e, cmp(e, GCC_JIT_COMPARISON_EQ, b, *a), and_(e, a_nan, b_nan));
    gcc_jit_rvalue *take = or_(e, and_(e, not_(e, a_nan), or_(e, b_nan, better)), and_(e, tie, cmp(e, GCC_JIT_COMPARISON_LT, ib, *ia)));
    take = to_local(e, bool_to_u8(e, take), e->t_of[PE_BOOL]);
    gcc_jit_rvalue *taken = cmp(e, GCC_JIT_COMPARISON_NE, take, gcc_jit_context_zero(e->ctx, e->t_of[PE_BOOL]));
    *a = to_local(e, choose(e, taken, b, *a, e->t_double), e->t_double);
    *ia = to_local(e, lselect(e, taken, ib, *ia), e->t_long);
}

/* The accumulators of n_lanes lanes combined pairwise in a fixed
 * order into (hi, lo): lo the compensation of f64 sums, argmax's and
 * argmin's index (a long), else 0; a keyed extreme's lanes (their keys and
 * NaN flags) into its value. */
void pe_gj_combine_all_lanes(emitter *e, const kir_inst *reduce, int n_lanes, gcc_jit_lvalue **acc, gcc_jit_lvalue **comp,
                              gcc_jit_lvalue **at, gcc_jit_rvalue **hi_out, gcc_jit_rvalue **lo_out)
{
    gcc_jit_rvalue *hi[MAX_LANES] = {0}, *lo[MAX_LANES] = {0};
    key_kind kind = key_of(e, reduce);
    if (kind != KEY_NONE) {
        gcc_jit_type *K = key_type(e, kind);
        for (int l = 0; l < n_lanes; l++)
            hi[l] = gcc_jit_lvalue_as_rvalue(acc[l]), lo[l] = comp[l] ? gcc_jit_lvalue_as_rvalue(comp[l]) : NULL;
        for (int width = n_lanes; width > 1; width /= 2)
            for (int l = 0; l < width / 2; l++) {
                hi[l] = key_better(e, reduce, K, hi[2 * l], hi[2 * l + 1]);
                if (lo[0]) lo[l] = to_local(e, gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_BITWISE_OR, K, lo[2 * l], lo[2 * l + 1]), K);
            }
        *hi_out = to_local(e, keyed_value(e, kind, hi[0], lo[0]), e->t_double);
        *lo_out = num(e, PE_F64, 0.0);
        return;
    }
    bool with_comp = comp[0] != NULL, arg = is_arg_extreme(reduce);
    for (int l = 0; l < n_lanes; l++) {
        hi[l] = gcc_jit_lvalue_as_rvalue(acc[l]);
        lo[l] = with_comp ? gcc_jit_lvalue_as_rvalue(comp[l]) : arg ? gcc_jit_lvalue_as_rvalue(at[l]) : num(e, PE_F64, 0.0);
    }
    for (int width = n_lanes; width > 1; width /= 2)
        for (int l = 0; l < width / 2; l++) {
            if (with_comp) { /* (hi, lo) pairs added without losing the low parts */
                gcc_jit_rvalue *a = hi[2 * l], *b = hi[2 * l + 1];
                gcc_jit_rvalue *t = to_local(e, bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, a, b), e->t_double);
                gcc_jit_rvalue *a_big = cmp(e, GCC_JIT_COMPARISON_GE, math1(e, "fabs", PE_F64, a), math1(e, "fabs", PE_F64, b));
                gcc_jit_rvalue *lost = choose(
                    e, a_big,
                    to_local(e, bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, bin(e, GCC_JIT_BINARY_OP_MINUS, PE_F64, a, t), b), e->t_double),
                    to_local(e, bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, bin(e, GCC_JIT_BINARY_OP_MINUS, PE_F64, b, t), a), e->t_double),
                    e->t_double);
                lo[l] = to_local(e, bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, lost,
                                        bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, lo[2 * l], lo[2 * l + 1])), e->t_double);
                hi[l] = t;
            } else if (arg) {
                gcc_jit_rvalue *v = hi[2 * l], *i = lo[2 * l];
                combine_arg_lanes(e, reduce, &v, &i, hi[2 * l + 1], lo[2 * l + 1]);
                hi[l] = v, lo[l] = i;
            } else {
                hi[l] = combine_lanes(e, reduce, hi[2 * l], hi[2 * l + 1]);
            }
        }
    *hi_out = hi[0];
    *lo_out = lo[0];
}

/* An axis reduction's result from its accumulated (hi, lo) over `len`
 * elements, as the reference finishes it: the compensation added where the
 * sum is finite, mean divided, norm2's root, argmax's index, a wrapped i32;
 * converted to the result type. */
gcc_jit_rvalue *pe_gj_finish_axis_result(emitter *e, const kir_inst *reduce, gcc_jit_rvalue *hi, gcc_jit_rvalue *lo, int64_t len)
{
    pe_op op = (pe_op)reduce->op;
    gcc_jit_type *T = type_of(e, (pe_dtype)reduce->dtype);
    if (is_arg_extreme(reduce)) return gcc_jit_context_new_cast(e->ctx, NULL, lo, T);
    if (pe_reduction_wraps(op, (pe_dtype)reduce->ctype)) return gcc_jit_context_new_cast(e->ctx, NULL, hi, T);
    gcc_jit_rvalue *v = hi;
    if (pe_reduction_of(op)->acc == PE_ACC_SUM) {
        gcc_jit_rvalue *finite = cmp(e, GCC_JIT_COMPARISON_LT, math1(e, "fabs", PE_F64, hi), num(e, PE_F64, __builtin_inf()));
        v = choose(e, finite, to_local(e, bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, hi, lo), e->t_double), hi, e->t_double);
    }
    if (op == PE_OP_mean) v = bin(e, GCC_JIT_BINARY_OP_DIVIDE, PE_F64, v, num(e, PE_F64, (double)len));
    if (op == PE_OP_norm2) v = math1(e, "sqrt", PE_F64, v);
    return gcc_jit_context_new_cast(e->ctx, NULL, to_local(e, v, e->t_double), T);
}
