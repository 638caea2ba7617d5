/* cuda_emit_combine.c — the CUDA generator's combiner (cuda_emit.h's
 * pe_combine, cuda_emit_internal.h): the kernel launched after each full
 * reduction of a program, on its stream, that folds the reduction's chunk
 * partials into its one result in a fixed order (the CPU's order,
 * exec/cpu/partials.c), so that a reduction's value never leaves the GPU
 * unless the host asks for it.  Which fold each reduction takes is compiled
 * into the combiner from the reductions' own kinds (cuda_emit_reduce.c). */
#include "cuda_emit_internal.h"

/* The combiner's branch for the multi-walk reductions' chunk statistics
 * (pe_cu_emit_multi_walk_kernel): thread 0 alone, in chunk order, the steps
 * of exec/cpu/partials.c's variance and scaled_norm2 (a chunk's mean minus the
 * mean from its sum without rounding the chunk's mean first; Chan's sum of
 * squared deviations scaled by 2^-2E for the largest exponent E met; norm2
 * rescaled to the largest chunk's scale). */
static void emit_combine_statistics(text *t)
{
    put(t, "  if (pe_chunk_statistics(op, (int)a.p[5].value)) {\n");
    put(t, "    if (threadIdx.x != 0) return;\n"
           "    const long long numel = (long long)a.p[2].value;\n"
           "    double v, sum = 0.0, comp = 0.0;\n");
    put(t, "    if (op == %d) {\n", PE_OP_norm2);
    put(t, "      double scale = 0.0; bool nan = false;\n"
           "      for (long long c = 0; c < n && !nan; c++) { const double s = part[%d * c]; if (s != s) nan = true, scale = s; else if (s > scale) scale = s; }\n"
           "      if (nan || scale == 0.0 || !pe_finite(scale)) v = scale;\n"
           "      else {\n"
           "        for (long long c = 0; c < n; c++) {\n"
           "          const double *at = part + %d * c, r = at[0] / scale, q = pe_finite(at[1]) ? at[1] + at[2] : at[1];\n"
           "          pe_two_sum(sum, comp, r * r * q); }\n"
           "        v = scale * sqrt(pe_finite(sum) ? sum + comp : sum); }\n"
           "    } else {\n", KIR_PARTIAL_WIDE, KIR_PARTIAL_WIDE);
    put(t, "      for (long long c = 0; c < n; c++)\n"
           "        for (int h = 0; h < 2; h++) { const double *at = part + %d * c; pe_two_sum(sum, comp, h && !pe_finite(at[0]) ? 0.0 : at[h]); }\n"
           "      const double mean = (pe_finite(sum) ? sum + comp : sum) / (double)numel;\n"
           "      int big = 0;\n", KIR_PARTIAL_WIDE);
    put(t, "      for (int w = 0; w < 2; w++) {\n"
           "        sum = 0.0, comp = 0.0;\n"
           "        for (long long c = 0; c < n; c++) {\n"
           "          const double *at = part + %d * c;\n"
           "          const long long n_c = numel - c * %dLL < %dLL ? numel - c * %dLL : %dLL;\n"
           "          double dev;\n"
           "          if (!pe_finite(at[0]) || !pe_finite(mean)) dev = at[0] / (double)n_c - mean;\n"
           "          else { const double p = (double)n_c * mean, p_err = fma((double)n_c, mean, -p); dev = ((at[0] - p) - p_err + at[1]) / (double)n_c; }\n"
           "          if (w == 0) {\n"
           "            int ec = (int)at[2];\n"
           "            const double d = fabs(dev);\n"
           "            if (d > 0.0 && pe_finite(d) && ilogb(d) > ec) ec = ilogb(d);\n"
           "            if (c == 0 || ec > big) big = ec;\n"
           "          } else {\n"
           "            const double d = ldexp(dev, -big);\n"
           "            pe_two_sum(sum, comp, ldexp(at[3], 2 * ((int)at[2] - big)));\n"
           "            pe_two_sum(sum, comp, (double)n_c * d * d);\n"
           "          } } }\n",
        KIR_PARTIAL_WIDE, KIR_REDUCE_CHUNK, KIR_REDUCE_CHUNK, KIR_REDUCE_CHUNK, KIR_REDUCE_CHUNK);
    put(t, "      const double scaled = (pe_finite(sum) ? sum + comp : sum) / (double)numel;\n"
           "      v = op == %d ? ldexp(scaled, 2 * big) : ldexp(sqrt(scaled), big);\n"
           "    }\n", PE_OP_var);
    put(t, "    if (rt == %d) *(float *)a.p[1].ptr = (float)v;\n"
           "    else *(double *)a.p[1].ptr = v;\n"
           "    return;\n  }\n", PE_F32);
}

/* The combiner (cuda_emit.h): thread t takes the t-th contiguous run of
 * the values in order (the chunks' high and low parts for sums, their highs
 * for extremes, their (hi, lo) pairs for the other reductions: pe_fold),
 * then neighbouring runs are combined pairwise, left before right (lane l
 * takes lane l + d for d = 1, 2, ..., within each warp, then across the
 * warps): a fixed order, so the result is the same on every GPU and every
 * run, and ties and NaNs go to the earliest chunk as on the host.
 * As on the host (pe_combine_partials), a low part whose high part is not
 * finite is skipped and a sum that is not finite is returned without its
 * compensation (inf - inf): sums holding infinities are IEEE's.
 * Its parameters: the partials, the result, the elements, the reduction's
 * op, the result's dtype and the reduction's compute type; which pe_fold a
 * reduction takes is compiled in (pe_fold_of, from pe_cu_fold_of;
 * pe_chunk_statistics, from kir_partial_width), so that the executor
 * passes what the kernel's instruction says and knows no more. */
void pe_cu_emit_combiner(text *t)
{
    int warps = PE_CUDA_REDUCE_THREADS / 32;
    put(t, "static __device__ int pe_fold_of(int op, int ct) {\n");
    for (int op = 0; op < PE_OP__COUNT; op++) {
        if (pe_op_table[op].kind != PE_KIND_REDUCE) continue;
        for (int ct = PE_F32; ct <= PE_BOOL; ct++) {
            kir_inst r = {.kind = KIR_REDUCE, .op = (uint8_t)op, .ctype = (uint8_t)ct, .dtype = PE_F64};
            int f = pe_cu_fold_of(&r);
            if (f) put(t, "  if (op == %d && ct == %d) return %d;\n", op, ct, f);
        }
    }
    put(t, "  return 0; }\n");
    /* the multi-walk reductions' partials (kir_partial_width: emit_combine_statistics) */
    put(t, "static __device__ bool pe_chunk_statistics(int op, int ct) {\n");
    for (int op = 0; op < PE_OP__COUNT; op++)
        for (int ct = PE_F32; ct <= PE_BOOL; ct++)
            if (pe_op_table[op].kind == PE_KIND_REDUCE && kir_partial_width((pe_op)op, (pe_dtype)ct) == KIR_PARTIAL_WIDE)
                put(t, "  if (op == %d && ct == %d) return true;\n", op, ct);
    put(t, "  return false; }\n");
    put(t, "extern \"C\" __global__ void __launch_bounds__(%d) %s(long long n, pe_cuda_args a) {\n",
        PE_CUDA_REDUCE_THREADS, PE_CUDA_COMBINER);
    put(t, "  __shared__ double sh_hi[%d], sh_lo[%d];\n", warps, warps);
    put(t, "  const double *part = (const double *)a.p[0].ptr;\n"
           "  const int op = (int)a.p[3].value, rt = (int)a.p[4].value, fold = pe_fold_of(op, (int)a.p[5].value);\n");
    emit_combine_statistics(t);
    put(t, "  const bool is_min = op == %d, extreme = !fold && (is_min || op == %d || op == %d);\n", PE_OP_min_reduce,
        PE_OP_max_reduce, PE_OP_norminf);
    put(t, "  const double none = fold == %d || fold == %d || fold == %d ? 1.0\n"
           "                    : op == %d ? __longlong_as_double(0xfff0000000000000LL)\n"
           "                    : is_min ? __longlong_as_double(0x7ff0000000000000LL) : 0.0;\n",
        FOLD_PROD, FOLD_WRAP_PROD, FOLD_ALL, PE_OP_max_reduce);
    put(t, "  const long long count = extreme || fold ? n : 2 * n, per = (count + %d) / %d;\n", PE_CUDA_REDUCE_THREADS - 1,
        PE_CUDA_REDUCE_THREADS);
    put(t, "  const long long from = threadIdx.x * per, to = count < from + per ? count : from + per;\n"
           "  double acc = none, comp = fold >= %d ? -1.0 : 0.0;\n"
           "  for (long long i = from; i < to; i++) {\n"
           "    if (fold) pe_fold(fold, acc, comp, part[2 * i], part[2 * i + 1]);\n"
           "    else if (!extreme) pe_two_sum(acc, comp, (i & 1) && !pe_finite(part[i - 1]) ? 0.0 : part[i]);\n"
           "    else if (pe_takes(acc, part[2 * i], is_min)) acc = part[2 * i];\n"
           "  }\n", FOLD_ARGMAX);
    const char *tree = "  for (int d = 1; d < %d; d <<= 1) {\n"
                       "    const double o = __shfl_down_sync(0xffffffffu, acc, d), oc = __shfl_down_sync(0xffffffffu, comp, d);\n"
                       "    if ((threadIdx.x & (2 * d - 1)) != 0) continue;\n"
                       "    if (fold) pe_fold(fold, acc, comp, o, oc);\n"
                       "    else if (!extreme) pe_two_sum(acc, comp, o), comp += oc;\n"
                       "    else if (pe_takes(acc, o, is_min)) acc = o;\n"
                       "  }\n";
    put(t, tree, 32);
    put(t, "  if ((threadIdx.x & 31) == 0) sh_hi[threadIdx.x >> 5] = acc, sh_lo[threadIdx.x >> 5] = comp;\n"
           "  __syncthreads();\n"
           "  if (threadIdx.x >= 32) return;\n");
    put(t, "  acc = threadIdx.x < %d ? sh_hi[threadIdx.x] : none, comp = threadIdx.x < %d ? sh_lo[threadIdx.x] : fold >= %d ? -1.0 : 0.0;\n",
        warps, warps, FOLD_ARGMAX);
    put(t, tree, warps);
    put(t, "  if (threadIdx.x != 0) return;\n"
           "  double v = fold >= %d ? comp : fold || extreme || !pe_finite(acc) ? acc : acc + comp;\n", FOLD_ARGMAX);
    put(t, "  if (op == %d) v = v / a.p[2].value;\n", PE_OP_mean);
    put(t, "  if (op == %d) v = sqrt(v);\n", PE_OP_norm2);
    put(t, "  if (rt == %d) *(float *)a.p[1].ptr = (float)v;\n"
           "  else if (rt == %d) *(double *)a.p[1].ptr = v;\n"
           "  else if (rt == %d) *(int *)a.p[1].ptr = fold == %d || fold == %d ? pe_wrap((unsigned)(unsigned long long)v) : pe_to_i32(v);\n"
           "  else *(bool *)a.p[1].ptr = v != 0.0;\n}\n",
        PE_F32, PE_F64, PE_I32, FOLD_WRAP_SUM, FOLD_WRAP_PROD);
}
