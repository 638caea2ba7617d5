/* api_linalg.c — the entry points of the intrinsics: pe_matmul and the LU
 * family.  They validate shapes and dtypes at the caller's line and record
 * one port each (pe_lu two: the factors and the pivots, one library call);
 * nothing is computed here (exec/intrinsics computes, jit/proggen plans the
 * calls).  pe_lu_unpack's L and U are element-wise selections over lu,
 * recorded as ordinary requests (fused into one kernel); only P is a call. */
#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"

static bool float_operand(const pe_site *s, const char *api, const char *name, const pe_port *p)
{
    if (p->dtype == PE_F32 || p->dtype == PE_F64 || pe_dtype_is_complex((pe_dtype)p->dtype)) return true;
    pe_raise(s, PE_E_TYPE, api, "%s is %s: it takes f32, f64, c64 or c128", name, pe_dtype_name((pe_dtype)p->dtype));
    return false;
}

static bool square_factors(const pe_site *s, const char *api, const pe_port *lu)
{
    if (lu->rank == 2 && lu->shape[0] == lu->shape[1]) return true;
    char shape[64];
    pe_format_shape(shape, sizeof shape, lu->rank, lu->shape);
    pe_raise(s, PE_E_SHAPE, api, "the matrix is %s: it takes a square 2-d array", shape);
    return false;
}

static bool pivots_fit(const pe_site *s, const char *api, const pe_port *lu, const pe_port *piv)
{
    if (piv->dtype == PE_I32 && piv->rank == 1 && piv->shape[0] == lu->shape[0]) return true;
    char shape[64];
    pe_format_shape(shape, sizeof shape, piv->rank, piv->shape);
    pe_raise(s, PE_E_SHAPE, api, "pivots are %s %s: they are the i32 [%lld] of pe_lu", pe_dtype_name((pe_dtype)piv->dtype),
             shape, (long long)lu->shape[0]);
    return false;
}

pe_array pe_matmul_at(const pe_site *s, pe_array a, pe_array b)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_matmul";
    pe_array ins[2] = {a, b}, r;
    pe_port *in[2];
    uint32_t idx[2];
    if (!pe_resolve_operands(s, PE_OP_matmul, ins, 2, api, in, idx, &r)) return r;
    if (!float_operand(s, api, "a", in[0]) || !float_operand(s, api, "b", in[1]))
        return pe_invalid_result(s, PE_OP_matmul, PE_E_TYPE);
    if (in[0]->dtype != in[1]->dtype) {
        pe_raise(s, PE_E_TYPE, api, "a is %s and b %s: cast one of them (pe_cast)", pe_dtype_name((pe_dtype)in[0]->dtype),
                 pe_dtype_name((pe_dtype)in[1]->dtype));
        return pe_invalid_result(s, PE_OP_matmul, PE_E_TYPE);
    }
    char sa[64], sb[64];
    pe_format_shape(sa, sizeof sa, in[0]->rank, in[0]->shape);
    pe_format_shape(sb, sizeof sb, in[1]->rank, in[1]->shape);
    if (in[0]->rank != 2 || (in[1]->rank != 1 && in[1]->rank != 2)) {
        pe_raise(s, PE_E_SHAPE, api, "a is %s and b %s: it takes a 2-d a and a 1-d or 2-d b", sa, sb);
        return pe_invalid_result(s, PE_OP_matmul, PE_E_SHAPE);
    }
    if (in[0]->shape[1] != in[1]->shape[0]) {
        pe_raise(s, PE_E_SHAPE, api, "inner dimensions differ: a is %s, b %s", sa, sb);
        return pe_invalid_result(s, PE_OP_matmul, PE_E_SHAPE);
    }
    int64_t shape[2] = {in[0]->shape[0], in[1]->rank == 2 ? in[1]->shape[1] : 0};
    pe_dtype t = (pe_dtype)in[0]->dtype;
    return pe_record_op(s, PE_OP_matmul, idx, 2, t, t, in[1]->rank, shape, NULL, 0);
}

int pe_lu_at(const pe_site *s, pe_array a, pe_array *lu, pe_array *pivots)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_lu";
    if (!lu || !pivots) return pe_raise(s, PE_E_ARG, api, "%s is NULL", lu ? "pivots" : "lu");
    pe_port *x;
    uint32_t xi;
    pe_status code;
    if (!pe_resolve_operands(s, PE_OP_lu, &a, 1, api, &x, &xi, lu)) { /* a bad handle, or an invalid matrix */
        const pe_port *q = pe_port_peek(*lu, NULL);
        code = q ? q->err_code : PE_E_INVALID;
        *pivots = lu->h ? pe_invalid_result(s, PE_OP_lu_pivots, code) : (pe_array){0};
        return code;
    }
    if (!float_operand(s, api, "the matrix", x)) code = PE_E_TYPE;
    else if (!square_factors(s, api, x)) code = PE_E_SHAPE;
    else if (x->shape[0] > INT32_MAX)
        code = pe_raise(s, PE_E_SHAPE, api, "%lld rows: the pivots do not fit in i32", (long long)x->shape[0]);
    else {
        pe_dtype t = (pe_dtype)x->dtype;
        *lu = pe_record_op(s, PE_OP_lu, &xi, 1, t, t, 2, x->shape, NULL, 0);
        *pivots = pe_record_op(s, PE_OP_lu_pivots, &xi, 1, PE_I32, t, 1, x->shape, NULL, 0);
        return PE_OK; /* a singular matrix is found when the factorisation runs: the values say so */
    }
    *lu = pe_invalid_result(s, PE_OP_lu, code);
    *pivots = pe_invalid_result(s, PE_OP_lu_pivots, code);
    return code;
}

/* The factors and pivots of a call over them, checked; false after raising (*r is the answer). */
static bool factors(const pe_site *s, const char *api, pe_op op, pe_array *ins, int n, pe_port **in, uint32_t *idx,
                    pe_array *r)
{
    if (!pe_resolve_operands(s, op, ins, n, api, in, idx, r)) return false;
    pe_status code = PE_OK;
    if (!float_operand(s, api, "lu", in[0])) code = PE_E_TYPE;
    else if (!square_factors(s, api, in[0]) || !pivots_fit(s, api, in[0], in[1])) code = PE_E_SHAPE;
    if (code != PE_OK) *r = pe_invalid_result(s, op, code);
    return code == PE_OK;
}

pe_array pe_lu_solve_at(const pe_site *s, pe_array lu, pe_array pivots, pe_array b)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_lu_solve";
    pe_array ins[3] = {lu, pivots, b}, r;
    pe_port *in[3];
    uint32_t idx[3];
    if (!factors(s, api, PE_OP_lu_solve, ins, 3, in, idx, &r)) return r;
    if (in[2]->dtype != in[0]->dtype) {
        pe_raise(s, PE_E_TYPE, api, "b is %s and lu %s: cast b (pe_cast)", pe_dtype_name((pe_dtype)in[2]->dtype),
                 pe_dtype_name((pe_dtype)in[0]->dtype));
        return pe_invalid_result(s, PE_OP_lu_solve, PE_E_TYPE);
    }
    if ((in[2]->rank != 1 && in[2]->rank != 2) || in[2]->shape[0] != in[0]->shape[0]) {
        char sb[64];
        pe_format_shape(sb, sizeof sb, in[2]->rank, in[2]->shape);
        pe_raise(s, PE_E_SHAPE, api, "b is %s: it takes [%lld] or [%lld, k]", sb, (long long)in[0]->shape[0],
                 (long long)in[0]->shape[0]);
        return pe_invalid_result(s, PE_OP_lu_solve, PE_E_SHAPE);
    }
    pe_dtype t = (pe_dtype)in[0]->dtype;
    return pe_record_op(s, PE_OP_lu_solve, idx, 3, t, t, in[2]->rank, in[2]->shape, NULL, 0);
}

pe_array pe_lu_cond_at(const pe_site *s, pe_array lu, pe_array pivots)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    pe_array ins[2] = {lu, pivots}, r;
    pe_port *in[2];
    uint32_t idx[2];
    if (!factors(s, "pe_lu_cond", PE_OP_lu_cond, ins, 2, in, idx, &r)) return r;
    pe_dtype t = (pe_dtype)in[0]->dtype; /* a complex matrix's condition number is real */
    return pe_record_op(s, PE_OP_lu_cond, idx, 2, pe_dtype_real_part(t), t, 0, NULL, NULL, 0);
}

pe_array pe_lu_unpack_at(const pe_site *s, pe_array lu, pe_array pivots, pe_array *l, pe_array *u)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    pe_array ins[2] = {lu, pivots}, r;
    pe_port *in[2];
    uint32_t idx[2];
    if (!factors(s, "pe_lu_unpack", PE_OP_lu_permutation, ins, 2, in, idx, &r)) {
        const pe_port *q = pe_port_peek(r, NULL);
        pe_status code = q ? q->err_code : PE_E_INVALID;
        if (l) *l = r.h ? pe_invalid_result(s, PE_OP_lu_permutation, code) : r;
        if (u) *u = r.h ? pe_invalid_result(s, PE_OP_lu_permutation, code) : r;
        return r;
    }
    pe_dtype t = (pe_dtype)in[0]->dtype;
    int64_t *shape = in[0]->shape;
    if (l || u) { /* L: lu below the diagonal, 1 on it; U: lu on and above it */
        pe_array rows = pe_index_at(s, PE_I32, 2, shape, 0), cols = pe_index_at(s, PE_I32, 2, shape, 1);
        if (l) {
            pe_array below = pe_gt_at(s, rows, cols), diagonal = pe_eq_at(s, rows, cols);
            pe_array ones = pe_cast_at(s, diagonal, t);
            *l = pe_cond_at(s, below, lu, ones);
            pe_release_at(s, below), pe_release_at(s, diagonal), pe_release_at(s, ones);
        }
        if (u) {
            pe_array upper = pe_le_at(s, rows, cols), zero = pe_scalar_at(s, t, 0);
            *u = pe_cond_at(s, upper, lu, zero);
            pe_release_at(s, upper), pe_release_at(s, zero);
        }
        pe_release_at(s, rows), pe_release_at(s, cols);
    }
    return pe_record_op(s, PE_OP_lu_permutation, &idx[1], 1, t, PE_I32, 2, shape, NULL, 0);
}
