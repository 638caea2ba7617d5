/* gccjit_build.h — libgccjit building blocks shared by the code generator
 * (cpu_gccjit.c and its pieces), the SpMV kernels (cpu_spmv.c) and the
 * primitive library (cpu_prims.c): a local holding a value, a branch-free
 * select, and the loop every one of them builds its loops with. */
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

/* A loop of generated code — the one way the CPU's generators build one:
 *
 *     pe_jit_loop rows = pe_jit_loop_while(fn, &cur, "rows", cond);
 *     ... the body at cur, its own loops inside, its step last ...
 *     pe_jit_loop_end(&rows, &cur);
 *
 * loop_while ends the current block with a jump to the loop's test
 * (cond true: the body, made current; false: the block after the loop) and
 * loop_end ends the body, wherever its own blocks left `cur`, with a jump
 * back to the test and makes the block after the loop current.  cond is an
 * expression built once and evaluated at every test, so it reads the
 * counter afresh.  A body that leaves early jumps to test (the next
 * iteration: after its step) or to after (out of the loop). */
typedef struct {
    gcc_jit_block *test, *after;
} pe_jit_loop;

static inline pe_jit_loop pe_jit_loop_while(gcc_jit_function *fn, gcc_jit_block **cur, const char *name, gcc_jit_rvalue *cond)
{
    char label[48];
    snprintf(label, sizeof label, "%s_test", name);
    pe_jit_loop l = {.test = gcc_jit_function_new_block(fn, label)};
    snprintf(label, sizeof label, "%s_body", name);
    gcc_jit_block *body = gcc_jit_function_new_block(fn, label);
    snprintf(label, sizeof label, "%s_after", name);
    l.after = gcc_jit_function_new_block(fn, label);
    gcc_jit_block_end_with_jump(*cur, NULL, l.test);
    gcc_jit_block_end_with_conditional(l.test, NULL, cond, body, l.after);
    *cur = body;
    return l;
}

static inline void pe_jit_loop_end(const pe_jit_loop *l, gcc_jit_block **cur)
{
    gcc_jit_block_end_with_jump(*cur, NULL, l->test);
    *cur = l->after;
}

#endif
