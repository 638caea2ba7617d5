/* api_map.c — the entry points of the element-wise operations, expanded from
 * the catalog: one pe_<name>_at per MAP row whose result type follows from
 * its operands.  pe_cast (explicit result type) is written out below. */
#include "../record/record.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/site.h"
#define API_MAP_1(name)                                                             \
    pe_array pe_##name##_at(const pe_site *s, pe_array a)                           \
    {                                                                               \
        PE_API_GUARD;                                                               \
        pe_array in[1] = {a};                                                       \
        return pe_record_map(PE_SITE_OR_CALLER(s), PE_OP_##name, in, 1, PE_F32, "pe_" #name); \
    }
#define API_MAP_2(name)                                                             \
    pe_array pe_##name##_at(const pe_site *s, pe_array a, pe_array b)               \
    {                                                                               \
        PE_API_GUARD;                                                               \
        pe_array in[2] = {a, b};                                                    \
        return pe_record_map(PE_SITE_OR_CALLER(s), PE_OP_##name, in, 2, PE_F32, "pe_" #name); \
    }
#define API_MAP_3(name)                                                             \
    pe_array pe_##name##_at(const pe_site *s, pe_array a, pe_array b, pe_array c)   \
    {                                                                               \
        PE_API_GUARD;                                                               \
        pe_array in[3] = {a, b, c};                                                 \
        return pe_record_map(PE_SITE_OR_CALLER(s), PE_OP_##name, in, 3, PE_F32, "pe_" #name); \
    }

/* Only MAP rows with a derived result type get a generated entry point. */
#define ENTRY(kind, arity, result, name) ENTRY_##kind##_##result(arity, name)
#define ENTRY_MAP_ARITH(arity, name) API_MAP_##arity(name)
#define ENTRY_MAP_FLOAT(arity, name) API_MAP_##arity(name)
#define ENTRY_MAP_BOOL(arity, name) API_MAP_##arity(name)
#define ENTRY_MAP_SAME(arity, name) API_MAP_##arity(name)
#define ENTRY_MAP_COMPLEX(arity, name) API_MAP_##arity(name)
#define ENTRY_MAP_EXPLICIT(arity, name)
#define ENTRY_REDUCE_ARITH(arity, name)
#define ENTRY_REDUCE_FLOAT(arity, name)
#define ENTRY_REDUCE_BOOL(arity, name)
#define ENTRY_REDUCE_SAME(arity, name)
#define ENTRY_REDUCE_INDEX(arity, name)
#define ENTRY_IO_EXPLICIT(arity, name)
#define ENTRY_GENERATOR_EXPLICIT(arity, name)
#define ENTRY_VIEW_SAME(arity, name)
#define ENTRY_INTRINSIC_SAME(arity, name)
#define ENTRY_INTRINSIC_EXPLICIT(arity, name)
#define ENTRY_INTRINSIC_ARITH(arity, name)
#define ENTRY_INTRINSIC_INDEX(arity, name)

#define PE_OP(name, kind, arity, fusible, cost, result) ENTRY(kind, arity, result, name)
#include "../../irformat/ops.def"

pe_array pe_cast_at(const pe_site *s, pe_array a, pe_dtype t)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (pe_rt.initialised && !pe_check_dtype(s, "pe_cast", t)) {
        pe_release_temps(&a, 1);
        return pe_invalid_result(s, PE_OP_cast, PE_E_TYPE);
    }
    return pe_record_map(s, PE_OP_cast, &a, 1, t, "pe_cast");
}
