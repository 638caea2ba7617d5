/* cuda_emit_ops.c — the CUDA generator's element-wise emission
 * (cuda_emit_internal.h): values converted between types, where each
 * parameter's element is (i itself, or a STRIDED parameter's index map),
 * each op of the catalog by class (arithmetic, functions, tests and logic,
 * conversions and positions), gathers, and the kernel body that every loop
 * shape (cuda_emit_loops.c) emits once per element or lane.  Each SSA value
 * becomes a local v<n>; selects are ?: (the GPU predicates them). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_emit_internal.h"

/* --------------------------------------------------------------- values */

/* Value v converted to type `to`. */
static void value_as(emitter *e, int v, pe_dtype to, char *out, size_t n)
{
    pe_dtype from = (pe_dtype)e->k->body[v].dtype;
    if (from == to) snprintf(out, n, "v%d", v);
    else if (to == PE_BOOL) snprintf(out, n, "(unsigned char)(v%d != 0)", v);
    else snprintf(out, n, "(%s)v%d", ctype_name(to), v);
}

/* v<j> of the instruction's operand j converted to the compute type. */
void pe_cu_operand(emitter *e, const kir_inst *in, int j, pe_dtype to, char *out, size_t n)
{
    value_as(e, in->a[j], to, out, n);
}

/* cdf_norm(x) and cdf_norm(-x) share the tail T(|x|) (Black-Scholes' N(d)
 * and N(-d): half its FP64 work): the value whose magnitude the tail of
 * f32 cdf_norm(src) takes, emitted once per kernel.  NVRTC does not find
 * this itself. */
static int cdf_tail_of(emitter *e, int src)
{
    const kir_inst *s = &e->k->body[src];
    bool negation = s->kind == KIR_OP && s->op == PE_OP_neg && s->dtype == PE_F32 && s->ctype == PE_F32 &&
                    e->k->body[s->a[0]].dtype == PE_F32;
    int root = negation ? s->a[0] : src;
    if (!e->has_tail[root]) {
        char x[96];
        value_as(e, root, PE_F32, x, sizeof x);
        put(e->t, "    double tail%d = pe_cdf_tail_f32(fabsf(%s));\n", root, x);
        e->has_tail[root] = true;
    }
    return root;
}

/* Coordinate `axis` of element i in the kernel's iteration shape. */
static void coordinate(emitter *e, int axis, char *out, size_t n)
{
    long long inner = 1;
    for (int d = e->k->rank - 1; d > axis; d--) inner *= e->k->shape[d];
    snprintf(out, n, "(int)((i / %lldLL) %% %lldLL)", inner, (long long)e->k->shape[axis]);
}

/* The test-only fault, as the CPU generator's (gccjit_ops.c's perturbed):
 * value v wrong by a part in 128 (floats) or by one (i32, bool). */
static void perturb(emitter *e, int v, pe_dtype t)
{
    if (is_float(t)) put(e->t, "    v%d = v%d * (%s)(1.0 + 1.0 / 128);\n", v, v, ctype_name(t));
    else if (t == PE_BOOL) put(e->t, "    v%d = (unsigned char)!v%d;\n", v, v);
    else put(e->t, "    v%d = pe_wrap((unsigned)v%d + 1u);\n", v, v);
}

/* ------------------------------------------------------------------ ops */

/* Operands of `in` in its computation type ct, as text: a cond's condition
 * and a cast's operand as they are. */
static void op_operands(emitter *e, const kir_inst *in, pe_dtype ct, char a[3][96])
{
    pe_op op = (pe_op)in->op;
    for (int j = 0; j < in->n; j++) {
        bool raw = (op == PE_OP_cond && j == 0) || op == PE_OP_cast;
        char promoted[80];
        if (raw) snprintf(a[j], sizeof a[j], "v%d", in->a[j]);
        else if (ct != in->ctype && e->k->body[in->a[j]].dtype != in->ctype) { /* rounded to the promoted f32 first */
            value_as(e, in->a[j], (pe_dtype)in->ctype, promoted, sizeof promoted);
            snprintf(a[j], sizeof a[j], "(%s)%s", ctype_name(ct), promoted);
        } else pe_cu_operand(e, in, j, ct, a[j], sizeof a[j]);
    }
}

/* Arithmetic but C's operators (emit_binop): i32 wraps (in unsigned), its
 * division and remainder guarded (pe_idiv, pe_imod). */
static void emit_arith(text *t, pe_op op, pe_dtype ct, char a[3][96])
{
    const char *T = ctype_name(ct);
    const char *f = ct == PE_F32 ? "f" : "";
    bool fl = is_float(ct);
    switch (op) {
    case PE_OP_neg:
        if (fl) put(t, "-%s", a[0]);
        else put(t, "pe_wrap(0u - (unsigned)%s)", a[0]);
        break;
    case PE_OP_div:
        if (fl) put(t, "%s / %s", a[0], a[1]);
        else put(t, "pe_idiv(%s, %s)", a[0], a[1]);
        break;
    case PE_OP_mod:
        if (fl) put(t, "%s%s(%s, %s)", pe_libm_name(op), f, a[0], a[1]);
        else put(t, "pe_imod(%s, %s)", a[0], a[1]);
        break;
    case PE_OP_abs:
        if (fl) put(t, "%s%s(%s)", pe_libm_name(op), f, a[0]);
        else put(t, "%s < 0 ? pe_wrap(0u - (unsigned)%s) : %s", a[0], a[0], a[0]);
        break;
    case PE_OP_sign: /* NaN and signed zeros pass through */
        put(t, "%s > (%s)0 ? (%s)1 : %s < (%s)0 ? (%s)-1 : %s", a[0], T, T, a[0], T, T, a[0]);
        break;
    case PE_OP_min: put(t, "pe_min(%s, %s)", a[0], a[1]); break;
    case PE_OP_max: put(t, "pe_max(%s, %s)", a[0], a[1]); break;
    default: break; /* not arithmetic: emit_own sends none here */
    }
}

/* Functions but libm's alone (emit_op): reciprocals, cbrt refined in f64,
 * asec and acsc in double (the prelude's forms), f32 cdf_norm PE's own from
 * the tail (tail: its value's number, else -1). */
static void emit_math(text *t, pe_op op, pe_dtype ct, char a[3][96], int tail)
{
    const char *T = ctype_name(ct);
    const char *f = ct == PE_F32 ? "f" : "";
    switch (op) {
    case PE_OP_rcp: put(t, "(%s)1 / %s", T, a[0]); break;
    case PE_OP_rsqrt: put(t, "(%s)1 / sqrt%s(%s)", T, f, a[0]); break;
    case PE_OP_cbrt:
        if (*f) put(t, "cbrtf(%s)", a[0]);
        else put(t, "pe_cbrt(%s)", a[0]); /* f64: refmath.c's accurate_cbrt */
        break;
    case PE_OP_asec: case PE_OP_acsc: put(t, "pe_%s(%s)", pe_op_table[op].name, a[0]); break; /* in double */
    case PE_OP_cdf_norm:
        if (tail >= 0) put(t, "pe_cdf_norm_f32(%s, tail%d)", a[0], tail);
        else put(t, "normcdf(%s)", a[0]);
        break;
    default: break; /* not a function: emit_own sends none here */
    }
}

/* Tests and logic (comparisons: emit_op), on values of type ct. */
static void emit_logic(text *t, pe_op op, pe_dtype ct, char a[3][96])
{
    const char *T = ctype_name(ct);
    const char *f = ct == PE_F32 ? "f" : "";
    switch (op) {
    case PE_OP_isnan: put(t, "%s != %s", a[0], a[0]); break;
    case PE_OP_isinf: put(t, "fabs%s(%s) == (%s)__int_as_float(0x7f800000)", f, a[0], T); break;
    case PE_OP_isfinite: put(t, "fabs%s(%s) < (%s)__int_as_float(0x7f800000)", f, a[0], T); break;
    case PE_OP_not: put(t, "!(%s != 0)", a[0]); break;
    case PE_OP_and: put(t, "(%s != 0) && (%s != 0)", a[0], a[1]); break;
    case PE_OP_or: put(t, "(%s != 0) || (%s != 0)", a[0], a[1]); break;
    case PE_OP_nand: put(t, "!((%s != 0) && (%s != 0))", a[0], a[1]); break;
    case PE_OP_nor: put(t, "!((%s != 0) || (%s != 0))", a[0], a[1]); break;
    case PE_OP_xor: put(t, "(%s != 0) != (%s != 0)", a[0], a[1]); break;
    case PE_OP_cond: put(t, "%s != 0 ? %s : %s", a[0], a[1], a[2]); break;
    default: break; /* neither a test nor logic: emit_own sends none here */
    }
}

/* Conversions, positions (index, concat, identity), random draws, parts
 * and constants. */
static void emit_data(emitter *e, const kir_inst *in, pe_dtype ct, char a[3][96])
{
    text *t = e->t;
    pe_op op = (pe_op)in->op;
    pe_dtype rt = (pe_dtype)in->dtype;
    switch (op) {
    case PE_OP_cast: {
        pe_dtype from = (pe_dtype)e->k->body[in->a[0]].dtype;
        if (rt == PE_I32 && is_float(from)) put(t, "pe_to_i32((double)%s)", a[0]);
        else if (rt == PE_BOOL) put(t, "%s != 0", a[0]); /* NaN is true */
        else put(t, "%s", a[0]);
        break;
    }
    case PE_OP_index: {
        char c[96];
        coordinate(e, in->a[0], c, sizeof c);
        put(t, "%s", c);
        break;
    }
    case PE_OP_concat: { /* the first part below its extent along the axis, else the second */
        char c[96];
        coordinate(e, in->a[2], c, sizeof c);
        put(t, "%s < %lldLL ? %s : %s", c, (long long)in->imm, a[0], a[1]);
        break;
    }
    case PE_OP_identity: {
        char r[96], c[96];
        coordinate(e, 0, r, sizeof r);
        coordinate(e, 1, c, sizeof c);
        put(t, "%s == %s", r, c);
        break;
    }
    case PE_OP_random_uniform: case PE_OP_random_normal: { /* irformat/philox.h: the key words raw */
        char w[160];
        snprintf(w, sizeof w, "pe_philox(i, v%d, v%d, v%d, %d)", in->a[0], in->a[1], in->a[2], (int)in->imm);
        if (op == PE_OP_random_normal) put(t, "pe_normal(%s)", w);
        else if (rt == PE_I32) put(t, "(int)%s.w[0]", w);
        else if (rt == PE_F32) put(t, "(float)(%s.w[0] >> 8) * 5.9604644775390625e-8f", w);
        else put(t, "pe_uniform_f64(%s)", w);
        break;
    }
    case PE_OP_conj: case PE_OP_real: put(t, "%s", a[0]); break; /* of a real operand */
    case PE_OP_imag: put(t, "(%s)0", ctype_name(ct)); break;
    case PE_OP_constant: { /* the pair lowering's immediate, bit-exact (infinities too) */
        unsigned long long bits;
        memcpy(&bits, &in->imm, sizeof bits);
        put(t, "__longlong_as_double(0x%016llxLL)", bits);
        break;
    }
    default: break; /* emit_own sends none of the others here */
    }
}

/* The ops of class OWN (irformat/ops_codegen.def), by kind. */
static void emit_own(emitter *e, const kir_inst *in, pe_dtype ct, char a[3][96], int tail)
{
    text *t = e->t;
    pe_op op = (pe_op)in->op;
    switch (op) {
#include "../../jit/kir/not_own_cases.h"
        break; /* emitted by class (emit_op), or refused (pe_cuda_emit: pe_kernel_generatable) */
    case PE_OP_neg: case PE_OP_div: case PE_OP_mod: case PE_OP_abs: case PE_OP_sign: case PE_OP_min: case PE_OP_max:
        emit_arith(t, op, ct, a);
        break;
    case PE_OP_rcp: case PE_OP_rsqrt: case PE_OP_cbrt: case PE_OP_asec: case PE_OP_acsc: case PE_OP_cdf_norm:
        emit_math(t, op, ct, a, tail);
        break;
    case PE_OP_isnan: case PE_OP_isinf: case PE_OP_isfinite: case PE_OP_and: case PE_OP_or: case PE_OP_nand:
    case PE_OP_nor: case PE_OP_xor: case PE_OP_not: case PE_OP_cond:
        emit_logic(t, op, ct, a);
        break;
    case PE_OP_cast: case PE_OP_concat: case PE_OP_index: case PE_OP_identity: case PE_OP_random_uniform:
    case PE_OP_random_normal: case PE_OP_conj: case PE_OP_real: case PE_OP_imag: case PE_OP_constant:
        emit_data(e, in, ct, a);
        break;
    }
}

/* A LIBM op: the libm column's function of the n operands (f32: f "f"). */
static void emit_libm(text *t, pe_op op, const char *f, int n, char a[3][96])
{
    put(t, "%s%s(", pe_libm_name(op), f);
    for (int j = 0; j < n; j++) put(t, j ? ", %s" : "%s", a[j]);
    put(t, ")");
}

/* One element-wise op: v<v> = its value, its operands converted, then as
 * its emission class says. */
static void emit_op(emitter *e, int v, const kir_inst *in)
{
    text *t = e->t;
    pe_op op = (pe_op)in->op;
    pe_dtype ct = (pe_dtype)in->ctype, rt = (pe_dtype)in->dtype;
    bool cdf_f32 = op == PE_OP_cdf_norm && ct == PE_F32;
    if (ct == PE_F32 && pe_f32_in_double(op) && !cdf_f32) ct = PE_F64;
    const char *R = ctype_name(rt), *cop = pe_c_operator_text(pe_c_operator_of(op));
    char a[3][96];
    op_operands(e, in, ct, a);
    int tail = cdf_f32 ? cdf_tail_of(e, in->a[0]) : -1;
    /* a bool result is 0 or 1 whatever the arithmetic made (bool + bool in
     * a bool ctype is 1, not 2; the recorder promotes bool arithmetic to
     * i32, but the emitter takes the IR it is given, as the CPU's does) */
    if (rt == PE_BOOL) put(t, "    unsigned char v%d = (unsigned char)((", v);
    else put(t, "    %s v%d = (%s)(", R, v, R);
    switch (pe_emit_class_of(op)) {
    case PE_EMIT_LIBM: emit_libm(t, op, ct == PE_F32 ? "f" : "", in->n, a); break;
    case PE_EMIT_BINOP:
        if (is_float(ct)) put(t, "%s %s %s", a[0], cop, a[1]);
        else put(t, "pe_wrap((unsigned)%s %s (unsigned)%s)", a[0], cop, a[1]);
        break;
    case PE_EMIT_CMP: put(t, "%s %s %s", a[0], cop, a[1]); break;
    case PE_EMIT_OWN: emit_own(e, in, ct, a, tail); break;
    case PE_EMIT_NONE: break; /* pe_cuda_emit refuses such kernels (pe_kernel_generatable) */
    }
    put(t, rt == PE_BOOL ? ") != 0);\n" : ");\n");
}

/* ------------------------------------------------------- where elements are */

/* Where a parameter's element of iteration element i lies in its buffer:
 * i itself, or a STRIDED parameter's index map (kir.h) in 64-bit
 * arithmetic: offset + sum over axes d of stride[d] * m_d(c[d]), c[d] the
 * coordinate of i, m_d clamping it into [lo, hi - 1] (hi > 0), then
 * taking (x + shift) mod wrap (wrap > 0), as the CPU generator does. */
static void element_index(emitter *e, const kir_param *p, char *out, size_t n)
{
    if (p->kind != KIR_IN_STRIDED) {
        snprintf(out, n, "i");
        return;
    }
    size_t len = (size_t)snprintf(out, n, "(%lldLL", (long long)p->offset);
    long long inner = 1;
    for (int d = e->k->rank - 1; d >= 0; d--) {
        if (p->stride[d] != 0 && len < n) {
            char x[64], clamped[128], wrapped[192]; /* each long enough for any int64 literals */
            const char *m = x;
            /* the outermost coordinate is below its extent already (i < n) */
            if (d > 0) snprintf(x, sizeof x, "(i / %lldLL) %% %lldLL", inner, (long long)e->k->shape[d]);
            else snprintf(x, sizeof x, "i / %lldLL", inner);
            if (p->hi[d] > 0) { /* clamped: never outside the array, whatever the other operand of a select */
                snprintf(clamped, sizeof clamped, "pe_clamp(%s, %lldLL, %lldLL)", m, (long long)p->lo[d], (long long)p->hi[d] - 1);
                m = clamped;
            }
            if (p->wrap[d] > 0) {
                snprintf(wrapped, sizeof wrapped, "((%s) + %lldLL) %% %lldLL", m, (long long)p->shift[d], (long long)p->wrap[d]);
                m = wrapped;
            }
            len += (size_t)snprintf(out + len, n - len, " + (%s) * (%lldLL)", m, (long long)p->stride[d]);
        }
        inner *= e->k->shape[d];
    }
    if (len < n) snprintf(out + len, n - len, ")");
}

/* Element `idx` of parameter q as access `in` reads or writes it: a
 * complex array is an array of its parts (kir.h), re at 2 idx, im at 2 idx + 1. */
static void part_index(const kir_param *q, const kir_inst *in, const char *idx, char *out, size_t n)
{
    if (pe_dtype_is_complex((pe_dtype)q->dtype)) snprintf(out, n, "2LL * (%s) + %d", idx, (int)in->imm);
    else snprintf(out, n, "%s", idx);
}

/* ------------------------------------------------------------ gathers */

/* A gather's element: the array at the index when it lies in [0, extent),
 * else element 0 (never outside the array) with the kernel's flag set (any
 * thread may store the same 1; the executor reads the flag after the kernel
 * and has the interpreter report the index), as the CPU generator does. */
static void emit_gather(emitter *e, int v, const kir_inst *in)
{
    const kir_param *array = &e->k->params[in->a[0]];
    const char *T = ctype_name((pe_dtype)in->dtype);
    put(e->t, "    const long long j%d = (long long)v%d;\n", v, in->a[1]);
    put(e->t, "    const bool inside%d = (unsigned long long)j%d < %lldULL;\n", v, v, (long long)array->extent);
    put(e->t, "    if (!inside%d) *(unsigned *)a.p[%d].ptr = 1u;\n", v, in->a[2]);
    put(e->t, "    %s v%d = ((const %s *)a.p[%d].ptr)[inside%d ? j%d : 0LL];\n", T, v, ctype_name((pe_dtype)array->dtype), in->a[0], v, v);
}

/* --------------------------------------------------------------- body */

/* The kernel body for element i (the loop shapes declare i; in the vector
 * loop, lane L of its group), accumulating into the reduction's locals. */
void pe_cu_emit_body(emitter *e)
{
    const kir_kernel *k = e->k;
    for (int v = 0; v < k->n_body; v++) {
        const kir_inst *in = &k->body[v];
        if (in->kind == KIR_LOAD) {
            const kir_param *q = &k->params[in->a[0]];
            const char *T = ctype_name((pe_dtype)in->dtype);
            if (q->kind == KIR_IN_LITERAL) { /* compiled in, bit-exact (NaN and infinities too) */
                if (q->dtype == PE_F32) {
                    float f = (float)q->value;
                    uint32_t bits;
                    memcpy(&bits, &f, sizeof bits);
                    put(e->t, "    %s v%d = (%s)__int_as_float(0x%08x);\n", T, v, T, bits);
                } else if (q->dtype == PE_F64) {
                    uint64_t bits;
                    memcpy(&bits, &q->value, sizeof bits);
                    put(e->t, "    %s v%d = (%s)__longlong_as_double(0x%016llxLL);\n", T, v, T, (unsigned long long)bits);
                } else {
                    put(e->t, "    %s v%d = (%s)%lld;\n", T, v, T, (long long)q->value);
                }
            } else if (q->kind == KIR_IN_SCALAR) {
                put(e->t, "    %s v%d = (%s)a.p[%d].value;\n", T, v, T, in->a[0]);
            } else if (e->lanes && q->kind == KIR_IN_CONTIG) {
                put(e->t, "    %s v%d = (%s)in%d[L];\n", T, v, T, in->a[0]);
            } else {
                char idx[1024], at[1100];
                element_index(e, q, idx, sizeof idx);
                part_index(q, in, idx, at, sizeof at);
                put(e->t, "    %s v%d = (%s)((const %s *)a.p[%d].ptr)[%s];\n", T, v, T,
                    ctype_name(pe_dtype_real_part((pe_dtype)q->dtype)), in->a[0], at);
            }
        } else if (in->kind == KIR_STORE) {
            const kir_param *q = &k->params[in->a[0]];
            if (e->pass > 0) continue; /* an axis reduction's later walk: stored already */
            if (e->lanes) put(e->t, "    out%d[L] = v%d;\n", in->a[0], in->a[1]);
            else {
                char at[64];
                part_index(q, in, "i", at, sizeof at);
                put(e->t, "    ((%s *)a.p[%d].ptr)[%s] = v%d;\n", ctype_name(pe_dtype_real_part((pe_dtype)q->dtype)), in->a[0], at,
                    in->a[1]);
            }
        } else if (in->kind == KIR_REDUCE) {
            if (k->axis_reduction) pe_cu_emit_axis_update(e, in);
            else pe_cu_emit_full_update(e, in);
        } else if (in->kind == KIR_GATHER) {
            emit_gather(e, v, in);
        } else {
            emit_op(e, v, in);
            if (__builtin_expect(in->op == e->perturbed_op, 0)) perturb(e, v, (pe_dtype)in->dtype);
        }
    }
}
