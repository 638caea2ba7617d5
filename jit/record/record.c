/* record.c — turning a request into a port: operand lookup, invalid-array
 * propagation, shape and type rules, folding, the COMPUTE entry, and handing
 * the result to the application; a complex sum, mean, dot or vdot recorded
 * as two real reductions (record_complex_sum), a complex prod as two in
 * polar form (record_complex_prod).  Nothing is computed here (progressive
 * evaluation); the C-scheduler (queue.c) decides when the queue runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irload.h"
#include "macro_rec.h"
#include "record.h"
#include "tape.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"
#include "../../exec/interp/refmath.h"
#include "../../profiler/collect.h"

#define NO_SLOT UINT32_MAX

pe_array pe_publish(uint32_t idx)
{
    pe_port_at(idx)->refs_app++;
    if (!pe_macro_top || pe_macro_note_publish(idx, pe_scope_depth_here())) pe_scope_register(idx);
    return pe_handle_of(idx);
}

pe_array pe_publish_invalid(const pe_site *s, pe_op op, pe_status code, bool raised, const char *message)
{
    if (pe_rt.shutting_down) return (pe_array){0}; /* the port table is about to go */
    uint32_t idx = pe_port_new();
    if (idx == NO_SLOT) return (pe_array){0};
    pe_port *p = pe_port_at(idx);
    p->op = (uint8_t)op;
    p->site = s;
    p->state = PE_PORT_INVALID;
    p->err_code = code;
    p->err_raised = raised;
    p->err_msg = message ? strdup(message) : NULL;
    return pe_publish(idx);
}

pe_array pe_invalid_result(const pe_site *s, pe_op op, pe_status code)
{
    const pe_error *e = pe_last_error();
    return pe_publish_invalid(s, op, code, true, e ? e->message : NULL);
}

void pe_release_temps(const pe_array *ins, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t idx = (ins[i].h & 0xffffffffu) - 1;
        if (ins[i].h == 0 || idx >= pe_rt.n_slots) continue;
        pe_port *p = pe_port_at((uint32_t)idx);
        if (p->gen == (uint32_t)(ins[i].h >> 32) && p->temp && p->refs_app > 0)
            pe_port_release_app((uint32_t)idx, p->site);
    }
}

bool pe_resolve_operands(const pe_site *s, pe_op op, const pe_array *ins, int n, const char *api,
                         pe_port **in, uint32_t *in_idx, pe_array *result)
{
    if (!pe_require_init(s, api)) {
        *result = (pe_array){0};
        return false;
    }
    pe_counters.ops_recorded++;
    /* pe_demand may wait for an operand's batch with the runtime lock let
     * go, and another thread may release any of the operands meanwhile:
     * each is held until all are resolved, then its handle checked again
     * (issue 36: a port freed under a waiter). */
    int held = 0;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        in[i] = pe_port_lookup(s, ins[i], api, &in_idx[i]);
        if (!in[i]) {
            *result = pe_invalid_result(s, op, PE_E_HANDLE);
            ok = false;
            break;
        }
        pe_port_hold(in_idx[i]);
        held++;
        if (!pe_demand(s, in_idx[i], false, api)) { /* a deferred value: computed again (demand.c) */
            *result = pe_invalid_result(s, op, PE_E_NOMEM);
            ok = false;
        }
    }
    for (int i = 0; i < held && ok; i++)
        if (in[i]->refs_app == 0 && !pe_port_lookup(s, ins[i], api, &in_idx[i])) { /* released meanwhile */
            *result = pe_invalid_result(s, op, PE_E_HANDLE);
            ok = false;
        }
    for (int i = 0; i < held; i++) pe_port_let_go(in_idx[i]);
    if (!ok) return false;
    /* An invalid operand makes the result invalid, without a new error: the
     * first failure is the one worth reporting, at the read. */
    for (int i = 0; i < n; i++) {
        if (in[i]->state == PE_PORT_INVALID) {
            *result = pe_publish_invalid(s, op, in[i]->err_code, in[i]->err_raised, in[i]->err_msg);
            return false;
        }
    }
    return true;
}

bool pe_check_dtype(const pe_site *s, const char *api, pe_dtype t)
{
    if (pe_dtype_valid(t)) return true;
    pe_raise(s, PE_E_TYPE, api, "unknown dtype %d", (int)t);
    return false;
}

/* Complex operands go only where irformat/ops_complex.def has a row; a
 * condition, a gather index and pe_complex's parts must be real, and a cast
 * from complex to real would drop the imaginary part (PE_E_TYPE, naming
 * the calls that say which part is meant). */
static bool check_complex(const pe_site *s, const char *api, pe_op op, pe_port *const *in, int n,
                          pe_dtype explicit_dtype)
{
    for (int i = 0; i < n; i++) {
        pe_dtype t = (pe_dtype)in[i]->dtype;
        if (!pe_dtype_is_complex(t)) continue;
        const char *why = NULL;
        if (op == PE_OP_cast) {
            if (!pe_dtype_is_complex(explicit_dtype))
                why = "from a complex type to a real one would drop the imaginary part (take pe_real or pe_abs)";
        } else if (!pe_op_takes_complex(op) || op == PE_OP_complex) {
            why = "is not defined for complex operands";
        } else if (op == PE_OP_cond && i == 0) {
            why = "needs a real condition";
        } else if (op == PE_OP_gather && i == 1) {
            why = "needs a real index";
        }
        if (why) {
            pe_raise(s, PE_E_TYPE, api, "%s %s (operand %d is %s)", pe_op_table[op].name, why, i + 1,
                     pe_dtype_name(t));
            return false;
        }
    }
    return true;
}

bool pe_check_shape(const pe_site *s, const char *api, int rank, const int64_t *shape)
{
    if (rank < 0 || rank > PE_MAX_RANK) {
        pe_raise(s, PE_E_ARG, api, "rank %d out of range (0..%d)", rank, PE_MAX_RANK);
        return false;
    }
    if (rank > 0 && !shape) {
        pe_raise(s, PE_E_ARG, api, "shape is NULL for rank %d", rank);
        return false;
    }
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 0) {
            pe_raise(s, PE_E_SHAPE, api, "negative extent %lld on axis %d", (long long)shape[d], d);
            return false;
        }
    }
    int64_t n;
    if (!pe_shape_numel_checked(rank, shape, &n)) {
        char text[128];
        pe_format_shape(text, sizeof text, rank, shape);
        pe_raise(s, PE_E_SHAPE, api, "shape %s has too many elements (the most is %lld)", text,
                 (long long)PE_MAX_NUMEL);
        return false;
    }
    return true;
}

uint32_t pe_make_constant(pe_dtype t, int rank, const int64_t *shape, double v, bool weak, const pe_site *s)
{
    uint32_t idx = pe_port_new();
    if (idx == NO_SLOT) return NO_SLOT;
    pe_port *p = pe_port_at(idx);
    p->op = PE_OP_constant;
    p->dtype = p->ctype = (uint8_t)t;
    p->rank = (uint8_t)rank;
    for (int d = 0; d < rank; d++) p->shape[d] = shape[d];
    p->numel = pe_shape_numel(rank, shape);
    p->value = pe_ref_round_to(t, v);
    p->weak = weak;
    p->site = s;
    p->state = PE_PORT_READY;
    if (pe_macro_top) pe_macro_note_constant(idx);
    return idx;
}

uint32_t pe_enqueue_op(const pe_site *s, pe_op op, const uint32_t *in_idx, int n, pe_dtype dtype,
                       pe_dtype ctype, int rank, const int64_t *shape, const int64_t *params, int n_params)
{
    /* the callers check the shapes they derive; this is the last line, so
     * that no port ever holds a count that wrapped */
    int64_t numel;
    if (!pe_shape_numel_checked(rank, shape, &numel)) {
        pe_check_shape(s, pe_op_table[op].name, rank, shape); /* raises, naming the shape */
        return NO_SLOT;
    }
    pe_ir_begin_request(s, op);
    pe_check_retained(s);
    uint32_t idx = pe_port_new();
    if (idx == NO_SLOT) {
        pe_raise(s, PE_E_NOMEM, pe_op_table[op].name, "out of memory for the port table");
        return NO_SLOT;
    }
    pe_port *p = pe_port_at(idx);
    pe_port_describe(p, op, in_idx, n, dtype, ctype, rank, shape, params, n_params);
    p->site = s;
    const pe_site_record *sr = pe_site_record_of(s);
    p->store_when_held = sr && sr->recomputed_in == pe_rt.life; /* deferred.c: this site's values are used again */
    for (int i = 0; i < n; i++) pe_port_ref(in_idx[i]);
    pe_tape_note(idx, s); /* out of memory: raised, and the value is not differentiated */
    if (!pe_queue_push(PE_ENTRY_COMPUTE, idx)) {
        pe_port_drop_inputs(p);
        p->state = PE_PORT_INVALID;
        p->err_code = PE_E_NOMEM;
        p->err_raised = true;
        pe_raise(s, PE_E_NOMEM, pe_op_table[op].name, "out of memory for the work queue");
        const pe_error *e = pe_last_error();
        p->err_msg = e ? strdup(e->message) : NULL;
    } else if (pe_macro_top) {
        pe_macro_note_op(idx);
    }
    return idx;
}

pe_array pe_record_op(const pe_site *s, pe_op op, const uint32_t *in_idx, int n, pe_dtype dtype,
                      pe_dtype ctype, int rank, const int64_t *shape, const int64_t *params, int n_params)
{
    if (pe_prof_on) pe_prof_call(s);
    uint32_t idx = pe_enqueue_op(s, op, in_idx, n, dtype, ctype, rank, shape, params, n_params);
    if (idx == NO_SLOT) return (pe_array){0};
    pe_array h = pe_publish(idx);
    pe_queue_maybe_flush();
    return h;
}

static void describe_shapes(char *out, size_t n, pe_port *const *in, int count)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < count && used < n; i++) {
        char one[96];
        pe_format_shape(one, sizeof one, in[i]->rank, in[i]->shape);
        used += (size_t)snprintf(out + used, n - used, "%s%s", i ? (i == count - 1 ? " and " : ", ") : "", one);
    }
}

/* A C integer operand outside i32's range (pe__weak_int keeps its value
 * exactly) takes a floating compute type as any C scalar does; where the
 * operation computes in i32 it cannot be represented, and saturating it
 * silently would change the program's meaning (NumPy 2 and JAX refuse it
 * too): PE_E_ARG at the call.  A condition (cond's first operand, a cast to
 * bool) only needs its truth, which saturation keeps.  Only the temporary
 * the call's _Generic made can hold such a value: folded constants are
 * rounded to their type when made. */
static bool settle_wide_ints(const pe_site *s, const char *api, pe_port *const *in, int n, pe_dtype ctype,
                             bool truth_only)
{
    for (int i = 0; i < n; i++) {
        pe_port *p = in[i];
        bool wide = p->weak && p->op == PE_OP_constant && p->dtype == PE_I32 &&
                    (p->value < (double)INT32_MIN || p->value > (double)INT32_MAX);
        if (!wide) continue;
        if (truth_only) {
            /* saturated below: nonzero stays nonzero */
        } else if (pe_dtype_is_float(ctype)) {
            p->dtype = p->ctype = (uint8_t)ctype;
        } else {
            pe_raise(s, PE_E_ARG, api,
                     "the integer %.0f is outside the range of i32, the type this operation computes in "
                     "(pass it as a double, or cast the array operand to f64)",
                     p->value);
            return false;
        }
        p->value = pe_ref_round_to((pe_dtype)p->dtype, p->value);
    }
    return true;
}

pe_array pe_record_map(const pe_site *s, pe_op op, const pe_array *ins, int n, pe_dtype explicit_dtype,
                       const char *api)
{
    pe_port *in[PE_PORT_MAX_INPUTS];
    uint32_t in_idx[PE_PORT_MAX_INPUTS];
    pe_array result;
    if (!pe_resolve_operands(s, op, ins, n, api, in, in_idx, &result)) {
        pe_release_temps(ins, n);
        return result;
    }
    int rank;
    int64_t shape[PE_MAX_RANK];
    if (!pe_broadcast_shapes(in, n, &rank, shape)) {
        char shapes[400];
        describe_shapes(shapes, sizeof shapes, in, n);
        pe_raise(s, PE_E_SHAPE, api, "shapes %s do not broadcast", shapes);
        pe_release_temps(ins, n);
        return pe_invalid_result(s, op, PE_E_SHAPE);
    }
    if (!pe_check_shape(s, api, rank, shape)) { /* {2^24 + 16, 1} with {1, 2^40}: a count that wraps */
        pe_release_temps(ins, n);
        return pe_invalid_result(s, op, PE_E_SHAPE);
    }
    if (!check_complex(s, api, op, in, n, explicit_dtype)) {
        pe_release_temps(ins, n);
        return pe_invalid_result(s, op, PE_E_TYPE);
    }
    const pe_op_info *info = &pe_op_table[op];
    pe_dtype dtype, ctype;
    bool settled;
    if (info->result == PE_RESULT_EXPLICIT) { /* cast: a C integer is converted as C would */
        settled = settle_wide_ints(s, api, in, n, explicit_dtype, explicit_dtype == PE_BOOL);
        ctype = (pe_dtype)in[0]->dtype;
        dtype = explicit_dtype;
    } else {
        pe_op_types(op, in, n, &dtype, &ctype);
        int first = op == PE_OP_cond; /* the condition takes no part in the type */
        settled = settle_wide_ints(s, api, in, first, ctype, true) &&
                  settle_wide_ints(s, api, in + first, n - first, ctype, false);
    }
    if (!settled) {
        pe_release_temps(ins, n);
        return pe_invalid_result(s, op, PE_E_ARG);
    }
    pe_ir_mark_literals(s, api, in, n);
    uint32_t folded = pe_fold_map(s, op, in, in_idx, n, dtype, ctype, rank, shape);
    pe_array h;
    if (folded != NO_SLOT) {
        pe_counters.ops_folded++;
        if (pe_prof_on) pe_prof_call(s);
        h = pe_publish(folded);
        pe_queue_maybe_flush();
    } else {
        h = pe_record_op(s, op, in_idx, n, dtype, ctype, rank, shape, NULL, 0);
    }
    pe_release_temps(ins, n);
    pe_ir_release_operands(s, api, ins, n);
    pe_ir_mark_read_once(s, op, n, h);
    return h;
}

static pe_array record_complex_sum(const pe_site *s, pe_op op, pe_port *const *in, const uint32_t *in_idx, int n,
                                   pe_dtype dtype, pe_dtype ctype, int in_rank, const int64_t *in_shape, int rank,
                                   const int64_t *shape, int64_t axis);
static pe_array record_complex_prod(const pe_site *s, uint32_t values, pe_dtype values_dtype, pe_dtype dtype,
                                    int in_rank, const int64_t *in_shape, int rank, const int64_t *shape,
                                    int64_t axis);
static pe_array record_reduction(const pe_site *s, pe_op op, pe_port **in, const uint32_t *in_idx, int n, int axis,
                                 bool per_axis, const char *api);

pe_array pe_record_reduce(const pe_site *s, pe_op op, const pe_array *ins, int n, int axis, bool per_axis,
                          const char *api)
{
    pe_port *in[2];
    uint32_t in_idx[2];
    pe_array result;
    if (!pe_resolve_operands(s, op, ins, n, api, in, in_idx, &result)) {
        pe_release_temps(ins, n);
        return result;
    }
    pe_array h = record_reduction(s, op, in, in_idx, n, axis, per_axis, api);
    pe_release_temps(ins, n); /* C-scalar operands of pe_dot */
    pe_ir_release_operands(s, api, ins, n);
    pe_ir_mark_read_once(s, op, n, h);
    return h;
}

static pe_array record_reduction(const pe_site *s, pe_op op, pe_port **in, const uint32_t *in_idx, int n, int axis,
                                 bool per_axis, const char *api)
{
    int in_rank;
    int64_t in_shape[PE_MAX_RANK];
    if (!pe_broadcast_shapes(in, n, &in_rank, in_shape)) {
        char shapes[400];
        describe_shapes(shapes, sizeof shapes, in, n);
        pe_raise(s, PE_E_SHAPE, api, "shapes %s do not broadcast", shapes);
        return pe_invalid_result(s, op, PE_E_SHAPE);
    }
    if (!pe_check_shape(s, api, in_rank, in_shape)) return pe_invalid_result(s, op, PE_E_SHAPE); /* pe_dot's broadcast */
    if (!check_complex(s, api, op, in, n, PE_BOOL)) return pe_invalid_result(s, op, PE_E_TYPE);
    int rank = 0;
    int64_t shape[PE_MAX_RANK], extent = pe_shape_numel(in_rank, in_shape);
    if (per_axis) {
        if (!pe_normalise_axis(&axis, in_rank)) {
            pe_raise(s, PE_E_ARG, api, "axis %d out of range for rank %d", axis, in_rank);
            return pe_invalid_result(s, op, PE_E_ARG);
        }
        for (int d = 0; d < in_rank; d++)
            if (d != axis) shape[rank++] = in_shape[d];
        extent = in_shape[axis];
    } else {
        axis = -1;
    }
    bool needs_element = op == PE_OP_max_reduce || op == PE_OP_min_reduce || op == PE_OP_argmax ||
                         op == PE_OP_argmin;
    if (needs_element && extent == 0) {
        pe_raise(s, PE_E_SHAPE, api, "reduction of an empty extent has no %s", pe_op_table[op].name);
        return pe_invalid_result(s, op, PE_E_SHAPE);
    }
    if ((op == PE_OP_argmax || op == PE_OP_argmin) && extent > INT32_MAX) {
        pe_raise(s, PE_E_SHAPE, api, "%lld elements: the index does not fit in i32", (long long)extent);
        return pe_invalid_result(s, op, PE_E_SHAPE);
    }
    pe_dtype dtype, ctype;
    pe_op_types(op, in, n, &dtype, &ctype);
    if (!settle_wide_ints(s, api, in, n, ctype, false)) return pe_invalid_result(s, op, PE_E_ARG);
    int64_t param = axis;
    if (pe_dtype_is_complex(ctype) && op == PE_OP_prod)
        return record_complex_prod(s, in_idx[0], (pe_dtype)in[0]->dtype, dtype, in_rank, in_shape, rank, shape, param);
    if (pe_dtype_is_complex(ctype))
        return record_complex_sum(s, op, in, in_idx, n, dtype, ctype, in_rank, in_shape, rank, shape, param);
    return pe_record_op(s, op, in_idx, n, dtype, ctype, rank, shape, &param, 1);
}

/* A complex sum, mean, dot or vdot as two real reductions, so that kernels
 * compute it (a kernel holds one reduction of one accumulator): the sum of
 * the real parts and the sum of the imaginary parts, each its own kernel
 * with the fused producer recomputed, joined by pe_complex.  The values are
 * the interpreter's complex reduction's ("compensated part by part",
 * exec/interp/interp.c's reduce_one_c): each part summed on its own in
 * double and rounded to the result's part type once; a mean divides each
 * part's sum by n.  dot and vdot multiply the operands, each rounded to the
 * compute type as the interpreter rounds them, in c128 (the interpreter's
 * double product: a c64 product rounded to floats term by term would not be
 * its value), and round the f64 part sums to c64 at the end.  The product
 * (the reduction's element-wise producer) stays fused. */
static uint32_t enqueue_map(const pe_site *s, pe_op op, const uint32_t *x, int n, pe_dtype dtype, pe_dtype ctype,
                            int rank, const int64_t *shape)
{
    return pe_enqueue_op(s, op, x, n, dtype, ctype, rank, shape, NULL, 0);
}

static pe_array record_complex_sum(const pe_site *s, pe_op op, pe_port *const *in, const uint32_t *in_idx, int n,
                                   pe_dtype dtype, pe_dtype ctype, int in_rank, const int64_t *in_shape, int rank,
                                   const int64_t *shape, int64_t axis)
{
    /* the line's IR facts (a pecc build) are the request's, pe_sum's: set
     * them, and cut the batch if due, before the parts are enqueued */
    pe_ir_begin_request(s, op);
    uint32_t values = in_idx[0];
    pe_dtype work = ctype; /* the complex type the parts are taken of */
    if (n == 2) {          /* dot, vdot: the products in c128 */
        work = PE_C128;
        uint32_t x[2];
        for (int i = 0; i < 2; i++) {
            x[i] = in_idx[i];
            pe_dtype t = (pe_dtype)in[i]->dtype;
            if (t != ctype) x[i] = enqueue_map(s, PE_OP_cast, &x[i], 1, ctype, t, in[i]->rank, in[i]->shape);
            if (ctype != work && x[i] != NO_SLOT)
                x[i] = enqueue_map(s, PE_OP_cast, &x[i], 1, work, ctype, in[i]->rank, in[i]->shape);
            if (x[i] == NO_SLOT) return (pe_array){0};
        }
        if (op == PE_OP_vdot) x[0] = enqueue_map(s, PE_OP_conj, &x[0], 1, work, work, in[0]->rank, in[0]->shape);
        if (x[0] == NO_SLOT) return (pe_array){0};
        values = enqueue_map(s, PE_OP_mul, x, 2, work, work, in_rank, in_shape);
        if (values == NO_SLOT) return (pe_array){0};
    }
    pe_dtype part = pe_dtype_real_part(work);
    pe_op part_op = op == PE_OP_mean ? PE_OP_mean : PE_OP_sum;
    uint32_t sums[2];
    for (int i = 0; i < 2; i++) {
        uint32_t p = enqueue_map(s, i ? PE_OP_imag : PE_OP_real, &values, 1, part, work, in_rank, in_shape);
        if (p == NO_SLOT) return (pe_array){0};
        sums[i] = pe_enqueue_op(s, part_op, &p, 1, part, part, rank, shape, &axis, 1);
        if (sums[i] == NO_SLOT) return (pe_array){0};
    }
    if (work == dtype) return pe_record_op(s, PE_OP_complex, sums, 2, dtype, part, rank, shape, NULL, 0);
    uint32_t joined = enqueue_map(s, PE_OP_complex, sums, 2, work, part, rank, shape);
    if (joined == NO_SLOT) return (pe_array){0};
    return pe_record_op(s, PE_OP_cast, &joined, 1, dtype, work, rank, shape, NULL, 0);
}

/* A complex prod in polar form, so that kernels compute it as they do a
 * complex sum (a kernel holds one reduction of one real accumulator):
 *     prod z_k = M (cos T + i sin T),  M = prod |z_k|,  T = sum arg z_k
 * M a real prod and T a real (compensated) sum, each a kernel with the
 * producer fused and recomputed, in c128 whatever the input (the
 * interpreter's one complex accumulator is double complex too: a c64
 * product whose partial products leave f32's range stays right); then,
 * element-wise, pe_complex(cos T, sin T) times M (the textbook product,
 * M + 0i) and the c64 result cast back.  Why not the interpreter's
 * sequential complex multiply: that needs a reduction with two
 * accumulators, which neither generator, the CPU's chunk combination
 * (exec/cpu/partials.c) nor the CUDA combiner has; a tree of element-wise
 * products of halves needs log2(n) kernels the fuser must keep apart.
 * What the polar form changes (docs/semantics.md, "Complex numbers", tested by
 * test_complex_kernels):
 *   rounding: |z_k| and arg z_k are each within a few ulps; T's error is
 *     about u sum |arg z_k| <= pi n u (u the unit roundoff of double), so
 *     the normwise error of the result is within (pi + 2) n u |prod| plus
 *     a few ulps (the sequential textbook product's bound is about
 *     sqrt(5) n u: the same order);
 *   a zero factor: M = 0, the product a zero (its signs those of
 *     0 * (cos T, sin T));
 *   overflow: M = inf gives the infinity in T's direction, (+-inf, +-inf)
 *     (a part whose trig factor is 0 exactly is NaN, inf * 0), where the
 *     sequential product can give NaN (inf - inf);
 *   an infinite part: |z| = inf and arg z its direction, as above;
 *   a NaN part: T NaN, the product NaN + NaN i. */
static pe_array record_complex_prod(const pe_site *s, uint32_t values, pe_dtype values_dtype, pe_dtype dtype,
                                    int in_rank, const int64_t *in_shape, int rank, const int64_t *shape,
                                    int64_t axis)
{
    pe_ir_begin_request(s, PE_OP_prod); /* the line's IR facts are pe_prod's (record_complex_sum) */
    const pe_dtype work = PE_C128, part = PE_F64;
    uint32_t z = values;
    if (values_dtype != work) z = enqueue_map(s, PE_OP_cast, &z, 1, work, values_dtype, in_rank, in_shape);
    if (z == NO_SLOT) return (pe_array){0};
    uint32_t modulus = enqueue_map(s, PE_OP_abs, &z, 1, part, work, in_rank, in_shape);
    uint32_t angle = modulus == NO_SLOT ? NO_SLOT : enqueue_map(s, PE_OP_arg, &z, 1, part, work, in_rank, in_shape);
    if (angle == NO_SLOT) return (pe_array){0};
    uint32_t m = pe_enqueue_op(s, PE_OP_prod, &modulus, 1, part, part, rank, shape, &axis, 1);
    uint32_t t = m == NO_SLOT ? NO_SLOT : pe_enqueue_op(s, PE_OP_sum, &angle, 1, part, part, rank, shape, &axis, 1);
    if (t == NO_SLOT) return (pe_array){0};
    uint32_t trig[2];
    for (int i = 0; i < 2; i++) {
        trig[i] = enqueue_map(s, i ? PE_OP_sin : PE_OP_cos, &t, 1, part, part, rank, shape);
        if (trig[i] == NO_SLOT) return (pe_array){0};
    }
    uint32_t direction = enqueue_map(s, PE_OP_complex, trig, 2, work, part, rank, shape);
    if (direction == NO_SLOT) return (pe_array){0};
    uint32_t factors[2] = {direction, m};
    if (work == dtype) return pe_record_op(s, PE_OP_mul, factors, 2, dtype, work, rank, shape, NULL, 0);
    uint32_t product = enqueue_map(s, PE_OP_mul, factors, 2, work, work, rank, shape);
    if (product == NO_SLOT) return (pe_array){0};
    return pe_record_op(s, PE_OP_cast, &product, 1, dtype, work, rank, shape, NULL, 0);
}
