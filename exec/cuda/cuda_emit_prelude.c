/* cuda_emit_prelude.c — the CUDA generator's text (cuda_emit_internal.h):
 * put, which every piece writes the source with, the CUDA C type of each
 * dtype, and the prelude, the device functions every kernel of a program
 * may call, written once at the top of its source: the reference's min and
 * max, i32 wrap-around and guarded division, saturating conversion, index
 * clamping, the reductions' steps and block trees, asec, acsc and cbrt in
 * the reference's forms, Philox draws; then the f32 normal CDF
 * (cuda_cdf_norm.cuh) with what that file asks of its includer.  The
 * kernels (cuda_emit_ops.c and the loop shapes) name these functions; the
 * text of each is here alone.  This file calls no other piece, so the
 * pieces calling put make no loop through it. */
#include <stdarg.h>
#include <stdio.h>

#include "cuda_emit_internal.h"
#include "../../exec/base/grow.h"
#include "../../irformat/philox.h"

/* ------------------------------------------------------------------ text */

void pe_cu_put(text *t, const char *fmt, ...)
{
    if (t->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        if (!PE_GROW(t->s, t->cap, t->len + (size_t)n + 1)) {
            t->oom = true;
            return;
        }
    }
}

/* ----------------------------------------------------------------- types */

/* The CUDA C type of an element, by pe_dtype: one row per dtype, in
 * irformat/dtypes.def's order (checked below); complex ones are the
 * vector types of their parts. */
#define PE_CUDA_TYPES(X) \
    X(F32, float) X(F64, double) X(I32, int) X(BOOL, unsigned char) X(C64, float2) X(C128, double2)
#define PE_CUDA_TYPE(en, type) [PE_##en] = #type,
const char *const pe_cu_type_names[PE_DTYPE__COUNT] = {PE_CUDA_TYPES(PE_CUDA_TYPE)};
PE_CHECK_DTYPE_ROWS(PE_CUDA_TYPES)

/* --------------------------------------------------------------- prelude */

/* Helpers every kernel may use: reference min/max (NaN wins, ties of zeros
 * by sign), i32 wrap-around, the saturating float -> i32 conversion. */
static const char prelude[] =
    "static __device__ __forceinline__ float pe_min(float a, float b) {\n"
    "  if (a != a || b != b) return a + b;\n"
    "  if (a == b) return __int_as_float(__float_as_int(a) | __float_as_int(b));\n"
    "  return b < a ? b : a; }\n"
    "static __device__ __forceinline__ float pe_max(float a, float b) {\n"
    "  if (a != a || b != b) return a + b;\n"
    "  if (a == b) return __int_as_float(__float_as_int(a) & __float_as_int(b));\n"
    "  return b > a ? b : a; }\n"
    "static __device__ __forceinline__ double pe_min(double a, double b) {\n"
    "  if (a != a || b != b) return a + b;\n"
    "  if (a == b) return __longlong_as_double(__double_as_longlong(a) | __double_as_longlong(b));\n"
    "  return b < a ? b : a; }\n"
    "static __device__ __forceinline__ double pe_max(double a, double b) {\n"
    "  if (a != a || b != b) return a + b;\n"
    "  if (a == b) return __longlong_as_double(__double_as_longlong(a) & __double_as_longlong(b));\n"
    "  return b > a ? b : a; }\n"
    "static __device__ __forceinline__ int pe_min(int a, int b) { return b < a ? b : a; }\n"
    "static __device__ __forceinline__ int pe_max(int a, int b) { return b > a ? b : a; }\n"
    "static __device__ __forceinline__ int pe_wrap(unsigned v) { return (int)v; }\n"
    "static __device__ __forceinline__ int pe_to_i32(double d) {\n"
    "  if (d != d) return 0;\n"
    "  if (d >= 2147483647.0) return 2147483647;\n"
    "  if (d <= -2147483648.0) return (-2147483647 - 1);\n"
    "  return (int)d; }\n"
    "static __device__ __forceinline__ int pe_idiv(int a, int b) {\n"
    "  if (b == 0) return 0;\n"
    "  if (b == -1) return pe_wrap(0u - (unsigned)a);\n"
    "  return a / b; }\n"
    "static __device__ __forceinline__ int pe_imod(int a, int b) { return b == 0 || b == -1 ? 0 : a % b; }\n"
    /* a STRIDED parameter's clamped coordinate (element_index) */
    "static __device__ __forceinline__ long long pe_clamp(long long x, long long lo, long long hi) {\n"
    "  return x < lo ? lo : x > hi ? hi : x; }\n"
    /* reductions: NaN sticks; sums of f64 keep their low part (Neumaier) */
    "static __device__ __forceinline__ bool pe_takes(double acc, double x, bool is_min) {\n"
    "  return acc == acc && (x != x || (is_min ? x < acc : x > acc)); }\n"
    "static __device__ __forceinline__ void pe_two_sum(double &hi, double &lo, double x) {\n"
    "  double t = hi + x;\n"
    "  lo += fabs(hi) >= fabs(x) ? (hi - t) + x : (x - t) + hi;\n"
    "  hi = t; }\n"
    /* argmax, argmin: (extreme, flat index; -1: none), ties and NaNs to the smaller index */
    "static __device__ __forceinline__ bool pe_arg_takes(double acc, double at, double x, double xi, bool is_min) {\n"
    "  if (xi < 0.0) return false;\n"
    "  if (at < 0.0) return true;\n"
    "  const bool an = acc != acc, xn = x != x;\n"
    "  if (an || xn) return xn && (!an || xi < at);\n"
    "  return (is_min ? x < acc : x > acc) || (x == acc && xi < at); }\n"
    /* (hi, lo) pairs of the reductions that are not sums or extremes: cuda_emit_internal.h's FOLD_* */
    "static __device__ __forceinline__ void pe_fold(int f, double &hi, double &lo, double o, double ol) {\n"
    "  switch (f) {\n"
    "  case 1: hi *= o; break;\n"
    "  case 2: hi = (double)((unsigned)(unsigned long long)hi + (unsigned)(unsigned long long)o); break;\n"
    "  case 3: hi = (double)((unsigned)(unsigned long long)hi * (unsigned)(unsigned long long)o); break;\n"
    "  case 4: hi = hi != 0.0 || o != 0.0 ? 1.0 : 0.0; break;\n"
    "  case 5: hi = hi != 0.0 && o != 0.0 ? 1.0 : 0.0; break;\n"
    "  case 6: case 7: if (pe_arg_takes(hi, lo, o, ol, f == 7)) hi = o, lo = ol; break;\n"
    "  } }\n"
    /* the multi-walk full reductions (var, stddev, f64 norm2): a block's
     * compensated sum and its largest value, every thread given the result
     * (a fixed tree: within each warp, then warp 0 over the warps) */
    "static __device__ __forceinline__ void pe_warp_sum(double &hi, double &lo) {\n"
    "  for (int d = 16; d > 0; d >>= 1) {\n"
    "    const double o = __shfl_down_sync(0xffffffffu, hi, d), ol = __shfl_down_sync(0xffffffffu, lo, d);\n"
    "    pe_two_sum(hi, lo, o); lo += ol; } }\n"
    "static __device__ __forceinline__ void pe_warp_max(double &m) {\n"
    "  for (int d = 16; d > 0; d >>= 1) { const double o = __shfl_down_sync(0xffffffffu, m, d); if (!(o <= m)) m = o; } }\n"
    "static __device__ void pe_block_sum(double &hi, double &lo, double *sh_hi, double *sh_lo) {\n"
    "  pe_warp_sum(hi, lo);\n"
    "  __syncthreads();\n"
    "  if ((threadIdx.x & 31) == 0) sh_hi[threadIdx.x >> 5] = hi, sh_lo[threadIdx.x >> 5] = lo;\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x < 32) {\n"
    "    hi = threadIdx.x < blockDim.x / 32 ? sh_hi[threadIdx.x] : 0.0, lo = threadIdx.x < blockDim.x / 32 ? sh_lo[threadIdx.x] : 0.0;\n"
    "    pe_warp_sum(hi, lo);\n"
    "    if (threadIdx.x == 0) sh_hi[0] = hi, sh_lo[0] = lo; }\n"
    "  __syncthreads();\n"
    "  hi = sh_hi[0], lo = sh_lo[0]; }\n"
    "static __device__ void pe_block_max(double &m, double *sh) {\n"
    "  pe_warp_max(m);\n"
    "  __syncthreads();\n"
    "  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = m;\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x < 32) {\n"
    "    m = threadIdx.x < blockDim.x / 32 ? sh[threadIdx.x] : 0.0;\n"
    "    pe_warp_max(m);\n"
    "    if (threadIdx.x == 0) sh[0] = m; }\n"
    "  __syncthreads();\n"
    "  m = sh[0]; }\n"
    /* asec, acsc: the forms of codegen.h */
    "static __device__ __forceinline__ double pe_asec(double x) {\n"
    "  if (!(fabs(x) < " PE_TEXT(PE_ASEC_ACSC_NEAR) ")) return acos(1.0 / x);\n"
    "  const double t = atan(sqrt(fma(x, x, -1.0)));\n"
    "  return x > 0.0 ? t : (3.141592653589793 - t) + " PE_TEXT(PE_PI_LO) "; }\n"
    "static __device__ __forceinline__ double pe_acsc(double x) {\n"
    "  return fabs(x) < " PE_TEXT(PE_ASEC_ACSC_NEAR) " ? copysign(atan(1.0 / sqrt(fma(x, x, -1.0))), x) : asin(1.0 / x); }\n"
    /* cbrt (f64): one Newton step, its residual exact (refmath.c's accurate_cbrt) */
    "static __device__ __forceinline__ double pe_cbrt(double x) {\n"
    "  const double y = cbrt(x);\n"
    "  if (!(fabs(x) >= 2.2250738585072014e-308 && fabs(x) <= 1.7976931348623157e308)) return y;\n"
    "  const double y2 = y * y, r = fma(y2, y, -x) + fma(y, y, -y2) * y;\n"
    "  return y - r / (3.0 * y2); }\n"
    "static __device__ __forceinline__ bool pe_finite(double x) {\n"
    "  return fabs(x) < __longlong_as_double(0x7ff0000000000000LL); }\n"
    /* random draws: irformat/philox.h's words, unit interval and Box-Muller */
    "struct pe_words { unsigned w[4]; };\n"
    "static __device__ __forceinline__ pe_words pe_philox(long long i, int k0, int k1, int draw, int rounds) {\n"
    "  unsigned c0 = (unsigned)i, c1 = (unsigned)((unsigned long long)i >> 32), c2 = (unsigned)draw, c3 = 0u;\n"
    "  unsigned key0 = (unsigned)k0, key1 = (unsigned)k1;\n"
    "  for (int r = 0; r < rounds; r++) {\n"
    "    if (r > 0) { key0 += " PE_TEXT(PE_PHILOX_W0) "; key1 += " PE_TEXT(PE_PHILOX_W1) "; }\n"
    "    unsigned long long p0 = (unsigned long long)" PE_TEXT(PE_PHILOX_M0) " * c0;\n"
    "    unsigned long long p1 = (unsigned long long)" PE_TEXT(PE_PHILOX_M1) " * c2;\n"
    "    unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ key0, n2 = (unsigned)(p0 >> 32) ^ c3 ^ key1;\n"
    "    c1 = (unsigned)p1; c3 = (unsigned)p0; c0 = n0; c2 = n2; }\n"
    "  pe_words out = {{c0, c1, c2, c3}};\n"
    "  return out; }\n"
    "static __device__ __forceinline__ double pe_unit53(unsigned hi, unsigned lo) {\n"
    "  return ((double)(hi >> 5) * 67108864.0 + (double)(lo >> 6)) * 1.1102230246251565e-16; }\n"
    "static __device__ __forceinline__ double pe_uniform_f64(pe_words w) { return pe_unit53(w.w[0], w.w[1]); }\n"
    "static __device__ __forceinline__ double pe_normal(pe_words w) {\n"
    "  double u1 = 1.0 - pe_unit53(w.w[0], w.w[1]), u2 = pe_unit53(w.w[2], w.w[3]);\n"
    "  return sqrt(-2.0 * log(u1)) * cos(" PE_TEXT(PE_TWO_PI) " * u2); }\n";

/* exec/cuda/cuda_cdf_norm.cuh (the f32 normal CDF), embedded by the build, and
 * what that file asks of its includer. */
extern const char pe_cuda_cdf_source[];
static const char cdf_includer[] =
    "#define PE_CONSTANT static __constant__\n"
    "#define PE_DEVICE static __device__ __forceinline__\n"
    "#define pe_rcp_rn __frcp_rn\n"
    "#define pe_bits_of(d) ((unsigned long long)__double_as_longlong(d))\n"
    "#define pe_of_bits(u) __longlong_as_double((long long)(u))\n";

void pe_cu_emit_prelude(text *t) { put(t, "%s%s%s", prelude, cdf_includer, pe_cuda_cdf_source); }
