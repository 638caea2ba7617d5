/* gccjit_ops.c — the CPU generator's element-wise emission (gccjit_emit.h):
 * where each parameter's element is (from the flat index, or from
 * coordinates hoisted per row), random draws (Philox, as irformat/philox.h
 * defines them), each op of the catalog by class (arithmetic, functions,
 * tests and logic, conversions and positions), gathers, and the kernel body
 * that every loop shape (gccjit_loops.c, gccjit_stream.c) emits once per
 * element or lane. */
#include <float.h>
#include <string.h>

#include "gccjit_emit.h"
#include "../../irformat/philox.h"

static gcc_jit_rvalue *truth(emitter *e, gcc_jit_rvalue *v, pe_dtype t)
{
    return gcc_jit_context_new_comparison(e->ctx, NULL, GCC_JIT_COMPARISON_NE, v,
                                          gcc_jit_context_zero(e->ctx, type_of(e, t)));
}

/* min/max as the reference has them: NaN if either is NaN; on a tie the
 * zero with the sign min prefers (-0) or max prefers (+0), which for equal
 * values is the OR (min) or AND (max) of their bits. */
static gcc_jit_rvalue *minmax(emitter *e, gcc_jit_rvalue *a, gcc_jit_rvalue *b, bool is_min, pe_dtype t)
{
    gcc_jit_type *T = e->t_of[t];
    gcc_jit_rvalue *pick = choose(e, cmp(e, is_min ? GCC_JIT_COMPARISON_LT : GCC_JIT_COMPARISON_GT, b, a), b, a, T);
    if (!is_float(t)) return pick;
    bool wide = t == PE_F64;
    gcc_jit_type *U = wide ? gcc_jit_context_get_type(e->ctx, GCC_JIT_TYPE_UNSIGNED_LONG_LONG) : e->t_u32;
    gcc_jit_rvalue *bits = gcc_jit_context_new_binary_op(
        e->ctx, NULL, is_min ? GCC_JIT_BINARY_OP_BITWISE_OR : GCC_JIT_BINARY_OP_BITWISE_AND, U,
        gcc_jit_context_new_bitcast(e->ctx, NULL, a, U), gcc_jit_context_new_bitcast(e->ctx, NULL, b, U));
    gcc_jit_rvalue *tie = to_local(e, gcc_jit_context_new_bitcast(e->ctx, NULL, bits, T), T);
    pick = choose(e, cmp(e, GCC_JIT_COMPARISON_EQ, a, b), tie, pick, T);
    gcc_jit_rvalue *nan = gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, e->t_bool,
                                                        cmp(e, GCC_JIT_COMPARISON_NE, a, a), cmp(e, GCC_JIT_COMPARISON_NE, b, b));
    return choose(e, nan, to_local(e, bin(e, GCC_JIT_BINARY_OP_PLUS, t, a, b), T), pick, T);
}

/* ------------------------------------------------------- where elements are */

/* Coordinate `axis` of the element being emitted, as a long: hoisted in row
 * mode, else from the flat index. */
static gcc_jit_rvalue *coordinate_long(emitter *e, int axis)
{
    if (e->rows) return axis == e->k->rank - 1 ? e->c_last : e->coord[axis];
    int64_t inner = 1;
    for (int d = e->k->rank - 1; d > axis; d--) inner *= e->k->shape[d];
    gcc_jit_rvalue *q = lbin(e, GCC_JIT_BINARY_OP_DIVIDE, e->index, lng(e, inner));
    return axis == 0 ? q : lbin(e, GCC_JIT_BINARY_OP_MODULO, q, lng(e, e->k->shape[axis]));
}

static gcc_jit_rvalue *coordinate(emitter *e, int axis)
{
    return gcc_jit_context_new_cast(e->ctx, NULL, coordinate_long(e, axis), e->t_of[PE_I32]);
}

/* stride[d] * m_d(x) of a STRIDED parameter (kir.h), or NULL when 0. */
static gcc_jit_rvalue *axis_term(emitter *e, const kir_param *p, int d, gcc_jit_rvalue *x)
{
    if (p->stride[d] == 0) return NULL;
    if (p->hi[d] > 0 && e->seg_static && d == e->k->rank - 1) { /* a static segment: wholly below, in or above */
        if (e->seg_hi <= p->lo[d]) x = lng(e, p->lo[d]);
        else if (e->seg_lo >= p->hi[d]) x = lng(e, p->hi[d] - 1);
    } else if (p->hi[d] > 0) { /* clamped: never outside the array, whatever the other operand of a select */
        x = lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, x, lng(e, p->lo[d])), lng(e, p->lo[d]), x);
        x = lselect(e, cmp(e, GCC_JIT_COMPARISON_GT, x, lng(e, p->hi[d] - 1)), lng(e, p->hi[d] - 1), x);
    }
    if (p->wrap[d] > 0) x = lbin(e, GCC_JIT_BINARY_OP_MODULO, lbin(e, GCC_JIT_BINARY_OP_PLUS, x, lng(e, p->shift[d])), lng(e, p->wrap[d]));
    return p->stride[d] == 1 ? x : lbin(e, GCC_JIT_BINARY_OP_MULT, x, lng(e, p->stride[d]));
}

/* off plus the terms of a STRIDED parameter's axes [from, to) at the
 * hoisted coordinates, as a local. */
gcc_jit_rvalue *pe_gj_axes_base(emitter *e, const kir_param *p, gcc_jit_rvalue *off, int from, int to)
{
    for (int d = from; d < to; d++) {
        gcc_jit_rvalue *t = axis_term(e, p, d, e->coord[d]);
        if (t) off = lbin(e, GCC_JIT_BINARY_OP_PLUS, off, t);
    }
    return to_local(e, off, e->t_long);
}

/* A STRIDED parameter's element at c_last = 0 of the current row: its
 * offset plus the terms of the axes before the last. */
static gcc_jit_rvalue *row_base(emitter *e, const kir_param *p)
{
    return pe_gj_axes_base(e, p, lng(e, p->offset), 0, e->k->rank - 1);
}

/* The hoisted row bases of every STRIDED parameter. */
void pe_gj_row_bases(emitter *e)
{
    for (int p = 0; p < e->k->n_params; p++)
        if (e->k->params[p].kind == KIR_IN_STRIDED) e->base[p] = row_base(e, &e->k->params[p]);
}

static gcc_jit_rvalue *element_index(emitter *e, int param)
{
    const kir_param *p = &e->k->params[param];
    if (p->kind != KIR_IN_STRIDED) return e->index;
    int last = e->k->rank - 1;
    if (e->rows && e->seg_wrapped[param]) { /* in a row segment: linear */
        gcc_jit_rvalue *x = lbin(e, GCC_JIT_BINARY_OP_PLUS, e->seg_wrapped[param], lbin(e, GCC_JIT_BINARY_OP_MINUS, e->index, e->seg_first));
        return lbin(e, GCC_JIT_BINARY_OP_PLUS, e->base[param], p->stride[last] == 1 ? x : lbin(e, GCC_JIT_BINARY_OP_MULT, x, lng(e, p->stride[last])));
    }
    if (e->rows) {
        gcc_jit_rvalue *t = axis_term(e, p, last, e->c_last);
        return t ? lbin(e, GCC_JIT_BINARY_OP_PLUS, e->base[param], t) : e->base[param];
    }
    gcc_jit_rvalue *off = lng(e, p->offset);
    for (int d = 0; d <= last; d++) {
        gcc_jit_rvalue *t = p->stride[d] ? axis_term(e, p, d, coordinate_long(e, d)) : NULL;
        if (t) off = lbin(e, GCC_JIT_BINARY_OP_PLUS, off, t);
    }
    return off;
}

/* Element `at` of parameter q as the access `in` reads or writes it: a
 * complex array is an array of its parts (kir.h), re at 2 at, im at 2 at + 1. */
static gcc_jit_rvalue *part_index(emitter *e, const kir_param *q, gcc_jit_rvalue *at, const kir_inst *in)
{
    if (!pe_dtype_is_complex((pe_dtype)q->dtype)) return at;
    return lbin(e, GCC_JIT_BINARY_OP_PLUS, lbin(e, GCC_JIT_BINARY_OP_MULT, lng(e, 2), at), lng(e, in->imm));
}

/* ------------------------------------------------------ random numbers */

static gcc_jit_rvalue *u32_op(emitter *e, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, op, e->t_u32, a, b);
}

static gcc_jit_rvalue *u32_const(emitter *e, uint32_t v)
{
    return gcc_jit_context_new_rvalue_from_long(e->ctx, e->t_u32, (long)v);
}

/* The four words of element e->index of a draw (irformat/philox.h):
 * Philox4x32 unrolled, each round's products 32 x 32 -> 64 bits. */
static void emit_philox(emitter *e, const kir_inst *in, gcc_jit_rvalue *w[4])
{
    gcc_jit_type *U64 = gcc_jit_context_get_type(e->ctx, GCC_JIT_TYPE_UNSIGNED_LONG_LONG);
    gcc_jit_rvalue *i = gcc_jit_context_new_cast(e->ctx, NULL, e->index, U64);
    gcc_jit_rvalue *k0 = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, e->val[in->a[0]], e->t_u32), e->t_u32);
    gcc_jit_rvalue *k1 = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, e->val[in->a[1]], e->t_u32), e->t_u32);
    gcc_jit_rvalue *c[4] = {
        to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, i, e->t_u32), e->t_u32),
        to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_RSHIFT, U64, i, gcc_jit_context_new_rvalue_from_int(e->ctx, U64, 32)), e->t_u32), e->t_u32),
        to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, e->val[in->a[2]], e->t_u32), e->t_u32),
        u32_const(e, 0)};
    gcc_jit_rvalue *m0 = gcc_jit_context_new_rvalue_from_long(e->ctx, U64, PE_PHILOX_M0);
    gcc_jit_rvalue *m1 = gcc_jit_context_new_rvalue_from_long(e->ctx, U64, PE_PHILOX_M1);
    gcc_jit_rvalue *shift = gcc_jit_context_new_rvalue_from_int(e->ctx, U64, 32);
    for (int r = 0; r < (int)in->imm; r++) {
        if (r > 0) {
            k0 = to_local(e, u32_op(e, GCC_JIT_BINARY_OP_PLUS, k0, u32_const(e, PE_PHILOX_W0)), e->t_u32);
            k1 = to_local(e, u32_op(e, GCC_JIT_BINARY_OP_PLUS, k1, u32_const(e, PE_PHILOX_W1)), e->t_u32);
        }
        gcc_jit_rvalue *p0 = to_local(e, gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_MULT, U64, m0, gcc_jit_context_new_cast(e->ctx, NULL, c[0], U64)), U64);
        gcc_jit_rvalue *p1 = to_local(e, gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_MULT, U64, m1, gcc_jit_context_new_cast(e->ctx, NULL, c[2], U64)), U64);
        gcc_jit_rvalue *hi0 = gcc_jit_context_new_cast(e->ctx, NULL, gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_RSHIFT, U64, p0, shift), e->t_u32);
        gcc_jit_rvalue *hi1 = gcc_jit_context_new_cast(e->ctx, NULL, gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_RSHIFT, U64, p1, shift), e->t_u32);
        gcc_jit_rvalue *n0 = to_local(e, u32_op(e, GCC_JIT_BINARY_OP_BITWISE_XOR, u32_op(e, GCC_JIT_BINARY_OP_BITWISE_XOR, hi1, c[1]), k0), e->t_u32);
        gcc_jit_rvalue *n2 = to_local(e, u32_op(e, GCC_JIT_BINARY_OP_BITWISE_XOR, u32_op(e, GCC_JIT_BINARY_OP_BITWISE_XOR, hi0, c[3]), k1), e->t_u32);
        c[1] = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, p1, e->t_u32), e->t_u32);
        c[3] = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, p0, e->t_u32), e->t_u32);
        c[0] = n0;
        c[2] = n2;
    }
    for (int j = 0; j < 4; j++) w[j] = c[j];
}

/* (hi >> 5) * 2^26 + (lo >> 6), times 2^-53: 53 random bits in [0, 1). */
static gcc_jit_rvalue *unit53(emitter *e, gcc_jit_rvalue *hi, gcc_jit_rvalue *lo)
{
    gcc_jit_rvalue *h = gcc_jit_context_new_cast(e->ctx, NULL, u32_op(e, GCC_JIT_BINARY_OP_RSHIFT, hi, u32_const(e, 5)), e->t_double);
    gcc_jit_rvalue *l = gcc_jit_context_new_cast(e->ctx, NULL, u32_op(e, GCC_JIT_BINARY_OP_RSHIFT, lo, u32_const(e, 6)), e->t_double);
    gcc_jit_rvalue *x = bin(e, GCC_JIT_BINARY_OP_PLUS, PE_F64, bin(e, GCC_JIT_BINARY_OP_MULT, PE_F64, h, num(e, PE_F64, 67108864.0)), l);
    return to_local(e, bin(e, GCC_JIT_BINARY_OP_MULT, PE_F64, x, num(e, PE_F64, 0x1p-53)), e->t_double);
}

static gcc_jit_rvalue *builtin_f64(emitter *e, const char *name, gcc_jit_rvalue *x)
{
    return gcc_jit_context_new_call(e->ctx, NULL, gcc_jit_context_get_builtin_function(e->ctx, name), 1, &x);
}

/* A random draw's element in its dtype, as irformat/philox.h defines it:
 * normal draws call the same libm log and cos the interpreter does (never
 * a primitive), so both agree bitwise. */
static gcc_jit_rvalue *emit_random(emitter *e, const kir_inst *in)
{
    pe_dtype rt = (pe_dtype)in->dtype;
    gcc_jit_rvalue *w[4];
    emit_philox(e, in, w);
    if (in->op == PE_OP_random_normal) {
        gcc_jit_rvalue *u1 = to_local(e, bin(e, GCC_JIT_BINARY_OP_MINUS, PE_F64, num(e, PE_F64, 1.0), unit53(e, w[0], w[1])), e->t_double);
        gcc_jit_rvalue *u2 = unit53(e, w[2], w[3]);
        gcc_jit_rvalue *r = builtin_f64(e, "__builtin_sqrt", bin(e, GCC_JIT_BINARY_OP_MULT, PE_F64, num(e, PE_F64, -2.0), builtin_f64(e, "__builtin_log", u1)));
        gcc_jit_rvalue *c = builtin_f64(e, "__builtin_cos", bin(e, GCC_JIT_BINARY_OP_MULT, PE_F64, num(e, PE_F64, PE_TWO_PI), u2));
        gcc_jit_rvalue *z = to_local(e, bin(e, GCC_JIT_BINARY_OP_MULT, PE_F64, to_local(e, r, e->t_double), to_local(e, c, e->t_double)), e->t_double);
        return gcc_jit_context_new_cast(e->ctx, NULL, z, type_of(e, rt));
    }
    if (rt == PE_I32) return gcc_jit_context_new_cast(e->ctx, NULL, w[0], type_of(e, PE_I32));
    if (rt == PE_F32) {
        gcc_jit_rvalue *bits = gcc_jit_context_new_cast(e->ctx, NULL, u32_op(e, GCC_JIT_BINARY_OP_RSHIFT, w[0], u32_const(e, 8)), type_of(e, PE_F32));
        return bin(e, GCC_JIT_BINARY_OP_MULT, PE_F32, bits, num(e, PE_F32, 0x1p-24));
    }
    return unit53(e, w[0], w[1]);
}

/* ------------------------------------------------------------------ ops */

/* The primitive for f32 op (cpu_prims.c) when the library has one, or NULL. */
static gcc_jit_function *prim_f32(pe_prims *prims, pe_op op)
{
    const char *name = pe_cpu_op_of(op)->f32_prim;
    return name ? pe_prims_get(prims, name, true) : NULL;
}

/* Operands of `in` in its computation type ct: a cond's condition and a
 * cast's operand as they are. */
static void op_operands(emitter *e, const kir_inst *in, pe_dtype ct, gcc_jit_rvalue **v)
{
    pe_op op = (pe_op)in->op;
    for (int j = 0; j < in->n; j++) {
        pe_dtype from = (pe_dtype)e->k->body[in->a[j]].dtype;
        bool raw = (op == PE_OP_cond && j == 0) || op == PE_OP_cast;
        gcc_jit_rvalue *x = e->val[in->a[j]];
        /* computed in double, an operand is rounded to the promoted f32 first */
        if (!raw && ct != in->ctype && from != (pe_dtype)in->ctype) x = cast(e, x, from, in->ctype), from = in->ctype;
        v[j] = raw ? x : cast(e, x, from, ct);
    }
}

/* Arithmetic but C's operators (emit_op): i32 wraps, its division and
 * remainder guarded. */
static gcc_jit_rvalue *emit_arith(emitter *e, pe_op op, pe_dtype ct, gcc_jit_rvalue **v)
{
    gcc_jit_type *T = type_of(e, ct);
    bool fl = is_float(ct);
    switch (op) {
    case PE_OP_neg:
        return fl ? gcc_jit_context_new_unary_op(e->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, T, v[0])
                  : wrap(e, GCC_JIT_BINARY_OP_MINUS, gcc_jit_context_zero(e->ctx, T), v[0]);
    case PE_OP_div:
        if (fl) return bin(e, GCC_JIT_BINARY_OP_DIVIDE, ct, v[0], v[1]);
        __attribute__((fallthrough)); /* i32 division and remainder share their guards */
    case PE_OP_mod: {
        if (fl) return math(e, pe_libm_name(PE_OP_mod), ct, 2, v);
        /* b == 0 gives 0; b == -1 avoids INT_MIN / -1 (quotient -a wraps, remainder 0) */
        gcc_jit_rvalue *zero = gcc_jit_context_zero(e->ctx, T), *minus1 = gcc_jit_context_new_rvalue_from_int(e->ctx, T, -1);
        gcc_jit_rvalue *safe_b = choose(e, cmp(e, GCC_JIT_COMPARISON_EQ, v[1], zero), gcc_jit_context_one(e->ctx, T), v[1], T);
        safe_b = choose(e, cmp(e, GCC_JIT_COMPARISON_EQ, safe_b, minus1), gcc_jit_context_one(e->ctx, T), safe_b, T);
        gcc_jit_rvalue *q = bin(e, op == PE_OP_div ? GCC_JIT_BINARY_OP_DIVIDE : GCC_JIT_BINARY_OP_MODULO, ct, v[0], safe_b);
        gcc_jit_rvalue *by_minus1 = op == PE_OP_div ? wrap(e, GCC_JIT_BINARY_OP_MINUS, zero, v[0]) : zero;
        q = to_local(e, q, T);
        q = choose(e, cmp(e, GCC_JIT_COMPARISON_EQ, v[1], minus1), by_minus1, q, T);
        return choose(e, cmp(e, GCC_JIT_COMPARISON_EQ, v[1], zero), zero, q, T);
    }
    case PE_OP_abs:
        if (fl) return math1(e, pe_libm_name(op), ct, v[0]);
        return choose(e, cmp(e, GCC_JIT_COMPARISON_LT, v[0], gcc_jit_context_zero(e->ctx, T)),
                      wrap(e, GCC_JIT_BINARY_OP_MINUS, gcc_jit_context_zero(e->ctx, T), v[0]), v[0], T);
    case PE_OP_sign: {
        gcc_jit_rvalue *zero = gcc_jit_context_zero(e->ctx, T);
        gcc_jit_rvalue *neg = choose(e, cmp(e, GCC_JIT_COMPARISON_LT, v[0], zero),
                                     gcc_jit_context_new_rvalue_from_int(e->ctx, T, -1), v[0], T);
        return choose(e, cmp(e, GCC_JIT_COMPARISON_GT, v[0], zero), gcc_jit_context_one(e->ctx, T), neg, T);
    }
    case PE_OP_min: return minmax(e, v[0], v[1], true, ct);
    case PE_OP_max: return minmax(e, v[0], v[1], false, ct);
    default: break; /* not arithmetic: emit_own sends none here */
    }
    return NULL;
}

/* Functions but libm's alone (emit_op): reciprocals, cbrt refined. */
static gcc_jit_rvalue *emit_math(emitter *e, const kir_inst *in, pe_dtype ct, gcc_jit_rvalue **v)
{
    pe_op op = (pe_op)in->op;
    gcc_jit_type *T = type_of(e, ct);
    switch (op) {
    case PE_OP_rcp: return bin(e, GCC_JIT_BINARY_OP_DIVIDE, ct, num(e, ct, 1), v[0]);
    case PE_OP_rsqrt: return bin(e, GCC_JIT_BINARY_OP_DIVIDE, ct, num(e, ct, 1), math1(e, "sqrt", ct, v[0]));
    case PE_OP_cbrt: { /* f64: refmath.c's accurate_cbrt, one exact-residual Newton step */
        if (ct != PE_F64) return math1(e, "cbrt", ct, v[0]);
        gcc_jit_rvalue *x = to_local(e, v[0], T), *y = to_local(e, math1(e, "cbrt", ct, x), T);
        gcc_jit_rvalue *y2 = to_local(e, bin(e, GCC_JIT_BINARY_OP_MULT, ct, y, y), T);
        gcc_jit_rvalue *lo_args[3] = {y, y, gcc_jit_context_new_unary_op(e->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, T, y2)};
        gcc_jit_rvalue *res_args[3] = {y2, y, gcc_jit_context_new_unary_op(e->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, T, x)};
        gcc_jit_rvalue *r = bin(e, GCC_JIT_BINARY_OP_PLUS, ct, math(e, "fma", ct, 3, res_args),
                                bin(e, GCC_JIT_BINARY_OP_MULT, ct, math(e, "fma", ct, 3, lo_args), y));
        gcc_jit_rvalue *stepped = bin(e, GCC_JIT_BINARY_OP_MINUS, ct, y,
                                      bin(e, GCC_JIT_BINARY_OP_DIVIDE, ct, r, bin(e, GCC_JIT_BINARY_OP_MULT, ct, num(e, ct, 3), y2)));
        gcc_jit_rvalue *ax = to_local(e, math1(e, "fabs", ct, x), T);
        gcc_jit_rvalue *normal = gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, e->t_bool,
                                                               cmp(e, GCC_JIT_COMPARISON_GE, ax, num(e, ct, DBL_MIN)),
                                                               cmp(e, GCC_JIT_COMPARISON_LE, ax, num(e, ct, DBL_MAX)));
        return choose(e, normal, stepped, y, T);
    }
    default: break; /* not a function: emit_own sends none here */
    }
    return NULL;
}

/* asec, acsc: in double (f32_in_double), the forms of codegen.h. */
static gcc_jit_rvalue *emit_asec_acsc(emitter *e, pe_op op, pe_dtype ct, gcc_jit_rvalue **v)
{
    gcc_jit_type *T = type_of(e, ct);
    gcc_jit_rvalue *x = to_local(e, v[0], T), *near_args[3] = {x, x, num(e, ct, -1.0)};
    gcc_jit_rvalue *root = to_local(e, math1(e, "sqrt", ct, math(e, "fma", ct, 3, near_args)), T);
    gcc_jit_rvalue *inv = to_local(e, bin(e, GCC_JIT_BINARY_OP_DIVIDE, ct, num(e, ct, 1), x), T);
    gcc_jit_rvalue *near = cmp(e, GCC_JIT_COMPARISON_LT, math1(e, "fabs", ct, x), num(e, ct, PE_ASEC_ACSC_NEAR));
    if (op == PE_OP_asec) {
        gcc_jit_rvalue *t = to_local(e, math1(e, "atan", ct, root), T);
        gcc_jit_rvalue *from_pi = bin(e, GCC_JIT_BINARY_OP_PLUS, ct, bin(e, GCC_JIT_BINARY_OP_MINUS, ct, num(e, ct, 3.141592653589793), t),
                                      num(e, ct, PE_PI_LO));
        gcc_jit_rvalue *at_1 = choose(e, cmp(e, GCC_JIT_COMPARISON_GT, x, num(e, ct, 0)), t, to_local(e, from_pi, T), T);
        return choose(e, near, to_local(e, at_1, T), to_local(e, math1(e, "acos", ct, inv), T), T);
    }
    gcc_jit_rvalue *signed_args[2] = {
        math1(e, "atan", ct, bin(e, GCC_JIT_BINARY_OP_DIVIDE, ct, num(e, ct, 1), root)), x};
    return choose(e, near, to_local(e, math(e, "copysign", ct, 2, signed_args), T),
                  to_local(e, math1(e, "asin", ct, inv), T), T);
}

/* cdf_norm: 0.5 * erfc(-x / sqrt(2)).  For f64 in long double: the tail's
 * slope amplifies any rounding of the argument (as the reference does); for
 * f32 (ct is then f64) double is already far more than enough. */
static gcc_jit_rvalue *emit_cdf_norm(emitter *e, const kir_inst *in, pe_dtype ct, gcc_jit_rvalue **v)
{
    pe_op op = (pe_op)in->op;
    gcc_jit_type *T = type_of(e, ct);
    if (ct == PE_F32) return gcc_jit_context_new_call(e->ctx, NULL, prim_f32(e->prims, op), 1, v);
    if ((pe_dtype)in->ctype == PE_F32)
        return bin(e, GCC_JIT_BINARY_OP_MULT, ct, num(e, ct, 0.5),
                   math1(e, "erfc", ct, bin(e, GCC_JIT_BINARY_OP_MULT, ct, v[0], num(e, ct, -0.70710678118654752440))));
    gcc_jit_type *LD = gcc_jit_context_get_type(e->ctx, GCC_JIT_TYPE_LONG_DOUBLE);
    gcc_jit_rvalue *x = gcc_jit_context_new_cast(e->ctx, NULL, v[0], LD);
    /* -x / sqrtl(2): a double constant would round 1/sqrt(2) to 53 bits */
    gcc_jit_rvalue *two = gcc_jit_context_new_rvalue_from_double(e->ctx, LD, 2.0);
    gcc_jit_rvalue *root2 = gcc_jit_context_new_call(e->ctx, NULL, gcc_jit_context_get_builtin_function(e->ctx, "__builtin_sqrtl"), 1, &two);
    gcc_jit_rvalue *arg = gcc_jit_context_new_binary_op(
        e->ctx, NULL, GCC_JIT_BINARY_OP_DIVIDE, LD, gcc_jit_context_new_unary_op(e->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, LD, x), root2);
    gcc_jit_rvalue *c = gcc_jit_context_new_call(e->ctx, NULL, gcc_jit_context_get_builtin_function(e->ctx, "__builtin_erfcl"), 1, &arg);
    gcc_jit_rvalue *half = gcc_jit_context_new_rvalue_from_double(e->ctx, LD, 0.5);
    return gcc_jit_context_new_cast(e->ctx, NULL, gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_MULT, LD, half, c), T);
}

/* Tests and logic (comparisons: emit_op): a bool (u8) result. */
static gcc_jit_rvalue *emit_logic(emitter *e, const kir_inst *in, pe_dtype ct, gcc_jit_rvalue **v)
{
    pe_op op = (pe_op)in->op;
    gcc_jit_type *T = type_of(e, ct);
    switch (op) {
    case PE_OP_isnan: return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_NE, v[0], v[0]));
    case PE_OP_isinf:
        return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_EQ, math1(e, "fabs", ct, v[0]), num(e, ct, __builtin_inf())));
    case PE_OP_isfinite:
        return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_LT, math1(e, "fabs", ct, v[0]), num(e, ct, __builtin_inf())));
    case PE_OP_and: case PE_OP_or: case PE_OP_nand: case PE_OP_nor: case PE_OP_xor: case PE_OP_not: {
        gcc_jit_rvalue *a = truth(e, v[0], ct);
        if (op == PE_OP_not)
            return bool_to_u8(e, gcc_jit_context_new_unary_op(e->ctx, NULL, GCC_JIT_UNARY_OP_LOGICAL_NEGATE, e->t_bool, a));
        gcc_jit_rvalue *b = truth(e, v[1], ct), *r;
        if (op == PE_OP_xor) r = cmp(e, GCC_JIT_COMPARISON_NE, a, b);
        else r = gcc_jit_context_new_binary_op(e->ctx, NULL, op == PE_OP_and || op == PE_OP_nand ? GCC_JIT_BINARY_OP_LOGICAL_AND : GCC_JIT_BINARY_OP_LOGICAL_OR, e->t_bool, a, b);
        if (op == PE_OP_nand || op == PE_OP_nor)
            r = gcc_jit_context_new_unary_op(e->ctx, NULL, GCC_JIT_UNARY_OP_LOGICAL_NEGATE, e->t_bool, r);
        return bool_to_u8(e, r);
    }
    case PE_OP_cond: {
        pe_dtype c_type = (pe_dtype)e->k->body[in->a[0]].dtype;
        return choose(e, truth(e, v[0], c_type), v[1], v[2], T);
    }
    default: break; /* neither a test nor logic: emit_own sends none here */
    }
    return NULL;
}

/* Conversions, positions (concat, index, identity), parts and constants. */
static gcc_jit_rvalue *emit_data(emitter *e, const kir_inst *in, pe_dtype ct, gcc_jit_rvalue **v)
{
    pe_op op = (pe_op)in->op;
    pe_dtype rt = (pe_dtype)in->dtype;
    gcc_jit_type *T = type_of(e, ct);
    switch (op) {
    case PE_OP_cast: {
        pe_dtype from = (pe_dtype)e->k->body[in->a[0]].dtype;
        if (rt == PE_I32 && is_float(from)) { /* truncate, saturate, NaN -> 0 (as the reference) */
            gcc_jit_rvalue *d = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, v[0], e->t_double), e->t_double);
            gcc_jit_rvalue *hi = num(e, PE_F64, 2147483647.0), *lo = num(e, PE_F64, -2147483648.0);
            gcc_jit_rvalue *c = choose(e, cmp(e, GCC_JIT_COMPARISON_GE, d, hi), hi, d, e->t_double);
            c = choose(e, cmp(e, GCC_JIT_COMPARISON_LE, c, lo), lo, c, e->t_double);
            c = choose(e, cmp(e, GCC_JIT_COMPARISON_NE, d, d), num(e, PE_F64, 0.0), c, e->t_double);
            return gcc_jit_context_new_cast(e->ctx, NULL, c, e->t_of[PE_I32]);
        }
        return cast(e, v[0], from, rt);
    }
    case PE_OP_concat: /* the first part below its extent along the axis, else the second */
        if (e->seg_static && in->a[2] == e->k->rank - 1) return e->seg_lo < in->imm ? v[0] : v[1]; /* one part here */
        return choose(e, cmp(e, GCC_JIT_COMPARISON_LT, coordinate_long(e, in->a[2]), lng(e, in->imm)), v[0], v[1], T);
    case PE_OP_index: return cast(e, coordinate(e, in->a[0]), PE_I32, rt);
    case PE_OP_identity: /* row == column */
        return cast(e, bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_EQ, coordinate(e, 0), coordinate(e, 1))), PE_BOOL, rt);
    case PE_OP_random_uniform: case PE_OP_random_normal: /* emit_random, above */
    case PE_OP_conj: case PE_OP_real: return v[0]; /* of a real operand (complex ones: the interpreter) */
    case PE_OP_imag: return gcc_jit_context_zero(e->ctx, T);
    case PE_OP_constant: { /* the pair lowering's immediate: the double whose bits are imm */
        double value;
        memcpy(&value, &in->imm, sizeof value);
        return gcc_jit_context_new_rvalue_from_double(e->ctx, type_of(e, rt), value);
    }
    default: break; /* emit_own sends none of the others here */
    }
    return NULL;
}

/* The ops of class OWN (irformat/ops_codegen.def), by kind. */
static gcc_jit_rvalue *emit_own(emitter *e, const kir_inst *in, pe_dtype ct, gcc_jit_rvalue **v)
{
    pe_op op = (pe_op)in->op;
    switch (op) {
#include "../../jit/kir/not_own_cases.h"
        break; /* emitted by class (emit_op), or refused (pe_gccjit_compile: pe_kernel_generatable) */
    case PE_OP_neg: case PE_OP_div: case PE_OP_mod: case PE_OP_abs: case PE_OP_sign: case PE_OP_min: case PE_OP_max:
        return emit_arith(e, op, ct, v);
    case PE_OP_rcp: case PE_OP_rsqrt: case PE_OP_cbrt: return emit_math(e, in, ct, v);
    case PE_OP_asec: case PE_OP_acsc: return emit_asec_acsc(e, op, ct, v);
    case PE_OP_cdf_norm: return emit_cdf_norm(e, in, ct, v);
    case PE_OP_isnan: case PE_OP_isinf: case PE_OP_isfinite: case PE_OP_and: case PE_OP_or: case PE_OP_nand:
    case PE_OP_nor: case PE_OP_xor: case PE_OP_not: case PE_OP_cond:
        return emit_logic(e, in, ct, v);
    case PE_OP_cast: case PE_OP_concat: case PE_OP_index: case PE_OP_identity: case PE_OP_random_uniform:
    case PE_OP_random_normal: case PE_OP_conj: case PE_OP_real: case PE_OP_imag: case PE_OP_constant:
        return emit_data(e, in, ct, v);
    }
    return NULL;
}

/* The BINOP and CMP operators (the emission column) as libgccjit's. */
static const enum gcc_jit_binary_op binary_op[PE_COP__COUNT] = {
    [PE_COP_PLUS] = GCC_JIT_BINARY_OP_PLUS, [PE_COP_MINUS] = GCC_JIT_BINARY_OP_MINUS, [PE_COP_MULT] = GCC_JIT_BINARY_OP_MULT};
static const enum gcc_jit_comparison comparison[PE_COP__COUNT] = {
    [PE_COP_LT] = GCC_JIT_COMPARISON_LT, [PE_COP_LE] = GCC_JIT_COMPARISON_LE, [PE_COP_GT] = GCC_JIT_COMPARISON_GT,
    [PE_COP_GE] = GCC_JIT_COMPARISON_GE, [PE_COP_EQ] = GCC_JIT_COMPARISON_EQ, [PE_COP_NE] = GCC_JIT_COMPARISON_NE};

/* One element-wise op: its operands converted, then as its emission class
 * says. */
static gcc_jit_rvalue *emit_op(emitter *e, const kir_inst *in)
{
    if (kir_is_random(in->op)) return emit_random(e, in); /* raw key words, its own types */
    pe_op op = (pe_op)in->op;
    pe_dtype ct = (pe_dtype)in->ctype;
    /* erf, erfc, cdf_norm: the primitives are accurate in f32 */
    if (ct == PE_F32 && pe_f32_in_double(op) && !(e->use_prims && prim_f32(e->prims, op))) ct = PE_F64;
    gcc_jit_rvalue *v[3];
    op_operands(e, in, ct, v);
    pe_c_operator cop = pe_c_operator_of(op);
    switch (pe_emit_class_of(op)) {
    case PE_EMIT_LIBM: return math(e, pe_libm_name(op), ct, in->n, v);
    case PE_EMIT_BINOP:
        return is_float(ct) ? bin(e, binary_op[cop], ct, v[0], v[1]) : wrap(e, binary_op[cop], v[0], v[1]);
    case PE_EMIT_CMP: return bool_to_u8(e, cmp(e, comparison[cop], v[0], v[1]));
    case PE_EMIT_OWN: return emit_own(e, in, ct, v);
    case PE_EMIT_NONE: break; /* pe_gccjit_compile refuses such kernels (pe_kernel_generatable) */
    }
    return NULL;
}

/* The test-only fault (PE_TEST_PERTURB_OP=<op name>, tests/test_check.c): the
 * op's results made wrong by a part in 128 (floats) or by one (i32, bool), so
 * that PE_CHECK has a kernel to catch.  Never set outside tests; kernels made
 * with it are filed on disk under a tag of their own (provision.c; the CUDA
 * generator's, cuda_emit_ops.c's perturb, under target.c's cuda_disk_tag). */
static gcc_jit_rvalue *perturbed(emitter *e, gcc_jit_rvalue *r, pe_dtype t)
{
    if (!pe_dtype_valid(t)) return r;
    if (is_float(t)) return bin(e, GCC_JIT_BINARY_OP_MULT, t, r, num(e, t, 1.0 + 1.0 / 128));
    gcc_jit_type *T = type_of(e, t);
    if (t == PE_BOOL) return gcc_jit_context_new_comparison(e->ctx, NULL, GCC_JIT_COMPARISON_EQ, r, gcc_jit_context_zero(e->ctx, T));
    return bin(e, GCC_JIT_BINARY_OP_PLUS, t, r, gcc_jit_context_one(e->ctx, T));
}

/* A gather's element: the array at the index when it lies in [0, extent),
 * else element 0 (never outside the array) with e->bad set, so that the
 * executor has the interpreter report the index. */
static gcc_jit_rvalue *emit_gather(emitter *e, const kir_inst *in)
{
    const kir_param *array = &e->k->params[in->a[0]];
    gcc_jit_type *ulong = gcc_jit_context_get_type(e->ctx, GCC_JIT_TYPE_UNSIGNED_LONG);
    gcc_jit_rvalue *j = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, e->val[in->a[1]], e->t_long), e->t_long);
    gcc_jit_rvalue *inside = cmp(e, GCC_JIT_COMPARISON_LT, gcc_jit_context_new_cast(e->ctx, NULL, j, ulong),
                                 gcc_jit_context_new_rvalue_from_long(e->ctx, ulong, array->extent));
    gcc_jit_rvalue *outside = gcc_jit_context_new_unary_op(e->ctx, NULL, GCC_JIT_UNARY_OP_LOGICAL_NEGATE, e->t_bool, inside);
    gcc_jit_block_add_assignment_op(e->cur, NULL, e->bad, GCC_JIT_BINARY_OP_BITWISE_OR,
                                    gcc_jit_context_new_cast(e->ctx, NULL, outside, e->t_u32));
    gcc_jit_rvalue *at = lselect(e, inside, j, lng(e, 0));
    return gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[in->a[0]], at));
}

/* --------------------------------------------------------------- body */

/* The kernel body for element e->index, accumulating into e->acc. */
void pe_gj_emit_body(emitter *e, const kir_kernel *k)
{
    for (int v = 0; v < k->n_body; v++) {
        const kir_inst *in = &k->body[v];
        if (e->emits && !e->emits[v]) continue; /* another pass's, or a row's result already */
        if (e->emits && in->kind == KIR_REDUCE) e->acc = e->acc_of[v], e->comp = e->comp_of[v], e->at = e->at_of[v];
        if (e->emits && e->reload[v]) { /* kept by an earlier pass over the row */
            e->val[v] = to_local(e, gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(e->ctx, NULL, gcc_jit_lvalue_as_rvalue(e->row_copy[v]), e->c_last)),
                                 type_of(e, (pe_dtype)in->dtype));
            continue;
        }
        if (in->kind == KIR_LOAD) {
            const kir_param *q = &k->params[in->a[0]];
            gcc_jit_rvalue *x = q->kind == KIR_IN_SCALAR || q->kind == KIR_IN_LITERAL
                                    ? e->ptr[in->a[0]]
                                    : gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(
                                          e->ctx, NULL, e->ptr[in->a[0]], part_index(e, q, element_index(e, in->a[0]), in)));
            e->val[v] = to_local(e, x, type_of(e, (pe_dtype)in->dtype));
        } else if (in->kind == KIR_REDUCE) {
            pe_gj_emit_reduce(e, in);
        } else if (in->kind == KIR_GATHER) {
            e->val[v] = to_local(e, emit_gather(e, in), type_of(e, (pe_dtype)in->dtype));
        } else if (in->kind == KIR_STORE) {
            gcc_jit_lvalue *dst = gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[in->a[0]],
                                                                   part_index(e, &k->params[in->a[0]], e->store_index ? e->store_index : e->index, in));
            gcc_jit_block_add_assignment(e->cur, NULL, dst, e->val[in->a[1]]);
        } else {
            gcc_jit_type *T = type_of(e, (pe_dtype)in->dtype);
            gcc_jit_rvalue *r = emit_op(e, in);
            if (gcc_jit_rvalue_get_type(r) != T) r = gcc_jit_context_new_cast(e->ctx, NULL, r, T);
            if (__builtin_expect(in->op == e->perturbed_op, 0)) r = perturbed(e, r, (pe_dtype)in->dtype);
            e->val[v] = to_local(e, r, T);
        }
        if (e->emits && e->spill_here[v])
            gcc_jit_block_add_assignment(e->cur, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, gcc_jit_lvalue_as_rvalue(e->row_copy[v]), e->c_last),
                                         e->val[v]);
    }
}

/* Whether every op of k becomes inline code (no scalar libm call) once the
 * primitives replace exp and log.  Only then do the primitives pay: in a loop
 * that stays scalar, glibc's table-driven routines are faster than them. */
bool pe_gj_vectorisable(pe_prims *prims, const kir_kernel *k)
{
    for (int v = 0; v < k->n_body; v++) {
        const kir_inst *in = &k->body[v];
        if (in->kind != KIR_OP) continue;
        pe_op op = (pe_op)in->op;
        if (op == PE_OP_constant) continue; /* an immediate */
        if (in->ctype == PE_F32 && prim_f32(prims, op)) continue;
        if (pe_f32_in_double(op) && in->ctype == PE_F32) return false;
        if (!pe_cpu_op_of(op)->vectorises) return false;
    }
    return true;
}
