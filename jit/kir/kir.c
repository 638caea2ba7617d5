/* kir.c — canonical bytes, hashing, equality and printing of the kernel IR. */
#include <stdio.h>
#include <string.h>

#include "kir.h"
#include "../../irformat/philox.h"
#include "../../irformat/fnv.h"

/* Canonical bytes: the fields that define the computation, in a fixed order,
 * with no padding.  Scalar values are not part of a kernel; literals are. */
typedef struct {
    uint64_t h;
} fnv;
static void fnv_bytes(fnv *f, const void *p, size_t n) { f->h = pe_fnv_bytes(f->h, p, n); }
static void fnv_u64(fnv *f, uint64_t v) { fnv_bytes(f, &v, sizeof v); }

uint64_t kir_hash(const kir_kernel *k)
{
    fnv f = {PE_FNV_OFFSET};
    fnv_u64(&f, (uint64_t)k->rank);
    for (int d = 0; d < k->rank; d++) fnv_u64(&f, (uint64_t)k->shape[d]);
    fnv_u64(&f, k->axis_reduction ? 1u + k->reduce_axis : 0u);
    fnv_u64(&f, k->stream_stores);
    fnv_u64(&f, (uint64_t)k->n_params);
    for (int p = 0; p < k->n_params; p++) {
        const kir_param *q = &k->params[p];
        uint8_t head[2] = {q->kind, q->dtype};
        fnv_bytes(&f, head, 2);
        if (q->kind == KIR_IN_STRIDED) {
            fnv_u64(&f, (uint64_t)q->offset);
            for (int d = 0; d < k->rank; d++) {
                uint64_t axis[5] = {(uint64_t)q->stride[d], (uint64_t)q->wrap[d], (uint64_t)q->shift[d],
                                    (uint64_t)q->lo[d], (uint64_t)q->hi[d]};
                fnv_bytes(&f, axis, sizeof axis);
            }
        }
        if (q->kind == KIR_IN_LITERAL) fnv_bytes(&f, &q->value, sizeof q->value);
        if (q->kind == KIR_IN_GATHERED) fnv_u64(&f, (uint64_t)q->extent);
    }
    fnv_u64(&f, (uint64_t)k->n_body);
    for (int i = 0; i < k->n_body; i++) {
        const kir_inst *b = &k->body[i];
        uint8_t head[5] = {b->kind, b->op, b->dtype, b->ctype, b->n};
        fnv_bytes(&f, head, 5);
        fnv_bytes(&f, b->a, sizeof b->a); /* unused entries are 0; generators keep their axis in a[0] */
        fnv_u64(&f, (uint64_t)b->imm);
    }
    return f.h;
}

bool kir_equal(const kir_kernel *a, const kir_kernel *b)
{
    if (a->rank != b->rank || a->n_params != b->n_params || a->n_body != b->n_body) return false;
    if (a->axis_reduction != b->axis_reduction || (a->axis_reduction && a->reduce_axis != b->reduce_axis)) return false;
    if (a->stream_stores != b->stream_stores) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d]) return false;
    for (int p = 0; p < a->n_params; p++) {
        const kir_param *x = &a->params[p], *y = &b->params[p];
        if (x->kind != y->kind || x->dtype != y->dtype) return false;
        if (x->kind == KIR_IN_STRIDED && x->offset != y->offset) return false;
        if (x->kind == KIR_IN_STRIDED)
            for (int d = 0; d < a->rank; d++)
                if (x->stride[d] != y->stride[d] || x->wrap[d] != y->wrap[d] || x->shift[d] != y->shift[d] ||
                    x->lo[d] != y->lo[d] || x->hi[d] != y->hi[d])
                    return false;
        if (x->kind == KIR_IN_LITERAL && memcmp(&x->value, &y->value, sizeof x->value) != 0) return false;
        if (x->kind == KIR_IN_GATHERED && x->extent != y->extent) return false;
    }
    for (int i = 0; i < a->n_body; i++) {
        const kir_inst *x = &a->body[i], *y = &b->body[i];
        if (x->kind != y->kind || x->op != y->op || x->dtype != y->dtype || x->ctype != y->ctype || x->n != y->n ||
            x->imm != y->imm)
            return false;
        for (int j = 0; j < 3; j++)
            if (x->a[j] != y->a[j]) return false;
    }
    return true;
}

void kir_print(const kir_kernel *k, char *out, size_t n)
{
    static const char *const kinds[] = {"in", "strided", "scalar", "out", "partials", "literal", "gathered", "flag"};
    size_t used = 0;
#define PUT(...) used += (size_t)snprintf(out + used, used < n ? n - used : 0, __VA_ARGS__)
    PUT("kernel rank %d params %d body %d", k->rank, k->n_params, k->n_body);
    if (k->axis_reduction) PUT(" reducing axis %d", k->reduce_axis);
    if (k->stream_stores) PUT(" streaming stores");
    PUT("\n");
    for (int p = 0; p < k->n_params; p++) {
        const kir_param *q = &k->params[p];
        PUT("  p%d %s %s", p, kinds[q->kind], pe_dtype_name((pe_dtype)q->dtype));
        if (q->kind == KIR_IN_LITERAL) PUT(" = %.17g", q->value);
        if (q->kind == KIR_IN_GATHERED) PUT(" of %lld", (long long)q->extent);
        if (q->kind == KIR_IN_STRIDED) {
            PUT(" at %lld", (long long)q->offset);
            for (int d = 0; d < k->rank; d++) {
                PUT(d ? ", %lld" : " + c * (%lld", (long long)q->stride[d]);
                if (q->hi[d] > 0) PUT(" in [%lld,%lld)", (long long)q->lo[d], (long long)q->hi[d]);
                if (q->wrap[d] > 0) PUT(" +%lld mod %lld", (long long)q->shift[d], (long long)q->wrap[d]);
            }
            if (k->rank) PUT(")");
        }
        PUT("\n");
    }
    for (int i = 0; i < k->n_body; i++) {
        const kir_inst *b = &k->body[i];
        bool part = (b->kind == KIR_LOAD || b->kind == KIR_STORE) && pe_dtype_is_complex((pe_dtype)k->params[b->a[0]].dtype);
        const char *which = !part ? "" : b->imm ? ".im" : ".re";
        if (b->kind == KIR_LOAD) PUT("  v%d = load p%d%s : %s\n", i, b->a[0], which, pe_dtype_name((pe_dtype)b->dtype));
        else if (b->kind == KIR_STORE) PUT("  store p%d%s = v%d\n", b->a[0], which, b->a[1]);
        else if (b->kind == KIR_OP && b->op == PE_OP_constant) {
            double value;
            memcpy(&value, &b->imm, sizeof value);
            PUT("  v%d = %.17g : %s\n", i, value, pe_dtype_name((pe_dtype)b->dtype));
        }
        else if (b->kind == KIR_REDUCE)
            PUT("  reduce %s p%d <- v%d%s\n", pe_op_table[b->op].name, b->a[0], b->a[1], b->n > 2 ? " * v2" : "");
        else if (b->kind == KIR_GATHER)
            PUT("  v%d = gather p%d[v%d] : %s, flag p%d\n", i, b->a[0], b->a[1], pe_dtype_name((pe_dtype)b->dtype), b->a[2]);
        else if (b->op == PE_OP_concat)
            PUT("  v%d = c%d < %lld ? v%d : v%d : %s\n", i, b->a[2], (long long)b->imm, b->a[0], b->a[1],
                pe_dtype_name((pe_dtype)b->dtype));
        else {
            PUT("  v%d = %s(", i, pe_op_table[b->op].name);
            for (int j = 0; j < b->n; j++) PUT(j ? ", v%d" : "v%d", b->a[j]);
            PUT(") : %s in %s\n", pe_dtype_name((pe_dtype)b->dtype), pe_dtype_name((pe_dtype)b->ctype));
        }
    }
#undef PUT
}

bool kir_valid(const kir_kernel *k)
{
    if (k->rank < 0 || k->rank > PE_MAX_RANK || k->n_params < 0 || k->n_params > KIR_MAX_PARAMS || k->n_body < 0 ||
        k->n_body > KIR_MAX_BODY || (k->axis_reduction && k->reduce_axis >= k->rank))
        return false;
    for (int d = 0; d < k->rank; d++)
        if (k->shape[d] < 0) return false;
    for (int p = 0; p < k->n_params; p++) {
        const kir_param *q = &k->params[p];
        if (q->kind > KIR_OUT_FLAG || q->dtype > PE_C128) return false;
        if ((q->kind == KIR_IN_GATHERED && q->extent < 0) || (q->kind == KIR_OUT_FLAG && q->dtype != PE_I32)) return false;
        for (int d = 0; q->kind == KIR_IN_STRIDED && d < k->rank; d++)
            if (q->wrap[d] < 0 || q->shift[d] < 0 || (q->wrap[d] > 0 && q->shift[d] >= q->wrap[d]) || q->hi[d] < 0 ||
                (q->hi[d] > 0 && (q->lo[d] < 0 || q->lo[d] >= q->hi[d])))
                return false;
    }
    for (int i = 0; i < k->n_body; i++) {
        const kir_inst *b = &k->body[i];
        if (b->dtype > PE_C128 || b->ctype > PE_C128 || b->n > 3) return false;
        switch (b->kind) {
        case KIR_LOAD: /* imm: the part of a complex array (0 real, 1 imaginary) */
            if (b->a[0] >= k->n_params || b->imm < 0 || b->imm > 1 ||
                (b->imm && !pe_dtype_is_complex((pe_dtype)k->params[b->a[0]].dtype)))
                return false;
            break;
        case KIR_STORE:
            if (b->a[0] >= k->n_params || b->a[1] >= i || b->imm < 0 || b->imm > 1 ||
                (b->imm && !pe_dtype_is_complex((pe_dtype)k->params[b->a[0]].dtype)))
                return false;
            break;
        case KIR_REDUCE:
            if (b->op >= PE_OP__COUNT || b->a[0] >= k->n_params || b->n < 2) return false;
            for (int j = 1; j < b->n; j++)
                if (b->a[j] >= i) return false;
            break;
        case KIR_OP:
            if (b->op >= PE_OP__COUNT) return false;
            if (kir_is_random(b->op)) { /* three i32 values (key words, draw), the round count in imm */
                if (b->n != 3 || (b->imm != PE_PHILOX_ROUNDS && b->imm != PE_PHILOX_FAST_ROUNDS)) return false;
                for (int j = 0; j < 3; j++)
                    if (b->a[j] >= i || k->body[b->a[j]].dtype != PE_I32) return false;
            } else if (pe_op_table[b->op].kind == PE_KIND_GENERATOR) {
                if (b->n != 0) return false; /* a[0] is an axis, no value */
            } else {
                for (int j = 0; j < b->n; j++)
                    if (b->a[j] >= i) return false;
            }
            if (b->op == PE_OP_constant && (b->n != 0 || !pe_dtype_is_float((pe_dtype)b->dtype))) return false;
            if (b->op == PE_OP_concat && (b->n != 2 || b->a[2] >= k->rank || b->imm < 0)) return false;
            break;
        case KIR_GATHER:
            if (b->a[0] >= k->n_params || k->params[b->a[0]].kind != KIR_IN_GATHERED || b->a[1] >= i ||
                k->body[b->a[1]].dtype != PE_I32 || b->a[2] >= k->n_params || k->params[b->a[2]].kind != KIR_OUT_FLAG ||
                b->dtype != k->params[b->a[0]].dtype)
                return false;
            break;
        default: return false;
        }
    }
    return !k->stream_stores || kir_streamable(k); /* after the ops are known to be the catalog's */
}

bool kir_streamable(const kir_kernel *k)
{
    if (k->rank != 0 || k->axis_reduction) return false;
    for (int p = 0; p < k->n_params; p++) {
        kir_param_kind kind = (kir_param_kind)k->params[p].kind;
        if (kind != KIR_IN_CONTIG && kind != KIR_IN_SCALAR && kind != KIR_IN_LITERAL && kind != KIR_OUT) return false;
        if (k->params[p].dtype == PE_C64 || k->params[p].dtype == PE_C128) return false; /* read and written by parts */
    }
    for (int i = 0; i < k->n_body; i++) {
        const kir_inst *b = &k->body[i];
        if (b->kind == KIR_REDUCE || b->kind == KIR_GATHER) return false;
        if (b->kind == KIR_OP && (kir_is_random(b->op) || pe_op_table[b->op].kind == PE_KIND_GENERATOR)) return false;
    }
    return true;
}

void kir_kernel_name(const kir_kernel *k, char *out, size_t n)
{
    snprintf(out, n, "pe_k_%016llx", (unsigned long long)kir_hash(k));
}

/* The value operands of instruction in: their positions in a[]. */
int kir_value_operands(const kir_inst *in, int *first)
{
    switch ((kir_inst_kind)in->kind) {
    case KIR_LOAD: *first = 0; return 0;              /* a[0]: a parameter */
    case KIR_OP: *first = 0; return in->n;            /* generators (n = 0): a[0] is an axis; concat: a[2] */
    case KIR_STORE: *first = 1; return 1;             /* a[0]: the parameter */
    case KIR_REDUCE: *first = 1; return in->n - 1;    /* a[0]: the partials */
    case KIR_GATHER: *first = 1; return 1;            /* a[0]: the array, a[2]: the flag */
    }
    *first = 0;
    return 0;
}
