/* codegen.c — the code generators' per-op table, expanded from
 * irformat/ops_codegen.def, and the facts every generator derives from it:
 * whether it emits an op in given types (from its backend's own column),
 * the C operators' spelling, which kernels it can take. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "../../irformat/fnv.h"

#define STEP(op, x, y) {PE_OP_##op, PE_LOWER_##x, PE_LOWER_##y}
#define LOWER2(a, b) {2, {a, b}}
#define LOWER3(a, b, c) {3, {a, b, c}}
#define PRIMITIVE {0, {{0, 0, 0}}}
#define PE_REDUCTION_NONE {PE_ACC_NONE, PE_ELEM_VALUE, 0.0}
#define PE_REDUCTION_SUM {PE_ACC_SUM, PE_ELEM_VALUE, 0.0}
#define PE_REDUCTION_DOT {PE_ACC_SUM, PE_ELEM_PRODUCT, 0.0}
#define PE_REDUCTION_SUM_ABS {PE_ACC_SUM, PE_ELEM_ABS, 0.0}
#define PE_REDUCTION_SUM_SQUARES {PE_ACC_SUM, PE_ELEM_SQUARE, 0.0}
#define PE_REDUCTION_MAX {PE_ACC_MAX, PE_ELEM_VALUE, -__builtin_inf()}
#define PE_REDUCTION_MIN {PE_ACC_MIN, PE_ELEM_VALUE, __builtin_inf()}
#define PE_REDUCTION_MAX_ABS {PE_ACC_MAX, PE_ELEM_ABS, 0.0} /* |x| >= 0: 0 is its identity */
#define PE_REDUCTION_PROD {PE_ACC_PROD, PE_ELEM_VALUE, 1.0}
#define PE_REDUCTION_ANY {PE_ACC_MAX, PE_ELEM_NONZERO, 0.0}
#define PE_REDUCTION_ALL {PE_ACC_MIN, PE_ELEM_NONZERO, 1.0}
#define PE_REDUCTION_ARGMAX {PE_ACC_ARGMAX, PE_ELEM_VALUE, -__builtin_inf()}
#define PE_REDUCTION_ARGMIN {PE_ACC_ARGMIN, PE_ELEM_VALUE, __builtin_inf()}
#define PE_REDUCTION_VAR {PE_ACC_VAR, PE_ELEM_VALUE, 0.0}

#define PE_EMISSION_NONE {PE_EMIT_NONE, PE_COP_NONE}
#define PE_EMISSION_LIBM {PE_EMIT_LIBM, PE_COP_NONE}
#define PE_EMISSION_BINOP(cop) {PE_EMIT_BINOP, PE_COP_##cop}
#define PE_EMISSION_CMP(cop) {PE_EMIT_CMP, PE_COP_##cop}
#define PE_EMISSION_OWN {PE_EMIT_OWN, PE_COP_NONE}

const pe_op_codegen pe_op_codegen_table[PE_OP__COUNT] = {
#define PE_OP_CODEGEN(name, libm, emission, f32_in_double, reduction, lowering) \
    [PE_OP_##name] = {libm, PE_EMISSION_##emission, f32_in_double, PE_REDUCTION_##reduction, lowering},
#include "../../irformat/ops_codegen.def"
};

/* Exactly one row per op, in the catalog's order: a row missing, doubled or
 * out of place is a compile error here. */
enum {
#define PE_OP_CODEGEN(name, ...) PE_CODEGEN_ROW_##name,
#include "../../irformat/ops_codegen.def"
    PE_CODEGEN_ROWS
};
_Static_assert((int)PE_CODEGEN_ROWS == (int)PE_OP__COUNT, "ops_codegen.def has a row for every op of ops.def");
#define PE_OP_CODEGEN(name, ...) \
    _Static_assert((int)PE_CODEGEN_ROW_##name == (int)PE_OP_##name, "ops_codegen.def follows ops.def's order");
#include "../../irformat/ops_codegen.def"

/* C's spelling of the BINOP and CMP operators (the emission column). */
static const char *const c_operator_text[PE_COP__COUNT] = {
    [PE_COP_NONE] = "", [PE_COP_PLUS] = "+", [PE_COP_MINUS] = "-", [PE_COP_MULT] = "*", [PE_COP_LT] = "<",
    [PE_COP_LE] = "<=", [PE_COP_GT] = ">",   [PE_COP_GE] = ">=",   [PE_COP_EQ] = "==",  [PE_COP_NE] = "!=",
};

const char *pe_c_operator_text(pe_c_operator cop) { return c_operator_text[cop]; }

static bool can_emit(uint8_t emits, pe_dtype ctype, pe_dtype dtype)
{
    if (!pe_dtype_valid(ctype) || !pe_dtype_valid(dtype)) return false;
    if (!pe_dtype_table[ctype].generated || !pe_dtype_table[dtype].generated) return false;
    return (emits >> ctype) & 1u;
}

/* An op with a complex compute type, result or first operand: the pair
 * lowering's (kir_complex.c), the same for both generators, which then see
 * its real steps only. */
static bool involves_complex(pe_dtype ctype, pe_dtype dtype, pe_dtype operand0)
{
    return pe_dtype_is_complex(ctype) || pe_dtype_is_complex(dtype) || pe_dtype_is_complex(operand0);
}

bool pe_codegen_can_emit(uint8_t emits, pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0)
{
    /* casts between any two generated dtypes */
    if (involves_complex(ctype, dtype, operand0)) return kir_complex_emittable(op, ctype, dtype, operand0);
    return (unsigned)op < PE_OP__COUNT && can_emit(emits, ctype, dtype);
}

bool pe_kernel_generatable(const kir_kernel *k, bool (*can_emit)(pe_op, pe_dtype, pe_dtype, pe_dtype))
{
    for (int v = 0; v < k->n_body; v++) {
        const kir_inst *in = &k->body[v];
        if (in->kind == KIR_GATHER && !can_emit(PE_OP_gather, (pe_dtype)in->dtype, (pe_dtype)in->dtype, (pe_dtype)in->dtype))
            return false;
        if (in->kind != KIR_OP) continue;
        pe_op op = (pe_op)in->op;
        if (op == PE_OP_constant && in->n == 0 && pe_dtype_is_float((pe_dtype)in->dtype)) continue; /* the pair lowering's */
        if (op >= PE_OP__COUNT || pe_op_composed(op) || !can_emit(op, (pe_dtype)in->ctype, (pe_dtype)in->dtype, (pe_dtype)in->ctype))
            return false;
    }
    return true;
}

/* PE_TEST_PERTURB_OP: the op whose results the CPU generator makes wrong
 * (tests only: gccjit_ops.c's perturbed), or -1. */
int pe_codegen_perturbed_op(void)
{
    const char *name = getenv("PE_TEST_PERTURB_OP");
    if (!name || !*name) return -1;
    for (int op = 0; op < PE_OP__COUNT; op++)
        if (strcmp(pe_op_table[op].name, name) == 0) return op;
    return -1;
}

uint32_t pe_codegen_build_stamp(void)
{
    /* the hash of every code generator's sources (CMake), so that no kernel
     * compiled by another version of them is ever loaded from disk */
    const char *stamp = PE_CODEGEN_HASH " " PE_VERSION_STRING;
    return (uint32_t)pe_fnv_string(PE_FNV_OFFSET, stamp);
}
