/* sparse.c — pe_spmv, the CSR matrix times a vector, on the host: the row
 * loop the CPU code generator made for the value dtype
 * (exec/cpu/cpu_spmv.c; the provisioning compiles or loads it at the
 * first call and lends it here, pe_intrinsics_use_spmv_code: this stage
 * cannot call up), run in parallel on PE's thread pool (the CPU executor
 * lends its launcher: pe_intrinsics_set_pool), each row's sum in column
 * order, f32 accumulated in double and rounded once.  Without generated
 * code (the CPU JIT off: no toolchain; its compilation failed) the
 * interpreter's reference computes the call (long double, one thread).
 *
 * The operands are the matrix's structure (i32: row_ptr of n_rows + 1, then
 * col_idx of nnz), its values and x.  No index is used unchecked, and the
 * checks cost no pass of their own: the loop checks each row's offsets and
 * its columns as it reads them, and a launch that saw a bad row sets a
 * flag; the ends, which no row checks, are checked here.  A set flag makes
 * the call fail, the first fault in row order named by the interpreter's
 * scan (pe_csr_fault), at pe_spmv's line. */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "intrinsics.h"
#include "../interp/ref_linalg.h"

static pe_spmv_code_fn spmv_code;

void pe_intrinsics_use_spmv_code(pe_spmv_code_fn code) { spmv_code = code; }

bool pe_spmv_fits(pe_intrinsic_args *a)
{
    if (a->n_members != 1 || a->n_in != 3) return false;
    const pe_port *y = a->members[0], *st = a->in[0], *v = a->in[1], *x = a->in[2];
    pe_dtype t = (pe_dtype)y->dtype;
    if ((t != PE_F32 && t != PE_F64) || y->rank != 1 || st->dtype != PE_I32 || st->rank != 1 || v->dtype != t ||
        v->rank != 1 || x->dtype != t || x->rank != 1)
        return false;
    return v->numel <= INT32_MAX && x->numel - 1 <= INT32_MAX && st->numel == y->numel + 1 + v->numel;
}

bool pe_spmv_run(pe_intrinsic_args *a)
{
    const pe_port *y = a->members[0], *st = a->in[0], *v = a->in[1], *x = a->in[2];
    int64_t n_rows = y->numel, nnz = v->numel;
    const int32_t *rp = st->buf, *col = rp + n_rows + 1;
    if (!a->out[0]) return true;
    if (rp[0] != 0 || rp[n_rows] != nnz || x->numel == 0) { /* the ends, which no row checks; no x[0] to read */
        a->code = PE_E_ARG;
        if (pe_csr_fault(rp, col, n_rows, nnz, x->numel, a->why, sizeof a->why)) return false;
        memset(a->out[0], 0, pe_port_bytes(y)); /* no columns, so no entries: every row's sum is 0 */
        return true;
    }
    pe_range_fn rows = spmv_code ? spmv_code((pe_dtype)y->dtype, &a->generated) : NULL;
    if (!rows) return pe_ref_linalg(a->members[0], a->in, a->why, sizeof a->why, &a->code);
    uint32_t n_cols = (uint32_t)x->numel; /* at most 2^31 (fits) */
    _Atomic uint32_t bad;
    atomic_init(&bad, 0);
    void *args[PE_SPMV_ARGS] = {[PE_SPMV_ROW_PTR] = (void *)rp, [PE_SPMV_COL] = (void *)col, [PE_SPMV_VALUES] = v->buf,
                                [PE_SPMV_X] = x->buf, [PE_SPMV_Y] = a->out[0], [PE_SPMV_NNZ] = &nnz,
                                [PE_SPMV_N_COLS] = &n_cols, [PE_SPMV_BAD] = (void *)&bad};
    int64_t per_row = n_rows ? 1 + nnz / n_rows : 1; /* elements a row touches, for the pool's split */
    pe_intrinsic_parallel(rows, args, n_rows, per_row);
    a->generated |= PE_GENERATED_RAN;
    if (atomic_load(&bad) == 0) return true;
    a->code = PE_E_ARG;
    return !pe_csr_fault(rp, col, n_rows, nnz, x->numel, a->why, sizeof a->why);
}
