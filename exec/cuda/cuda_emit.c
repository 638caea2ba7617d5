/* cuda_emit.c — kernel IR to CUDA C (see cuda_emit.h for the launch
 * convention).  Each SSA value becomes a local; selects are ?: (the GPU
 * predicates them); math comes from CUDA's device library (expf, erfcf,
 * normcdf, ...), whose documented accuracy is within PE's 2-ulp contract for
 * f32 except where the CPU emitter, too, computes in double and rounds once
 * (composed ops, erf, erfc, rsqrt); f32 cdf_norm is PE's own
 * (cuda_cdf_norm.cuh).  Which ops, dtypes and reductions it emits, libm
 * names and how reductions accumulate are columns of
 * irformat/ops_codegen.def (codegen.h), as for the CPU generator; composed
 * ops reach it as primitives (kir_lower.c).  Element i of a STRIDED
 * parameter (broadcasts and views) is read through its index map, in
 * 64-bit arithmetic from i's coordinates: offset, strides (negative too),
 * clamps and wraps with shifts (element_index), so views run in kernels on
 * the GPU.  Reductions along an axis are kernels too (emit_axis_kernel:
 * those axis_reduction_emittable lists; pe_cuda_emit refuses others). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../jit/kir/codegen.h"
#include "cuda_emit.h"
#include "../../exec/base/grow.h"
#include "../../irformat/philox.h"

typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
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

/* The CUDA C type of an element (irformat/dtypes.def). */
static const char *ctype_name(pe_dtype t) { return pe_cuda_type_name(t); }

static bool is_float(pe_dtype t) { return pe_dtype_is_float(t); }

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
    /* (hi, lo) pairs of the reductions that are not sums or extremes: cuda_emit.c's FOLD_* */
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

typedef struct {
    text *t;
    const kir_kernel *k;
    bool has_tail[KIR_MAX_BODY]; /* tail<v> = pe_cdf_tail_f32(|v|) is emitted */
    bool lanes; /* the body of the vector loop: arrays are the lane arrays in<p>[L] / out<p>[L] */
    int pass;   /* an axis reduction's walk along its axis (var: 3, f64 norm2: 2); stores in the first only */
    int perturbed_op; /* PE_TEST_PERTURB_OP's op (tests only: codegen.c), else -1 */
} emitter;

/* Value v converted to type `to`. */
static void value_as(emitter *e, int v, pe_dtype to, char *out, size_t n)
{
    pe_dtype from = (pe_dtype)e->k->body[v].dtype;
    if (from == to) snprintf(out, n, "v%d", v);
    else if (to == PE_BOOL) snprintf(out, n, "(unsigned char)(v%d != 0)", v);
    else snprintf(out, n, "(%s)v%d", ctype_name(to), v);
}

/* v<j> of the instruction's operand j converted to the compute type. */
static void operand(emitter *e, const kir_inst *in, int j, pe_dtype to, char *out, size_t n)
{
    value_as(e, in->a[j], to, out, n);
}

/* cdf_norm(x) and cdf_norm(-x) share the tail T(|x|) (Black-Scholes' N(d)
 * and N(-d): half its FP64 work): the value whose magnitude the tail of
 * f32 cdf_norm(src) takes, emitted once per kernel.  NVRTC does not find
 * this itself. */
static int cdf_tail_of(emitter *e, int src)
{
    const kir_inst *s = &e->k->body[src];
    bool negation = s->kind == KIR_OP && s->op == PE_OP_neg && s->dtype == PE_F32 && s->ctype == PE_F32 &&
                    e->k->body[s->a[0]].dtype == PE_F32;
    int root = negation ? s->a[0] : src;
    if (!e->has_tail[root]) {
        char x[96];
        value_as(e, root, PE_F32, x, sizeof x);
        put(e->t, "    double tail%d = pe_cdf_tail_f32(fabsf(%s));\n", root, x);
        e->has_tail[root] = true;
    }
    return root;
}

/* Coordinate `axis` of element i in the kernel's iteration shape. */
static void coordinate(emitter *e, int axis, char *out, size_t n)
{
    long long inner = 1;
    for (int d = e->k->rank - 1; d > axis; d--) inner *= e->k->shape[d];
    snprintf(out, n, "(int)((i / %lldLL) %% %lldLL)", inner, (long long)e->k->shape[axis]);
}

/* The test-only fault, as the CPU generator's (gccjit_ops.c's perturbed):
 * value v wrong by a part in 128 (floats) or by one (i32, bool). */
static void perturb(emitter *e, int v, pe_dtype t)
{
    if (is_float(t)) put(e->t, "    v%d = v%d * (%s)(1.0 + 1.0 / 128);\n", v, v, ctype_name(t));
    else if (t == PE_BOOL) put(e->t, "    v%d = (unsigned char)!v%d;\n", v, v);
    else put(e->t, "    v%d = pe_wrap((unsigned)v%d + 1u);\n", v, v);
}

static void emit_op(emitter *e, int v, const kir_inst *in)
{
    text *t = e->t;
    pe_op op = (pe_op)in->op;
    pe_dtype ct = (pe_dtype)in->ctype, rt = (pe_dtype)in->dtype;
    bool cdf_f32 = op == PE_OP_cdf_norm && ct == PE_F32;
    if (ct == PE_F32 && pe_f32_in_double(op) && !cdf_f32) ct = PE_F64;
    const char *T = ctype_name(ct), *R = ctype_name(rt);
    const char *f = ct == PE_F32 ? "f" : "";
    char a[3][96];
    for (int j = 0; j < in->n; j++) {
        bool raw = (op == PE_OP_cond && j == 0) || op == PE_OP_cast;
        char promoted[80];
        if (raw) snprintf(a[j], sizeof a[j], "v%d", in->a[j]);
        else if (ct != in->ctype && e->k->body[in->a[j]].dtype != in->ctype) { /* rounded to the promoted f32 first */
            value_as(e, in->a[j], (pe_dtype)in->ctype, promoted, sizeof promoted);
            snprintf(a[j], sizeof a[j], "(%s)%s", ctype_name(ct), promoted);
        } else operand(e, in, j, ct, a[j], sizeof a[j]);
    }
    bool fl = is_float(ct);
    int tail = cdf_f32 ? cdf_tail_of(e, in->a[0]) : -1;
    /* a bool result is 0 or 1 whatever the arithmetic made (bool + bool in
     * a bool ctype is 1, not 2; the recorder promotes bool arithmetic to
     * i32, but the emitter takes the IR it is given, as the CPU's does) */
    if (rt == PE_BOOL) put(t, "    unsigned char v%d = (unsigned char)((", v);
    else put(t, "    %s v%d = (%s)(", R, v, R);
    switch (op) {
    case PE_OP_add: case PE_OP_sub: case PE_OP_mul: {
        char sym = op == PE_OP_add ? '+' : op == PE_OP_sub ? '-' : '*';
        if (fl) put(t, "%s %c %s", a[0], sym, a[1]);
        else put(t, "pe_wrap((unsigned)%s %c (unsigned)%s)", a[0], sym, a[1]);
        break;
    }
    case PE_OP_neg:
        if (fl) put(t, "-%s", a[0]);
        else put(t, "pe_wrap(0u - (unsigned)%s)", a[0]);
        break;
    case PE_OP_div:
        if (fl) put(t, "%s / %s", a[0], a[1]);
        else put(t, "pe_idiv(%s, %s)", a[0], a[1]);
        break;
    case PE_OP_mod:
        if (fl) put(t, "%s%s(%s, %s)", pe_libm_name(op), f, a[0], a[1]);
        else put(t, "pe_imod(%s, %s)", a[0], a[1]);
        break;
    case PE_OP_abs:
        if (fl) put(t, "%s%s(%s)", pe_libm_name(op), f, a[0]);
        else put(t, "%s < 0 ? pe_wrap(0u - (unsigned)%s) : %s", a[0], a[0], a[0]);
        break;
    case PE_OP_sign: /* NaN and signed zeros pass through */
        put(t, "%s > (%s)0 ? (%s)1 : %s < (%s)0 ? (%s)-1 : %s", a[0], T, T, a[0], T, T, a[0]);
        break;
    case PE_OP_min: put(t, "pe_min(%s, %s)", a[0], a[1]); break;
    case PE_OP_max: put(t, "pe_max(%s, %s)", a[0], a[1]); break;
    case PE_OP_fma: put(t, "%s%s(%s, %s, %s)", pe_libm_name(op), f, a[0], a[1], a[2]); break;
    case PE_OP_pow: case PE_OP_atan2: put(t, "%s%s(%s, %s)", pe_libm_name(op), f, a[0], a[1]); break;
    case PE_OP_rcp: put(t, "(%s)1 / %s", T, a[0]); break;
    case PE_OP_rsqrt: put(t, "(%s)1 / sqrt%s(%s)", T, f, a[0]); break;
    case PE_OP_cbrt:
        if (*f) put(t, "cbrtf(%s)", a[0]);
        else put(t, "pe_cbrt(%s)", a[0]); /* f64: refmath.c's accurate_cbrt */
        break;
    case PE_OP_exp: case PE_OP_exp2: case PE_OP_exp10: case PE_OP_expm1: case PE_OP_log: case PE_OP_log2:
    case PE_OP_log10: case PE_OP_log1p: case PE_OP_sqrt: case PE_OP_sin: case PE_OP_cos:
    case PE_OP_tan: case PE_OP_asin: case PE_OP_acos: case PE_OP_atan: case PE_OP_sinh: case PE_OP_cosh:
    case PE_OP_tanh: case PE_OP_asinh: case PE_OP_acosh: case PE_OP_atanh: case PE_OP_erf: case PE_OP_erfc:
    case PE_OP_floor: case PE_OP_ceil: case PE_OP_trunc: case PE_OP_round:
        put(t, "%s%s(%s)", pe_libm_name(op), f, a[0]);
        break;
    case PE_OP_asec: case PE_OP_acsc: put(t, "pe_%s(%s)", pe_op_table[op].name, a[0]); break; /* in double */
    case PE_OP_cdf_norm:
        if (cdf_f32) put(t, "pe_cdf_norm_f32(%s, tail%d)", a[0], tail);
        else put(t, "normcdf(%s)", a[0]);
        break;
    case PE_OP_isnan: put(t, "%s != %s", a[0], a[0]); break;
    case PE_OP_isinf: put(t, "fabs%s(%s) == (%s)__int_as_float(0x7f800000)", f, a[0], T); break;
    case PE_OP_isfinite: put(t, "fabs%s(%s) < (%s)__int_as_float(0x7f800000)", f, a[0], T); break;
    case PE_OP_lt: put(t, "%s < %s", a[0], a[1]); break;
    case PE_OP_le: put(t, "%s <= %s", a[0], a[1]); break;
    case PE_OP_gt: put(t, "%s > %s", a[0], a[1]); break;
    case PE_OP_ge: put(t, "%s >= %s", a[0], a[1]); break;
    case PE_OP_eq: put(t, "%s == %s", a[0], a[1]); break;
    case PE_OP_ne: put(t, "%s != %s", a[0], a[1]); break;
    case PE_OP_not: put(t, "!(%s != 0)", a[0]); break;
    case PE_OP_and: put(t, "(%s != 0) && (%s != 0)", a[0], a[1]); break;
    case PE_OP_or: put(t, "(%s != 0) || (%s != 0)", a[0], a[1]); break;
    case PE_OP_nand: put(t, "!((%s != 0) && (%s != 0))", a[0], a[1]); break;
    case PE_OP_nor: put(t, "!((%s != 0) || (%s != 0))", a[0], a[1]); break;
    case PE_OP_xor: put(t, "(%s != 0) != (%s != 0)", a[0], a[1]); break;
    case PE_OP_cond: put(t, "%s != 0 ? %s : %s", a[0], a[1], a[2]); break;
    case PE_OP_cast: {
        pe_dtype from = (pe_dtype)e->k->body[in->a[0]].dtype;
        if (rt == PE_I32 && is_float(from)) put(t, "pe_to_i32((double)%s)", a[0]);
        else if (rt == PE_BOOL) put(t, "%s != 0", a[0]); /* NaN is true */
        else put(t, "%s", a[0]);
        break;
    }
    case PE_OP_index: {
        char c[96];
        coordinate(e, in->a[0], c, sizeof c);
        put(t, "%s", c);
        break;
    }
    case PE_OP_concat: { /* the first part below its extent along the axis, else the second */
        char c[96];
        coordinate(e, in->a[2], c, sizeof c);
        put(t, "%s < %lldLL ? %s : %s", c, (long long)in->imm, a[0], a[1]);
        break;
    }
    case PE_OP_identity: {
        char r[96], c[96];
        coordinate(e, 0, r, sizeof r);
        coordinate(e, 1, c, sizeof c);
        put(t, "%s == %s", r, c);
        break;
    }
    case PE_OP_random_uniform: case PE_OP_random_normal: { /* irformat/philox.h: the key words raw */
        char w[160];
        snprintf(w, sizeof w, "pe_philox(i, v%d, v%d, v%d, %d)", in->a[0], in->a[1], in->a[2], (int)in->imm);
        if (op == PE_OP_random_normal) put(t, "pe_normal(%s)", w);
        else if (rt == PE_I32) put(t, "(int)%s.w[0]", w);
        else if (rt == PE_F32) put(t, "(float)(%s.w[0] >> 8) * 5.9604644775390625e-8f", w);
        else put(t, "pe_uniform_f64(%s)", w);
        break;
    }
    case PE_OP_conj: case PE_OP_real: put(t, "%s", a[0]); break; /* of a real operand */
    case PE_OP_imag: put(t, "(%s)0", T); break;
    case PE_OP_constant: { /* the pair lowering's immediate, bit-exact (infinities too) */
        unsigned long long bits;
        memcpy(&bits, &in->imm, sizeof bits);
        put(t, "__longlong_as_double(0x%016llxLL)", bits);
        break;
    }
    case PE_OP_root: /* emitted by neither generator (ops_codegen.def) */
    PE_CASES_INTERPRETED_ONLY
    PE_CASES_COMPOSED       /* lowered into primitives (kir_lower.c) */
    PE_CASES_NOT_ELEMENTWISE
#define PE_OP_INTRINSIC(name, fits, host, reference) case PE_OP_##name: /* library calls */
#include "../../irformat/ops_intrinsic.def"
        break;              /* pe_cuda_emit refuses such kernels (pe_kernel_generatable) */
    }
    put(t, rt == PE_BOOL ? ") != 0);\n" : ");\n");
}

/* Where a parameter's element of iteration element i lies in its buffer:
 * i itself, or a STRIDED parameter's index map (kir.h) in 64-bit
 * arithmetic: offset + sum over axes d of stride[d] * m_d(c[d]), c[d] the
 * coordinate of i, m_d clamping it into [lo, hi - 1] (hi > 0), then
 * taking (x + shift) mod wrap (wrap > 0), as the CPU generator does. */
static void element_index(emitter *e, const kir_param *p, char *out, size_t n)
{
    if (p->kind != KIR_IN_STRIDED) {
        snprintf(out, n, "i");
        return;
    }
    size_t len = (size_t)snprintf(out, n, "(%lldLL", (long long)p->offset);
    long long inner = 1;
    for (int d = e->k->rank - 1; d >= 0; d--) {
        if (p->stride[d] != 0 && len < n) {
            char x[64], clamped[128], wrapped[192]; /* each long enough for any int64 literals */
            const char *m = x;
            /* the outermost coordinate is below its extent already (i < n) */
            if (d > 0) snprintf(x, sizeof x, "(i / %lldLL) %% %lldLL", inner, (long long)e->k->shape[d]);
            else snprintf(x, sizeof x, "i / %lldLL", inner);
            if (p->hi[d] > 0) { /* clamped: never outside the array, whatever the other operand of a select */
                snprintf(clamped, sizeof clamped, "pe_clamp(%s, %lldLL, %lldLL)", m, (long long)p->lo[d], (long long)p->hi[d] - 1);
                m = clamped;
            }
            if (p->wrap[d] > 0) {
                snprintf(wrapped, sizeof wrapped, "((%s) + %lldLL) %% %lldLL", m, (long long)p->shift[d], (long long)p->wrap[d]);
                m = wrapped;
            }
            len += (size_t)snprintf(out + len, n - len, " + (%s) * (%lldLL)", m, (long long)p->stride[d]);
        }
        inner *= e->k->shape[d];
    }
    if (len < n) snprintf(out + len, n - len, ")");
}


static bool is_extreme(pe_op op) { return pe_reduction_is_extreme(op); }

/* Reductions along an axis it emits (emit_axis_kernel): every reduction of
 * the catalog but dot, of operands and results of every generated type
 * (axis_kind_of says how each accumulates). */
static bool axis_reduction_emittable(pe_op op, pe_dtype ctype, pe_dtype dtype)
{
    bool typed = ((PE_EMITS_ANY >> ctype) & 1u) && ((PE_EMITS_ANY >> dtype) & 1u);
    return typed && pe_op_table[op].kind == PE_KIND_REDUCE && op != PE_OP_dot;
}

/* Views are read through their index maps (element_index). */
const pe_fusion_rules pe_cuda_fusion_rules = {2, pe_cuda_can_emit, NULL, false, true, axis_reduction_emittable, NULL, NULL};
static bool is_min(pe_op op) { return pe_reduction_of(op)->acc == PE_ACC_MIN; }
static bool compensated(const kir_inst *r) { return r->ctype == PE_F64 && !is_extreme((pe_op)r->op); }

static void emit_reduce(emitter *e, const kir_inst *in)
{
    text *t = e->t;
    pe_op op = (pe_op)in->op;
    pe_dtype ct = (pe_dtype)in->ctype;
    char x0[96], x1[96];
    /* operands meet in ctype (dot), then widen exactly to double */
    pe_elem_kind element = (pe_elem_kind)pe_reduction_of(op)->element;
    if (element == PE_ELEM_PRODUCT) {
        operand(e, in, 1, ct, x0, sizeof x0);
        operand(e, in, 2, ct, x1, sizeof x1);
        put(t, "    { double x = (double)(%s) * (double)(%s);\n", x0, x1);
    } else {
        put(t, "    { double x = (double)v%d;\n", in->a[1]);
        if (element == PE_ELEM_ABS) put(t, "      x = fabs(x);\n");
        if (element == PE_ELEM_SQUARE) put(t, "      x = x * x;\n");
    }
    if (is_extreme(op)) put(t, "      if (pe_takes(acc, x, %s)) acc = x; }\n", is_min(op) ? "true" : "false");
    else if (compensated(in)) put(t, "      pe_two_sum(acc, comp, x); }\n");
    else put(t, "      acc += x; }\n");
}

/* How an axis reduction accumulates its elements, as reduce_one does
 * (exec/interp/interp.c): the full reductions' way (a double from the
 * ops_codegen.def column, f64 sums compensated: sum, mean, extremes,
 * norm1, norm2 but of f64); i32 sums and products wrapping (unsigned);
 * float products in double, uncompensated; any, all; the first index of
 * the extreme (argmax, argmin: the first NaN's wins); var and stddev in
 * three walks (the mean, the largest deviation, the scaled squares); f64
 * norm2 in two (the largest magnitude, the scaled squares). */
typedef enum { AX_COLUMN, AX_WRAP_SUM, AX_WRAP_PROD, AX_PROD, AX_ANY, AX_ALL, AX_ARG, AX_VAR, AX_SCALED_NORM2 } axis_kind;

/* The accumulation of reduction op computed in ctype, i32 sums, products
 * and dot wrapping where `wraps` (axis and full reductions alike). */
static axis_kind kind_of(pe_op op, pe_dtype ctype, bool wraps)
{
    switch (op) {
    case PE_OP_sum: case PE_OP_dot: return wraps ? AX_WRAP_SUM : AX_COLUMN;
    case PE_OP_prod: return wraps ? AX_WRAP_PROD : AX_PROD;
    case PE_OP_any: return AX_ANY;
    case PE_OP_all: return AX_ALL;
    case PE_OP_argmax: case PE_OP_argmin: return AX_ARG;
    case PE_OP_var: case PE_OP_stddev: return AX_VAR;
    case PE_OP_norm2: return ctype == PE_F64 ? AX_SCALED_NORM2 : AX_COLUMN; /* f32, i32 squares fit a double */
    default: return AX_COLUMN; /* mean, max, min, norm1, norminf */
    }
}

/* An axis reduction's: reduce_one's `integer` (an i32 result of an i32 compute type). */
static axis_kind axis_kind_of(const kir_inst *r)
{
    return kind_of((pe_op)r->op, (pe_dtype)r->ctype, r->ctype == PE_I32 && r->dtype == PE_I32);
}

static int axis_passes(axis_kind kind) { return kind == AX_VAR ? 3 : kind == AX_SCALED_NORM2 ? 2 : 1; }

/* Whether lanes' accumulators combine in a tree (emit_shuffle_tree): the
 * column's (a fixed order), and the order-free wrapping sum, any, all. */
static bool axis_combines(axis_kind kind) { return kind == AX_COLUMN || kind == AX_WRAP_SUM || kind == AX_ANY || kind == AX_ALL; }

/* The declaration of an accumulator that is one variable, axis and full
 * reductions alike: wrapped sums and products (unsigned), products, any, all. */
static const char *single_accumulator(axis_kind kind)
{
    switch (kind) {
    case AX_WRAP_SUM: return "unsigned acc = 0u;";
    case AX_WRAP_PROD: return "unsigned acc = 1u;";
    case AX_PROD: return "double acc = 1.0;";
    case AX_ANY: return "bool acc = false;";
    case AX_ALL: return "bool acc = true;";
    default: return "double acc = 0.0;";
    }
}

/* Element value v (of the axis reduction r, at position j along the axis)
 * into the accumulator, in walk e->pass. */
static void emit_axis_update(emitter *e, const kir_inst *r)
{
    text *t = e->t;
    int v = r->a[1];
    switch (axis_kind_of(r)) {
    case AX_COLUMN: emit_reduce(e, r); break;
    case AX_WRAP_SUM: put(t, "    acc += (unsigned)v%d;\n", v); break;
    case AX_WRAP_PROD: put(t, "    acc *= (unsigned)v%d;\n", v); break;
    case AX_PROD: put(t, "    acc *= (double)v%d;\n", v); break;
    case AX_ANY: put(t, "    if ((double)v%d != 0.0) acc = true;\n", v); break; /* NaN is true */
    case AX_ALL: put(t, "    if ((double)v%d == 0.0) acc = false;\n", v); break;
    case AX_ARG:
        put(t, "    if (!nan_at) { const double x = (double)v%d;\n"
               "      if (j == 0 || x != x) acc = x, at = j, nan_at = x != x;\n"
               "      else if (x %c acc) acc = x, at = j; }\n", v, r->op == PE_OP_argmax ? '>' : '<');
        break;
    case AX_VAR:
        if (e->pass == 0) put(t, "    pe_two_sum(acc, comp, (double)v%d);\n", v);
        if (e->pass == 1) put(t, "    { const double d = fabs((double)v%d - mean); if (!(d <= largest)) largest = d; }\n", v);
        if (e->pass == 2) put(t, "    { const double d = ldexp((double)v%d - mean, -ex); pe_two_sum(acc, comp, d * d); }\n", v);
        break;
    case AX_SCALED_NORM2:
        if (e->pass == 0) put(t, "    { const double m = fabs((double)v%d); if (m != m) nan = true; if (m > scale) scale = m; }\n", v);
        else put(t, "    { const double m = (double)v%d / scale; pe_two_sum(acc, comp, m * m); }\n", v);
        break;
    }
}

/* How a full (all-element) reduction accumulates: the column's double (sum,
 * mean, extremes, norms but f64 norm2: emit_reduce), as an axis
 * reduction's accumulator (wrapping i32 sums, products and dot; float
 * products; any; all; argmax and argmin, by flat index), or in several
 * walks over each chunk (var, stddev, f64 norm2: emit_multi_walk_kernel). */
static axis_kind full_kind_of(const kir_inst *r)
{
    return kind_of((pe_op)r->op, (pe_dtype)r->ctype, pe_reduction_wraps((pe_op)r->op, (pe_dtype)r->ctype));
}

/* Element value(s) of the full reduction r into the thread's accumulator.
 * A thread's elements are not contiguous (the block strides over its
 * chunk), so argmax and argmin break ties by the smaller flat index i, and
 * the smaller index's NaN wins: whatever order elements meet in, the first
 * index of the extreme (or the first NaN) is kept. */
static void emit_full_update(emitter *e, const kir_inst *r)
{
    text *t = e->t;
    int v = r->a[1];
    switch (full_kind_of(r)) {
    case AX_COLUMN: emit_reduce(e, r); return;
    case AX_WRAP_SUM:
        if (pe_reduction_of((pe_op)r->op)->element == PE_ELEM_PRODUCT) /* i32 dot: the products wrap too */
            put(t, "    acc += (unsigned)v%d * (unsigned)v%d;\n", v, r->a[2]);
        else
            put(t, "    acc += (unsigned)v%d;\n", v);
        return;
    case AX_ARG:
        put(t, "    { const double x = (double)v%d;\n"
               "      if (pe_arg_takes(acc, at, x, (double)i, %s)) acc = x, at = (double)i; }\n",
            v, r->op == PE_OP_argmin ? "true" : "false");
        return;
    default: emit_axis_update(e, r); return;
    }
}

/* The accumulator of a full reduction r that is not the column's, as two
 * doubles (hi, lo) for the block's tree and the partials: a wrapped sum or
 * product (an unsigned, exact in a double), a product, any or all (1 or
 * 0), the extreme and its flat index (-1: none yet). */
static void emit_full_state(text *t, const kir_inst *r)
{
    axis_kind kind = full_kind_of(r);
    if (kind == AX_ARG) put(t, "  double acc = 0.0, at = -1.0;\n");
    else put(t, "  %s\n", single_accumulator(kind));
}

/* The accumulator as the pair (hi, lo) the block's tree and the partials hold. */
static void emit_full_pair(text *t, const kir_inst *r)
{
    switch (full_kind_of(r)) {
    case AX_ANY: case AX_ALL: put(t, "  double hi = acc ? 1.0 : 0.0, lo = 0.0;\n"); break;
    case AX_ARG: put(t, "  double hi = acc, lo = at;\n"); break;
    case AX_WRAP_SUM: case AX_WRAP_PROD: put(t, "  double hi = (double)acc, lo = 0.0;\n"); break;
    default: put(t, "  double hi = acc, lo = 0.0;\n"); break;
    }
}

/* The combining kinds shared by the block trees and the combiner kernel
 * (pe_fold in the prelude), as the combiner's parameter 5 says: */
enum { FOLD_PROD = 1, FOLD_WRAP_SUM, FOLD_WRAP_PROD, FOLD_ANY, FOLD_ALL, FOLD_ARGMAX, FOLD_ARGMIN };
_Static_assert(FOLD_PROD == 1 && FOLD_WRAP_SUM == 2 && FOLD_WRAP_PROD == 3 && FOLD_ANY == 4 && FOLD_ALL == 5 &&
                   FOLD_ARGMAX == 6 && FOLD_ARGMIN == 7,
               "pe_fold's cases in the prelude");
static int fold_of(const kir_inst *r)
{
    switch (full_kind_of(r)) {
    case AX_PROD: return FOLD_PROD;
    case AX_WRAP_SUM: return FOLD_WRAP_SUM;
    case AX_WRAP_PROD: return FOLD_WRAP_PROD;
    case AX_ANY: return FOLD_ANY;
    case AX_ALL: return FOLD_ALL;
    case AX_ARG: return r->op == PE_OP_argmin ? FOLD_ARGMIN : FOLD_ARGMAX;
    default: return 0;
    }
}

/* A gather's element: the array at the index when it lies in [0, extent),
 * else element 0 (never outside the array) with the kernel's flag set (any
 * thread may store the same 1; the executor reads the flag after the kernel
 * and has the interpreter report the index), as the CPU generator does. */
static void emit_gather(emitter *e, int v, const kir_inst *in)
{
    const kir_param *array = &e->k->params[in->a[0]];
    const char *T = ctype_name((pe_dtype)in->dtype);
    put(e->t, "    const long long j%d = (long long)v%d;\n", v, in->a[1]);
    put(e->t, "    const bool inside%d = (unsigned long long)j%d < %lldULL;\n", v, v, (long long)array->extent);
    put(e->t, "    if (!inside%d) *(unsigned *)a.p[%d].ptr = 1u;\n", v, in->a[2]);
    put(e->t, "    %s v%d = ((const %s *)a.p[%d].ptr)[inside%d ? j%d : 0LL];\n", T, v, ctype_name((pe_dtype)array->dtype), in->a[0], v, v);
}

/* Element `idx` of parameter q as access `in` reads or writes it: a
 * complex array is an array of its parts (kir.h), re at 2 idx, im at 2 idx + 1. */
static void part_index(const kir_param *q, const kir_inst *in, const char *idx, char *out, size_t n)
{
    if (pe_dtype_is_complex((pe_dtype)q->dtype)) snprintf(out, n, "2LL * (%s) + %d", idx, (int)in->imm);
    else snprintf(out, n, "%s", idx);
}

static void emit_body(emitter *e)
{
    const kir_kernel *k = e->k;
    for (int v = 0; v < k->n_body; v++) {
        const kir_inst *in = &k->body[v];
        if (in->kind == KIR_LOAD) {
            const kir_param *q = &k->params[in->a[0]];
            const char *T = ctype_name((pe_dtype)in->dtype);
            if (q->kind == KIR_IN_LITERAL) { /* compiled in, bit-exact (NaN and infinities too) */
                if (q->dtype == PE_F32) {
                    float f = (float)q->value;
                    uint32_t bits;
                    memcpy(&bits, &f, sizeof bits);
                    put(e->t, "    %s v%d = (%s)__int_as_float(0x%08x);\n", T, v, T, bits);
                } else if (q->dtype == PE_F64) {
                    uint64_t bits;
                    memcpy(&bits, &q->value, sizeof bits);
                    put(e->t, "    %s v%d = (%s)__longlong_as_double(0x%016llxLL);\n", T, v, T, (unsigned long long)bits);
                } else {
                    put(e->t, "    %s v%d = (%s)%lld;\n", T, v, T, (long long)q->value);
                }
            } else if (q->kind == KIR_IN_SCALAR) {
                put(e->t, "    %s v%d = (%s)a.p[%d].value;\n", T, v, T, in->a[0]);
            } else if (e->lanes && q->kind == KIR_IN_CONTIG) {
                put(e->t, "    %s v%d = (%s)in%d[L];\n", T, v, T, in->a[0]);
            } else {
                char idx[1024], at[1100];
                element_index(e, q, idx, sizeof idx);
                part_index(q, in, idx, at, sizeof at);
                put(e->t, "    %s v%d = (%s)((const %s *)a.p[%d].ptr)[%s];\n", T, v, T,
                    ctype_name(pe_dtype_real_part((pe_dtype)q->dtype)), in->a[0], at);
            }
        } else if (in->kind == KIR_STORE) {
            const kir_param *q = &k->params[in->a[0]];
            if (e->pass > 0) continue; /* an axis reduction's later walk: stored already */
            if (e->lanes) put(e->t, "    out%d[L] = v%d;\n", in->a[0], in->a[1]);
            else {
                char at[64];
                part_index(q, in, "i", at, sizeof at);
                put(e->t, "    ((%s *)a.p[%d].ptr)[%s] = v%d;\n", ctype_name(pe_dtype_real_part((pe_dtype)q->dtype)), in->a[0], at,
                    in->a[1]);
            }
        } else if (in->kind == KIR_REDUCE) {
            if (k->axis_reduction) emit_axis_update(e, in);
            else emit_full_update(e, in);
        } else if (in->kind == KIR_GATHER) {
            emit_gather(e, v, in);
        } else {
            emit_op(e, v, in);
            if (__builtin_expect(in->op == e->perturbed_op, 0)) perturb(e, v, (pe_dtype)in->dtype);
        }
    }
}

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
    emit_body(e);
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

/* Lane l combines lane l + d's accumulator into its own, d = from, from/2,
 * ..., 1: lane 0 ends with the lanes' [0, 2 from) in a fixed order. */
static void emit_shuffle_tree(text *t, const kir_inst *r, int from)
{
    pe_op op = (pe_op)r->op;
    put(t, "  for (int d = %d; d > 0; d >>= 1) {\n", from);
    put(t, "    double o = __shfl_down_sync(0xffffffffu, acc, d);\n");
    if (is_extreme(op))
        put(t, "    if (pe_takes(acc, o, %s)) acc = o;\n", is_min(op) ? "true" : "false");
    else if (compensated(r))
        put(t, "    comp += __shfl_down_sync(0xffffffffu, comp, d);\n    pe_two_sum(acc, comp, o);\n");
    else
        put(t, "    acc += o;\n");
    put(t, "  }\n");
}

int pe_cuda_threads_per_result(const kir_kernel *k)
{
    const kir_inst *r = k->axis_reduction ? kir_reduction_of(k) : NULL;
    bool warp = r && axis_combines(axis_kind_of(r)) && k->reduce_axis == k->rank - 1 &&
                k->shape[k->reduce_axis] >= PE_CUDA_AXIS_WARP_MIN;
    return warp ? 32 : 1;
}

/* A result's accumulator, by axis_kind. */
static void emit_axis_state(text *t, const kir_inst *r)
{
    double start = pe_reduction_of((pe_op)r->op)->identity;
    switch (axis_kind_of(r)) {
    case AX_COLUMN:
        put(t, "    double acc = %s, comp = 0.0;\n", start == 0 ? "0.0" : start > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                                                                                      : "__longlong_as_double(0xfff0000000000000LL)");
        break;
    case AX_WRAP_SUM: case AX_WRAP_PROD: case AX_PROD: case AX_ANY: case AX_ALL:
        put(t, "    %s\n", single_accumulator(axis_kind_of(r)));
        break;
    case AX_ARG: put(t, "    double acc = 0.0; long long at = 0; bool nan_at = false;\n"); break;
    case AX_VAR: put(t, "    double acc = 0.0, comp = 0.0, mean = 0.0, largest = 0.0; int ex = 0;\n"); break;
    case AX_SCALED_NORM2: put(t, "    double acc = 0.0, comp = 0.0, scale = 0.0; bool nan = false;\n"); break;
    }
}

/* What walk `pass` (> 0) of an axis reduction starts from. */
static void emit_axis_between(text *t, const kir_inst *r, int pass, long long len)
{
    if (axis_kind_of(r) == AX_VAR && pass == 1)
        put(t, "    mean = (pe_finite(acc) ? acc + comp : acc) / %lld.0;\n", len);
    if (axis_kind_of(r) == AX_VAR && pass == 2) /* deviations scaled by a power of two: squares neither overflow nor underflow */
        put(t, "    ex = largest > 0.0 && pe_finite(largest) ? ilogb(largest) : 0;\n    acc = 0.0, comp = 0.0;\n");
}

/* Lane 0 of a warp combines the lanes' accumulators (lane l takes lane
 * l + 16, + 8, ..., + 1: a fixed order; the wrapping sum, any and all
 * are order-free).  Every lane shuffles, whatever it holds. */
static void emit_axis_tree(text *t, const kir_inst *r)
{
    axis_kind kind = axis_kind_of(r);
    if (kind == AX_COLUMN) {
        emit_shuffle_tree(t, r, 16);
        return;
    }
    put(t, "  for (int d = 16; d > 0; d >>= 1) {\n");
    if (kind == AX_WRAP_SUM) put(t, "    acc += __shfl_down_sync(0xffffffffu, acc, d);\n");
    else put(t, "    const int o = __shfl_down_sync(0xffffffffu, (int)acc, d);\n    acc = acc %s o;\n", kind == AX_ANY ? "||" : "&&");
    put(t, "  }\n");
}

/* Result o's value from its accumulator over `len` elements, stored, as
 * reduce_one finishes it: a compensation added where the sum is finite,
 * the mean divided, roots, the scales put back; converted to the result
 * type once, as the interpreter stores it (i32: saturated, NaN 0). */
static void emit_axis_store(text *t, const kir_kernel *k, const kir_inst *r, const char *in)
{
    pe_op op = (pe_op)r->op;
    long long len = (long long)k->shape[k->reduce_axis];
    switch (axis_kind_of(r)) {
    case AX_WRAP_SUM: case AX_WRAP_PROD:
        put(t, "%s((int *)a.p[%d].ptr)[o] = pe_wrap(acc);\n", in, r->a[0]);
        return;
    case AX_COLUMN:
        put(t, "%sdouble v = acc;\n", in);
        if (!is_extreme(op)) put(t, "%sif (pe_finite(acc)) v = acc + comp;\n", in);
        if (op == PE_OP_mean) put(t, "%sv = v / %lld.0;\n", in, len);
        if (op == PE_OP_norm2) put(t, "%sv = sqrt(v);\n", in);
        break;
    case AX_PROD: put(t, "%sdouble v = acc;\n", in); break;
    case AX_ANY: case AX_ALL: put(t, "%sdouble v = acc ? 1.0 : 0.0;\n", in); break;
    case AX_ARG: put(t, "%sdouble v = (double)at;\n", in); break;
    case AX_VAR:
        put(t, "%sconst double scaled = (pe_finite(acc) ? acc + comp : acc) / %lld.0;\n", in, len);
        if (op == PE_OP_var) put(t, "%sdouble v = ldexp(scaled, 2 * ex);\n", in);
        else put(t, "%sdouble v = ldexp(sqrt(scaled), ex);\n", in);
        break;
    case AX_SCALED_NORM2:
        put(t, "%sdouble v = nan ? __longlong_as_double(0x7ff8000000000000LL) : scale == 0.0 || !pe_finite(scale) ? scale\n"
               "%s  : scale * sqrt(pe_finite(acc) ? acc + comp : acc);\n", in, in);
        break;
    }
    pe_dtype rt = (pe_dtype)r->dtype;
    const char *R = ctype_name(rt);
    const char *conv = rt == PE_I32 ? "pe_to_i32(v)" : rt == PE_BOOL ? "v != 0.0" : "v";
    put(t, "%s((%s *)a.p[%d].ptr)[o] = (%s)(%s);\n", in, R, r->a[0], R, conv);
}

/* A reduction along an axis (kir.h: the iteration shape is the operand's,
 * [0, n) counts results): any grid, a grid-stride loop over the results.
 * Result o reads the elements base + j * inner, j along the axis, inner
 * the extent of the axes after it.  The order each result is accumulated
 * in is fixed by the kernel alone, never by the launch, so results are
 * bitwise the same for any grid, block size and GPU:
 *  - along the last axis, at least PE_CUDA_AXIS_WARP_MIN long, where lanes
 *    combine (axis_combines): a warp per result (pe_cuda_threads_per_result),
 *    coalesced: element j goes to lane j mod 32, which accumulates its
 *    elements in order; then the tree of emit_axis_tree, and lane 0 stores;
 *  - otherwise a thread per result, its elements in order, in as many walks
 *    as the reduction takes (axis_passes; along an outer axis consecutive
 *    threads read consecutive elements: coalesced).
 * The first walk visits every element of the iteration space once, so the
 * stores of fused producers are the element-wise kernel's. */
static void emit_axis_kernel(emitter *e, const char *name)
{
    text *t = e->t;
    const kir_kernel *k = e->k;
    const kir_inst *r = kir_reduction_of(k);
    axis_kind kind = axis_kind_of(r);
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
        emit_axis_state(t, r);
        put(t, "  for (long long j = lane; j < %lldLL; j += 32) {\n", len);
        put(t, "    const long long i = o * %lldLL + j;\n", len);
        emit_body(e);
        put(t, "  }\n");
        emit_axis_tree(t, r);
        put(t, "  if (lane == 0) {\n");
        emit_axis_store(t, k, r, "    ");
        put(t, "  }\n  }\n}\n");
        return;
    }
    put(t, "  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;\n");
    put(t, "  for (long long o = first; o < n; o += stride) {\n");
    if (inner == 1) put(t, "    const long long base = o * %lldLL;\n", len);
    else put(t, "    const long long base = o / %lldLL * %lldLL + o %% %lldLL;\n", inner, len * inner, inner);
    emit_axis_state(t, r);
    for (e->pass = 0; e->pass < axis_passes(kind); e->pass++) {
        emit_axis_between(t, r, e->pass, len);
        if (kind == AX_SCALED_NORM2 && e->pass == 1) put(t, "  if (!nan && scale > 0.0 && pe_finite(scale))\n");
        put(t, "  for (long long j = 0; j < %lldLL; j++) {\n", len);
        put(t, "    const long long i = base + j * %lldLL;\n", inner);
        emit_body(e);
        memset(e->has_tail, 0, sizeof e->has_tail); /* those were this walk's */
        put(t, "  }\n");
    }
    e->pass = 0;
    emit_axis_store(t, k, r, "    ");
    put(t, "  }\n}\n");
}

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
static void emit_multi_walk_kernel(emitter *e, const char *name, const kir_inst *r)
{
    text *t = e->t;
    int width = KIR_PARTIAL_WIDE;
    bool var = full_kind_of(r) == AX_VAR;
    put(t, "extern \"C\" __global__ void __launch_bounds__(%d) %s(long long n, pe_cuda_args a) {\n",
        PE_CUDA_REDUCE_THREADS, name);
    put(t, "  __shared__ double sh_hi[%d], sh_lo[%d];\n", PE_CUDA_REDUCE_THREADS / 32, PE_CUDA_REDUCE_THREADS / 32);
    put(t, "  const long long begin = (long long)blockIdx.x * %dLL;\n", KIR_REDUCE_CHUNK);
    put(t, "  const long long end = n < begin + %dLL ? n : begin + %dLL;\n", KIR_REDUCE_CHUNK, KIR_REDUCE_CHUNK);
    emit_axis_state(t, r);
    const char *walk = "  for (long long i = begin + threadIdx.x; i < end; i += %d) {\n";
    for (e->pass = 0; e->pass < axis_passes(full_kind_of(r)); e->pass++) {
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
        emit_body(e);
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

static void emit_kernel(text *t, const kir_kernel *k)
{
    emitter e = {.t = t, .k = k, .perturbed_op = pe_codegen_perturbed_op()};
    char name[48];
    kir_kernel_name(k, name, sizeof name);
    const kir_inst *r = kir_reduction_of(k);
    if (k->axis_reduction) {
        emit_axis_kernel(&e, name);
        return;
    }
    if (!r) {
        put(t, "extern \"C\" __global__ void %s(long long n, pe_cuda_args a) {\n", name);
        put(t, "  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;\n"
               "  long long start = 0;\n");
        if (vectorised(k)) emit_vector_loop(&e, "first", "n / 4", "stride");
        put(t, "  for (long long i = start + first; i < n; i += stride) {\n");
        emit_body(&e);
        put(t, "  }\n}\n");
        return;
    }
    if (axis_passes(full_kind_of(r)) > 1) {
        emit_multi_walk_kernel(&e, name, r);
        return;
    }
    pe_op op = (pe_op)r->op;
    double start = pe_reduction_of(op)->identity;
    int warps = PE_CUDA_REDUCE_THREADS / 32, fold = fold_of(r);
    put(t, "extern \"C\" __global__ void __launch_bounds__(%d) %s(long long n, pe_cuda_args a) {\n",
        PE_CUDA_REDUCE_THREADS, name);
    put(t, "  __shared__ double sh_hi[%d], sh_lo[%d];\n", warps, warps);
    put(t, "  const long long begin = (long long)blockIdx.x * %dLL;\n", KIR_REDUCE_CHUNK);
    put(t, "  const long long end = n < begin + %dLL ? n : begin + %dLL;\n", KIR_REDUCE_CHUNK, KIR_REDUCE_CHUNK);
    if (fold) emit_full_state(t, r);
    else put(t, "  double acc = %s, comp = 0.0;\n", start == 0 ? "0.0" : start > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                                                                                      : "__longlong_as_double(0xfff0000000000000LL)");
    put(t, "  long long start = begin;\n");
    if (vectorised(k)) { /* the chunk's groups of 4 (a chunk starts at a multiple of 4) */
        char step[16];
        snprintf(step, sizeof step, "%d", PE_CUDA_REDUCE_THREADS);
        emit_vector_loop(&e, "begin / 4 + threadIdx.x", "end / 4", step);
    }
    put(t, "  for (long long i = start + threadIdx.x; i < end; i += %d) {\n", PE_CUDA_REDUCE_THREADS);
    emit_body(&e);
    put(t, "  }\n");
    if (fold) { /* the same fixed trees over (hi, lo) pairs, combined by pe_fold */
        emit_full_pair(t, r);
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
    emit_shuffle_tree(t, r, 16);
    put(t, "  if ((threadIdx.x & 31) == 0) sh_hi[threadIdx.x >> 5] = acc, sh_lo[threadIdx.x >> 5] = comp;\n");
    put(t, "  __syncthreads();\n");
    put(t, "  if (threadIdx.x >= 32) return;\n");
    put(t, "  acc = sh_hi[threadIdx.x %% %d], comp = sh_lo[threadIdx.x %% %d];\n", warps, warps);
    emit_shuffle_tree(t, r, warps / 2);
    put(t, "  if (threadIdx.x == 0) {\n");
    put(t, "    ((double *)a.p[%d].ptr)[2 * blockIdx.x] = acc;\n", r->a[0]);
    put(t, "    ((double *)a.p[%d].ptr)[2 * blockIdx.x + 1] = comp;\n  }\n}\n", r->a[0]);
}

/* The combiner's branch for the multi-walk reductions' chunk statistics
 * (emit_multi_walk_kernel): thread 0 alone, in chunk order, the steps of
 * exec/cpu/partials.c's variance and scaled_norm2 (a chunk's mean minus the
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
 * reduction takes is compiled in (pe_fold_of, from fold_of; pe_chunk_statistics,
 * from kir_partial_width), so that the
 * executor passes what the kernel's instruction says and knows no more. */
static void emit_combiner(text *t)
{
    int warps = PE_CUDA_REDUCE_THREADS / 32;
    put(t, "static __device__ int pe_fold_of(int op, int ct) {\n");
    for (int op = 0; op < PE_OP__COUNT; op++) {
        if (pe_op_table[op].kind != PE_KIND_REDUCE) continue;
        for (int ct = PE_F32; ct <= PE_BOOL; ct++) {
            kir_inst r = {.kind = KIR_REDUCE, .op = (uint8_t)op, .ctype = (uint8_t)ct, .dtype = PE_F64};
            int f = fold_of(&r);
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
    put(&t, "%s%s%s", prelude, cdf_includer, pe_cuda_cdf_source);
    bool reductions = false;
    for (size_t i = 0; i < n; i++) {
        emit_kernel(&t, kernels[i]);
        reductions |= kir_reduction_of(kernels[i]) != NULL && !kernels[i]->axis_reduction;
    }
    if (reductions) emit_combiner(&t);
    if (t.oom) {
        free(t.s);
        return NULL;
    }
    return t.s;
}
