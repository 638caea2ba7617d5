/* ops.c — the catalog's per-op fact table, expanded from ops.def, and
 * which ops take complex operands, from ops_complex.def. */
#include "ops.h"

const pe_op_info pe_op_table[PE_OP__COUNT] = {
#define PE_OP(name, kind, arity, fusible, cost, result) \
    [PE_OP_##name] = {#name, PE_KIND_##kind, arity, fusible, cost, PE_RESULT_##result},
#include "ops.def"
};

typedef enum { COMPLEX_NO = 0, COMPLEX_SAME, COMPLEX_REAL, COMPLEX_BOOL } complex_rule;
static const unsigned char complex_rules[PE_OP__COUNT] = {
#define PE_OP_COMPLEX(name, gives) [PE_OP_##name] = COMPLEX_##gives,
#include "ops_complex.def"
};

int pe_op_takes_complex(pe_op op)
{
    if ((unsigned)op >= PE_OP__COUNT) return 0;
    return pe_op_table[op].kind == PE_KIND_VIEW || complex_rules[op] != COMPLEX_NO;
}

int pe_op_complex_gives_real(pe_op op) { return (unsigned)op < PE_OP__COUNT && complex_rules[op] == COMPLEX_REAL; }
