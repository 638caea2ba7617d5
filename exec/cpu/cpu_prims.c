/* cpu_prims.c — the primitive library: hand-coded, branch-free f32 routines
 * built as always-inline libgccjit functions, so that a kernel calling them
 * stays one basic block and gcc vectorises the loop (a libm call would keep
 * it scalar).  Each routine is accurate to 2 ulp against the double-precision
 * result (measured <= 1 ulp), with C99's special values (tests/test_prims.c
 * checks 10^6 random inputs per routine and the edge cases).  Selects are
 * bit masks (pe_jit_select), exponents are taken apart with bitcasts, and
 * nothing indexes a table (gathers would stop the vectoriser under generic
 * tuning).
 *   expf: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2 (n rounded by
 *         the 1.5 * 2^23 trick), degree-7 Taylor (Horner, FMA where the ISA has it)
 *         polynomial (truncation 5e-9), 2^n applied in two exact steps so
 *         that subnormal results and overflow come out right.
 *   logf: x = 2^e m with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
 *         log1p(f) = f - (f^2/2 - s (f^2/2 + R(s^2))) with s = f / (2 + f)
 *         and R the atanh series to s^11; e ln2 added in two parts.
 * The others evaluate in double (exact conversions from float, one rounding
 * back), on three cores:
 *   exp2 (double): t = n + r, n = rint(t) by the 1.5 * 2^52 trick (so r is
 *         exact), 2^r by its Taylor series to degree 10 (2e-13), times 2^n
 *         built in the exponent field.
 *   log (double): u = 2^e m, m in [sqrt(1/2), sqrt(2)), s = (m-1)/(m+1),
 *         log m = 2 atanh s by its series to s^19 (1e-15); e exact.
 *   erfc (double, z >= 0): exp(-z^2) erfcx(z), erfcx as a degree-11
 *         polynomial in t = (z-3)/(z+3), a Chebyshev fit on z in [0, 10.1]
 *         (relative error 2.7e-9) computed for this file with mpmath's
 *         chebyfit; exp(-z^2) through the exp2 core.
 *   sin, cos: Payne-Hanek reduction for every |x| >= pi/4 in 64-bit integer
 *         arithmetic: x = M 2^E (M 24 bits) times the four 32-bit words of
 *         2/pi that matter for E (chosen by selects), modulo 4 in 2.62 fixed
 *         point (error < 2^-60); Taylor polynomials in double on |r| <= pi/4
 *         (sin to r^13, cos to r^14: < 2e-14).
 *   pow: 2^(y log2|x|) with both cores, C99's special cases by selects.
 *   exp2, expm1 (Taylor to x^10 below 1/4), log2, log1p (series below
 *         2^-10, else log(1 + x) with 1 + x exact), tanh = E / (E + 2) with
 *         E = expm1(2|x|), erf (Taylor series below 1/2, else 1 - erfc),
 *         erfc, cdf_norm = erfc(-x / sqrt 2) / 2, atan (reduced to
 *         |u| <= tan(pi/8) by u = (t-1)/(t+1) or -1/t; a degree-9 Chebyshev fit
 *         of atan(sqrt z)/sqrt z in z = u^2, relative error 1e-15, computed
 *         with mpmath's chebyfit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_prims.h"
#include "gccjit_build.h"

enum { P_EXP, P_LOG, P_EXP2, P_LOG2, P_EXPM1, P_LOG1P, P_SIN, P_COS, P_TANH, P_ERF, P_ERFC, P_CDF_NORM, P_ATAN, P_POW, P_N };
static const char *const prim_names[P_N] = {"exp", "log", "exp2", "log2", "expm1", "log1p", "sin",
                                            "cos", "tanh", "erf", "erfc", "cdf_norm", "atan", "pow"};

struct pe_prims {
    gcc_jit_context *ctx;
    gcc_jit_function *fn[P_N];
    bool fma; /* the ISA has fused multiply-add: polynomials use it explicitly */
};

typedef struct {
    gcc_jit_context *ctx;
    gcc_jit_function *fn;
    gcc_jit_block *b;
    gcc_jit_type *f, *d, *i, *u, *ul, *boolean;
    int n_locals;
    bool fma;
} builder;

static pe_jit_cursor cursor(builder *B) { return (pe_jit_cursor){B->ctx, B->fn, B->b, &B->n_locals}; }
static gcc_jit_rvalue *local(builder *B, gcc_jit_rvalue *v, gcc_jit_type *t) { return pe_jit_local(cursor(B), v, t); }
/* a local of v's own type */
static gcc_jit_rvalue *L(builder *B, gcc_jit_rvalue *v) { return local(B, v, gcc_jit_rvalue_get_type(v)); }
static gcc_jit_rvalue *fc(builder *B, double v) { return gcc_jit_context_new_rvalue_from_double(B->ctx, B->f, v); }
static gcc_jit_rvalue *dc(builder *B, double v) { return gcc_jit_context_new_rvalue_from_double(B->ctx, B->d, v); }
static gcc_jit_rvalue *ic(builder *B, int v) { return gcc_jit_context_new_rvalue_from_int(B->ctx, B->i, v); }
static gcc_jit_rvalue *uc(builder *B, unsigned v) { return gcc_jit_context_new_rvalue_from_long(B->ctx, B->u, (long)v); }
static gcc_jit_rvalue *ulc(builder *B, unsigned long long v)
{
    /* from_long takes a signed long: build wide constants from two halves */
    gcc_jit_rvalue *hi = gcc_jit_context_new_rvalue_from_long(B->ctx, B->ul, (long)(v >> 32));
    gcc_jit_rvalue *lo = gcc_jit_context_new_rvalue_from_long(B->ctx, B->ul, (long)(v & 0xffffffffu));
    if (v >> 32 == 0) return lo;
    return gcc_jit_context_new_binary_op(B->ctx, NULL, GCC_JIT_BINARY_OP_BITWISE_OR, B->ul,
                                         gcc_jit_context_new_binary_op(B->ctx, NULL, GCC_JIT_BINARY_OP_LSHIFT, B->ul, hi,
                                                                       gcc_jit_context_new_rvalue_from_long(B->ctx, B->ul, 32)),
                                         lo);
}
static gcc_jit_rvalue *op(builder *B, enum gcc_jit_binary_op o, gcc_jit_type *t, gcc_jit_rvalue *a, gcc_jit_rvalue *c)
{
    return gcc_jit_context_new_binary_op(B->ctx, NULL, o, t, a, c);
}
/* arithmetic in the type of the first operand */
static gcc_jit_rvalue *A(builder *B, enum gcc_jit_binary_op o, gcc_jit_rvalue *a, gcc_jit_rvalue *c)
{
    return op(B, o, gcc_jit_rvalue_get_type(a), a, c);
}
#define ADD(a, c) A(B, GCC_JIT_BINARY_OP_PLUS, (a), (c))
#define SUB(a, c) A(B, GCC_JIT_BINARY_OP_MINUS, (a), (c))
#define MUL(a, c) A(B, GCC_JIT_BINARY_OP_MULT, (a), (c))
#define DIV(a, c) A(B, GCC_JIT_BINARY_OP_DIVIDE, (a), (c))
#define AND(a, c) A(B, GCC_JIT_BINARY_OP_BITWISE_AND, (a), (c))
#define OR(a, c) A(B, GCC_JIT_BINARY_OP_BITWISE_OR, (a), (c))
#define XOR(a, c) A(B, GCC_JIT_BINARY_OP_BITWISE_XOR, (a), (c))
#define SHL(a, c) A(B, GCC_JIT_BINARY_OP_LSHIFT, (a), (c))
#define SHR(a, c) A(B, GCC_JIT_BINARY_OP_RSHIFT, (a), (c))
static gcc_jit_rvalue *fadd(builder *B, gcc_jit_rvalue *a, gcc_jit_rvalue *c) { return op(B, GCC_JIT_BINARY_OP_PLUS, B->f, a, c); }
static gcc_jit_rvalue *fsub(builder *B, gcc_jit_rvalue *a, gcc_jit_rvalue *c) { return op(B, GCC_JIT_BINARY_OP_MINUS, B->f, a, c); }
static gcc_jit_rvalue *fmul(builder *B, gcc_jit_rvalue *a, gcc_jit_rvalue *c) { return op(B, GCC_JIT_BINARY_OP_MULT, B->f, a, c); }
static gcc_jit_rvalue *cmp(builder *B, enum gcc_jit_comparison o, gcc_jit_rvalue *a, gcc_jit_rvalue *c)
{
    return gcc_jit_context_new_comparison(B->ctx, NULL, o, a, c);
}
#define LT(a, c) cmp(B, GCC_JIT_COMPARISON_LT, (a), (c))
#define GT(a, c) cmp(B, GCC_JIT_COMPARISON_GT, (a), (c))
#define EQ(a, c) cmp(B, GCC_JIT_COMPARISON_EQ, (a), (c))
#define NE(a, c) cmp(B, GCC_JIT_COMPARISON_NE, (a), (c))
static gcc_jit_rvalue *lor(builder *B, gcc_jit_rvalue *a, gcc_jit_rvalue *c)
{
    return op(B, GCC_JIT_BINARY_OP_LOGICAL_OR, B->boolean, a, c);
}
static gcc_jit_rvalue *land(builder *B, gcc_jit_rvalue *a, gcc_jit_rvalue *c)
{
    return op(B, GCC_JIT_BINARY_OP_LOGICAL_AND, B->boolean, a, c);
}
static gcc_jit_rvalue *cast(builder *B, gcc_jit_rvalue *x, gcc_jit_type *t) { return gcc_jit_context_new_cast(B->ctx, NULL, x, t); }
static gcc_jit_rvalue *as_bits(builder *B, gcc_jit_rvalue *x) { return gcc_jit_context_new_bitcast(B->ctx, NULL, x, B->u); }
static gcc_jit_rvalue *as_float(builder *B, gcc_jit_rvalue *x) { return gcc_jit_context_new_bitcast(B->ctx, NULL, x, B->f); }
static gcc_jit_rvalue *as_bits64(builder *B, gcc_jit_rvalue *x) { return gcc_jit_context_new_bitcast(B->ctx, NULL, x, B->ul); }
static gcc_jit_rvalue *as_double(builder *B, gcc_jit_rvalue *x) { return gcc_jit_context_new_bitcast(B->ctx, NULL, x, B->d); }

/* c ? a : b without a branch, in a's type (float, double, int, unsigned). */
static gcc_jit_rvalue *sel(builder *B, gcc_jit_rvalue *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    gcc_jit_type *t = gcc_jit_rvalue_get_type(a);
    bool wide = t == B->d || t == B->ul;
    return pe_jit_select(cursor(B), c, a, b, t, wide ? B->ul : B->u, t == B->f || t == B->d);
}

/* flag (0 or 1, unsigned 64-bit) ? a : b for doubles, by a mask made from
 * the integer itself: a bool converted from an integer does not vectorise. */
static gcc_jit_rvalue *sel_flag(builder *B, gcc_jit_rvalue *flag, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    gcc_jit_rvalue *m = L(B, SUB(ulc(B, 0), flag));
    gcc_jit_rvalue *r = OR(AND(as_bits64(B, a), m), AND(as_bits64(B, b), gcc_jit_context_new_unary_op(B->ctx, NULL, GCC_JIT_UNARY_OP_BITWISE_NEGATE, B->ul, m)));
    return L(B, as_double(B, r));
}

/* Horner: c[0] x^(n-1) + ... + c[n-1], in x's type */
/* Kernels compile with -ffp-contract=off (a result must not depend on
 * whether fusion kept an intermediate in a register): where the ISA has FMA,
 * polynomials ask for it by name, the one place its speed matters. */
static gcc_jit_rvalue *horner(builder *B, gcc_jit_rvalue *x, const double *c, int n)
{
    gcc_jit_type *t = gcc_jit_rvalue_get_type(x);
    gcc_jit_rvalue *p = gcc_jit_context_new_rvalue_from_double(B->ctx, t, c[0]);
    gcc_jit_function *fma = NULL;
    if (B->fma) fma = gcc_jit_context_get_builtin_function(B->ctx, t == B->f ? "__builtin_fmaf" : "__builtin_fma");
    for (int k = 1; k < n; k++) {
        gcc_jit_rvalue *ck = gcc_jit_context_new_rvalue_from_double(B->ctx, t, c[k]);
        if (fma) {
            gcc_jit_rvalue *args[3] = {p, x, ck};
            p = L(B, gcc_jit_context_new_call(B->ctx, NULL, fma, 3, args));
        } else {
            p = L(B, ADD(MUL(p, x), ck));
        }
    }
    return p;
}

/* 2^k as a float, for k in [-126, 127]. */
static gcc_jit_rvalue *pow2(builder *B, gcc_jit_rvalue *k)
{
    gcc_jit_rvalue *biased = gcc_jit_context_new_cast(B->ctx, NULL, op(B, GCC_JIT_BINARY_OP_PLUS, B->i, k, ic(B, 127)), B->u);
    return as_float(B, op(B, GCC_JIT_BINARY_OP_LSHIFT, B->u, biased, gcc_jit_context_new_rvalue_from_int(B->ctx, B->u, 23)));
}

static builder begin_n(pe_prims *p, const char *name, int n, gcc_jit_param **x)
{
    builder B = {.ctx = p->ctx, .fma = p->fma};
    B.f = gcc_jit_context_get_type(p->ctx, GCC_JIT_TYPE_FLOAT);
    B.d = gcc_jit_context_get_type(p->ctx, GCC_JIT_TYPE_DOUBLE);
    B.i = gcc_jit_context_get_type(p->ctx, GCC_JIT_TYPE_INT);
    B.u = gcc_jit_context_get_type(p->ctx, GCC_JIT_TYPE_UNSIGNED_INT);
    B.ul = gcc_jit_context_get_type(p->ctx, GCC_JIT_TYPE_UNSIGNED_LONG_LONG);
    B.boolean = gcc_jit_context_get_type(p->ctx, GCC_JIT_TYPE_BOOL);
    for (int k = 0; k < n; k++) x[k] = gcc_jit_context_new_param(p->ctx, NULL, B.f, k ? "y" : "x");
    B.fn = gcc_jit_context_new_function(p->ctx, NULL, GCC_JIT_FUNCTION_ALWAYS_INLINE, B.f, name, n, x, 0);
    B.b = gcc_jit_function_new_block(B.fn, "body");
    return B;
}
static builder begin(pe_prims *p, const char *name, gcc_jit_param **x) { return begin_n(p, name, 1, x); }

static gcc_jit_rvalue *finish(builder *B, gcc_jit_rvalue *y)
{
    gcc_jit_block_end_with_return(B->b, NULL, y);
    return NULL;
}

static gcc_jit_function *build_expf(pe_prims *p)
{
    gcc_jit_param *param;
    builder B = begin(p, "pe_prim_expf", &param);
    gcc_jit_rvalue *x0 = gcc_jit_param_as_rvalue(param);
    /* clamp into [-104, 89]: beyond, the result is 0 or inf anyway (the
     * scaling below under- or overflows exactly as exp would) */
    gcc_jit_rvalue *x = sel(&B, cmp(&B, GCC_JIT_COMPARISON_GT, x0, fc(&B, 89.0)), fc(&B, 89.0), x0);
    x = sel(&B, cmp(&B, GCC_JIT_COMPARISON_LT, x, fc(&B, -104.0)), fc(&B, -104.0), x);
    /* n = round(x / ln2): adding and subtracting 1.5 * 2^23 rounds to an
     * integer in plain float arithmetic (floorf would not vectorise) */
    gcc_jit_rvalue *shifted = local(&B, fadd(&B, fmul(&B, x, fc(&B, 1.44269504088896341)), fc(&B, 12582912.0)), B.f);
    gcc_jit_rvalue *nf = local(&B, fsub(&B, shifted, fc(&B, 12582912.0)), B.f);
    /* r = x - n ln2, ln2 split so that n * LN2_HI is exact */
    gcc_jit_rvalue *r = local(&B, fsub(&B, fsub(&B, x, fmul(&B, nf, fc(&B, 0.693359375))), fmul(&B, nf, fc(&B, -2.12194440e-4))), B.f);
    static const double taylor[] = {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0};
    gcc_jit_rvalue *poly = horner(&B, r, taylor, 8); /* FMA where the ISA has it: a softmax's row pass is bound by this chain */
    /* times 2^n in two steps of at most 2^±75, both exact unless the result
     * is subnormal */
    gcc_jit_rvalue *n = local(&B, gcc_jit_context_new_cast(B.ctx, NULL, nf, B.i), B.i);
    gcc_jit_rvalue *n1 = local(&B, op(&B, GCC_JIT_BINARY_OP_DIVIDE, B.i, n, ic(&B, 2)), B.i);
    gcc_jit_rvalue *n2 = op(&B, GCC_JIT_BINARY_OP_MINUS, B.i, n, n1);
    gcc_jit_rvalue *y = local(&B, fmul(&B, fmul(&B, poly, pow2(&B, n1)), pow2(&B, n2)), B.f);
    y = sel(&B, cmp(&B, GCC_JIT_COMPARISON_NE, x0, x0), fadd(&B, x0, x0), y); /* NaN */
    gcc_jit_block_end_with_return(B.b, NULL, y);
    return B.fn;
}

static gcc_jit_function *build_logf(pe_prims *p)
{
    gcc_jit_param *param;
    builder B = begin(p, "pe_prim_logf", &param);
    gcc_jit_rvalue *x0 = gcc_jit_param_as_rvalue(param);
    /* subnormals: scale by 2^23 first */
    gcc_jit_rvalue *tiny = cmp(&B, GCC_JIT_COMPARISON_LT, x0, fc(&B, 1.17549435e-38));
    gcc_jit_rvalue *x = sel(&B, tiny, fmul(&B, x0, fc(&B, 8388608.0)), x0);
    gcc_jit_rvalue *bits = local(&B, as_bits(&B, x), B.u);
    gcc_jit_rvalue *e = local(&B, op(&B, GCC_JIT_BINARY_OP_MINUS, B.i,
                                     gcc_jit_context_new_cast(B.ctx, NULL, op(&B, GCC_JIT_BINARY_OP_RSHIFT, B.u, bits,
                                                                              gcc_jit_context_new_rvalue_from_int(B.ctx, B.u, 23)), B.i),
                                     ic(&B, 127)), B.i);
    gcc_jit_rvalue *mant = op(&B, GCC_JIT_BINARY_OP_BITWISE_OR, B.u,
                              op(&B, GCC_JIT_BINARY_OP_BITWISE_AND, B.u, bits, gcc_jit_context_new_rvalue_from_int(B.ctx, B.u, 0x7fffff)),
                              gcc_jit_context_new_rvalue_from_int(B.ctx, B.u, 0x3f800000));
    gcc_jit_rvalue *m = local(&B, as_float(&B, mant), B.f); /* [1, 2) */
    gcc_jit_rvalue *big = cmp(&B, GCC_JIT_COMPARISON_GT, m, fc(&B, 1.41421356237309505));
    m = sel(&B, big, fmul(&B, m, fc(&B, 0.5)), m);
    gcc_jit_rvalue *ef = local(&B, gcc_jit_context_new_cast(B.ctx, NULL, e, B.f), B.f);
    ef = sel(&B, big, fadd(&B, ef, fc(&B, 1.0)), ef);
    ef = sel(&B, tiny, fsub(&B, ef, fc(&B, 23.0)), ef);
    gcc_jit_rvalue *f = local(&B, fsub(&B, m, fc(&B, 1.0)), B.f);
    gcc_jit_rvalue *s = local(&B, op(&B, GCC_JIT_BINARY_OP_DIVIDE, B.f, f, fadd(&B, fc(&B, 2.0), f)), B.f);
    gcc_jit_rvalue *z = local(&B, fmul(&B, s, s), B.f);
    static const double atanh_series[] = {2.0 / 11, 2.0 / 9, 2.0 / 7, 2.0 / 5, 2.0 / 3};
    gcc_jit_rvalue *R = fc(&B, atanh_series[0]);
    for (int k = 1; k < 5; k++) R = local(&B, fadd(&B, fmul(&B, R, z), fc(&B, atanh_series[k])), B.f);
    R = local(&B, fmul(&B, R, z), B.f);
    gcc_jit_rvalue *hfsq = local(&B, fmul(&B, fc(&B, 0.5), fmul(&B, f, f)), B.f);
    gcc_jit_rvalue *log1p = local(&B, fsub(&B, f, fsub(&B, hfsq, fmul(&B, s, fadd(&B, hfsq, R)))), B.f);
    gcc_jit_rvalue *y = local(&B, fadd(&B, fmul(&B, ef, fc(&B, 0.693359375)), fadd(&B, fmul(&B, ef, fc(&B, -2.12194440e-4)), log1p)), B.f);
    /* special values: +inf stays, 0 gives -inf, negatives and NaN give NaN */
    y = sel(&B, cmp(&B, GCC_JIT_COMPARISON_EQ, x0, fc(&B, __builtin_inf())), x0, y);
    y = sel(&B, cmp(&B, GCC_JIT_COMPARISON_EQ, x0, fc(&B, 0.0)), fc(&B, -__builtin_inf()), y);
    gcc_jit_rvalue *bad = gcc_jit_context_new_binary_op(B.ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, B.boolean,
                                                        cmp(&B, GCC_JIT_COMPARISON_LT, x0, fc(&B, 0.0)),
                                                        cmp(&B, GCC_JIT_COMPARISON_NE, x0, x0));
    y = sel(&B, bad, fc(&B, __builtin_nan("")), y);
    gcc_jit_block_end_with_return(B.b, NULL, y);
    return B.fn;
}


/* ------------------------------------------------------- double cores */

#define LOG2E 1.44269504088896340736
#define LN2 0.69314718055994530942

/* 2^t for double t in [-1000, 1000]. */
/* 2^t by the Taylor series of 2^r to `degree` (|r| <= 1/2: the truncation
 * error is (ln2/2)^(degree+1) / (degree+1)!, 2e-13 at 10, 2e-10 at 8) */
static gcc_jit_rvalue *d_exp2_degree(builder *B, gcc_jit_rvalue *t, int degree)
{
    gcc_jit_rvalue *shifted = L(B, ADD(t, dc(B, 6755399441055744.0))); /* 1.5 * 2^52 */
    gcc_jit_rvalue *n = L(B, SUB(shifted, dc(B, 6755399441055744.0)));
    gcc_jit_rvalue *r = L(B, SUB(t, n)); /* exact, |r| <= 1/2 */
    double c[11];
    double term = 1;
    for (int k = 0; k <= degree; k++) c[degree - k] = term, term = term * LN2 / (k + 1); /* ln2^k / k! */
    gcc_jit_rvalue *p = horner(B, r, c, degree + 1);
    /* the low bits of `shifted` hold n: 2^n by the exponent field */
    gcc_jit_rvalue *scale = as_double(B, SHL(ADD(as_bits64(B, shifted), ulc(B, 1023)), ulc(B, 52)));
    return L(B, MUL(p, scale));
}

static gcc_jit_rvalue *d_exp2(builder *B, gcc_jit_rvalue *t) { return d_exp2_degree(B, t, 10); }
static gcc_jit_rvalue *d_exp(builder *B, gcc_jit_rvalue *x) { return d_exp2(B, L(B, MUL(x, dc(B, LOG2E)))); }

/* e^x - 1 for double x in [-700, 700], relative accuracy near 0. */
static gcc_jit_rvalue *d_expm1(builder *B, gcc_jit_rvalue *x)
{
    gcc_jit_rvalue *big = L(B, SUB(d_exp(B, x), dc(B, 1.0)));
    double c[10];
    double f = 1;
    for (int k = 1; k <= 10; k++) f *= k, c[10 - k] = 1.0 / f; /* 1/10!, ..., 1/1! */
    gcc_jit_rvalue *small = L(B, MUL(x, horner(B, x, c, 10)));
    gcc_jit_rvalue *ax = L(B, sel(B, LT(x, dc(B, 0.0)), SUB(dc(B, 0.0), x), x));
    return sel(B, LT(ax, dc(B, 0.25)), small, big);
}

/* log u = e ln2 + lm for positive normal double u: *e (exact) and lm. */
static void d_log_parts(builder *B, gcc_jit_rvalue *u, gcc_jit_rvalue **e, gcc_jit_rvalue **lm)
{
    gcc_jit_rvalue *bits = L(B, as_bits64(B, u));
    /* the exponent field as a double, by the 2^52 trick (no int64 conversion) */
    gcc_jit_rvalue *ed = L(B, SUB(as_double(B, OR(SHR(bits, ulc(B, 52)), ulc(B, 0x4330000000000000ull))),
                                  dc(B, 4503599627370496.0 + 1023)));
    gcc_jit_rvalue *m = L(B, as_double(B, OR(AND(bits, ulc(B, 0x000fffffffffffffull)), ulc(B, 0x3ff0000000000000ull))));
    gcc_jit_rvalue *big = L(B, GT(m, dc(B, 1.41421356237309504880)));
    m = sel(B, big, MUL(m, dc(B, 0.5)), m);
    *e = sel(B, big, ADD(ed, dc(B, 1.0)), ed);
    gcc_jit_rvalue *f = L(B, SUB(m, dc(B, 1.0)));
    gcc_jit_rvalue *s = L(B, DIV(f, ADD(f, dc(B, 2.0))));
    gcc_jit_rvalue *z = L(B, MUL(s, s));
    double c[10];
    for (int k = 0; k < 10; k++) c[9 - k] = 2.0 / (2 * k + 1); /* 2 atanh s = 2 (s + s^3/3 + ...) */
    *lm = L(B, MUL(s, horner(B, z, c, 10)));
}

/* erfc z for double z >= 0 (clamped to 10.5: below the smallest float beyond). */
static gcc_jit_rvalue *d_erfc_pos(builder *B, gcc_jit_rvalue *z)
{
    z = sel(B, GT(z, dc(B, 10.5)), dc(B, 10.5), z);
    gcc_jit_rvalue *t = L(B, DIV(SUB(z, dc(B, 3.0)), ADD(z, dc(B, 3.0))));
    /* erfcx(3 (1+t)/(1-t)), Chebyshev fit with mpmath.chebyfit (N = 12) on
     * z in [0, 10.1], relative error 2.7e-9 (0.05 ulp of a float: the
     * results are floats, and four fewer terms than a double-grade fit make
     * Black-Scholes kernels measurably faster); highest degree first */
    static const double c[12] = {
        8.942613662531994e-06, 7.542060035177275e-05, 3.372112669660388e-05, -0.0006085018368314914,
        0.0007089748213569665, 0.0042724956868770425, -0.024392284887754512, 0.07166543586749691,
        -0.15011597427509266,  0.24560381915458956,   -0.3262335589814418,   0.17900115105317857,
    };
    gcc_jit_rvalue *p = horner(B, t, c, 12);
    /* exp(-z^2): degree 8 is plenty next to the fit's 2.7e-9 */
    return L(B, MUL(d_exp2_degree(B, L(B, MUL(SUB(dc(B, 0.0), MUL(z, z)), dc(B, LOG2E))), 8), p));
}

static gcc_jit_rvalue *is_nan(builder *B, gcc_jit_rvalue *x) { return NE(x, x); }
/* |x| through gcc's fabs, not a bit mask: gcc then knows |-x| = |x| and
 * shares the work of cdf_norm(x) and cdf_norm(-x) in one kernel */
static gcc_jit_rvalue *dabs(builder *B, gcc_jit_rvalue *x)
{
    gcc_jit_rvalue *arg = x;
    return L(B, gcc_jit_context_new_call(B->ctx, NULL, gcc_jit_context_get_builtin_function(B->ctx, "__builtin_fabs"), 1, &arg));
}
static gcc_jit_rvalue *to_d(builder *B, gcc_jit_rvalue *x) { return L(B, cast(B, x, B->d)); }
static gcc_jit_rvalue *to_f(builder *B, gcc_jit_rvalue *x) { return L(B, cast(B, x, B->f)); }
/* x's sign bit (as u32) */
static gcc_jit_rvalue *sign_of(builder *B, gcc_jit_rvalue *x) { return L(B, AND(as_bits(B, x), uc(B, 0x80000000u))); }
static gcc_jit_rvalue *with_sign(builder *B, gcc_jit_rvalue *y, gcc_jit_rvalue *sign) { return L(B, as_float(B, OR(as_bits(B, y), sign))); }
static gcc_jit_rvalue *clampd(builder *B, gcc_jit_rvalue *x, double lo, double hi)
{
    x = sel(B, GT(x, dc(B, hi)), dc(B, hi), x);
    return sel(B, LT(x, dc(B, lo)), dc(B, lo), x); /* NaN stays */
}

/* ------------------------------------------------------------- float */

static void build_exp2f(builder *B, gcc_jit_rvalue *x)
{
    gcc_jit_rvalue *y = to_f(B, d_exp2(B, clampd(B, to_d(B, x), -300, 300)));
    finish(B, sel(B, is_nan(B, x), fadd(B, x, x), y));
}

static void build_expm1f(builder *B, gcc_jit_rvalue *x)
{
    gcc_jit_rvalue *y = to_f(B, d_expm1(B, clampd(B, to_d(B, x), -200, 200)));
    y = sel(B, EQ(x, fc(B, 0.0)), x, y); /* -0 */
    finish(B, sel(B, is_nan(B, x), fadd(B, x, x), y));
}

/* log2 (which 1) or log1p (which 2) */
static void build_logf_d(builder *B, gcc_jit_rvalue *x, int which)
{
    gcc_jit_rvalue *xd = to_d(B, x), *u = xd, *e, *lm, *y;
    if (which == 2) u = L(B, ADD(dc(B, 1.0), xd)); /* exact when |x| >= 2^-29 */
    gcc_jit_rvalue *safe = sel(B, GT(u, dc(B, 0.0)), u, dc(B, 1.0));
    safe = sel(B, LT(safe, dc(B, 1e300)), safe, dc(B, 1.0));
    d_log_parts(B, safe, &e, &lm);
    if (which == 1) {
        y = to_f(B, ADD(e, MUL(lm, dc(B, LOG2E))));
    } else {
        static const double c[7] = {1.0 / 7, -1.0 / 6, 1.0 / 5, -1.0 / 4, 1.0 / 3, -1.0 / 2, 1.0};
        gcc_jit_rvalue *series = L(B, MUL(xd, horner(B, xd, c, 7))); /* |x| < 2^-10: error x^8/8 */
        gcc_jit_rvalue *lg = L(B, ADD(MUL(e, dc(B, LN2)), lm));
        gcc_jit_rvalue *small = LT(dabs(B, xd), dc(B, 0.0009765625));
        y = to_f(B, sel(B, small, series, lg));
    }
    /* u = 0: -inf; u < 0 or NaN: NaN; u = inf: inf */
    gcc_jit_rvalue *zero = which == 2 ? EQ(x, fc(B, -1.0)) : EQ(x, fc(B, 0.0));
    gcc_jit_rvalue *neg = which == 2 ? LT(x, fc(B, -1.0)) : LT(x, fc(B, 0.0));
    y = sel(B, EQ(x, fc(B, __builtin_inf())), x, y);
    y = sel(B, zero, fc(B, -__builtin_inf()), y);
    finish(B, sel(B, lor(B, neg, is_nan(B, x)), fc(B, __builtin_nanf("")), y));
}

static void build_tanhf(builder *B, gcc_jit_rvalue *x)
{
    gcc_jit_rvalue *ax = to_d(B, as_float(B, AND(as_bits(B, x), uc(B, 0x7fffffffu))));
    ax = sel(B, GT(ax, dc(B, 20.0)), dc(B, 20.0), ax);
    gcc_jit_rvalue *E = d_expm1(B, L(B, MUL(ax, dc(B, 2.0))));
    gcc_jit_rvalue *y = with_sign(B, to_f(B, DIV(E, ADD(E, dc(B, 2.0)))), sign_of(B, x));
    finish(B, sel(B, is_nan(B, x), fadd(B, x, x), y));
}

/* erf (0), erfc (1), cdf_norm (2) */
static void build_erff(builder *B, gcc_jit_rvalue *x, int which)
{
    gcc_jit_rvalue *xd = to_d(B, x), *y;
    if (which == 2) xd = L(B, MUL(xd, dc(B, -0.70710678118654752440))); /* erfc(-x/sqrt 2) / 2 */
    gcc_jit_rvalue *E = d_erfc_pos(B, dabs(B, xd));
    gcc_jit_rvalue *neg = LT(xd, dc(B, 0.0));
    if (which == 0) {
        /* erf x = 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)), to n = 10 for |x| < 1/2 */
        double c[11], f = 1;
        for (int n = 0; n <= 10; n++) {
            if (n) f *= n;
            c[10 - n] = (n % 2 ? -1.0 : 1.0) * 1.12837916709551257390 / (f * (2 * n + 1));
        }
        gcc_jit_rvalue *z = L(B, MUL(xd, xd));
        gcc_jit_rvalue *series = L(B, MUL(xd, horner(B, z, c, 11)));
        gcc_jit_rvalue *one_minus = L(B, SUB(dc(B, 1.0), E));
        one_minus = sel(B, neg, SUB(dc(B, 0.0), one_minus), one_minus);
        y = to_f(B, sel(B, LT(dabs(B, xd), dc(B, 0.5)), series, one_minus));
    } else {
        gcc_jit_rvalue *c = sel(B, neg, SUB(dc(B, 2.0), E), E);
        if (which == 2) c = L(B, MUL(c, dc(B, 0.5)));
        y = to_f(B, c);
    }
    finish(B, sel(B, is_nan(B, x), fadd(B, x, x), y));
}

static void build_atanf(builder *B, gcc_jit_rvalue *x)
{
    gcc_jit_rvalue *t = to_d(B, as_float(B, AND(as_bits(B, x), uc(B, 0x7fffffffu))));
    gcc_jit_rvalue *far = L(B, GT(t, dc(B, 2.41421356237309504880)));  /* tan(3pi/8) */
    gcc_jit_rvalue *mid = L(B, GT(t, dc(B, 0.41421356237309504880)));  /* tan(pi/8) */
    gcc_jit_rvalue *num = sel(B, far, dc(B, -1.0), sel(B, mid, SUB(t, dc(B, 1.0)), t));
    gcc_jit_rvalue *den = sel(B, far, t, sel(B, mid, ADD(t, dc(B, 1.0)), dc(B, 1.0)));
    gcc_jit_rvalue *base = sel(B, far, dc(B, 1.57079632679489661923), sel(B, mid, dc(B, 0.78539816339744830962), dc(B, 0.0)));
    gcc_jit_rvalue *u = L(B, DIV(num, den));
    /* atan(sqrt z)/sqrt z on z in [0, tan^2(pi/8)]: Chebyshev fit with
     * mpmath.chebyfit (N = 10), relative error 9.6e-16 */
    static const double c[10] = {-0.0253147297319423297387, 0.0502463424559604332683, -0.0650594415550331070467,
                                 0.076735290984678265266,   -0.09089529357362554915,  0.11111048820585144807,
                                 -0.14285712660659054093,   0.199999999783768687089,  -0.333333333332213411026,
                                 0.99999999999999903991};
    gcc_jit_rvalue *a = L(B, ADD(base, MUL(u, horner(B, L(B, MUL(u, u)), c, 10))));
    gcc_jit_rvalue *y = with_sign(B, to_f(B, a), sign_of(B, x));
    finish(B, sel(B, is_nan(B, x), fadd(B, x, x), y));
}

/* sin (cos = false) or cos */
static void build_sincosf(builder *B, gcc_jit_rvalue *x, bool is_cos)
{
    static const unsigned two_over_pi[7] = {0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0,
                                            0xdb629599, 0x3c439041, 0xfe5163ab}; /* 2/pi, 32 bits a word */
    gcc_jit_rvalue *xb = L(B, as_bits(B, x));
    gcc_jit_rvalue *axb = L(B, AND(xb, uc(B, 0x7fffffffu)));
    gcc_jit_rvalue *ax = L(B, as_float(B, axb));
    /* x = M 2^E; x 2/pi mod 4 in 2.62 fixed point from words v0..v0+3 of
     * 2/pi (word -1 is the integer part, 0), v0 = floor((E-2)/32) */
    gcc_jit_rvalue *Em2 = L(B, SUB(cast(B, SHR(axb, uc(B, 23)), B->i), ic(B, 152)));
    gcc_jit_rvalue *v0 = L(B, SHR(Em2, ic(B, 5))); /* arithmetic */
    gcc_jit_rvalue *s0 = L(B, cast(B, ADD(AND(Em2, ic(B, 31)), ic(B, 32)), B->ul)); /* 32..63 */
    gcc_jit_rvalue *M = L(B, cast(B, OR(AND(axb, uc(B, 0x7fffffu)), uc(B, 0x800000u)), B->ul));
    gcc_jit_rvalue *P[4];
    for (int j = 0; j < 4; j++) {
        gcc_jit_rvalue *w = uc(B, two_over_pi[3 + j]);
        for (int v = 2; v >= -1; v--) w = sel(B, EQ(v0, ic(B, v)), uc(B, v + j >= 0 ? two_over_pi[v + j] : 0), w);
        P[j] = L(B, MUL(M, cast(B, w, B->ul)));
    }
    gcc_jit_rvalue *S = ADD(SHL(P[0], s0), SHL(P[1], SUB(s0, ulc(B, 32))));
    S = ADD(S, SHR(P[2], SUB(ulc(B, 64), s0)));
    S = L(B, ADD(S, SHR(SHR(P[3], ulc(B, 32)), SUB(ulc(B, 64), s0))));
    gcc_jit_rvalue *S2 = L(B, ADD(S, ulc(B, 1ull << 61))); /* round to the nearest quadrant */
    gcc_jit_rvalue *q = L(B, cast(B, SHR(S2, ulc(B, 62)), B->u));
    gcc_jit_rvalue *U = L(B, SHL(S2, ulc(B, 2))); /* (fraction + 1/2) 2^64 */
    gcc_jit_rvalue *dhi = L(B, SUB(as_double(B, OR(SHR(U, ulc(B, 32)), ulc(B, 0x4330000000000000ull))), dc(B, 4503599627370496.0)));
    gcc_jit_rvalue *dlo = L(B, SUB(as_double(B, OR(AND(U, ulc(B, 0xffffffffull)), ulc(B, 0x4330000000000000ull))), dc(B, 4503599627370496.0)));
    gcc_jit_rvalue *frac = L(B, ADD(MUL(SUB(dhi, dc(B, 2147483648.0)), dc(B, 0x1p-32)), MUL(dlo, dc(B, 0x1p-64))));
    gcc_jit_rvalue *r = L(B, MUL(frac, dc(B, 1.57079632679489661923)));
    /* |x| < pi/4: r = x.  Conditions of the width of what they select */
    gcc_jit_rvalue *axd = to_d(B, ax);
    r = sel(B, LT(axd, dc(B, (double)0.78539816f)), axd, r);
    q = sel(B, LT(axb, uc(B, 0x3f490fdbu)), uc(B, 0), q);
    gcc_jit_rvalue *z = L(B, MUL(r, r));
    double cs[6], cc[7], f = 1;
    for (int k = 1; k <= 14; k++) {
        f *= k;
        if (k % 2 && k >= 3) cs[6 - (k - 1) / 2] = ((k / 2) % 2 ? -1.0 : 1.0) / f; /* r^3/3! .. r^13/13! */
        if (k % 2 == 0) cc[7 - k / 2] = ((k / 2) % 2 ? -1.0 : 1.0) / f;     /* z/2! .. z^7/14! */
    }
    gcc_jit_rvalue *s = L(B, ADD(r, MUL(MUL(r, z), horner(B, z, cs, 6))));
    gcc_jit_rvalue *c = L(B, ADD(dc(B, 1.0), MUL(z, horner(B, z, cc, 7))));
    gcc_jit_rvalue *swap = L(B, cast(B, AND(q, uc(B, 1)), B->ul));
    gcc_jit_rvalue *v = is_cos ? sel_flag(B, swap, s, c) : sel_flag(B, swap, c, s);
    gcc_jit_rvalue *sign = is_cos ? SHL(AND(ADD(q, uc(B, 1)), uc(B, 2)), uc(B, 30))
                                  : XOR(SHL(AND(q, uc(B, 2)), uc(B, 30)), AND(xb, uc(B, 0x80000000u)));
    gcc_jit_rvalue *y = L(B, as_float(B, XOR(as_bits(B, to_f(B, v)), sign)));
    finish(B, sel(B, GT(axb, uc(B, 0x7f7fffffu)), fsub(B, x, x), y)); /* inf, NaN: NaN */
}

/* Everything in double, so that every select's condition has the width of
 * its operands (a mask of another width stops the vectoriser). */
static void build_powf(builder *B, gcc_jit_rvalue *x, gcc_jit_rvalue *y)
{
    gcc_jit_rvalue *xd = to_d(B, x), *yd = to_d(B, y), *axd = dabs(B, xd), *ayd = dabs(B, yd);
    gcc_jit_rvalue *safe = sel(B, GT(axd, dc(B, 0.0)), axd, dc(B, 1.0));
    safe = sel(B, LT(safe, dc(B, 1e300)), safe, dc(B, 1.0));
    gcc_jit_rvalue *e, *lm;
    d_log_parts(B, safe, &e, &lm);
    gcc_jit_rvalue *lg = L(B, ADD(e, MUL(lm, dc(B, LOG2E)))); /* log2 |x| */
    lg = sel(B, EQ(axd, dc(B, 0.0)), dc(B, -__builtin_inf()), lg);
    lg = sel(B, EQ(axd, dc(B, __builtin_inf())), dc(B, __builtin_inf()), lg);
    lg = sel(B, is_nan(B, xd), xd, lg);
    gcc_jit_rvalue *t = L(B, MUL(yd, lg));
    gcc_jit_rvalue *r = d_exp2(B, clampd(B, t, -300, 300));
    r = sel(B, is_nan(B, t), dc(B, __builtin_nan("")), r);
    /* y an integer (n == y, by the 1.5 * 2^52 trick; |y| >= 2^51 always is,
     * infinities included), odd when the low bit of n is set */
    gcc_jit_rvalue *shifted = L(B, ADD(yd, dc(B, 6755399441055744.0)));
    gcc_jit_rvalue *n = L(B, SUB(shifted, dc(B, 6755399441055744.0)));
    gcc_jit_rvalue *is_int = L(B, cast(B, land(B, EQ(n, yd), LT(ayd, dc(B, 16777216.0))), B->ul));
    gcc_jit_rvalue *neg = AND(AND(SHR(as_bits64(B, xd), ulc(B, 63)), AND(as_bits64(B, shifted), ulc(B, 1))), is_int);
    r = L(B, as_double(B, XOR(as_bits64(B, r), SHL(neg, ulc(B, 63))))); /* x < 0 (or -0), y odd */
    /* negative finite x, non-integer finite y: NaN */
    gcc_jit_rvalue *not_int = land(B, NE(n, yd), LT(ayd, dc(B, 2251799813685248.0)));
    gcc_jit_rvalue *bad = land(B, land(B, LT(xd, dc(B, 0.0)), GT(xd, dc(B, -__builtin_inf()))), not_int);
    r = sel(B, bad, dc(B, __builtin_nan("")), r);
    /* x = 1, y = 0, or x = -1 with y = +-inf: 1 */
    gcc_jit_rvalue *one = lor(B, lor(B, EQ(xd, dc(B, 1.0)), EQ(yd, dc(B, 0.0))),
                              land(B, EQ(xd, dc(B, -1.0)), EQ(ayd, dc(B, __builtin_inf()))));
    r = sel(B, one, dc(B, 1.0), r);
    finish(B, to_f(B, r));
}

/* ---------------------------------------------------------------- api */

static gcc_jit_function *build(pe_prims *p, int which)
{
    gcc_jit_param *prm[2];
    char name[32];
    snprintf(name, sizeof name, "pe_prim_%sf", prim_names[which]);
    if (which == P_EXP) return build_expf(p);
    if (which == P_LOG) return build_logf(p);
    builder Bs = begin_n(p, name, which == P_POW ? 2 : 1, prm), *B = &Bs;
    gcc_jit_rvalue *x = gcc_jit_param_as_rvalue(prm[0]);
    switch (which) {
    case P_EXP2: build_exp2f(B, x); break;
    case P_LOG2: build_logf_d(B, x, 1); break;
    case P_EXPM1: build_expm1f(B, x); break;
    case P_LOG1P: build_logf_d(B, x, 2); break;
    case P_SIN: build_sincosf(B, x, false); break;
    case P_COS: build_sincosf(B, x, true); break;
    case P_TANH: build_tanhf(B, x); break;
    case P_ERF: build_erff(B, x, 0); break;
    case P_ERFC: build_erff(B, x, 1); break;
    case P_CDF_NORM: build_erff(B, x, 2); break;
    case P_ATAN: build_atanf(B, x); break;
    case P_POW: build_powf(B, x, gcc_jit_param_as_rvalue(prm[1])); break;
    default: return NULL;
    }
    return B->fn;
}

pe_prims *pe_prims_new(gcc_jit_context *ctx, bool fma)
{
    pe_prims *p = calloc(1, sizeof *p);
    if (p) p->ctx = ctx, p->fma = fma;
    return p;
}

void pe_prims_free(pe_prims *p) { free(p); }

gcc_jit_function *pe_prims_get(pe_prims *p, const char *name, bool f32)
{
    if (!p || !f32) return NULL;
    for (int k = 0; k < P_N; k++)
        if (strcmp(name, prim_names[k]) == 0) return p->fn[k] ? p->fn[k] : (p->fn[k] = build(p, k));
    return NULL;
}
