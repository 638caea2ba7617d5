/* gccjit_build.h — libgccjit building blocks shared by the code generator
 * (cpu_gccjit.c and its pieces) and the primitive library (cpu_prims.c): a
 * local holding a value, and a branch-free select. */
#ifndef PE_CPU_GCCJIT_BUILD_H
#define PE_CPU_GCCJIT_BUILD_H

#include <libgccjit.h>
#include <stdbool.h>
#include <stdio.h>

/* Where instructions go: the function, its current block, a local counter. */
typedef struct {
    gcc_jit_context *ctx;
    gcc_jit_function *fn;
    gcc_jit_block *block;
    int *n_locals;
} pe_jit_cursor;

/* A new local assigned v: one evaluation, reused by reference. */
static inline gcc_jit_rvalue *pe_jit_local(pe_jit_cursor at, gcc_jit_rvalue *v, gcc_jit_type *t)
{
    char name[24];
    snprintf(name, sizeof name, "t%d", (*at.n_locals)++);
    gcc_jit_lvalue *l = gcc_jit_function_new_local(at.fn, NULL, t, name);
    gcc_jit_block_add_assignment(at.block, NULL, l, v);
    return gcc_jit_lvalue_as_rvalue(l);
}

/* c ? a : b without a branch: (bits(a) & m) | (bits(b) & ~m) with m all ones
 * when c holds; `bits` is the unsigned type of t's size, `is_float` whether t
 * must be reinterpreted (bitcast) rather than converted.  Exact for every
 * value (NaN payloads, -0), and it keeps a loop body one basic block, which
 * the vectoriser needs. */
static inline gcc_jit_rvalue *pe_jit_select(pe_jit_cursor at, gcc_jit_rvalue *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b,
                                            gcc_jit_type *t, gcc_jit_type *bits, bool is_float)
{
    gcc_jit_context *ctx = at.ctx;
    gcc_jit_rvalue *ua = is_float ? gcc_jit_context_new_bitcast(ctx, NULL, a, bits) : gcc_jit_context_new_cast(ctx, NULL, a, bits);
    gcc_jit_rvalue *ub = is_float ? gcc_jit_context_new_bitcast(ctx, NULL, b, bits) : gcc_jit_context_new_cast(ctx, NULL, b, bits);
    gcc_jit_rvalue *m = pe_jit_local(at, gcc_jit_context_new_binary_op(ctx, NULL, GCC_JIT_BINARY_OP_MINUS, bits,
                                                                       gcc_jit_context_zero(ctx, bits),
                                                                       gcc_jit_context_new_cast(ctx, NULL, c, bits)), bits);
    gcc_jit_rvalue *keep_a = gcc_jit_context_new_binary_op(ctx, NULL, GCC_JIT_BINARY_OP_BITWISE_AND, bits, ua, m);
    gcc_jit_rvalue *not_m = gcc_jit_context_new_unary_op(ctx, NULL, GCC_JIT_UNARY_OP_BITWISE_NEGATE, bits, m);
    gcc_jit_rvalue *keep_b = gcc_jit_context_new_binary_op(ctx, NULL, GCC_JIT_BINARY_OP_BITWISE_AND, bits, ub, not_m);
    gcc_jit_rvalue *r = gcc_jit_context_new_binary_op(ctx, NULL, GCC_JIT_BINARY_OP_BITWISE_OR, bits, keep_a, keep_b);
    r = is_float ? gcc_jit_context_new_bitcast(ctx, NULL, r, t) : gcc_jit_context_new_cast(ctx, NULL, r, t);
    return pe_jit_local(at, r, t);
}

#endif
