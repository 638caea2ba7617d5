/* api_order.c — the entry points of the order ops (issue 39): pe_cumsum,
 * pe_cumprod, pe_sort, pe_argsort, pe_histogram, pe_bincount and
 * pe_scatter_add.  Each checks its arguments at the caller's line and
 * records one intrinsic (a loop of PE's own on the pool:
 * exec/intrinsics/scan.c, sort.c, bins.c); nothing is computed here.  The
 * element-wise work before and after them fuses into the kernels around
 * them, as around every intrinsic. */
#include <math.h>
#include <string.h>

#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"

static bool same_shape(const pe_port *a, const pe_port *b)
{
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

/* The one operand of a call along an axis: its port and index, the axis
 * normalised; NULL with *r the result to return (an error raised). */
static pe_port *along_axis(const pe_site *s, pe_op op, const char *api, pe_array a, int *axis, uint32_t *idx,
                           pe_array *r)
{
    pe_port *x;
    if (!pe_resolve_operands(s, op, &a, 1, api, &x, idx, r)) return NULL;
    int at = *axis;
    if (x->rank < 1 || !pe_normalise_axis(&at, x->rank)) {
        pe_raise(s, PE_E_ARG, api, "axis %d out of range for rank %d (%s takes an array of at least one axis)", *axis,
                 x->rank, api);
        *r = pe_invalid_result(s, op, PE_E_ARG);
        return NULL;
    }
    *axis = at;
    return x;
}

static pe_array scan(const pe_site *s, pe_op op, pe_array a, int axis)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = op == PE_OP_cumsum ? "pe_cumsum" : "pe_cumprod";
    uint32_t xi;
    pe_array r;
    pe_port *x = along_axis(s, op, api, a, &axis, &xi, &r);
    if (!x) return r;
    pe_dtype t = x->dtype == PE_BOOL ? PE_I32 : (pe_dtype)x->dtype; /* NumPy's: a bool's sum counts */
    int64_t param = axis;
    return pe_record_op(s, op, &xi, 1, t, t, x->rank, x->shape, &param, 1);
}

pe_array pe_cumsum_at(const pe_site *s, pe_array a, int axis) { return scan(s, PE_OP_cumsum, a, axis); }
pe_array pe_cumprod_at(const pe_site *s, pe_array a, int axis) { return scan(s, PE_OP_cumprod, a, axis); }

static pe_array sort(const pe_site *s, pe_op op, pe_array a, int axis, bool descending)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = op == PE_OP_sort ? "pe_sort" : "pe_argsort";
    uint32_t xi;
    pe_array r;
    pe_port *x = along_axis(s, op, api, a, &axis, &xi, &r);
    if (!x) return r;
    pe_dtype t = (pe_dtype)x->dtype;
    if (t != PE_F32 && t != PE_F64 && t != PE_I32) {
        pe_raise(s, PE_E_TYPE, api, "a is %s: it sorts f32, f64 and i32 (pe_cast)", pe_dtype_name(t));
        return pe_invalid_result(s, op, PE_E_TYPE);
    }
    if (op == PE_OP_argsort && x->shape[axis] > INT32_MAX) {
        pe_raise(s, PE_E_SHAPE, api, "the axis has %lld elements: i32 indices name at most 2^31 - 1",
                 (long long)x->shape[axis]);
        return pe_invalid_result(s, op, PE_E_SHAPE);
    }
    pe_dtype rt = op == PE_OP_argsort ? PE_I32 : t;
    int64_t params[2] = {axis, descending};
    return pe_record_op(s, op, &xi, 1, rt, rt, x->rank, x->shape, params, 2);
}

pe_array pe_sort_at(const pe_site *s, pe_array a, int axis, bool descending)
{
    return sort(s, PE_OP_sort, a, axis, descending);
}
pe_array pe_argsort_at(const pe_site *s, pe_array a, int axis, bool descending)
{
    return sort(s, PE_OP_argsort, a, axis, descending);
}

pe_array pe_histogram_at(const pe_site *s, pe_array a, int64_t bins, double lo, double hi)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_histogram";
    pe_port *x;
    uint32_t xi;
    pe_array r;
    if (!pe_resolve_operands(s, PE_OP_histogram, &a, 1, api, &x, &xi, &r)) return r;
    pe_dtype t = (pe_dtype)x->dtype;
    if (t != PE_F32 && t != PE_F64 && t != PE_I32) {
        pe_raise(s, PE_E_TYPE, api, "a is %s: it counts f32, f64 and i32 values (pe_cast)", pe_dtype_name(t));
        return pe_invalid_result(s, PE_OP_histogram, PE_E_TYPE);
    }
    if (bins < 1 || bins > INT32_MAX) {
        pe_raise(s, PE_E_ARG, api, "bins is %lld: it is 1 to 2^31 - 1", (long long)bins);
        return pe_invalid_result(s, PE_OP_histogram, PE_E_ARG);
    }
    if (!isfinite(lo) || !isfinite(hi) || !(lo < hi)) {
        pe_raise(s, PE_E_ARG, api, "the range is [%g, %g]: it is finite, lo below hi", lo, hi);
        return pe_invalid_result(s, PE_OP_histogram, PE_E_ARG);
    }
    int64_t params[3] = {bins};
    memcpy(&params[1], &lo, sizeof lo); /* the doubles' bits: the trace key tells ranges apart exactly */
    memcpy(&params[2], &hi, sizeof hi);
    return pe_record_op(s, PE_OP_histogram, &xi, 1, PE_I32, PE_I32, 1, &bins, params, 3);
}

pe_array pe_bincount_at(const pe_site *s, pe_array idx, pe_array weights, int64_t length)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_bincount";
    pe_array ins[2] = {idx, weights}, r;
    pe_port *in[2];
    uint32_t ii[2];
    int n = weights.h ? 2 : 1;
    if (!pe_resolve_operands(s, PE_OP_bincount, ins, n, api, in, ii, &r)) return r;
    if (in[0]->dtype != PE_I32) {
        pe_raise(s, PE_E_TYPE, api, "idx is %s: indices are i32 (pe_cast)", pe_dtype_name((pe_dtype)in[0]->dtype));
        return pe_invalid_result(s, PE_OP_bincount, PE_E_TYPE);
    }
    if (length < 0 || length > INT32_MAX) {
        pe_raise(s, PE_E_ARG, api, "length is %lld: it is 0 to 2^31 - 1", (long long)length);
        return pe_invalid_result(s, PE_OP_bincount, PE_E_ARG);
    }
    pe_dtype t = PE_I32;
    if (n == 2) {
        t = (pe_dtype)in[1]->dtype;
        if (t != PE_F32 && t != PE_F64 && t != PE_I32) {
            pe_raise(s, PE_E_TYPE, api, "weights are %s: they are f32, f64 or i32 (pe_cast)", pe_dtype_name(t));
            return pe_invalid_result(s, PE_OP_bincount, PE_E_TYPE);
        }
        if (!same_shape(in[0], in[1])) {
            char si[96], sw[96];
            pe_format_shape(si, sizeof si, in[0]->rank, in[0]->shape);
            pe_format_shape(sw, sizeof sw, in[1]->rank, in[1]->shape);
            pe_raise(s, PE_E_SHAPE, api, "idx is %s and the weights %s: one weight per index", si, sw);
            return pe_invalid_result(s, PE_OP_bincount, PE_E_SHAPE);
        }
    }
    return pe_record_op(s, PE_OP_bincount, ii, n, t, t, 1, &length, &length, 1);
}

static pe_array scatter_add(const pe_site *s, pe_array target, pe_array idx, pe_array values)
{
    const char *api = "pe_scatter_add";
    pe_array ins[3] = {target, idx, values}, r;
    pe_port *in[3];
    uint32_t ii[3];
    if (!pe_resolve_operands(s, PE_OP_scatter_add, ins, 3, api, in, ii, &r)) return r;
    pe_dtype t = (pe_dtype)in[0]->dtype;
    if (t != PE_F32 && t != PE_F64 && t != PE_I32) {
        pe_raise(s, PE_E_TYPE, api, "target is %s: it is f32, f64 or i32 (pe_cast)", pe_dtype_name(t));
        return pe_invalid_result(s, PE_OP_scatter_add, PE_E_TYPE);
    }
    if (in[1]->dtype != PE_I32) {
        pe_raise(s, PE_E_TYPE, api, "idx is %s: indices are i32 (pe_cast)", pe_dtype_name((pe_dtype)in[1]->dtype));
        return pe_invalid_result(s, PE_OP_scatter_add, PE_E_TYPE);
    }
    if (in[2]->dtype != t && in[2]->weak && in[2]->rank == 0) { /* a C scalar takes the target's dtype */
        pe_array v = pe_cast_at(s, values, t);
        pe_array result = scatter_add(s, target, idx, v);
        pe_release_at(s, v);
        return result;
    }
    if (in[2]->dtype != t) {
        pe_raise(s, PE_E_TYPE, api, "target is %s and values %s: of one dtype (pe_cast)", pe_dtype_name(t),
                 pe_dtype_name((pe_dtype)in[2]->dtype));
        return pe_invalid_result(s, PE_OP_scatter_add, PE_E_TYPE);
    }
    if (in[2]->rank != 0 && !same_shape(in[1], in[2])) {
        char si[96], sv[96];
        pe_format_shape(si, sizeof si, in[1]->rank, in[1]->shape);
        pe_format_shape(sv, sizeof sv, in[2]->rank, in[2]->shape);
        pe_raise(s, PE_E_SHAPE, api, "idx is %s and values %s: one value per index, or a scalar", si, sv);
        return pe_invalid_result(s, PE_OP_scatter_add, PE_E_SHAPE);
    }
    return pe_record_op(s, PE_OP_scatter_add, ii, 3, t, t, in[0]->rank, in[0]->shape, NULL, 0);
}

pe_array pe_scatter_add_at(const pe_site *s, pe_array target, pe_array idx, pe_array values)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    pe_array r = scatter_add(s, target, idx, values);
    pe_release_temps((pe_array[]){target, idx, values}, 3); /* a C scalar's handle (PE_ARG) */
    return r;
}
