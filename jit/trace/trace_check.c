/* trace_check.c — whether a program sequence the trace cache instantiated
 * fits the batch it is about to run (issue 22, item 6).  Equal keys mean
 * equal batches, so a sequence the program generator made for the key
 * always fits; one read from disk may not (a file from another build that
 * passed its checks, or one changed by someone holding the cache's key),
 * and a sequence that does not fit would read or write outside buffers or
 * leave a demanded value uncomputed.  Every field an executor trusts is
 * checked against the batch's ports: program kinds and ports, a kernel's
 * iteration count and shape against its members, each parameter's kind,
 * dtype, element count and broadcast strides against the port bound to it,
 * that a program reads only values computed before it (or from outside the
 * batch), and that every value the application can still see is computed.
 * The cost is one pass over the sequence, on trace hits only. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "../../exec/base/shape.h"

typedef struct {
    const pe_entry *entries;
    size_t n;
    bool *computed; /* per batch position: its value exists once the programs so far have run */
    bool *deferred; /* per batch position: a kernel computed it for its members only (exec/base/deferred.c) */
    char *why;
    size_t why_len;
} checker;

static bool refuse(checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool refuse(checker *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, c->why_len, fmt, ap);
    va_end(ap);
    return false;
}

/* The batch position of port `idx`, or -1 when it is not computed by this batch. */
static long position(const checker *c, uint32_t idx)
{
    const pe_port *p = pe_port_at(idx);
    if (p->state != PE_PORT_PENDING || p->queue_pos >= c->n) return -1;
    const pe_entry *e = &c->entries[p->queue_pos];
    return e->kind == PE_ENTRY_COMPUTE && e->port == idx ? (long)p->queue_pos : -1;
}

/* A value the program reads: from outside the batch, or computed before it. */
static bool readable(checker *c, uint32_t idx)
{
    long pos = position(c, idx);
    return pos < 0 || c->computed[pos];
}

static bool is_member(const pe_program *prog, uint32_t idx)
{
    for (int m = 0; m < prog->n_members; m++)
        if (prog->members[m] == idx) return true;
    return false;
}

static bool check_interp(checker *c, const pe_program *prog)
{
    long pos = position(c, prog->port);
    if (pos < 0) return refuse(c, "a program computes a port outside the batch");
    const pe_port *p = pe_port_at(prog->port);
    if (prog->kind == PE_PROG_SKIP) {
        if (!p->released_in_batch) return refuse(c, "a value the application holds is skipped");
    } else if (prog->kind == PE_PROG_VIEW) { /* read through by kernels, never computed */
        if (pe_op_table[p->op].kind != PE_KIND_VIEW || p->demanded_in_batch)
            return refuse(c, "a port read through as a view is not one, or is demanded");
        c->deferred[pos] = true;
        return true;
    } else {
        for (int k = 0; k < p->n_in; k++)
            if (!readable(c, p->in[k])) return refuse(c, "a port is computed before its operand");
    }
    c->computed[pos] = true;
    return true;
}

/* A library call: its members computed here and nowhere else, the first an
 * intrinsic, what each reads computed before it or by the call (members
 * before it); its operands (the executor checks their shapes against the
 * members before the call) computed before it. */
static bool check_intrinsic(checker *c, const pe_program *prog)
{
    if (prog->n_members <= 0 || prog->n_members > 4 || prog->n_bind > 5 ||
        pe_op_table[pe_port_at(prog->members[0])->op].kind != PE_KIND_INTRINSIC || !is_member(prog, prog->port))
        return refuse(c, "a library call of another shape");
    for (int k = 0; k < prog->n_bind; k++)
        if (!readable(c, prog->bind[k])) return refuse(c, "a library call reads a port computed after it");
    for (int m = 0; m < prog->n_members; m++) {
        long pos = position(c, prog->members[m]);
        if (pos < 0 || c->computed[pos]) return refuse(c, "a library call computes a port outside the batch or twice");
        const pe_port *p = pe_port_at(prog->members[m]);
        for (int k = 0; k < p->n_in; k++) {
            bool earlier_member = false;
            for (int e = 0; e < m; e++) earlier_member |= prog->members[e] == p->in[k];
            long in_pos = position(c, p->in[k]); /* a transpose the call reads in place: a view never computed */
            if (!earlier_member && !readable(c, p->in[k]) && !(in_pos >= 0 && c->deferred[in_pos]))
                return refuse(c, "a port is computed before its operand");
        }
        c->computed[pos] = true;
    }
    return true;
}

static int64_t clamp(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

static bool check_param(checker *c, const pe_program *prog, const kir_param *param, uint32_t q_idx)
{
    const kir_kernel *k = prog->kir;
    const pe_port *q = pe_port_at(q_idx);
    int64_t iterations = k->axis_reduction ? pe_shape_numel(k->rank, k->shape) : prog->numel;
    if (param->kind == KIR_OUT_PARTIAL ? param->dtype != PE_F64 /* partials: (high, low) doubles */
        : param->kind == KIR_OUT_FLAG  ? param->dtype != PE_I32
                                        : param->dtype != q->dtype)
        return refuse(c, "a parameter's dtype differs from its port's");
    switch ((kir_param_kind)param->kind) {
    case KIR_IN_CONTIG:
        if (q->numel != iterations) return refuse(c, "an input has %lld elements, the kernel %lld",
                                                  (long long)q->numel, (long long)iterations);
        break;
    case KIR_IN_STRIDED: { /* every element the map can name lies inside the array */
        int64_t low = param->offset, high = param->offset;
        if (iterations == 0) break; /* no element is read */
        for (int d = 0; d < k->rank; d++) {
            int64_t n = k->shape[d], x0 = 0, x1 = n - 1;
            if (param->hi[d] > 0) x0 = clamp(x0, param->lo[d], param->hi[d] - 1), x1 = clamp(x1, param->lo[d], param->hi[d] - 1);
            if (param->wrap[d] > 0) x0 = 0, x1 = param->wrap[d] - 1;
            int64_t a, b;
            if (__builtin_mul_overflow(param->stride[d], x0, &a) || __builtin_mul_overflow(param->stride[d], x1, &b))
                return refuse(c, "a strided input's map overflows");
            low += a < b ? a : b;
            high += a < b ? b : a;
        }
        if (low < 0 || high >= q->numel) return refuse(c, "a strided input's map reads outside its array");
        break;
    }
    case KIR_IN_GATHERED: /* the kernel checks each position against the extent */
        if (q->numel != param->extent) return refuse(c, "a gathered input has %lld elements, the kernel %lld",
                                                     (long long)q->numel, (long long)param->extent);
        break;
    case KIR_OUT_FLAG:
        if (!is_member(prog, q_idx) || q->op != PE_OP_gather) return refuse(c, "a gather's flag is not bound to one of its gathers");
        return true;
    case KIR_IN_SCALAR:
    case KIR_IN_LITERAL:
        if (!pe_port_is_uniform(q)) return refuse(c, "a scalar parameter is not a constant");
        if (param->kind == KIR_IN_LITERAL && memcmp(&q->value, &param->value, sizeof q->value) != 0)
            return refuse(c, "a literal differs from its constant");
        break;
    case KIR_OUT: /* an axis reduction's result has one element per launch index, its producers' one per iteration */
        if (!is_member(prog, q_idx) ||
            q->numel != (k->axis_reduction && pe_op_table[q->op].kind == PE_KIND_REDUCE ? prog->numel : iterations))
            return refuse(c, "an output does not fit the kernel");
        return true;
    case KIR_OUT_PARTIAL:
        if (!is_member(prog, q_idx) || pe_op_table[q->op].kind != PE_KIND_REDUCE)
            return refuse(c, "a partial output is not one of the kernel's reductions");
        return true;
    }
    if (is_member(prog, q_idx)) return refuse(c, "a kernel reads a port it computes");
    if (!readable(c, q_idx)) return refuse(c, "a kernel reads a port before it is computed");
    return true;
}

static bool check_kernel(checker *c, const pe_program *prog)
{
    const kir_kernel *k = prog->kir;
    if (prog->n_members <= 0 || prog->port != prog->members[prog->n_members - 1])
        return refuse(c, "a kernel's port is not its last member");
    int64_t iterations = prog->numel; /* an axis reduction launches over its results */
    if (k->axis_reduction) { /* its reductions all along its axis, later members over its shape */
        int64_t results = 1;
        int reductions = 0;
        for (int d = 0; d < k->rank; d++) results *= d == k->reduce_axis ? 1 : k->shape[d];
        for (int m = 0; m < prog->n_members; m++) {
            const pe_port *r = pe_port_at(prog->members[m]);
            if (pe_op_table[r->op].kind != PE_KIND_REDUCE) continue;
            if (r->param[0] != k->reduce_axis) return refuse(c, "an axis reduction's kernel does not fit its result");
            reductions++;
        }
        if (reductions == 0 || results != prog->numel) return refuse(c, "an axis reduction's kernel does not fit its result");
        iterations = pe_shape_numel(k->rank, k->shape);
    }
    if (k->rank > 0 && pe_shape_numel(k->rank, k->shape) != iterations)
        return refuse(c, "a kernel's shape has %lld elements, its count %lld",
                      (long long)pe_shape_numel(k->rank, k->shape), (long long)prog->numel);
    for (int m = 0; m < prog->n_members; m++) {
        const pe_port *p = pe_port_at(prog->members[m]);
        if (position(c, prog->members[m]) < 0) return refuse(c, "a kernel computes a port outside the batch");
        int64_t extent = p->numel; /* element-wise: the kernel's count; a reduction: its operands' */
        if (pe_op_table[p->op].kind == PE_KIND_REDUCE) {
            pe_port *in[PE_PORT_MAX_INPUTS];
            int rank;
            int64_t shape[PE_MAX_RANK];
            for (int i = 0; i < p->n_in; i++) in[i] = pe_port_at(p->in[i]);
            if (!pe_broadcast_shapes(in, p->n_in, &rank, shape)) return refuse(c, "a reduction's operands do not broadcast");
            extent = pe_shape_numel(rank, shape);
        }
        if (extent != iterations)
            return refuse(c, "a member has %lld elements, the kernel %lld", (long long)extent, (long long)iterations);
    }
    for (int i = 0; i < k->n_params; i++)
        if (!check_param(c, prog, &k->params[i], prog->bind[i])) return false;
    for (int i = 0; i < k->n_params; i++) /* what it stores exists after it */
        if (k->params[i].kind == KIR_OUT || k->params[i].kind == KIR_OUT_PARTIAL)
            c->computed[position(c, prog->bind[i])] = true;
    /* a member the application holds that is not stored must be one the
     * generator defers: not demanded, read by a later member of its kernel;
     * or one that shares a stored member's buffer, of its dtype and count
     * (an expression where it cannot, so no later program may read it) */
    for (int m = 0; m < prog->n_members; m++) {
        const pe_port *p = pe_port_at(prog->members[m]);
        long pos = position(c, prog->members[m]);
        int owner = prog->shares ? prog->shares[m] : -1;
        if (owner >= 0) {
            const pe_port *o = pe_port_at(prog->members[owner]);
            if (owner == m || c->computed[pos] || !c->computed[position(c, prog->members[owner])] ||
                o->dtype != p->dtype || o->numel != p->numel || pe_op_table[o->op].kind == PE_KIND_REDUCE ||
                pe_op_table[p->op].kind == PE_KIND_REDUCE)
                return refuse(c, "a member shares a store it cannot");
            c->deferred[pos] = true;
            continue;
        }
        if (c->computed[pos] || p->released_in_batch) continue;
        bool read_inside = false;
        for (int later = m + 1; later < prog->n_members && !read_inside; later++)
            for (int k = 0; k < pe_port_at(prog->members[later])->n_in; k++)
                read_inside |= pe_port_at(prog->members[later])->in[k] == prog->members[m];
        if (p->demanded_in_batch || !read_inside) return refuse(c, "a value the application holds is not stored");
        c->deferred[pos] = true;
    }
    return true;
}

bool pe_trace_fits(const pe_program_seq *seq, const pe_entry *entries, size_t n, char *why, size_t why_len)
{
    checker c = {entries, n, calloc(n ? n : 1, sizeof(bool)), calloc(n ? n : 1, sizeof(bool)), why, why_len};
    if (!c.computed || !c.deferred) {
        free(c.computed), free(c.deferred);
        return refuse(&c, "out of memory");
    }
    bool ok = true;
    for (size_t i = 0; i < seq->n && ok; i++) {
        const pe_program *prog = &seq->progs[i];
        ok = prog->kind == PE_PROG_KERNEL      ? check_kernel(&c, prog)
             : prog->kind == PE_PROG_INTRINSIC ? check_intrinsic(&c, prog)
                                                : check_interp(&c, prog);
    }
    for (size_t i = 0; i < n && ok; i++) { /* every value the application can still see is computed */
        if (entries[i].kind != PE_ENTRY_COMPUTE || c.computed[i] || c.deferred[i]) continue;
        if (!pe_port_at(entries[i].port)->released_in_batch) ok = refuse(&c, "a value the application holds is not computed");
    }
    free(c.computed), free(c.deferred);
    return ok;
}
