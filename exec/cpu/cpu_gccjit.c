/* cpu_gccjit.c — the CPU code generator: kernel IR to machine code through
 * libgccjit.  Each kernel becomes
 *     void k_<hash>(long begin, long end, void **args)
 * with one loop over [begin, end); SSA values become locals (registers after
 * optimisation), selects become small if/else diamonds that gcc if-converts.
 * All kernels of a program sequence are compiled in one context, because a
 * compilation costs ~40-55 ms whatever its size (gcc runs as/ld) and
 * libgccjit serialises compilations.  Options: -O3, the ISA level detected at
 * start-up (-march=native is rejected by libgccjit), -fno-math-errno and
 * -fno-trapping-math as command-line options (as a driver option
 * -ffast-math would link crtfastmath.o and flush subnormals process-wide).
 * Math functions are gcc builtins: sqrt, fabs, floor, fma... inline.  f32
 * transcendentals (exp, log, sin, cos, erf, cdf_norm, pow, ...) come from the
 * primitive library (cpu_prims.c), inline and branch-free, whenever every op
 * of the kernel can then vectorise; otherwise, and for f64, libm is called
 * (its scalar routines beat the primitives in a loop that stays scalar).
 *
 * This file is the driver: the context and its options, the compilation of
 * a sequence, each kernel's function and the loop shape it takes, and the
 * fusion rules the program generator asks of this generator.  The emission
 * is in pieces of one concern each, sharing gccjit_emit.h: the element-wise
 * body (gccjit_ops.c), reductions (gccjit_reduce.c), loop shapes
 * (gccjit_loops.c) and streaming stores (gccjit_stream.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gccjit_emit.h"
#include "device.h"

/* ---------------------------------------------------------- fusion rules */

bool pe_gccjit_reduction_fusible(const kir_kernel *body)
{
    for (int i = 0; i < body->n_body; i++)
        if (body->body[i].kind == KIR_OP && body->body[i].op == PE_OP_pow && body->body[i].ctype == PE_F32) return false;
    return true;
}

/* Reductions along an axis: every reduction of the catalog but dot (one
 * operand along an axis), in the types cpu_ops.def's emits column takes for
 * the reduction (as the full reductions). */
static bool axis_reduction_emittable(pe_op op, pe_dtype ctype, pe_dtype dtype)
{
    return op != PE_OP_dot && pe_reduction_of(op)->acc != PE_ACC_NONE && pe_cpu_can_emit(op, ctype, dtype, ctype);
}

/* Reductions along the last axis that leave their kernel open for members
 * reading their results broadcast back: those pe_gj_emit_row_passes accumulates
 * in one pass over a row (not var, stddev, f64 norm2). */
static bool row_reduction_emittable(pe_op op, pe_dtype ctype, pe_dtype dtype)
{
    kir_inst reduce = {.kind = KIR_REDUCE, .op = (uint8_t)op, .dtype = (uint8_t)dtype, .ctype = (uint8_t)ctype};
    return axis_reduction_emittable(op, ctype, dtype) && pe_gj_passes_of(&reduce) == 1;
}

/* Outputs of at least the last-level cache's size stream past it (an
 * x86-64 store form): PE_STREAM_BYTES overrides (0: never), for tests. */
static int64_t stream_min_bytes(void)
{
#if defined(__x86_64__)
    static int64_t known = -1; /* the program generator may run on several threads: found once, kept atomically */
    int64_t bytes = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (bytes < 0) {
        const char *env = getenv("PE_STREAM_BYTES");
        int64_t llc = pe_cpu_last_level_cache_bytes();
        bytes = env && *env ? atoll(env) : llc > 0 ? llc : (int64_t)32 << 20;
        __atomic_store_n(&known, bytes, __ATOMIC_RELAXED);
    }
    return bytes;
#else
    return 0;
#endif
}

const pe_fusion_rules pe_gccjit_fusion_rules = {1, pe_cpu_can_emit, pe_gccjit_reduction_fusible, true, true,
                                                axis_reduction_emittable, row_reduction_emittable, stream_min_bytes};

/* ---------------------------------------------------------------- kernel */

/* Kernel k as the exported function `name`: its parameters typed (a literal
 * compiled in, a scalar loaded once), then the loop shape its kind takes,
 * and a gather's out-of-range flag published once per launch. */
static void emit_kernel(emitter *e, const kir_kernel *k, const char *name)
{
    e->k = k;
    e->n_locals = 0;
    e->use_prims = pe_gj_vectorisable(e->prims, k);
    gcc_jit_param *params[3] = {
        gcc_jit_context_new_param(e->ctx, NULL, e->t_long, "begin"),
        gcc_jit_context_new_param(e->ctx, NULL, e->t_long, "end"),
        gcc_jit_context_new_param(e->ctx, NULL, gcc_jit_type_get_pointer(e->t_voidp), "args"),
    };
    e->fn = gcc_jit_context_new_function(e->ctx, NULL, GCC_JIT_FUNCTION_EXPORTED, e->t_void, name, 3, params, 0);
    gcc_jit_block *entry = gcc_jit_function_new_block(e->fn, "entry");
    gcc_jit_rvalue *args = gcc_jit_param_as_rvalue(params[2]);
    for (int p = 0; p < k->n_params; p++) {
        const kir_param *q = &k->params[p];
        gcc_jit_type *T = type_of(e, pe_dtype_real_part((pe_dtype)q->dtype)); /* complex: an array of parts */
        gcc_jit_rvalue *raw = gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(
            e->ctx, NULL, args, gcc_jit_context_new_rvalue_from_int(e->ctx, e->t_long, p)));
        char pname[16];
        snprintf(pname, sizeof pname, "p%d", p);
        if (q->kind == KIR_IN_LITERAL) { /* compiled in: the loop folds it */
            e->ptr[p] = q->dtype == PE_F32 || q->dtype == PE_F64 ? gcc_jit_context_new_rvalue_from_double(e->ctx, T, q->value)
                                                              : gcc_jit_context_new_rvalue_from_long(e->ctx, T, (long)q->value);
        } else if (q->kind == KIR_IN_SCALAR) {
            gcc_jit_rvalue *dp = gcc_jit_context_new_cast(e->ctx, NULL, raw, gcc_jit_type_get_pointer(e->t_double));
            gcc_jit_lvalue *l = gcc_jit_function_new_local(e->fn, NULL, T, pname);
            gcc_jit_block_add_assignment(entry, NULL, l,
                                         gcc_jit_context_new_cast(e->ctx, NULL, gcc_jit_lvalue_as_rvalue(
                                                                      gcc_jit_rvalue_dereference(dp, NULL)), T));
            e->ptr[p] = gcc_jit_lvalue_as_rvalue(l);
        } else {
            gcc_jit_type *PT = gcc_jit_type_get_pointer(T);
            gcc_jit_lvalue *l = gcc_jit_function_new_local(e->fn, NULL, PT, pname);
            gcc_jit_block_add_assignment(entry, NULL, l, gcc_jit_context_new_cast(e->ctx, NULL, raw, PT));
            e->ptr[p] = gcc_jit_lvalue_as_rvalue(l);
        }
    }
    e->cur = entry;
    int flag = -1;
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_OUT_FLAG) flag = p;
    e->bad = flag >= 0 ? init_local(e, e->t_u32, "bad", gcc_jit_context_zero(e->ctx, e->t_u32)) : NULL;
    gcc_jit_rvalue *begin = gcc_jit_param_as_rvalue(params[0]), *end = gcc_jit_param_as_rvalue(params[1]);
    const kir_inst *reduce = kir_reduction_of(k);
    e->rows = k->rank > 0 && (!reduce || k->axis_reduction);
    if (pe_gj_row_kernel(k)) pe_gj_emit_row_passes(e, k, begin, end);
    else if (k->axis_reduction && pe_gj_passes_of(reduce) > 1) pe_gj_emit_axis_passes(e, k, begin, end);
    else if (k->axis_reduction) pe_gj_emit_axis_outer(e, k, begin, end);
    else if (reduce && pe_gj_passes_of(reduce) > 1) pe_gj_emit_flat_passes(e, k, begin, end);
    else if (reduce && pe_gj_rows_reduce_pays(k)) e->rows = true, pe_gj_emit_rows_reduce(e, k, begin, end);
    else if (e->rows && pe_gj_reads_across_lines(k)) pe_gj_emit_tiles(e, k, begin, end);
    else if (e->rows) pe_gj_emit_rows(e, k, begin, end);
    else if (k->stream_stores) pe_gj_emit_streaming(e, k, begin, end, args);
    else pe_gj_emit_flat(e, k, begin, end);
    if (flag >= 0) { /* other launches may set it too: one atomic OR per launch */
        gcc_jit_type *vp = gcc_jit_type_get_pointer(gcc_jit_type_get_volatile(e->t_void));
        gcc_jit_type *t_int = gcc_jit_context_get_type(e->ctx, GCC_JIT_TYPE_INT);
        gcc_jit_rvalue *args[3] = {gcc_jit_context_new_cast(e->ctx, NULL, e->ptr[flag], vp),
                                   gcc_jit_context_new_cast(e->ctx, NULL, rv(e->bad), t_int),
                                   gcc_jit_context_new_rvalue_from_int(e->ctx, t_int, __ATOMIC_RELAXED)};
        gcc_jit_block_add_eval(e->cur, NULL, gcc_jit_context_new_call(e->ctx, NULL,
                                                                  gcc_jit_context_get_builtin_function(e->ctx, "__atomic_fetch_or_4"), 3, args));
    }
    gcc_jit_block_end_with_void_return(e->cur, NULL);
}

gcc_jit_context *pe_gccjit_context(const char *isa, char *err, size_t err_size)
{
    gcc_jit_context *ctx = gcc_jit_context_acquire();
    if (!ctx) {
        snprintf(err, err_size, "gcc_jit_context_acquire failed");
        return NULL;
    }
    gcc_jit_context_set_int_option(ctx, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, 3);
    char march[48];
    if (isa && strncmp(isa, "x86-64", 6) == 0) {
        snprintf(march, sizeof march, "-march=%s", isa);
        gcc_jit_context_add_command_line_option(ctx, march);
    }
    gcc_jit_context_add_command_line_option(ctx, "-fno-math-errno");
    /* a value must not depend on whether fusion kept an intermediate in a
     * register: no contraction of a * b + c into an FMA behind the program's
     * back (the primitives use FMA by name) */
    gcc_jit_context_add_command_line_option(ctx, "-ffp-contract=off");
    gcc_jit_context_add_command_line_option(ctx, "-fno-trapping-math");
    /* parameters never alias outputs (fresh buffers), but libgccjit 12 has no
     * restrict: let the vectoriser version the loop for as many pairs as a
     * fused kernel has */
    gcc_jit_context_add_command_line_option(ctx, "--param=vect-max-version-for-alias-checks=1000");
    /* the primitives are always_inline: a kernel with several transcendental
     * ops (sin, cos and pow in one loop), or pow alone, passes gcc's default
     * growth and size limits, and an always_inline that cannot be inlined is
     * a compile error */
    gcc_jit_context_add_command_line_option(ctx, "--param=large-function-growth=100000");
    gcc_jit_context_add_command_line_option(ctx, "--param=large-function-insns=1000000");
    gcc_jit_context_add_command_line_option(ctx, "--param=inline-unit-growth=100000");
    gcc_jit_context_add_command_line_option(ctx, "--param=max-inline-insns-single=100000");
    /* for developers: e.g. PE_JIT_OPTION=-fopt-info-vec-missed explains what did not vectorise */
    const char *extra = getenv("PE_JIT_OPTION");
    if (extra && *extra) gcc_jit_context_add_command_line_option(ctx, extra);
    return ctx;
}

/* The libgccjit type of an element, by pe_dtype: one row per dtype, in
 * irformat/dtypes.def's order (checked below). */
#define PE_GCCJIT_TYPES(X) \
    X(F32, FLOAT) X(F64, DOUBLE) X(I32, INT) X(BOOL, UNSIGNED_CHAR) X(C64, COMPLEX_FLOAT) X(C128, COMPLEX_DOUBLE)
#define PE_GCCJIT_TYPE(en, type) [PE_##en] = GCC_JIT_TYPE_##type,
static const enum gcc_jit_types gccjit_type[PE_DTYPE__COUNT] = {PE_GCCJIT_TYPES(PE_GCCJIT_TYPE)};
PE_CHECK_DTYPE_ROWS(PE_GCCJIT_TYPES)

bool pe_gccjit_compile(const kir_kernel *const *kernels, size_t n, const char *isa, const char *so_path, char *err,
                       size_t err_size)
{
    gcc_jit_context *ctx = pe_gccjit_context(isa, err, err_size);
    if (!ctx) return false;
    /* x86-64-v3 and v4 have FMA */
    bool fma = isa && (strcmp(isa, "x86-64-v3") == 0 || strcmp(isa, "x86-64-v4") == 0);
    emitter e = {.ctx = ctx, .prims = pe_prims_new(ctx, fma), .perturbed_op = pe_codegen_perturbed_op(),
                 .vector_bytes = isa && strcmp(isa, "x86-64-v4") == 0 ? 64 : fma ? 32 : 16};
    e.t_void = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_VOID);
    e.t_bool = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_BOOL);
    e.t_long = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_LONG);
    e.t_u32 = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_UNSIGNED_INT);
    e.t_voidp = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_VOID_PTR);
    for (int t = 0; t < PE_DTYPE__COUNT; t++) e.t_of[t] = gcc_jit_context_get_type(ctx, gccjit_type[t]);
    e.t_double = e.t_of[PE_F64];
    char (*names)[48] = calloc(n ? n : 1, sizeof *names);
    if (!names) {
        pe_prims_free(e.prims);
        gcc_jit_context_release(ctx);
        snprintf(err, err_size, "out of memory");
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if (!pe_kernel_generatable(kernels[i], pe_cpu_can_emit)) {
            free(names);
            pe_prims_free(e.prims);
            gcc_jit_context_release(ctx);
            snprintf(err, err_size, "a kernel with an op this generator does not emit (composed ops are lowered first)");
            return false;
        }
    for (size_t i = 0; i < n; i++) {
        kir_kernel_name(kernels[i], names[i], sizeof names[i]);
        emit_kernel(&e, kernels[i], names[i]);
    }
    /* a shared object at `so_path`, which the CPU executor loads (links) */
    gcc_jit_context_compile_to_file(ctx, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, so_path);
    const char *msg = gcc_jit_context_get_first_error(ctx);
    bool ok = msg == NULL;
    if (msg) snprintf(err, err_size, "%s", msg);
    free(names);
    pe_prims_free(e.prims);
    gcc_jit_context_release(ctx);
    return ok;
}

/* Kernels from another build of this generator may differ for the same IR
 * (and the executor's conventions with them): the disk cache keys files by
 * this stamp of the build too. */
