/* reference.c — the debugger (seed 000's reference results and result
 * checking): values computed a second time by the reference interpreter,
 * beside the real work and without changing it.
 *
 * PE_CHECK (copyout | all): before a batch runs, each value it computes gets
 * a reference (pe_port.ref) made by the interpreter from its inputs'
 * references, so an error propagates as it would through the program; a
 * value the program gave (pe_from_host, a constant) is its own reference.
 * The values the executor stored are then compared with them once they are
 * on the host (the executor's result buffers, whichever executor ran): all
 * of a batch's, in program order, with `all`; with both modes, every value
 * copied out.  Element e of value p differs when
 *     |fast_e - ref_e| > scale * max(|ref_e|, M_p)
 * (NaN equals NaN, an infinity only itself), scale the dtype's (0 for i32
 * and bool: exactly), M_p the largest |ref| of p — the magnitude of the
 * array, so that an element near zero is allowed the error of its
 * neighbours (sin(pi) is not held to a relative error) — and, for the ops
 * that cancel (add, sub, sum, dot, mean) and those whose slope is at most
 * one over any range (sin, cos of a large argument: its last bits decide
 * the result), of its operands, times sqrt(n) for a sum or dot of n terms
 * each carrying the rounding of its own producers (a matmul's results are
 * dots of k terms); an fft's result is allowed the error of its terms (each
 * sums n of the operand's size: a real part that should vanish is 1e-17 of
 * them in the reference).  That absolute error goes on with the reference
 * into its consumers: through the maps that move or scale a value (real,
 * imag, conj, neg, abs, mul), add and sub, the functions of slope at most
 * one (tanh, atan, sin, cos, min, max and their reductions, mean; erf and
 * erfc 1.13), the value a cond chooses, and the views (issue 36: an f32 fft
 * gives an exact 0 where the reference gives 1e-21, and tanh of it was held
 * to a relative error).  A product of n factors is allowed n times the
 * relative error;
 * lu_cond (LAPACK's estimate against the interpreter's exact value) is
 * allowed a relative error of 1.
 * The first difference of the run raises PE_E_CHECK at the line of the op
 * that computed the value, with the element's index and both values.
 *
 * pe_reference and pe_peek evaluate one value's expression (its pending or
 * deferred ports, down to values that exist) on the interpreter, on
 * stand-ins (copies of the ports whose buffers are the evaluation's own):
 * the work queue, the batches, the trace key and every port stay as they
 * were, so the real work is batched and fused as without them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "interp.h"
#include "../base/error.h"
#include "../base/grow.h"

/* Documented in docs/environment.md (PE_CHECK_SCALE): a few hundred ulps of f32 (its
 * primitives are within a few ulps of the interpreter, and values carry
 * their producers' differences), and of f64 a margin above the libm
 * differences and what the interpreter's compensated sums remove. */
void pe_check_default_scales(double *scale)
{
    for (int t = 0; t < PE_DTYPE__COUNT; t++) scale[t] = 0;
    scale[PE_F32] = 1e-4;
    scale[PE_F64] = 1e-10;
    scale[PE_C64] = scale[PE_F32]; /* of each part */
    scale[PE_C128] = scale[PE_F64];
}

/* ------------------------------------------------------------ elements */

/* Element i of a buffer of t; a complex buffer is seen as its parts (2i the
 * real part of element i, 2i + 1 the imaginary part), each compared alone. */
pe_check_state pe_check;

static double element(pe_dtype t, const void *buf, int64_t i)
{
    switch (t) {
    case PE_F32: case PE_C64: return ((const float *)buf)[i];
    case PE_F64: case PE_C128: return ((const double *)buf)[i];
    case PE_I32: return ((const int32_t *)buf)[i];
    case PE_BOOL: return ((const uint8_t *)buf)[i];
    }
    return NAN;
}
static int64_t parts(const pe_port *p) { return p->numel * (pe_dtype_is_complex((pe_dtype)p->dtype) ? 2 : 1); }

static double largest_magnitude(const pe_port *stand)
{
    if (!stand->buf) return fabs(stand->value);
    double m = 0;
    for (int64_t i = 0; i < parts(stand); i++) {
        double v = fabs(element((pe_dtype)stand->dtype, stand->buf, i));
        if (v > m) m = v; /* NaN and infinities left out: they compare exactly */
    }
    return isfinite(m) ? m : 0;
}

/* The floor an operand's reference carries into its consumers: the
 * absolute error its own producers allowed it (at_hand: 0 where the
 * operand's own value stands in, being its own reference). */
static double carried(const pe_port *in) { return in->ref_floor; }

/* The size of an operand's values, or of the error its reference carries if that is larger. */
static double reach(const pe_port *in) { return fmax(largest_magnitude(in), carried(in)); }

/* The part of M_p that p's operands give (above), from their references. */
static double operand_magnitude(const pe_port *p, pe_port *const *in)
{
    switch ((pe_op)p->op) {
    case PE_OP_add: case PE_OP_sub:
        return fmax(reach(in[0]), reach(in[1]));
    case PE_OP_fft: case PE_OP_ifft: { /* each result sums n terms of the operand's size (ifft: over n) */
        double n = (double)in[0]->numel, terms = reach(in[0]) * sqrt(n) * fmax(1, log2(n));
        return p->op == PE_OP_ifft ? terms / n : terms;
    }
    /* the absolute error of an operand that cancelled (a sum, a transform)
     * goes on through the maps that move or scale it, not those that can
     * magnify it (exp, log, div) */
    case PE_OP_real: case PE_OP_imag: case PE_OP_conj: case PE_OP_neg: case PE_OP_abs:
    case PE_OP_tanh: case PE_OP_atan: /* slope at most one */
        return carried(in[0]);
    case PE_OP_erf: case PE_OP_erfc: /* slope at most 2 / sqrt(pi) */
        return carried(in[0]) * 1.1283791670955126;
    case PE_OP_mul:
        return carried(in[0]) * largest_magnitude(in[1]) + carried(in[1]) * largest_magnitude(in[0]);
    case PE_OP_cond: /* the value chosen (the choice itself is exact: bool) */
        return fmax(carried(in[1]), carried(in[2]));
    case PE_OP_max_reduce: case PE_OP_min_reduce: case PE_OP_min: case PE_OP_max:
        return p->n_in > 1 ? fmax(carried(in[0]), carried(in[1])) : carried(in[0]);
    case PE_OP_sin: case PE_OP_cos: /* |f'| <= 1: an operand off by scale * |x| moves the result that much */
        return reach(in[0]);
    case PE_OP_mean:
        return reach(in[0]);
    case PE_OP_sum: {
        int axis = (int)p->param[0];
        double n = (double)(axis >= 0 ? in[0]->shape[axis] : in[0]->numel);
        return reach(in[0]) * sqrt(n);
    }
    case PE_OP_dot: {
        double n = (double)(in[0]->numel > in[1]->numel ? in[0]->numel : in[1]->numel);
        return reach(in[0]) * reach(in[1]) * sqrt(n);
    }
    case PE_OP_matmul: { /* each result a dot of k terms */
        double k = (double)in[0]->shape[in[0]->rank - 1];
        return reach(in[0]) * reach(in[1]) * sqrt(k);
    }
    default: { /* a view moves values: their errors go with them */
        double m = 0;
        if (pe_op_table[p->op].kind == PE_KIND_VIEW)
            for (int k = 0; k < p->n_in; k++) m = fmax(m, carried(in[k]));
        return m;
    }
    }
}

/* ---------------------------------------------------------- evaluation */

typedef struct {
    uint32_t port;
    void *buf;
} computed;

typedef struct {
    bool reference; /* take PE_CHECK's references where they exist */
    bool persist;   /* keep what is computed as the ports' references (PE_CHECK's pass) */
    computed *done; /* otherwise: the evaluation's own values */
    size_t n_done, cap_done;
    char *why;
} evaluation;

enum { FAILED = -1, TO_COMPUTE = 0, AVAILABLE = 1 };

/* Whether port idx's value is at hand for this evaluation (*stand: a copy
 * of the port reading it), is to be computed from its inputs, or cannot be
 * had. */
static int at_hand(evaluation *ev, uint32_t idx, pe_port *stand)
{
    pe_port *p = pe_port_at(idx);
    *stand = *p;
    stand->err_msg = NULL;
    stand->ref_floor = 0; /* a value itself is exact for its consumers' references */
    if (ev->reference && p->ref) {
        stand->buf = p->ref;
        stand->ref_floor = p->ref_floor; /* its reference: the error allowed it goes on */
        return AVAILABLE;
    }
    if (ev->reference && p->ref_failed) return FAILED;
    for (size_t i = ev->n_done; i-- > 0;)
        if (ev->done[i].port == idx) {
            stand->buf = ev->done[i].buf;
            return AVAILABLE;
        }
    if (p->state == PE_PORT_INVALID) {
        if (!ev->why && p->err_msg) ev->why = strdup(p->err_msg);
        return FAILED;
    }
    if (p->state == PE_PORT_READY) {
        if (!pe_port_host(p)) return FAILED; /* a GPU's value that did not come down */
        *stand = *p;
        stand->err_msg = NULL;
        return AVAILABLE;
    }
    if (pe_op_table[p->op].kind == PE_KIND_IO) return p->buf || p->op == PE_OP_constant ? AVAILABLE : FAILED;
    return TO_COMPUTE; /* pending or an expression: its inputs are held */
}

/* Computes port idx from its inputs, which are at hand. */
static bool compute_one(evaluation *ev, uint32_t idx)
{
    pe_port *p = pe_port_at(idx);
    pe_port stands[PE_PORT_MAX_INPUTS], *in[PE_PORT_MAX_INPUTS];
    for (int k = 0; k < p->n_in; k++) {
        in[k] = &stands[k];
        if (at_hand(ev, p->in[k], in[k]) != AVAILABLE) return false;
    }
    pe_port out = *p;
    size_t bytes = pe_port_bytes(p);
    out.buf = malloc(bytes ? bytes : 1);
    out.state = PE_PORT_PENDING;
    out.err_msg = NULL;
    if (!out.buf) return false;
    if (!pe_interp_compute_into(&out, in)) {
        if (!ev->why) ev->why = out.err_msg;
        else free(out.err_msg);
        free(out.buf);
        return false;
    }
    if (ev->persist) {
        p->ref = out.buf;
        p->ref_floor = operand_magnitude(p, in);
        if (p->op == PE_OP_prod) {
            int axis = (int)p->param[0];
            p->ref_factors = (double)(axis >= 0 ? in[0]->shape[axis] : in[0]->numel);
        }
        return true;
    }
    if (!PE_GROW(ev->done, ev->cap_done, ev->n_done + 1)) {
        free(out.buf);
        return false;
    }
    ev->done[ev->n_done++] = (computed){idx, out.buf};
    return true;
}

/* Makes target's value at hand: its expression's ports computed in an
 * order where each one's inputs come first (a stack, not recursion: a
 * pending chain may be long). */
static bool evaluate(evaluation *ev, uint32_t target)
{
    uint32_t *stack = NULL;
    size_t n = 0, cap = 0;
    bool ok = PE_GROW(stack, cap, 1);
    if (ok) stack[n++] = target;
    while (ok && n > 0) {
        uint32_t idx = stack[n - 1];
        pe_port stand;
        int state = at_hand(ev, idx, &stand);
        if (state == AVAILABLE) {
            n--;
            continue;
        }
        if (state == FAILED) {
            ok = false;
            break;
        }
        pe_port *p = pe_port_at(idx);
        bool inputs_ready = true;
        for (int k = 0; k < p->n_in && ok; k++) {
            int in_state = at_hand(ev, p->in[k], &stand);
            if (in_state == FAILED) ok = false;
            else if (in_state == TO_COMPUTE) {
                inputs_ready = false;
                ok = PE_GROW(stack, cap, n + 1);
                if (ok) stack[n++] = p->in[k];
            }
        }
        if (ok && inputs_ready) {
            ok = compute_one(ev, idx);
            n--;
        }
    }
    free(stack);
    return ok;
}

void *pe_reference_evaluate(uint32_t idx, bool reference, char **why)
{
    evaluation ev = {.reference = reference};
    pe_port *p = pe_port_at(idx), stand;
    size_t bytes = pe_port_bytes(p);
    void *out = NULL;
    if (evaluate(&ev, idx) && at_hand(&ev, idx, &stand) == AVAILABLE && (out = malloc(bytes ? bytes : 1))) {
        if (stand.buf) memcpy(out, stand.buf, bytes);
        else pe_interp_fill(out, (pe_dtype)p->dtype, stand.value, p->numel); /* a uniform constant */
    }
    for (size_t i = 0; i < ev.n_done; i++) free(ev.done[i].buf);
    free(ev.done);
    *why = ev.why;
    return out;
}

/* ------------------------------------------------------------ checking */

void pe_check_before_run(const pe_batch *b)
{
    evaluation ev = {.reference = true, .persist = true};
    for (size_t i = 0; i < b->n; i++) {
        if (b->entries[i].kind != PE_ENTRY_COMPUTE) continue;
        pe_port *p = pe_port_at(b->entries[i].port);
        if (p->state != PE_PORT_PENDING || p->ref || p->ref_failed) continue;
        if (!evaluate(&ev, b->entries[i].port)) p->ref_failed = true;
        free(ev.why); /* the executor reports the same failure (a gather out of range) */
        ev.why = NULL;
    }
}

typedef struct {
    int64_t at;
    double fast, ref, allowed;
} difference;

/* The first element of p whose value `fast` (NULL: p's uniform value)
 * differs from its reference; false if none. */
static bool first_difference(const pe_port *p, const void *fast, difference *d)
{
    pe_dtype t = (pe_dtype)p->dtype;
    double scale = pe_check.scale[t] * (p->op == PE_OP_prod ? fmax(p->ref_factors, 1) : 1);
    if (p->op == PE_OP_lu_cond && scale > 0) scale = 1; /* gecon's estimate (within a factor of 3) of the exact reference */
    double m = p->ref_floor;
    if (scale > 0) {
        pe_port view = *p;
        view.buf = p->ref;
        m = fmax(m, largest_magnitude(&view));
    }
    for (int64_t i = 0; i < parts(p); i++) {
        bool imaginary_part = pe_dtype_is_complex(t) && i % 2; /* of a uniform value: 0 */
        double f = fast ? element(t, fast, i) : imaginary_part ? 0.0 : p->value, r = element(t, p->ref, i);
        double allowed = scale * fmax(fabs(r), m);
        bool same = isnan(r) || isnan(f) ? isnan(r) && isnan(f) : isinf(r) || isinf(f) ? f == r : fabs(f - r) <= allowed;
        if (!same) {
            *d = (difference){i, f, r, allowed};
            return true;
        }
    }
    return false;
}

static void describe(char *out, size_t n, const pe_port *p, const difference *d, const char *when)
{
    char shape[64];
    pe_format_shape(shape, sizeof shape, p->rank, p->shape);
    bool cx = pe_dtype_is_complex((pe_dtype)p->dtype);
    snprintf(out, n,
             "PE_CHECK: %s element %lld%s of the %s %s result differs from the reference: %.9g here, %.17g in the "
             "reference (allowed error %.3g)",
             when, (long long)(cx ? d->at / 2 : d->at), cx ? (d->at % 2 ? " (imaginary part)" : " (real part)") : "",
             pe_dtype_name((pe_dtype)p->dtype), shape, d->fast, d->ref, d->allowed);
}

static void api_of(char *api, size_t n, const pe_port *p) { snprintf(api, n, "pe_%s", pe_op_table[p->op].name); }

void pe_check_after_run(const pe_batch *b)
{
    if (pe_check.mode != PE_CHECK_ALL || pe_check.message || pe_check.reported) return;
    for (size_t i = 0; i < b->n; i++) {
        if (b->entries[i].kind != PE_ENTRY_COMPUTE) continue;
        pe_port *p = pe_port_at(b->entries[i].port);
        /* what the executor stored (a value computed into a reader's buffer
         * and given back is compared by the read) */
        if (p->state != PE_PORT_READY || !p->ref || !(p->buf || p->dev_buf) || !pe_port_host(p)) continue;
        difference d;
        if (!first_difference(p, p->buf, &d)) continue;
        char text[512], api[64];
        describe(text, sizeof text, p, &d, "after its batch ran,");
        api_of(api, sizeof api, p);
        pe_check.site = p->site;
        pe_check.message = pe_format_error(p->site, api, "%s", text);
        pe_log_message(PE_LOG_DEBUG, "%s", pe_check.message ? pe_check.message : text);
        return;
    }
}

pe_status pe_check_raise_pending(void)
{
    if (!pe_check.message) return PE_OK;
    char *message = pe_check.message;
    pe_check.message = NULL;
    pe_check.reported = true;
    pe_status rc = pe_raise_message(pe_check.site, PE_E_CHECK, message);
    free(message);
    return rc;
}

pe_status pe_check_copyout(const pe_site *s, const char *api, const pe_port *p, const void *fast)
{
    if (pe_check_raise_pending() != PE_OK) return PE_E_CHECK; /* a batch's difference comes first */
    if (pe_check.reported || !p->ref) return PE_OK;
    difference d;
    if (!first_difference(p, fast, &d)) return PE_OK;
    char text[512], when[160], op_api[64];
    snprintf(when, sizeof when, "copied out by %s at %s:%d,", api, s && s->file ? s->file : "?", s ? s->line : 0);
    describe(text, sizeof text, p, &d, when);
    api_of(op_api, sizeof op_api, p);
    pe_check.reported = true;
    return pe_raise(p->site, PE_E_CHECK, op_api, "%s", text);
}
