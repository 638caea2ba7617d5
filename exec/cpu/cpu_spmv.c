/* cpu_spmv.c — pe_spmv's CPU code: a row loop per value dtype generated
 * through libgccjit, with the options of every CPU kernel
 * (pe_gccjit_context: -O3, the ISA's -march, no contraction into FMA),
 * exported under the CPU kernels' ABI (pe_range_fn over rows [begin, end))
 * so that PE's pool runs it like a fused kernel.
 *
 * Why a loop of its own rather than a kernel of the kernel IR: a CSR
 * product reads x at positions the structure gives and sums a row of
 * varying length, which the IR's element-wise and fixed-shape reductions do
 * not express; the generator emits it directly, compiled once per process
 * (jit/provision/spmv_code.c: the disk cache, else one compilation, in the
 * child process as kernels are).  No element-wise consumer is fused into it
 * (yet): the call stays a library call whose producers and consumers are
 * kernels of their own.
 *
 * What each row computes is what the hand-written loop it replaces did, and
 * the interpreter's checks: the offsets checked at both ends (0 <= lo <= hi
 * <= nnz: a neighbouring row may run on another thread), each column as it
 * is read (out of range: the row is marked and ends; a branch never taken),
 * the sum in column order in double (f32 products exact in it, rounded
 * once), a bad row's y 0.  A launch ORs 1 into the flag once if any of its
 * rows was bad; sparse.c then names the first fault (pe_csr_fault). */
#include <libgccjit.h>
#include <stdio.h>

#include "cpu_gccjit.h"
#include "cpu_spmv.h"
#include "gccjit_build.h"

bool pe_gccjit_spmv_dtype(pe_dtype t) { return t == PE_F32 || t == PE_F64; }

const char *pe_gccjit_spmv_name(pe_dtype t) { return t == PE_F32 ? "pe_spmv_rows_f32" : "pe_spmv_rows_f64"; }

typedef struct {
    gcc_jit_context *ctx;
    gcc_jit_function *fn;
    gcc_jit_type *t_long, *t_int, *t_uint;
} spmv_emitter;

static gcc_jit_rvalue *rv(gcc_jit_lvalue *l) { return gcc_jit_lvalue_as_rvalue(l); }

static gcc_jit_lvalue *local(spmv_emitter *e, gcc_jit_type *t, const char *name)
{
    return gcc_jit_function_new_local(e->fn, NULL, t, name);
}

static gcc_jit_rvalue *cmp(spmv_emitter *e, enum gcc_jit_comparison op, gcc_jit_rvalue *a, gcc_jit_rvalue *b)
{
    return gcc_jit_context_new_comparison(e->ctx, NULL, op, a, b);
}

/* x += 1 (x of type t) */
static void increment(spmv_emitter *e, gcc_jit_block *b, gcc_jit_lvalue *x, gcc_jit_type *t)
{
    gcc_jit_block_add_assignment_op(b, NULL, x, GCC_JIT_BINARY_OP_PLUS, gcc_jit_context_one(e->ctx, t));
}

/* args[slot] as a T (a pointer), or *(T *)args[slot] (a scalar) */
static gcc_jit_rvalue *arg(spmv_emitter *e, gcc_jit_rvalue *args, int slot, gcc_jit_type *t, bool scalar)
{
    gcc_jit_rvalue *raw = rv(gcc_jit_context_new_array_access(e->ctx, NULL, args, gcc_jit_context_new_rvalue_from_int(e->ctx, e->t_int, slot)));
    if (!scalar) return gcc_jit_context_new_cast(e->ctx, NULL, raw, t);
    return rv(gcc_jit_rvalue_dereference(gcc_jit_context_new_cast(e->ctx, NULL, raw, gcc_jit_type_get_pointer(t)), NULL));
}

static void emit_rows(spmv_emitter *e, pe_dtype dtype)
{
    gcc_jit_context *ctx = e->ctx;
    gcc_jit_type *elem = gcc_jit_context_get_type(ctx, dtype == PE_F32 ? GCC_JIT_TYPE_FLOAT : GCC_JIT_TYPE_DOUBLE);
    gcc_jit_type *acc = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_DOUBLE);
    gcc_jit_type *voidp = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_VOID_PTR);
    gcc_jit_type *p_int = gcc_jit_type_get_pointer(gcc_jit_type_get_const(e->t_int));
    gcc_jit_type *p_in = gcc_jit_type_get_pointer(gcc_jit_type_get_const(elem)), *p_out = gcc_jit_type_get_pointer(elem);
    gcc_jit_param *params[3] = {
        gcc_jit_context_new_param(ctx, NULL, e->t_long, "begin"),
        gcc_jit_context_new_param(ctx, NULL, e->t_long, "end"),
        gcc_jit_context_new_param(ctx, NULL, gcc_jit_type_get_pointer(voidp), "args"),
    };
    e->fn = gcc_jit_context_new_function(ctx, NULL, GCC_JIT_FUNCTION_EXPORTED, gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_VOID),
                                         pe_gccjit_spmv_name(dtype), 3, params, 0);
    gcc_jit_rvalue *args = gcc_jit_param_as_rvalue(params[2]), *end = gcc_jit_param_as_rvalue(params[1]);
    gcc_jit_lvalue *rp = local(e, p_int, "row_ptr"), *col = local(e, p_int, "col"), *v = local(e, p_in, "values"),
                   *x = local(e, p_in, "x"), *y = local(e, p_out, "y"), *nnz = local(e, e->t_long, "nnz"),
                   *n_cols = local(e, e->t_uint, "n_cols"), *bad = local(e, e->t_uint, "bad"), *i = local(e, e->t_long, "i"),
                   *lo = local(e, e->t_int, "lo"), *hi = local(e, e->t_int, "hi"), *k = local(e, e->t_int, "k"),
                   *c = local(e, e->t_uint, "c"), *s = local(e, acc, "s");
    gcc_jit_block *cur = gcc_jit_function_new_block(e->fn, "entry");
    gcc_jit_block_add_assignment(cur, NULL, rp, arg(e, args, PE_SPMV_ROW_PTR, p_int, false));
    gcc_jit_block_add_assignment(cur, NULL, col, arg(e, args, PE_SPMV_COL, p_int, false));
    gcc_jit_block_add_assignment(cur, NULL, v, arg(e, args, PE_SPMV_VALUES, p_in, false));
    gcc_jit_block_add_assignment(cur, NULL, x, arg(e, args, PE_SPMV_X, p_in, false));
    gcc_jit_block_add_assignment(cur, NULL, y, arg(e, args, PE_SPMV_Y, p_out, false));
    gcc_jit_block_add_assignment(cur, NULL, nnz, arg(e, args, PE_SPMV_NNZ, e->t_long, true));
    gcc_jit_block_add_assignment(cur, NULL, n_cols, arg(e, args, PE_SPMV_N_COLS, e->t_uint, true));
    gcc_jit_block_add_assignment(cur, NULL, bad, gcc_jit_context_zero(ctx, e->t_uint));
    gcc_jit_block_add_assignment(cur, NULL, i, gcc_jit_param_as_rvalue(params[0]));
    pe_jit_loop rows = pe_jit_loop_while(e->fn, &cur, "rows", cmp(e, GCC_JIT_COMPARISON_LT, rv(i), end));

    /* the row's offsets, checked at both ends; a bad row's y is 0 */
    gcc_jit_block_add_assignment(cur, NULL, lo, rv(gcc_jit_context_new_array_access(ctx, NULL, rv(rp), rv(i))));
    gcc_jit_rvalue *next = gcc_jit_context_new_binary_op(ctx, NULL, GCC_JIT_BINARY_OP_PLUS, e->t_long, rv(i), gcc_jit_context_one(ctx, e->t_long));
    gcc_jit_block_add_assignment(cur, NULL, hi, rv(gcc_jit_context_new_array_access(ctx, NULL, rv(rp), next)));
    gcc_jit_type *t_bool = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_BOOL);
    gcc_jit_rvalue *wrong = gcc_jit_context_new_binary_op(
        ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, t_bool,
        gcc_jit_context_new_binary_op(ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, t_bool,
                                      cmp(e, GCC_JIT_COMPARISON_LT, rv(lo), gcc_jit_context_zero(ctx, e->t_int)),
                                      cmp(e, GCC_JIT_COMPARISON_GT, rv(lo), rv(hi))),
        cmp(e, GCC_JIT_COMPARISON_GT, gcc_jit_context_new_cast(ctx, NULL, rv(hi), e->t_long), rv(nnz)));
    gcc_jit_block *row_bad = gcc_jit_function_new_block(e->fn, "row_bad"), *row_ok = gcc_jit_function_new_block(e->fn, "row_ok");
    gcc_jit_block_end_with_conditional(cur, NULL, wrong, row_bad, row_ok);
    gcc_jit_lvalue *y_i = gcc_jit_context_new_array_access(ctx, NULL, rv(y), rv(i));
    gcc_jit_block_add_assignment(row_bad, NULL, y_i, gcc_jit_context_zero(ctx, elem));
    gcc_jit_block_add_assignment(row_bad, NULL, bad, gcc_jit_context_one(ctx, e->t_uint));
    increment(e, row_bad, i, e->t_long);
    gcc_jit_block_end_with_jump(row_bad, NULL, rows.test); /* the next row */

    /* the row's sum in column order, each column checked as it is read
     * (out of range: the row ends with what it summed) */
    cur = row_ok;
    gcc_jit_block_add_assignment(cur, NULL, s, gcc_jit_context_zero(ctx, acc));
    gcc_jit_block_add_assignment(cur, NULL, k, rv(lo));
    pe_jit_loop cols = pe_jit_loop_while(e->fn, &cur, "columns", cmp(e, GCC_JIT_COMPARISON_LT, rv(k), rv(hi)));
    gcc_jit_block_add_assignment(cur, NULL, c,
                                 gcc_jit_context_new_cast(ctx, NULL, rv(gcc_jit_context_new_array_access(ctx, NULL, rv(col), rv(k))), e->t_uint));
    gcc_jit_block *col_bad = gcc_jit_function_new_block(e->fn, "col_bad"), *col_ok = gcc_jit_function_new_block(e->fn, "col_ok");
    gcc_jit_block_end_with_conditional(cur, NULL, cmp(e, GCC_JIT_COMPARISON_GE, rv(c), rv(n_cols)), col_bad, col_ok);
    gcc_jit_block_add_assignment(col_bad, NULL, bad, gcc_jit_context_one(ctx, e->t_uint));
    gcc_jit_block_end_with_jump(col_bad, NULL, cols.after); /* out of the row's columns */
    cur = col_ok;
    gcc_jit_rvalue *vk = gcc_jit_context_new_cast(ctx, NULL, rv(gcc_jit_context_new_array_access(ctx, NULL, rv(v), rv(k))), acc);
    gcc_jit_rvalue *xc = gcc_jit_context_new_cast(ctx, NULL, rv(gcc_jit_context_new_array_access(ctx, NULL, rv(x), rv(c))), acc);
    gcc_jit_block_add_assignment_op(cur, NULL, s, GCC_JIT_BINARY_OP_PLUS,
                                    gcc_jit_context_new_binary_op(ctx, NULL, GCC_JIT_BINARY_OP_MULT, acc, vk, xc));
    increment(e, cur, k, e->t_int);
    pe_jit_loop_end(&cols, &cur);
    gcc_jit_block_add_assignment(cur, NULL, y_i, gcc_jit_context_new_cast(ctx, NULL, rv(s), elem));
    increment(e, cur, i, e->t_long);
    pe_jit_loop_end(&rows, &cur);

    /* other launches may set the flag too: one atomic OR, only from a launch that saw a bad row */
    gcc_jit_block *report = gcc_jit_function_new_block(e->fn, "report"), *ret = gcc_jit_function_new_block(e->fn, "ret");
    gcc_jit_block_end_with_conditional(cur, NULL, cmp(e, GCC_JIT_COMPARISON_NE, rv(bad), gcc_jit_context_zero(ctx, e->t_uint)),
                                       report, ret);
    gcc_jit_type *vp = gcc_jit_type_get_pointer(gcc_jit_type_get_volatile(gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_VOID)));
    gcc_jit_rvalue *or_args[3] = {gcc_jit_context_new_cast(ctx, NULL, arg(e, args, PE_SPMV_BAD, voidp, false), vp),
                                  gcc_jit_context_new_cast(ctx, NULL, rv(bad), e->t_int),
                                  gcc_jit_context_new_rvalue_from_int(ctx, e->t_int, __ATOMIC_RELAXED)};
    gcc_jit_block_add_eval(report, NULL,
                           gcc_jit_context_new_call(ctx, NULL, gcc_jit_context_get_builtin_function(ctx, "__atomic_fetch_or_4"), 3, or_args));
    gcc_jit_block_end_with_jump(report, NULL, ret);
    gcc_jit_block_end_with_void_return(ret, NULL);
}

bool pe_gccjit_spmv_compile(const char *isa, const char *so_path, char *err, size_t err_size)
{
    gcc_jit_context *ctx = pe_gccjit_context(isa, err, err_size);
    if (!ctx) return false;
    spmv_emitter e = {.ctx = ctx,
                      .t_long = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_LONG),
                      .t_int = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_INT),
                      .t_uint = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_UNSIGNED_INT)};
    for (int t = 0; t < PE_DTYPE__COUNT; t++)
        if (pe_gccjit_spmv_dtype((pe_dtype)t)) emit_rows(&e, (pe_dtype)t);
    gcc_jit_context_compile_to_file(ctx, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, so_path);
    const char *msg = gcc_jit_context_get_first_error(ctx);
    bool ok = msg == NULL;
    if (msg) snprintf(err, err_size, "%s", msg);
    gcc_jit_context_release(ctx);
    return ok;
}
