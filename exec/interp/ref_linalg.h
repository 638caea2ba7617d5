/* ref_linalg.h — the reference interpreter's intrinsics (ref_linalg.c). */
#ifndef PE_INTERP_REF_LINALG_H
#define PE_INTERP_REF_LINALG_H

#include "../base/runtime.h"

/* An intrinsic's value (matmul, the LU family, spmv) in long double from its
 * operands' values; false, with why and code, where it has none (a
 * singular matrix, pivots that are none). */
bool pe_ref_linalg(pe_port *p, pe_port *const *in, char *why, size_t n_why, pe_status *code);
/* Element i of an intrinsic's operand (a uniform constant: its value) in
 * long double complex, and a result's element stored in its dtype (f32,
 * f64, i32, c64, c128; a real one takes the real part): the reference
 * intrinsics' reads and writes (ref_linalg.c, ref_fft.c). */
long double _Complex pe_ref_element(const pe_port *p, int64_t i);
void pe_ref_store(pe_port *p, int64_t i, long double _Complex v);
/* The first fault of a CSR structure in row order (row_ptr[0] not 0, an
 * offset below the last or past nnz, row_ptr[n_rows] not nnz, a column
 * outside [0, n_cols)): true with why set; false if there is none.  Reads
 * only what its checks allow (the interpreter's spmv, and the message of
 * exec/intrinsics/sparse.c's). */
bool pe_csr_fault(const int32_t *row_ptr, const int32_t *col, int64_t n_rows, int64_t nnz, int64_t n_cols, char *why,
                  size_t n_why);
#endif
