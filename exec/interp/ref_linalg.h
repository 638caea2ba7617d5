/* ref_linalg.h — the reference interpreter's intrinsics: each one's
 * reference declared from its row of irformat/ops_intrinsic.def, and what
 * they share (ref_linalg.c: matmul, the LU family, spmv; ref_fft.c: the
 * spectral ones; ref_order.c: scans, sorts, histograms and scatter). */
#ifndef PE_INTERP_REF_LINALG_H
#define PE_INTERP_REF_LINALG_H

#include "../base/runtime.h"

/* An intrinsic's value in long double from its operands' values (the
 * reference column: pe_ref_linalg for matmul, the LU family and spmv,
 * pe_ref_spectral for fft, ifft and conv_fft); false, with why and code,
 * where it has none (a singular matrix, pivots that are none, out of
 * memory).  A reference shared by several ops is declared again. */
#define PE_OP_INTRINSIC(name, fits, host, reference) \
    bool reference(pe_port *p, pe_port *const *in, char *why, size_t n_why, pe_status *code);
#include "../../irformat/ops_intrinsic.def"
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
/* pe_histogram's bins + 1 edges: lo + i * (hi - lo) / bins in double, the
 * last exactly hi, rounded to f32 for an f32 array (NumPy's bin type); the
 * interpreter's reference (ref_order.c) and the host's body
 * (exec/intrinsics/bins.c) share them. */
void pe_histogram_edges(double lo, double hi, int64_t bins, pe_dtype t, double *edges);

#endif
