/* gccjit_stream.c — the CPU generator's streaming stores (gccjit_emit.h):
 * a flat element-wise kernel whose outputs outgrow the last-level cache
 * computes them in tiles on the stack and copies each tile out with
 * non-temporal vector stores in extended asm (why, and what was measured:
 * at STREAM_TILE below). */
#include <stdio.h>
#include <string.h>

#include "gccjit_emit.h"

/* A kernel whose outputs outgrow the last-level cache (kir_kernel.stream_stores)
 * writes them with non-temporal stores: a cache line the loop overwrites
 * whole is not read from memory first, so a triad moves 3 streams instead of
 * 4.  libgccjit 12 has neither restrict (gcc's own loop-prefetch pass would
 * mark a store non-temporal only if it could prove it independent of the
 * loads) nor target builtins, so the kernel says it itself: it computes
 * STREAM_TILE elements of each output into a tile on the stack (an
 * L1-resident block the vectoriser fills as usual) and copies each tile to
 * its output with the ISA's non-temporal vector store in extended asm.
 * The loop runs element by element until the first output is 64-byte
 * aligned; if every output is aligned there too (a caller's buffer lent by
 * pe_read may sit at another offset) the tiles run, else the ordinary loop;
 * the last partial tile is ordinary too.  Non-temporal stores are weakly
 * ordered: an sfence publishes them before the launch returns to the pool.
 * Measured (bench/RESULTS.md, issue 19): tiles of 64-128 elements stream as
 * fast as stores straight from registers; larger ones leave L1. */
#define STREAM_TILE 128

static gcc_jit_rvalue *misaligned(emitter *e, gcc_jit_rvalue *addr, int p, gcc_jit_rvalue *i)
{
    gcc_jit_rvalue *a = gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(e->ctx, NULL, addr, lng(e, p)));
    gcc_jit_rvalue *bytes = lbin(e, GCC_JIT_BINARY_OP_MULT, i, lng(e, (int64_t)pe_dtype_table[e->k->params[p].dtype].size));
    return lbin(e, GCC_JIT_BINARY_OP_BITWISE_AND, lbin(e, GCC_JIT_BINARY_OP_PLUS, a, bytes), lng(e, 63));
}

/* The loop `for (v = 0; v < n; v++)` around what `body` emits at e->cur;
 * leaves e->cur after the loop. */
static void emit_counted(emitter *e, const char *name, gcc_jit_rvalue *n, void (*body)(emitter *, gcc_jit_rvalue *, void *),
                         void *ctx)
{
    gcc_jit_lvalue *v = long_local(e, name, lng(e, 0));
    pe_jit_loop counted = loop_upto(e, name, v, n);
    body(e, rv(v), ctx);
    loop_step_end(e, &counted, v, 1);
}

typedef struct {
    const kir_kernel *k;
    gcc_jit_rvalue *block;                 /* the tile's first element, from the aligned one */
    gcc_jit_rvalue *tile[KIR_MAX_PARAMS];  /* per output: its tile */
    gcc_jit_rvalue *out[KIR_MAX_PARAMS];   /* per output: its elements from the aligned one */
} streaming;

static void tile_element(emitter *e, gcc_jit_rvalue *j, void *arg)
{
    streaming *s = arg;
    e->index = lbin(e, GCC_JIT_BINARY_OP_PLUS, s->block, j);
    e->store_index = j;
    pe_gj_emit_body(e, s->k);
    e->store_index = NULL;
}

/* The asm copying `bytes` from %1 (a tile) to %0 (64-byte aligned) with
 * non-temporal vector stores, four registers in turn, and the registers it
 * clobbers (as gcc names them).  libgccjit 12 dies on a vector-typed asm
 * operand, so the two pointers are the operands. */
static void stream_copy_text(int vector_bytes, int64_t bytes, char *out, size_t n, const char **clobbers)
{
    static const char *const wide[4] = {"xmm16", "xmm17", "xmm18", "xmm19"}, /* zmm16-19: no SSE code uses them */
                             *const narrow[4] = {"xmm12", "xmm13", "xmm14", "xmm15"};
    const char *const *clobbered = vector_bytes == 64 ? wide : narrow;
    const char *reg = vector_bytes == 64 ? "zmm" : vector_bytes == 32 ? "ymm" : "xmm";
    const char *load = vector_bytes == 64 ? "vmovdqu64" : vector_bytes == 32 ? "vmovdqu" : "movdqu";
    const char *store = vector_bytes == 16 ? "movntdq" : "vmovntdq";
    size_t used = 0;
    for (int64_t at = 0, r = 0; at < bytes; at += vector_bytes, r = (r + 1) % 4)
        used += (size_t)snprintf(out + used, used < n ? n - used : 0, "%s %lld(%%1), %%%%%s%s\n\t%s %%%%%s%s, %lld(%%0)\n\t", load,
                                 (long long)at, reg, clobbered[r] + 3, store, reg, clobbered[r] + 3, (long long)at);
    for (int r = 0; r < 4; r++) clobbers[r] = clobbered[r];
}

static void stream_tile(emitter *e, gcc_jit_rvalue *t, void *arg)
{
    streaming *s = arg;
    const kir_kernel *k = s->k;
    s->block = to_local(e, lbin(e, GCC_JIT_BINARY_OP_MULT, t, lng(e, STREAM_TILE)), e->t_long);
    gcc_jit_rvalue *saved[KIR_MAX_PARAMS];
    memcpy(saved, e->ptr, sizeof saved[0] * (size_t)k->n_params);
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_OUT) e->ptr[p] = s->tile[p];
    emit_counted(e, "tile_j", lng(e, STREAM_TILE), tile_element, s);
    memcpy(e->ptr, saved, sizeof saved[0] * (size_t)k->n_params);
    for (int p = 0; p < k->n_params; p++) {
        if (k->params[p].kind != KIR_OUT) continue;
        char text[STREAM_TILE * 8 / 16 * 80 + 64]; /* the widest tile (f64) in 16-byte vectors */
        const char *clobbers[4];
        stream_copy_text(e->vector_bytes, STREAM_TILE * (int64_t)pe_dtype_table[k->params[p].dtype].size, text, sizeof text, clobbers);
        /* the operands are locals, set before the statement: libgccjit 12
         * dies on an expression as an asm operand */
        gcc_jit_rvalue *dst = gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(e->ctx, NULL, s->out[p], s->block), NULL);
        gcc_jit_rvalue *to = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, dst, e->t_voidp), e->t_voidp);
        gcc_jit_rvalue *from = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, s->tile[p], e->t_voidp), e->t_voidp);
        gcc_jit_extended_asm *st = gcc_jit_block_add_extended_asm(e->cur, NULL, text);
        gcc_jit_extended_asm_add_input_operand(st, NULL, "r", to);
        gcc_jit_extended_asm_add_input_operand(st, NULL, "r", from);
        for (int r = 0; r < 4; r++) gcc_jit_extended_asm_add_clobber(st, clobbers[r]);
        gcc_jit_extended_asm_add_clobber(st, "memory");
    }
}

void pe_gj_emit_streaming(emitter *e, const kir_kernel *k, gcc_jit_rvalue *begin, gcc_jit_rvalue *end, gcc_jit_rvalue *args)
{
    /* the buffers' addresses as integers: libgccjit casts no pointer to one */
    gcc_jit_rvalue *addr = gcc_jit_context_new_cast(e->ctx, NULL, args, gcc_jit_type_get_pointer(e->t_long));
    int first_out = 0;
    while (k->params[first_out].kind != KIR_OUT) first_out++;
    gcc_jit_lvalue *i = long_local(e, "s_i", begin);
    gcc_jit_rvalue *zero = lng(e, 0);
    /* the elements before the first output's first aligned one, plainly */
    pe_jit_loop head = loop_while(e, "head", and_(e, cmp(e, GCC_JIT_COMPARISON_LT, rv(i), end),
                                                  cmp(e, GCC_JIT_COMPARISON_NE, misaligned(e, addr, first_out, rv(i)), zero)));
    e->index = rv(i);
    pe_gj_emit_body(e, k);
    loop_step_end(e, &head, i, 1);

    gcc_jit_rvalue *all_aligned = NULL;
    for (int p = 0; p < k->n_params; p++) {
        if (k->params[p].kind != KIR_OUT) continue;
        gcc_jit_rvalue *c = cmp(e, GCC_JIT_COMPARISON_EQ, misaligned(e, addr, p, rv(i)), zero);
        all_aligned = all_aligned ? and_(e, all_aligned, c) : c;
    }
    gcc_jit_block *stream = block(e, "stream"), *plain = block(e, "plain");
    gcc_jit_block_end_with_conditional(e->cur, NULL, all_aligned, stream, plain);

    /* every array rebased at the aligned element; the tiles */
    e->cur = stream;
    streaming s = {.k = k};
    gcc_jit_type *t_vec = gcc_jit_type_get_vector(e->t_of[PE_BOOL], (size_t)e->vector_bytes); /* bytes: any element type */
    gcc_jit_rvalue *saved[KIR_MAX_PARAMS];
    memcpy(saved, e->ptr, sizeof saved[0] * (size_t)k->n_params);
    for (int p = 0; p < k->n_params; p++) {
        kir_param_kind kind = (kir_param_kind)k->params[p].kind;
        if (kind != KIR_IN_CONTIG && kind != KIR_OUT) continue;
        gcc_jit_rvalue *at = gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(e->ctx, NULL, e->ptr[p], rv(i)), NULL);
        if (kind == KIR_IN_CONTIG) {
            e->ptr[p] = to_local(e, at, gcc_jit_rvalue_get_type(at));
            continue;
        }
        gcc_jit_type *T = type_of(e, (pe_dtype)k->params[p].dtype);
        int64_t vectors = STREAM_TILE * (int64_t)pe_dtype_table[k->params[p].dtype].size / e->vector_bytes;
        char name[24];
        snprintf(name, sizeof name, "tile%d", p);
        /* an array of vectors: aligned as they are */
        gcc_jit_lvalue *tile = gcc_jit_function_new_local(e->fn, NULL, gcc_jit_context_new_array_type(e->ctx, NULL, t_vec, (int)vectors), name);
        gcc_jit_rvalue *first = gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(e->ctx, NULL, rv(tile), zero), NULL);
        s.tile[p] = to_local(e, gcc_jit_context_new_cast(e->ctx, NULL, first, gcc_jit_type_get_pointer(T)), gcc_jit_type_get_pointer(T));
        s.out[p] = to_local(e, at, gcc_jit_type_get_pointer(T));
    }
    gcc_jit_rvalue *tiles = to_local(e, lbin(e, GCC_JIT_BINARY_OP_DIVIDE, lbin(e, GCC_JIT_BINARY_OP_MINUS, end, rv(i)), lng(e, STREAM_TILE)), e->t_long);
    emit_counted(e, "tile", tiles, stream_tile, &s);
    memcpy(e->ptr, saved, sizeof saved[0] * (size_t)k->n_params);
    gcc_jit_extended_asm *sfence = gcc_jit_block_add_extended_asm(e->cur, NULL, "sfence");
    gcc_jit_extended_asm_add_clobber(sfence, "memory");
    gcc_jit_block_add_assignment_op(e->cur, NULL, i, GCC_JIT_BINARY_OP_PLUS, lbin(e, GCC_JIT_BINARY_OP_MULT, tiles, lng(e, STREAM_TILE)));
    gcc_jit_block_end_with_jump(e->cur, NULL, plain);

    /* what is left (all of it where the outputs disagree on alignment) */
    e->cur = plain;
    pe_gj_emit_flat(e, k, rv(i), end);
}
