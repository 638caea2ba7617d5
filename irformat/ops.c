/* ops.c — the catalog's per-op fact table, expanded from ops.def. */
#include "ops.h"

const pe_op_info pe_op_table[PE_OP__COUNT] = {
#define PE_OP(name, kind, arity, fusible, cost, result) \
    [PE_OP_##name] = {#name, PE_KIND_##kind, arity, fusible, cost, PE_RESULT_##result},
#include "ops.def"
};
