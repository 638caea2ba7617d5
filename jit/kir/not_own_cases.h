/* not_own_cases.h — the case labels of every op a generator does not write
 * itself (emission class other than OWN: irformat/ops_codegen.def), and of
 * PE_OP__COUNT, for the generators' switches over their own ops, which have
 * no default so that -Wswitch names an op a generator forgot.  Included
 * inside such a switch, where the ops of the other classes are emitted by
 * their class or never reach it (codegen.h: PE_CASE_UNLESS_OWN):
 *     switch (op) {
 *     #include "../../jit/kir/not_own_cases.h"
 *         break;
 *     case PE_OP_neg: ...
 * No include guard: each switch includes it again. */
#define PE_OP_CODEGEN PE_CASE_UNLESS_OWN
#include "../../irformat/ops_codegen.def"
case PE_OP__COUNT:
