/* grad_rules.c — the derivative of each operation: irformat/ops_grad.def's
 * rows expanded (element-wise partials, reductions' weights), the rules of
 * their own (views, dot, the intrinsics) and the helpers the rows' formulas
 * use.  Everything here records ordinary operations at the site of the
 * pe_grad or pe_jvp that asked; nothing is computed here. */
#include "grad.h"
#include "../record/record.h"

/* ------------------------------------------------ the rows' vocabulary */

#define S (r->s)
#define X0 (r->x[0])
#define X1 (r->x[1])
#define X2 (r->x[2])
#define Y (r->y)
#define NONE ((pe_array){0})
#define C(v) pe__weak_f64(v)
#define ADD(a, b) pe_add_at(S, a, b)
#define SUB(a, b) pe_sub_at(S, a, b)
#define MUL(a, b) pe_mul_at(S, a, b)
#define DIV(a, b) pe_div_at(S, a, b)
#define NEG(a) pe_neg_at(S, a)
#define RCP(a) DIV(C(1), a) /* rcp takes no complex operand */
#define POW(a, b) pe_pow_at(S, a, b)
#define EXP(a) pe_exp_at(S, a)
#define LOG(a) pe_log_at(S, a)
#define SQRT(a) pe_sqrt_at(S, a)
#define RSQRT(a) pe_rsqrt_at(S, a)
#define SIN(a) pe_sin_at(S, a)
#define COS(a) pe_cos_at(S, a)
#define TAN(a) pe_tan_at(S, a)
#define COT(a) pe_cot_at(S, a)
#define SINH(a) pe_sinh_at(S, a)
#define COSH(a) pe_cosh_at(S, a)
#define TANH(a) pe_tanh_at(S, a)
#define COTH(a) pe_coth_at(S, a)
#define ABS(a) pe_abs_at(S, a)
#define SIGN(a) pe_sign_at(S, a)
#define TRUNC(a) pe_trunc_at(S, a)
#define MAX(a, b) pe_max_at(S, a, b)
#define EQ(a, b) pe_eq_at(S, a, b)
#define COND(c, a, b) pe_cond_at(S, c, a, b)
#define CONJ(a) conj_of(r, a)
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

static bool is_complex(pe_array a)
{
    const pe_port *p = pe_port_peek(a, NULL);
    return p && pe_dtype_is_complex((pe_dtype)p->dtype);
}

/* conj(a) of a complex a, a itself else (no operation recorded) */
static pe_array conj_of(const pe_grad_step *r, pe_array a) { return is_complex(a) ? pe_conj_at(S, a) : a; }

/* Complex operands follow the convention that makes an adjoint the
 * gradient a descent steps against: the adjoint of z = x + iy is
 * dL/dx + i dL/dy (twice dL/d conj(z)), and an element-wise op passes
 * G * conj(d) back, its tangent d * T forward.  For the holomorphic ops
 * (add ... sqrt, pow) d is their derivative as for reals; the others
 * (abs, imag, arg: real results of a complex z) take the d whose real part
 * of d * T is their tangent: */
static pe_array abs_partial(const pe_grad_step *r, pe_array x) { return is_complex(x) ? DIV(CONJ(x), Y) : SIGN(x); }

static pe_array imag_unit(double v) { return pe__weak_c128(v * (_Complex double)1.0i); }

/* imag(z): Re(-i T) is Im(T); of a real operand nothing */
static pe_array imag_partial(const pe_grad_step *r, pe_array x) { (void)r; return is_complex(x) ? imag_unit(-1) : NONE; }

/* arg(z): Re(-i conj(z) T) / |z|^2; of a real operand (0 or pi) nothing */
static pe_array arg_partial(const pe_grad_step *r, pe_array x)
{
    return is_complex(x) ? MUL(imag_unit(-1), DIV(CONJ(x), SQ(pe_abs_at(S, x)))) : NONE;
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

static const pe_port *operand(const pe_grad_step *r, int i) { return pe_port_at(r->node->in[i]); }
static int reduced_axis(const pe_grad_step *r) { return (int)r->node->param[0]; }

static int64_t reduced_extent(const pe_grad_step *r)
{
    const pe_port *x = operand(r, 0);
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
#define PE_GRAD_RULE(name)                                                                       \
    static void vjp_##name(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj); \
    static pe_array jvp_##name(const pe_grad_step *r, const pe_array *t);
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
#define PE_GRAD_RULE(name) [PE_OP_##name] = {PE_GRAD_KIND_RULE, 0, 0, vjp_##name, jvp_##name, 0},
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

/* ---------------------------------------------------- rules of their own */

static pe_array zeros_like(const pe_grad_step *r, const pe_port *p)
{
    return pe_fill_at(S, (pe_dtype)p->dtype, p->rank, p->shape, 0.0);
}

/* an operand's tangent, zeros where it has none (for maps of several operands) */
static pe_array tangent_or_zeros(const pe_grad_step *r, const pe_array *t, int i)
{
    return t[i].h ? t[i] : zeros_like(r, operand(r, i));
}

/* dot(a, b): the sum of a * b (broadcast) */
static void vjp_dot(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = MUL(g, CONJ(X1));
    if (wanted[1]) adj[1] = MUL(g, CONJ(X0));
}
static pe_array jvp_dot(const pe_grad_step *r, const pe_array *t)
{
    pe_array a = t[0].h ? pe_dot_at(S, t[0], X1) : NONE, b = t[1].h ? pe_dot_at(S, X0, t[1]) : NONE;
    return a.h && b.h ? ADD(a, b) : a.h ? a : b;
}
/* vdot(a, b): the sum of conj(a) * b */
static void vjp_vdot(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = MUL(CONJ(g), X1);
    if (wanted[1]) adj[1] = MUL(g, X0);
}
static pe_array jvp_vdot(const pe_grad_step *r, const pe_array *t)
{
    pe_array a = t[0].h ? pe_vdot_at(S, t[0], X1) : NONE, b = t[1].h ? pe_vdot_at(S, X0, t[1]) : NONE;
    return a.h && b.h ? ADD(a, b) : a.h ? a : b;
}

static void vjp_reshape(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = pe_reshape_at(S, g, operand(r, 0)->rank, operand(r, 0)->shape);
}
static pe_array jvp_reshape(const pe_grad_step *r, const pe_array *t)
{
    return pe_reshape_at(S, t[0], r->node->rank, r->node->shape);
}

/* transpose: axis d of the result is axis param[d] of the operand */
static void vjp_transpose(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (!wanted[0]) return;
    int back[PE_MAX_RANK];
    for (int d = 0; d < r->node->rank; d++) back[r->node->param[d]] = d;
    adj[0] = pe_permute_at(S, g, back);
}
static pe_array jvp_transpose(const pe_grad_step *r, const pe_array *t)
{
    int axes[PE_MAX_RANK];
    for (int d = 0; d < r->node->rank; d++) axes[d] = (int)r->node->param[d];
    return pe_permute_at(S, t[0], axes);
}

/* The adjoint of a view that copies each result element from one operand
 * element: the same view of the operand's flat indices names them, and the
 * adjoint adds each result element's adjoint there (a periodic tiling or a
 * strided slice sends several, or none, to one element). */
/* g's values added into zeros of x's shape at flat indices idx (a complex g part by part) */
static pe_array scatter_into_zeros(const pe_grad_step *r, const pe_port *x, pe_array idx, pe_array g)
{
    if (!is_complex(g)) return pe_scatter_add_at(S, zeros_like(r, x), idx, g);
    pe_dtype part = x->dtype == PE_C64 ? PE_F32 : PE_F64;
    pe_array zeros = pe_fill_at(S, part, x->rank, x->shape, 0.0);
    return pe_complex_at(S, pe_scatter_add_at(S, zeros, idx, pe_real_at(S, g)),
                         pe_scatter_add_at(S, zeros, idx, pe_imag_at(S, g)));
}

static pe_array scatter_back(const pe_grad_step *r, pe_array g, pe_array (*view)(const pe_grad_step *r, pe_array a))
{
    const pe_port *x = operand(r, 0);
    pe_array flat = pe_reshape_at(S, pe_arange_at(S, PE_I32, 0, (double)x->numel, 1), x->rank, x->shape);
    return scatter_into_zeros(r, x, view(r, flat), g);
}

static pe_array slice_of(const pe_grad_step *r, pe_array a)
{
    int rank = r->node->rank;
    return pe_slice_step_at(S, a, r->node->param, r->node->shape, r->node->param + rank);
}
static void vjp_slice(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (!wanted[0]) return;
    const pe_port *x = operand(r, 0);
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
static pe_array jvp_slice(const pe_grad_step *r, const pe_array *t) { return slice_of(r, t[0]); }

static pe_array periodic_of(const pe_grad_step *r, pe_array a) { return pe_periodic_at(S, a, r->node->rank, r->node->shape); }
static void vjp_periodic(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = scatter_back(r, g, periodic_of);
}
static pe_array jvp_periodic(const pe_grad_step *r, const pe_array *t) { return periodic_of(r, t[0]); }

/* spread: param[0] the axis, param[1] 1 where it was inserted (else a size-1 axis replicated) */
static void vjp_spread(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (!wanted[0]) return;
    const pe_port *x = operand(r, 0);
    adj[0] = pe_reshape_at(S, pe_sum_axis_at(S, g, (int)r->node->param[0]), x->rank, x->shape);
}
static pe_array jvp_spread(const pe_grad_step *r, const pe_array *t)
{
    int axis = (int)r->node->param[0];
    return pe_spread_at(S, t[0], axis, r->node->shape[axis]);
}

/* gather(a, index): result[i] = a.flat[index[i]]; the adjoint adds them back */
static void vjp_gather(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = scatter_into_zeros(r, operand(r, 0), X1, g);
}
static pe_array jvp_gather(const pe_grad_step *r, const pe_array *t) { return pe_gather_at(S, t[0], X1); }

/* concat(a, b, axis): the adjoint's two blocks */
static void vjp_concat(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    int axis = (int)r->node->param[0], rank = r->node->rank;
    int64_t start[PE_MAX_RANK] = {0}, count[PE_MAX_RANK];
    for (int i = 0; i < 2; i++) {
        const pe_port *x = operand(r, i);
        for (int d = 0; d < rank; d++) count[d] = x->shape[d];
        start[axis] = i ? operand(r, 0)->shape[axis] : 0;
        if (wanted[i]) adj[i] = pe_slice_at(S, g, start, count);
    }
}
static pe_array jvp_concat(const pe_grad_step *r, const pe_array *t)
{
    return pe_concat_at(S, tangent_or_zeros(r, t, 0), tangent_or_zeros(r, t, 1), (int)r->node->param[0]);
}

/* conj(z): the adjoint of an adjoint's conjugate, the tangent's conjugate */
static void vjp_conj(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = CONJ(g);
}
static pe_array jvp_conj(const pe_grad_step *r, const pe_array *t) { return CONJ(t[0]); }

/* complex(re, im): the adjoint's parts */
static void vjp_complex(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = pe_real_at(S, g);
    if (wanted[1]) adj[1] = pe_imag_at(S, g);
}
static pe_array jvp_complex(const pe_grad_step *r, const pe_array *t)
{
    return pe_complex_at(S, tangent_or_zeros(r, t, 0), tangent_or_zeros(r, t, 1));
}

/* fft over param[0] axes (the last, or the last two): F is linear, its
 * adjoint F^H = n ifft; ifft's, fft / n (n: the transformed elements) */
static double transformed(const pe_grad_step *r)
{
    double n = 1;
    for (int d = 0; d < r->node->param[0]; d++) n *= (double)r->node->shape[r->node->rank - 1 - d];
    return n;
}
static void vjp_fft(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = MUL(pe_ifft_at(S, g, (int)r->node->param[0]), C(transformed(r)));
}
static pe_array jvp_fft(const pe_grad_step *r, const pe_array *t) { return pe_fft_at(S, t[0], (int)r->node->param[0]); }
static void vjp_ifft(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = DIV(pe_fft_at(S, g, (int)r->node->param[0]), C(transformed(r)));
}
static pe_array jvp_ifft(const pe_grad_step *r, const pe_array *t) { return pe_ifft_at(S, t[0], (int)r->node->param[0]); }

/* conv_fft(a, kernel) over a's last param[0] axes, "same" size:
 * y[i] = sum_v a[i + o - v] k[v], o = (K - 1) / 2 per axis (param[1] = 1:
 * a correlation, k[v] read as conj(k[K - 1 - v])).  By a: the other of the
 * pair (correlate for conv, conv for correlate) of g with the kernel,
 * shifted by one along an axis of even K (its centre is the other side);
 * by the kernel: k_adj[v] = sum_i g[i] conj(a[i + o - v]), the cross-
 * correlation at lags v - o, from FFTs of g and a zero-padded to n + K
 * (no wrap), rolled by o and cut to K (summed over a's batch axes by the
 * fit); a correlation's kernel takes it reversed and conjugated. */
static void vjp_conv_fft(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    int dims = (int)r->node->param[0], rank = r->node->rank;
    bool correlation = r->node->param[1] != 0;
    const pe_port *a = operand(r, 0), *k = operand(r, 1);
    if (wanted[0]) {
        pe_array padded = g;
        int64_t start[PE_MAX_RANK] = {0}, count[PE_MAX_RANK];
        for (int d = 0; d < rank; d++) count[d] = a->shape[d];
        for (int d = 0; d < dims; d++) {
            int axis = rank - 1 - d;
            if (k->shape[k->rank - 1 - d] % 2) continue;
            padded = pe_pad_at(S, padded, axis, 0, 1, PE_PAD_CONSTANT, 0.0);
            start[axis] = 1;
        }
        pe_array other = correlation ? pe_conv_at(S, padded, X1) : pe_correlate_at(S, padded, X1);
        adj[0] = pe_slice_at(S, other, start, count);
    }
    if (wanted[1]) {
        pe_array pg = g, pa = X0;
        for (int d = 0; d < dims; d++) {
            int axis = rank - 1 - d;
            int64_t kd = k->shape[k->rank - 1 - d];
            pg = pe_pad_at(S, pg, axis, 0, kd, PE_PAD_CONSTANT, 0.0);
            pa = pe_pad_at(S, pa, axis, 0, kd, PE_PAD_CONSTANT, 0.0);
        }
        pe_array lags = pe_ifft_at(S, MUL(pe_fft_at(S, pg, dims), pe_conj_at(S, pe_fft_at(S, pa, dims))), dims);
        int64_t start[PE_MAX_RANK] = {0}, count[PE_MAX_RANK], step[PE_MAX_RANK];
        for (int d = 0; d < rank; d++) count[d] = a->shape[d], step[d] = 1;
        for (int d = 0; d < dims; d++) {
            int axis = rank - 1 - d;
            int64_t kd = k->shape[k->rank - 1 - d];
            lags = pe_roll_at(S, lags, (kd - 1) / 2, axis);
            count[axis] = kd;
            if (correlation) start[axis] = kd - 1, step[axis] = -1; /* reversed */
        }
        pe_array cut = pe_slice_step_at(S, lags, start, count, step);
        adj[1] = correlation ? pe_conj_at(S, cut) : cut;
    }
}
static pe_array jvp_conv_fft(const pe_grad_step *r, const pe_array *t)
{
    bool correlation = r->node->param[1] != 0;
    pe_array by_a = NONE, by_k = NONE;
    if (t[0].h) by_a = correlation ? pe_correlate_at(S, t[0], X1) : pe_conv_at(S, t[0], X1);
    if (t[1].h) by_k = correlation ? pe_correlate_at(S, X0, t[1]) : pe_conv_at(S, X0, t[1]);
    return by_a.h && by_k.h ? ADD(by_a, by_k) : by_a.h ? by_a : by_k;
}

/* matmul(a, b): a [m, k] by b [k, n] or [k] */
static void vjp_matmul(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    bool vector = operand(r, 1)->rank == 1;
    if (wanted[0])
        adj[0] = vector ? MUL(pe_expand_dims_at(S, g, 1), pe_expand_dims_at(S, CONJ(X1), 0))
                        : pe_matmul_at(S, g, pe_transpose_at(S, CONJ(X1)));
    if (wanted[1]) adj[1] = pe_matmul_at(S, pe_transpose_at(S, CONJ(X0)), g);
}
static pe_array jvp_matmul(const pe_grad_step *r, const pe_array *t)
{
    pe_array a = t[0].h ? pe_matmul_at(S, t[0], X1) : NONE, b = t[1].h ? pe_matmul_at(S, X0, t[1]) : NONE;
    return a.h && b.h ? ADD(a, b) : a.h ? a : b;
}

/* lu(a): L and U packed (P a = L U).  With F = L^-1 P dA U^-1 the packed
 * tangent is L tril(F, -1) + triu(F) U; the adjoint of a packed adjoint
 * (Lb strictly below the diagonal, Ub on and above) is
 * P^T L^-H (tril(L^H Lb, -1) + triu(Ub U^H)) U^-H.  The pivots are those
 * of a factoring again (the op's sibling port is no operand of it);
 * inverses of L and U are solves through their own factors. */
static pe_array triangle(const pe_grad_step *r, pe_array a, bool lower)
{
    const int64_t *shape = operand(r, 0)->shape; /* n x n: lu's a, lu_solve's lu */
    pe_array row = pe_index_at(S, PE_I32, 2, shape, 0), col = pe_index_at(S, PE_I32, 2, shape, 1);
    return COND(lower ? pe_gt_at(S, row, col) : pe_le_at(S, row, col), a, C(0));
}
static pe_array hermitian(const pe_grad_step *r, pe_array a) { return pe_transpose_at(S, CONJ(a)); }
static pe_array solve(const pe_grad_step *r, pe_array m, pe_array b) /* m^-1 b */
{
    pe_array lu, pivots;
    pe_lu_at(S, m, &lu, &pivots); /* an error is raised there, and the result is invalid */
    return pe_lu_solve_at(S, lu, pivots, b);
}
static pe_array unpack(const pe_grad_step *r, pe_array *l, pe_array *u)
{
    pe_array lu, pivots;
    pe_lu_at(S, X0, &lu, &pivots);
    return pe_lu_unpack_at(S, lu, pivots, l, u);
}
/* lu_solve(lu, pivots, b) = A^-1 b = U^-1 L^-1 P b.  By b: the adjoint
 * solves with A^H (A = P^T L U); by the factors, with c = U x:
 * Ub = -U^-H g x^H on and above the diagonal, Lb = -(L^-H U^-H g) c^H
 * below it, which lu's rule carries on to a (right-hand sides as columns) */
static pe_array as_columns(const pe_grad_step *r, pe_array v)
{
    return operand(r, 2)->rank == 1 ? pe_expand_dims_at(S, v, 1) : v;
}
static void vjp_lu_solve(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    pe_array l, u, p = pe_lu_unpack_at(S, X0, X1, &l, &u);
    if (wanted[2]) adj[2] = solve(r, hermitian(r, pe_matmul_at(S, pe_transpose_at(S, p), pe_matmul_at(S, l, u))), g);
    if (wanted[0]) {
        pe_array gu = solve(r, hermitian(r, u), as_columns(r, g)); /* U^-H g */
        pe_array x = as_columns(r, Y), c = pe_matmul_at(S, u, x);
        pe_array lb = NEG(pe_matmul_at(S, solve(r, hermitian(r, l), gu), hermitian(r, c)));
        pe_array ub = NEG(pe_matmul_at(S, gu, hermitian(r, x)));
        adj[0] = ADD(triangle(r, lb, true), triangle(r, ub, false));
    }
}
static pe_array jvp_lu_solve(const pe_grad_step *r, const pe_array *t)
{
    pe_array by_b = t[2].h ? pe_lu_solve_at(S, X0, X1, t[2]) : NONE;
    if (!t[0].h) return by_b;
    pe_array l, u;
    pe_lu_unpack_at(S, X0, X1, &l, &u);
    pe_array x = as_columns(r, Y), c = pe_matmul_at(S, u, x);
    pe_array inner = ADD(pe_matmul_at(S, triangle(r, t[0], false), x), solve(r, l, pe_matmul_at(S, triangle(r, t[0], true), c)));
    pe_array by_lu = NEG(solve(r, u, inner));
    if (operand(r, 2)->rank == 1) by_lu = pe_reshape_at(S, by_lu, 1, r->node->shape);
    return by_b.h ? ADD(by_b, by_lu) : by_lu;
}

static pe_array reversed(const pe_grad_step *r, pe_array a, int axis);

static void vjp_lu(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (!wanted[0]) return;
    pe_array l, u, p = unpack(r, &l, &u);
    pe_array m = ADD(triangle(r, pe_matmul_at(S, hermitian(r, l), triangle(r, g, true)), true),
                     triangle(r, pe_matmul_at(S, triangle(r, g, false), hermitian(r, u)), false));
    pe_array left = solve(r, hermitian(r, l), m);                                   /* L^-H m */
    pe_array both = hermitian(r, solve(r, u, hermitian(r, left)));                   /* (U^-1 left^H)^H */
    adj[0] = pe_matmul_at(S, pe_transpose_at(S, p), both);
}
static pe_array jvp_lu(const pe_grad_step *r, const pe_array *t)
{
    pe_array l, u, p = unpack(r, &l, &u);
    pe_array left = solve(r, l, pe_matmul_at(S, p, t[0]));                           /* L^-1 P dA */
    pe_array f = pe_transpose_at(S, solve(r, pe_transpose_at(S, u), pe_transpose_at(S, left))); /* left U^-1 */
    return ADD(pe_matmul_at(S, l, triangle(r, f, true)), pe_matmul_at(S, triangle(r, f, false), u));
}

/* spmv(structure, values, x): structure is row_ptr (rows + 1) then col_idx
 * (one per value), both i32.  Each value's row is how many row starts after
 * the first it has reached; the adjoints and tangents are gathers, scatters
 * and bincounts over the nonzeros (real values: PE's spmv takes no complex) */
static void nonzeros(const pe_grad_step *r, pe_array *row, pe_array *col)
{
    int64_t rows = r->node->shape[0], nnz = operand(r, 1)->numel;
    pe_array starts = pe_slice_at(S, X0, (int64_t[]){1}, (int64_t[]){rows - 1});
    pe_array reached = pe_slice_at(S, pe_bincount_at(S, starts, NONE, nnz + 1), (int64_t[]){0}, (int64_t[]){nnz});
    *row = pe_cumsum_at(S, reached, 0);
    *col = pe_slice_at(S, X0, (int64_t[]){rows + 1}, (int64_t[]){nnz});
}
static void vjp_spmv(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    pe_array row, col;
    nonzeros(r, &row, &col);
    pe_array g_row = pe_gather_at(S, g, row);
    if (wanted[1]) adj[1] = MUL(g_row, pe_gather_at(S, X2, col));
    if (wanted[2]) adj[2] = pe_scatter_add_at(S, zeros_like(r, operand(r, 2)), col, MUL(g_row, X1));
}
static pe_array jvp_spmv(const pe_grad_step *r, const pe_array *t)
{
    pe_array row, col;
    nonzeros(r, &row, &col);
    pe_array terms = NONE;
    if (t[1].h) terms = MUL(t[1], pe_gather_at(S, X2, col));
    if (t[2].h) terms = terms.h ? ADD(terms, MUL(X1, pe_gather_at(S, t[2], col))) : MUL(X1, pe_gather_at(S, t[2], col));
    return terms.h ? pe_bincount_at(S, row, terms, r->node->shape[0]) : NONE;
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
static void vjp_cumprod(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    int axis = (int)r->node->param[0];
    if (!wanted[0] || r->node->shape[axis] == 0) return;
    cumprod_zeros z = zeros_along(r, axis);
    pe_array from_end = reversed(r, pe_cumsum_at(S, reversed(r, MUL(g, CONJ(Y)), axis), axis), axis);
    pe_array at_first = reversed(r, pe_cumsum_at(S, reversed(r, MUL(g, CONJ(z.primed)), axis), axis), axis);
    adj[0] = COND(z.before, DIV(from_end, CONJ(X0)), COND(z.first, at_first, C(0)));
}
static pe_array jvp_cumprod(const pe_grad_step *r, const pe_array *t)
{
    int axis = (int)r->node->param[0];
    cumprod_zeros z = zeros_along(r, axis);
    pe_array before = MUL(Y, pe_cumsum_at(S, DIV(t[0], X0), axis));
    pe_array after = MUL(z.primed, pe_cumsum_at(S, COND(z.first, t[0], C(0)), axis));
    return COND(z.before, before, after);
}

/* cumsum along param[0]: the adjoint is the running sum from the other end */
static pe_array reversed(const pe_grad_step *r, pe_array a, int axis)
{
    int rank = r->node->rank;
    int64_t start[PE_MAX_RANK] = {0}, step[PE_MAX_RANK];
    for (int d = 0; d < rank; d++) step[d] = 1;
    start[axis] = r->node->shape[axis] - 1;
    step[axis] = -1;
    return pe_slice_step_at(S, a, start, r->node->shape, step);
}
static void vjp_cumsum(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    int axis = (int)r->node->param[0];
    if (wanted[0] && r->node->shape[axis] > 0) adj[0] = reversed(r, pe_cumsum_at(S, reversed(r, g, axis), axis), axis);
}
static pe_array jvp_cumsum(const pe_grad_step *r, const pe_array *t) { return pe_cumsum_at(S, t[0], (int)r->node->param[0]); }

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
static void vjp_sort(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = pe_scatter_add_at(S, zeros_like(r, operand(r, 0)), sorted_from(r), g);
}
static pe_array jvp_sort(const pe_grad_step *r, const pe_array *t) { return pe_gather_at(S, t[0], sorted_from(r)); }

/* bincount(idx, weights): each weight's adjoint is its bin's */
static void vjp_bincount(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (r->node->n_in > 1 && wanted[1]) adj[1] = pe_gather_at(S, g, X0);
}
static pe_array jvp_bincount(const pe_grad_step *r, const pe_array *t)
{
    return r->node->n_in > 1 && t[1].h ? pe_bincount_at(S, X0, t[1], r->node->shape[0]) : NONE;
}

/* scatter_add(target, idx, values) */
static void vjp_scatter_add(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj)
{
    if (wanted[0]) adj[0] = g;
    if (wanted[2]) adj[2] = pe_gather_at(S, g, X1);
}
static pe_array jvp_scatter_add(const pe_grad_step *r, const pe_array *t)
{
    return pe_scatter_add_at(S, tangent_or_zeros(r, t, 0), X1, tangent_or_zeros(r, t, 2));
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
