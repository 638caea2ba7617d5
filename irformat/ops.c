/* ops.c — the catalog's per-op fact table, expanded from ops.def, which
 * ops take complex operands, from ops_complex.def, and the check that
 * ops_intrinsic.def has a row for each intrinsic. */
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

/* ops_intrinsic.def has exactly one row per INTRINSIC op of ops.def: the
 * executors index their slots by op from those rows (a missing one would be
 * a NULL body at run time), so a row naming no op or an op of another kind,
 * a row doubled (its enumerator declared twice) or an intrinsic without its
 * row is a compile error here. */
enum {
#define PE_OP(name, kind, arity, fusible, cost, result) PE_KIND_OF_##name = PE_KIND_##kind,
#include "ops.def"
};
enum {
    PE_INTRINSIC_OPS = 0
#define PE_OP(name, kind, arity, fusible, cost, result) +(PE_KIND_##kind == PE_KIND_INTRINSIC)
#include "ops.def"
};
enum {
#define PE_OP_INTRINSIC(name, fits, host, reference) PE_INTRINSIC_ROW_##name,
#include "ops_intrinsic.def"
    PE_INTRINSIC_ROWS
};
#define PE_OP_INTRINSIC(name, fits, host, reference) \
    _Static_assert((int)PE_KIND_OF_##name == (int)PE_KIND_INTRINSIC, "ops_intrinsic.def: " #name " is an INTRINSIC op");
#include "ops_intrinsic.def"
_Static_assert((int)PE_INTRINSIC_ROWS == (int)PE_INTRINSIC_OPS, "ops_intrinsic.def has a row per INTRINSIC op");
