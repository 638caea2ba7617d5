/* api_view.c — entry points of the views and data-movement operations:
 * validation, result shapes and parameters.  Views of a uniform constant are
 * answered at once with a constant of the new shape. */
#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"
#include "../../profiler/collect.h"

#define NO_SLOT UINT32_MAX

/* Resolves the single operand of a view; false with *result set on failure. */
static bool one_operand(const pe_site *s, pe_op op, pe_array a, const char *api, pe_port **x, uint32_t *xi,
                        pe_array *result)
{
    return pe_resolve_operands(s, op, &a, 1, api, x, xi, result);
}

static pe_array finish_view(const pe_site *s, pe_op op, pe_port *x, uint32_t xi, int rank, const int64_t *shape,
                            const int64_t *params, int n_params)
{
    if (pe_port_is_uniform(x)) {
        uint32_t idx = pe_make_constant((pe_dtype)x->dtype, rank, shape, x->value, x->weak, s);
        if (idx != NO_SLOT) {
            pe_counters.ops_folded++;
            if (pe_prof_on) pe_prof_call(s);
            return pe_publish(idx);
        }
    }
    return pe_record_op(s, op, &xi, 1, (pe_dtype)x->dtype, (pe_dtype)x->dtype, rank, shape, params, n_params);
}

pe_array pe_reshape_at(const pe_site *s, pe_array a, int rank, const int64_t *shape)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_reshape";
    pe_port *x;
    uint32_t xi;
    pe_array r;
    if (!one_operand(s, PE_OP_reshape, a, api, &x, &xi, &r)) return r;
    if (rank < 0 || rank > PE_MAX_RANK || (rank > 0 && !shape)) {
        pe_raise(s, PE_E_ARG, api, rank < 0 || rank > PE_MAX_RANK ? "rank %d out of range" : "shape is NULL (rank %d)",
                 rank);
        return pe_invalid_result(s, PE_OP_reshape, PE_E_ARG);
    }
    int64_t out[PE_MAX_RANK], known = 1;
    int inferred = -1;
    for (int d = 0; d < rank; d++) {
        out[d] = shape[d];
        if (shape[d] == -1 && inferred < 0) inferred = d;
        else if (shape[d] < 0) {
            pe_raise(s, PE_E_SHAPE, api, "extent %lld on axis %d (only one -1 may be inferred)", (long long)shape[d], d);
            return pe_invalid_result(s, PE_OP_reshape, PE_E_SHAPE);
        } else if (__builtin_mul_overflow(known, shape[d], &known)) {
            /* {2^62 + 3, 4} is 12 elements once wrapped: refuse, never compare the wrapped count */
            char to[96];
            pe_format_shape(to, sizeof to, rank, shape);
            pe_raise(s, PE_E_SHAPE, api, "shape %s has too many elements", to);
            return pe_invalid_result(s, PE_OP_reshape, PE_E_SHAPE);
        }
    }
    if (inferred >= 0) out[inferred] = known ? x->numel / known : 0;
    int64_t numel;
    if (!pe_shape_numel_checked(rank, out, &numel) || numel != x->numel) {
        char from[96], to[96];
        pe_format_shape(from, sizeof from, x->rank, x->shape);
        pe_format_shape(to, sizeof to, rank, shape);
        pe_raise(s, PE_E_SHAPE, api, "cannot reshape %s (%lld elements) to %s", from, (long long)x->numel, to);
        return pe_invalid_result(s, PE_OP_reshape, PE_E_SHAPE);
    }
    return finish_view(s, PE_OP_reshape, x, xi, rank, out, NULL, 0);
}

/* A permutation of the axes: axis d of the result is axis axes[d] of a.
 * pe_transpose is the permutation that reverses a 2-d array's axes. */
static pe_array record_permute(const pe_site *s, const char *api, pe_array a, const int *axes)
{
    pe_port *x;
    uint32_t xi;
    pe_array r;
    if (!one_operand(s, PE_OP_transpose, a, api, &x, &xi, &r)) return r;
    int64_t out[PE_MAX_RANK], params[PE_MAX_RANK];
    bool seen[PE_MAX_RANK] = {0};
    if (x->rank > 0 && !axes) {
        pe_raise(s, PE_E_ARG, api, "axes is NULL");
        return pe_invalid_result(s, PE_OP_transpose, PE_E_ARG);
    }
    for (int d = 0; d < x->rank; d++) {
        int from = axes[d];
        if (from < 0 || from >= x->rank || seen[from]) {
            pe_raise(s, PE_E_ARG, api, "axes[%d] = %d: not a permutation of the %d axes", d, from, x->rank);
            return pe_invalid_result(s, PE_OP_transpose, PE_E_ARG);
        }
        seen[from] = true;
        out[d] = x->shape[from];
        params[d] = from;
    }
    return finish_view(s, PE_OP_transpose, x, xi, x->rank, out, params, x->rank);
}

pe_array pe_transpose_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_transpose";
    pe_port *x;
    uint32_t xi;
    pe_array r;
    if (!one_operand(s, PE_OP_transpose, a, api, &x, &xi, &r)) return r;
    if (x->rank > 2) {
        pe_raise(s, PE_E_SHAPE, api, "transpose needs rank 0, 1 or 2, not %d", x->rank);
        return pe_invalid_result(s, PE_OP_transpose, PE_E_SHAPE);
    }
    static const int reversed[2][2] = {{0, 0}, {1, 0}};
    return record_permute(s, api, a, reversed[x->rank == 2]);
}

pe_array pe_permute_at(const pe_site *s, pe_array a, const int *axes)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    return record_permute(s, "pe_permute", a, axes);
}

/* Elements start[d] + k * step[d], k < count[d], on every axis: parameters
 * start[0..rank) then step[0..rank). */
static pe_array record_slice(const pe_site *s, const char *api, pe_array a, const int64_t *start, const int64_t *count,
                             const int64_t *step)
{
    pe_port *x;
    uint32_t xi;
    pe_array r;
    if (!one_operand(s, PE_OP_slice, a, api, &x, &xi, &r)) return r;
    if (x->rank > 0 && (!start || !count)) {
        pe_raise(s, PE_E_ARG, api, "start or count is NULL");
        return pe_invalid_result(s, PE_OP_slice, PE_E_ARG);
    }
    int64_t out[PE_MAX_RANK], params[2 * PE_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        int64_t t = step ? step[d] : 1, n = x->shape[d];
        if (t == 0) {
            pe_raise(s, PE_E_ARG, api, "axis %d: step 0", d);
            return pe_invalid_result(s, PE_OP_slice, PE_E_ARG);
        }
        /* the last element start + (count - 1) * step, within [0, n) unless count is 0 */
        bool fits = count[d] >= 0 && start[d] >= 0 && start[d] <= n;
        if (fits && count[d] > 0) {
            int64_t span, last;
            fits = start[d] < n && !__builtin_mul_overflow(count[d] - 1, t, &span) &&
                   !__builtin_add_overflow(start[d], span, &last) && last >= 0 && last < n;
        }
        if (!fits) {
            if (step)
                pe_raise(s, PE_E_SHAPE, api, "axis %d: start %lld count %lld step %lld outside extent %lld", d,
                         (long long)start[d], (long long)count[d], (long long)t, (long long)n);
            else
                pe_raise(s, PE_E_SHAPE, api, "axis %d: start %lld count %lld outside extent %lld", d,
                         (long long)start[d], (long long)count[d], (long long)n);
            return pe_invalid_result(s, PE_OP_slice, PE_E_SHAPE);
        }
        out[d] = count[d];
        params[d] = start[d];
        params[x->rank + d] = t;
    }
    return finish_view(s, PE_OP_slice, x, xi, x->rank, out, params, 2 * x->rank);
}

pe_array pe_slice_at(const pe_site *s, pe_array a, const int64_t *start, const int64_t *count)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    return record_slice(s, "pe_slice", a, start, count, NULL);
}

pe_array pe_slice_step_at(const pe_site *s, pe_array a, const int64_t *start, const int64_t *count, const int64_t *step)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!step) {
        pe_raise(s, PE_E_ARG, "pe_slice_step", "step is NULL");
        return pe_invalid_result(s, PE_OP_slice, PE_E_ARG);
    }
    return record_slice(s, "pe_slice_step", a, start, count, step);
}

pe_array pe_periodic_at(const pe_site *s, pe_array a, int rank, const int64_t *shape)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_periodic";
    pe_port *x;
    uint32_t xi;
    pe_array r;
    if (!one_operand(s, PE_OP_periodic, a, api, &x, &xi, &r)) return r;
    if (!pe_check_shape(s, api, rank, shape)) return pe_invalid_result(s, PE_OP_periodic, pe_last_error()->code);
    if (rank < x->rank) {
        pe_raise(s, PE_E_SHAPE, api, "the target rank %d is below the array's rank %d", rank, x->rank);
        return pe_invalid_result(s, PE_OP_periodic, PE_E_SHAPE);
    }
    for (int d = 0; d < x->rank; d++) {
        if (x->shape[d] == 0 && shape[rank - x->rank + d] != 0) {
            pe_raise(s, PE_E_SHAPE, api, "an empty axis %d cannot be tiled", d);
            return pe_invalid_result(s, PE_OP_periodic, PE_E_SHAPE);
        }
    }
    return finish_view(s, PE_OP_periodic, x, xi, rank, shape, NULL, 0);
}

pe_array pe_spread_at(const pe_site *s, pe_array a, int axis, int64_t n)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_spread";
    pe_port *x;
    uint32_t xi;
    pe_array r;
    if (!one_operand(s, PE_OP_spread, a, api, &x, &xi, &r)) return r;
    if (n < 0) {
        pe_raise(s, PE_E_ARG, api, "n is %lld", (long long)n);
        return pe_invalid_result(s, PE_OP_spread, PE_E_ARG);
    }
    if (axis < 0) axis += x->rank + 1;
    if (axis < 0 || axis > x->rank) {
        pe_raise(s, PE_E_ARG, api, "axis out of range for rank %d", x->rank);
        return pe_invalid_result(s, PE_OP_spread, PE_E_ARG);
    }
    bool replicate = axis < x->rank && x->shape[axis] == 1;
    int rank = replicate ? x->rank : x->rank + 1;
    if (rank > PE_MAX_RANK) {
        pe_raise(s, PE_E_SHAPE, api, "the result would have rank %d (at most %d)", rank, PE_MAX_RANK);
        return pe_invalid_result(s, PE_OP_spread, PE_E_SHAPE);
    }
    int64_t out[PE_MAX_RANK];
    if (replicate)
        for (int d = 0; d < rank; d++) out[d] = d == axis ? n : x->shape[d];
    else
        for (int d = 0, k = 0; d < rank; d++) out[d] = d == axis ? n : x->shape[k++];
    if (!pe_check_shape(s, api, rank, out)) return pe_invalid_result(s, PE_OP_spread, PE_E_SHAPE); /* n = 2^62 + 4 */
    int64_t params[2] = {axis, replicate ? 0 : 1};
    return finish_view(s, PE_OP_spread, x, xi, rank, out, params, 2);
}

pe_array pe_gather_at(const pe_site *s, pe_array a, pe_array index)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_gather";
    pe_array ins[2] = {a, index}, r;
    pe_port *in[2];
    uint32_t in_idx[2];
    if (!pe_resolve_operands(s, PE_OP_gather, ins, 2, api, in, in_idx, &r)) return r;
    if (in[1]->dtype != PE_I32) {
        pe_raise(s, PE_E_TYPE, api, "the index must be i32, not %s", pe_dtype_name((pe_dtype)in[1]->dtype));
        return pe_invalid_result(s, PE_OP_gather, PE_E_TYPE);
    }
    return pe_record_op(s, PE_OP_gather, in_idx, 2, (pe_dtype)in[0]->dtype, (pe_dtype)in[0]->dtype, in[1]->rank,
                        in[1]->shape, NULL, 0);
}

pe_array pe_concat_at(const pe_site *s, pe_array a, pe_array b, int axis)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_concat";
    pe_array ins[2] = {a, b}, r;
    pe_port *in[2];
    uint32_t in_idx[2];
    if (!pe_resolve_operands(s, PE_OP_concat, ins, 2, api, in, in_idx, &r)) return r;
    int rank = in[0]->rank;
    if (!pe_normalise_axis(&axis, rank)) {
        pe_raise(s, PE_E_ARG, api, "axis %d out of range for rank %d", axis, rank);
        return pe_invalid_result(s, PE_OP_concat, PE_E_ARG);
    }
    bool fits = in[1]->rank == rank;
    for (int d = 0; d < rank && fits; d++) fits = d == axis || in[0]->shape[d] == in[1]->shape[d];
    if (!fits) {
        char sa[96], sb[96];
        pe_format_shape(sa, sizeof sa, rank, in[0]->shape);
        pe_format_shape(sb, sizeof sb, in[1]->rank, in[1]->shape);
        pe_raise(s, PE_E_SHAPE, api, "shapes %s and %s differ off axis %d", sa, sb, axis);
        return pe_invalid_result(s, PE_OP_concat, PE_E_SHAPE);
    }
    int64_t out[PE_MAX_RANK], param = axis;
    for (int d = 0; d < rank; d++) out[d] = in[0]->shape[d] + (d == axis ? in[1]->shape[d] : 0);
    /* each operand's count is checked, so the sum of extents does not
     * overflow; their product with the other axes may */
    if (!pe_check_shape(s, api, rank, out)) return pe_invalid_result(s, PE_OP_concat, PE_E_SHAPE);
    pe_dtype t = pe_promote_operands(in, 2);
    return pe_record_op(s, PE_OP_concat, in_idx, 2, t, t, rank, out, &param, 1);
}
