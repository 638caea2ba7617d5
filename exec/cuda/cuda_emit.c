/* cuda_emit.c — kernel IR to CUDA C (see cuda_emit.h for the launch
 * convention).  Each SSA value becomes a local; selects are ?: (the GPU
 * predicates them); math comes from CUDA's device library (expf, erfcf,
 * normcdf, ...), whose documented accuracy is within PE's 2-ulp contract for
 * f32 except where the CPU emitter, too, computes in double and rounds once
 * (composed ops, erf, erfc, rsqrt); f32 cdf_norm is PE's own
 * (cuda_cdf_norm.cuh).  Libm names, emission classes and how reductions
 * accumulate are columns of irformat/ops_codegen.def (codegen.h), as for the
 * CPU generator; which ops it emits in which compute types is its own
 * column (cuda_ops.def); composed ops reach it as primitives (kir_lower.c).
 * Element i of a STRIDED parameter (broadcasts and views) is read through
 * its index map, in 64-bit arithmetic from i's coordinates: offset, strides
 * (negative too), clamps and wraps with shifts (cuda_emit_ops.c), so views
 * run in kernels on the GPU.  Reductions along an axis are kernels too
 * (those axis_reduction_emittable lists; pe_cuda_emit refuses others).
 *
 * This file is the driver: the fusion rules the program generator asks of
 * this generator, the kernel shape each kernel takes, and a program's
 * source (prelude, kernels, combiner).  The emission is in pieces of one
 * concern each, sharing cuda_emit_internal.h: the text and the prelude's
 * device helpers (cuda_emit_prelude.c), the element-wise body
 * (cuda_emit_ops.c), reductions (cuda_emit_reduce.c), kernel shapes
 * (cuda_emit_loops.c) and the combiner (cuda_emit_combine.c). */
#include <stdlib.h>

#include "cuda_emit_internal.h"

/* ---------------------------------------------------------- fusion rules */

/* The compute types it emits each op in (cuda_ops.def). */
static const uint8_t cuda_emits[PE_OP__COUNT] = {
#define PE_CUDA_OP(name, emits) [PE_OP_##name] = PE_EMITS_##emits,
#include "cuda_ops.def"
};

/* Exactly one row per op, in the catalog's order: a row missing, doubled or
 * out of place is a compile error here. */
enum {
#define PE_CUDA_OP(name, emits) PE_CUDA_OP_ROW_##name,
#include "cuda_ops.def"
    PE_CUDA_OP_ROWS
};
_Static_assert((int)PE_CUDA_OP_ROWS == (int)PE_OP__COUNT, "cuda_ops.def has a row for every op of ops.def");
#define PE_CUDA_OP(name, emits) _Static_assert((int)PE_CUDA_OP_ROW_##name == (int)PE_OP_##name, "cuda_ops.def follows ops.def's order");
#include "cuda_ops.def"

bool pe_cuda_can_emit(pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0)
{
    uint8_t emits = (unsigned)op < PE_OP__COUNT ? cuda_emits[op] : PE_EMITS_NONE;
    return pe_codegen_can_emit(emits, op, ctype, dtype, operand0);
}

/* Reductions along an axis it emits (cuda_emit_loops.c's
 * pe_cu_emit_axis_kernel): every reduction of the catalog but dot, of
 * operands and results of every generated type (cuda_emit_reduce.c's
 * pe_cu_axis_kind_of says how each accumulates). */
static bool axis_reduction_emittable(pe_op op, pe_dtype ctype, pe_dtype dtype)
{
    bool typed = ((PE_EMITS_ANY >> ctype) & 1u) && ((PE_EMITS_ANY >> dtype) & 1u);
    return typed && pe_op_table[op].kind == PE_KIND_REDUCE && op != PE_OP_dot;
}

/* Views are read through their index maps (cuda_emit_ops.c's element_index). */
const pe_fusion_rules pe_cuda_fusion_rules = {2, pe_cuda_can_emit, NULL, false, true, axis_reduction_emittable, NULL, NULL};

/* ---------------------------------------------------------------- driver */

/* Kernel k's __global__ function, in the shape its reduction asks for. */
static void emit_kernel(text *t, const kir_kernel *k)
{
    emitter e = {.t = t, .k = k, .perturbed_op = pe_codegen_perturbed_op()};
    char name[48];
    kir_kernel_name(k, name, sizeof name);
    const kir_inst *r = kir_reduction_of(k);
    if (k->axis_reduction) pe_cu_emit_axis_kernel(&e, name);
    else if (!r) pe_cu_emit_elementwise_kernel(&e, name);
    else if (pe_cu_axis_passes(pe_cu_full_kind_of(r)) > 1) pe_cu_emit_multi_walk_kernel(&e, name, r);
    else pe_cu_emit_full_kernel(&e, name, r);
}

char *pe_cuda_emit(const kir_kernel *const *kernels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const kir_kernel *k = kernels[i];
        if (!pe_kernel_generatable(k, pe_cuda_can_emit)) return NULL;
        const kir_inst *r = kir_reduction_of(k);
        if (k->axis_reduction && (!r || !axis_reduction_emittable((pe_op)r->op, (pe_dtype)r->ctype, (pe_dtype)r->dtype)))
            return NULL; /* only what the fusion rules promise */
    }
    text t = {.s = malloc(16384), .cap = 16384};
    if (!t.s) return NULL;
    t.s[0] = 0;
    put(&t, "typedef union { unsigned long long ptr; double value; } pe_cuda_arg;\n");
    put(&t, "typedef struct { pe_cuda_arg p[%d]; } pe_cuda_args;\n", KIR_MAX_PARAMS);
    pe_cu_emit_prelude(&t);
    bool reductions = false;
    for (size_t i = 0; i < n; i++) {
        emit_kernel(&t, kernels[i]);
        reductions |= kir_reduction_of(kernels[i]) != NULL && !kernels[i]->axis_reduction;
    }
    if (reductions) pe_cu_emit_combiner(&t);
    if (t.oom) {
        free(t.s);
        return NULL;
    }
    return t.s;
}
