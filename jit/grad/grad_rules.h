/* grad_rules.h — the vocabulary derivative rules are written in (jit/grad):
 * a rule's step r, its operands X0..X2 and result Y, and the API's
 * operations at the site of the pe_grad or pe_jvp call (S), as short
 * names; the rules of their own that irformat/ops_grad.def's RULE rows name
 * (grad_views.c: dot, views, conj, complex; grad_linalg.c: spectra,
 * products, LU, sparse; grad_order.c: scans, sort, bins, scatters); and the
 * helpers they share (grad_rules.c).  Private to jit/grad. */
#ifndef PE_GRAD_GRAD_RULES_H
#define PE_GRAD_GRAD_RULES_H

#include "grad.h"

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
#define CONJ(a) pe_grad_conj(r, a)

/* whether a is complex (a live handle's dtype) */
bool pe_grad_is_complex(pe_array a);
/* conj(a) of a complex a, a itself else (no operation recorded) */
pe_array pe_grad_conj(const pe_grad_step *r, pe_array a);
/* operand i's port (the tape holds it) */
const pe_port *pe_grad_operand(const pe_grad_step *r, int i);
/* zeros of port p's shape and dtype */
pe_array pe_grad_zeros_like(const pe_grad_step *r, const pe_port *p);
/* operand i's tangent, zeros where it has none (for maps of several operands) */
pe_array pe_grad_tangent_or_zeros(const pe_grad_step *r, const pe_array *t, int i);

/* the rules of their own, one pair per RULE row */
#define PE_GRAD_MAP(name, d0, d1, d2)
#define PE_GRAD_REDUCE(name, w)
#define PE_GRAD_RULE(name)                                                                               \
    void pe_grad_vjp_##name(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj); \
    pe_array pe_grad_jvp_##name(const pe_grad_step *r, const pe_array *t);
#define PE_GRAD_ZERO(name)
#define PE_GRAD_UNSUPPORTED(name, why)
#include "../../irformat/ops_grad.def"

#endif
