/* cpu_gccjit.c — the CPU code generator: kernel IR to machine code through
 * libgccjit.  Each kernel becomes
 *     void k_<hash>(long begin, long end, void **args)
 * with one loop over [begin, end); SSA values become locals (registers after
 * optimisation), selects become small if/else diamonds that gcc if-converts.
 * All kernels of a program sequence are compiled in one context, because a
 * compilation costs ~40-55 ms whatever its size (gcc runs as/ld) and
 * libgccjit serialises compilations.  Options: -O3, the ISA level detected at
 * start-up (-march=native is rejected by libgccjit), -fno-math-errno and
 * -fno-trapping-math as command-line options (as a driver option
 * -ffast-math would link crtfastmath.o and flush subnormals process-wide).
 * Math functions are gcc builtins: sqrt, fabs, floor, fma... inline.  f32
 * transcendentals (exp, log, sin, cos, erf, cdf_norm, pow, ...) come from the
 * primitive library (cpu_prims.c), inline and branch-free, whenever every op
 * of the kernel can then vectorise; otherwise, and for f64, libm is called
 * (its scalar routines beat the primitives in a loop that stays scalar). */
#include <float.h>
#include <libgccjit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../jit/kir/codegen.h"
#include "cpu_gccjit.h"
#include "cpu_prims.h"
#include "gccjit_build.h"
#include "device.h"
#include "../../irformat/fnv.h"
#include "../../irformat/philox.h"

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

typedef struct {
    gcc_jit_context *ctx;
    gcc_jit_function *fn;
    gcc_jit_block *cur;
    gcc_jit_type *t_void, *t_bool, *t_long, *t_u32, *t_double, *t_voidp;
    gcc_jit_type *t_of[PE_DTYPE__COUNT]; /* by pe_dtype (irformat/dtypes.def) */
    gcc_jit_rvalue *ptr[KIR_MAX_PARAMS]; /* typed buffer pointers, or scalar values */
    gcc_jit_rvalue *val[KIR_MAX_BODY];
    const kir_kernel *k;
    gcc_jit_lvalue *i;
    gcc_jit_rvalue *index; /* the element the body being emitted works on (flat, in the iteration shape) */
    /* Row mode (kernels with a shape): coordinates of the axes before the
     * last one, hoisted per row, the coordinate along the last axis, and
     * each STRIDED parameter's element at c_last = 0 */
    bool rows;
    gcc_jit_rvalue *coord[PE_MAX_RANK], *c_last;
    gcc_jit_rvalue *base[KIR_MAX_PARAMS];
    gcc_jit_lvalue *bad;   /* kernels that gather: nonzero once an index was out of range */
    gcc_jit_lvalue *acc;   /* reduction kernels: the accumulator of the lane being emitted (u32 where i32 wraps) */
    gcc_jit_lvalue *comp;  /* its compensation (f64 sums, Neumaier), a keyed float extreme's NaN flag, or NULL */
    gcc_jit_lvalue *at;    /* argmax, argmin: the index of the lane's extreme */
    gcc_jit_rvalue *pos;   /* argmax, argmin: the element's index along the reduction */
    /* Multi-pass reductions (var, stddev, f64 norm2): the pass being emitted
     * and what the passes before it found */
    int pass;
    gcc_jit_rvalue *mean, *shift, *divisor;
    /* Row passes (emit_row_passes): which instructions the pass emits, and
     * each reduction's accumulators in the lane being emitted */
    const bool *emits;
    gcc_jit_lvalue *acc_of[KIR_MAX_BODY], *comp_of[KIR_MAX_BODY], *at_of[KIR_MAX_BODY];
    /* a value kept for later passes in a row-long local array: stored in
     * the pass computing it (spill_here), loaded in a later one (reload) */
    gcc_jit_lvalue *row_copy[KIR_MAX_BODY];
    /* Streaming stores (emit_streaming): where a store goes instead of the
     * output at index (a tile), or NULL */
    gcc_jit_rvalue *store_index;
    int vector_bytes;      /* the ISA's widest vector: 64 (x86-64-v4), 32 (v3) or 16 */
    const bool *spill_here, *reload;
    pe_prims *prims;       /* vectorisable routines of this context */
    bool use_prims;        /* the kernel being emitted can vectorise (see vectorisable) */
    int n_locals;
    int perturbed_op;      /* PE_TEST_PERTURB_OP's op, else -1 */
} emitter;

/* --------------------------------------------------------- what we emit */

static bool is_float(pe_dtype t) { return pe_dtype_is_float(t); }

bool pe_gccjit_reduction_fusible(const kir_kernel *body)
{
    for (int i = 0; i < body->n_body; i++)
        if (body->body[i].kind == KIR_OP && body->body[i].op == PE_OP_pow && body->body[i].ctype == PE_F32) return false;
    return true;
}

/* Reductions along an axis: every reduction of the catalog but dot (one
 * operand along an axis), in the types the reduction column's cpu_emits
 * takes (as the full reductions). */
static bool axis_reduction_emittable(pe_op op, pe_dtype ctype, pe_dtype dtype)
{
    return op != PE_OP_dot && pe_reduction_of(op)->acc != PE_ACC_NONE && pe_cpu_can_emit(op, ctype, dtype, ctype);
}

/* Reductions along the last axis that leave their kernel open for members
 * reading their results broadcast back: those emit_row_passes accumulates
 * in one pass over a row (not var, stddev, f64 norm2). */
static int passes_of(const kir_inst *reduce);
static bool row_reduction_emittable(pe_op op, pe_dtype ctype, pe_dtype dtype)
{
    kir_inst reduce = {.kind = KIR_REDUCE, .op = (uint8_t)op, .dtype = (uint8_t)dtype, .ctype = (uint8_t)ctype};
    return axis_reduction_emittable(op, ctype, dtype) && passes_of(&reduce) == 1;
}

/* Outputs of at least the last-level cache's size stream past it (an
 * x86-64 store form): PE_STREAM_BYTES overrides (0: never), for tests. */
static int64_t stream_min_bytes(void)
{
#if defined(__x86_64__)
    static int64_t known = -1; /* the program generator may run on several threads: found once, kept atomically */
    int64_t bytes = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (bytes < 0) {
        const char *env = getenv("PE_STREAM_BYTES");
        int64_t llc = pe_cpu_last_level_cache_bytes();
        bytes = env && *env ? atoll(env) : llc > 0 ? llc : (int64_t)32 << 20;
        __atomic_store_n(&known, bytes, __ATOMIC_RELAXED);
    }
    return bytes;
#else
    return 0;
#endif
}

const pe_fusion_rules pe_gccjit_fusion_rules = {1, pe_cpu_can_emit, pe_gccjit_reduction_fusible, true, true,
                                                axis_reduction_emittable, row_reduction_emittable, stream_min_bytes};

/* ------------------------------------------------------------- helpers */

static gcc_jit_type *type_of(emitter *e, pe_dtype t) { return e->t_of[t]; }

static pe_jit_cursor cursor(emitter *e) { return (pe_jit_cursor){e->ctx, e->fn, e->cur, &e->n_locals}; }

static gcc_jit_rvalue *to_local(emitter *e, gcc_jit_rvalue *v, gcc_jit_type *t) { return pe_jit_local(cursor(e), v, t); }

static gcc_jit_rvalue *cast(emitter *e, gcc_jit_rvalue *v, pe_dtype from, pe_dtype to)
{
    if (from == to) return v;
    if (to == PE_BOOL) { /* nonzero is true (NaN too) */
        gcc_jit_rvalue *zero = gcc_jit_context_zero(e->ctx, type_of(e, from));
        gcc_jit_rvalue *c = gcc_jit_context_new_comparison(e->ctx, NULL, GCC_JIT_COMPARISON_NE, v, zero);
        return gcc_jit_context_new_cast(e->ctx, NULL, c, e->t_of[PE_BOOL]);
    }
    return gcc_jit_context_new_cast(e->ctx, NULL, v, type_of(e, to));
}

static gcc_jit_rvalue *truth(emitter *e, gcc_jit_rvalue *v, pe_dtype t)
{
    return gcc_jit_context_new_comparison(e->ctx, NULL, GCC_JIT_COMPARISON_NE, v,
                                          gcc_jit_context_zero(e->ctx, type_of(e, t)));
}

static gcc_jit_rvalue *bool_to_u8(emitter *e, gcc_jit_rvalue *c)
{
    return gcc_jit_context_new_cast(e->ctx, NULL, c, e->t_of[PE_BOOL]);
}

/* c ? a : b without a branch (see pe_jit_select). */
static gcc_jit_rvalue *choose(emitter *e, gcc_jit_rvalue *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b, gcc_jit_type *t)
{
    bool wide = t == e->t_double, is_float = wide || t == e->t_of[PE_F32];
    gcc_jit_type *U = wide ? gcc_jit_context_get_type(e->ctx, GCC_JIT_TYPE_UNSIGNED_LONG_LONG) : e->t_u32;
    return pe_jit_select(cursor(e), c, a, b, t, U, is_float);
}

static gcc_jit_rvalue *math(emitter *e, const char *name, pe_dtype t, int n, gcc_jit_rvalue **args)
{
    gcc_jit_function *prim = e->use_prims ? pe_prims_get(e->prims, name, t == PE_F32) : NULL;
    if (prim) return gcc_jit_context_new_call(e->ctx, NULL, prim, n, args);
    char builtin[48];
    snprintf(builtin, sizeof builtin, "__builtin_%s%s", name, t == PE_F32 ? "f" : "");
    gcc_jit_function *f = gcc_jit_context_get_builtin_function(e->ctx, builtin);
    return gcc_jit_context_new_call(e->ctx, NULL, f, n, args);
}

static gcc_jit_rvalue *math1(emitter *e, const char *name, pe_dtype t, gcc_jit_rvalue *a)
{
    return math(e, name, t, 1, &a);
}

static gcc_jit_rvalue *num(emitter *e, pe_dtype t, double v)
{
    return gcc_jit_context_new_rvalue_from_double(e->ctx, type_of(e, t), v);
}

static gcc_jit_rvalue *bin(emitter *e, enum gcc_jit_binary_op op, pe_dtype t, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, op, type_of(e, t), a, b);
}

static gcc_jit_rvalue *cmp(emitter *e, enum gcc_jit_comparison op, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_comparison(e->ctx, NULL, op, a, b);
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

/* i32 arithmetic wraps: compute in unsigned. */
static gcc_jit_rvalue *wrap(emitter *e, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    gcc_jit_rvalue *ua = gcc_jit_context_new_cast(e->ctx, NULL, a, e->t_u32);
    gcc_jit_rvalue *ub = gcc_jit_context_new_cast(e->ctx, NULL, b, e->t_u32);
    gcc_jit_rvalue *r = gcc_jit_context_new_binary_op(e->ctx, NULL, op, e->t_u32, ua, ub);
    return gcc_jit_context_new_cast(e->ctx, NULL, r, e->t_of[PE_I32]);
}

/* ------------------------------------------------------------------ ops */

static gcc_jit_rvalue *lng(emitter *e, int64_t v) { return gcc_jit_context_new_rvalue_from_long(e->ctx, e->t_long, v); }

static gcc_jit_rvalue *lbin(emitter *e, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, op, e->t_long, a, b);
}

static gcc_jit_rvalue *lselect(emitter *e, gcc_jit_rvalue *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return pe_jit_select(cursor(e), c, a, b, e->t_long, gcc_jit_context_get_type(e->ctx, GCC_JIT_TYPE_UNSIGNED_LONG_LONG), false);
}

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
    if (p->hi[d] > 0) { /* clamped: never outside the array, whatever the other operand of a select */
        x = lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, x, lng(e, p->lo[d])), lng(e, p->lo[d]), x);
        x = lselect(e, cmp(e, GCC_JIT_COMPARISON_GT, x, lng(e, p->hi[d] - 1)), lng(e, p->hi[d] - 1), x);
    }
    if (p->wrap[d] > 0) x = lbin(e, GCC_JIT_BINARY_OP_MODULO, lbin(e, GCC_JIT_BINARY_OP_PLUS, x, lng(e, p->shift[d])), lng(e, p->wrap[d]));
    return p->stride[d] == 1 ? x : lbin(e, GCC_JIT_BINARY_OP_MULT, x, lng(e, p->stride[d]));
}

/* off plus the terms of a STRIDED parameter's axes [from, to) at the
 * hoisted coordinates, as a local. */
static gcc_jit_rvalue *axes_base(emitter *e, const kir_param *p, gcc_jit_rvalue *off, int from, int to)
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
    return axes_base(e, p, lng(e, p->offset), 0, e->k->rank - 1);
}

/* The hoisted row bases of every STRIDED parameter. */
static void row_bases(emitter *e)
{
    for (int p = 0; p < e->k->n_params; p++)
        if (e->k->params[p].kind == KIR_IN_STRIDED) e->base[p] = row_base(e, &e->k->params[p]);
}

/* The primitive for f32 op (cpu_prims.c) when the library has one, or NULL. */
static gcc_jit_function *prim_f32(pe_prims *prims, pe_op op)
{
    const char *name = pe_codegen_of(op)->f32_prim;
    return name ? pe_prims_get(prims, name, true) : NULL;
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

static gcc_jit_rvalue *emit_op(emitter *e, const kir_inst *in)
{
    if (kir_is_random(in->op)) return emit_random(e, in); /* raw key words, its own types */
    pe_op op = (pe_op)in->op;
    pe_dtype ct = (pe_dtype)in->ctype, rt = (pe_dtype)in->dtype;
    /* erf, erfc, cdf_norm: the primitives are accurate in f32 */
    if (ct == PE_F32 && pe_f32_in_double(op) && !(e->use_prims && prim_f32(e->prims, op))) ct = PE_F64;
    gcc_jit_type *T = type_of(e, ct);
    gcc_jit_rvalue *v[3];
    for (int j = 0; j < in->n; j++) {
        pe_dtype from = (pe_dtype)e->k->body[in->a[j]].dtype;
        bool raw = (op == PE_OP_cond && j == 0) || op == PE_OP_cast;
        gcc_jit_rvalue *x = e->val[in->a[j]];
        /* computed in double, an operand is rounded to the promoted f32 first */
        if (!raw && ct != in->ctype && from != (pe_dtype)in->ctype) x = cast(e, x, from, in->ctype), from = in->ctype;
        v[j] = raw ? x : cast(e, x, from, ct);
    }
    bool fl = is_float(ct);
    switch (op) {
    case PE_OP_add: return fl ? bin(e, GCC_JIT_BINARY_OP_PLUS, ct, v[0], v[1]) : wrap(e, GCC_JIT_BINARY_OP_PLUS, v[0], v[1]);
    case PE_OP_sub: return fl ? bin(e, GCC_JIT_BINARY_OP_MINUS, ct, v[0], v[1]) : wrap(e, GCC_JIT_BINARY_OP_MINUS, v[0], v[1]);
    case PE_OP_mul: return fl ? bin(e, GCC_JIT_BINARY_OP_MULT, ct, v[0], v[1]) : wrap(e, GCC_JIT_BINARY_OP_MULT, v[0], v[1]);
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
    case PE_OP_fma: case PE_OP_pow: case PE_OP_atan2: return math(e, pe_libm_name(op), ct, in->n, v);
    case PE_OP_rcp: return bin(e, GCC_JIT_BINARY_OP_DIVIDE, ct, num(e, ct, 1), v[0]);
    case PE_OP_rsqrt: return bin(e, GCC_JIT_BINARY_OP_DIVIDE, ct, num(e, ct, 1), math1(e, "sqrt", ct, v[0]));
    case PE_OP_exp: case PE_OP_exp2: case PE_OP_exp10: case PE_OP_expm1: case PE_OP_log: case PE_OP_log2:
    case PE_OP_log10: case PE_OP_log1p: case PE_OP_sqrt: case PE_OP_sin: case PE_OP_cos:
    case PE_OP_tan: case PE_OP_asin: case PE_OP_acos: case PE_OP_atan: case PE_OP_sinh: case PE_OP_cosh:
    case PE_OP_tanh: case PE_OP_asinh: case PE_OP_acosh: case PE_OP_atanh: case PE_OP_erf: case PE_OP_erfc:
    case PE_OP_floor: case PE_OP_ceil: case PE_OP_trunc: case PE_OP_round:
        return math1(e, pe_libm_name(op), ct, v[0]);
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
    case PE_OP_asec: case PE_OP_acsc: { /* in double (f32_in_double), the forms of codegen.h */
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
    case PE_OP_cdf_norm: { /* 0.5 * erfc(-x / sqrt(2)).  For f64 in long double: the tail's slope
                              amplifies any rounding of the argument (as the reference does); for f32
                              (ct is then f64) double is already far more than enough */
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
    case PE_OP_isnan: return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_NE, v[0], v[0]));
    case PE_OP_isinf:
        return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_EQ, math1(e, "fabs", ct, v[0]), num(e, ct, __builtin_inf())));
    case PE_OP_isfinite:
        return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_LT, math1(e, "fabs", ct, v[0]), num(e, ct, __builtin_inf())));
    case PE_OP_lt: return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_LT, v[0], v[1]));
    case PE_OP_le: return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_LE, v[0], v[1]));
    case PE_OP_gt: return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_GT, v[0], v[1]));
    case PE_OP_ge: return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_GE, v[0], v[1]));
    case PE_OP_eq: return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_EQ, v[0], v[1]));
    case PE_OP_ne: return bool_to_u8(e, cmp(e, GCC_JIT_COMPARISON_NE, v[0], v[1]));
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
    case PE_OP_root: /* emitted by neither generator (ops_codegen.def) */
    PE_CASES_INTERPRETED_ONLY
    PE_CASES_COMPOSED       /* lowered into primitives (kir_lower.c) */
    PE_CASES_NOT_ELEMENTWISE
        break;              /* pe_gccjit_compile refuses such kernels (pe_kernel_generatable) */
    }
    return NULL;
}

/* --------------------------------------------------------------- kernel */

static gcc_jit_rvalue *element_index(emitter *e, int param)
{
    const kir_param *p = &e->k->params[param];
    if (p->kind != KIR_IN_STRIDED) return e->index;
    int last = e->k->rank - 1;
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

static gcc_jit_rvalue *and_(emitter *e, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, e->t_bool, a, b);
}

static gcc_jit_rvalue *or_(emitter *e, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, e->t_bool, a, b);
}

static gcc_jit_rvalue *not_(emitter *e, gcc_jit_rvalue *a)
{
    return gcc_jit_context_new_unary_op(e->ctx, NULL, GCC_JIT_UNARY_OP_LOGICAL_NEGATE, e->t_bool, a);
}

static gcc_jit_rvalue *is_nan(emitter *e, gcc_jit_rvalue *x) { return cmp(e, GCC_JIT_COMPARISON_NE, x, x); }

/* f64 norm2 in two passes, as the reference: the squares of values divided
 * by the largest magnitude neither overflow nor underflow. */
static bool scaled_norm2(const kir_inst *reduce)
{
    return reduce->op == PE_OP_norm2 && reduce->ctype == PE_F64;
}

/* The passes over its elements a reduction takes: var and stddev three (the
 * mean, the largest deviation from it, the scaled squared deviations), f64
 * norm2 two (the largest magnitude, the scaled squares), the others one. */
static int passes_of(const kir_inst *reduce)
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

/* The accumulation of one element (for wrapping i32: in u32; extremes on
 * keys). */
static void emit_reduce(emitter *e, const kir_inst *in)
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

/* f64 sums are compensated: double lanes alone would lose what the
 * reference keeps.  (f32 operands summed in double need no compensation.) */
static bool compensated(const kir_inst *reduce)
{
    return reduce->ctype == PE_F64 && pe_reduction_of((pe_op)reduce->op)->acc == PE_ACC_SUM;
}

static gcc_jit_rvalue *bin_long(emitter *e, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, long b)
{
    return gcc_jit_context_new_binary_op(e->ctx, NULL, op, e->t_long, a, gcc_jit_context_new_rvalue_from_long(e->ctx, e->t_long, b));
}

static bool is_arg_extreme(const kir_inst *reduce)
{
    pe_acc_kind kind = (pe_acc_kind)pe_reduction_of((pe_op)reduce->op)->acc;
    return kind == PE_ACC_ARGMAX || kind == PE_ACC_ARGMIN;
}

/* The type of a reduction's accumulator: u32 where i32 wraps, an extreme's
 * key, else double. */
static gcc_jit_type *acc_type(emitter *e, const kir_inst *reduce)
{
    key_kind kind = key_of(e, reduce);
    if (kind != KEY_NONE) return key_type(e, kind);
    return pe_reduction_wraps((pe_op)reduce->op, (pe_dtype)reduce->ctype) ? e->t_u32 : e->t_double;
}

static gcc_jit_rvalue *acc_identity(emitter *e, const kir_inst *reduce)
{
    const pe_reduction *r = pe_reduction_of((pe_op)reduce->op);
    key_kind kind = key_of(e, reduce);
    if (kind != KEY_NONE) return key_identity(e, reduce, kind);
    if (pe_reduction_wraps((pe_op)reduce->op, (pe_dtype)reduce->ctype))
        return gcc_jit_context_new_rvalue_from_int(e->ctx, e->t_u32, r->acc == PE_ACC_PROD);
    return num(e, PE_F64, r->identity);
}

/* Two lanes' accumulators combined: a sum or product (wrapping in u32 for
 * i32), or the extreme with NaN sticking. */
static gcc_jit_rvalue *combine_lanes(emitter *e, const kir_inst *reduce, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    pe_op op = (pe_op)reduce->op;
    pe_acc_kind kind = (pe_acc_kind)pe_reduction_of(op)->acc;
    gcc_jit_type *T = acc_type(e, reduce);
    enum gcc_jit_binary_op how = kind == PE_ACC_PROD ? GCC_JIT_BINARY_OP_MULT : GCC_JIT_BINARY_OP_PLUS;
    if (!pe_reduction_is_extreme(op)) return to_local(e, gcc_jit_context_new_binary_op(e->ctx, NULL, how, T, a, b), T);
    gcc_jit_rvalue *better = cmp(e, kind == PE_ACC_MIN ? GCC_JIT_COMPARISON_LT : GCC_JIT_COMPARISON_GT, b, a);
    gcc_jit_rvalue *take = and_(e, not_(e, is_nan(e, a)), or_(e, is_nan(e, b), better));
    return choose(e, take, b, a, e->t_double);
}

/* The test-only fault (PE_TEST_PERTURB_OP=<op name>, tests/test_check.c): the
 * op's results made wrong by a part in 128 (floats) or by one (i32, bool), so
 * that PE_CHECK has a kernel to catch.  Never set outside tests; kernels made
 * with it are filed on disk under a tag of their own (provision.c; the CUDA
 * generator's, cuda_emit.c's perturb, under target.c's cuda_disk_tag). */
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

/* Element `at` of parameter q as the access `in` reads or writes it: a
 * complex array is an array of its parts (kir.h), re at 2 at, im at 2 at + 1. */
static gcc_jit_rvalue *part_index(emitter *e, const kir_param *q, gcc_jit_rvalue *at, const kir_inst *in)
{
    if (!pe_dtype_is_complex((pe_dtype)q->dtype)) return at;
    return lbin(e, GCC_JIT_BINARY_OP_PLUS, lbin(e, GCC_JIT_BINARY_OP_MULT, lng(e, 2), at), lng(e, in->imm));
}

/* The kernel body for element e->index, accumulating into e->acc. */
static void emit_body(emitter *e, const kir_kernel *k)
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
            emit_reduce(e, in);
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
static bool vectorisable(pe_prims *prims, const kir_kernel *k)
{
    for (int v = 0; v < k->n_body; v++) {
        const kir_inst *in = &k->body[v];
        if (in->kind != KIR_OP) continue;
        pe_op op = (pe_op)in->op;
        if (op == PE_OP_constant) continue; /* an immediate */
        if (in->ctype == PE_F32 && prim_f32(prims, op)) continue;
        if (pe_f32_in_double(op) && in->ctype == PE_F32) return false;
        if (!pe_codegen_of(op)->cpu_vectorises) return false;
    }
    return true;
}

/* The accumulators of n_lanes lanes combined pairwise in a fixed
 * order into (hi, lo): lo the compensation of f64 sums, argmax's and
 * argmin's index (a long), else 0; a keyed extreme's lanes (their keys and
 * NaN flags) into its value. */
static void combine_all_lanes(emitter *e, const kir_inst *reduce, int n_lanes, gcc_jit_lvalue **acc, gcc_jit_lvalue **comp,
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
static gcc_jit_rvalue *finish_axis_result(emitter *e, const kir_inst *reduce, gcc_jit_rvalue *hi, gcc_jit_rvalue *lo, int64_t len)
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

/* A new block, made current. */
static gcc_jit_block *block(emitter *e, const char *name)
{
    return gcc_jit_function_new_block(e->fn, name);
}

/* A new local of type t set to init in the current block (a loop's counter, an accumulator). */
static gcc_jit_lvalue *init_local(emitter *e, gcc_jit_type *t, const char *name, gcc_jit_rvalue *init)
{
    char unique[32];
    snprintf(unique, sizeof unique, "%s%d", name, e->n_locals++);
    gcc_jit_lvalue *l = gcc_jit_function_new_local(e->fn, NULL, t, unique);
    gcc_jit_block_add_assignment(e->cur, NULL, l, init);
    return l;
}

static gcc_jit_lvalue *long_local(emitter *e, const char *name, gcc_jit_rvalue *init) { return init_local(e, e->t_long, name, init); }

static gcc_jit_rvalue *rv(gcc_jit_lvalue *l) { return gcc_jit_lvalue_as_rvalue(l); }

/* The coordinates of the axes before the last one from `row`, the row's
 * number over those axes (skipping `skip`, a reduced axis, or -1). */
static void row_coordinates(emitter *e, gcc_jit_rvalue *row, int skip)
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

/* The linear loop over flat elements [from, to) of the row whose element 0
 * is flat `start` (its coordinates and views' row elements hoisted), from
 * the current block on to `next`. */
static void emit_row_span(emitter *e, const kir_kernel *k, gcc_jit_rvalue *from, gcc_jit_rvalue *to, gcc_jit_rvalue *start,
                          gcc_jit_block *next)
{
    gcc_jit_block *cond = block(e, "inner_cond"), *body = block(e, "inner_body");
    gcc_jit_lvalue *j = long_local(e, "j", from);
    gcc_jit_block_end_with_jump(e->cur, NULL, cond);
    gcc_jit_block_end_with_conditional(cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(j), to), body, next);
    e->cur = body;
    e->index = rv(j);
    e->c_last = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, rv(j), start), e->t_long);
    emit_body(e, k);
    gcc_jit_block_add_assignment_op(e->cur, NULL, j, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
    gcc_jit_block_end_with_jump(e->cur, NULL, cond);
}

/* An element-wise kernel with a shape, row by row: per row the coordinates
 * and each view's element at its start, then a loop along the last axis in
 * which every index is linear (the vectoriser's case). */
static gcc_jit_block *emit_rows(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    int64_t n_last = k->shape[k->rank - 1];
    gcc_jit_lvalue *i = long_local(e, "i", begin);
    gcc_jit_block *rows_cond = block(e, "rows_cond"), *row_head = block(e, "row_head"), *row_next = block(e, "row_next");
    gcc_jit_block *done = block(e, "done");
    gcc_jit_block_end_with_jump(e->cur, NULL, rows_cond);
    gcc_jit_block_end_with_conditional(rows_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(i), end), row_head, done);
    e->cur = row_head;
    gcc_jit_rvalue *row = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, rv(i), lng(e, n_last)), e->t_long);
    gcc_jit_rvalue *start = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, row, lng(e, n_last)), e->t_long);
    gcc_jit_rvalue *row_end = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, lng(e, n_last)), e->t_long);
    row_end = lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, end, row_end), end, row_end);
    row_coordinates(e, row, -1);
    row_bases(e);
    emit_row_span(e, k, rv(i), row_end, start, row_next);
    gcc_jit_block_add_assignment(row_next, NULL, i, row_end);
    gcc_jit_block_end_with_jump(row_next, NULL, rows_cond);
    return done;
}

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
static bool reads_across_lines(const kir_kernel *k)
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

static gcc_jit_rvalue *lmin(emitter *e, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, a, b), a, b);
}

static gcc_jit_rvalue *lmax(emitter *e, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return lselect(e, cmp(e, GCC_JIT_COMPARISON_GT, a, b), a, b);
}

/* An element-wise kernel that reads across lines (reads_across_lines), in
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
static gcc_jit_block *emit_tiles(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    int last = k->rank - 1;
    int64_t n_last = k->shape[last], n_rows = k->shape[last - 1];
    gcc_jit_lvalue *q = long_local(e, "q", lbin(e, GCC_JIT_BINARY_OP_DIVIDE, begin, lng(e, n_last)));
    gcc_jit_rvalue *q_end = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, lbin(e, GCC_JIT_BINARY_OP_PLUS, end, lng(e, n_last - 1)),
                                             lng(e, n_last)), e->t_long);
    gcc_jit_block *blocks_cond = block(e, "blocks_cond"), *block_head = block(e, "block_head"), *tiles_cond = block(e, "tiles_cond");
    gcc_jit_block *row_cond = block(e, "tile_row_cond"), *row_head = block(e, "tile_row_head"), *row_next = block(e, "tile_row_next");
    gcc_jit_block *tile_next = block(e, "tile_next");
    gcc_jit_block *block_next = block(e, "block_next"), *done = block(e, "done");
    gcc_jit_block_end_with_jump(e->cur, NULL, blocks_cond);
    gcc_jit_block_end_with_conditional(blocks_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(q), q_end), block_head, done);

    e->cur = block_head; /* rows [q, q_block) of one plane, q_block at most the next multiple of TILE */
    row_coordinates(e, rv(q), -1);
    gcc_jit_rvalue *r0 = e->coord[last - 1];
    gcc_jit_rvalue *to_tile = lbin(e, GCC_JIT_BINARY_OP_MINUS, lng(e, TILE), lbin(e, GCC_JIT_BINARY_OP_MODULO, r0, lng(e, TILE)));
    gcc_jit_rvalue *to_plane = lbin(e, GCC_JIT_BINARY_OP_MINUS, lng(e, n_rows), r0);
    gcc_jit_rvalue *q_block = to_local(e, lmin(e, q_end, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(q), lmin(e, to_tile, to_plane))), e->t_long);
    gcc_jit_rvalue *outer[KIR_MAX_PARAMS];
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_IN_STRIDED) outer[p] = axes_base(e, &k->params[p], lng(e, k->params[p].offset), 0, last - 1);
    gcc_jit_lvalue *c0 = long_local(e, "c0", lng(e, 0));
    gcc_jit_block_end_with_jump(e->cur, NULL, tiles_cond);
    e->cur = tiles_cond;
    gcc_jit_lvalue *row = long_local(e, "row", rv(q));
    gcc_jit_rvalue *c1 = to_local(e, lmin(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(c0), lng(e, TILE)), lng(e, n_last)), e->t_long);
    gcc_jit_block_end_with_conditional(e->cur, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(c0), lng(e, n_last)), row_cond, block_next);
    gcc_jit_block_end_with_conditional(row_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(row), q_block), row_head, tile_next);

    e->cur = row_head; /* this row's columns of the tile, clipped to the launch */
    gcc_jit_rvalue *start = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, rv(row), lng(e, n_last)), e->t_long);
    gcc_jit_rvalue *lo = lmax(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, rv(c0)), begin);
    gcc_jit_rvalue *hi = to_local(e, lmin(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, c1), end), e->t_long);
    e->coord[last - 1] = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, r0, lbin(e, GCC_JIT_BINARY_OP_MINUS, rv(row), rv(q))), e->t_long);
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_IN_STRIDED) e->base[p] = axes_base(e, &k->params[p], outer[p], last - 1, last);
    emit_row_span(e, k, lo, hi, start, row_next);

    gcc_jit_block_add_assignment_op(row_next, NULL, row, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
    gcc_jit_block_end_with_jump(row_next, NULL, row_cond);
    gcc_jit_block_add_assignment_op(tile_next, NULL, c0, GCC_JIT_BINARY_OP_PLUS, lng(e, TILE));
    gcc_jit_block_end_with_jump(tile_next, NULL, tiles_cond);
    gcc_jit_block_add_assignment(block_next, NULL, q, q_block);
    gcc_jit_block_end_with_jump(block_next, NULL, blocks_cond);
    return done;
}


static gcc_jit_lvalue *double_local(emitter *e, const char *name, double init)
{
    return init_local(e, e->t_double, name, num(e, PE_F64, init));
}

/* n_lanes lanes' accumulators at their identity, compensations (or a
 * keyed float extreme's NaN flags, else NULL), argmax's and argmin's
 * indices (else NULL): lane l's first element, first + l (past the
 * elements for a lane that gets none, which then loses every tie). */
static void lane_locals(emitter *e, const kir_inst *reduce, int n_lanes, bool with_comp, gcc_jit_rvalue *first, gcc_jit_lvalue **acc,
                        gcc_jit_lvalue **comp, gcc_jit_lvalue **at)
{
    gcc_jit_type *flag = nan_flag_type(e, reduce);
    for (int l = 0; l < n_lanes; l++) {
        acc[l] = init_local(e, acc_type(e, reduce), "acc", acc_identity(e, reduce));
        comp[l] = with_comp ? double_local(e, "comp", 0.0) : flag ? init_local(e, flag, "nan", gcc_jit_context_zero(e->ctx, flag)) : NULL;
        at[l] = is_arg_extreme(reduce) ? long_local(e, "at", bin_long(e, GCC_JIT_BINARY_OP_PLUS, first, l)) : NULL;
    }
}

/* Results accumulated side by side by a reduction along an outer axis. */
#define AXIS_BLOCK 64

/* A reduction along an axis before the last: a block of up to AXIS_BLOCK
 * consecutive results along the last axis accumulated side by side (the
 * vectoriser's loop runs across the kept axis), the reduced axis walked in
 * order for each (the same result for any launch). */
static gcc_jit_block *emit_axis_outer(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    const kir_inst *reduce = kir_reduction_of(k);
    int a = k->reduce_axis, last = k->rank - 1;
    int64_t len = k->shape[a], n_last = k->shape[last];
    bool with_comp = compensated(reduce);
    gcc_jit_type *arr = gcc_jit_context_new_array_type(e->ctx, NULL, e->t_double, AXIS_BLOCK);
    gcc_jit_lvalue *acc = gcc_jit_function_new_local(e->fn, NULL, gcc_jit_context_new_array_type(e->ctx, NULL, acc_type(e, reduce), AXIS_BLOCK),
                                                     "acc_block");
    gcc_jit_lvalue *comp = with_comp ? gcc_jit_function_new_local(e->fn, NULL, arr, "comp_block") : NULL;
    gcc_jit_lvalue *at = is_arg_extreme(reduce)
                             ? gcc_jit_function_new_local(e->fn, NULL, gcc_jit_context_new_array_type(e->ctx, NULL, e->t_long, AXIS_BLOCK), "at_block")
                             : NULL;
    gcc_jit_lvalue *o = long_local(e, "o", begin);
    gcc_jit_block *o_cond = block(e, "o_cond"), *o_head = block(e, "o_head"), *init_cond = block(e, "init_cond");
    gcc_jit_block *init_body = block(e, "init_body"), *k_cond = block(e, "k_cond"), *k_head = block(e, "k_head");
    gcc_jit_block *j_cond = block(e, "j_cond"), *j_body = block(e, "j_body"), *k_next = block(e, "k_next");
    gcc_jit_block *fin_cond = block(e, "fin_cond"), *fin_body = block(e, "fin_body"), *o_next = block(e, "o_next");
    gcc_jit_block *done = block(e, "done");
    gcc_jit_block_end_with_jump(e->cur, NULL, o_cond);
    gcc_jit_block_end_with_conditional(o_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(o), end), o_head, done);
    e->cur = o_head;
    gcc_jit_rvalue *orow = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, rv(o), lng(e, n_last)), e->t_long);
    gcc_jit_rvalue *c0 = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, rv(o), lbin(e, GCC_JIT_BINARY_OP_MULT, orow, lng(e, n_last))), e->t_long);
    gcc_jit_rvalue *stop = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, lbin(e, GCC_JIT_BINARY_OP_MINUS, rv(o), c0), lng(e, n_last)), e->t_long);
    stop = lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, end, stop), end, stop);
    gcc_jit_rvalue *block_end = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(o), lng(e, AXIS_BLOCK)), e->t_long);
    stop = lselect(e, cmp(e, GCC_JIT_COMPARISON_LT, block_end, stop), block_end, stop);
    gcc_jit_rvalue *nb = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, stop, rv(o)), e->t_long);
    row_coordinates(e, orow, a);
    gcc_jit_lvalue *j = long_local(e, "j", lng(e, 0));
    gcc_jit_block_end_with_jump(e->cur, NULL, init_cond);
    gcc_jit_block *k_init = block(e, "k_init");
    gcc_jit_block_end_with_conditional(init_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(j), lng(e, AXIS_BLOCK)), init_body, k_init);
    gcc_jit_block_add_assignment(init_body, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, rv(acc), rv(j)), acc_identity(e, reduce));
    if (at)
        gcc_jit_block_add_assignment(init_body, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, rv(at), rv(j)), lng(e, 0));
    if (comp)
        gcc_jit_block_add_assignment(init_body, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, rv(comp), rv(j)), num(e, PE_F64, 0.0));
    gcc_jit_block_add_assignment_op(init_body, NULL, j, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
    gcc_jit_block_end_with_jump(init_body, NULL, init_cond);
    gcc_jit_lvalue *kk = gcc_jit_function_new_local(e->fn, NULL, e->t_long, "k_outer");
    gcc_jit_block_add_assignment(k_init, NULL, kk, lng(e, 0));
    gcc_jit_block_end_with_jump(k_init, NULL, k_cond);
    gcc_jit_block_end_with_conditional(k_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(kk), lng(e, len)), k_head, fin_cond);
    e->cur = k_head;
    e->coord[a] = rv(kk);
    row_bases(e);
    gcc_jit_rvalue *start = row_start(e);
    gcc_jit_block_add_assignment(e->cur, NULL, j, lng(e, 0));
    gcc_jit_block_end_with_jump(e->cur, NULL, j_cond);
    gcc_jit_block_end_with_conditional(j_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(j), nb), j_body, k_next);
    e->cur = j_body;
    e->c_last = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, c0, rv(j)), e->t_long);
    e->index = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, e->c_last), e->t_long);
    e->acc = gcc_jit_context_new_array_access(e->ctx, NULL, rv(acc), rv(j));
    e->comp = comp ? gcc_jit_context_new_array_access(e->ctx, NULL, rv(comp), rv(j)) : NULL;
    e->at = at ? gcc_jit_context_new_array_access(e->ctx, NULL, rv(at), rv(j)) : NULL;
    e->pos = rv(kk);
    emit_body(e, k);
    gcc_jit_block_add_assignment_op(e->cur, NULL, j, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
    gcc_jit_block_end_with_jump(e->cur, NULL, j_cond);
    gcc_jit_block_add_assignment_op(k_next, NULL, kk, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
    gcc_jit_block_end_with_jump(k_next, NULL, k_cond);
    gcc_jit_block_add_assignment(fin_cond, NULL, j, lng(e, 0));
    gcc_jit_block *fin_loop = block(e, "fin_loop");
    gcc_jit_block_end_with_jump(fin_cond, NULL, fin_loop);
    gcc_jit_block_end_with_conditional(fin_loop, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(j), nb), fin_body, o_next);
    e->cur = fin_body;
    gcc_jit_rvalue *hi = to_local(e, rv(gcc_jit_context_new_array_access(e->ctx, NULL, rv(acc), rv(j))), acc_type(e, reduce));
    gcc_jit_rvalue *lo = comp ? to_local(e, rv(gcc_jit_context_new_array_access(e->ctx, NULL, rv(comp), rv(j))), e->t_double)
                         : at ? to_local(e, rv(gcc_jit_context_new_array_access(e->ctx, NULL, rv(at), rv(j))), e->t_long)
                              : num(e, PE_F64, 0.0);
    gcc_jit_block_add_assignment(e->cur, NULL,
                                 gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[reduce->a[0]], lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(o), rv(j))),
                                 finish_axis_result(e, reduce, hi, lo, len));
    gcc_jit_block_add_assignment_op(e->cur, NULL, j, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
    gcc_jit_block_end_with_jump(e->cur, NULL, fin_loop);
    gcc_jit_block_add_assignment(o_next, NULL, o, stop);
    gcc_jit_block_end_with_jump(o_next, NULL, o_cond);
    return done;
}

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
 * elements (emit_row_passes; var, stddev and f64 norm2 take several:
 * emit_axis_passes). */
static bool row_kernel(const kir_kernel *k)
{
    if (!k->axis_reduction || k->reduce_axis != k->rank - 1) return false;
    for (int v = 0; v < k->n_body; v++)
        if (k->body[v].kind == KIR_REDUCE && passes_of(&k->body[v]) > 1) return false;
    return true;
}

/* Reduction v accumulates into these lane locals in the body emitted next. */
static void set_lane(emitter *e, int v, gcc_jit_lvalue *acc, gcc_jit_lvalue *comp, gcc_jit_lvalue *at)
{
    e->acc_of[v] = acc, e->comp_of[v] = comp, e->at_of[v] = at;
}

/* Reductions along the last axis, one result per launch index (a row):
 * pass 0 accumulates the reductions of values the row's elements give,
 * pass p those of values computed from the results of the passes before it
 * (x - mean_axis(x, 1), softmax: the results broadcast back), each in
 * row_lanes lanes (element k in lane k mod the lanes, combined in a
 * fixed order: the same result for any launch); a pass also stores the
 * members it computes.  Each pass loads the row again (from cache) and
 * recomputes what it needs, so nothing between the reductions is stored. */
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
        if (acc_type(e, red) != e->t_double || is_arg_extreme(red) || pe_reduction_of((pe_op)red->op)->acc == PE_ACC_PROD) lanes = REDUCE_LANES;
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
    gcc_jit_block *next = block(e, "pass_next");
    emit_row_span(e, k, start, to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, lng(e, len)), e->t_long), start, next);
    e->cur = next;
}

static gcc_jit_block *emit_row_passes(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    memset(e->row_copy, 0, sizeof e->row_copy);
    int64_t len = k->shape[k->rank - 1];
    int phase[KIR_MAX_BODY], pass[KIR_MAX_BODY], n_passes = 1;
    for (int v = 0; v < k->n_body; v++) {
        pass[v] = pass_of(k, v, phase);
        phase[v] = pass[v] + (k->body[v].kind == KIR_REDUCE); /* the pass its value exists from */
        if (pass[v] + 1 > n_passes) n_passes = pass[v] + 1;
    }
    /* which values the pass computing them keeps for a later one: costly
     * ones a later pass would compute again */
    bool kept[KIR_MAX_BODY] = {0}, emits[KIR_MAX_BODY], reload[KIR_MAX_BODY], spill_here[KIR_MAX_BODY] = {0};
    bool computed_in_own_pass[KIR_MAX_BODY] = {0}, read_later[KIR_MAX_BODY] = {0};
    int reductions[KIR_MAX_BODY], n_copies = 0;
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
    e->reload = reload;
    e->spill_here = spill_here;
    gcc_jit_lvalue *o = long_local(e, "o", begin);
    gcc_jit_block *o_cond = block(e, "o_cond"), *o_head = block(e, "o_head"), *done = block(e, "done");
    gcc_jit_block_end_with_jump(e->cur, NULL, o_cond);
    gcc_jit_block_end_with_conditional(o_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(o), end), o_head, done);
    e->cur = o_head;
    row_coordinates(e, rv(o), -1);
    row_bases(e);
    gcc_jit_rvalue *start = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, rv(o), lng(e, len)), e->t_long);
    for (int p = 0; p < n_passes; p++) {
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
            if (!split) continue;
            memset(emits, 0, sizeof emits), memset(reload, 0, sizeof reload), memset(spill_here, 0, sizeof spill_here);
            for (int r = 0; r < n_red; r++) {
                const kir_inst *red = &k->body[reductions[r]];
                emits[reductions[r]] = true;
                for (int j = 1; j < red->n; j++) emits[red->a[j]] = reload[red->a[j]] = true;
            }
        }
        gcc_jit_lvalue *acc[KIR_MAX_BODY][MAX_LANES], *comp[KIR_MAX_BODY][MAX_LANES], *at[KIR_MAX_BODY][MAX_LANES];
        int lanes = row_lanes(e, k, reductions, n_red, emits, reload);
        for (int r = 0; r < n_red; r++) {
            const kir_inst *red = &k->body[reductions[r]];
            lane_locals(e, red, lanes, compensated(red), lng(e, 0), acc[r], comp[r], at[r]);
        }
        gcc_jit_lvalue *kk = long_local(e, "k", lng(e, 0));
        gcc_jit_block *lanes_cond = block(e, "lanes_cond"), *lanes_body = block(e, "lanes_body");
        gcc_jit_block *rem_cond = block(e, "rem_cond"), *rem_body = block(e, "rem_body"), *finish = block(e, "finish");
        gcc_jit_block_end_with_jump(e->cur, NULL, lanes_cond);
        gcc_jit_block_end_with_conditional(lanes_cond, NULL,
                                           cmp(e, GCC_JIT_COMPARISON_LE, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(kk), lng(e, lanes)), lng(e, len)),
                                           lanes_body, rem_cond);
        e->cur = lanes_body;
        for (int l = 0; l < lanes; l++) {
            e->c_last = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, rv(kk), lng(e, l)), e->t_long);
            e->index = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, e->c_last), e->t_long);
            e->pos = e->c_last;
            for (int r = 0; r < n_red; r++) set_lane(e, reductions[r], acc[r][l], comp[r][l], at[r][l]);
            emit_body(e, k);
        }
        gcc_jit_block_add_assignment_op(e->cur, NULL, kk, GCC_JIT_BINARY_OP_PLUS, lng(e, lanes));
        gcc_jit_block_end_with_jump(e->cur, NULL, lanes_cond);
        gcc_jit_block_end_with_conditional(rem_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(kk), lng(e, len)), rem_body, finish);
        e->cur = rem_body;
        e->c_last = rv(kk);
        e->index = to_local(e, lbin(e, GCC_JIT_BINARY_OP_PLUS, start, rv(kk)), e->t_long);
        e->pos = rv(kk);
        for (int r = 0; r < n_red; r++) set_lane(e, reductions[r], acc[r][0], comp[r][0], at[r][0]);
        emit_body(e, k);
        gcc_jit_block_add_assignment_op(e->cur, NULL, kk, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
        gcc_jit_block_end_with_jump(e->cur, NULL, rem_cond);
        e->cur = finish;
        for (int r = 0; r < n_red; r++) { /* the row's result: stored, and a local for the passes after */
            const kir_inst *red = &k->body[reductions[r]];
            gcc_jit_rvalue *hi, *lo;
            combine_all_lanes(e, red, lanes, acc[r], comp[r], at[r], &hi, &lo);
            gcc_jit_rvalue *result = to_local(e, finish_axis_result(e, red, hi, lo, len), type_of(e, (pe_dtype)red->dtype));
            gcc_jit_block_add_assignment(e->cur, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[red->a[0]], rv(o)), result);
            e->val[reductions[r]] = result;
        }
    }
    e->emits = NULL;
    gcc_jit_block_add_assignment_op(e->cur, NULL, o, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
    gcc_jit_block_end_with_jump(e->cur, NULL, o_cond);
    return done;
}

/* A chunk's partial: n doubles at partials[kir_partial_width * (begin / chunk)]. */
static void store_partial(emitter *e, const kir_inst *reduce, gcc_jit_rvalue *begin, gcc_jit_rvalue *const *parts, int n)
{
    int width = kir_partial_width((pe_op)reduce->op, (pe_dtype)reduce->ctype);
    gcc_jit_rvalue *slot = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, begin, lng(e, KIR_REDUCE_CHUNK)), lng(e, width)), e->t_long);
    for (int j = 0; j < n; j++)
        gcc_jit_block_add_assignment(e->cur, NULL, gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[reduce->a[0]], bin_long(e, GCC_JIT_BINARY_OP_PLUS, slot, j)),
                                     parts[j]);
}

/* A kernel without a shape, or ending in a full reduction: one flat loop
 * over [begin, end) (views' indices from the flat index), a reduction's
 * accumulators in REDUCE_LANES lanes and its chunk's partial at the end. */
static gcc_jit_block *emit_flat(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    const kir_inst *reduce = kir_reduction_of(k);
    gcc_jit_block *entry = e->cur;
    gcc_jit_block *cond = block(e, "cond"), *body = block(e, "body"), *done = block(e, "done");
    e->i = gcc_jit_function_new_local(e->fn, NULL, e->t_long, "i");
    gcc_jit_block_add_assignment(entry, NULL, e->i, begin);
    gcc_jit_rvalue *i = rv(e->i);
    gcc_jit_lvalue *acc[MAX_LANES], *comp[MAX_LANES], *at[MAX_LANES];
    bool with_comp = reduce && compensated(reduce);
    if (reduce) {
        /* REDUCE_LANES accumulators over consecutive elements: independent
         * chains the vectoriser packs, combined in a fixed tree at the end */
        lane_locals(e, reduce, REDUCE_LANES, with_comp, begin, acc, comp, at);
        gcc_jit_block *lanes_cond = block(e, "lanes_cond");
        gcc_jit_block *lanes_body = block(e, "lanes_body");
        gcc_jit_block_end_with_jump(entry, NULL, lanes_cond);
        gcc_jit_rvalue *last = bin_long(e, GCC_JIT_BINARY_OP_PLUS, i, REDUCE_LANES);
        gcc_jit_block_end_with_conditional(lanes_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LE, last, end), lanes_body, cond);
        e->cur = lanes_body;
        for (int l = 0; l < REDUCE_LANES; l++) {
            e->index = to_local(e, bin_long(e, GCC_JIT_BINARY_OP_PLUS, i, l), e->t_long);
            e->acc = acc[l], e->comp = comp[l], e->at = at[l], e->pos = e->index;
            emit_body(e, k);
        }
        gcc_jit_block_add_assignment_op(e->cur, NULL, e->i, GCC_JIT_BINARY_OP_PLUS, lng(e, REDUCE_LANES));
        gcc_jit_block_end_with_jump(e->cur, NULL, lanes_cond);
    } else {
        gcc_jit_block_end_with_jump(entry, NULL, cond);
    }
    /* the remaining elements one by one (into lane 0) */
    gcc_jit_block_end_with_conditional(cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, i, end), body, done);
    e->cur = body;
    e->index = i;
    e->acc = reduce ? acc[0] : NULL;
    e->comp = reduce ? comp[0] : NULL;
    e->at = reduce ? at[0] : NULL, e->pos = i;
    emit_body(e, k);
    gcc_jit_block_add_assignment_op(e->cur, NULL, e->i, GCC_JIT_BINARY_OP_PLUS, gcc_jit_context_one(e->ctx, e->t_long));
    gcc_jit_block_end_with_jump(e->cur, NULL, cond);
    if (reduce) { /* partials[2 * (begin / chunk)] = the lanes combined pairwise, in a fixed order */
        e->cur = done;
        gcc_jit_rvalue *hi, *lo;
        combine_all_lanes(e, reduce, REDUCE_LANES, acc, comp, at, &hi, &lo);
        if (pe_reduction_wraps((pe_op)reduce->op, (pe_dtype)reduce->ctype)) /* the chunk's wrapped i32, exact in double */
            hi = gcc_jit_context_new_cast(e->ctx, NULL, gcc_jit_context_new_cast(e->ctx, NULL, hi, e->t_of[PE_I32]), e->t_double);
        gcc_jit_rvalue *parts[2] = {hi, gcc_jit_context_new_cast(e->ctx, NULL, lo, e->t_double)}; /* argmax's index: < 2^31 */
        store_partial(e, reduce, begin, parts, 2);
        done = e->cur;
    }
    return done;
}

/* ------------------------------------------------- streaming stores */

/* A kernel whose outputs outgrow the last-level cache (kir_kernel.stream_stores)
 * writes them with non-temporal stores: a cache line the loop overwrites
 * whole is not read from memory first, so a triad moves 3 streams instead of
 * 4.  libgccjit 12 has neither restrict (gcc's own loop-prefetch pass would
 * mark a store non-temporal only if it could prove it independent of the
 * loads) nor target builtins, so the kernel says it itself: it computes
 * STREAM_TILE elements of each output into a tile on the stack (an
 * L1-resident block the vectoriser fills as usual) and copies each tile to
 * its output with the ISA's non-temporal vector store in extended asm.
 * The loop runs element by element until the first output is 64-byte
 * aligned; if every output is aligned there too (a caller's buffer lent by
 * pe_read may sit at another offset) the tiles run, else the ordinary loop;
 * the last partial tile is ordinary too.  Non-temporal stores are weakly
 * ordered: an sfence publishes them before the launch returns to the pool.
 * Measured (bench/RESULTS.md, issue 19): tiles of 64-128 elements stream as
 * fast as stores straight from registers; larger ones leave L1. */
#define STREAM_TILE 128

static gcc_jit_rvalue *misaligned(emitter *e, gcc_jit_rvalue *addr, int p, gcc_jit_rvalue *i)
{
    gcc_jit_rvalue *a = gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(e->ctx, NULL, addr, lng(e, p)));
    gcc_jit_rvalue *bytes = lbin(e, GCC_JIT_BINARY_OP_MULT, i, lng(e, (int64_t)pe_dtype_table[e->k->params[p].dtype].size));
    return lbin(e, GCC_JIT_BINARY_OP_BITWISE_AND, lbin(e, GCC_JIT_BINARY_OP_PLUS, a, bytes), lng(e, 63));
}

/* The loop `for (v = 0; v < n; v++)` around what `body` emits at e->cur;
 * leaves e->cur after the loop. */
static void emit_counted(emitter *e, const char *name, gcc_jit_rvalue *n, void (*body)(emitter *, gcc_jit_rvalue *, void *),
                         void *ctx)
{
    gcc_jit_lvalue *v = long_local(e, name, lng(e, 0));
    gcc_jit_block *cond = block(e, name), *loop = block(e, name), *after = block(e, name);
    gcc_jit_block_end_with_jump(e->cur, NULL, cond);
    gcc_jit_block_end_with_conditional(cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(v), n), loop, after);
    e->cur = loop;
    body(e, rv(v), ctx);
    gcc_jit_block_add_assignment_op(e->cur, NULL, v, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
    gcc_jit_block_end_with_jump(e->cur, NULL, cond);
    e->cur = after;
}

typedef struct {
    const kir_kernel *k;
    gcc_jit_rvalue *block;                 /* the tile's first element, from the aligned one */
    gcc_jit_rvalue *tile[KIR_MAX_PARAMS];  /* per output: its tile */
    gcc_jit_rvalue *out[KIR_MAX_PARAMS];   /* per output: its elements from the aligned one */
} streaming;

static void tile_element(emitter *e, gcc_jit_rvalue *j, void *arg)
{
    streaming *s = arg;
    e->index = lbin(e, GCC_JIT_BINARY_OP_PLUS, s->block, j);
    e->store_index = j;
    emit_body(e, s->k);
    e->store_index = NULL;
}

/* The asm copying `bytes` from %1 (a tile) to %0 (64-byte aligned) with
 * non-temporal vector stores, four registers in turn, and the registers it
 * clobbers (as gcc names them).  libgccjit 12 dies on a vector-typed asm
 * operand, so the two pointers are the operands. */
static void stream_copy_text(int vector_bytes, int64_t bytes, char *out, size_t n, const char **clobbers)
{
    static const char *const wide[4] = {"xmm16", "xmm17", "xmm18", "xmm19"}, /* zmm16-19: no SSE code uses them */
                             *const narrow[4] = {"xmm12", "xmm13", "xmm14", "xmm15"};
    const char *const *clobbered = vector_bytes == 64 ? wide : narrow;
    const char *reg = vector_bytes == 64 ? "zmm" : vector_bytes == 32 ? "ymm" : "xmm";
    const char *load = vector_bytes == 64 ? "vmovdqu64" : vector_bytes == 32 ? "vmovdqu" : "movdqu";
    const char *store = vector_bytes == 16 ? "movntdq" : "vmovntdq";
    size_t used = 0;
    for (int64_t at = 0, r = 0; at < bytes; at += vector_bytes, r = (r + 1) % 4)
        used += (size_t)snprintf(out + used, used < n ? n - used : 0, "%s %lld(%%1), %%%%%s%s\n\t%s %%%%%s%s, %lld(%%0)\n\t", load,
                                 (long long)at, reg, clobbered[r] + 3, store, reg, clobbered[r] + 3, (long long)at);
    for (int r = 0; r < 4; r++) clobbers[r] = clobbered[r];
}

static void stream_tile(emitter *e, gcc_jit_rvalue *t, void *arg)
{
    streaming *s = arg;
    const kir_kernel *k = s->k;
    s->block = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, t, lng(e, STREAM_TILE)), e->t_long);
    gcc_jit_rvalue *saved[KIR_MAX_PARAMS];
    memcpy(saved, e->ptr, sizeof saved[0] * (size_t)k->n_params);
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_OUT) e->ptr[p] = s->tile[p];
    emit_counted(e, "tile_j", lng(e, STREAM_TILE), tile_element, s);
    memcpy(e->ptr, saved, sizeof saved[0] * (size_t)k->n_params);
    for (int p = 0; p < k->n_params; p++) {
        if (k->params[p].kind != KIR_OUT) continue;
        char text[STREAM_TILE * 8 / 16 * 80 + 64]; /* the widest tile (f64) in 16-byte vectors */
        const char *clobbers[4];
        stream_copy_text(e->vector_bytes, STREAM_TILE * (int64_t)pe_dtype_table[k->params[p].dtype].size, text, sizeof text, clobbers);
        /* the operands are locals, set before the statement: libgccjit 12
         * dies on an expression as an asm operand */
        gcc_jit_rvalue *dst = gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(e->ctx, NULL, s->out[p], s->block), NULL);
        gcc_jit_rvalue *to = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, dst, e->t_voidp), e->t_voidp);
        gcc_jit_rvalue *from = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, s->tile[p], e->t_voidp), e->t_voidp);
        gcc_jit_extended_asm *st = gcc_jit_block_add_extended_asm(e->cur, NULL, text);
        gcc_jit_extended_asm_add_input_operand(st, NULL, "r", to);
        gcc_jit_extended_asm_add_input_operand(st, NULL, "r", from);
        for (int r = 0; r < 4; r++) gcc_jit_extended_asm_add_clobber(st, clobbers[r]);
        gcc_jit_extended_asm_add_clobber(st, "memory");
    }
}

static gcc_jit_block *emit_streaming(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end,
                                     gcc_jit_rvalue *args)
{
    /* the buffers' addresses as integers: libgccjit casts no pointer to one */
    gcc_jit_rvalue *addr = gcc_jit_context_new_cast(e->ctx, NULL, args, gcc_jit_type_get_pointer(e->t_long));
    int first_out = 0;
    while (k->params[first_out].kind != KIR_OUT) first_out++;
    gcc_jit_lvalue *i = long_local(e, "s_i", begin);
    gcc_jit_block *head_cond = block(e, "head_cond"), *head_body = block(e, "head_body"), *check = block(e, "aligned");
    gcc_jit_block *stream = block(e, "stream"), *plain = block(e, "plain"), *finish = block(e, "streamed");
    gcc_jit_block_end_with_jump(e->cur, NULL, head_cond);
    gcc_jit_rvalue *zero = lng(e, 0);
    gcc_jit_block_end_with_conditional(head_cond, NULL,
                                       and_(e, cmp(e, GCC_JIT_COMPARISON_LT, rv(i), end),
                                            cmp(e, GCC_JIT_COMPARISON_NE, misaligned(e, addr, first_out, rv(i)), zero)),
                                       head_body, check);
    e->cur = head_body;
    e->index = rv(i);
    emit_body(e, k);
    gcc_jit_block_add_assignment_op(e->cur, NULL, i, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
    gcc_jit_block_end_with_jump(e->cur, NULL, head_cond);

    gcc_jit_rvalue *all_aligned = NULL;
    for (int p = 0; p < k->n_params; p++) {
        if (k->params[p].kind != KIR_OUT) continue;
        gcc_jit_rvalue *c = cmp(e, GCC_JIT_COMPARISON_EQ, misaligned(e, addr, p, rv(i)), zero);
        all_aligned = all_aligned ? and_(e, all_aligned, c) : c;
    }
    gcc_jit_block_end_with_conditional(check, NULL, all_aligned, stream, plain);

    /* every array rebased at the aligned element; the tiles */
    e->cur = stream;
    streaming s = {.k = k};
    gcc_jit_type *t_vec = gcc_jit_type_get_vector(e->t_of[PE_BOOL], (size_t)e->vector_bytes); /* bytes: any element type */
    gcc_jit_rvalue *saved[KIR_MAX_PARAMS];
    memcpy(saved, e->ptr, sizeof saved[0] * (size_t)k->n_params);
    for (int p = 0; p < k->n_params; p++) {
        kir_param_kind kind = (kir_param_kind)k->params[p].kind;
        if (kind != KIR_IN_CONTIG && kind != KIR_OUT) continue;
        gcc_jit_rvalue *at = gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[p], rv(i)), NULL);
        if (kind == KIR_IN_CONTIG) {
            e->ptr[p] = to_local(e, at, gcc_jit_rvalue_get_type(at));
            continue;
        }
        gcc_jit_type *T = type_of(e, (pe_dtype)k->params[p].dtype);
        int64_t vectors = STREAM_TILE * (int64_t)pe_dtype_table[k->params[p].dtype].size / e->vector_bytes;
        char name[24];
        snprintf(name, sizeof name, "tile%d", p);
        /* an array of vectors: aligned as they are */
        gcc_jit_lvalue *tile = gcc_jit_function_new_local(e->fn, NULL, gcc_jit_context_new_array_type(e->ctx, NULL, t_vec, (int)vectors), name);
        gcc_jit_rvalue *first = gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(e->ctx, NULL, rv(tile), zero), NULL);
        s.tile[p] = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, first, gcc_jit_type_get_pointer(T)), gcc_jit_type_get_pointer(T));
        s.out[p] = to_local(e, at, gcc_jit_type_get_pointer(T));
    }
    gcc_jit_rvalue *tiles = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, lbin(e, GCC_JIT_BINARY_OP_MINUS, end, rv(i)), lng(e, STREAM_TILE)), e->t_long);
    emit_counted(e, "tile", tiles, stream_tile, &s);
    memcpy(e->ptr, saved, sizeof saved[0] * (size_t)k->n_params);
    gcc_jit_extended_asm *sfence = gcc_jit_block_add_extended_asm(e->cur, NULL, "sfence");
    gcc_jit_extended_asm_add_clobber(sfence, "memory");
    gcc_jit_block_add_assignment_op(e->cur, NULL, i, GCC_JIT_BINARY_OP_PLUS, lbin(e, GCC_JIT_BINARY_OP_MULT, tiles, lng(e, STREAM_TILE)));
    gcc_jit_block_end_with_jump(e->cur, NULL, plain);

    /* what is left (all of it where the outputs disagree on alignment) */
    e->cur = plain;
    gcc_jit_block_end_with_jump(emit_flat(e, k, rv(i), end), NULL, finish);
    return finish;
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
    row_bases(e);
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
    bool var = passes_of(reduce) == 3;
    gcc_jit_type *I = e->t_of[PE_I32];
    for (int pass = 0; pass < passes_of(reduce); pass++) {
        gcc_jit_lvalue *acc = double_local(e, "acc", 0.0), *comp = double_local(e, "comp", 0.0);
        gcc_jit_lvalue *kk = long_local(e, "kk", lng(e, 0));
        gcc_jit_block *cond = block(e, "pass_cond"), *body = block(e, "pass_body"), *after = block(e, "pass_done");
        gcc_jit_block_end_with_jump(e->cur, NULL, cond);
        gcc_jit_block_end_with_conditional(cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(kk), n), body, after);
        e->cur = body;
        place(e, w, rv(kk));
        e->acc = acc, e->comp = comp, e->at = NULL, e->pass = pass;
        emit_body(e, k);
        gcc_jit_block_add_assignment_op(e->cur, NULL, kk, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
        gcc_jit_block_end_with_jump(e->cur, NULL, cond);
        e->cur = after;
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
static gcc_jit_block *emit_axis_passes(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    const kir_inst *reduce = kir_reduction_of(k);
    int a = k->reduce_axis, last = k->rank - 1;
    int64_t len = k->shape[a], n_last = k->shape[last];
    gcc_jit_lvalue *o = long_local(e, "o", begin);
    gcc_jit_block *o_cond = block(e, "o_cond"), *o_head = block(e, "o_head"), *done = block(e, "done");
    gcc_jit_block_end_with_jump(e->cur, NULL, o_cond);
    gcc_jit_block_end_with_conditional(o_cond, NULL, cmp(e, GCC_JIT_COMPARISON_LT, rv(o), end), o_head, done);
    e->cur = o_head;
    walk w = {.axis = a};
    if (a == last) {
        row_coordinates(e, rv(o), -1);
        row_bases(e);
        w.start = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, rv(o), lng(e, len)), e->t_long);
    } else {
        gcc_jit_rvalue *orow = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, rv(o), lng(e, n_last)), e->t_long);
        w.c_last = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, rv(o), lbin(e, GCC_JIT_BINARY_OP_MULT, orow, lng(e, n_last))), e->t_long);
        row_coordinates(e, orow, a);
    }
    pass_stats st = emit_passes(e, k, reduce, &w, lng(e, len), num(e, PE_F64, (double)len));
    gcc_jit_rvalue *v;
    if (passes_of(reduce) == 3) {
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
    gcc_jit_block_add_assignment_op(e->cur, NULL, o, GCC_JIT_BINARY_OP_PLUS, lng(e, 1));
    gcc_jit_block_end_with_jump(e->cur, NULL, o_cond);
    return done;
}

/* A chunk of a multi-pass full reduction: its passes over [begin, end) and
 * its statistics as the chunk's partial (kir.h; combined by Chan's formula
 * or rescaled, partials.c). */
static gcc_jit_block *emit_flat_passes(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end)
{
    const kir_inst *reduce = kir_reduction_of(k);
    walk w = {.axis = -1, .start = begin};
    gcc_jit_rvalue *n = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MINUS, end, begin), e->t_long);
    pass_stats st = emit_passes(e, k, reduce, &w, n, to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, n, e->t_double), e->t_double));
    if (passes_of(reduce) == 3) {
        gcc_jit_rvalue *parts[4] = {st.sum_hi, st.sum_lo, gcc_jit_context_new_cast(e->ctx, NULL, st.exponent, e->t_double), st.squares};
        store_partial(e, reduce, begin, parts, 4);
    } else {
        gcc_jit_rvalue *parts[4] = {st.scale, st.squares_hi, st.squares_lo, num(e, PE_F64, 0.0)};
        store_partial(e, reduce, begin, parts, 4);
    }
    return e->cur;
}

static void emit_kernel(emitter *e, const kir_kernel *k, const char *name)
{
    e->k = k;
    e->n_locals = 0;
    e->use_prims = vectorisable(e->prims, k);
    gcc_jit_param *params[3] = {
        gcc_jit_context_new_param(e->ctx, NULL, e->t_long, "begin"),
        gcc_jit_context_new_param(e->ctx, NULL, e->t_long, "end"),
        gcc_jit_context_new_param(e->ctx, NULL, gcc_jit_type_get_pointer(e->t_voidp), "args"),
    };
    e->fn = gcc_jit_context_new_function(e->ctx, NULL, GCC_JIT_FUNCTION_EXPORTED, e->t_void, name, 3, params, 0);
    gcc_jit_block *entry = gcc_jit_function_new_block(e->fn, "entry");
    gcc_jit_rvalue *args = gcc_jit_param_as_rvalue(params[2]);
    for (int p = 0; p < k->n_params; p++) {
        const kir_param *q = &k->params[p];
        gcc_jit_type *T = type_of(e, pe_dtype_real_part((pe_dtype)q->dtype)); /* complex: an array of parts */
        gcc_jit_rvalue *raw = gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(
            e->ctx, NULL, args, gcc_jit_context_new_rvalue_from_int(e->ctx, e->t_long, p)));
        char pname[16];
        snprintf(pname, sizeof pname, "p%d", p);
        if (q->kind == KIR_IN_LITERAL) { /* compiled in: the loop folds it */
            e->ptr[p] = q->dtype == PE_F32 || q->dtype == PE_F64 ? gcc_jit_context_new_rvalue_from_double(e->ctx, T, q->value)
                                                              : gcc_jit_context_new_rvalue_from_long(e->ctx, T, (long)q->value);
        } else if (q->kind == KIR_IN_SCALAR) {
            gcc_jit_rvalue *dp = gcc_jit_context_new_cast(e->ctx, NULL, raw, gcc_jit_type_get_pointer(e->t_double));
            gcc_jit_lvalue *l = gcc_jit_function_new_local(e->fn, NULL, T, pname);
            gcc_jit_block_add_assignment(entry, NULL, l,
                                         gcc_jit_context_new_cast(e->ctx, NULL, gcc_jit_lvalue_as_rvalue(
                                                                      gcc_jit_rvalue_dereference(dp, NULL)), T));
            e->ptr[p] = gcc_jit_lvalue_as_rvalue(l);
        } else {
            gcc_jit_type *PT = gcc_jit_type_get_pointer(T);
            gcc_jit_lvalue *l = gcc_jit_function_new_local(e->fn, NULL, PT, pname);
            gcc_jit_block_add_assignment(entry, NULL, l, gcc_jit_context_new_cast(e->ctx, NULL, raw, PT));
            e->ptr[p] = gcc_jit_lvalue_as_rvalue(l);
        }
    }
    e->cur = entry;
    int flag = -1;
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_OUT_FLAG) flag = p;
    e->bad = flag >= 0 ? init_local(e, e->t_u32, "bad", gcc_jit_context_zero(e->ctx, e->t_u32)) : NULL;
    gcc_jit_rvalue *begin = gcc_jit_param_as_rvalue(params[0]), *end = gcc_jit_param_as_rvalue(params[1]);
    const kir_inst *reduce = kir_reduction_of(k);
    e->rows = k->rank > 0 && (!reduce || k->axis_reduction);
    gcc_jit_block *done;
    if (row_kernel(k)) done = emit_row_passes(e, k, begin, end);
    else if (k->axis_reduction && passes_of(reduce) > 1) done = emit_axis_passes(e, k, begin, end);
    else if (k->axis_reduction) done = emit_axis_outer(e, k, begin, end);
    else if (reduce && passes_of(reduce) > 1) done = emit_flat_passes(e, k, begin, end);
    else if (e->rows && reads_across_lines(k)) done = emit_tiles(e, k, begin, end);
    else if (e->rows) done = emit_rows(e, k, begin, end);
    else if (k->stream_stores) done = emit_streaming(e, k, begin, end, args);
    else done = emit_flat(e, k, begin, end);
    if (flag >= 0) { /* other launches may set it too: one atomic OR per launch */
        gcc_jit_type *vp = gcc_jit_type_get_pointer(gcc_jit_type_get_volatile(e->t_void));
        gcc_jit_type *t_int = gcc_jit_context_get_type(e->ctx, GCC_JIT_TYPE_INT);
        gcc_jit_rvalue *args[3] = {gcc_jit_context_new_cast(e->ctx, NULL, e->ptr[flag], vp),
                                   gcc_jit_context_new_cast(e->ctx, NULL, rv(e->bad), t_int),
                                   gcc_jit_context_new_rvalue_from_int(e->ctx, t_int, __ATOMIC_RELAXED)};
        gcc_jit_block_add_eval(done, NULL, gcc_jit_context_new_call(e->ctx, NULL,
                                                                  gcc_jit_context_get_builtin_function(e->ctx, "__atomic_fetch_or_4"), 3, args));
    }
    gcc_jit_block_end_with_void_return(done, NULL);
}

gcc_jit_context *pe_gccjit_context(const char *isa, char *err, size_t err_size)
{
    gcc_jit_context *ctx = gcc_jit_context_acquire();
    if (!ctx) {
        snprintf(err, err_size, "gcc_jit_context_acquire failed");
        return NULL;
    }
    gcc_jit_context_set_int_option(ctx, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, 3);
    char march[48];
    if (isa && strncmp(isa, "x86-64", 6) == 0) {
        snprintf(march, sizeof march, "-march=%s", isa);
        gcc_jit_context_add_command_line_option(ctx, march);
    }
    gcc_jit_context_add_command_line_option(ctx, "-fno-math-errno");
    /* a value must not depend on whether fusion kept an intermediate in a
     * register: no contraction of a * b + c into an FMA behind the program's
     * back (the primitives use FMA by name) */
    gcc_jit_context_add_command_line_option(ctx, "-ffp-contract=off");
    gcc_jit_context_add_command_line_option(ctx, "-fno-trapping-math");
    /* parameters never alias outputs (fresh buffers), but libgccjit 12 has no
     * restrict: let the vectoriser version the loop for as many pairs as a
     * fused kernel has */
    gcc_jit_context_add_command_line_option(ctx, "--param=vect-max-version-for-alias-checks=1000");
    /* the primitives are always_inline: a kernel with several transcendental
     * ops (sin, cos and pow in one loop), or pow alone, passes gcc's default
     * growth and size limits, and an always_inline that cannot be inlined is
     * a compile error */
    gcc_jit_context_add_command_line_option(ctx, "--param=large-function-growth=100000");
    gcc_jit_context_add_command_line_option(ctx, "--param=large-function-insns=1000000");
    gcc_jit_context_add_command_line_option(ctx, "--param=inline-unit-growth=100000");
    gcc_jit_context_add_command_line_option(ctx, "--param=max-inline-insns-single=100000");
    /* for developers: e.g. PE_JIT_OPTION=-fopt-info-vec-missed explains what did not vectorise */
    const char *extra = getenv("PE_JIT_OPTION");
    if (extra && *extra) gcc_jit_context_add_command_line_option(ctx, extra);
    return ctx;
}

bool pe_gccjit_compile(const kir_kernel *const *kernels, size_t n, const char *isa, const char *so_path, char *err,
                       size_t err_size)
{
    gcc_jit_context *ctx = pe_gccjit_context(isa, err, err_size);
    if (!ctx) return false;
    /* x86-64-v3 and v4 have FMA */
    bool fma = isa && (strcmp(isa, "x86-64-v3") == 0 || strcmp(isa, "x86-64-v4") == 0);
    emitter e = {.ctx = ctx, .prims = pe_prims_new(ctx, fma), .perturbed_op = pe_codegen_perturbed_op(),
                 .vector_bytes = isa && strcmp(isa, "x86-64-v4") == 0 ? 64 : fma ? 32 : 16};
    e.t_void = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_VOID);
    e.t_bool = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_BOOL);
    e.t_long = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_LONG);
    e.t_u32 = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_UNSIGNED_INT);
    e.t_voidp = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_VOID_PTR);
#define PE_DTYPE(en, name, size, is_float, rank, c_type, gccjit_type, cuda_type, generated) \
    e.t_of[PE_##en] = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_##gccjit_type);
#include "../../irformat/dtypes.def"
    e.t_double = e.t_of[PE_F64];
    char (*names)[48] = calloc(n ? n : 1, sizeof *names);
    if (!names) {
        pe_prims_free(e.prims);
        gcc_jit_context_release(ctx);
        snprintf(err, err_size, "out of memory");
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if (!pe_kernel_generatable(kernels[i], pe_cpu_can_emit)) {
            free(names);
            pe_prims_free(e.prims);
            gcc_jit_context_release(ctx);
            snprintf(err, err_size, "a kernel with an op this generator does not emit (composed ops are lowered first)");
            return false;
        }
    for (size_t i = 0; i < n; i++) {
        kir_kernel_name(kernels[i], names[i], sizeof names[i]);
        emit_kernel(&e, kernels[i], names[i]);
    }
    /* a shared object at `so_path`, which the CPU executor loads (links) */
    gcc_jit_context_compile_to_file(ctx, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, so_path);
    const char *msg = gcc_jit_context_get_first_error(ctx);
    bool ok = msg == NULL;
    if (msg) snprintf(err, err_size, "%s", msg);
    free(names);
    pe_prims_free(e.prims);
    gcc_jit_context_release(ctx);
    return ok;
}

/* Kernels from another build of this generator may differ for the same IR
 * (and the executor's conventions with them): the disk cache keys files by
 * this stamp of the build too. */

