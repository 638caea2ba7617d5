/* cpu_prims.c — the primitive library: hand-coded, branch-free f32 routines
 * built as always-inline libgccjit functions, so that a kernel calling them
 * stays one basic block and gcc vectorises the loop (a libm call would keep
 * it scalar).  Each routine is accurate to 2 ulp against the double-precision
 * result, with C99's special values (tests/test_jit.c checks 10^6 random
 * inputs and the edge cases).
 *   expf: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2 (n rounded by
 *         the 1.5 * 2^23 trick), degree-7 Taylor
 *         polynomial (truncation 5e-9), 2^n applied in two exact steps so
 *         that subnormal results and overflow come out right.
 *   logf: x = 2^e m with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
 *         log1p(f) = f - (f^2/2 - s (f^2/2 + R(s^2))) with s = f / (2 + f)
 *         and R the atanh series to s^11; e ln2 added in two parts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_prims.h"
#include "gccjit_build.h"

struct pe_prims {
    gcc_jit_context *ctx;
    gcc_jit_function *expf_fn, *logf_fn;
};

typedef struct {
    gcc_jit_context *ctx;
    gcc_jit_function *fn;
    gcc_jit_block *b;
    gcc_jit_type *f, *i, *u, *boolean;
    int n_locals;
} builder;

static pe_jit_cursor cursor(builder *B) { return (pe_jit_cursor){B->ctx, B->fn, B->b, &B->n_locals}; }
static gcc_jit_rvalue *local(builder *B, gcc_jit_rvalue *v, gcc_jit_type *t) { return pe_jit_local(cursor(B), v, t); }
static gcc_jit_rvalue *fc(builder *B, double v) { return gcc_jit_context_new_rvalue_from_double(B->ctx, B->f, v); }
static gcc_jit_rvalue *ic(builder *B, int v) { return gcc_jit_context_new_rvalue_from_int(B->ctx, B->i, v); }
static gcc_jit_rvalue *op(builder *B, enum gcc_jit_binary_op o, gcc_jit_type *t, gcc_jit_rvalue *a, gcc_jit_rvalue *c)
{
    return gcc_jit_context_new_binary_op(B->ctx, NULL, o, t, a, c);
}
static gcc_jit_rvalue *fadd(builder *B, gcc_jit_rvalue *a, gcc_jit_rvalue *c) { return op(B, GCC_JIT_BINARY_OP_PLUS, B->f, a, c); }
static gcc_jit_rvalue *fsub(builder *B, gcc_jit_rvalue *a, gcc_jit_rvalue *c) { return op(B, GCC_JIT_BINARY_OP_MINUS, B->f, a, c); }
static gcc_jit_rvalue *fmul(builder *B, gcc_jit_rvalue *a, gcc_jit_rvalue *c) { return op(B, GCC_JIT_BINARY_OP_MULT, B->f, a, c); }
static gcc_jit_rvalue *cmp(builder *B, enum gcc_jit_comparison o, gcc_jit_rvalue *a, gcc_jit_rvalue *c)
{
    return gcc_jit_context_new_comparison(B->ctx, NULL, o, a, c);
}
static gcc_jit_rvalue *as_bits(builder *B, gcc_jit_rvalue *x) { return gcc_jit_context_new_bitcast(B->ctx, NULL, x, B->u); }
static gcc_jit_rvalue *as_float(builder *B, gcc_jit_rvalue *x) { return gcc_jit_context_new_bitcast(B->ctx, NULL, x, B->f); }

/* c ? a : b on floats, without a branch. */
static gcc_jit_rvalue *sel(builder *B, gcc_jit_rvalue *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return pe_jit_select(cursor(B), c, a, b, B->f, B->u, true);
}

/* 2^k as a float, for k in [-126, 127]. */
static gcc_jit_rvalue *pow2(builder *B, gcc_jit_rvalue *k)
{
    gcc_jit_rvalue *biased = gcc_jit_context_new_cast(B->ctx, NULL, op(B, GCC_JIT_BINARY_OP_PLUS, B->i, k, ic(B, 127)), B->u);
    return as_float(B, op(B, GCC_JIT_BINARY_OP_LSHIFT, B->u, biased, gcc_jit_context_new_rvalue_from_int(B->ctx, B->u, 23)));
}

static builder begin(pe_prims *p, const char *name, gcc_jit_param **x)
{
    builder B = {.ctx = p->ctx};
    B.f = gcc_jit_context_get_type(p->ctx, GCC_JIT_TYPE_FLOAT);
    B.i = gcc_jit_context_get_type(p->ctx, GCC_JIT_TYPE_INT);
    B.u = gcc_jit_context_get_type(p->ctx, GCC_JIT_TYPE_UNSIGNED_INT);
    B.boolean = gcc_jit_context_get_type(p->ctx, GCC_JIT_TYPE_BOOL);
    *x = gcc_jit_context_new_param(p->ctx, NULL, B.f, "x");
    B.fn = gcc_jit_context_new_function(p->ctx, NULL, GCC_JIT_FUNCTION_ALWAYS_INLINE, B.f, name, 1, x, 0);
    B.b = gcc_jit_function_new_block(B.fn, "body");
    return B;
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
    gcc_jit_rvalue *poly = fc(&B, taylor[0]);
    for (int k = 1; k < 8; k++) poly = local(&B, fadd(&B, fmul(&B, poly, r), fc(&B, taylor[k])), B.f);
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

pe_prims *pe_prims_new(gcc_jit_context *ctx)
{
    pe_prims *p = calloc(1, sizeof *p);
    if (p) p->ctx = ctx;
    return p;
}

void pe_prims_free(pe_prims *p) { free(p); }

gcc_jit_function *pe_prims_get(pe_prims *p, const char *name, bool f32)
{
    if (!p || !f32) return NULL;
    if (strcmp(name, "exp") == 0) return p->expf_fn ? p->expf_fn : (p->expf_fn = build_expf(p));
    if (strcmp(name, "log") == 0) return p->logf_fn ? p->logf_fn : (p->logf_fn = build_logf(p));
    return NULL;
}
