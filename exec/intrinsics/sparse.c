/* sparse.c — pe_spmv, the CSR matrix times a vector, on the host: a
 * hand-written loop over rows, run in parallel on PE's thread pool (the CPU
 * executor lends its launcher: pe_intrinsics_set_pool), each row's sum in
 * column order, f32 accumulated in double and rounded once.
 *
 * The operands are the matrix's structure (i32: row_ptr of n_rows + 1, then
 * col_idx of nnz), its values and x.  No index is used unchecked, and the
 * checks cost no pass of their own: each row checks its offsets (0 <= lo <=
 * hi <= nnz: a row whose neighbour is wrong may run on another thread, so
 * each checks both ends) and its columns as it reads them (a column out of
 * range marks the row and ends it: a branch never taken, cheaper than a
 * select on every entry).  A marked row makes the
 * call fail, the first fault in row order named by the interpreter's scan
 * (pe_csr_fault), at pe_spmv's line. */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "intrinsics.h"
#include "../interp/ref_linalg.h"

static pe_parallel_fn pool_run;

void pe_intrinsics_set_pool(pe_parallel_fn run) { pool_run = run; }

typedef struct {
    const int32_t *row_ptr, *col;
    const void *values, *x;
    void *y;
    int64_t nnz;
    uint32_t n_cols;
    _Atomic int64_t first_bad_row; /* INT64_MAX: none */
} spmv_job;

static void mark_bad(spmv_job *j, int64_t row)
{
    int64_t seen = atomic_load_explicit(&j->first_bad_row, memory_order_relaxed);
    while (row < seen && !atomic_compare_exchange_weak(&j->first_bad_row, &seen, row)) {
    }
}

/* One loop per dtype: the element type and the accumulator's. */
#define SPMV_ROWS(name, elem, acc)                                                                          \
    static void name(int64_t begin, int64_t end, void *const *args)                                        \
    {                                                                                                       \
        spmv_job *j = args[0];                                                                              \
        const int32_t *rp = j->row_ptr, *col = j->col;                                                      \
        const elem *v = j->values, *x = j->x;                                                               \
        elem *y = j->y;                                                                                     \
        uint32_t n_cols = j->n_cols;                                                                        \
        for (int64_t i = begin; i < end; i++) {                                                             \
            int32_t lo = rp[i], hi = rp[i + 1];                                                             \
            if (lo < 0 || lo > hi || hi > j->nnz) {                                                         \
                y[i] = 0;                                                                                   \
                mark_bad(j, i);                                                                             \
                continue;                                                                                   \
            }                                                                                               \
            acc s = 0;                                                                                      \
            for (int32_t k = lo; k < hi; k++) {                                                             \
                uint32_t c = (uint32_t)col[k];                                                              \
                if (__builtin_expect(c >= n_cols, 0)) {                                                     \
                    mark_bad(j, i);                                                                         \
                    break;                                                                                  \
                }                                                                                           \
                s += (acc)v[k] * (acc)x[c];                                                                 \
            }                                                                                               \
            y[i] = (elem)s;                                                                                 \
        }                                                                                                   \
    }
SPMV_ROWS(rows_f32, float, double)
SPMV_ROWS(rows_f64, double, double)

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
    spmv_job job = {.row_ptr = rp, .col = col, .values = v->buf, .x = x->buf, .y = a->out[0], .nnz = nnz,
                    .n_cols = (uint32_t)x->numel};
    atomic_init(&job.first_bad_row, INT64_MAX);
    void *args[1] = {&job};
    pe_range_fn rows = y->dtype == PE_F32 ? rows_f32 : rows_f64;
    int64_t per_row = n_rows ? 1 + nnz / n_rows : 1; /* elements a row touches, for the pool's split */
    if (pool_run) pool_run(rows, args, n_rows, per_row);
    else rows(0, n_rows, args);
    if (atomic_load(&job.first_bad_row) == INT64_MAX) return true;
    a->code = PE_E_ARG;
    return !pe_csr_fault(rp, col, n_rows, nnz, x->numel, a->why, sizeof a->why);
}
