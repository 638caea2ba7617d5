/* cpu_ops.c — what the CPU code generator alone knows of each op,
 * expanded from cpu_ops.def (pe_cpu_op_table: the compute types it emits
 * the op in, whether a loop with it vectorises, its f32 primitive), and the
 * question the executor's fusion rules ask of it (pe_cpu_can_emit).  A file
 * of its own, calling no other piece: the pieces read the table, the
 * driver's fusion rules the predicate. */
#include "gccjit_emit.h"

const pe_cpu_op pe_cpu_op_table[PE_OP__COUNT] = {
#define PE_CPU_OP(name, emits, vectorises, f32_prim) [PE_OP_##name] = {PE_EMITS_##emits, vectorises, f32_prim},
#include "cpu_ops.def"
};

/* Exactly one row per op, in the catalog's order: a row missing, doubled or
 * out of place is a compile error here. */
enum {
#define PE_CPU_OP(name, ...) PE_CPU_OP_ROW_##name,
#include "cpu_ops.def"
    PE_CPU_OP_ROWS
};
_Static_assert((int)PE_CPU_OP_ROWS == (int)PE_OP__COUNT, "cpu_ops.def has a row for every op of ops.def");
#define PE_CPU_OP(name, ...) _Static_assert((int)PE_CPU_OP_ROW_##name == (int)PE_OP_##name, "cpu_ops.def follows ops.def's order");
#include "cpu_ops.def"

bool pe_cpu_can_emit(pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0)
{
    uint8_t emits = (unsigned)op < PE_OP__COUNT ? pe_cpu_op_table[op].emits : PE_EMITS_NONE;
    return pe_codegen_can_emit(emits, op, ctype, dtype, operand0);
}
