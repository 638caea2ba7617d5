/* api_sparse.c — sparse matrices in CSR form (pe_csr_create,
 * pe_csr_destroy) and their product with a vector (pe_spmv).
 *
 * A matrix is a record of a table behind generation-checked pe_csr handles
 * (exec/base/handle_table.h, as the random generators are).  It holds two
 * arrays of its own: its structure, row_ptr then col_idx in one i32 array
 * (a pe_concat recorded at creation, so that a product is an op of three
 * operands: structure, values, x), and the values (a reference retained).
 * Neither belongs to the scope the matrix was made in: the matrix releases
 * them when it is destroyed (or the runtime at pe_shutdown).  Shapes and
 * dtypes are checked here, at the caller's line; the indices only when a
 * product reads them (exec/intrinsics/sparse.c, the interpreter's
 * ref_linalg.c), where a fault makes the product invalid at pe_spmv's line. */
#include "api_sparse.h"
#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/handle_table.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"

typedef struct {
    pe_handle_slot slot;      /* its handle's generation; where it was destroyed */
    pe_array structure;       /* i32: row_ptr (n_rows + 1) then col_idx (nnz) */
    pe_array values;          /* f32 or f64, nnz */
    int64_t n_rows, n_cols;
    pe_dtype dtype;
} matrix;

static pe_handle_table mats = PE_HANDLE_TABLE(matrix, "sparse matrix", "a sparse matrix", "pe_csr_destroy");

void pe_csr_forget_all(void) { pe_htable_forget_all(&mats); }

/* m's matrix, or NULL after raising PE_E_HANDLE naming the misuse. */
static matrix *lookup(const pe_site *s, const char *api, pe_csr m) { return pe_htable_lookup(&mats, s, api, m.h); }

/* A 1-d array of dtype t (or any float dtype: t < 0); false after raising. */
static bool vector_of(const pe_site *s, const char *api, const char *name, const pe_port *p, int t)
{
    bool dtype_ok = t >= 0 ? p->dtype == t : p->dtype == PE_F32 || p->dtype == PE_F64;
    if (!dtype_ok) {
        pe_raise(s, PE_E_TYPE, api, "%s is %s: it takes %s", name, pe_dtype_name((pe_dtype)p->dtype),
                 t >= 0 ? pe_dtype_name((pe_dtype)t) : "f32 or f64");
        return false;
    }
    if (p->rank != 1) {
        char shape[64];
        pe_format_shape(shape, sizeof shape, p->rank, p->shape);
        pe_raise(s, PE_E_SHAPE, api, "%s is %s: it takes a 1-d array", name, shape);
        return false;
    }
    return true;
}

pe_csr pe_csr_create_at(const pe_site *s, pe_array row_ptr, pe_array col_idx, pe_array values, int64_t n_cols)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_csr_create";
    if (!pe_require_init(s, api)) return (pe_csr){0};
    uint32_t idx;
    const pe_port *rp = pe_port_lookup(s, row_ptr, api, &idx), *ci = rp ? pe_port_lookup(s, col_idx, api, &idx) : NULL;
    const pe_port *v = ci ? pe_port_lookup(s, values, api, &idx) : NULL;
    if (!v) return (pe_csr){0};
    if (!vector_of(s, api, "row_ptr", rp, PE_I32) || !vector_of(s, api, "col_idx", ci, PE_I32) ||
        !vector_of(s, api, "values", v, -1))
        return (pe_csr){0};
    if (rp->shape[0] < 1 || ci->shape[0] != v->shape[0]) {
        pe_raise(s, PE_E_SHAPE, api,
                 rp->shape[0] < 1 ? "row_ptr is empty: it holds n_rows + 1 offsets"
                                  : "col_idx has %lld entries and values %lld: one column per value",
                 (long long)ci->shape[0], (long long)v->shape[0]);
        return (pe_csr){0};
    }
    if (v->shape[0] > INT32_MAX || n_cols < 0 || n_cols - 1 > INT32_MAX) {
        pe_raise(s, PE_E_SHAPE, api, "%lld values and %lld columns: i32 offsets and columns hold neither",
                 (long long)v->shape[0], (long long)n_cols);
        return (pe_csr){0};
    }
    if (!pe_htable_reserve(&mats, s, api)) return (pe_csr){0};
    int64_t n_rows = rp->shape[0] - 1;
    pe_dtype t = (pe_dtype)v->dtype;
    pe_array structure = pe_concat_at(s, row_ptr, col_idx, 0);
    if (!structure.h) return (pe_csr){0}; /* raised; an invalid row_ptr or col_idx makes an invalid structure instead */
    pe_scope_disown(structure);
    pe_retain_at(s, values);
    pe_csr m;
    matrix *x = pe_htable_add(&mats, &m.h);
    x->structure = structure, x->values = values;
    x->n_rows = n_rows, x->n_cols = n_cols, x->dtype = t;
    return m;
}

void pe_csr_destroy_at(const pe_site *s, pe_csr m)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_csr_destroy";
    if (!pe_require_init(s, api)) return;
    matrix *x = lookup(s, api, m);
    if (!x) return;
    pe_htable_release(x, s);
    pe_release_at(s, x->structure);
    pe_release_at(s, x->values);
}

pe_array pe_spmv_at(const pe_site *s, pe_csr m, pe_array x)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_spmv";
    if (!pe_require_init(s, api)) return (pe_array){0};
    const matrix *a = lookup(s, api, m);
    if (!a) return pe_invalid_result(s, PE_OP_spmv, PE_E_HANDLE);
    pe_array ins[3] = {a->structure, a->values, x}, r;
    pe_port *in[3];
    uint32_t idx[3];
    if (!pe_resolve_operands(s, PE_OP_spmv, ins, 3, api, in, idx, &r)) return r;
    if (in[2]->dtype != a->dtype) {
        pe_raise(s, PE_E_TYPE, api, "x is %s and the matrix %s: cast x (pe_cast)", pe_dtype_name((pe_dtype)in[2]->dtype),
                 pe_dtype_name(a->dtype));
        return pe_invalid_result(s, PE_OP_spmv, PE_E_TYPE);
    }
    if (in[2]->rank != 1 || in[2]->shape[0] != a->n_cols) {
        char shape[64];
        pe_format_shape(shape, sizeof shape, in[2]->rank, in[2]->shape);
        pe_raise(s, PE_E_SHAPE, api, "x is %s: the matrix is %lld x %lld, it takes [%lld]", shape, (long long)a->n_rows,
                 (long long)a->n_cols, (long long)a->n_cols);
        return pe_invalid_result(s, PE_OP_spmv, PE_E_SHAPE);
    }
    return pe_record_op(s, PE_OP_spmv, idx, 3, a->dtype, a->dtype, 1, &a->n_rows, NULL, 0);
}
