/* kir_schedule.c — a kernel body in one canonical order.
 *
 * The program generator appends a kernel's instructions in the order the
 * application recorded them, and C leaves the order of a call's arguments
 * to the compiler (gcc evaluates them right to left), so one computation
 * written with named intermediates or as one nested expression gave bodies
 * that differ only in order: two kernels to compile and to cache.
 * kir_schedule reorders the body depth first from its roots (stores and the
 * reduction, in their order), operands left to right, each value placed
 * just before its first use: the same computation gets the same body,
 * whatever the recording order.  (The order itself did not change the
 * speed: Black-Scholes's kernel ran in 28.8-29.0 ms in recorded order,
 * this one, or grouped by depth.)  Instructions no root reaches
 * are dropped (a value the kernel computed for nobody).  Every instruction
 * is pure, so the values are bitwise the same in any order. */
#include <string.h>

#include "kir.h"

typedef struct {
    const kir_kernel *k;
    uint16_t new_index[KIR_MAX_BODY]; /* UINT16_MAX: not placed yet */
    kir_inst out[KIR_MAX_BODY];
    int n_out;
} scheduler;

/* Places v after its operands (SSA: operands come before v in the body, so
 * the recursion is at most as deep as the body is long). */
static uint16_t place(scheduler *s, int v)
{
    if (s->new_index[v] != UINT16_MAX) return s->new_index[v];
    kir_inst in = s->k->body[v];
    int first, n = kir_value_operands(&in, &first);
    for (int j = first; j < first + n; j++) in.a[j] = place(s, in.a[j]);
    s->out[s->n_out] = in;
    return s->new_index[v] = (uint16_t)s->n_out++;
}

void kir_schedule(kir_kernel *k)
{
    scheduler s = {.k = k};
    memset(s.new_index, 0xff, sizeof s.new_index);
    for (int v = 0; v < k->n_body; v++)
        if (k->body[v].kind == KIR_STORE || k->body[v].kind == KIR_REDUCE) place(&s, v);
    memcpy(k->body, s.out, sizeof s.out[0] * (size_t)s.n_out);
    k->n_body = s.n_out;
}
