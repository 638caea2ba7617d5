/* dtypes.c — the dtype fact table, expanded from dtypes.def, and the
 * functions the runtime asks it through. */
#include "dtypes.h"

const pe_dtype_info pe_dtype_table[PE_DTYPE__COUNT] = {
#define PE_DTYPE(e, name, size, is_float, rank, c_type, generated) \
    [PE_##e] = {name, size, is_float, rank, generated, #c_type},
#include "dtypes.def"
};

/* A row per pe_dtype, in the enum's order (PE_DTYPE_ROW_x == PE_x). */
#define PE_DTYPE(e, name, size, is_float, rank, c_type, generated) \
    _Static_assert((int)PE_DTYPE_ROW_##e == (int)PE_##e, "dtypes.def rows follow pe_dtype's order");
#include "dtypes.def"
_Static_assert((int)PE_DTYPE__COUNT == (int)PE_C128 + 1, "dtypes.def has a row for every pe_dtype");

size_t pe_dtype_size(pe_dtype t) { return pe_dtype_valid(t) ? pe_dtype_table[t].size : 0; }

const char *pe_dtype_name(pe_dtype t) { return pe_dtype_valid(t) ? pe_dtype_table[t].name : "?"; }
