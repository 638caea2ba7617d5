/* api_compose.c — operations PE records as other operations of the catalog
 * (issue 39): sigmoid, softmax and logsumexp (numerically safe: the max
 * subtracted), the shape helpers expand_dims, roll and pad (views:
 * reshape, a periodic tiling sliced, concats of slices and fills) and
 * slice_update (a select between a and v padded to a's shape), and the generators arange and linspace (the
 * index generator scaled and shifted).  Each part is recorded at the
 * caller's site like the call itself, so the parts fuse into kernels with
 * their producers and consumers (a softmax over rows runs as the row-pass
 * kernels do), PE_CHECK checks each, and an error names the caller's line;
 * the handles of the parts are the call's own and go before it returns.
 * Arguments are checked here first, so that a message names the call the
 * program made (pe_softmax), not one of its parts. */
#include <math.h>

#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"

#define MAX_PARTS 32

/* The handles a composition makes for itself: released once its result
 * is recorded (the result holds what it needs). */
typedef struct {
    const pe_site *site;
    pe_array h[MAX_PARTS];
    int n;
} parts;

static pe_array part(parts *p, pe_array a)
{
    if (p->n < MAX_PARTS) p->h[p->n++] = a;
    return a;
}

static pe_array done(parts *p, pe_array result)
{
    for (int i = 0; i < p->n; i++) pe_release_at(p->site, p->h[i]);
    p->n = 0;
    return result;
}

/* The operand's port: its rank, shape and dtype, or NULL (an error raised,
 * *invalid the result to return). */
static pe_port *operand(const pe_site *s, pe_array a, pe_op op, const char *api, pe_array *invalid)
{
    uint32_t idx;
    pe_port *p = pe_port_lookup(s, a, api, &idx);
    if (!p) *invalid = pe_invalid_result(s, op, pe_last_error() ? pe_last_error()->code : PE_E_ARG);
    return p;
}

/* axis of a rank-`rank` array (negative: from the end), or -1 with the error raised. */
static int axis_of(const pe_site *s, const char *api, int axis, int rank)
{
    int a = axis;
    if (!pe_normalise_axis(&a, rank)) {
        pe_raise(s, PE_E_ARG, api, "axis %d out of range for rank %d", axis, rank);
        return -1;
    }
    return a;
}

/* A real operand of a function that is real-valued by nature: floats as
 * they are, i32 and bool as f64 (NumPy's result type); complex refused. */
static pe_array as_real(parts *ps, pe_port *p, pe_array a, const char *api, bool *ok)
{
    *ok = !pe_dtype_is_complex((pe_dtype)p->dtype);
    if (!*ok) {
        pe_raise(ps->site, PE_E_TYPE, api, "complex arrays have no %s", api + 3);
        return a;
    }
    return pe_dtype_is_float((pe_dtype)p->dtype) ? a : part(ps, pe_cast_at(ps->site, a, PE_F64));
}

/* ------------------------------------------------------------ shape helpers */

pe_array pe_expand_dims_at(const pe_site *s, pe_array a, int axis)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_expand_dims";
    pe_array bad;
    pe_port *p = operand(s, a, PE_OP_reshape, api, &bad);
    if (!p) return bad;
    int at = axis;
    if (!pe_normalise_axis(&at, p->rank + 1)) {
        pe_raise(s, PE_E_ARG, api, "axis %d out of range for a new axis of rank %d", axis, p->rank + 1);
        return pe_invalid_result(s, PE_OP_reshape, PE_E_ARG);
    }
    if (p->rank + 1 > PE_MAX_RANK) {
        pe_raise(s, PE_E_SHAPE, api, "the result would have rank %d (at most %d)", p->rank + 1, PE_MAX_RANK);
        return pe_invalid_result(s, PE_OP_reshape, PE_E_SHAPE);
    }
    int64_t shape[PE_MAX_RANK];
    for (int d = 0, k = 0; d <= p->rank; d++) shape[d] = d == at ? 1 : p->shape[k++];
    return pe_reshape_at(s, a, p->rank + 1, shape);
}

pe_array pe_roll_at(const pe_site *s, pe_array a, int64_t shift, int axis)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_roll";
    pe_array bad;
    pe_port *p = operand(s, a, PE_OP_periodic, api, &bad);
    if (!p) return bad;
    int at = axis_of(s, api, axis, p->rank);
    if (at < 0) return pe_invalid_result(s, PE_OP_periodic, PE_E_ARG);
    int64_t n = p->shape[at], tiled[PE_MAX_RANK], start[PE_MAX_RANK];
    for (int d = 0; d < p->rank; d++) tiled[d] = p->shape[d], start[d] = 0;
    if (n == 0) return pe_reshape_at(s, a, p->rank, tiled); /* nothing to move: a view of the same shape */
    /* result[i] = a[(i - shift) mod n] = tiled[i + (n - shift mod n) mod n], the axis tiled twice */
    tiled[at] = 2 * n;
    start[at] = (n - ((shift % n) + n) % n) % n;
    parts ps = {.site = s};
    pe_array twice = part(&ps, pe_periodic_at(s, a, p->rank, tiled));
    return done(&ps, pe_slice_at(s, twice, start, p->shape));
}

/* a's shape with `extent` along axis. */
static void shape_with(const pe_port *p, int axis, int64_t extent, int64_t *out)
{
    for (int d = 0; d < p->rank; d++) out[d] = d == axis ? extent : p->shape[d];
}

/* The part of a pad on one side (before: the side at 0): `count`
 * elements along axis by the mode (CONSTANT, EDGE, REFLECT; WRAP is one
 * view of its own). */
static pe_array pad_side(parts *ps, const pe_port *p, pe_array a, int axis, int64_t count, pe_pad_mode mode, double value,
                         bool before)
{
    const pe_site *s = ps->site;
    int64_t n = p->shape[axis], shape[PE_MAX_RANK], start[PE_MAX_RANK] = {0}, step[PE_MAX_RANK];
    shape_with(p, axis, count, shape);
    if (mode == PE_PAD_CONSTANT) return part(ps, pe_fill_at(s, (pe_dtype)p->dtype, p->rank, shape, value));
    if (mode == PE_PAD_EDGE || n == 1) { /* the first or last element along axis, repeated */
        int64_t one[PE_MAX_RANK];
        shape_with(p, axis, 1, one);
        start[axis] = before ? 0 : n - 1;
        return part(ps, pe_periodic_at(s, part(ps, pe_slice_at(s, a, start, one)), p->rank, shape));
    }
    /* REFLECT, the edge not repeated: a[count] .. a[1] before, a[n - 2] .. a[n - 1 - count] after */
    for (int d = 0; d < p->rank; d++) step[d] = 1;
    start[axis] = before ? count : n - 2;
    step[axis] = -1;
    return part(ps, pe_slice_step_at(s, a, start, shape, step));
}

pe_array pe_pad_at(const pe_site *s, pe_array a, int axis, int64_t before, int64_t after, pe_pad_mode mode, double value)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_pad";
    pe_array bad;
    pe_port *p = operand(s, a, PE_OP_concat, api, &bad);
    if (!p) return bad;
    int at = axis_of(s, api, axis, p->rank);
    if (at < 0) return pe_invalid_result(s, PE_OP_concat, PE_E_ARG);
    int64_t n = p->shape[at], shape[PE_MAX_RANK];
    const char *why = (unsigned)mode > PE_PAD_REFLECT      ? "not a pe_pad_mode"
                      : before < 0 || after < 0             ? "a negative width"
                      : mode != PE_PAD_CONSTANT && n == 0    ? "an empty axis has no values to repeat"
                      : mode == PE_PAD_REFLECT && n > 1 && (before > n - 1 || after > n - 1) ? "a reflection wider than the axis less one"
                      : before > INT64_MAX / 4 || after > INT64_MAX / 4 ? "a width too large"
                                                                          : NULL;
    if (why) {
        pe_raise(s, PE_E_ARG, api, "mode %d, %lld before and %lld after along axis %d of %lld: %s", (int)mode, (long long)before,
                 (long long)after, at, (long long)n, why);
        return pe_invalid_result(s, PE_OP_concat, PE_E_ARG);
    }
    shape_with(p, at, n + before + after, shape);
    parts ps = {.site = s};
    if (before == 0 && after == 0) return pe_reshape_at(s, a, p->rank, shape); /* a view of the same shape */
    if (mode == PE_PAD_WRAP) { /* result[j] = a[(j - before) mod n]: a slice of a periodic tiling */
        int64_t first = (n - before % n) % n, tiled[PE_MAX_RANK], start[PE_MAX_RANK] = {0};
        shape_with(p, at, (first + n + before + after + n - 1) / n * n, tiled);
        start[at] = first;
        return done(&ps, pe_slice_at(s, part(&ps, pe_periodic_at(s, a, p->rank, tiled)), start, shape));
    }
    pe_array r = a;
    if (before > 0) r = part(&ps, pe_concat_at(s, pad_side(&ps, p, a, at, before, mode, value, true), r, at));
    if (after > 0) r = pe_concat_at(s, r, pad_side(&ps, p, a, at, after, mode, value, false), at);
    else ps.n--; /* r, the last part, is the result */
    return done(&ps, r);
}

pe_array pe_slice_update_at(const pe_site *s, pe_array a, pe_array v, const int64_t *start)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_slice_update";
    pe_array bad;
    pe_port *p = operand(s, a, PE_OP_cond, api, &bad);
    if (!p) return bad;
    pe_port *q = operand(s, v, PE_OP_cond, api, &bad);
    if (!q) return bad;
    if (!start && p->rank > 0) {
        pe_raise(s, PE_E_ARG, api, "start is NULL");
        return pe_invalid_result(s, PE_OP_cond, PE_E_ARG);
    }
    bool fits = q->rank == p->rank;
    for (int d = 0; fits && d < p->rank; d++) fits = start[d] >= 0 && start[d] <= p->shape[d] && q->shape[d] <= p->shape[d] - start[d];
    if (!fits) {
        char into[96], block[96];
        pe_format_shape(into, sizeof into, p->rank, p->shape);
        pe_format_shape(block, sizeof block, q->rank, q->shape);
        pe_raise(s, PE_E_SHAPE, api, "a block of %s does not fit in %s at the start given", block, into);
        return pe_invalid_result(s, PE_OP_cond, PE_E_SHAPE);
    }
    int rank = p->rank;
    int64_t shape[PE_MAX_RANK], block_shape[PE_MAX_RANK];
    for (int d = 0; d < rank; d++) shape[d] = p->shape[d], block_shape[d] = q->shape[d];
    pe_dtype t = (pe_dtype)p->dtype;
    parts ps = {.site = s};
    /* v as a's dtype, padded with zeros to a's shape around its place; the
     * mask of its place; a where the mask is false */
    pe_array placed = q->dtype == p->dtype ? v : part(&ps, pe_cast_at(s, v, t)), mask = (pe_array){0};
    for (int d = 0; d < rank; d++) {
        placed = part(&ps, pe_pad_at(s, placed, d, start[d], shape[d] - start[d] - block_shape[d], PE_PAD_CONSTANT, 0.0));
        pe_array i = part(&ps, pe_index_at(s, PE_I32, rank, shape, d));
        pe_array inside = part(&ps, pe_and_at(s, part(&ps, pe_ge_at(s, i, pe__weak_int(start[d]))),
                                              part(&ps, pe_lt_at(s, i, pe__weak_int(start[d] + block_shape[d])))));
        mask = d == 0 ? inside : part(&ps, pe_and_at(s, mask, inside));
    }
    if (rank == 0) return done(&ps, pe_cast_at(s, v, t)); /* a 0-d block is the whole array */
    return done(&ps, pe_cond_at(s, mask, placed, a));
}

/* ------------------------------------------------------------- generators */

/* start + i * step for i < n, in double (i, the index generator, in
 * *index: one of the parts). */
static pe_array ramp(parts *ps, int64_t n, double start, double step, pe_array *index)
{
    *index = part(ps, pe_index_at(ps->site, PE_F64, 1, &n, 0));
    return pe_add_at(ps->site, part(ps, pe_mul_at(ps->site, *index, pe__weak_f64(step))), pe__weak_f64(start));
}

/* v (one of the parts unless it is the result) as dtype t. */
static pe_array as_dtype(parts *ps, pe_array v, pe_dtype t)
{
    return t == PE_F64 ? v : pe_cast_at(ps->site, part(ps, v), t);
}

static bool generator_dtype(const pe_site *s, const char *api, pe_dtype t)
{
    if ((unsigned)t >= PE_DTYPE__COUNT || pe_dtype_is_complex(t) || t == PE_BOOL) {
        pe_raise(s, PE_E_TYPE, api, "dtype %d: f32, f64 or i32", (int)t);
        return false;
    }
    return true;
}

pe_array pe_arange_at(const pe_site *s, pe_dtype t, double start, double stop, double step)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_arange";
    if (!generator_dtype(s, api, t)) return pe_invalid_result(s, PE_OP_index, PE_E_TYPE);
    if (step == 0 || !isfinite(start) || !isfinite(stop) || !isfinite(step)) {
        pe_raise(s, PE_E_ARG, api, "start %g, stop %g, step %g: finite, and step not 0", start, stop, step);
        return pe_invalid_result(s, PE_OP_index, PE_E_ARG);
    }
    double count = ceil((stop - start) / step); /* NumPy's length */
    if (!(count < 9.2e18)) {
        pe_raise(s, PE_E_SHAPE, api, "%g elements", count);
        return pe_invalid_result(s, PE_OP_index, PE_E_SHAPE);
    }
    int64_t n = count > 0 ? (int64_t)count : 0;
    parts ps = {.site = s};
    pe_array index;
    return done(&ps, as_dtype(&ps, ramp(&ps, n, start, step, &index), t));
}

pe_array pe_linspace_at(const pe_site *s, pe_dtype t, double lo, double hi, int64_t n)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_linspace";
    if (!generator_dtype(s, api, t)) return pe_invalid_result(s, PE_OP_index, PE_E_TYPE);
    if (n < 0 || !isfinite(lo) || !isfinite(hi)) {
        pe_raise(s, PE_E_ARG, api, "lo %g, hi %g, n %lld: finite ends, n >= 0", lo, hi, (long long)n);
        return pe_invalid_result(s, PE_OP_index, PE_E_ARG);
    }
    parts ps = {.site = s};
    pe_array index, v = ramp(&ps, n, lo, n > 1 ? (hi - lo) / (double)(n - 1) : 0.0, &index);
    if (n > 1) { /* the last element is hi exactly (NumPy) */
        pe_array last = part(&ps, pe_eq_at(s, index, pe__weak_f64((double)(n - 1))));
        v = pe_cond_at(s, last, pe__weak_f64(hi), part(&ps, v));
    }
    return done(&ps, as_dtype(&ps, v, t));
}

/* -------------------------------------------------- functions of the values */

pe_array pe_sigmoid_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_sigmoid";
    pe_array bad;
    pe_port *p = operand(s, a, PE_OP_exp, api, &bad);
    if (!p) return bad;
    parts ps = {.site = s};
    bool ok;
    pe_array x = as_real(&ps, p, a, api, &ok);
    if (!ok) return done(&ps, pe_invalid_result(s, PE_OP_exp, PE_E_TYPE));
    /* 1 / (1 + e^-x): e^-x overflows to inf for x below -710 (f64) and the
     * result is 0, as it should be; it is 1 above 37 */
    pe_array e = part(&ps, pe_exp_at(s, part(&ps, pe_neg_at(s, x))));
    return done(&ps, pe_div_at(s, pe__weak_f64(1.0), part(&ps, pe_add_at(s, e, pe__weak_f64(1.0)))));
}

/* The operand of a function of the values along an axis: its real values
 * (as_real) in *x, the axis (counted from the end where negative) in *at
 * and its length in *len; false with the error raised and *result the
 * invalid result. */
static bool along_axis(parts *ps, pe_array a, int axis, pe_op op, const char *api, pe_array *x, int *at, int64_t *len,
                       pe_array *result)
{
    pe_port *p = operand(ps->site, a, op, api, result);
    if (!p) return false;
    if ((*at = axis_of(ps->site, api, axis, p->rank)) < 0) {
        *result = pe_invalid_result(ps->site, op, PE_E_ARG);
        return false;
    }
    *len = p->shape[*at];
    bool ok;
    *x = as_real(ps, p, a, api, &ok);
    if (!ok) *result = done(ps, pe_invalid_result(ps->site, op, PE_E_TYPE));
    return ok;
}

pe_array pe_softmax_at(const pe_site *s, pe_array a, int axis)
{
    PE_API_GUARD;
    parts ps = {.site = PE_SITE_OR_CALLER(s)};
    s = ps.site;
    pe_array x, r; /* the real values, the result */
    int at;
    int64_t len;
    if (!along_axis(&ps, a, axis, PE_OP_exp, "pe_softmax", &x, &at, &len, &r)) return r;
    if (len == 0) return done(&ps, pe_exp_at(s, x)); /* empty: nothing to normalise */
    /* e^(x - max) / sum of them (SciPy's): no overflow, the largest term 1 */
    pe_array top = part(&ps, pe_expand_dims_at(s, part(&ps, pe_max_reduce_axis_at(s, x, at)), at));
    pe_array e = part(&ps, pe_exp_at(s, part(&ps, pe_sub_at(s, x, top))));
    pe_array total = part(&ps, pe_expand_dims_at(s, part(&ps, pe_sum_axis_at(s, e, at)), at));
    return done(&ps, pe_div_at(s, e, total));
}

pe_array pe_logsumexp_at(const pe_site *s, pe_array a, int axis)
{
    PE_API_GUARD;
    parts ps = {.site = PE_SITE_OR_CALLER(s)};
    s = ps.site;
    int64_t len;
    int at;
    pe_array x, r;
    if (!along_axis(&ps, a, axis, PE_OP_log, "pe_logsumexp", &x, &at, &len, &r)) return r;
    /* m + log(sum e^(x - m)), m the largest element where it is finite and
     * 0 where not (SciPy's): all -inf gives log 0 = -inf, an inf gives inf,
     * a NaN NaN; an empty axis sums to 0: -inf */
    pe_array m = part(&ps, pe_max_reduce_axis_at(s, x, at));
    pe_array shift = part(&ps, pe_cond_at(s, part(&ps, pe_isfinite_at(s, m)), m, pe__weak_f64(0.0)));
    pe_array kept = part(&ps, pe_expand_dims_at(s, shift, at));
    pe_array e = part(&ps, pe_exp_at(s, part(&ps, pe_sub_at(s, x, kept))));
    pe_array logs = part(&ps, pe_log_at(s, part(&ps, pe_sum_axis_at(s, e, at))));
    return done(&ps, pe_add_at(s, logs, shift));
}
