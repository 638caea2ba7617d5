/* grad_views.c — the derivative rules of the linear maps that move
 * values: dot and vdot, the views (reshape, transpose, slice, periodic,
 * spread, gather, concat: an adjoint puts each value back where it came
 * from, a scatter where several came from one), conj and complex. */
#include "grad_rules.h"

/* dot(a, b): the sum of a * b (broadcast) */
void pe_grad_vjp_dot(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = MUL(g, CONJ(X1));
    if (wanted[1]) adj[1] = MUL(g, CONJ(X0));
}
pe_array pe_grad_jvp_dot(const pe_grad_step *r, const pe_array *t)
{
    pe_array a = t[0].h ? pe_dot_at(S, t[0], X1) : NONE, b = t[1].h ? pe_dot_at(S, X0, t[1]) : NONE;
    return a.h && b.h ? ADD(a, b) : a.h ? a : b;
}
/* vdot(a, b): the sum of conj(a) * b */
void pe_grad_vjp_vdot(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = MUL(CONJ(g), X1);
    if (wanted[1]) adj[1] = MUL(g, X0);
}
pe_array pe_grad_jvp_vdot(const pe_grad_step *r, const pe_array *t)
{
    pe_array a = t[0].h ? pe_vdot_at(S, t[0], X1) : NONE, b = t[1].h ? pe_vdot_at(S, X0, t[1]) : NONE;
    return a.h && b.h ? ADD(a, b) : a.h ? a : b;
}

void pe_grad_vjp_reshape(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = pe_reshape_at(S, g, pe_grad_operand(r, 0)->rank, pe_grad_operand(r, 0)->shape);
}
pe_array pe_grad_jvp_reshape(const pe_grad_step *r, const pe_array *t)
{
    return pe_reshape_at(S, t[0], r->node->rank, r->node->shape);
}

/* transpose: axis d of the result is axis param[d] of the operand */
void pe_grad_vjp_transpose(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (!wanted[0]) return;
    int back[PE_MAX_RANK];
    for (int d = 0; d < r->node->rank; d++) back[r->node->param[d]] = d;
    adj[0] = pe_permute_at(S, g, back);
}
pe_array pe_grad_jvp_transpose(const pe_grad_step *r, const pe_array *t)
{
    int axes[PE_MAX_RANK];
    for (int d = 0; d < r->node->rank; d++) axes[d] = (int)r->node->param[d];
    return pe_permute_at(S, t[0], axes);
}

/* g's values added into zeros of x's shape at flat indices idx (a complex g part by part) */
static pe_array scatter_into_zeros(const pe_grad_step *r, const pe_port *x, pe_array idx, pe_array g)
{
    if (!pe_grad_is_complex(g)) return pe_scatter_add_at(S, pe_grad_zeros_like(r, x), idx, g);
    pe_dtype part = x->dtype == PE_C64 ? PE_F32 : PE_F64;
    pe_array zeros = pe_fill_at(S, part, x->rank, x->shape, 0.0);
    return pe_complex_at(S, pe_scatter_add_at(S, zeros, idx, pe_real_at(S, g)),
                         pe_scatter_add_at(S, zeros, idx, pe_imag_at(S, g)));
}

/* The adjoint of a view that copies each result element from one operand
 * element: the same view of the operand's flat indices names them, and the
 * adjoint adds each result element's adjoint there (a periodic tiling or a
 * strided slice sends several, or none, to one element). */
static pe_array scatter_back(const pe_grad_step *r, pe_array g, pe_array (*view)(const pe_grad_step *r, pe_array a))
{
    const pe_port *x = pe_grad_operand(r, 0);
    pe_array flat = pe_reshape_at(S, pe_arange_at(S, PE_I32, 0, (double)x->numel, 1), x->rank, x->shape);
    return scatter_into_zeros(r, x, view(r, flat), g);
}

static pe_array slice_of(const pe_grad_step *r, pe_array a)
{
    int rank = r->node->rank;
    return pe_slice_step_at(S, a, r->node->param, r->node->shape, r->node->param + rank);
}
void pe_grad_vjp_slice(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (!wanted[0]) return;
    const pe_port *x = pe_grad_operand(r, 0);
    int rank = r->node->rank;
    bool unit = true;
    for (int d = 0; d < rank; d++) unit &= r->node->param[rank + d] == 1;
    if (!unit) {
        adj[0] = scatter_back(r, g, slice_of);
        return;
    }
    pe_array a = g; /* a block: zeros padded around it, fused where read */
    for (int d = 0; d < rank; d++) {
        int64_t before = r->node->param[d], after = x->shape[d] - before - r->node->shape[d];
        if (before || after) a = pe_pad_at(S, a, d, before, after, PE_PAD_CONSTANT, 0.0);
    }
    adj[0] = a;
}
pe_array pe_grad_jvp_slice(const pe_grad_step *r, const pe_array *t) { return slice_of(r, t[0]); }

static pe_array periodic_of(const pe_grad_step *r, pe_array a) { return pe_periodic_at(S, a, r->node->rank, r->node->shape); }
void pe_grad_vjp_periodic(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = scatter_back(r, g, periodic_of);
}
pe_array pe_grad_jvp_periodic(const pe_grad_step *r, const pe_array *t) { return periodic_of(r, t[0]); }

/* spread: param[0] the axis, param[1] 1 where it was inserted (else a size-1 axis replicated) */
void pe_grad_vjp_spread(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (!wanted[0]) return;
    const pe_port *x = pe_grad_operand(r, 0);
    adj[0] = pe_reshape_at(S, pe_sum_axis_at(S, g, (int)r->node->param[0]), x->rank, x->shape);
}
pe_array pe_grad_jvp_spread(const pe_grad_step *r, const pe_array *t)
{
    int axis = (int)r->node->param[0];
    return pe_spread_at(S, t[0], axis, r->node->shape[axis]);
}

/* gather(a, index): result[i] = a.flat[index[i]]; the adjoint adds them back */
void pe_grad_vjp_gather(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = scatter_into_zeros(r, pe_grad_operand(r, 0), X1, g);
}
pe_array pe_grad_jvp_gather(const pe_grad_step *r, const pe_array *t) { return pe_gather_at(S, t[0], X1); }

/* concat(a, b, axis): the adjoint's two blocks */
void pe_grad_vjp_concat(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    int axis = (int)r->node->param[0], rank = r->node->rank;
    int64_t start[PE_MAX_RANK] = {0}, count[PE_MAX_RANK];
    for (int i = 0; i < 2; i++) {
        const pe_port *x = pe_grad_operand(r, i);
        for (int d = 0; d < rank; d++) count[d] = x->shape[d];
        start[axis] = i ? pe_grad_operand(r, 0)->shape[axis] : 0;
        if (wanted[i]) adj[i] = pe_slice_at(S, g, start, count);
    }
}
pe_array pe_grad_jvp_concat(const pe_grad_step *r, const pe_array *t)
{
    return pe_concat_at(S, pe_grad_tangent_or_zeros(r, t, 0), pe_grad_tangent_or_zeros(r, t, 1), (int)r->node->param[0]);
}

/* conj(z): the adjoint of an adjoint's conjugate, the tangent's conjugate */
void pe_grad_vjp_conj(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = CONJ(g);
}
pe_array pe_grad_jvp_conj(const pe_grad_step *r, const pe_array *t) { return CONJ(t[0]); }

/* complex(re, im): the adjoint's parts */
void pe_grad_vjp_complex(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = pe_real_at(S, g);
    if (wanted[1]) adj[1] = pe_imag_at(S, g);
}
pe_array pe_grad_jvp_complex(const pe_grad_step *r, const pe_array *t)
{
    return pe_complex_at(S, pe_grad_tangent_or_zeros(r, t, 0), pe_grad_tangent_or_zeros(r, t, 1));
}
