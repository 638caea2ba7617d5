/* dtypes.h — the dtype catalog as C: each dtype's facts, expanded from
 * dtypes.def (the only place they are written).  jit/runtime.h includes it,
 * so the whole runtime reaches pe_dtype_size and its kin as before. */
#ifndef PE_IRFORMAT_DTYPES_H
#define PE_IRFORMAT_DTYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pe.h"

enum {
#define PE_DTYPE(e, name, size, is_float, rank, c_type, generated) PE_DTYPE_ROW_##e,
#include "dtypes.def"
    PE_DTYPE__COUNT
};

typedef struct {
    const char *name;      /* "f32" */
    uint8_t size;          /* bytes per element */
    bool is_float;         /* real floating point */
    uint8_t promote_rank;  /* bool < i32 < f32 < f64 */
    bool generated;        /* the code generators make kernels of it */
    const char *c_type;    /* "float" */
} pe_dtype_info;

extern const pe_dtype_info pe_dtype_table[PE_DTYPE__COUNT];

/* Out-of-range values (a damaged file, a bad cast) get 0, "?" and false. */
size_t pe_dtype_size(pe_dtype t);
const char *pe_dtype_name(pe_dtype t);
static inline bool pe_dtype_valid(pe_dtype t) { return (unsigned)t < PE_DTYPE__COUNT; }
static inline bool pe_dtype_is_float(pe_dtype t) { return pe_dtype_valid(t) && pe_dtype_table[t].is_float; }
/* Complex dtypes: an element is C99's float complex / double complex, the
 * real part first; pe_dtype_real_part is the type of each part (c64: f32,
 * c128: f64; a real type is its own), pe_dtype_complex_of the complex type
 * with parts of at least t's precision (f64: c128; bool, i32, f32: c64). */
static inline bool pe_dtype_is_complex(pe_dtype t) { return t == PE_C64 || t == PE_C128; }
static inline pe_dtype pe_dtype_real_part(pe_dtype t) { return t == PE_C64 ? PE_F32 : t == PE_C128 ? PE_F64 : t; }
static inline pe_dtype pe_dtype_complex_of(pe_dtype t) { return t == PE_F64 || t == PE_C128 ? PE_C128 : PE_C64; }

#endif
