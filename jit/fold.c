/* fold.c — what a request can answer at record time, without queueing work:
 *   constant folding: every operand a uniform constant (pe_scalar, pe_fill, C
 *     scalars, earlier folds) gives a uniform constant, computed by the same
 *     reference math as the interpreter (exec/refmath.c);
 *   strength reduction: pow(x, 2) -> x*x, pow(x, 0.5) -> sqrt(x), pow(x, 1),
 *     x*1, 1*x, x+0, 0+x, x-0, x/1 -> x.
 * A reduction applies only when the result has x's dtype and shape, so no
 * broadcast or promotion is lost.  Known differences from the unreduced op
 * (documented in the README): x+0 keeps the sign of a -0, and pow(x, 0.5)
 * gives sqrt's -0 and NaN for -0 and -inf where pow gives +0 and +inf. */
#include "runtime.h"
#include "../exec/refmath.h"

#define NO_SLOT UINT32_MAX

static bool is_const(const pe_port *p) { return p->op == PE_OP_constant && p->state == PE_PORT_READY; }
static bool is_const_value(const pe_port *p, double v) { return is_const(p) && p->value == v; }

static double operand_value(const pe_port *p, pe_dtype ctype) { return pe_ref_round_to(ctype, p->value); }

static uint32_t fold_constants(const pe_site *s, pe_op op, pe_port *const *in, int n, pe_dtype dtype,
                               pe_dtype ctype, int rank, const int64_t *shape)
{
    double v[PE_PORT_MAX_INPUTS] = {0, 0, 0};
    bool weak = true;
    for (int i = 0; i < n; i++) {
        /* cond's condition and cast's operand keep their own type */
        bool own_type = (op == PE_OP_cond && i == 0) || op == PE_OP_cast;
        v[i] = own_type ? in[i]->value : operand_value(in[i], ctype);
        weak = weak && in[i]->weak;
    }
    double r;
    if (ctype == PE_I32 && dtype == PE_I32 && pe_ref_is_integer_op(op))
        r = pe_ref_map_i32(op, (int32_t)v[0], (int32_t)v[1], (int32_t)v[2]);
    else
        r = pe_ref_map(op, v[0], v[1], v[2]);
    return pe_make_constant(dtype, rank, shape, r, weak && op != PE_OP_cast, s);
}

/* Can operand x stand for the result? */
static bool same_as(const pe_port *x, pe_dtype dtype, int rank, const int64_t *shape)
{
    if (x->dtype != dtype || x->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if (x->shape[d] != shape[d]) return false;
    return true;
}

uint32_t pe_fold_map(const pe_site *s, pe_op op, pe_port *const *in, const uint32_t *in_idx, int n,
                     pe_dtype dtype, pe_dtype ctype, int rank, const int64_t *shape)
{
    bool all_const = true;
    for (int i = 0; i < n; i++) all_const = all_const && is_const(in[i]);
    if (all_const) return fold_constants(s, op, in, n, dtype, ctype, rank, shape);
    if (n != 2) return NO_SLOT;

    pe_port *x = in[0], *k = in[1];
    uint32_t xi = in_idx[0];
    switch (op) {
    case PE_OP_pow:
        if (!same_as(x, dtype, rank, shape) || !is_const(k)) return NO_SLOT;
        if (k->value == 1.0) return xi;
        if (k->value == 2.0) {
            uint32_t square[2] = {xi, xi};
            return pe_enqueue_op(s, PE_OP_mul, square, 2, dtype, ctype, rank, shape, NULL, 0);
        }
        if (k->value == 0.5) return pe_enqueue_op(s, PE_OP_sqrt, &xi, 1, dtype, ctype, rank, shape, NULL, 0);
        return NO_SLOT;
    case PE_OP_mul:
        if (is_const_value(k, 1.0) && same_as(x, dtype, rank, shape)) return xi;
        if (is_const_value(x, 1.0) && same_as(k, dtype, rank, shape)) return in_idx[1];
        return NO_SLOT;
    case PE_OP_add:
        if (is_const_value(k, 0.0) && same_as(x, dtype, rank, shape)) return xi;
        if (is_const_value(x, 0.0) && same_as(k, dtype, rank, shape)) return in_idx[1];
        return NO_SLOT;
    case PE_OP_sub:
        if (is_const_value(k, 0.0) && same_as(x, dtype, rank, shape)) return xi;
        return NO_SLOT;
    case PE_OP_div:
        if (is_const_value(k, 1.0) && same_as(x, dtype, rank, shape)) return xi;
        return NO_SLOT;
    default:
        return NO_SLOT;
    }
}
