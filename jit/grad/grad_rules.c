/* grad_rules.c — the derivative of each operation: irformat/ops_grad.def's
 * rows expanded (element-wise partials, reductions' weights) into the table
 * both modes dispatch on, the helpers the rows' formulas and the rules use,
 * and fitting a derivative to its operand's shape and dtype.  The rules of
 * their own are grad_views.c, grad_linalg.c and grad_order.c.  Everything
 * here records ordinary operations at the site of the pe_grad or pe_jvp that
 * asked; nothing is computed here. */
#include "grad_rules.h"
#include "../record/record.h"

/* ------------------------------------------------ the rows' vocabulary */

#define ABS_PARTIAL(x) abs_partial(r, x)
#define IMAG_PARTIAL(x) imag_partial(r, x)
#define ARG_PARTIAL(x) arg_partial(r, x)
#define SQ(a) square(r, a)
#define IND(c) indicator(r, c)
#define TIE_LT(a, b) tie_lt(r, a, b)
#define TIE_EQ(a, b) IND(EQ(a, b))
#define COUNT_EQ(a, b) count_eq(r, a, b)
#define PROD_OTHERS(x, yb) prod_others(r, x, yb)
#define MEAN_B(x) mean_b(r, x)
#define N C((double)reduced_extent(r))
#define YB expand(r, Y)

/* The real type the node computes in: what indicators and weights take. */
static pe_dtype real_type(const pe_grad_step *r)
{
    if (r->node->ctype == PE_F32 || r->node->ctype == PE_F64) return (pe_dtype)r->node->ctype;
    if (r->node->dtype == PE_F32 || r->node->dtype == PE_F64) return (pe_dtype)r->node->dtype;
    return PE_F64;
}

static pe_array square(const pe_grad_step *r, pe_array a) { return MUL(a, a); }

bool pe_grad_is_complex(pe_array a)
{
    const pe_port *p = pe_port_peek(a, NULL);
    return p && pe_dtype_is_complex((pe_dtype)p->dtype);
}

pe_array pe_grad_conj(const pe_grad_step *r, pe_array a) { return pe_grad_is_complex(a) ? pe_conj_at(S, a) : a; }

/* Complex operands follow the convention that makes an adjoint the
 * gradient a descent steps against: the adjoint of z = x + iy is
 * dL/dx + i dL/dy (twice dL/d conj(z)), and an element-wise op passes
 * G * conj(d) back, its tangent d * T forward.  For the holomorphic ops
 * (add ... sqrt, pow) d is their derivative as for reals; the others
 * (abs, imag, arg: real results of a complex z) take the d whose real part
 * of d * T is their tangent: */
static pe_array abs_partial(const pe_grad_step *r, pe_array x) { return pe_grad_is_complex(x) ? DIV(CONJ(x), Y) : SIGN(x); }

static pe_array imag_unit(double v) { return pe__weak_c128(v * (_Complex double)1.0i); }

/* imag(z): Re(-i T) is Im(T); of a real operand nothing */
static pe_array imag_partial(const pe_grad_step *r, pe_array x) { (void)r; return pe_grad_is_complex(x) ? imag_unit(-1) : NONE; }

/* arg(z): Re(-i conj(z) T) / |z|^2; of a real operand (0 or pi) nothing */
static pe_array arg_partial(const pe_grad_step *r, pe_array x)
{
    return pe_grad_is_complex(x) ? MUL(imag_unit(-1), DIV(CONJ(x), SQ(pe_abs_at(S, x)))) : NONE;
}

/* 1 where c holds, else 0, in the node's real type */
static pe_array indicator(const pe_grad_step *r, pe_array c)
{
    return pe_cast_at(S, pe_cast_at(S, c, PE_BOOL), real_type(r));
}

/* a's share of a tie-breaking min(a, b): 1 where a < b, 1/2 where equal (JAX's split) */
static pe_array tie_lt(const pe_grad_step *r, pe_array a, pe_array b)
{
    return ADD(IND(pe_lt_at(S, a, b)), MUL(C(0.5), TIE_EQ(a, b)));
}

const pe_port *pe_grad_operand(const pe_grad_step *r, int i) { return pe_port_at(r->node->in[i]); }
static int reduced_axis(const pe_grad_step *r) { return (int)r->node->param[0]; }

static int64_t reduced_extent(const pe_grad_step *r)
{
    const pe_port *x = pe_grad_operand(r, 0);
    return reduced_axis(r) < 0 ? x->numel : x->shape[reduced_axis(r)];
}

/* a reduction's result (or adjoint) with its reduced axis back as extent 1: it broadcasts against the operand */
static pe_array expand(const pe_grad_step *r, pe_array a)
{
    return reduced_axis(r) < 0 ? a : pe_expand_dims_at(S, a, reduced_axis(r));
}

static pe_array reduce_sum(const pe_grad_step *r, pe_array a)
{
    return expand(r, reduced_axis(r) < 0 ? pe_sum_at(S, a) : pe_sum_axis_at(S, a, reduced_axis(r)));
}

static pe_array count_eq(const pe_grad_step *r, pe_array a, pe_array b) { return reduce_sum(r, TIE_EQ(a, b)); }

static pe_array mean_b(const pe_grad_step *r, pe_array x)
{
    return expand(r, reduced_axis(r) < 0 ? pe_mean_at(S, x) : pe_mean_axis_at(S, x, reduced_axis(r)));
}

/* The product of the other elements: y / x where x is not zero; where it is,
 * the product of the nonzero ones if it is the only zero, else 0 (no
 * division by zero: the gradient of a product with zeros is exact). */
static pe_array prod_others(const pe_grad_step *r, pe_array x, pe_array yb)
{
    pe_array zero = EQ(x, C(0));
    pe_array zeros = reduce_sum(r, IND(zero));
    pe_array nonzero = COND(zero, C(1), x);
    pe_array others = expand(r, reduced_axis(r) < 0 ? pe_prod_at(S, nonzero) : pe_prod_axis_at(S, nonzero, reduced_axis(r)));
    return COND(zero, COND(EQ(zeros, C(1)), others, C(0)), DIV(yb, x));
}

pe_array pe_grad_zeros_like(const pe_grad_step *r, const pe_port *p)
{
    return pe_fill_at(S, (pe_dtype)p->dtype, p->rank, p->shape, 0.0);
}

pe_array pe_grad_tangent_or_zeros(const pe_grad_step *r, const pe_array *t, int i)
{
    return t[i].h ? t[i] : pe_grad_zeros_like(r, pe_grad_operand(r, i));
}

/* ---------------------------------------------- rows: partials, weights */

#define PE_GRAD_MAP(name, d0, d1, d2)                                                  \
    static pe_array partial_##name(const pe_grad_step *r, int i)                        \
    {                                                                                   \
        (void)r;                                                                        \
        switch (i) {                                                                    \
        case 0: return d0;                                                              \
        case 1: return d1;                                                              \
        default: return d2;                                                             \
        }                                                                               \
    }
#define PE_GRAD_REDUCE(name, w) \
    static pe_array weight_##name(const pe_grad_step *r) { (void)r; return w; }
#define PE_GRAD_RULE(name)
#define PE_GRAD_ZERO(name)
#define PE_GRAD_UNSUPPORTED(name, why)
#include "../../irformat/ops_grad.def"

/* Every op has exactly one row, in the catalog's order. */
enum {
#define PE_GRAD_MAP(name, d0, d1, d2) PE_GRAD_ROW_##name,
#define PE_GRAD_REDUCE(name, w) PE_GRAD_ROW_##name,
#define PE_GRAD_RULE(name) PE_GRAD_ROW_##name,
#define PE_GRAD_ZERO(name) PE_GRAD_ROW_##name,
#define PE_GRAD_UNSUPPORTED(name, why) PE_GRAD_ROW_##name,
#include "../../irformat/ops_grad.def"
    PE_GRAD_ROWS
};
#define ROW_IN_ORDER(name) \
    _Static_assert((int)PE_GRAD_ROW_##name == (int)PE_OP_##name, "ops_grad.def: " #name " is out of the catalog's order");
#define PE_GRAD_MAP(name, d0, d1, d2) ROW_IN_ORDER(name)
#define PE_GRAD_REDUCE(name, w) ROW_IN_ORDER(name)
#define PE_GRAD_RULE(name) ROW_IN_ORDER(name)
#define PE_GRAD_ZERO(name) ROW_IN_ORDER(name)
#define PE_GRAD_UNSUPPORTED(name, why) ROW_IN_ORDER(name)
#include "../../irformat/ops_grad.def"
_Static_assert((int)PE_GRAD_ROWS == (int)PE_OP__COUNT, "ops_grad.def has a row per op of ops.def");

typedef struct {
    pe_grad_kind kind;
    pe_array (*partial)(const pe_grad_step *r, int i);
    pe_array (*weight)(const pe_grad_step *r);
    void (*vjp)(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj);
    pe_array (*jvp)(const pe_grad_step *r, const pe_array *t);
    const char *why;
} grad_rule;

static const grad_rule rules[PE_OP__COUNT] = {
#define PE_GRAD_MAP(name, d0, d1, d2) [PE_OP_##name] = {PE_GRAD_KIND_MAP, partial_##name, 0, 0, 0, 0},
#define PE_GRAD_REDUCE(name, w) [PE_OP_##name] = {PE_GRAD_KIND_REDUCE, 0, weight_##name, 0, 0, 0},
#define PE_GRAD_RULE(name) [PE_OP_##name] = {PE_GRAD_KIND_RULE, 0, 0, pe_grad_vjp_##name, pe_grad_jvp_##name, 0},
#define PE_GRAD_ZERO(name) [PE_OP_##name] = {PE_GRAD_KIND_ZERO, 0, 0, 0, 0, 0},
#define PE_GRAD_UNSUPPORTED(name, why) [PE_OP_##name] = {PE_GRAD_KIND_UNSUPPORTED, 0, 0, 0, 0, why},
#include "../../irformat/ops_grad.def"
};

pe_grad_kind pe_grad_kind_of(pe_op op, const char **why)
{
    if (why) *why = rules[op].why;
    return rules[op].kind;
}

/* ---------------------------------------------------------- both modes */

void pe_grad_vjp(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    const grad_rule *rule = &rules[r->node->op];
    switch (rule->kind) {
    case PE_GRAD_KIND_MAP:
        for (int i = 0; i < r->node->n_in; i++) {
            if (!wanted[i]) continue;
            pe_array d = rule->partial(r, i);
            if (d.h) adj[i] = MUL(g, CONJ(d));
        }
        break;
    case PE_GRAD_KIND_REDUCE:
        if (wanted[0]) adj[0] = MUL(expand(r, g), CONJ(rule->weight(r)));
        break;
    case PE_GRAD_KIND_RULE:
        rule->vjp(r, g, wanted, adj);
        break;
    case PE_GRAD_KIND_ZERO: case PE_GRAD_KIND_UNSUPPORTED:
        break;
    }
}

pe_array pe_grad_jvp(const pe_grad_step *r, const pe_array *t)
{
    const grad_rule *rule = &rules[r->node->op];
    pe_array sum = NONE;
    switch (rule->kind) {
    case PE_GRAD_KIND_MAP:
        for (int i = 0; i < r->node->n_in; i++) {
            if (!t[i].h) continue;
            pe_array d = rule->partial(r, i);
            if (!d.h) continue;
            pe_array term = MUL(t[i], d);
            sum = sum.h ? ADD(sum, term) : term;
        }
        return sum;
    case PE_GRAD_KIND_REDUCE: {
        pe_array w = MUL(t[0], rule->weight(r));
        return reduced_axis(r) < 0 ? pe_sum_at(S, w) : pe_sum_axis_at(S, w, reduced_axis(r));
    }
    case PE_GRAD_KIND_RULE:
        return rule->jvp(r, t);
    case PE_GRAD_KIND_ZERO: case PE_GRAD_KIND_UNSUPPORTED:
        break;
    }
    return NONE;
}

/* ------------------------------------------------------------ fitting */

pe_array pe_grad_fit(const pe_site *s, pe_array v, int rank, const int64_t *shape, pe_dtype t)
{
    const pe_port *p = pe_port_peek(v, NULL);
    if (!p) return pe_cast_at(s, v, t); /* invalid: the cast says so */
    if (pe_dtype_is_complex((pe_dtype)p->dtype) && !pe_dtype_is_complex(t)) { /* a real operand's share: the real part */
        v = pe_real_at(s, v);
        p = pe_port_peek(v, NULL);
        if (!p) return pe_cast_at(s, v, t);
    }
    int vr = p->rank;
    int64_t vs[PE_MAX_RANK];
    for (int d = 0; d < vr; d++) vs[d] = p->shape[d];
    /* sum away what broadcasting repeated: leading axes, then extents 1 */
    while (vr > rank) {
        v = pe_sum_axis_at(s, v, 0);
        for (int d = 1; d < vr; d++) vs[d - 1] = vs[d];
        vr--;
    }
    for (int d = vr - 1; d >= 0; d--) { /* aligned now: an extent 1 the value repeats is summed, kept as 1 */
        if (shape[rank - vr + d] != 1 || vs[d] == 1) continue;
        v = pe_expand_dims_at(s, pe_sum_axis_at(s, v, d), d);
        vs[d] = 1;
    }
    bool same = vr == rank;
    for (int d = 0; same && d < rank; d++) same = vs[d] == shape[d];
    if (!same) v = pe_periodic_at(s, v, rank, shape); /* broadcast up: an adjoint of a reduction's kind */
    return pe_cast_at(s, v, t);
}

