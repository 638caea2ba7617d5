/* grad.c — automatic differentiation's entry points: pe_grad_enable marks a
 * variable, pe_grad sweeps the derivative tape backwards from a result
 * (reverse mode), pe_jvp forwards from the variables (forward mode).  Each
 * sweep takes the part of the tape that y depends on and that depends on
 * the variables asked for, in creation order, and records every node's
 * derivative as ordinary operations (grad_rules.c) inside a scope of its
 * own: only the answers leave it.  The tape is paused meanwhile, so
 * derivatives of derivatives are not taken (the answers are constants to
 * the tape). */
#include <stdlib.h>

#include "grad.h"
#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"

static bool is_real_float(pe_dtype t) { return t == PE_F32 || t == PE_F64; }
static bool is_differentiable(pe_dtype t) { return is_real_float(t) || pe_dtype_is_complex(t); }

pe_array pe_grad_enable_at(const pe_site *s, pe_array x)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_grad_enable";
    if (!pe_require_init(s, api)) return (pe_array){0};
    uint32_t idx;
    pe_port *p = pe_port_lookup(s, x, api, &idx);
    if (!p) return pe_invalid_result(s, PE_OP_data, PE_E_HANDLE);
    if (p->state == PE_PORT_INVALID) return pe_publish(idx); /* stays invalid: its error was told */
    if (!is_differentiable((pe_dtype)p->dtype)) {
        pe_raise(s, PE_E_TYPE, api, "only f32, f64, c64 and c128 arrays are differentiated, not %s",
                 pe_dtype_name((pe_dtype)p->dtype));
        return pe_invalid_result(s, PE_OP_data, PE_E_TYPE);
    }
    if (pe_port_is_uniform(p)) {
        /* a uniform constant is folded where it is used: the variable is an
         * array of its value, which requests record like any other */
        uint32_t copy = pe_enqueue_op(s, PE_OP_cast, &idx, 1, (pe_dtype)p->dtype, (pe_dtype)p->dtype, p->rank, p->shape,
                                      NULL, 0);
        if (copy == UINT32_MAX) return pe_invalid_result(s, PE_OP_cast, PE_E_NOMEM);
        idx = copy;
        p = pe_port_at(idx);
    }
    if (!pe_tape_mark_variable(idx, s)) return pe_invalid_result(s, PE_OP_data, PE_E_NOMEM);
    return pe_publish(idx);
}

/* ------------------------------------------------------- the sweep set */

typedef struct {
    uint32_t *ports;     /* the nodes' ports, in creation order */
    size_t n, cap;
    bool *reaches;       /* depends on a variable asked for */
    pe_array *value;     /* the adjoint (reverse) or tangent (forward) of each, {0}: zero */
} sweep;

static int by_creation(const void *a, const void *b)
{
    uint64_t x = pe_tape_node_of(*(const uint32_t *)a)->seq, y = pe_tape_node_of(*(const uint32_t *)b)->seq;
    return x < y ? -1 : x > y;
}

/* position of port idx in the sweep plus one, 0: not in it (the node's mark) */
static size_t position(uint32_t idx)
{
    pe_tape_node *n = pe_port_at(idx)->tape ? pe_tape_node_of(idx) : NULL;
    return n ? n->mark : 0;
}

/* The nodes y depends on, in creation order, and which reach the variables. */
static bool collect(const pe_site *s, uint32_t y, const uint32_t *wrt, int n_wrt, sweep *w)
{
    if (!pe_port_at(y)->tape) return true;
    size_t top = 0;
    if (!PE_GROW(w->ports, w->cap, 1)) return false;
    w->ports[w->n++] = y;
    pe_tape_node_of(y)->mark = 1;
    for (top = 0; top < w->n; top++) { /* breadth first; every node marked once */
        pe_tape_node *node = pe_tape_node_of(w->ports[top]);
        for (int i = 0; i < node->n_in; i++) {
            uint32_t in = node->in[i];
            if (!pe_port_at(in)->tape || pe_tape_node_of(in)->mark) continue;
            if (!PE_GROW(w->ports, w->cap, w->n + 1)) return false;
            w->ports[w->n++] = in;
            pe_tape_node_of(in)->mark = 1;
        }
    }
    qsort(w->ports, w->n, sizeof *w->ports, by_creation);
    w->reaches = calloc(w->n, sizeof *w->reaches);
    w->value = calloc(w->n, sizeof *w->value);
    if (!w->reaches || !w->value) return false;
    for (size_t k = 0; k < w->n; k++) pe_tape_node_of(w->ports[k])->mark = (uint32_t)(k + 1);
    for (int i = 0; i < n_wrt; i++)
        if (position(wrt[i])) w->reaches[position(wrt[i]) - 1] = true;
    for (size_t k = 0; k < w->n; k++) {
        pe_tape_node *node = pe_tape_node_of(w->ports[k]);
        for (int i = 0; i < node->n_in && !w->reaches[k]; i++)
            w->reaches[k] = position(node->in[i]) && w->reaches[position(node->in[i]) - 1];
    }
    (void)s;
    return true;
}

static void sweep_free(sweep *w)
{
    for (size_t k = 0; k < w->n; k++)
        if (pe_port_at(w->ports[k])->tape) pe_tape_node_of(w->ports[k])->mark = 0;
    free(w->ports);
    free(w->reaches);
    free(w->value);
}

/* The node's step, or false after raising where its derivative is not
 * implemented (never a silent zero). */
static bool step_of(const pe_site *s, const char *api, uint32_t port, pe_grad_step *r)
{
    pe_tape_node *node = pe_tape_node_of(port);
    const char *why;
    pe_grad_kind kind = pe_grad_kind_of((pe_op)node->op, &why);
    if (kind == PE_GRAD_KIND_UNSUPPORTED) {
        const pe_site *at = pe_port_at(port)->site;
        pe_raise(s, PE_E_TYPE, api, "cannot differentiate through %s (recorded at %s:%d): %s", pe_op_table[node->op].name,
                 at ? at->file : "?", at ? at->line : 0, why);
        return false;
    }
    *r = (pe_grad_step){.s = s, .node = node, .y = pe_handle_of(port)};
    for (int i = 0; i < node->n_in; i++) r->x[i] = pe_handle_of(node->in[i]);
    return true;
}

static bool differentiable(uint32_t port) { return is_differentiable((pe_dtype)pe_port_at(port)->dtype); }

static pe_array zeros_of(const pe_site *s, uint32_t port)
{
    const pe_port *p = pe_port_at(port);
    return pe_fill_at(s, (pe_dtype)p->dtype, p->rank, p->shape, 0.0);
}

static pe_array fit_to(const pe_site *s, pe_array v, uint32_t port)
{
    const pe_port *p = pe_port_at(port);
    return pe_grad_fit(s, v, p->rank, p->shape, (pe_dtype)p->dtype);
}

/* Looks up y and the variables; false after raising. */
static bool operands(const pe_site *s, const char *api, pe_array y, int n, const pe_array *wrt, uint32_t *y_idx,
                     uint32_t **wrt_idx)
{
    if (!pe_port_lookup(s, y, api, y_idx)) return false;
    if (n < 0 || (n > 0 && !wrt)) {
        pe_raise(s, PE_E_ARG, api, "%d variables at %p", n, (const void *)wrt);
        return false;
    }
    *wrt_idx = malloc((size_t)(n ? n : 1) * sizeof **wrt_idx);
    if (!*wrt_idx) {
        pe_raise(s, PE_E_NOMEM, api, "out of memory");
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (!pe_port_lookup(s, wrt[i], api, &(*wrt_idx)[i])) return false;
        pe_tape_node *node = pe_tape_node_of((*wrt_idx)[i]);
        if (!node || !node->variable) {
            pe_raise(s, PE_E_ARG, api, "variable %d was not marked by pe_grad_enable (or was marked again since: use "
                     "the array pe_grad_enable returned)", i);
            return false;
        }
    }
    return true;
}

int pe_grad_at(const pe_site *s, pe_array y, int n, const pe_array *wrt, pe_array *out)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_grad";
    if (!pe_require_init(s, api)) return PE_E_ARG;
    if (n > 0 && !out) {
        pe_raise(s, PE_E_ARG, api, "out is NULL");
        return PE_E_ARG;
    }
    for (int i = 0; i < n; i++) out[i] = (pe_array){0};
    uint32_t y_idx, *wrt_idx = NULL;
    sweep w = {0};
    int status = PE_OK;
    if (!operands(s, api, y, n, wrt, &y_idx, &wrt_idx)) {
        free(wrt_idx);
        return pe_last_error() ? pe_last_error()->code : PE_E_ARG;
    }
    if (!collect(s, y_idx, wrt_idx, n, &w)) {
        pe_raise(s, PE_E_NOMEM, api, "out of memory");
        sweep_free(&w);
        free(wrt_idx);
        return PE_E_NOMEM;
    }
    pe_tape_pause();
    pe_scope scope = pe_scope_begin_at(s);
    if (w.n && differentiable(y_idx)) {
        const pe_port *yp = pe_port_at(y_idx);
        w.value[position(y_idx) - 1] = pe_fill_at(s, (pe_dtype)yp->dtype, yp->rank, yp->shape, 1.0);
    }
    for (size_t k = w.n; k-- > 0 && status == PE_OK;) {
        pe_tape_node *node = pe_tape_node_of(w.ports[k]);
        if (!w.reaches[k] || !w.value[k].h || node->variable) continue;
        pe_grad_step r;
        if (!step_of(s, api, w.ports[k], &r)) {
            status = PE_E_TYPE;
            break;
        }
        bool wanted[PE_PORT_MAX_INPUTS] = {0};
        pe_array adj[PE_PORT_MAX_INPUTS] = {{0}};
        for (int i = 0; i < node->n_in; i++)
            wanted[i] = position(node->in[i]) && w.reaches[position(node->in[i]) - 1] && differentiable(node->in[i]);
        pe_grad_vjp(&r, w.value[k], wanted, adj);
        for (int i = 0; i < node->n_in; i++) {
            if (!wanted[i] || !adj[i].h) continue;
            pe_array *acc = &w.value[position(node->in[i]) - 1];
            pe_array c = fit_to(s, adj[i], node->in[i]);
            *acc = acc->h ? pe_add_at(s, *acc, c) : c;
        }
    }
    for (int i = 0; i < n && status == PE_OK; i++) {
        size_t at = position(wrt_idx[i]);
        pe_array v = at ? w.value[at - 1] : (pe_array){0};
        out[i] = pe_keep_at(s, v.h ? fit_to(s, v, wrt_idx[i]) : zeros_of(s, wrt_idx[i]));
    }
    pe_scope_end_at(s, scope);
    pe_tape_resume();
    sweep_free(&w);
    free(wrt_idx);
    return status;
}

pe_array pe_jvp_at(const pe_site *s, pe_array y, int n, const pe_array *wrt, const pe_array *tangents)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_jvp";
    if (!pe_require_init(s, api)) return (pe_array){0};
    uint32_t y_idx, *wrt_idx = NULL;
    if (!operands(s, api, y, n, wrt, &y_idx, &wrt_idx)) {
        free(wrt_idx);
        return pe_invalid_result(s, PE_OP_data, pe_last_error() ? pe_last_error()->code : PE_E_ARG);
    }
    if (n > 0 && !tangents) {
        pe_raise(s, PE_E_ARG, api, "tangents is NULL (%d variables)", n);
        free(wrt_idx);
        return pe_invalid_result(s, PE_OP_data, PE_E_ARG);
    }
    for (int i = 0; i < n; i++) {
        pe_port *t = pe_port_lookup(s, tangents[i], api, NULL); /* a bad handle: raised there */
        const pe_port *v = pe_port_at(wrt_idx[i]);
        bool fits = t && t->rank == v->rank;
        for (int d = 0; fits && d < v->rank; d++) fits = t->shape[d] == v->shape[d];
        if (!fits) {
            char want[96];
            pe_format_shape(want, sizeof want, v->rank, v->shape);
            if (t) pe_raise(s, PE_E_SHAPE, api, "tangent %d must have its variable's shape %s", i, want);
            free(wrt_idx);
            return pe_invalid_result(s, PE_OP_data, t ? PE_E_SHAPE : PE_E_HANDLE);
        }
    }
    sweep w = {0};
    if (!collect(s, y_idx, wrt_idx, n, &w)) {
        pe_raise(s, PE_E_NOMEM, api, "out of memory");
        sweep_free(&w);
        free(wrt_idx);
        return pe_invalid_result(s, PE_OP_data, PE_E_NOMEM);
    }
    pe_tape_pause();
    pe_scope scope = pe_scope_begin_at(s);
    for (int i = 0; i < n; i++)
        if (position(wrt_idx[i])) w.value[position(wrt_idx[i]) - 1] = fit_to(s, tangents[i], wrt_idx[i]);
    bool failed = false;
    for (size_t k = 0; k < w.n && !failed; k++) {
        pe_tape_node *node = pe_tape_node_of(w.ports[k]);
        if (!w.reaches[k] || node->variable || !differentiable(w.ports[k])) continue;
        pe_array t[PE_PORT_MAX_INPUTS] = {{0}};
        bool any = false;
        for (int i = 0; i < node->n_in; i++) {
            size_t at = position(node->in[i]);
            if (at && differentiable(node->in[i])) t[i] = w.value[at - 1];
            any |= t[i].h != 0;
        }
        if (!any) continue;
        pe_grad_step r;
        if (!step_of(s, api, w.ports[k], &r)) {
            failed = true;
            break;
        }
        pe_array ty = pe_grad_jvp(&r, t);
        if (ty.h) w.value[k] = fit_to(s, ty, w.ports[k]);
    }
    pe_array result = {0};
    if (!failed) {
        size_t at = position(y_idx);
        pe_array v = at ? w.value[at - 1] : (pe_array){0};
        result = pe_keep_at(s, v.h && differentiable(y_idx) ? pe_cast_at(s, v, (pe_dtype)pe_port_at(y_idx)->dtype)
                                                            : zeros_of(s, y_idx));
    }
    pe_scope_end_at(s, scope);
    pe_tape_resume();
    sweep_free(&w);
    free(wrt_idx);
    return failed ? pe_invalid_result(s, PE_OP_data, PE_E_TYPE) : result;
}
