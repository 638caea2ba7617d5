/* cuda_emit_reduce.c — the CUDA generator's reductions
 * (cuda_emit_internal.h): how each accumulates (axis_kind: the column's
 * double, wrapped i32, products, any, all, argmax and argmin, the walks of
 * var, stddev and f64 norm2), one element's update into a thread's
 * accumulator, the accumulator's declaration, the warp's shuffle trees in a
 * fixed order, and an axis reduction's result from its accumulator; the
 * kernel shapes (cuda_emit_loops.c) decide which threads hold which
 * elements, this file what they hold and how it combines. */
#include "cuda_emit_internal.h"

/* ------------------------------------------------------ accumulation */

/* Element value(s) of reduction `in` into the column's double accumulator
 * (acc, and comp where f64 sums are compensated): the extreme kept, or the
 * value, its magnitude, square or product added. */
static void emit_reduce(emitter *e, const kir_inst *in)
{
    text *t = e->t;
    pe_op op = (pe_op)in->op;
    pe_dtype ct = (pe_dtype)in->ctype;
    char x0[96], x1[96];
    /* operands meet in ctype (dot), then widen exactly to double */
    pe_elem_kind element = (pe_elem_kind)pe_reduction_of(op)->element;
    if (element == PE_ELEM_PRODUCT) {
        pe_cu_operand(e, in, 1, ct, x0, sizeof x0);
        pe_cu_operand(e, in, 2, ct, x1, sizeof x1);
        put(t, "    { double x = (double)(%s) * (double)(%s);\n", x0, x1);
    } else {
        put(t, "    { double x = (double)v%d;\n", in->a[1]);
        if (element == PE_ELEM_ABS) put(t, "      x = fabs(x);\n");
        if (element == PE_ELEM_SQUARE) put(t, "      x = x * x;\n");
    }
    if (is_extreme(op)) put(t, "      if (pe_takes(acc, x, %s)) acc = x; }\n", is_min(op) ? "true" : "false");
    else if (compensated(in)) put(t, "      pe_two_sum(acc, comp, x); }\n");
    else put(t, "      acc += x; }\n");
}

/* The accumulation of reduction op computed in ctype, i32 sums, products
 * and dot wrapping where `wraps` (axis and full reductions alike). */
static axis_kind kind_of(pe_op op, pe_dtype ctype, bool wraps)
{
    switch (op) {
    case PE_OP_sum: case PE_OP_dot: return wraps ? AX_WRAP_SUM : AX_COLUMN;
    case PE_OP_prod: return wraps ? AX_WRAP_PROD : AX_PROD;
    case PE_OP_any: return AX_ANY;
    case PE_OP_all: return AX_ALL;
    case PE_OP_argmax: case PE_OP_argmin: return AX_ARG;
    case PE_OP_var: case PE_OP_stddev: return AX_VAR;
    case PE_OP_norm2: return ctype == PE_F64 ? AX_SCALED_NORM2 : AX_COLUMN; /* f32, i32 squares fit a double */
    default: return AX_COLUMN; /* mean, max, min, norm1, norminf */
    }
}

/* An axis reduction's: reduce_one's `integer` (an i32 result of an i32 compute type). */
axis_kind pe_cu_axis_kind_of(const kir_inst *r)
{
    return kind_of((pe_op)r->op, (pe_dtype)r->ctype, r->ctype == PE_I32 && r->dtype == PE_I32);
}

int pe_cu_axis_passes(axis_kind kind) { return kind == AX_VAR ? 3 : kind == AX_SCALED_NORM2 ? 2 : 1; }

/* Whether lanes' accumulators combine in a tree (pe_cu_emit_shuffle_tree): the
 * column's (a fixed order), and the order-free wrapping sum, any, all. */
bool pe_cu_axis_combines(axis_kind kind) { return kind == AX_COLUMN || kind == AX_WRAP_SUM || kind == AX_ANY || kind == AX_ALL; }

/* The declaration of an accumulator that is one variable, axis and full
 * reductions alike: wrapped sums and products (unsigned), products, any, all. */
static const char *single_accumulator(axis_kind kind)
{
    switch (kind) {
    case AX_WRAP_SUM: return "unsigned acc = 0u;";
    case AX_WRAP_PROD: return "unsigned acc = 1u;";
    case AX_PROD: return "double acc = 1.0;";
    case AX_ANY: return "bool acc = false;";
    case AX_ALL: return "bool acc = true;";
    default: return "double acc = 0.0;";
    }
}

/* Element value v (of the axis reduction r, at position j along the axis)
 * into the accumulator, in walk e->pass. */
void pe_cu_emit_axis_update(emitter *e, const kir_inst *r)
{
    text *t = e->t;
    int v = r->a[1];
    switch (pe_cu_axis_kind_of(r)) {
    case AX_COLUMN: emit_reduce(e, r); break;
    case AX_WRAP_SUM: put(t, "    acc += (unsigned)v%d;\n", v); break;
    case AX_WRAP_PROD: put(t, "    acc *= (unsigned)v%d;\n", v); break;
    case AX_PROD: put(t, "    acc *= (double)v%d;\n", v); break;
    case AX_ANY: put(t, "    if ((double)v%d != 0.0) acc = true;\n", v); break; /* NaN is true */
    case AX_ALL: put(t, "    if ((double)v%d == 0.0) acc = false;\n", v); break;
    case AX_ARG:
        put(t, "    if (!nan_at) { const double x = (double)v%d;\n"
               "      if (j == 0 || x != x) acc = x, at = j, nan_at = x != x;\n"
               "      else if (x %c acc) acc = x, at = j; }\n", v, r->op == PE_OP_argmax ? '>' : '<');
        break;
    case AX_VAR:
        if (e->pass == 0) put(t, "    pe_two_sum(acc, comp, (double)v%d);\n", v);
        if (e->pass == 1) put(t, "    { const double d = fabs((double)v%d - mean); if (!(d <= largest)) largest = d; }\n", v);
        if (e->pass == 2) put(t, "    { const double d = ldexp((double)v%d - mean, -ex); pe_two_sum(acc, comp, d * d); }\n", v);
        break;
    case AX_SCALED_NORM2:
        if (e->pass == 0) put(t, "    { const double m = fabs((double)v%d); if (m != m) nan = true; if (m > scale) scale = m; }\n", v);
        else put(t, "    { const double m = (double)v%d / scale; pe_two_sum(acc, comp, m * m); }\n", v);
        break;
    }
}

/* How a full (all-element) reduction accumulates: the column's double (sum,
 * mean, extremes, norms but f64 norm2: emit_reduce), as an axis
 * reduction's accumulator (wrapping i32 sums, products and dot; float
 * products; any; all; argmax and argmin, by flat index), or in several
 * walks over each chunk (var, stddev, f64 norm2:
 * pe_cu_emit_multi_walk_kernel). */
axis_kind pe_cu_full_kind_of(const kir_inst *r)
{
    return kind_of((pe_op)r->op, (pe_dtype)r->ctype, pe_reduction_wraps((pe_op)r->op, (pe_dtype)r->ctype));
}

/* Element value(s) of the full reduction r into the thread's accumulator.
 * A thread's elements are not contiguous (the block strides over its
 * chunk), so argmax and argmin break ties by the smaller flat index i, and
 * the smaller index's NaN wins: whatever order elements meet in, the first
 * index of the extreme (or the first NaN) is kept. */
void pe_cu_emit_full_update(emitter *e, const kir_inst *r)
{
    text *t = e->t;
    int v = r->a[1];
    switch (pe_cu_full_kind_of(r)) {
    case AX_COLUMN: emit_reduce(e, r); return;
    case AX_WRAP_SUM:
        if (pe_reduction_of((pe_op)r->op)->element == PE_ELEM_PRODUCT) /* i32 dot: the products wrap too */
            put(t, "    acc += (unsigned)v%d * (unsigned)v%d;\n", v, r->a[2]);
        else
            put(t, "    acc += (unsigned)v%d;\n", v);
        return;
    case AX_ARG:
        put(t, "    { const double x = (double)v%d;\n"
               "      if (pe_arg_takes(acc, at, x, (double)i, %s)) acc = x, at = (double)i; }\n",
            v, r->op == PE_OP_argmin ? "true" : "false");
        return;
    default: pe_cu_emit_axis_update(e, r); return;
    }
}

/* The accumulator of a full reduction r that is not the column's, as two
 * doubles (hi, lo) for the block's tree and the partials: a wrapped sum or
 * product (an unsigned, exact in a double), a product, any or all (1 or
 * 0), the extreme and its flat index (-1: none yet). */
void pe_cu_emit_full_state(text *t, const kir_inst *r)
{
    axis_kind kind = pe_cu_full_kind_of(r);
    if (kind == AX_ARG) put(t, "  double acc = 0.0, at = -1.0;\n");
    else put(t, "  %s\n", single_accumulator(kind));
}

/* The accumulator as the pair (hi, lo) the block's tree and the partials hold. */
void pe_cu_emit_full_pair(text *t, const kir_inst *r)
{
    switch (pe_cu_full_kind_of(r)) {
    case AX_ANY: case AX_ALL: put(t, "  double hi = acc ? 1.0 : 0.0, lo = 0.0;\n"); break;
    case AX_ARG: put(t, "  double hi = acc, lo = at;\n"); break;
    case AX_WRAP_SUM: case AX_WRAP_PROD: put(t, "  double hi = (double)acc, lo = 0.0;\n"); break;
    default: put(t, "  double hi = acc, lo = 0.0;\n"); break;
    }
}

/* Which pe_fold combines a full reduction's (hi, lo) pairs, in the block's
 * trees and in the combiner; 0: a sum or an extreme, combined as the column's. */
int pe_cu_fold_of(const kir_inst *r)
{
    switch (pe_cu_full_kind_of(r)) {
    case AX_PROD: return FOLD_PROD;
    case AX_WRAP_SUM: return FOLD_WRAP_SUM;
    case AX_WRAP_PROD: return FOLD_WRAP_PROD;
    case AX_ANY: return FOLD_ANY;
    case AX_ALL: return FOLD_ALL;
    case AX_ARG: return r->op == PE_OP_argmin ? FOLD_ARGMIN : FOLD_ARGMAX;
    default: return 0;
    }
}

/* ------------------------------------------------------ trees and results */

/* Lane l combines lane l + d's accumulator into its own, d = from, from/2,
 * ..., 1: lane 0 ends with the lanes' [0, 2 from) in a fixed order. */
void pe_cu_emit_shuffle_tree(text *t, const kir_inst *r, int from)
{
    pe_op op = (pe_op)r->op;
    put(t, "  for (int d = %d; d > 0; d >>= 1) {\n", from);
    put(t, "    double o = __shfl_down_sync(0xffffffffu, acc, d);\n");
    if (is_extreme(op))
        put(t, "    if (pe_takes(acc, o, %s)) acc = o;\n", is_min(op) ? "true" : "false");
    else if (compensated(r))
        put(t, "    comp += __shfl_down_sync(0xffffffffu, comp, d);\n    pe_two_sum(acc, comp, o);\n");
    else
        put(t, "    acc += o;\n");
    put(t, "  }\n");
}

/* A result's accumulator, by axis_kind. */
void pe_cu_emit_axis_state(text *t, const kir_inst *r)
{
    double start = pe_reduction_of((pe_op)r->op)->identity;
    switch (pe_cu_axis_kind_of(r)) {
    case AX_COLUMN:
        put(t, "    double acc = %s, comp = 0.0;\n", start == 0 ? "0.0" : start > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                                                                                      : "__longlong_as_double(0xfff0000000000000LL)");
        break;
    case AX_WRAP_SUM: case AX_WRAP_PROD: case AX_PROD: case AX_ANY: case AX_ALL:
        put(t, "    %s\n", single_accumulator(pe_cu_axis_kind_of(r)));
        break;
    case AX_ARG: put(t, "    double acc = 0.0; long long at = 0; bool nan_at = false;\n"); break;
    case AX_VAR: put(t, "    double acc = 0.0, comp = 0.0, mean = 0.0, largest = 0.0; int ex = 0;\n"); break;
    case AX_SCALED_NORM2: put(t, "    double acc = 0.0, comp = 0.0, scale = 0.0; bool nan = false;\n"); break;
    }
}

/* What walk `pass` (> 0) of an axis reduction starts from. */
void pe_cu_emit_axis_between(text *t, const kir_inst *r, int pass, long long len)
{
    if (pe_cu_axis_kind_of(r) == AX_VAR && pass == 1)
        put(t, "    mean = (pe_finite(acc) ? acc + comp : acc) / %lld.0;\n", len);
    if (pe_cu_axis_kind_of(r) == AX_VAR && pass == 2) /* deviations scaled by a power of two: squares neither overflow nor underflow */
        put(t, "    ex = largest > 0.0 && pe_finite(largest) ? ilogb(largest) : 0;\n    acc = 0.0, comp = 0.0;\n");
}

/* Lane 0 of a warp combines the lanes' accumulators (lane l takes lane
 * l + 16, + 8, ..., + 1: a fixed order; the wrapping sum, any and all
 * are order-free).  Every lane shuffles, whatever it holds. */
void pe_cu_emit_axis_tree(text *t, const kir_inst *r)
{
    axis_kind kind = pe_cu_axis_kind_of(r);
    if (kind == AX_COLUMN) {
        pe_cu_emit_shuffle_tree(t, r, 16);
        return;
    }
    put(t, "  for (int d = 16; d > 0; d >>= 1) {\n");
    if (kind == AX_WRAP_SUM) put(t, "    acc += __shfl_down_sync(0xffffffffu, acc, d);\n");
    else put(t, "    const int o = __shfl_down_sync(0xffffffffu, (int)acc, d);\n    acc = acc %s o;\n", kind == AX_ANY ? "||" : "&&");
    put(t, "  }\n");
}

/* Result o's value from its accumulator over `len` elements, stored, as
 * reduce_one finishes it: a compensation added where the sum is finite,
 * the mean divided, roots, the scales put back; converted to the result
 * type once, as the interpreter stores it (i32: saturated, NaN 0). */
void pe_cu_emit_axis_store(text *t, const kir_kernel *k, const kir_inst *r, const char *in)
{
    pe_op op = (pe_op)r->op;
    long long len = (long long)k->shape[k->reduce_axis];
    switch (pe_cu_axis_kind_of(r)) {
    case AX_WRAP_SUM: case AX_WRAP_PROD:
        put(t, "%s((int *)a.p[%d].ptr)[o] = pe_wrap(acc);\n", in, r->a[0]);
        return;
    case AX_COLUMN:
        put(t, "%sdouble v = acc;\n", in);
        if (!is_extreme(op)) put(t, "%sif (pe_finite(acc)) v = acc + comp;\n", in);
        if (op == PE_OP_mean) put(t, "%sv = v / %lld.0;\n", in, len);
        if (op == PE_OP_norm2) put(t, "%sv = sqrt(v);\n", in);
        break;
    case AX_PROD: put(t, "%sdouble v = acc;\n", in); break;
    case AX_ANY: case AX_ALL: put(t, "%sdouble v = acc ? 1.0 : 0.0;\n", in); break;
    case AX_ARG: put(t, "%sdouble v = (double)at;\n", in); break;
    case AX_VAR:
        put(t, "%sconst double scaled = (pe_finite(acc) ? acc + comp : acc) / %lld.0;\n", in, len);
        if (op == PE_OP_var) put(t, "%sdouble v = ldexp(scaled, 2 * ex);\n", in);
        else put(t, "%sdouble v = ldexp(sqrt(scaled), ex);\n", in);
        break;
    case AX_SCALED_NORM2:
        put(t, "%sdouble v = nan ? __longlong_as_double(0x7ff8000000000000LL) : scale == 0.0 || !pe_finite(scale) ? scale\n"
               "%s  : scale * sqrt(pe_finite(acc) ? acc + comp : acc);\n", in, in);
        break;
    }
    pe_dtype rt = (pe_dtype)r->dtype;
    const char *R = ctype_name(rt);
    const char *conv = rt == PE_I32 ? "pe_to_i32(v)" : rt == PE_BOOL ? "v != 0.0" : "v";
    put(t, "%s((%s *)a.p[%d].ptr)[o] = (%s)(%s);\n", in, R, r->a[0], R, conv);
}
