/* kir_complex.c — the pair lowering: every complex value of a kernel
 * (PE_C64, PE_C128) rewritten as two real values, its real and imaginary
 * parts, before either code generator sees the kernel (kir_lower runs it
 * first).  So both generators only ever emit real arithmetic, and the CPU's
 * loops still vectorise.
 *
 * Memory: a complex array stays one parameter of its complex dtype (the
 * executors bind and size it as any other); a load or store of it is split
 * into two accesses of its parts (imm 0: the real part at element 2i of the
 * buffer seen as reals, imm 1: the imaginary part at 2i + 1), the
 * interleaved layout of C99's float/double complex.  A complex uniform
 * constant holds one double (its imaginary part is 0: proggen, api_create):
 * the parameter becomes real and the imaginary part the constant 0.
 *
 * Arithmetic: the values exec/interp/complexmath.c gives (the oracle),
 * every step in double — c64 too, whose parts are rounded to f32 once per
 * op, as the interpreter rounds each port's value:
 *   add, sub, neg, conj   part by part
 *   mul   (ac - bd) + (ad + bc) i, the textbook product.  gcc's vectoriser
 *         recognises it in a CPU loop over interleaved parts and fuses it
 *         (vfmaddsub, whatever -ffp-contract says): c128 products are then
 *         one rounding closer to the exact one than the interpreter's, and
 *         where ac and bd both overflow, the real part is +-inf where the
 *         interpreter's is NaN (c64's products are exact in double)
 *   div   Smith's algorithm, both of its branches computed and one
 *         selected; c128 on the divisor scaled by 2^-k, k = floor(log2
 *         max(|c|, |d|)) (exp2 of the two halves of -k: each in range), the
 *         quotient scaled back (c64 needs no scaling: f32 parts in double);
 *         a zero divisor gives (a / c, b / c): Annex G's copysign(inf, c)
 *         times each part
 *   abs   c64: sqrt(a^2 + b^2) in double; c128: m sqrt(1 + (n/m)^2), m, n
 *         the larger and smaller of |a|, |b| (an infinite part: inf; n = 0: m)
 *   arg   atan2(b, a)
 *   exp   e^a cos b + e^a sin b i (b = 0: the imaginary part is b; a = +-inf
 *         with b infinite or NaN: Annex G's inf + NaN i, 0 + 0i)
 *   log   log|z| + arg(z) i; for |z| in [1/2, 2] log|z| = log1p(a^2 + b^2 - 1)
 *         / 2, a^2 + b^2 - 1 by two fmas (glibc's clog is as careful there)
 *   sqrt  t = sqrt(|a|/2 + |z|/2); a >= 0: (t, b / 2t), else (|b| / 2t,
 *         t signed as b), glibc's csqrt's formula; z = 0: (0, b); an infinite
 *         b: (inf, b)
 *   pow   exp(w log z) with the textbook product (glibc's cpow)
 *   eq, ne  both parts equal (NaN unequal), its negation
 *   cond, concat  part by part; casts and pe_complex: each part converted
 * Constants the formulas need are KIR_OP constant (the value's bits in imm).
 * No complex reduction reaches it: sum, mean, dot and vdot are recorded as
 * two real reductions of the parts (jit/record/record.c's
 * record_complex_sum), prod as two real reductions in polar form, |z|'s
 * product and arg z's sum (record_complex_prod); kir_complex_emittable
 * refuses a complex reduction that arrives otherwise. */
#include <math.h>
#include <string.h>

#include "codegen.h"
#include "kir.h"

#define NONE UINT16_MAX

typedef struct {
    kir_inst body[KIR_MAX_BODY];
    int n;
    bool full;
} builder;

typedef struct {
    uint16_t re, im; /* im == NONE: a real value */
} pair;

static uint16_t put(builder *b, kir_inst in)
{
    if (b->n >= KIR_MAX_BODY) {
        b->full = true;
        return 0;
    }
    b->body[b->n] = in;
    return (uint16_t)b->n++;
}

static pe_dtype type_of(const builder *b, uint16_t v) { return (pe_dtype)b->body[v].dtype; }

/* op of x (y, z) computed in ct, giving dt. */
static uint16_t op3(builder *b, pe_op op, pe_dtype ct, pe_dtype dt, int n, uint16_t x, uint16_t y, uint16_t z)
{
    return put(b, (kir_inst){.kind = KIR_OP, .op = (uint8_t)op, .ctype = (uint8_t)ct, .dtype = (uint8_t)dt, .n = (uint8_t)n,
                             .a = {x, n > 1 ? y : 0, n > 2 ? z : 0}});
}
/* Steps in double. */
static uint16_t d1(builder *b, pe_op op, uint16_t x) { return op3(b, op, PE_F64, PE_F64, 1, x, 0, 0); }
static uint16_t d2(builder *b, pe_op op, uint16_t x, uint16_t y) { return op3(b, op, PE_F64, PE_F64, 2, x, y, 0); }
static uint16_t test2(builder *b, pe_op op, uint16_t x, uint16_t y) { return op3(b, op, PE_F64, PE_BOOL, 2, x, y, 0); }
static uint16_t test1(builder *b, pe_op op, uint16_t x) { return op3(b, op, PE_F64, PE_BOOL, 1, x, 0, 0); }
static uint16_t logic(builder *b, pe_op op, uint16_t x, uint16_t y) { return op3(b, op, PE_BOOL, PE_BOOL, 2, x, y, 0); }
static uint16_t select(builder *b, uint16_t c, uint16_t x, uint16_t y) { return op3(b, PE_OP_cond, PE_F64, PE_F64, 3, c, x, y); }

static uint16_t constant(builder *b, pe_dtype t, double value)
{
    int64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return put(b, (kir_inst){.kind = KIR_OP, .op = PE_OP_constant, .ctype = (uint8_t)t, .dtype = (uint8_t)t, .imm = bits});
}

/* x converted to t (a no-op when it is of t already). */
static uint16_t convert(builder *b, uint16_t x, pe_dtype t)
{
    return type_of(b, x) == t ? x : op3(b, PE_OP_cast, t, t, 1, x, 0, 0);
}

/* An operand of a complex op in its compute type ct (the interpreter
 * rounds it there: run_map_complex): parts converted to ct's part type; a
 * real operand is x + 0i. */
static pair as_complex(builder *b, pair x, pe_dtype ct)
{
    pe_dtype part = pe_dtype_real_part(ct);
    pair r = {convert(b, x.re, part), 0};
    r.im = x.im == NONE ? constant(b, part, 0.0) : convert(b, x.im, part);
    return r;
}

/* |z| in double (see the header for the two forms). */
static uint16_t modulus(builder *b, pair z, pe_dtype part)
{
    uint16_t inf = constant(b, PE_F64, INFINITY);
    uint16_t ax = d1(b, PE_OP_abs, z.re), ay = d1(b, PE_OP_abs, z.im);
    uint16_t infinite = logic(b, PE_OP_or, test1(b, PE_OP_isinf, ax), test1(b, PE_OP_isinf, ay));
    uint16_t h;
    if (part == PE_F32) {
        h = d1(b, PE_OP_sqrt, d2(b, PE_OP_add, d2(b, PE_OP_mul, ax, ax), d2(b, PE_OP_mul, ay, ay)));
    } else {
        uint16_t x_larger = test2(b, PE_OP_ge, ax, ay); /* NaN: false, and the NaN reaches n / m */
        uint16_t m = select(b, x_larger, ax, ay), n = select(b, x_larger, ay, ax);
        uint16_t r = d2(b, PE_OP_div, n, m);
        uint16_t root = d1(b, PE_OP_sqrt, d2(b, PE_OP_add, constant(b, PE_F64, 1.0), d2(b, PE_OP_mul, r, r)));
        h = select(b, test2(b, PE_OP_eq, n, constant(b, PE_F64, 0.0)), m, d2(b, PE_OP_mul, m, root));
    }
    return select(b, infinite, inf, h);
}

static pair mul(builder *b, pair x, pair y)
{
    return (pair){d2(b, PE_OP_sub, d2(b, PE_OP_mul, x.re, y.re), d2(b, PE_OP_mul, x.im, y.im)),
                  d2(b, PE_OP_add, d2(b, PE_OP_mul, x.re, y.im), d2(b, PE_OP_mul, x.im, y.re))};
}

static pair divide(builder *b, pair x, pair y, pe_dtype part)
{
    uint16_t a = x.re, bb = x.im, c = y.re, d = y.im;
    uint16_t ac = d1(b, PE_OP_abs, c), ad = d1(b, PE_OP_abs, d);
    uint16_t c_larger = test2(b, PE_OP_ge, ac, ad);
    uint16_t s1 = NONE, s2 = NONE;
    if (part == PE_F64) { /* f32 parts in double neither overflow nor lose bits: unscaled */
        uint16_t larger = select(b, c_larger, ac, ad);
        uint16_t k = d1(b, PE_OP_floor, d1(b, PE_OP_log2, larger));
        k = select(b, test1(b, PE_OP_isfinite, k), k, constant(b, PE_F64, 0.0)); /* 0, infinite or NaN: unscaled */
        uint16_t k1 = d1(b, PE_OP_trunc, d2(b, PE_OP_mul, k, constant(b, PE_F64, 0.5)));
        s1 = d1(b, PE_OP_exp2, d1(b, PE_OP_neg, k1)), s2 = d1(b, PE_OP_exp2, d2(b, PE_OP_sub, k1, k));
        c = d2(b, PE_OP_mul, d2(b, PE_OP_mul, c, s1), s2), d = d2(b, PE_OP_mul, d2(b, PE_OP_mul, d, s1), s2);
    }
    /* |c| >= |d|: r = d / c */
    uint16_t r1 = d2(b, PE_OP_div, d, c), den1 = d2(b, PE_OP_add, c, d2(b, PE_OP_mul, d, r1));
    uint16_t e1 = d2(b, PE_OP_div, d2(b, PE_OP_add, a, d2(b, PE_OP_mul, bb, r1)), den1);
    uint16_t f1 = d2(b, PE_OP_div, d2(b, PE_OP_sub, bb, d2(b, PE_OP_mul, a, r1)), den1);
    /* else r = c / d */
    uint16_t r2 = d2(b, PE_OP_div, c, d), den2 = d2(b, PE_OP_add, d2(b, PE_OP_mul, c, r2), d);
    uint16_t e2 = d2(b, PE_OP_div, d2(b, PE_OP_add, d2(b, PE_OP_mul, a, r2), bb), den2);
    uint16_t f2 = d2(b, PE_OP_div, d2(b, PE_OP_sub, d2(b, PE_OP_mul, bb, r2), a), den2);
    pair q = {select(b, c_larger, e1, e2), select(b, c_larger, f1, f2)};
    if (part == PE_F64) { /* the quotient scaled back */
        q.re = d2(b, PE_OP_mul, d2(b, PE_OP_mul, q.re, s1), s2);
        q.im = d2(b, PE_OP_mul, d2(b, PE_OP_mul, q.im, s1), s2);
    }
    c = y.re, d = y.im;
    uint16_t zero = constant(b, PE_F64, 0.0);
    uint16_t by_zero = logic(b, PE_OP_and, test2(b, PE_OP_eq, c, zero), test2(b, PE_OP_eq, d, zero));
    return (pair){select(b, by_zero, d2(b, PE_OP_div, a, c), q.re), select(b, by_zero, d2(b, PE_OP_div, bb, c), q.im)};
}

static pair cexp_(builder *b, pair z)
{
    uint16_t e = d1(b, PE_OP_exp, z.re), zero = constant(b, PE_F64, 0.0), inf = constant(b, PE_F64, INFINITY);
    uint16_t re = d2(b, PE_OP_mul, e, d1(b, PE_OP_cos, z.im));
    uint16_t im = select(b, test2(b, PE_OP_eq, z.im, zero), z.im, d2(b, PE_OP_mul, e, d1(b, PE_OP_sin, z.im)));
    /* an infinite real part with an infinite or NaN imaginary one: +inf gives
     * inf + NaN i, -inf gives 0 + 0i (C99 Annex G, glibc's cexp) */
    uint16_t wild = test1(b, PE_OP_isfinite, z.im);
    uint16_t up = test2(b, PE_OP_eq, z.re, inf), down = test2(b, PE_OP_eq, z.re, d1(b, PE_OP_neg, inf));
    re = select(b, wild, re, select(b, up, inf, select(b, down, zero, re)));
    im = select(b, wild, im, select(b, down, zero, im));
    return (pair){re, im};
}

static pair clog_(builder *b, pair z, pe_dtype part)
{
    uint16_t h = modulus(b, z, part), half = constant(b, PE_F64, 0.5);
    /* near |z| = 1, log|z| = log1p(a^2 + b^2 - 1) / 2 with a^2 - 1 and the
     * sum each rounded once (fma): log h would keep only h's rounding */
    uint16_t minus1 = constant(b, PE_F64, -1.0);
    uint16_t m1 = op3(b, PE_OP_fma, PE_F64, PE_F64, 3, z.im, z.im, op3(b, PE_OP_fma, PE_F64, PE_F64, 3, z.re, z.re, minus1));
    uint16_t near = logic(b, PE_OP_and, test2(b, PE_OP_ge, h, half), test2(b, PE_OP_le, h, constant(b, PE_F64, 2.0)));
    uint16_t re = select(b, near, d2(b, PE_OP_mul, d1(b, PE_OP_log1p, m1), half), d1(b, PE_OP_log, h));
    return (pair){re, d2(b, PE_OP_atan2, z.im, z.re)};
}

static pair csqrt_(builder *b, pair z, pe_dtype part)
{
    uint16_t half = constant(b, PE_F64, 0.5), zero = constant(b, PE_F64, 0.0);
    uint16_t h = modulus(b, z, part), ax = d1(b, PE_OP_abs, z.re);
    uint16_t t = d1(b, PE_OP_sqrt, d2(b, PE_OP_add, d2(b, PE_OP_mul, ax, half), d2(b, PE_OP_mul, h, half)));
    uint16_t other = d2(b, PE_OP_mul, d2(b, PE_OP_div, z.im, t), half); /* b / 2t */
    /* b's sign, a zero's too: b < 0 or 1 / b < 0 */
    uint16_t negative = logic(b, PE_OP_or, test2(b, PE_OP_lt, z.im, zero),
                              test2(b, PE_OP_lt, d2(b, PE_OP_div, constant(b, PE_F64, 1.0), z.im), zero));
    uint16_t right = test2(b, PE_OP_ge, z.re, zero);
    uint16_t re = select(b, right, t, d1(b, PE_OP_abs, other));
    uint16_t im = select(b, right, other, select(b, negative, d1(b, PE_OP_neg, t), t));
    uint16_t origin = test2(b, PE_OP_eq, t, zero), infinite_b = test1(b, PE_OP_isinf, z.im);
    re = select(b, infinite_b, constant(b, PE_F64, INFINITY), select(b, origin, zero, re));
    im = select(b, infinite_b, z.im, select(b, origin, z.im, im));
    return (pair){re, im};
}

/* One complex instruction's value; false if it is no op the lowering knows
 * (kir_complex_emittable keeps such ops from kernels). */
static bool lower_op(builder *b, const kir_inst *in, const pair *arg, pair *out)
{
    pe_op op = (pe_op)in->op;
    pe_dtype ct = (pe_dtype)in->ctype, dt = (pe_dtype)in->dtype;
    pe_dtype part = pe_dtype_real_part(pe_dtype_is_complex(ct) ? ct : dt); /* of the compute type */
    pe_dtype result = pe_dtype_real_part(dt);
    pair x = {0, NONE}, y = {0, NONE};
    if (op != PE_OP_cond && op != PE_OP_cast && op != PE_OP_complex && op != PE_OP_concat) {
        x = as_complex(b, arg[0], ct);
        if (in->n > 1) y = as_complex(b, arg[1], ct);
    }
    pair r = {NONE, NONE};
    switch (op) {
    case PE_OP_add: r = (pair){d2(b, PE_OP_add, x.re, y.re), d2(b, PE_OP_add, x.im, y.im)}; break;
    case PE_OP_sub: r = (pair){d2(b, PE_OP_sub, x.re, y.re), d2(b, PE_OP_sub, x.im, y.im)}; break;
    case PE_OP_neg: r = (pair){d1(b, PE_OP_neg, x.re), d1(b, PE_OP_neg, x.im)}; break;
    case PE_OP_conj: r = (pair){x.re, d1(b, PE_OP_neg, x.im)}; break;
    case PE_OP_mul: r = mul(b, x, y); break;
    case PE_OP_div: r = divide(b, x, y, part); break;
    case PE_OP_exp: r = cexp_(b, x); break;
    case PE_OP_log: r = clog_(b, x, part); break;
    case PE_OP_sqrt: r = csqrt_(b, x, part); break;
    case PE_OP_pow: r = cexp_(b, mul(b, y, clog_(b, x, part))); break;
    case PE_OP_abs: r.re = modulus(b, x, part); break;
    case PE_OP_arg: r.re = d2(b, PE_OP_atan2, x.im, x.re); break;
    case PE_OP_real: r.re = x.re; break;
    case PE_OP_imag: r.re = x.im; break;
    case PE_OP_eq: case PE_OP_ne: {
        pe_op each = op == PE_OP_eq ? PE_OP_eq : PE_OP_ne;
        *out = (pair){logic(b, op == PE_OP_eq ? PE_OP_and : PE_OP_or, test2(b, each, x.re, y.re), test2(b, each, x.im, y.im)),
                      NONE};
        return !b->full;
    }
    case PE_OP_cond: { /* the condition is real; the operands in the result's type */
        pair p = as_complex(b, arg[1], dt), q = as_complex(b, arg[2], dt);
        r = (pair){select(b, arg[0].re, p.re, q.re), select(b, arg[0].re, p.im, q.im)};
        break;
    }
    case PE_OP_concat: {
        pair p = as_complex(b, arg[0], dt), q = as_complex(b, arg[1], dt);
        kir_inst c = *in;
        c.dtype = c.ctype = (uint8_t)result;
        c.a[0] = p.re, c.a[1] = q.re;
        out->re = put(b, c);
        c.a[0] = p.im, c.a[1] = q.im;
        out->im = put(b, c);
        return !b->full;
    }
    case PE_OP_cast: r = arg[0].im == NONE ? (pair){arg[0].re, constant(b, PE_F64, 0.0)} : arg[0]; break;
    case PE_OP_complex: r = (pair){convert(b, arg[0].re, pe_dtype_real_part(ct)), convert(b, arg[1].re, pe_dtype_real_part(ct))}; break;
    default: return false;
    }
    if (b->full) return false;
    out->re = convert(b, r.re, result);
    out->im = pe_dtype_is_complex(dt) ? convert(b, r.im, result) : NONE;
    return !b->full;
}

static bool is_complex_inst(const kir_kernel *k, const kir_inst *in)
{
    if (pe_dtype_is_complex((pe_dtype)in->dtype) || (in->kind == KIR_OP && pe_dtype_is_complex((pe_dtype)in->ctype)))
        return true;
    int first, n = kir_value_operands(in, &first);
    for (int j = first; j < first + n; j++)
        if (pe_dtype_is_complex((pe_dtype)k->body[in->a[j]].dtype)) return true;
    return false;
}

bool kir_has_complex(const kir_kernel *k)
{
    for (int v = 0; v < k->n_body; v++)
        if (is_complex_inst(k, &k->body[v])) return true;
    return false;
}

bool kir_lower_complex(kir_kernel *k)
{
    if (!kir_has_complex(k)) return true;
    static _Thread_local builder b; /* 4 KiB of body: not on a worker's stack */
    static _Thread_local pair moved[KIR_MAX_BODY];
    b.n = 0, b.full = false;
    kir_param params[KIR_MAX_PARAMS];
    memcpy(params, k->params, sizeof params[0] * (size_t)k->n_params);
    for (int v = 0; v < k->n_body; v++) {
        kir_inst in = k->body[v];
        int first, n_values = kir_value_operands(&in, &first);
        pair arg[3] = {{0, NONE}, {0, NONE}, {0, NONE}};
        for (int j = 0; j < n_values; j++) arg[j] = moved[in.a[first + j]];
        if (in.kind == KIR_LOAD && pe_dtype_is_complex((pe_dtype)in.dtype)) {
            kir_param *q = &params[in.a[0]];
            pe_dtype part = pe_dtype_real_part((pe_dtype)q->dtype);
            if (q->kind == KIR_IN_SCALAR || q->kind == KIR_IN_LITERAL) { /* value + 0i */
                q->dtype = (uint8_t)part;
                moved[v] = (pair){put(&b, (kir_inst){.kind = KIR_LOAD, .dtype = (uint8_t)part, .n = 1, .a = {in.a[0]}}),
                                  constant(&b, part, 0.0)};
            } else if (q->kind == KIR_IN_CONTIG || q->kind == KIR_IN_STRIDED) {
                moved[v].re = put(&b, (kir_inst){.kind = KIR_LOAD, .dtype = (uint8_t)part, .n = 1, .a = {in.a[0]}, .imm = 0});
                moved[v].im = put(&b, (kir_inst){.kind = KIR_LOAD, .dtype = (uint8_t)part, .n = 1, .a = {in.a[0]}, .imm = 1});
            } else {
                return false; /* gathered complex arrays: the interpreter's */
            }
        } else if (in.kind == KIR_STORE && pe_dtype_is_complex((pe_dtype)params[in.a[0]].dtype)) {
            pe_dtype part = pe_dtype_real_part((pe_dtype)params[in.a[0]].dtype);
            pair x = as_complex(&b, arg[0], (pe_dtype)params[in.a[0]].dtype);
            put(&b, (kir_inst){.kind = KIR_STORE, .dtype = (uint8_t)part, .n = 2, .a = {in.a[0], x.re}, .imm = 0});
            put(&b, (kir_inst){.kind = KIR_STORE, .dtype = (uint8_t)part, .n = 2, .a = {in.a[0], x.im}, .imm = 1});
        } else if (in.kind == KIR_OP && is_complex_inst(k, &k->body[v])) {
            if (!lower_op(&b, &in, arg, &moved[v])) return false;
        } else if (is_complex_inst(k, &k->body[v])) {
            return false; /* a complex reduction or gather: never fused (kir_complex_emittable) */
        } else {
            for (int j = 0; j < n_values; j++) in.a[first + j] = arg[j].re;
            moved[v] = (pair){put(&b, in), NONE};
        }
        if (b.full) return false;
    }
    memcpy(k->params, params, sizeof params[0] * (size_t)k->n_params);
    memcpy(k->body, b.body, sizeof b.body[0] * (size_t)b.n);
    k->n_body = b.n;
    return true;
}

bool kir_complex_emittable(pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0)
{
    (void)operand0;
    switch (op) {
    case PE_OP_add: case PE_OP_sub: case PE_OP_mul: case PE_OP_div: case PE_OP_pow: case PE_OP_neg: case PE_OP_abs:
    case PE_OP_exp: case PE_OP_log: case PE_OP_sqrt: case PE_OP_eq: case PE_OP_ne: case PE_OP_cond: case PE_OP_conj:
    case PE_OP_real: case PE_OP_imag: case PE_OP_arg: case PE_OP_cast: case PE_OP_complex: case PE_OP_concat:
        return pe_dtype_valid(ctype) && pe_dtype_valid(dtype);
    default: return false; /* reductions (recorded as real ones) and gathers of complex values: the interpreter */
    }
}

/* Upper bounds of what lower_op adds for one op, beyond the op itself and
 * its loads' and store's second parts (measured on every op, c64 and c128,
 * real second operands: test_complex_kernels checks each against a
 * lowering). */
int kir_complex_growth(pe_op op)
{
    switch (op) {
    case PE_OP_pow: return 62;
    case PE_OP_div: return 56;
    case PE_OP_sqrt: return 48;
    case PE_OP_log: return 34;
    case PE_OP_exp: return 22;
    case PE_OP_abs: return 20;
    case PE_OP_mul: return 8;
    case PE_OP_concat: return 8;
    default: return 4; /* add, sub, neg, conj, real, imag, arg, eq, ne, cond, casts, complex */
    }
}
