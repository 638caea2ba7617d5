/* grad_order.c — the derivative rules of the order ops: running sums and
 * products (cumprod exact with zeros), sort (its adjoint goes back through
 * argsort's positions), bincount's weights and scatter_add. */
#include "grad_rules.h"

/* a reversed along axis (a view: a slice of step -1) */
static pe_array reversed(const pe_grad_step *r, pe_array a, int axis)
{
    int rank = r->node->rank;
    int64_t start[PE_MAX_RANK] = {0}, step[PE_MAX_RANK];
    for (int d = 0; d < rank; d++) step[d] = 1;
    start[axis] = r->node->shape[axis] - 1;
    step[axis] = -1;
    return pe_slice_step_at(S, a, start, r->node->shape, step);
}

/* cumprod along param[0], exact with zeros: before an axis' first zero,
 * d y_j / d x_i = y_j / x_i; at the first zero it is y'_j, the running
 * product with that zero read as 1; after it, nothing */
typedef struct {
    pe_array before, first, primed; /* no zero yet; the first zero; cumprod of x with it as 1 */
} cumprod_zeros;
static cumprod_zeros zeros_along(const pe_grad_step *r, int axis)
{
    pe_array zero = EQ(X0, C(0));
    pe_array seen = pe_cumsum_at(S, pe_cast_at(S, zero, PE_I32), axis);
    pe_array first = pe_and_at(S, zero, EQ(seen, pe__weak_int(1)));
    return (cumprod_zeros){EQ(seen, pe__weak_int(0)), first, pe_cumprod_at(S, COND(first, C(1), X0), axis)};
}
void pe_grad_vjp_cumprod(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    int axis = (int)r->node->param[0];
    if (!wanted[0] || r->node->shape[axis] == 0) return;
    cumprod_zeros z = zeros_along(r, axis);
    pe_array from_end = reversed(r, pe_cumsum_at(S, reversed(r, MUL(g, CONJ(Y)), axis), axis), axis);
    pe_array at_first = reversed(r, pe_cumsum_at(S, reversed(r, MUL(g, CONJ(z.primed)), axis), axis), axis);
    adj[0] = COND(z.before, DIV(from_end, CONJ(X0)), COND(z.first, at_first, C(0)));
}
pe_array pe_grad_jvp_cumprod(const pe_grad_step *r, const pe_array *t)
{
    int axis = (int)r->node->param[0];
    cumprod_zeros z = zeros_along(r, axis);
    pe_array before = MUL(Y, pe_cumsum_at(S, DIV(t[0], X0), axis));
    pe_array after = MUL(z.primed, pe_cumsum_at(S, COND(z.first, t[0], C(0)), axis));
    return COND(z.before, before, after);
}

/* cumsum along param[0]: the adjoint is the running sum from the other end */
void pe_grad_vjp_cumsum(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    int axis = (int)r->node->param[0];
    if (wanted[0] && r->node->shape[axis] > 0) adj[0] = reversed(r, pe_cumsum_at(S, reversed(r, g, axis), axis), axis);
}
pe_array pe_grad_jvp_cumsum(const pe_grad_step *r, const pe_array *t) { return pe_cumsum_at(S, t[0], (int)r->node->param[0]); }

/* sort along param[0] (param[1]: descending): result i along the axis is the
 * operand's element argsort[i]; its flat index names where adjoints go back */
static pe_array sorted_from(const pe_grad_step *r)
{
    int axis = (int)r->node->param[0], rank = r->node->rank;
    pe_array order = pe_argsort_at(S, X0, axis, r->node->param[1] != 0);
    pe_array flat = NONE;
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        pe_array coord = d == axis ? order : pe_index_at(S, PE_I32, rank, r->node->shape, d);
        pe_array term = MUL(coord, pe__weak_int(stride));
        flat = flat.h ? ADD(flat, term) : term;
        stride *= r->node->shape[d];
    }
    return flat;
}
void pe_grad_vjp_sort(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = pe_scatter_add_at(S, pe_grad_zeros_like(r, pe_grad_operand(r, 0)), sorted_from(r), g);
}
pe_array pe_grad_jvp_sort(const pe_grad_step *r, const pe_array *t) { return pe_gather_at(S, t[0], sorted_from(r)); }

/* bincount(idx, weights): each weight's adjoint is its bin's */
void pe_grad_vjp_bincount(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (r->node->n_in > 1 && wanted[1]) adj[1] = pe_gather_at(S, g, X0);
}
pe_array pe_grad_jvp_bincount(const pe_grad_step *r, const pe_array *t)
{
    return r->node->n_in > 1 && t[1].h ? pe_bincount_at(S, X0, t[1], r->node->shape[0]) : NONE;
}

/* scatter_add(target, idx, values) */
void pe_grad_vjp_scatter_add(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = g;
    if (wanted[2]) adj[2] = pe_gather_at(S, g, X1);
}
pe_array pe_grad_jvp_scatter_add(const pe_grad_step *r, const pe_array *t)
{
    return pe_scatter_add_at(S, pe_grad_tangent_or_zeros(r, t, 0), X1, pe_grad_tangent_or_zeros(r, t, 2));
}
