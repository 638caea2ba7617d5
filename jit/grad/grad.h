/* grad.h — automatic differentiation's module (jit/grad): the rules of
 * irformat/ops_grad.def (grad_rules.c, and the rules of their own in
 * grad_views.c, grad_linalg.c, grad_order.c, written in grad_rules.h's
 * vocabulary) and the sweeps over the derivative tape (grad.c:
 * pe_grad_enable, pe_grad, pe_jvp).  Every derivative is
 * recorded as ordinary operations through the API's entry points, at the
 * site of the pe_grad or pe_jvp call: fused, cached, checked and placed
 * like the program around it. */
#ifndef PE_GRAD_GRAD_H
#define PE_GRAD_GRAD_H

#include "../record/tape.h"

/* One node's differentiation: its operands' and result's handles (held by
 * the tape), at the caller's site. */
typedef struct {
    const pe_site *s;
    const pe_tape_node *node;
    pe_array x[PE_PORT_MAX_INPUTS];
    pe_array y;
} pe_grad_step;

typedef enum { PE_GRAD_KIND_MAP, PE_GRAD_KIND_REDUCE, PE_GRAD_KIND_RULE, PE_GRAD_KIND_ZERO,
               PE_GRAD_KIND_UNSUPPORTED } pe_grad_kind;

/* The row's kind, and for UNSUPPORTED why. */
pe_grad_kind pe_grad_kind_of(pe_op op, const char **why);
/* Reverse mode: the contribution to each operand i with wanted[i] of the
 * result's adjoint g (adj[i] stays {0} where none flows), of any shape that
 * broadcasts to or from the operand's (the caller fits it). */
void pe_grad_vjp(const pe_grad_step *r, pe_array g, const bool *wanted, pe_array *adj);
/* Forward mode: the result's tangent from the operands' (t[i] {0}: zero),
 * {0} when it is zero. */
pe_array pe_grad_jvp(const pe_grad_step *r, const pe_array *t);
/* v summed over what broadcasting repeated, or broadcast, to the shape,
 * and cast to t: a new reference. */
pe_array pe_grad_fit(const pe_site *s, pe_array v, int rank, const int64_t *shape, pe_dtype t);

#endif
