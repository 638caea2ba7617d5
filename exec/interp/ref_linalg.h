/* ref_linalg.h — the reference interpreter's intrinsics (ref_linalg.c). */
#ifndef PE_INTERP_REF_LINALG_H
#define PE_INTERP_REF_LINALG_H

#include "../base/runtime.h"

/* An intrinsic's value (matmul, the LU family) in long double from its
 * operands' values; false, with why and code, where it has none (a
 * singular matrix, pivots that are none). */
bool pe_ref_linalg(pe_port *p, pe_port *const *in, char *why, size_t n_why, pe_status *code);
#endif
