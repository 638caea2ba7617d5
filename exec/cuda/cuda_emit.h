/* cuda_emit.h — the CUDA code generator: kernel IR to CUDA C for NVRTC, the
 * same kernels the CPU emitter makes from the same IR, with the same
 * reference semantics (NaN and signed-zero rules, saturating casts, i32
 * wrap-around, f32 ops that the reference rounds once from double).
 *
 * Launch convention of every kernel:
 *     extern "C" __global__ void pe_k_<hash>(long long n, pe_cuda_args a)
 * a.p[k] is parameter k: a device pointer, or for a scalar parameter its
 * value as a double; a STRIDED parameter's pointer is its whole buffer,
 * read through the parameter's index map (kir.h: offset, strides, clamps,
 * wraps), compiled in.  Element-wise kernels: any grid, a grid-stride loop over
 * [0, n) (over groups of 4 elements first, where vectorised).  Axis
 * reductions: any grid of whole warps, a grid-stride loop over [0, n), the
 * results (a warp per result or a thread per one: pe_cuda_threads_per_result),
 * each accumulated in an order the kernel alone fixes.  Full reduction kernels: exactly one block of PE_CUDA_REDUCE_THREADS
 * threads per KIR_REDUCE_CHUNK elements (grid = ceil(n / chunk)); block c
 * writes its chunk's (high, low) partial to partials[2c], partials[2c + 1]
 * (argmax, argmin: the extreme and its flat index; products, wrapped sums,
 * any, all: the value and 0; var, stddev and f64 norm2 write
 * KIR_PARTIAL_WIDE doubles a chunk instead, kir.h's chunk statistics),
 * in a fixed combination order, so the result does not depend on the GPU
 * (the order within a chunk depends on whether its arrays are 16-byte
 * aligned, i.e. on the vector loop: a view at an odd offset may differ from
 * a copy of it in the last bits).
 *
 * A program with reduction kernels also holds their combiner, launched after
 * each of them on the same stream with one block of PE_CUDA_REDUCE_THREADS
 * threads, n = the reduction's number of chunks:
 *     extern "C" __global__ void pe_combine(long long n, pe_cuda_args a)
 * a.p[0]: the partials, a.p[1]: the result (one element), a.p[2]: the number
 * of elements reduced (for the mean), a.p[3]: the reduction's pe_op, a.p[4]:
 * the result's pe_dtype, a.p[5]: the reduction instruction's compute type
 * (whether i32 sums and products wrap).  It combines the partials in a fixed
 * order, compensated as the chunks are, so a reduction's value never leaves
 * the GPU unless the host asks for it. */
#ifndef PE_CUDA_EMIT_H
#define PE_CUDA_EMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "../../jit/kir/kir.h"
#include "../../jit/kir/target.h"

#define PE_CUDA_REDUCE_THREADS 256
#define PE_CUDA_COMBINER "pe_combine"
/* Element-wise kernels whose ops cost at most this much per element (the op
 * catalog's cost: add 1, div 4, exp 20) read and write their contiguous
 * arrays 4 elements at a time where those are 16-byte aligned (STRIDED
 * operands, broadcasts and views, are read element by element). */
#define PE_CUDA_VECTOR_MAX_COST 64
#define PE_CUDA_VECTOR_MAX_ARRAYS 12 /* inputs and outputs */

typedef union {
    unsigned long long ptr; /* CUdeviceptr */
    double value;
} pe_cuda_arg;

typedef struct {
    pe_cuda_arg p[KIR_MAX_PARAMS];
} pe_cuda_args;

/* Axis reductions along the last axis at least this long take a warp per
 * result, shorter ones and those along other axes a thread per result. */
#define PE_CUDA_AXIS_WARP_MIN 32

/* Appends the CUDA C of n kernels (after one shared prelude) to a new
 * malloc'ed string; NULL when out of memory, or when a kernel holds an op
 * this generator does not emit (composed ops are lowered first: kir_lower). */
char *pe_cuda_emit(const kir_kernel *const *kernels, size_t n);
/* The threads kernel k wants per item of its [0, n) (any grid works: its
 * loops stride over the grid): 32 for an axis reduction that takes a warp
 * per result (cuda_emit_loops.c's pe_cu_emit_axis_kernel), else 1.  (The
 * executor, below the generator in the layering, gives every axis
 * reduction 32.) */
int pe_cuda_threads_per_result(const kir_kernel *k);
/* True if the CUDA generator can emit `op` computed in `ctype` giving
 * `dtype` (operand0: the dtype of the first operand, for casts):
 * cuda_ops.def's emits column; the fusion rules' emittable. */
bool pe_cuda_can_emit(pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0);
/* The CUDA executor's fusion rules: the ops pe_cuda_can_emit takes (today
 * the CPU generator's but for i32 and bool extremes: cuda_ops.def's column
 * against exec/cpu/cpu_ops.def's), reductions fused into any body (the
 * CPU's exception is a gcc vectoriser limit). */
extern const pe_fusion_rules pe_cuda_fusion_rules;
#endif
