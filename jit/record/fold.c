/* fold.c — what a request can answer at record time, without queueing work:
 *   constant folding: every operand a uniform constant (pe_scalar, pe_fill, C
 *     scalars, earlier folds) gives a uniform constant, computed by the same
 *     reference math as the interpreter (exec/interp/refmath.c) — not where
 *     a type is complex: a uniform constant holds no imaginary part, so the
 *     interpreter computes those;
 *   strength reduction: pow(x, 2) -> x*x, pow(x, 0.5) -> sqrt(x), pow(x, 1),
 *     x*1, 1*x, x+0, 0+x, x-0, x/1 -> x.
 * A reduction applies only when the result has x's dtype and shape, so no
 * broadcast or promotion is lost.  Known differences from the unreduced op
 * (documented in docs/semantics.md): x+0 keeps the sign of a -0, and pow(x, 0.5)
 * gives sqrt's -0 and NaN for -0 and -inf where pow gives +0 and +inf. */
#include "record.h"
#include "../../exec/base/runtime.h"
#include "../../exec/interp/refmath.h"

#define NO_SLOT UINT32_MAX

static bool is_const_value(const pe_port *p, double v) { return pe_port_is_uniform(p) && p->value == v; }

static double operand_value(const pe_port *p, pe_dtype ctype) { return pe_ref_round_to(ctype, p->value); }

/* The folded value when every operand is a uniform constant. */
static double folded_value(pe_op op, pe_port *const *in, int n, pe_dtype dtype, pe_dtype ctype, bool *weak)
{
    double v[PE_PORT_MAX_INPUTS] = {0, 0, 0};
    *weak = true;
    for (int i = 0; i < n; i++) {
        /* cond's condition and cast's operand keep their own type */
        bool own_type = (op == PE_OP_cond && i == 0) || op == PE_OP_cast;
        v[i] = own_type ? in[i]->value : operand_value(in[i], ctype);
        *weak = *weak && in[i]->weak;
    }
    *weak = *weak && op != PE_OP_cast;
    if (ctype == PE_I32 && dtype == PE_I32 && pe_ref_is_integer_op(op))
        return pe_ref_map_i32(op, (int32_t)v[0], (int32_t)v[1], (int32_t)v[2]);
    return pe_ref_map(op, v[0], v[1], v[2]);
}

/* Can operand x stand for the result? */
static bool same_as(const pe_port *x, pe_dtype dtype, int rank, const int64_t *shape)
{
    if (x->dtype != dtype || x->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if (x->shape[d] != shape[d]) return false;
    return true;
}

pe_fold_plan pe_fold_decide(pe_op op, pe_port *const *in, int n, pe_dtype dtype, pe_dtype ctype, int rank,
                            const int64_t *shape)
{
    pe_fold_plan none = {PE_FOLD_NONE, 0, false, 0, PE_OP_constant};
    bool all_const = !pe_dtype_is_complex(dtype) && !pe_dtype_is_complex(ctype);
    for (int i = 0; i < n; i++) all_const = all_const && pe_port_is_uniform(in[i]) && !pe_dtype_is_complex((pe_dtype)in[i]->dtype);
    if (all_const) {
        pe_fold_plan c = {PE_FOLD_CONSTANT, 0, false, 0, PE_OP_constant};
        c.value = folded_value(op, in, n, dtype, ctype, &c.weak);
        return c;
    }
    if (n != 2) return none;
    const pe_port *x = in[0], *k = in[1];
    pe_fold_plan first = {PE_FOLD_OPERAND, 0, false, 0, PE_OP_constant}, second = first;
    second.operand = 1;
    switch (op) {
    case PE_OP_pow:
        if (!same_as(x, dtype, rank, shape) || !pe_port_is_uniform(k)) return none;
        if (k->value == 1.0) return first;
        if (k->value == 2.0) return (pe_fold_plan){PE_FOLD_REWRITE, 0, false, 0, PE_OP_mul};  /* x*x */
        if (k->value == 0.5) return (pe_fold_plan){PE_FOLD_REWRITE, 0, false, 0, PE_OP_sqrt}; /* sqrt(x) */
        return none;
    case PE_OP_mul:
        if (is_const_value(k, 1.0) && same_as(x, dtype, rank, shape)) return first;
        if (is_const_value(x, 1.0) && same_as(k, dtype, rank, shape)) return second;
        return none;
    case PE_OP_add:
        if (is_const_value(k, 0.0) && same_as(x, dtype, rank, shape)) return first;
        if (is_const_value(x, 0.0) && same_as(k, dtype, rank, shape)) return second;
        return none;
    case PE_OP_sub:
        if (is_const_value(k, 0.0) && same_as(x, dtype, rank, shape)) return first;
        return none;
    case PE_OP_div:
        if (is_const_value(k, 1.0) && same_as(x, dtype, rank, shape)) return first;
        return none;
    default:
        return none;
    }
}

uint32_t pe_fold_map(const pe_site *s, pe_op op, pe_port *const *in, const uint32_t *in_idx, int n,
                     pe_dtype dtype, pe_dtype ctype, int rank, const int64_t *shape)
{
    pe_fold_plan plan = pe_fold_decide(op, in, n, dtype, ctype, rank, shape);
    switch (plan.kind) {
    case PE_FOLD_CONSTANT: return pe_make_constant(dtype, rank, shape, plan.value, plan.weak, s);
    case PE_FOLD_OPERAND: return in_idx[plan.operand];
    case PE_FOLD_REWRITE: {
        uint32_t x[2] = {in_idx[0], in_idx[0]}; /* pow(x, 2) -> x*x, pow(x, 0.5) -> sqrt(x) */
        return pe_enqueue_op(s, plan.op, x, pe_op_table[plan.op].arity, dtype, ctype, rank, shape, NULL, 0);
    }
    case PE_FOLD_NONE: break;
    }
    return NO_SLOT;
}
