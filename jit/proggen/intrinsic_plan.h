/* intrinsic_plan.h — which library calls a batch makes (intrinsic_plan.c):
 * the ports each computes, its operands, and where in the sequence it runs. */
#ifndef PE_JIT_INTRINSIC_PLAN_H
#define PE_JIT_INTRINSIC_PLAN_H

#include "proggen.h"

typedef struct {
    uint32_t at;         /* the port at whose queue position the call runs */
    uint32_t members[4]; /* the ports it computes, in queue order */
    uint32_t bind[5];    /* its operands (program.h) */
    int n_members;
    uint8_t n_bind, flags;
} pe_intrinsic_call;

typedef struct {
    pe_intrinsic_call *calls;
    size_t n, cap;
    uint32_t *claimed; /* members a call computes at another port's position */
    size_t n_claimed, cap_claimed;
} pe_intrinsic_plan;

/* Plans the batch's calls (after liveness and the lazy views are decided;
 * it makes transposes that a call reads in place lazy); false when out of
 * memory. */
bool pe_intrinsic_plan_make(const pe_entry *entries, size_t n, uint32_t epoch, pe_intrinsic_plan *plan);
/* Whether a call computes port at another port's position (nothing to do at its own). */
bool pe_intrinsic_plan_claims(const pe_intrinsic_plan *plan, uint32_t port);
/* The call that runs at port's position, or NULL. */
const pe_intrinsic_call *pe_intrinsic_plan_at(const pe_intrinsic_plan *plan, uint32_t port);
/* The call as a program; false when out of memory. */
bool pe_intrinsic_program(const pe_intrinsic_call *call, pe_program *out);
void pe_intrinsic_plan_free(pe_intrinsic_plan *plan);
#endif
