/* interp.c — the sequential reference interpreter: executes every op of the
 * catalog one port at a time, in double precision (i32 and bool exactly),
 * with compensated summation in reductions.  It is the oracle that every
 * other executor is checked against, so it favours obvious correctness over
 * speed: one element at a time through load/convert/compute/store.  A
 * port with a complex operand or result takes the complex path (load_c,
 * store_c, pe_ref_map_c, complex sums): double complex throughout. */
#include <assert.h>
#include <complex.h>
#undef complex /* the catalog has an op of that name: the types are spelt _Complex */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp.h"
#include "refmath.h"
#include "ref_linalg.h"
#include "../base/error.h"
#include "../base/executor.h"
#include "../base/memory.h"
#include "../base/shape.h"
#include "../../irformat/philox.h"
#include "../../profiler/collect.h"

/* Switches over pe_op have no default, so that -Wswitch names an op the
 * interpreter forgot; a switch about one kind of op gets the labels of all
 * the others from the catalog: CASE_UNLESS_<KIND>_<kind of the op>. */
#define CASE_UNLESS_REDUCE_MAP(name) case PE_OP_##name:
#define CASE_UNLESS_REDUCE_REDUCE(name)
#define CASE_UNLESS_REDUCE_GENERATOR(name) case PE_OP_##name:
#define CASE_UNLESS_REDUCE_VIEW(name) case PE_OP_##name:
#define CASE_UNLESS_REDUCE_INTRINSIC(name) case PE_OP_##name:
#define CASE_UNLESS_REDUCE_IO(name) case PE_OP_##name:
#define CASE_UNLESS_VIEW_MAP(name) case PE_OP_##name:
#define CASE_UNLESS_VIEW_REDUCE(name) case PE_OP_##name:
#define CASE_UNLESS_VIEW_GENERATOR(name) case PE_OP_##name:
#define CASE_UNLESS_VIEW_VIEW(name)
#define CASE_UNLESS_VIEW_INTRINSIC(name) case PE_OP_##name:
#define CASE_UNLESS_VIEW_IO(name) case PE_OP_##name:

/* ------------------------------------------------------ element access */

static double load(const pe_port *p, int64_t i)
{
    if (!p->buf) return p->value; /* a uniform constant */
    switch ((pe_dtype)p->dtype) {
    case PE_F32: return ((const float *)p->buf)[i];
    case PE_F64: return ((const double *)p->buf)[i];
    case PE_I32: return ((const int32_t *)p->buf)[i];
    case PE_BOOL: return ((const uint8_t *)p->buf)[i];
    default: return NAN;
    }
}

static void store(pe_port *p, int64_t i, double v)
{
    switch ((pe_dtype)p->dtype) {
    case PE_F32: ((float *)p->buf)[i] = (float)v; break;
    case PE_F64: ((double *)p->buf)[i] = v; break;
    case PE_I32: ((int32_t *)p->buf)[i] = pe_ref_to_i32(v); break;
    case PE_BOOL: ((uint8_t *)p->buf)[i] = v != 0; break;
    case PE_C64: ((float _Complex *)p->buf)[i] = CMPLXF((float)v, 0.0f); break; /* index, identity, fills */
    case PE_C128: ((double _Complex *)p->buf)[i] = CMPLX(v, 0.0); break;
    }
}

/* Any dtype as a complex value (a real one: imaginary part 0; a uniform
 * constant: its value, whose imaginary part is 0 — complex constants with
 * one are stored arrays: jit/api/api_create.c). */
static double _Complex load_c(const pe_port *p, int64_t i)
{
    if (!p->buf) return CMPLX(p->value, 0.0);
    switch ((pe_dtype)p->dtype) {
    case PE_C64: return ((const float _Complex *)p->buf)[i];
    case PE_C128: return ((const double _Complex *)p->buf)[i];
    default: return CMPLX(load(p, i), 0.0);
    }
}

/* A complex value into any dtype (a real one: the real part). */
static void store_c(pe_port *p, int64_t i, double _Complex v)
{
    switch ((pe_dtype)p->dtype) {
    case PE_C64: ((float _Complex *)p->buf)[i] = CMPLXF((float)creal(v), (float)cimag(v)); break;
    case PE_C128: ((double _Complex *)p->buf)[i] = v; break;
    default: store(p, i, creal(v)); break;
    }
}

/* One element of x copied into element o of p, whatever the dtypes (views). */
static void copy_element(pe_port *p, int64_t o, const pe_port *x, int64_t j)
{
    if (pe_dtype_is_complex((pe_dtype)p->dtype)) store_c(p, o, load_c(x, j));
    else store(p, o, load(x, j));
}

static void store_i32(pe_port *p, int64_t i, int32_t v)
{
    if (p->dtype == PE_I32) ((int32_t *)p->buf)[i] = v;
    else store(p, i, v);
}

static void fail(pe_port *p, pe_status code, const char *what)
{
    char api[64];
    snprintf(api, sizeof api, "pe_%s", pe_op_table[p->op].name);
    p->state = PE_PORT_INVALID;
    p->err_code = code;
    p->err_msg = pe_format_error(p->site, api, "%s", what);
}

void pe_port_inherit_invalid(pe_port *p, const pe_port *from)
{
    p->state = PE_PORT_INVALID;
    p->err_code = from->err_code;
    p->err_raised = from->err_raised;
    p->err_msg = from->err_msg ? strdup(from->err_msg) : NULL;
}

/* Row-major multi-index of flat index i. */
static void unflatten(int64_t i, int rank, const int64_t *shape, int64_t *idx)
{
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
}

static int64_t flatten(int rank, const int64_t *shape, const int64_t *idx)
{
    int64_t i = 0;
    for (int d = 0; d < rank; d++) i = i * shape[d] + idx[d];
    return i;
}

/* Strides of `in` seen through a broadcast; a uniform constant has none. */
static void broadcast_strides(const pe_port *in, int rank, const int64_t *shape, int64_t *stride)
{
    (void)shape;
    pe_broadcast_strides(in->rank, in->shape, rank, stride);
    if (!in->buf)
        for (int d = 0; d < rank; d++) stride[d] = 0;
}

/* Visits every element of a broadcast iteration space, keeping one offset per
 * operand.  `visit` gets the output index and the operand offsets. */
typedef struct {
    int rank;
    const int64_t *shape;
    int n;
    int64_t stride[PE_PORT_MAX_INPUTS][PE_MAX_RANK];
} broadcast_space;

#define FOR_EACH_BROADCAST(sp, o, off, ...)                                            \
    do {                                                                                \
        int64_t idx_[PE_MAX_RANK] = {0};                                                \
        int64_t total_ = pe_shape_numel((sp)->rank, (sp)->shape);                       \
        for (int64_t o = 0; o < total_; o++) {                                          \
            __VA_ARGS__;                                                                \
            for (int d_ = (sp)->rank - 1; d_ >= 0; d_--) {                              \
                idx_[d_]++;                                                             \
                for (int k_ = 0; k_ < (sp)->n; k_++) off[k_] += (sp)->stride[k_][d_];   \
                if (idx_[d_] < (sp)->shape[d_]) break;                                  \
                for (int k_ = 0; k_ < (sp)->n; k_++)                                    \
                    off[k_] -= (sp)->stride[k_][d_] * (sp)->shape[d_];                  \
                idx_[d_] = 0;                                                           \
            }                                                                           \
        }                                                                               \
    } while (0)

static void init_space(broadcast_space *sp, pe_port *const *in, int n, int rank, const int64_t *shape)
{
    sp->rank = rank;
    sp->shape = shape;
    sp->n = n;
    for (int k = 0; k < n; k++) broadcast_strides(in[k], rank, shape, sp->stride[k]);
}

/* ----------------------------------------------------------------- map */

/* A map with a complex operand or result, in double _Complex. */
static void run_map_complex(pe_port *p, pe_port *const *in)
{
    pe_op op = (pe_op)p->op;
    pe_dtype ct = (pe_dtype)p->ctype;
    broadcast_space sp;
    init_space(&sp, in, p->n_in, p->rank, p->shape);
    int64_t off[PE_PORT_MAX_INPUTS] = {0, 0, 0};
    FOR_EACH_BROADCAST(&sp, o, off, {
        double _Complex v[PE_PORT_MAX_INPUTS] = {0, 0, 0};
        for (int k = 0; k < p->n_in; k++) {
            v[k] = load_c(in[k], off[k]);
            if (!(op == PE_OP_cond && k == 0) && op != PE_OP_cast) v[k] = pe_ref_round_to_c(ct, v[k]);
        }
        store_c(p, o, pe_ref_map_c(op, v[0], v[1], v[2]));
    });
}

static bool any_complex(const pe_port *p, pe_port *const *in)
{
    bool any = pe_dtype_is_complex((pe_dtype)p->dtype) || pe_dtype_is_complex((pe_dtype)p->ctype);
    for (int k = 0; k < p->n_in; k++) any = any || pe_dtype_is_complex((pe_dtype)in[k]->dtype);
    return any;
}

static void run_map(pe_port *p, pe_port *const *in)
{
    pe_op op = (pe_op)p->op;
    pe_dtype ct = (pe_dtype)p->ctype;
    if (any_complex(p, in)) {
        run_map_complex(p, in);
        return;
    }
    bool integer = ct == PE_I32 && p->dtype == PE_I32 && pe_ref_is_integer_op(op);
    broadcast_space sp;
    init_space(&sp, in, p->n_in, p->rank, p->shape);
    int64_t off[PE_PORT_MAX_INPUTS] = {0, 0, 0};
    FOR_EACH_BROADCAST(&sp, o, off, {
        double v[PE_PORT_MAX_INPUTS] = {0, 0, 0};
        for (int k = 0; k < p->n_in; k++) {
            v[k] = load(in[k], off[k]);
            /* operands meet in the compute type; cond's condition and cast's
             * operand are taken as they are */
            if (!(op == PE_OP_cond && k == 0) && op != PE_OP_cast) v[k] = pe_ref_round_to(ct, v[k]);
        }
        if (integer) store_i32(p, o, pe_ref_map_i32(op, (int32_t)v[0], (int32_t)v[1], (int32_t)v[2]));
        else store(p, o, pe_ref_map(op, v[0], v[1], v[2]));
    });
}

/* ---------------------------------------------------------- reductions */

typedef struct { double sum, comp; } neumaier;
static void neumaier_add(neumaier *acc, double x)
{
    double t = acc->sum + x;
    if (fabs(acc->sum) >= fabs(x)) acc->comp += (acc->sum - t) + x;
    else acc->comp += (x - t) + acc->sum;
    acc->sum = t;
}
/* Once the sum is not finite (an infinity met, or overflow) it stays so and
 * the compensation is inf - inf: the sum alone is the IEEE result. */
static double neumaier_total(const neumaier *acc) { return isfinite(acc->sum) ? acc->sum + acc->comp : acc->sum; }

/* One reduction over `len` values got by value_at(ctx, k). */
typedef double (*value_fn)(const void *ctx, int64_t k);

typedef struct {
    const pe_port *x;
    int64_t base, step;
} strided;
static double strided_value(const void *ctx, int64_t k)
{
    const strided *s = ctx;
    return load(s->x, s->base + k * s->step);
}

static double reduce_one(pe_op op, bool integer, value_fn value, const void *ctx, int64_t len)
{
    switch (op) {
    case PE_OP_sum:
    case PE_OP_dot:
    case PE_OP_vdot: /* of reals: dot */
        if (integer) {
            uint32_t acc = 0; /* i32 sums wrap */
            for (int64_t k = 0; k < len; k++) acc += (uint32_t)(int32_t)value(ctx, k);
            return (int32_t)acc;
        } else {
            neumaier acc = {0, 0};
            for (int64_t k = 0; k < len; k++) neumaier_add(&acc, value(ctx, k));
            return neumaier_total(&acc);
        }
    case PE_OP_prod:
        if (integer) {
            uint32_t acc = 1;
            for (int64_t k = 0; k < len; k++) acc *= (uint32_t)(int32_t)value(ctx, k);
            return (int32_t)acc;
        } else {
            double acc = 1;
            for (int64_t k = 0; k < len; k++) acc *= value(ctx, k);
            return acc;
        }
    case PE_OP_max_reduce:
    case PE_OP_min_reduce:
    case PE_OP_norminf: {
        double best = op == PE_OP_min_reduce ? INFINITY : -INFINITY;
        for (int64_t k = 0; k < len; k++) {
            double v = value(ctx, k);
            if (op == PE_OP_norminf) v = fabs(v);
            if (isnan(v)) return NAN;
            if (op == PE_OP_min_reduce ? v < best : v > best) best = v;
        }
        return op == PE_OP_norminf && len == 0 ? 0.0 : best;
    }
    case PE_OP_argmax:
    case PE_OP_argmin: {
        int64_t at = 0;
        double best = value(ctx, 0);
        if (isnan(best)) return 0;
        for (int64_t k = 1; k < len; k++) {
            double v = value(ctx, k);
            if (isnan(v)) return (double)k;
            if (op == PE_OP_argmax ? v > best : v < best) best = v, at = k;
        }
        return (double)at;
    }
    case PE_OP_mean:
    case PE_OP_var:
    case PE_OP_stddev: {
        neumaier acc = {0, 0};
        for (int64_t k = 0; k < len; k++) neumaier_add(&acc, value(ctx, k));
        double mean = neumaier_total(&acc) / (double)len;
        if (op == PE_OP_mean) return mean;
        /* The deviations are scaled by a power of two (exactly) so that their
         * squares neither overflow nor underflow: stddev([1e200, -1e200]) is
         * 1e200 (NumPy: inf), var overflows only where its value does.  A
         * deviation that is not finite (an infinity or NaN met) is IEEE's. */
        double largest = 0;
        for (int64_t k = 0; k < len; k++) {
            double d = fabs(value(ctx, k) - mean);
            if (!(d <= largest)) largest = d; /* NaN stays */
        }
        int e = largest > 0 && isfinite(largest) ? ilogb(largest) : 0;
        neumaier dev = {0, 0};
        for (int64_t k = 0; k < len; k++) {
            double d = ldexp(value(ctx, k) - mean, -e);
            neumaier_add(&dev, d * d);
        }
        double scaled_var = neumaier_total(&dev) / (double)len;
        return op == PE_OP_var ? ldexp(scaled_var, 2 * e) : ldexp(sqrt(scaled_var), e);
    }
    case PE_OP_any:
        for (int64_t k = 0; k < len; k++)
            if (value(ctx, k) != 0) return 1;
        return 0;
    case PE_OP_all:
        for (int64_t k = 0; k < len; k++)
            if (value(ctx, k) == 0) return 0;
        return 1;
    case PE_OP_norm1: {
        neumaier acc = {0, 0};
        for (int64_t k = 0; k < len; k++) neumaier_add(&acc, fabs(value(ctx, k)));
        return neumaier_total(&acc);
    }
    case PE_OP_norm2: {
        /* scaled by the largest magnitude so that squares neither overflow nor underflow */
        double scale = 0;
        for (int64_t k = 0; k < len; k++) {
            double v = fabs(value(ctx, k));
            if (isnan(v)) return NAN;
            if (v > scale) scale = v;
        }
        if (scale == 0 || isinf(scale)) return scale;
        neumaier acc = {0, 0};
        for (int64_t k = 0; k < len; k++) {
            double v = value(ctx, k) / scale;
            neumaier_add(&acc, v * v);
        }
        return scale * sqrt(neumaier_total(&acc));
    }
    /* every other op of the catalog: not a reduction, never asked */
#define PE_OP(name, kind, arity, fusible, cost, result) CASE_UNLESS_REDUCE_##kind(name)
#include "../../irformat/ops.def"
    case PE_OP__COUNT:
        break;
    }
    return NAN;
}

/* pe_dot: the products of the broadcast operands, in row-major order. */
typedef struct {
    pe_port *const *in;
    pe_dtype ct;
    bool integer;
    bool conjugate; /* vdot: conj(a) * b */
    int rank;
    int64_t shape[PE_MAX_RANK];
    int64_t stride[2][PE_MAX_RANK];
} products;
/* The operands' offsets of the k-th product (row-major over the broadcast shape). */
static void product_offsets(const products *pr, int64_t k, int64_t *off0, int64_t *off1)
{
    int64_t idx[PE_MAX_RANK];
    unflatten(k, pr->rank, pr->shape, idx);
    *off0 = *off1 = 0;
    for (int d = 0; d < pr->rank; d++) {
        *off0 += idx[d] * pr->stride[0][d];
        *off1 += idx[d] * pr->stride[1][d];
    }
}

static double product_value(const void *ctx, int64_t k)
{
    const products *pr = ctx;
    int64_t off0, off1;
    product_offsets(pr, k, &off0, &off1);
    double a = pe_ref_round_to(pr->ct, load(pr->in[0], off0)), b = pe_ref_round_to(pr->ct, load(pr->in[1], off1));
    if (pr->integer) return pe_ref_map_i32(PE_OP_mul, (int32_t)a, (int32_t)b, 0);
    return a * b;
}

/* Complex reductions (sum, prod, mean, dot, vdot): sums compensated part
 * by part, products in order by the textbook formula (pe_ref_complex_mul). */
typedef double _Complex (*complex_value_fn)(const void *ctx, int64_t k);

static double _Complex strided_value_c(const void *ctx, int64_t k)
{
    const strided *s = ctx;
    return load_c(s->x, s->base + k * s->step);
}

static double _Complex product_value_c(const void *ctx, int64_t k)
{
    const products *pr = ctx;
    int64_t off0, off1;
    product_offsets(pr, k, &off0, &off1);
    double _Complex a = pe_ref_round_to_c(pr->ct, load_c(pr->in[0], off0));
    double _Complex b = pe_ref_round_to_c(pr->ct, load_c(pr->in[1], off1));
    return pe_ref_complex_mul(pr->conjugate ? conj(a) : a, b);
}

static double _Complex reduce_one_c(pe_op op, complex_value_fn value, const void *ctx, int64_t len)
{
    if (op == PE_OP_prod) {
        double _Complex acc = 1;
        for (int64_t k = 0; k < len; k++) acc = pe_ref_complex_mul(acc, value(ctx, k));
        return acc;
    }
    neumaier re = {0, 0}, im = {0, 0};
    for (int64_t k = 0; k < len; k++) {
        double _Complex v = value(ctx, k);
        neumaier_add(&re, creal(v));
        neumaier_add(&im, cimag(v));
    }
    double _Complex sum = CMPLX(neumaier_total(&re), neumaier_total(&im));
    return op == PE_OP_mean ? CMPLX(creal(sum) / (double)len, cimag(sum) / (double)len) : sum;
}

static void run_reduce(pe_port *p, pe_port *const *in)
{
    pe_op op = (pe_op)p->op;
    bool integer = p->ctype == PE_I32 && p->dtype == PE_I32;
    bool complex_values = pe_dtype_is_complex((pe_dtype)p->ctype);
    if (op == PE_OP_dot || op == PE_OP_vdot) {
        products pr = {.in = in, .ct = (pe_dtype)p->ctype, .integer = integer};
        pe_broadcast_shapes(in, 2, &pr.rank, pr.shape);
        for (int k = 0; k < 2; k++) broadcast_strides(in[k], pr.rank, pr.shape, pr.stride[k]);
        int64_t len = pe_shape_numel(pr.rank, pr.shape);
        pr.conjugate = op == PE_OP_vdot;
        if (complex_values) store_c(p, 0, reduce_one_c(op, product_value_c, &pr, len));
        else store(p, 0, reduce_one(op, integer, product_value, &pr, len));
        return;
    }
    const pe_port *x = in[0];
    int axis = (int)p->param[0];
    int64_t outer = 1, len = x->numel, inner = 1;
    if (axis >= 0) {
        len = x->shape[axis];
        for (int d = 0; d < axis; d++) outer *= x->shape[d];
        for (int d = axis + 1; d < x->rank; d++) inner *= x->shape[d];
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            strided s = {x, o * len * inner + i, inner};
            if (complex_values) store_c(p, o * inner + i, reduce_one_c(op, strided_value_c, &s, len));
            else store(p, o * inner + i, reduce_one(op, integer, strided_value, &s, len));
        }
}

/* ------------------------------------------------ views and generators */

/* The flat input index that output element `idx` copies, for one-input views. */
static int64_t view_source(const pe_port *p, const pe_port *x, const int64_t *idx)
{
    int64_t src[PE_MAX_RANK];
    switch ((pe_op)p->op) {
    case PE_OP_transpose: /* a permutation: result axis d is axis param[d] of x */
        for (int d = 0; d < p->rank; d++) src[p->param[d]] = idx[d];
        return flatten(x->rank, x->shape, src);
    case PE_OP_slice: /* start param[d], step param[rank + d] */
        for (int d = 0; d < p->rank; d++) src[d] = p->param[d] + idx[d] * p->param[p->rank + d];
        return flatten(x->rank, x->shape, src);
    case PE_OP_periodic: {
        int off = p->rank - x->rank;
        for (int d = 0; d < x->rank; d++) src[d] = idx[d + off] % x->shape[d];
        return flatten(x->rank, x->shape, src);
    }
    case PE_OP_spread: {
        int axis = (int)p->param[0];
        if (p->param[1] == 0) { /* replicate a size-1 axis */
            for (int d = 0; d < p->rank; d++) src[d] = d == axis ? 0 : idx[d];
        } else {                /* a new axis was inserted */
            for (int d = 0, k = 0; d < p->rank; d++)
                if (d != axis) src[k++] = idx[d];
        }
        return flatten(x->rank, x->shape, src);
    }
    case PE_OP_reshape: /* the same row-major order */
        break;
    case PE_OP_gather: case PE_OP_concat: /* two inputs: run_view computes them itself */
        break;
    /* every other op of the catalog: not a view, never asked */
#define PE_OP(name, kind, arity, fusible, cost, result) CASE_UNLESS_VIEW_##kind(name)
#include "../../irformat/ops.def"
    case PE_OP__COUNT:
        break;
    }
    return flatten(p->rank, p->shape, idx);
}

static void run_view(pe_port *p, pe_port *const *in)
{
    int64_t idx[PE_MAX_RANK];
    pe_op op = (pe_op)p->op;
    if (op == PE_OP_gather) {
        const pe_port *x = in[0], *index = in[1];
        for (int64_t o = 0; o < p->numel; o++) {
            double j = load(index, o);
            if (!(j >= 0 && j < (double)x->numel)) {
                char what[160];
                snprintf(what, sizeof what, "index %.0f at position %lld is out of range for %lld elements", j,
                         (long long)o, (long long)x->numel);
                fail(p, PE_E_ARG, what);
                return;
            }
            copy_element(p, o, x, (int64_t)j);
        }
        return;
    }
    if (op == PE_OP_concat) {
        int axis = (int)p->param[0];
        const pe_port *a = in[0], *b = in[1];
        for (int64_t o = 0; o < p->numel; o++) {
            unflatten(o, p->rank, p->shape, idx);
            if (idx[axis] < a->shape[axis]) {
                copy_element(p, o, a, flatten(a->rank, a->shape, idx));
            } else {
                idx[axis] -= a->shape[axis];
                copy_element(p, o, b, flatten(b->rank, b->shape, idx));
            }
        }
        return;
    }
    for (int64_t o = 0; o < p->numel; o++) {
        unflatten(o, p->rank, p->shape, idx);
        copy_element(p, o, in[0], view_source(p, in[0], idx));
    }
}

/* A random draw's elements (irformat/philox.h): the key words and the draw
 * number are the operands' values, element o's counter its flat index. */
static void run_random(pe_port *p, pe_port *const *in)
{
    uint32_t key0 = (uint32_t)(int32_t)load(in[0], 0), key1 = (uint32_t)(int32_t)load(in[1], 0);
    uint32_t draw = (uint32_t)(int32_t)load(in[2], 0);
    int is_float = pe_dtype_is_float((pe_dtype)p->dtype), bytes = (int)pe_dtype_size((pe_dtype)p->dtype);
    for (int64_t o = 0; o < p->numel; o++) {
        uint32_t w[4];
        pe_philox_element(w, key0, key1, draw, (uint64_t)o, (int)p->param[0]);
        store(p, o, p->op == PE_OP_random_normal ? pe_philox_normal(w) : pe_philox_uniform(w, is_float, bytes));
    }
}

static void run_generator(pe_port *p, pe_port *const *in)
{
    if (p->op == PE_OP_random_uniform || p->op == PE_OP_random_normal) {
        run_random(p, in);
        return;
    }
    int64_t idx[PE_MAX_RANK];
    for (int64_t o = 0; o < p->numel; o++) {
        unflatten(o, p->rank, p->shape, idx);
        double v = p->op == PE_OP_index ? (double)idx[p->param[0]] : (double)(idx[0] == idx[1]);
        store(p, o, v);
    }
}

/* ------------------------------------------------------------- driver */

void pe_interp_fill(void *dst, pe_dtype t, double v, int64_t n)
{
    pe_port p = {.dtype = (uint8_t)t, .buf = dst};
    for (int64_t i = 0; i < n; i++) store(&p, i, v);
}

/* Materialises a uniform constant into a buffer (for pe_map). */
bool pe_interp_materialise(pe_port *p)
{
    if (p->buf) return true;
    p->buf = pe_mem_alloc(pe_port_bytes(p));
    if (!p->buf) return false;
    pe_interp_fill(p->buf, (pe_dtype)p->dtype, p->value, p->numel);
    return true;
}

/* Each intrinsic's reference, indexed by its op (irformat/ops_intrinsic.def's
 * reference column; irformat/ops.c checks that every intrinsic has a row). */
typedef bool (*reference_fn)(pe_port *p, pe_port *const *in, char *why, size_t n_why, pe_status *code);
static const reference_fn references[PE_OP__COUNT] = {
#define PE_OP_INTRINSIC(name, fits, host, reference) [PE_OP_##name] = reference,
#include "../../irformat/ops_intrinsic.def"
};

bool pe_interp_compute_into(pe_port *p, pe_port *const *in)
{
    switch (pe_op_table[p->op].kind) {
    case PE_KIND_MAP: run_map(p, in); break;
    case PE_KIND_REDUCE: run_reduce(p, in); break;
    case PE_KIND_VIEW: run_view(p, in); break;
    case PE_KIND_GENERATOR: run_generator(p, in); break;
    case PE_KIND_INTRINSIC: {
        char why[200];
        pe_status code = PE_E_ARG;
        if (!references[p->op](p, in, why, sizeof why, &code)) fail(p, code, why);
        break;
    }
    case PE_KIND_IO: fail(p, PE_E_ARG, "the interpreter cannot execute this op"); break;
    }
    return p->state != PE_PORT_INVALID;
}

static bool compute(pe_port *p)
{
    pe_port *in[PE_PORT_MAX_INPUTS];
    for (int k = 0; k < p->n_in; k++) {
        in[k] = pe_port_at(p->in[k]);
        if (in[k]->state == PE_PORT_READY) pe_port_host(in[k]); /* a GPU result: its host copy */
        if (in[k]->state == PE_PORT_INVALID) {
            pe_port_inherit_invalid(p, in[k]);
            return false;
        }
    }
    size_t bytes = pe_port_bytes(p);
    if (!pe_port_result_buffer(p)) {
        char what[96];
        snprintf(what, sizeof what, "out of memory for a result of %zu bytes", bytes);
        fail(p, PE_E_NOMEM, what);
        return false;
    }
    if (!pe_interp_compute_into(p, in)) {
        pe_port_result_drop(p);
        return false;
    }
    p->state = PE_PORT_READY;
    return true;
}

bool pe_interp_execute(pe_port *p)
{
    /* a view the kernels would have read through (the program generator
     * left it uncomputed: proggen.c) is computed first where a kernel's
     * members fall back to this interpreter */
    for (int k = 0; k < p->n_in; k++) {
        pe_port *q = pe_port_at(p->in[k]);
        if (q->state == PE_PORT_PENDING && pe_op_table[q->op].kind == PE_KIND_VIEW) pe_interp_execute(q);
    }
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    bool computed = compute(p);
    pe_counters.ops_interpreted += computed;
    if (pe_prof_on && computed) pe_prof_interp(p, t0, pe_prof_now());
    /* into a reader's buffer (a kernel the compiler rejected): the
     * interpreter keeps every value, so a copy of its own */
    if (computed && pe_port_lent_for_reader(p)) computed = pe_port_copy_lent(p);
    pe_port_drop_inputs(p); /* inputs are needed no longer */
    return computed;
}

static size_t interp_run(pe_executor *ex, const pe_batch *batch, const pe_program_seq *seq, const void *const *code,
                         int place)
{
    assert(pe_api_held());
    (void)ex, (void)seq, (void)code, (void)place;
    const pe_entry *entries = batch->entries;
    size_t n = batch->n;
    size_t computed = 0;
    pe_find_live_consumers(entries, n, batch->epoch); /* dead chains are skipped whole */
    for (size_t i = 0; i < n; i++) {
        if (entries[i].kind != PE_ENTRY_COMPUTE) continue;
        pe_port *p = pe_port_at(entries[i].port);
        if (p->state != PE_PORT_PENDING) continue;
        if (pe_port_dead_in_batch(p) || pe_port_is_dead(p)) { /* nobody can see it: skip the work */
            pe_port_drop_inputs(p);
            p->state = PE_PORT_READY;
            continue;
        }
        computed += pe_interp_execute(p);
    }
    return computed;
}

pe_executor pe_interp_executor = {.name = "interp", .caps = 0, .run = interp_run};
