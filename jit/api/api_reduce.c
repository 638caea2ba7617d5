/* api_reduce.c — the entry points of the reductions, expanded from the
 * catalog: pe_<name>_at over all elements and pe_<name>_axis_at over one
 * axis, for every one-operand REDUCE row; pe_dot and pe_vdot (two operands)
 * below. */
#include "../record/record.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/site.h"
#define API_REDUCE(name)                                                                      \
    pe_array pe_##name##_at(const pe_site *s, pe_array a)                                     \
    {                                                                                         \
        PE_API_GUARD;                                                                         \
        return pe_record_reduce(PE_SITE_OR_CALLER(s), PE_OP_##name, &a, 1, -1, false, "pe_" #name); \
    }                                                                                         \
    pe_array pe_##name##_axis_at(const pe_site *s, pe_array a, int axis)                      \
    {                                                                                         \
        PE_API_GUARD;                                                                         \
        return pe_record_reduce(PE_SITE_OR_CALLER(s), PE_OP_##name, &a, 1, axis, true,        \
                                "pe_" #name "_axis");                                         \
    }

#define ENTRY(kind, arity, name) ENTRY_##kind##_##arity(name)
#define ENTRY_REDUCE_1(name) API_REDUCE(name)
#define ENTRY_REDUCE_2(name)
#define ENTRY_MAP_1(name)
#define ENTRY_MAP_2(name)
#define ENTRY_MAP_3(name)
#define ENTRY_IO_0(name)
#define ENTRY_GENERATOR_0(name)
#define ENTRY_GENERATOR_3(name)
#define ENTRY_VIEW_1(name)
#define ENTRY_VIEW_2(name)
#define ENTRY_INTRINSIC_1(name)
#define ENTRY_INTRINSIC_2(name)
#define ENTRY_INTRINSIC_3(name)

#define PE_OP(name, kind, arity, fusible, cost, result) ENTRY(kind, arity, name)
#include "../../irformat/ops.def"

pe_array pe_dot_at(const pe_site *s, pe_array a, pe_array b)
{
    PE_API_GUARD;
    pe_array in[2] = {a, b};
    return pe_record_reduce(PE_SITE_OR_CALLER(s), PE_OP_dot, in, 2, -1, false, "pe_dot");
}

pe_array pe_vdot_at(const pe_site *s, pe_array a, pe_array b)
{
    PE_API_GUARD;
    pe_array in[2] = {a, b};
    return pe_record_reduce(PE_SITE_OR_CALLER(s), PE_OP_vdot, in, 2, -1, false, "pe_vdot");
}
