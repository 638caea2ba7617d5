/* cuda_emit_loops.c — the CUDA generator's kernel shapes
 * (cuda_emit_internal.h), each a whole __global__ function: element-wise
 * kernels (a grid-stride loop, over groups of 4 elements first where
 * vectorised), full reductions (one block per chunk, its threads' values
 * combined by fixed shuffle trees into the chunk's partial; var, stddev and
 * f64 norm2 in several walks over the chunk) and reductions along an axis
 * (a warp or a thread per result).  Each shape declares the element i and
 * emits the body (cuda_emit_ops.c) per element or lane; the order in which
 * a reduction meets its elements is fixed here, by the kernel alone, so a
 * result is the same for any launch and any GPU. */
#include <stdio.h>
#include <string.h>

#include "cuda_emit_internal.h"

/* --------------------------------------------------------- vector loop */

/* Whether an element-wise kernel gets the vector loop (its contiguous
 * arrays 4 elements at a time; STRIDED operands are read lane by lane at
 * their mapped index): little arithmetic per element, where memory instructions
 * and index arithmetic are a large part of the work (a kernel with
 * transcendental ops is bound by them, and four lanes of it would only
 * raise register pressure). */
static bool is_array(const kir_param *q) { return q->kind == KIR_IN_CONTIG || q->kind == KIR_OUT; }

static bool vectorised(const kir_kernel *k)
{
    int cost = 0, arrays = 0;
    for (int p = 0; p < k->n_params; p++) {
        const kir_param *q = &k->params[p];
        if (!is_array(q)) continue; /* STRIDED operands: loaded lane by lane */
        if (q->dtype != PE_F32 && q->dtype != PE_F64 && q->dtype != PE_I32 && q->dtype != PE_BOOL) return false;
        arrays++;
    }
    /* each array's 4 lanes live in registers at once: many arrays would spill */
    if (arrays > PE_CUDA_VECTOR_MAX_ARRAYS) return false;
    for (int v = 0; v < k->n_body; v++)
        if (k->body[v].kind == KIR_OP) cost += pe_op_table[k->body[v].op].cost;
    return cost <= PE_CUDA_VECTOR_MAX_COST;
}

/* CUDA's type of 4 elements of an f32, i32 or bool array (f64: two double2). */
static const char *vector_type(pe_dtype t) { return t == PE_F32 ? "float4" : t == PE_I32 ? "int4" : "uchar4"; }

/* Group g of input array p (16-byte loads; f64: two, bool: one 4-byte
 * load) into the lane array in<p>. */
static void vector_load(text *t, const kir_param *q, int p)
{
    if (q->dtype == PE_F64) {
        put(t, "      const double2 q%da = ((const double2 *)a.p[%d].ptr)[2 * g], q%db = ((const double2 *)a.p[%d].ptr)[2 * g + 1];\n",
            p, p, p, p);
        put(t, "      const double in%d[4] = {q%da.x, q%da.y, q%db.x, q%db.y};\n", p, p, p, p, p);
    } else {
        const char *V = vector_type((pe_dtype)q->dtype);
        put(t, "      const %s q%d = ((const %s *)a.p[%d].ptr)[g];\n", V, p, V, p);
        put(t, "      const %s in%d[4] = {q%d.x, q%d.y, q%d.z, q%d.w};\n", ctype_name((pe_dtype)q->dtype), p, p, p, p, p);
    }
}

/* The lane array out<p> into group g of output array p, alike. */
static void vector_store(text *t, const kir_param *q, int p)
{
    if (q->dtype == PE_F64) {
        put(t, "      { double2 s; s.x = out%d[0]; s.y = out%d[1]; ((double2 *)a.p[%d].ptr)[2 * g] = s;\n", p, p, p);
        put(t, "        s.x = out%d[2]; s.y = out%d[3]; ((double2 *)a.p[%d].ptr)[2 * g + 1] = s; }\n", p, p, p);
    } else {
        const char *V = vector_type((pe_dtype)q->dtype);
        put(t, "      { %s s; s.x = out%d[0]; s.y = out%d[1]; s.z = out%d[2]; s.w = out%d[3]; ((%s *)a.p[%d].ptr)[g] = s; }\n", V,
            p, p, p, p, V, p);
    }
}

/* The vector loop: groups g of 4 elements (4g .. 4g+3) from `from` below
 * `to`, `step` apart, while every array is 16-byte aligned (a view's offset
 * may not be); `start` becomes where the scalar loop takes over (the last
 * elements, or all of them when an array is not aligned). */
static void emit_vector_loop(emitter *e, const char *from, const char *to, const char *step)
{
    text *t = e->t;
    const kir_kernel *k = e->k;
    put(t, "  if (((0ULL");
    for (int p = 0; p < k->n_params; p++)
        if (is_array(&k->params[p])) put(t, " | a.p[%d].ptr", p);
    put(t, ") & 15ULL) == 0) {\n");
    put(t, "    const long long groups = %s;\n", to);
    put(t, "    for (long long g = %s; g < groups; g += %s) {\n", from, step);
    for (int p = 0; p < k->n_params; p++) {
        if (k->params[p].kind == KIR_IN_CONTIG) vector_load(t, &k->params[p], p);
        if (k->params[p].kind == KIR_OUT) put(t, "      %s out%d[4];\n", ctype_name((pe_dtype)k->params[p].dtype), p);
    }
    put(t, "#pragma unroll\n      for (int L = 0; L < 4; L++) {\n      const long long i = 4 * g + L; (void)i;\n");
    e->lanes = true;
    pe_cu_emit_body(e);
    e->lanes = false;
    memset(e->has_tail, 0, sizeof e->has_tail); /* those were the lane loop's */
    put(t, "      }\n");
    for (int p = 0; p < k->n_params; p++)
        if (k->params[p].kind == KIR_OUT) vector_store(t, &k->params[p], p);
    put(t, "    }\n    start = 4 * groups;\n  }\n");
}

/* What the vector loop and the shuffle tree take for granted. */
_Static_assert(KIR_REDUCE_CHUNK % 4 == 0, "a chunk is whole groups of 4: the vector loop stays inside it");
_Static_assert(PE_CUDA_REDUCE_THREADS % 32 == 0 && PE_CUDA_REDUCE_THREADS <= 1024, "whole warps, one block");
_Static_assert(((PE_CUDA_REDUCE_THREADS / 32) & (PE_CUDA_REDUCE_THREADS / 32 - 1)) == 0,
               "the second shuffle tree halves the number of warps down to one");

/* ---------------------------------------------------- element-wise */

/* An element-wise kernel: any grid, a grid-stride loop over [0, n), after
 * the vector loop over its groups of 4 where vectorised. */
void pe_cu_emit_elementwise_kernel(emitter *e, const char *name)
{
    text *t = e->t;
    const kir_kernel *k = e->k;
    put(t, "extern \"C\" __global__ void %s(long long n, pe_cuda_args a) {\n", name);
    put(t, "  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;\n"
           "  long long start = 0;\n");
    if (vectorised(k)) emit_vector_loop(e, "first", "n / 4", "stride");
    put(t, "  for (long long i = start + first; i < n; i += stride) {\n");
    pe_cu_emit_body(e);
    put(t, "  }\n}\n");
}

/* -------------------------------------------------- axis reductions */

int pe_cuda_threads_per_result(const kir_kernel *k)
{
    const kir_inst *r = k->axis_reduction ? kir_reduction_of(k) : NULL;
    bool warp = r && pe_cu_axis_combines(pe_cu_axis_kind_of(r)) && k->reduce_axis == k->rank - 1 &&
                k->shape[k->reduce_axis] >= PE_CUDA_AXIS_WARP_MIN;
    return warp ? 32 : 1;
}

/* A reduction along an axis (kir.h: the iteration shape is the operand's,
 * [0, n) counts results): any grid, a grid-stride loop over the results.
 * Result o reads the elements base + j * inner, j along the axis, inner
 * the extent of the axes after it.  The order each result is accumulated
 * in is fixed by the kernel alone, never by the launch, so results are
 * bitwise the same for any grid, block size and GPU:
 *  - along the last axis, at least PE_CUDA_AXIS_WARP_MIN long, where lanes
 *    combine (pe_cu_axis_combines): a warp per result (pe_cuda_threads_per_result),
 *    coalesced: element j goes to lane j mod 32, which accumulates its
 *    elements in order; then the tree of pe_cu_emit_axis_tree, and lane 0 stores;
 *  - otherwise a thread per result, its elements in order, in as many walks
 *    as the reduction takes (pe_cu_axis_passes; along an outer axis consecutive
 *    threads read consecutive elements: coalesced).
 * The first walk visits every element of the iteration space once, so the
 * stores of fused producers are the element-wise kernel's. */
void pe_cu_emit_axis_kernel(emitter *e, const char *name)
{
    text *t = e->t;
    const kir_kernel *k = e->k;
    const kir_inst *r = kir_reduction_of(k);
    axis_kind kind = pe_cu_axis_kind_of(r);
    int a = k->reduce_axis;
    long long len = (long long)k->shape[a], inner = 1;
    for (int d = k->rank - 1; d > a; d--) inner *= (long long)k->shape[d];
    put(t, "extern \"C\" __global__ void %s(long long n, pe_cuda_args a) {\n", name);
    if (pe_cuda_threads_per_result(k) == 32) {
        /* a launch's threads are whole warps (blocks of whole warps): every
         * lane of a warp takes the same results, so the shuffles meet */
        put(t, "  const int lane = threadIdx.x & 31;\n"
               "  const long long first = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;\n"
               "  const long long stride = ((long long)gridDim.x * blockDim.x) >> 5;\n");
        put(t, "  for (long long o = first; o < n; o += stride) {\n");
        pe_cu_emit_axis_state(t, r);
        put(t, "  for (long long j = lane; j < %lldLL; j += 32) {\n", len);
        put(t, "    const long long i = o * %lldLL + j;\n", len);
        pe_cu_emit_body(e);
        put(t, "  }\n");
        pe_cu_emit_axis_tree(t, r);
        put(t, "  if (lane == 0) {\n");
        pe_cu_emit_axis_store(t, k, r, "    ");
        put(t, "  }\n  }\n}\n");
        return;
    }
    put(t, "  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;\n");
    put(t, "  for (long long o = first; o < n; o += stride) {\n");
    if (inner == 1) put(t, "    const long long base = o * %lldLL;\n", len);
    else put(t, "    const long long base = o / %lldLL * %lldLL + o %% %lldLL;\n", inner, len * inner, inner);
    pe_cu_emit_axis_state(t, r);
    for (e->pass = 0; e->pass < pe_cu_axis_passes(kind); e->pass++) {
        pe_cu_emit_axis_between(t, r, e->pass, len);
        if (kind == AX_SCALED_NORM2 && e->pass == 1) put(t, "  if (!nan && scale > 0.0 && pe_finite(scale))\n");
        put(t, "  for (long long j = 0; j < %lldLL; j++) {\n", len);
        put(t, "    const long long i = base + j * %lldLL;\n", inner);
        pe_cu_emit_body(e);
        memset(e->has_tail, 0, sizeof e->has_tail); /* those were this walk's */
        put(t, "  }\n");
    }
    e->pass = 0;
    pe_cu_emit_axis_store(t, k, r, "    ");
    put(t, "  }\n}\n");
}

/* -------------------------------------------------- full reductions */

/* A full var, stddev or f64 norm2: one block per chunk, as the other full
 * reductions, walking its chunk's elements several times (the element body
 * again each walk, stores in the first), the block's values shared between
 * walks (pe_block_sum, pe_block_max).  It leaves the CPU kernels' chunk
 * statistics (kir.h, KIR_PARTIAL_WIDE doubles a chunk), which the combiner
 * folds in chunk order as exec/cpu/partials.c does:
 *   var, stddev: the chunk's sum (high, low), the exponent e of its largest
 *     deviation from its mean, its deviations' squares scaled by 2^-2e;
 *   f64 norm2: its largest magnitude (NaN if it holds one), its squares
 *     divided by that (sum, compensation), 0. */
void pe_cu_emit_multi_walk_kernel(emitter *e, const char *name, const kir_inst *r)
{
    text *t = e->t;
    int width = KIR_PARTIAL_WIDE;
    bool var = pe_cu_full_kind_of(r) == AX_VAR;
    put(t, "extern \"C\" __global__ void __launch_bounds__(%d) %s(long long n, pe_cuda_args a) {\n",
        PE_CUDA_REDUCE_THREADS, name);
    put(t, "  __shared__ double sh_hi[%d], sh_lo[%d];\n", PE_CUDA_REDUCE_THREADS / 32, PE_CUDA_REDUCE_THREADS / 32);
    put(t, "  const long long begin = (long long)blockIdx.x * %dLL;\n", KIR_REDUCE_CHUNK);
    put(t, "  const long long end = n < begin + %dLL ? n : begin + %dLL;\n", KIR_REDUCE_CHUNK, KIR_REDUCE_CHUNK);
    pe_cu_emit_axis_state(t, r);
    const char *walk = "  for (long long i = begin + threadIdx.x; i < end; i += %d) {\n";
    for (e->pass = 0; e->pass < pe_cu_axis_passes(pe_cu_full_kind_of(r)); e->pass++) {
        if (var && e->pass == 1) /* the chunk's mean, from its sum */
            put(t, "  pe_block_sum(acc, comp, sh_hi, sh_lo);\n"
                   "  const double sum_hi = acc, sum_lo = comp;\n"
                   "  mean = (pe_finite(acc) ? acc + comp : acc) / (double)(end - begin);\n");
        if (var && e->pass == 2) /* deviations scaled by a power of two: squares neither overflow nor underflow */
            put(t, "  pe_block_max(largest, sh_hi);\n"
                   "  ex = largest > 0.0 && pe_finite(largest) ? ilogb(largest) : 0;\n  acc = 0.0, comp = 0.0;\n");
        if (!var && e->pass == 1)
            put(t, "  { double flag = nan ? 1.0 : 0.0; pe_block_max(flag, sh_lo); nan = flag != 0.0; }\n"
                   "  pe_block_max(scale, sh_hi);\n"
                   "  if (!nan && scale > 0.0 && pe_finite(scale))\n");
        put(t, walk, PE_CUDA_REDUCE_THREADS);
        pe_cu_emit_body(e);
        memset(e->has_tail, 0, sizeof e->has_tail); /* those were this walk's */
        put(t, "  }\n");
    }
    e->pass = 0;
    put(t, "  pe_block_sum(acc, comp, sh_hi, sh_lo);\n");
    put(t, "  if (threadIdx.x == 0) {\n    double *part = (double *)a.p[%d].ptr + %d * blockIdx.x;\n", r->a[0], width);
    if (var)
        put(t, "    part[0] = sum_hi, part[1] = sum_lo, part[2] = (double)ex, part[3] = pe_finite(acc) ? acc + comp : acc;\n");
    else
        put(t, "    part[0] = nan ? __longlong_as_double(0x7ff8000000000000LL) : scale, part[1] = acc, part[2] = comp, part[3] = 0.0;\n");
    put(t, "  }\n}\n");
}

/* Any other full reduction, in one walk: block c accumulates chunk c, its
 * threads striding over it (over its groups of 4 first where vectorised),
 * then the block's accumulators combine in fixed trees and thread 0 writes
 * the chunk's (high, low) partial. */
void pe_cu_emit_full_kernel(emitter *e, const char *name, const kir_inst *r)
{
    text *t = e->t;
    const kir_kernel *k = e->k;
    pe_op op = (pe_op)r->op;
    double start = pe_reduction_of(op)->identity;
    int warps = PE_CUDA_REDUCE_THREADS / 32, fold = pe_cu_fold_of(r);
    put(t, "extern \"C\" __global__ void __launch_bounds__(%d) %s(long long n, pe_cuda_args a) {\n",
        PE_CUDA_REDUCE_THREADS, name);
    put(t, "  __shared__ double sh_hi[%d], sh_lo[%d];\n", warps, warps);
    put(t, "  const long long begin = (long long)blockIdx.x * %dLL;\n", KIR_REDUCE_CHUNK);
    put(t, "  const long long end = n < begin + %dLL ? n : begin + %dLL;\n", KIR_REDUCE_CHUNK, KIR_REDUCE_CHUNK);
    if (fold) pe_cu_emit_full_state(t, r);
    else put(t, "  double acc = %s, comp = 0.0;\n", start == 0 ? "0.0" : start > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                                                                                      : "__longlong_as_double(0xfff0000000000000LL)");
    put(t, "  long long start = begin;\n");
    if (vectorised(k)) { /* the chunk's groups of 4 (a chunk starts at a multiple of 4) */
        char step[16];
        snprintf(step, sizeof step, "%d", PE_CUDA_REDUCE_THREADS);
        emit_vector_loop(e, "begin / 4 + threadIdx.x", "end / 4", step);
    }
    put(t, "  for (long long i = start + threadIdx.x; i < end; i += %d) {\n", PE_CUDA_REDUCE_THREADS);
    pe_cu_emit_body(e);
    put(t, "  }\n");
    if (fold) { /* the same fixed trees over (hi, lo) pairs, combined by pe_fold */
        pe_cu_emit_full_pair(t, r);
        const char *tree = "  for (int d = %d; d > 0; d >>= 1) {\n"
                           "    const double o = __shfl_down_sync(0xffffffffu, hi, d), ol = __shfl_down_sync(0xffffffffu, lo, d);\n"
                           "    pe_fold(%d, hi, lo, o, ol);\n  }\n";
        put(t, tree, 16, fold);
        put(t, "  if ((threadIdx.x & 31) == 0) sh_hi[threadIdx.x >> 5] = hi, sh_lo[threadIdx.x >> 5] = lo;\n");
        put(t, "  __syncthreads();\n");
        put(t, "  if (threadIdx.x >= 32) return;\n");
        put(t, "  hi = sh_hi[threadIdx.x %% %d], lo = sh_lo[threadIdx.x %% %d];\n", warps, warps);
        put(t, tree, warps / 2, fold);
        put(t, "  if (threadIdx.x == 0) {\n");
        put(t, "    ((double *)a.p[%d].ptr)[2 * blockIdx.x] = hi;\n", r->a[0]);
        put(t, "    ((double *)a.p[%d].ptr)[2 * blockIdx.x + 1] = lo;\n  }\n}\n", r->a[0]);
        return;
    }
    /* A fixed tree, the same order on every GPU: within each warp by
     * shuffles (lane l takes lane l + 16, + 8, ... + 1), then warp 0 over
     * the warps' results the same way. */
    pe_cu_emit_shuffle_tree(t, r, 16);
    put(t, "  if ((threadIdx.x & 31) == 0) sh_hi[threadIdx.x >> 5] = acc, sh_lo[threadIdx.x >> 5] = comp;\n");
    put(t, "  __syncthreads();\n");
    put(t, "  if (threadIdx.x >= 32) return;\n");
    put(t, "  acc = sh_hi[threadIdx.x %% %d], comp = sh_lo[threadIdx.x %% %d];\n", warps, warps);
    pe_cu_emit_shuffle_tree(t, r, warps / 2);
    put(t, "  if (threadIdx.x == 0) {\n");
    put(t, "    ((double *)a.p[%d].ptr)[2 * blockIdx.x] = acc;\n", r->a[0]);
    put(t, "    ((double *)a.p[%d].ptr)[2 * blockIdx.x + 1] = comp;\n  }\n}\n", r->a[0]);
}
