/* test_cuda_on_host.c — the CUDA emitter's kernels run on the host, no GPU
 * and no NVRTC needed: the host's C++ compiler builds the emitted source
 * with tests/cuda_on_host.hpp standing in for CUDA (device library = libm;
 * element-wise kernels thread after thread, reductions with each block's
 * threads running together), and every value is checked against the
 * reference math (exec/interp/refmath.c), a C loop or long double. */
#include "cuda_test_kernels.h"

#include <unistd.h>

#include "exec/base/executor.h"
#include "exec/interp/refmath.h"
#include "irformat/philox.h"
#include "exec/base/runtime.h"

#include "exec/cpu/cpu.h"
#include "cuda_host_run.h"

static double get(const void *p, pe_dtype t, int64_t i)
{
    switch (t) {
    case PE_F32: return ((const float *)p)[i];
    case PE_F64: return ((const double *)p)[i];
    case PE_I32: return ((const int32_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

static void set(void *p, pe_dtype t, int64_t i, double v)
{
    switch (t) {
    case PE_F32: ((float *)p)[i] = (float)v; break;
    case PE_F64: ((double *)p)[i] = v; break;
    case PE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    default: ((uint8_t *)p)[i] = v != 0; break;
    }
}

/* Operand j's value i: in the domain most ops accept, some negatives. */
static double operand_value(pe_dtype t, int j, int64_t i)
{
    unsigned h = (unsigned)(i * 2654435761u + (unsigned)j * 40503u);
    double u = (double)(h % 100000) / 100000.0;
    if (t == PE_BOOL) return (h >> 7) & 1;
    if (t == PE_I32) return (double)((int)(h % 101) - 50);
    double x = j == 0 ? 0.05 + 0.9 * u : 0.5 + 1.5 * u;
    return i % 7 == 3 ? -x : x;
}

/* Distance of got from want in ulps of type t; exact types: 0 or infinite. */
static double distance(double got, double want, pe_dtype t)
{
    if (t == PE_I32 || t == PE_BOOL) return got == want ? 0 : INFINITY;
    return tu_ulps_at(got, want, t);
}

/* Runs map kernel k (inputs CONTIG params 0..arity-1, output the last) on
 * the host and compares each value with the reference; returns the largest
 * distance seen in ulps (exact types: 0 or infinity). */
static double run_map_on_host(void *lib, const kir_kernel *k, int64_t n, unsigned grid, unsigned block)
{
    const kir_inst *op = &k->body[k->n_body - 2];
    pe_dtype ct = (pe_dtype)op->ctype, rt = (pe_dtype)op->dtype;
    int arity = k->n_params - 1;
    void *buf[4];
    pe_cuda_args args = {0};
    for (int j = 0; j <= arity; j++) {
        pe_dtype t = (pe_dtype)k->params[j].dtype;
        buf[j] = calloc((size_t)n, pe_dtype_size(t));
        assert_non_null(buf[j]);
        for (int64_t i = 0; j < arity && i < n; i++) set(buf[j], t, i, operand_value(t, j, i));
        args.p[j].ptr = (unsigned long long)(uintptr_t)buf[j];
    }
    host_launch(lib, k, n, &args, grid, block);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double x[3] = {0, 0, 0};
        for (int j = 0; j < arity; j++) x[j] = get(buf[j], ct, i);
        double want;
        if (op->op == PE_OP_cast) want = pe_ref_round_to(rt, x[0]);
        else if (ct == PE_I32 && pe_ref_is_integer_op((pe_op)op->op))
            want = pe_ref_round_to(rt, pe_ref_map_i32((pe_op)op->op, (int32_t)x[0], (int32_t)x[1], (int32_t)x[2]));
        else want = pe_ref_round_to(rt, pe_ref_map((pe_op)op->op, x[0], x[1], x[2]));
        double d = distance(get(buf[arity], rt, i), want, rt);
        if (d > worst) worst = d;
    }
    for (int j = 0; j <= arity; j++) free(buf[j]);
    return worst;
}

static void test_every_map_op_runs_on_the_host(void **state)
{
    (void)state;
    kernel_list l = map_kernels();
    char *src = emit_all(&l);
    void *lib = host_build(src);
    double worst[4] = {0};
    int failed = 0;
    for (size_t i = 0; i < l.n; i++) {
        const kir_inst *op = &l.k[i].body[l.k[i].n_body - 2];
        pe_dtype rt = (pe_dtype)op->dtype;
        /* 1003 elements over 3 blocks of 32 threads: each thread strides */
        double d = run_map_on_host(lib, &l.k[i], 1003, 3, 32);
        double allowed = rt == PE_F32 ? 4 : rt == PE_F64 ? 8 : 0;
        if (d > allowed) {
            fprintf(stderr, "%s: ctype %d -> %d: %g ulp from the reference\n", pe_op_table[op->op].name, op->ctype, rt, d);
            failed++;
        }
        if (d > worst[rt]) worst[rt] = d;
    }
    printf("%zu element-wise kernels run on the host: at most %g ulp (f32), %g ulp (f64), i32 and bool %s\n", l.n,
           worst[PE_F32], worst[PE_F64], worst[PE_I32] + worst[PE_BOOL] == 0 ? "exact" : "NOT EXACT");
    assert_int_equal(failed, 0);
    dlclose(lib);
    free(src), free(l.k);
}

/* Element i of a buffer of t as a complex value (a real t: imaginary 0). */
static double _Complex complex_at(const void *buf, pe_dtype t, int64_t i)
{
    if (!pe_dtype_is_complex(t)) return __builtin_complex(get(buf, t, i), 0.0);
    pe_dtype part = pe_dtype_real_part(t);
    return __builtin_complex(get(buf, part, 2 * i), get(buf, part, 2 * i + 1));
}

/* Each part of got as want's: NaN as NaN, an infinity itself, a finite
 * part within k_u |want| (|want| over its finite parts). */
static bool complex_parts_agree(double _Complex got, double _Complex want, double k_u)
{
    double g[2] = {__real__ got, __imag__ got}, w[2] = {__real__ want, __imag__ want};
    double size = hypot(isfinite(w[0]) ? w[0] : 0, isfinite(w[1]) ? w[1] : 0);
    for (int p = 0; p < 2; p++) {
        if (isnan(w[p]) || isnan(g[p]) ? !(isnan(w[p]) && isnan(g[p]))
            : isinf(w[p]) || isinf(g[p]) ? g[p] != w[p]
                                           : !(fabs(g[p] - w[p]) <= k_u * size))
            return false;
    }
    return true;
}

/* Operand j's element i: magnitudes in [0.25, 4] at every angle, and
 * every 13th a signed zero, a negative real or a pure imaginary value. */
static double _Complex complex_operand(int j, int64_t i)
{
    unsigned h = (unsigned)(i * 2654435761u + (unsigned)j * 40503u);
    double r = exp2(-2 + 4 * (double)(h % 10007) / 10007.0), t = -3.14159 + 6.28318 * (double)((h >> 14) % 10009) / 10009.0;
    switch (i % 13) {
    case 3: return __builtin_complex(-0.0, j ? 0.0 : -0.0);
    case 7: return __builtin_complex(-r, 0.0);
    case 11: return __builtin_complex(0.0, -r);
    default: return __builtin_complex(r * cos(t), r * sin(t));
    }
}

/* The complex kernels (cuda_test_kernels.h) run on the host against the
 * interpreter's complex math (exec/interp/complexmath.c, the oracle),
 * normwise: c64 computed in double and rounded once per part, c128 within
 * a few u (libm's cexp, clog, csqrt and hypot against the lowering's real
 * formulas; pow's error grows with |w log z|). */
static void test_complex_ops_run_on_the_host(void **state)
{
    (void)state;
    kernel_list l = complex_kernels();
    char *src = emit_all(&l);
    void *lib = host_build(src);
    const int64_t n = 517;
    int failed = 0;
    for (size_t c = 0; c < l.n; c++) {
        const kir_kernel *k = &l.k[c];
        const kir_inst *op = &k->body[k->n_body - 2];
        int arity = k->n_params - 1;
        pe_dtype ct = (pe_dtype)op->ctype, rt = (pe_dtype)op->dtype;
        void *buf[4];
        pe_cuda_args args = {0};
        for (int j = 0; j <= arity; j++) {
            pe_dtype t = (pe_dtype)k->params[j].dtype;
            buf[j] = calloc((size_t)n, pe_dtype_size(t));
            assert_non_null(buf[j]);
            for (int64_t i = 0; j < arity && i < n; i++) {
                double _Complex z = complex_operand(j, i);
                if (t == PE_BOOL) set(buf[j], t, i, (double)(i % 3 == 0));
                else if (!pe_dtype_is_complex(t)) set(buf[j], t, i, __real__ z);
                else set(buf[j], pe_dtype_real_part(t), 2 * i, __real__ z), set(buf[j], pe_dtype_real_part(t), 2 * i + 1, __imag__ z);
            }
            args.p[j].ptr = (unsigned long long)(uintptr_t)buf[j];
        }
        host_launch(lib, k, n, &args, 3, 32);
        double u = pe_dtype_real_part(rt) == PE_F32 || pe_dtype_real_part(ct) == PE_F32 ? 0x1p-24 : 0x1p-53;
        for (int64_t i = 0; i < n; i++) {
            double _Complex x[3] = {0, 0, 0};
            for (int j = 0; j < arity; j++) {
                x[j] = complex_at(buf[j], (pe_dtype)k->params[j].dtype, i);
                bool raw = (op->op == PE_OP_cond && j == 0) || op->op == PE_OP_cast;
                if (!raw) x[j] = pe_ref_round_to_c(ct, x[j]); /* as the interpreter's run_map_complex */
            }
            double _Complex want = pe_ref_round_to_c(rt, pe_ref_map_c((pe_op)op->op, x[0], x[1], x[2]));
            if (rt == PE_BOOL) want = __builtin_complex(__real__ want != 0 ? 1.0 : 0.0, 0.0);
            double _Complex got = complex_at(buf[arity], rt, i);
            double k_allowed = pe_dtype_real_part(ct) == PE_F32 || rt == PE_F32 ? 2 : op->op == PE_OP_pow ? 64 : 16;
            bool same = complex_parts_agree(got, want, k_allowed * u);
            if (!same && failed++ < 10)
                fprintf(stderr, "%s (%s -> %s) element %lld: %.17g%+.17gi, the interpreter's %.17g%+.17gi\n",
                        pe_op_table[op->op].name, pe_dtype_name(ct), pe_dtype_name(rt), (long long)i, __real__ got, __imag__ got,
                        __real__ want, __imag__ want);
        }
        for (int j = 0; j <= arity; j++) free(buf[j]);
    }
    printf("%zu complex kernels run on the host against the interpreter's complex math\n", l.n);
    assert_int_equal(failed, 0);
    dlclose(lib);
    free(src), free(l.k);
}

/* The shared tail's values: the pair kernel run on the host against the
 * reference on [-15, 15]. */
static void test_cdf_norm_pair_runs_on_the_host(void **state)
{
    (void)state;
    kir_kernel k = cdf_pair_kernel();
    char *src = emit_one(&k);
    void *lib = host_build(src);
    const int64_t n = 30001;
    float *x = malloc(n * sizeof *x), *out[3];
    pe_cuda_args args = {0};
    args.p[0].ptr = (unsigned long long)(uintptr_t)x;
    for (int j = 0; j < 3; j++) {
        out[j] = malloc(n * sizeof(float));
        args.p[1 + j].ptr = (unsigned long long)(uintptr_t)out[j];
    }
    for (int64_t i = 0; i < n; i++) x[i] = (float)(-15.0 + 30.0 * (double)i / (double)(n - 1));
    host_launch(lib, &k, n, &args, 5, 64);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double arg[3] = {-(double)x[i], x[i], (double)expf(x[i])};
        for (int j = 0; j < 3; j++) {
            double want = pe_ref_round_to(PE_F32, pe_ref_map(PE_OP_cdf_norm, arg[j], 0, 0));
            worst = fmax(worst, distance(out[j][i], want, PE_F32));
        }
    }
    printf("cdf_norm of -x, x, exp(x) in one kernel, on the host: at most %g ulp\n", worst);
    assert_true(worst <= 1);
    dlclose(lib);
    for (int j = 0; j < 3; j++) free(out[j]);
    free(x), free(src);
}

/* Kernel k, which must have the vector loop, built on the host. */
static void *host_build_vectorised(const kir_kernel *k)
{
    assert_true(kir_valid(k));
    char *src = emit_one(k);
    assert_non_null(strstr(src, "float4")); /* the vector loop is there */
    void *lib = host_build(src);
    free(src);
    return lib;
}

/* The vector loop (4 elements a step where every array is 16-byte aligned)
 * and the scalar loop after it: arrays of every type, a scalar, the index
 * generator; aligned and misaligned arrays (a view's offset), lengths around
 * multiples of 4, more threads than groups.  Each value against a C loop. */
static void test_vector_loop_runs_on_the_host(void **state)
{
    (void)state;
    kir_kernel k = {0};
    k.rank = 1, k.shape[0] = 1 << 20; /* pe_index is i % shape: larger than every n here */
    static const pe_dtype in_types[] = {PE_F32, PE_F64, PE_I32, PE_BOOL};
    for (int p = 0; p < 4; p++) {
        k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = in_types[p]};
        k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = in_types[p], .n = 1, .a = {(uint16_t)p}}; /* v0..v3 */
    }
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_SCALAR, .dtype = PE_F64};                         /* p4 */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F64, .n = 1, .a = {4}};                    /* v4 s */
#define OP(o, t, c, n_, x, y, z) (kir_inst){.kind = KIR_OP, .op = PE_OP_##o, .dtype = t, .ctype = c, .n = n_, .a = {x, y, z}}
    k.body[k.n_body++] = OP(mul, PE_F64, PE_F64, 2, 0, 1, 0);      /* v5 = x * y */
    k.body[k.n_body++] = OP(add, PE_F64, PE_F64, 2, 5, 4, 0);      /* v6 = x * y + s */
    k.body[k.n_body++] = OP(lt, PE_BOOL, PE_F64, 2, 0, 1, 0);      /* v7 = x < y */
    k.body[k.n_body++] = OP(index, PE_I32, PE_I32, 0, 0, 0, 0);    /* v8 = i */
    k.body[k.n_body++] = OP(add, PE_I32, PE_I32, 2, 2, 8, 0);      /* v9 = j + i */
    k.body[k.n_body++] = OP(neg, PE_F32, PE_F32, 1, 0, 0, 0);      /* v10 = -x */
    k.body[k.n_body++] = OP(cond, PE_F32, PE_F32, 3, 3, 0, 10);    /* v11 = b ? x : -x */
#undef OP
    static const pe_dtype out_types[] = {PE_F64, PE_BOOL, PE_I32, PE_F32};
    static const uint16_t out_values[] = {6, 7, 9, 11};
    for (int o = 0; o < 4; o++) {
        k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = out_types[o]}; /* p5..p8 */
        k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {(uint16_t)(k.n_params - 1), out_values[o]}};
    }
    void *lib = host_build_vectorised(&k);
    static const int64_t lengths[] = {0, 1, 3, 4, 5, 8, 1003};
    int runs = 0;
    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++)
        for (int misaligned = 0; misaligned < 2; misaligned++) {
            int64_t n = lengths[li];
            float *x = malloc((size_t)(n + 1) * 4);
            double *y = malloc((size_t)(n + 1) * 8), *o6 = malloc((size_t)(n + 1) * 8);
            int32_t *j = malloc((size_t)(n + 1) * 4), *o9 = malloc((size_t)(n + 1) * 4);
            uint8_t *b = malloc((size_t)(n + 1)), *o7 = malloc((size_t)(n + 1));
            float *o11 = malloc((size_t)(n + 1) * 4);
            int m = misaligned; /* one element in: a view's offset */
            for (int64_t i = 0; i < n; i++) {
                x[m + i] = (float)operand_value(PE_F32, 0, i);
                y[m + i] = operand_value(PE_F64, 1, i);
                j[m + i] = (int32_t)operand_value(PE_I32, 2, i);
                b[m + i] = (uint8_t)operand_value(PE_BOOL, 3, i);
            }
            pe_cuda_args args = {0};
            void *ptrs[9] = {x + m, y + m, j + m, b + m, NULL, o6 + m, o7 + m, o9 + m, o11 + m};
            for (int p = 0; p < 9; p++) args.p[p].ptr = (unsigned long long)(uintptr_t)ptrs[p];
            args.p[4].value = 0.25;
            host_launch(lib, &k, n, &args, 2, 64); /* 128 threads: more than 1003 / 4 / 2 groups each */
            for (int64_t i = 0; i < n; i++) {
                double xd = x[m + i], yd = y[m + i];
                assert_true(o6[m + i] == xd * yd + 0.25);
                assert_int_equal(o7[m + i], xd < yd);
                assert_int_equal(o9[m + i], j[m + i] + (int32_t)i);
                assert_true(o11[m + i] == (b[m + i] ? x[m + i] : -x[m + i]));
            }
            free(x), free(y), free(o6), free(j), free(o9), free(b), free(o7), free(o11);
            runs++;
        }
    printf("vector loop: %d lengths x alignments, every value as a C loop gives it\n", runs);
    dlclose(lib);
}

/* Broadcast operands in the vector loop: read lane by lane at their strided
 * index while the contiguous arrays go 4 at a time.  A 37 x 5 iteration
 * space (185 elements: a scalar tail), x + row (f32) and then + column
 * (f64), against a C loop; aligned and misaligned. */
static void test_vector_loop_with_broadcast_operands(void **state)
{
    (void)state;
    enum { ROWS = 37, COLS = 5, N = ROWS * COLS };
    kir_kernel k = {0};
    k.rank = 2, k.shape[0] = ROWS, k.shape[1] = COLS;
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = PE_F32};                    /* p0 x */
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_STRIDED, .dtype = PE_F32, .stride = {0, 1}}; /* p1 row */
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_STRIDED, .dtype = PE_F64, .stride = {1, 0}}; /* p2 column */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {0}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F64, .n = 1, .a = {2}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_add, .dtype = PE_F32, .ctype = PE_F32, .n = 2, .a = {0, 1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_add, .dtype = PE_F64, .ctype = PE_F64, .n = 2, .a = {3, 2}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_F32}; /* p3 x + row */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {3, 3}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_F64}; /* p4 x + row + column */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {4, 4}};
    void *lib = host_build_vectorised(&k);
    for (int m = 0; m < 2; m++) { /* m = 1: arrays one element off alignment */
        float *x = malloc((N + 1) * sizeof *x), *row = malloc(COLS * sizeof *row), *o3 = malloc((N + 1) * sizeof *o3);
        double *col = malloc(ROWS * sizeof *col), *o4 = malloc((N + 1) * sizeof *o4);
        for (int i = 0; i < N; i++) x[m + i] = (float)operand_value(PE_F32, 0, i);
        for (int c = 0; c < COLS; c++) row[c] = (float)operand_value(PE_F32, 1, c);
        for (int r = 0; r < ROWS; r++) col[r] = operand_value(PE_F64, 2, r);
        pe_cuda_args args = {0};
        void *ptrs[5] = {x + m, row, col, o3 + m, o4 + m};
        for (int p = 0; p < 5; p++) args.p[p].ptr = (unsigned long long)(uintptr_t)ptrs[p];
        host_launch(lib, &k, N, &args, 1, 8); /* 8 threads for 46 groups: each strides */
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++) {
                float sum = x[m + r * COLS + c] + row[c];
                assert_true(o3[m + r * COLS + c] == sum);
                assert_true(o4[m + r * COLS + c] == (double)sum + col[r]);
            }
        free(x), free(row), free(o3), free(col), free(o4);
    }
    dlclose(lib);
}

/* Rank 4 (3 x 5 x 7 x 11): an f32 operand broadcast over axes 0 and 2, an
 * i32 one over axes 1 and 3, pe_index of axis 2, in the vector loop and the
 * scalar loop; against a C loop over the coordinates. */
static void test_vector_loop_at_rank_4(void **state)
{
    (void)state;
    enum { D0 = 3, D1 = 5, D2 = 7, D3 = 11, N = D0 * D1 * D2 * D3 };
    kir_kernel k = {0};
    k.rank = 4, k.shape[0] = D0, k.shape[1] = D1, k.shape[2] = D2, k.shape[3] = D3;
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = PE_F32};                               /* p0 x */
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_STRIDED, .dtype = PE_F32, .stride = {0, D3, 0, 1}};   /* p1 b[j][l] */
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_STRIDED, .dtype = PE_I32, .stride = {D2, 0, 1, 0}};   /* p2 c[i][k] */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {0}};                          /* v0 */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {1}};                          /* v1 */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_I32, .n = 1, .a = {2}};                          /* v2 */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_index, .dtype = PE_I32, .ctype = PE_I32, .a = {2}}; /* v3 k */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_add, .dtype = PE_I32, .ctype = PE_I32, .n = 2, .a = {2, 3}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_mul, .dtype = PE_F32, .ctype = PE_F32, .n = 2, .a = {0, 1}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_I32}; /* p3 c + k */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {3, 4}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_F32}; /* p4 x * b */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {4, 5}};
    void *lib = host_build_vectorised(&k);
    for (int m = 0; m < 2; m++) { /* m = 1: x and the outputs one element off alignment */
        float *x = malloc((N + 1) * sizeof *x), *b = malloc(D1 * D3 * sizeof *b), *o4 = malloc((N + 1) * sizeof *o4);
        int32_t *c = malloc(D0 * D2 * sizeof *c), *o3 = malloc((N + 1) * sizeof *o3);
        for (int e = 0; e < N; e++) x[m + e] = (float)operand_value(PE_F32, 0, e);
        for (int e = 0; e < D1 * D3; e++) b[e] = (float)operand_value(PE_F32, 1, e);
        for (int e = 0; e < D0 * D2; e++) c[e] = (int32_t)operand_value(PE_I32, 2, e);
        pe_cuda_args args = {0};
        void *ptrs[5] = {x + m, b, c, o3 + m, o4 + m};
        for (int p = 0; p < 5; p++) args.p[p].ptr = (unsigned long long)(uintptr_t)ptrs[p];
        host_launch(lib, &k, N, &args, 3, 32);
        for (int i = 0, e = 0; i < D0; i++)
            for (int j = 0; j < D1; j++)
                for (int kk = 0; kk < D2; kk++)
                    for (int l = 0; l < D3; l++, e++) {
                        assert_int_equal(o3[m + e], c[i * D2 + kk] + kk);
                        assert_true(o4[m + e] == x[m + e] * b[j * D3 + l]);
                    }
        free(x), free(b), free(o4), free(c), free(o3);
    }
    dlclose(lib);
}

/* Random draws (cuda_test_kernels.h's cases: both generators, every
 * dtype) run on the host: every element bitwise the reference definition
 * (irformat/philox.h; on the host CUDA's log and cos are libm's, so normal
 * draws too), for a seed using both key words and a draw number past 2^31. */
static void test_random_draws_run_on_the_host(void **state)
{
    (void)state;
    size_t n_cases = sizeof random_cases / sizeof *random_cases;
    kernel_list l = {0};
    for (size_t c = 0; c < n_cases; c++) add(&l, random_kernel(&random_cases[c], false));
    char *src = emit_all(&l);
    void *lib = host_build(src);
    free(src);
    const uint64_t seed = 0x8badf00ddeadbeefull;
    const uint32_t draw = 0x80000005u;
    const int64_t n = 3 * 700;
    for (size_t c = 0; c < n_cases; c++) {
        const random_case *rc = &random_cases[c];
        void *out = calloc((size_t)n, pe_dtype_size(rc->t));
        assert_non_null(out);
        pe_cuda_args args = {0};
        args.p[0].value = (int32_t)(uint32_t)seed;
        args.p[1].value = (int32_t)(uint32_t)(seed >> 32);
        args.p[2].value = (int32_t)draw;
        args.p[3].ptr = (unsigned long long)(uintptr_t)out;
        host_launch(lib, &l.k[c], n, &args, 3, 64);
        for (int64_t i = 0; i < n; i++) {
            uint32_t w[4];
            pe_philox_element(w, (uint32_t)seed, (uint32_t)(seed >> 32), draw, (uint64_t)i, rc->rounds);
            double want = rc->op == PE_OP_random_normal ? pe_philox_normal(w)
                                                        : pe_philox_uniform(w, rc->t != PE_I32, (int)pe_dtype_size(rc->t));
            want = pe_ref_round_to(rc->t, want);
            double got = get(out, rc->t, i);
            if (memcmp(&got, &want, sizeof got) != 0)
                fail_msg("case %zu element %lld: %.17g, want %.17g", c, (long long)i, got, want);
        }
        free(out);
    }
    dlclose(lib);
    free(l.k);
}

/* Where view case `which` (cuda_test_kernels.h) reads element c, written
 * out by hand from what the view is, not from the map's fields. */
static int64_t view_source_index(size_t which, const int64_t *c)
{
    switch (which) {
    case 0: return (1 + c[1]) * 8 + (2 + c[0]);
    case 1: return (3 - c[0]) * 120 + (119 - 3 * c[1]);
    case 2: return (c[0] + 1) % 4 * 7 + (c[1] + 3) % 7;
    case 3: return c[0] * 12 + (c[1] < 10 ? 10 : c[1] > 21 ? 21 : c[1]) - 10;
    default: {
        int64_t j = c[1] < 1 ? 1 : c[1] > 3 ? 3 : c[1];
        return (j + 2) % 3 * 77 + (6 - c[2]) * 11 + c[3];
    }
    }
}

/* Views read through index maps: offsets, negative strides, a wrap with a
 * shift, a clamp, in the vector loop and the scalar loop, every element
 * against a C loop over the coordinates; aligned and misaligned. */
static void test_views_read_through_index_maps(void **state)
{
    (void)state;
    size_t n_cases = sizeof view_cases / sizeof *view_cases;
    for (size_t v = 0; v < n_cases; v++) {
        const view_case *vc = &view_cases[v];
        kir_kernel k = view_kernel(vc);
        void *lib = host_build_vectorised(&k);
        int64_t n = 1;
        for (int d = 0; d < vc->rank; d++) n *= vc->shape[d];
        for (int m = 0; m < 2; m++) { /* m = 1: x and the sum one element off alignment */
            float *x = malloc((size_t)(n + 1) * sizeof *x), *o = malloc((size_t)(n + 1) * sizeof *o);
            float *src = malloc((size_t)vc->source * sizeof *src);
            for (int64_t e = 0; e < n; e++) x[m + e] = (float)operand_value(PE_F32, 0, e);
            for (int64_t e = 0; e < vc->source; e++) src[e] = (float)e; /* the value names the element */
            pe_cuda_args args = {0};
            void *ptrs[3] = {x + m, src, o + m};
            for (int p = 0; p < 3; p++) args.p[p].ptr = (unsigned long long)(uintptr_t)ptrs[p];
            host_launch(lib, &k, n, &args, 2, 16);
            for (int64_t e = 0; e < n; e++) {
                int64_t c[PE_MAX_RANK] = {0}, rest = e;
                for (int d = vc->rank - 1; d >= 0; d--) c[d] = rest % vc->shape[d], rest /= vc->shape[d];
                int64_t at = view_source_index(v, c);
                assert_true(at >= 0 && at < vc->source);
                if (o[m + e] != x[m + e] + src[at]) fprintf(stderr, "%s: element %lld\n", vc->what, (long long)e);
                assert_true(o[m + e] == x[m + e] + src[at]);
            }
            free(x), free(o), free(src);
        }
        dlclose(lib);
    }
    printf("views through index maps: %zu maps, every element as a C loop reads it\n", n_cases);
}

/* concat (cuda_test_kernels.h): every element against a C loop over the
 * two arrays. */
static void test_concat_selects_by_coordinate(void **state)
{
    (void)state;
    enum { R = CONCAT_R, NA = CONCAT_NA, NB = CONCAT_NB, N = NA + NB };
    kir_kernel k = concat_kernel();
    assert_true(kir_valid(&k));
    void *lib = host_build_vectorised(&k);
    int32_t a[R * NA];
    float b[R * NB], o[R * N];
    for (int e = 0; e < R * NA; e++) a[e] = e - 11;
    for (int e = 0; e < R * NB; e++) b[e] = 0.5f + (float)e;
    pe_cuda_args args = {0};
    void *ptrs[3] = {a, b, o};
    for (int p = 0; p < 3; p++) args.p[p].ptr = (unsigned long long)(uintptr_t)ptrs[p];
    host_launch(lib, &k, R * N, &args, 2, 16);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < N; c++) assert_true(o[r * N + c] == (c < NA ? (float)a[r * NA + c] : b[r * NB + c - NA]));
    dlclose(lib);
}

/* gather (cuda_test_kernels.h): in-range indices read the array; one out
 * of range (negative, at the extent, far past it) reads element 0 and sets
 * the flag; all in range leaves the flag 0. */
static void test_gather_reads_in_range_and_flags_outside(void **state)
{
    (void)state;
    enum { N = 300 };
    kir_kernel k = gather_kernel();
    assert_true(kir_valid(&k));
    void *lib = host_build_vectorised(&k);
    double src[GATHER_EXTENT];
    for (int e = 0; e < GATHER_EXTENT; e++) src[e] = 3.25 * e - 7;
    const int32_t bad[] = {0, -1, GATHER_EXTENT, INT32_MAX, INT32_MIN};
    for (int b = 0; b < (int)(sizeof bad / sizeof bad[0]); b++) {
        int32_t idx[N];
        float o[N];
        uint32_t flag = 0;
        for (int e = 0; e < N; e++) idx[e] = (e * 7) % GATHER_EXTENT;
        if (b > 0) idx[(b * 61) % N] = bad[b];
        pe_cuda_args args = {0};
        void *ptrs[4] = {idx, src, &flag, o};
        for (int p = 0; p < 4; p++) args.p[p].ptr = (unsigned long long)(uintptr_t)ptrs[p];
        host_launch(lib, &k, N, &args, 2, 16);
        for (int e = 0; e < N; e++) {
            bool inside = idx[e] >= 0 && idx[e] < GATHER_EXTENT;
            assert_true(o[e] == (float)(src[inside ? idx[e] : 0] + 0.5));
        }
        assert_int_equal(flag, b > 0);
    }
    dlclose(lib);
}

/* An offset past 2^32 elements: the index is 64-bit.  The buffer's pointer
 * is handed over that many elements before the data (the kernel adds them
 * back), so no such buffer is needed; one row, so that the row stride (as
 * far) is compiled in but never taken. */
static void test_view_index_is_64_bit(void **state)
{
    (void)state;
    const int64_t far = (int64_t)3 << 31; /* 6 Gi elements */
    enum { N = 100 };
    view_case vc = {"far", 2, {1, N}, {.kind = KIR_IN_STRIDED, .dtype = PE_F32, .offset = far + N - 1, .stride = {far, -1}}, 0};
    kir_kernel k = view_kernel(&vc);
    void *lib = host_build_vectorised(&k);
    float *x = malloc(N * sizeof *x), *o = malloc(N * sizeof *o), *src = malloc(N * sizeof *src);
    for (int e = 0; e < N; e++) x[e] = (float)operand_value(PE_F32, 0, e), src[e] = (float)e;
    pe_cuda_args args = {0};
    args.p[0].ptr = (unsigned long long)(uintptr_t)x;
    args.p[1].ptr = (unsigned long long)(uintptr_t)src - (unsigned long long)far * sizeof *src;
    args.p[2].ptr = (unsigned long long)(uintptr_t)o;
    host_launch(lib, &k, N, &args, 1, 8);
    for (int c = 0; c < N; c++) assert_true(o[c] == x[c] + src[N - 1 - c]); /* reversed */
    dlclose(lib);
    free(x), free(o), free(src);
}

typedef void (*blocks_fn)(void *fn, long long n, const pe_cuda_args *a, unsigned grid, unsigned block);

/* The combiner of lib (emitted with its reduction kernels) over the
 * partials of `chunks` chunks of a reduction `op` of `numel` elements, with
 * an f64 result and with an f32 one, which must be the f64 one rounded. */
static double combine_on_host(void *lib, pe_op op, pe_dtype ct, const double *partials, int64_t chunks, int64_t numel)
{
    blocks_fn launch = (blocks_fn)dlsym(lib, "pe_emul_launch_blocks");
    void *fn = dlsym(lib, PE_CUDA_COMBINER);
    assert_non_null(launch);
    assert_non_null(fn);
    double f64 = 0;
    float f32 = 0;
    pe_cuda_args a = {0};
    a.p[0].ptr = (unsigned long long)(uintptr_t)partials;
    a.p[2].value = (double)numel;
    a.p[3].value = op;
    for (int as_f32 = 0; as_f32 < 2; as_f32++) {
        a.p[1].ptr = (unsigned long long)(uintptr_t)(as_f32 ? (void *)&f32 : (void *)&f64);
        a.p[4].value = as_f32 ? PE_F32 : PE_F64; /* the result's dtype */
        a.p[5].value = ct;                        /* the compute type (f64 norm2 leaves chunk statistics) */
        launch(fn, chunks, &a, 1, PE_CUDA_REDUCE_THREADS);
    }
    assert_true(memcmp(&(float){(float)f64}, &f32, sizeof f32) == 0);
    return f64;
}

/* Reduction kernels on the host, each block's threads running together
 * (shared memory, barriers, warp shuffles): every reduction in f32 and f64
 * over three chunks and a part, the partials combined as the executor
 * combines them, against long double; with and without a NaN (it sticks),
 * through the vector loop and the scalar loop (a misaligned array); the same
 * partials twice (the combination order does not depend on how threads are
 * scheduled). */
static void test_reductions_run_on_the_host(void **state)
{
    (void)state;
    kernel_list l = reduction_kernels();
    char *src = emit_all(&l);
    void *lib = host_build(src);
    blocks_fn launch = (blocks_fn)dlsym(lib, "pe_emul_launch_blocks");
    assert_non_null(launch);
    const int64_t n = KIR_REDUCE_CHUNK + 1001, chunks = 2;
    for (size_t i = 0; i < l.n; i++) {
        const kir_kernel *k = &l.k[i];
        const kir_inst *red = &k->body[k->n_body - 1];
        pe_op op = (pe_op)red->op;
        pe_dtype ct = (pe_dtype)red->ctype;
        int arity = op == PE_OP_dot ? 2 : 1;
        for (int variant = 0; variant < 4; variant++) {
            bool with_nan = variant & 1, misaligned = variant & 2; /* misaligned: the scalar loop */
            char *stored_at = calloc((size_t)n + 1, pe_dtype_size(ct));
            void *in[2] = {NULL, NULL}, *stored = stored_at + (misaligned ? pe_dtype_size(ct) : 0);
            double *partials[2] = {calloc(2 * (size_t)chunks, sizeof(double)), calloc(2 * (size_t)chunks, sizeof(double))};
            pe_cuda_args args = {0};
            for (int j = 0; j < arity; j++) {
                in[j] = malloc((size_t)n * pe_dtype_size(ct));
                for (int64_t e = 0; e < n; e++) set(in[j], ct, e, operand_value(ct, j, e));
                if (with_nan && j == 0) set(in[j], ct, KIR_REDUCE_CHUNK + 77, NAN);
                args.p[j].ptr = (unsigned long long)(uintptr_t)in[j];
            }
            args.p[arity].ptr = (unsigned long long)(uintptr_t)stored;
            char name[48];
            test_kernel_name(k, name, sizeof name);
            void *fn = dlsym(lib, name);
            assert_non_null(fn);
            for (int run = 0; run < 2; run++) {
                args.p[arity + 1].ptr = (unsigned long long)(uintptr_t)partials[run];
                launch(fn, n, &args, (unsigned)chunks, PE_CUDA_REDUCE_THREADS);
            }
            assert_memory_equal(partials[0], partials[1], 2 * (size_t)chunks * sizeof(double));
            /* the reference: the same terms in long double */
            long double acc = op == PE_OP_max_reduce ? -INFINITY : op == PE_OP_min_reduce ? INFINITY : 0, size = 0;
            bool nan = false;
            for (int64_t e = 0; e < n; e++) {
                double x = get(in[0], ct, e);
                double ex = get(stored, ct, e); /* the value the reduction takes: within 2 ulp of exp */
                assert_true(distance(ex, pe_ref_round_to(ct, exp(x)), ct) <= 2);
                long double term = arity == 2 ? (long double)ex * get(in[1], ct, e) : ex;
                nan |= term != term;
                if (op == PE_OP_norm1 || op == PE_OP_norminf) term = fabsl(term);
                if (op == PE_OP_norm2) term = term * term;
                if (op == PE_OP_max_reduce || op == PE_OP_norminf) acc = term > acc ? term : acc;
                else if (op == PE_OP_min_reduce) acc = term < acc ? term : acc;
                else acc += term;
                size += fabsl(term);
            }
            if (op == PE_OP_mean) acc /= n, size /= n;
            if (op == PE_OP_norm2) acc = sqrtl(acc), size = sqrtl(size);
            /* combined on the host (the CPU executor's way) and by the combiner */
            double got[2] = {pe_combine_partials(op, partials[0], chunks, n), combine_on_host(lib, op, ct, partials[0], chunks, n)};
            for (int c = 0; c < 2; c++) {
                if (nan) {
                    assert_true(got[c] != got[c]);
                } else if (fabsl((long double)got[c] - acc) > 1e-12L * size) {
                    fprintf(stderr, "%s %s (%s): %.17g, long double %.17Lg\n", pe_op_table[op].name,
                            ct == PE_F32 ? "f32" : "f64", c ? "combiner" : "host", got[c], acc);
                    fail();
                }
            }
            free(in[0]), free(in[1]), free(stored_at), free(partials[0]), free(partials[1]);
        }
    }
    printf("%zu reduction kernels run on the host (%lld elements, %lld blocks of %d threads), with and without a NaN, "
           "aligned and not: as long double gives them\n",
           l.n, (long long)n, (long long)chunks, PE_CUDA_REDUCE_THREADS);
    dlclose(lib);
    free(src), free(l.k);
}

/* A partial m * 2^e, m in [-2^30, 2^30], e in [0, 40]: sums of thousands
 * of them are exact in __int128 (the oracle), and cancel heavily. */
static double integer_partial(uint64_t *state, __int128 *exact)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    int64_t m = (int64_t)((*state >> 20) & ((1ull << 31) - 1)) - (1ll << 30);
    int e = (int)(*state >> 58) % 41;
    *exact += (__int128)m * ((__int128)1 << e); /* a product: shifting a negative value is undefined */
    return ldexp((double)m, e);
}

/* The combiner alone, over 0 to 3000 chunks (fewer chunks than threads,
 * as many, more, not a multiple): sums compensated to the correctly rounded
 * result of the exact sum (within an ulp), extremes equal to the host's
 * combination (the first NaN wins), mean and norm2 from the same sum. */
static void test_combiner_runs_on_the_host(void **state)
{
    (void)state;
    kernel_list l = reduction_kernels();
    kernel_list one = {.k = l.k, .n = 1};
    char *src = emit_all(&one);
    assert_non_null(strstr(src, PE_CUDA_COMBINER));
    void *lib = host_build(src);
    const int64_t sizes[] = {0, 1, 7, 255, 256, 257, 3000};
    uint64_t seed = 42;
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
        int64_t chunks = sizes[z], numel = chunks * KIR_REDUCE_CHUNK - (chunks ? 5 : 0);
        double *partials = calloc(2 * (size_t)chunks + 1, sizeof *partials);
        __int128 exact = 0;
        for (int64_t c = 0; c < 2 * chunks; c++) partials[c] = integer_partial(&seed, &exact);
        double want = (double)exact; /* rounded to nearest (libgcc's __floattidf) */
        for (int op = 0; op < 2; op++) { /* sum, and the host's combination alike */
            double got = op ? pe_combine_partials(PE_OP_sum, partials, chunks, numel)
                            : combine_on_host(lib, PE_OP_sum, PE_F32, partials, chunks, numel);
            assert_true(fabs(got - want) <= (want == 0 ? 0 : nextafter(fabs(want), INFINITY) - fabs(want)));
        }
        double mean = combine_on_host(lib, PE_OP_mean, PE_F32, partials, chunks, numel);
        if (chunks == 0) assert_true(mean != mean); /* 0 / 0 */
        else assert_true(fabs(mean - want / (double)numel) <= 2e-16 * fabs(want / (double)numel) + 1e-300);
        for (int64_t c = 0; c < 2 * chunks; c++) partials[c] = fabs(partials[c]); /* squares for norm2 */
        double norm2 = combine_on_host(lib, PE_OP_norm2, PE_F32, partials, chunks, numel), sq = 0;
        for (int64_t c = 0; c < 2 * chunks; c++) sq += partials[c];
        assert_true(fabs(norm2 - sqrt(sq)) <= 1e-12 * sqrt(sq));
        if (chunks > 3) { /* a chunk whose sum is infinite leaves (inf, NaN): IEEE's sums, not inf - inf */
            double *inf = malloc(2 * (size_t)chunks * sizeof *inf);
            memcpy(inf, partials, 2 * (size_t)chunks * sizeof *inf);
            inf[2 * 1] = INFINITY, inf[2 * 1 + 1] = NAN;
            for (int op = 0; op < 2; op++) {
                double got = op ? pe_combine_partials(PE_OP_sum, inf, chunks, numel)
                                : combine_on_host(lib, PE_OP_sum, PE_F32, inf, chunks, numel);
                assert_true(got == INFINITY);
            }
            inf[2 * (chunks - 1)] = -INFINITY, inf[2 * (chunks - 1) + 1] = NAN;
            assert_true(isnan(combine_on_host(lib, PE_OP_sum, PE_F32, inf, chunks, numel)));
            assert_true(isnan(pe_combine_partials(PE_OP_sum, inf, chunks, numel)));
            free(inf);
        }
        const pe_op extremes[] = {PE_OP_max_reduce, PE_OP_min_reduce, PE_OP_norminf};
        for (int nan = 0; nan < 2; nan++) {
            if (nan && chunks > 3) partials[2 * (chunks / 2)] = NAN, partials[2 * (chunks - 1)] = -NAN;
            for (size_t x = 0; x < 3; x++) {
                double host = pe_combine_partials(extremes[x], partials, chunks, numel);
                double dev = combine_on_host(lib, extremes[x], PE_F32, partials, chunks, numel);
                assert_memory_equal(&host, &dev, sizeof host); /* the same NaN too */
            }
        }
        free(partials);
    }
    printf("the combiner over 0 to 3000 chunks: sums within an ulp of the exact one, extremes as the host's\n");
    dlclose(lib);
    free(src), free(l.k);
}

/* A reduction over a 2-D space with a broadcast row: sum(x * row) over
 * 70 x 300 (two chunks and a part), the row read lane by lane in the vector
 * loop; against a C loop in long double, aligned and misaligned. */
static void test_reduction_with_a_broadcast_operand(void **state)
{
    (void)state;
    enum { ROWS = 70, COLS = 300, N = ROWS * COLS };
    kir_kernel k = {0};
    k.rank = 2, k.shape[0] = ROWS, k.shape[1] = COLS;
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = PE_F32};
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_STRIDED, .dtype = PE_F32, .stride = {0, 1}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT_PARTIAL, .dtype = PE_F64};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {0}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_mul, .dtype = PE_F32, .ctype = PE_F32, .n = 2, .a = {0, 1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_REDUCE, .op = PE_OP_sum, .dtype = PE_F64, .ctype = PE_F32, .n = 2, .a = {2, 2}};
    void *lib = host_build_vectorised(&k);
    blocks_fn launch = (blocks_fn)dlsym(lib, "pe_emul_launch_blocks");
    char name[48];
    test_kernel_name(&k, name, sizeof name);
    void *fn = dlsym(lib, name);
    assert_non_null(launch);
    assert_non_null(fn);
    const int64_t chunks = (N + KIR_REDUCE_CHUNK - 1) / KIR_REDUCE_CHUNK;
    for (int m = 0; m < 2; m++) { /* m = 1: x one element off alignment */
        float *x = malloc((N + 1) * sizeof *x), *row = malloc(COLS * sizeof *row);
        double *partials = calloc(2 * (size_t)chunks, sizeof *partials);
        for (int i = 0; i < N; i++) x[m + i] = (float)operand_value(PE_F32, 0, i);
        for (int c = 0; c < COLS; c++) row[c] = (float)operand_value(PE_F32, 1, c);
        pe_cuda_args args = {0};
        args.p[0].ptr = (unsigned long long)(uintptr_t)(x + m);
        args.p[1].ptr = (unsigned long long)(uintptr_t)row;
        args.p[2].ptr = (unsigned long long)(uintptr_t)partials;
        launch(fn, N, &args, (unsigned)chunks, PE_CUDA_REDUCE_THREADS);
        long double want = 0, size = 0;
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++) {
                float term = x[m + r * COLS + c] * row[c];
                want += term, size += fabsf(term);
            }
        double got = pe_combine_partials(PE_OP_sum, partials, chunks, N);
        assert_true(fabsl((long double)got - want) <= 1e-12L * size);
        free(x), free(row), free(partials);
    }
    dlclose(lib);
}

/* ------------------------------------------------ reductions along an axis */

/* One axis-reduction test: its kernel, the view case it reads through
 * (-1: a contiguous operand), whether the operand has a NaN. */
typedef struct {
    kir_kernel k;
    int view;
    bool fused, with_nan;
} axis_test;

/* The operand's element at coordinates c: where it lies in the buffer. */
static int64_t axis_source_index(const axis_test *a, const int64_t *c)
{
    if (a->view >= 0) return view_source_index((size_t)a->view, c);
    int64_t flat = 0;
    for (int d = 0; d < a->k.rank; d++) flat = flat * a->k.shape[d] + c[d];
    return flat;
}

/* reduce_one's value (exec/interp/interp.c) of the terms x[0..len) of type
 * ct for a result of type rt: sums, products, means, variances and norms in
 * long double, i32 sums and products wrapped, selections exact; *size:
 * the scale of the tolerance (the sum of magnitudes, or the value). */
static long double axis_reference(pe_op op, pe_dtype ct, pe_dtype rt, const double *x, int64_t len, long double *size)
{
    bool integer = ct == PE_I32 && rt == PE_I32;
    *size = 0;
    switch (op) {
    case PE_OP_prod: {
        uint32_t w = 1;
        long double p = 1;
        for (int64_t j = 0; j < len; j++) { /* only an i32 operand wraps (a NaN has no i32) */
            if (integer) w *= (uint32_t)(int32_t)x[j];
            p *= x[j];
        }
        *size = fabsl(p);
        return integer ? (int32_t)w : p;
    }
    case PE_OP_any: case PE_OP_all: {
        bool any = false, all = true;
        for (int64_t j = 0; j < len; j++) any |= x[j] != 0, all &= x[j] != 0;
        return op == PE_OP_any ? any : all;
    }
    case PE_OP_argmax: case PE_OP_argmin: {
        int64_t at = 0;
        for (int64_t j = 0; j < len; j++) {
            if (x[j] != x[j]) return (long double)j; /* the first NaN */
            if (op == PE_OP_argmax ? x[j] > x[at] : x[j] < x[at]) at = j;
        }
        return (long double)at;
    }
    case PE_OP_var: case PE_OP_stddev: {
        long double mean = 0, var = 0;
        for (int64_t j = 0; j < len; j++) mean += x[j];
        mean /= (long double)len;
        for (int64_t j = 0; j < len; j++) var += (x[j] - mean) * (x[j] - mean);
        var /= (long double)len;
        long double v = op == PE_OP_var ? var : sqrtl(var);
        *size = fabsl(v);
        return v;
    }
    default: break;
    }
    if (op == PE_OP_sum && integer) {
        uint32_t w = 0;
        for (int64_t j = 0; j < len; j++) w += (uint32_t)(int32_t)x[j];
        return (int32_t)w;
    }
    long double acc = op == PE_OP_max_reduce ? -INFINITY : op == PE_OP_min_reduce ? INFINITY : 0;
    for (int64_t j = 0; j < len; j++) {
        long double t = x[j];
        if (op == PE_OP_norm1 || op == PE_OP_norminf) t = fabsl(t);
        if (op == PE_OP_norm2) t = t * t;
        *size += fabsl(t);
        if (t != t) return NAN; /* sticks to the extremes, spreads through sums */
        if (op == PE_OP_max_reduce || op == PE_OP_norminf) acc = t > acc ? t : acc;
        else if (op == PE_OP_min_reduce) acc = t < acc ? t : acc;
        else acc += t;
    }
    if (op == PE_OP_mean) acc /= (long double)len, *size /= (long double)len;
    if (op == PE_OP_norm2) acc = sqrtl(acc), *size = sqrtl(*size);
    return acc;
}

/* The full reductions that fold (hi, lo) pairs (cuda_emit_internal.h: FOLD_*):
 * float and wrapping i32 products, wrapping i32 and bool sums and i32 dot,
 * any and all, argmax and argmin; and the multi-walk ones (var, stddev, f64
 * norm2: chunk statistics); each kernel over three chunks and a part
 * (aligned: the vector loop; misaligned: the scalar one), its partials
 * combined by the combiner, against reduce_one's value (axis_reference);
 * extremes repeated in several threads and chunks (the first index wins),
 * a NaN in the third chunk after one in the second (the first NaN wins). */
static void test_folded_full_reductions_run_on_the_host(void **state)
{
    (void)state;
    static const axis_reduction cases[] = { /* (op, compute type, result type), as the axis ones */
        {PE_OP_prod, PE_F32, PE_F32},      {PE_OP_prod, PE_F64, PE_F64},      {PE_OP_prod, PE_I32, PE_I32},
        {PE_OP_sum, PE_I32, PE_I32},       {PE_OP_dot, PE_I32, PE_I32},       {PE_OP_any, PE_F32, PE_BOOL},
        {PE_OP_any, PE_I32, PE_BOOL},      {PE_OP_any, PE_BOOL, PE_BOOL},     {PE_OP_all, PE_F64, PE_BOOL},
        {PE_OP_all, PE_BOOL, PE_BOOL},     {PE_OP_argmax, PE_F32, PE_I32},    {PE_OP_argmax, PE_F64, PE_I32},
        {PE_OP_argmax, PE_I32, PE_I32},    {PE_OP_argmin, PE_F32, PE_I32},    {PE_OP_argmin, PE_I32, PE_I32},
        {PE_OP_var, PE_F32, PE_F32},       {PE_OP_var, PE_F64, PE_F64},       {PE_OP_stddev, PE_F32, PE_F32},
        {PE_OP_stddev, PE_F64, PE_F64},    {PE_OP_norm2, PE_F64, PE_F64},
    };
    enum { N = 2 * KIR_REDUCE_CHUNK + 1001, CHUNKS = 3 };
    kernel_list l = {0};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const axis_reduction *fc = &cases[c];
        assert_true(pe_cuda_can_emit(fc->op, fc->ct, PE_F64, fc->ct));
        kir_kernel k = plain_reduction_kernel(fc->op, fc->ct, N);
        add(&l, k);
    }
    char *src = emit_all(&l);
    void *lib = host_build(src);
    blocks_fn launch = (blocks_fn)dlsym(lib, "pe_emul_launch_blocks");
    void *combiner = dlsym(lib, PE_CUDA_COMBINER);
    assert_non_null(launch);
    assert_non_null(combiner);
    for (size_t c = 0; c < l.n; c++) {
        const axis_reduction *fc = &cases[c];
        int arity = fc->op == PE_OP_dot ? 2 : 1;
        char name[48];
        test_kernel_name(&l.k[c], name, sizeof name);
        void *fn = dlsym(lib, name);
        assert_non_null(fn);
        for (int variant = 0; variant < 8; variant++) {
            bool misaligned = variant & 1, special = variant & 2, nan = (variant & 4) && (fc->ct == PE_F32 || fc->ct == PE_F64);
            size_t size = pe_dtype_size(fc->ct);
            char *at[2] = {calloc(N + 1, size), calloc(N + 1, size)};
            void *in[2] = {at[0] + (misaligned ? size : 0), at[1] + (misaligned ? size : 0)};
            double x[N];
            for (int64_t e = 0; e < N; e++) {
                unsigned h = (unsigned)(e * 2654435761u);
                double v;
                if (fc->op == PE_OP_prod && fc->ct != PE_I32) v = 1 + ((double)(h % 2001) - 1000) * 1e-5;
                else if (fc->op == PE_OP_any || fc->op == PE_OP_all) v = special ? (fc->op == PE_OP_any ? 0 : 1) : (h >> 9) & 1;
                else if (fc->op == PE_OP_argmax || fc->op == PE_OP_argmin) v = (double)(h % 1000) - 500; /* many ties */
                else if (fc->op == PE_OP_var || fc->op == PE_OP_stddev || fc->op == PE_OP_norm2) /* an offset: Chan's deviations */
                    v = (special ? 1e6 : 0) + ((double)(h % 20001) - 10000) * 1e-3;
                else v = (double)(int32_t)(h ^ (h >> 13)); /* i32: sums and products wrap */
                if (special && (fc->op == PE_OP_any || fc->op == PE_OP_all) && e == N - 3) v = fc->op == PE_OP_any; /* the last chunk decides */
                if (fc->ct == PE_BOOL) v = v != 0;
                set(in[0], fc->ct, e, v);
                set(in[1], fc->ct, e, (double)(int32_t)(h * 31u + 7u));
                x[e] = get(in[0], fc->ct, e);
            }
            if (nan) {
                set(in[0], fc->ct, KIR_REDUCE_CHUNK + 300, NAN), x[KIR_REDUCE_CHUNK + 300] = NAN;
                set(in[0], fc->ct, 2 * KIR_REDUCE_CHUNK + 5, NAN), x[2 * KIR_REDUCE_CHUNK + 5] = NAN;
            }
            double partials[KIR_PARTIAL_WIDE * CHUNKS];
            pe_cuda_args args = {0};
            for (int j = 0; j < arity; j++) args.p[j].ptr = (unsigned long long)(uintptr_t)in[j];
            args.p[arity].ptr = (unsigned long long)(uintptr_t)partials;
            launch(fn, N, &args, CHUNKS, PE_CUDA_REDUCE_THREADS);
            union { float f; double d; int32_t i; uint8_t b; } got = {0};
            pe_cuda_args comb = {0};
            comb.p[0].ptr = (unsigned long long)(uintptr_t)partials;
            comb.p[1].ptr = (unsigned long long)(uintptr_t)&got;
            comb.p[2].value = N;
            comb.p[3].value = fc->op;
            comb.p[4].value = fc->rt;
            comb.p[5].value = fc->ct;
            launch(combiner, CHUNKS, &comb, 1, PE_CUDA_REDUCE_THREADS);
            long double size_of = 0, want;
            if (fc->op == PE_OP_dot) {
                uint32_t w = 0;
                for (int64_t e = 0; e < N; e++) w += (uint32_t)(int32_t)x[e] * (uint32_t)(int32_t)get(in[1], fc->ct, e);
                want = (int32_t)w;
            } else {
                want = axis_reference(fc->op, fc->ct, fc->rt, x, N, &size_of);
            }
            double value = fc->rt == PE_F32 ? got.f : fc->rt == PE_F64 ? got.d : fc->rt == PE_I32 ? got.i : got.b;
            bool ok = want != want ? value != value
                      : (fc->op == PE_OP_prod && fc->ct != PE_I32) || fc->op == PE_OP_var || fc->op == PE_OP_stddev || fc->op == PE_OP_norm2
                          ? fabsl((long double)value - want) <= (fc->rt == PE_F32 ? 1e-6L : 1e-12L) * fabsl(want)
                          : (long double)value == want;
            if (!ok) {
                fprintf(stderr, "%s of %s (variant %d): %.17g, reference %.17Lg\n", pe_op_table[fc->op].name,
                        pe_dtype_name(fc->ct), variant, value, want);
                fail();
            }
            free(at[0]), free(at[1]);
        }
    }
    printf("%zu folded and multi-walk full reductions (products, wrapping sums, dot, any, all, argmax, argmin, var, "
           "stddev, f64 norm2) run on the host: "
           "as reduce_one gives them\n", l.n);
    dlclose(lib);
    free(src), free(l.k);
}

/* Whether a reduction's result is exact (a selection, a count, a wrapped
 * integer, or any result of an integer type). */
static bool axis_exact(pe_op op, pe_dtype rt)
{
    return rt == PE_I32 || rt == PE_BOOL || pe_reduction_is_extreme(op) || op == PE_OP_any || op == PE_OP_all;
}

/* Runs test a's kernel twice (two launch configurations, each block's
 * threads together: warps shuffle), checks the two give the same bits, the
 * fused producer's stores, and each result against axis_reference. */
static void run_axis_test(void *lib, const axis_test *a)
{
    const kir_kernel *k = &a->k;
    const kir_inst *red = &k->body[k->n_body - 1];
    pe_op op = (pe_op)red->op;
    pe_dtype ct = (pe_dtype)red->ctype, rt = (pe_dtype)red->dtype;
    size_t es = pe_dtype_size(ct), rs = pe_dtype_size(rt);
    int axis = k->reduce_axis;
    int64_t numel = 1, len = k->shape[axis];
    for (int d = 0; d < k->rank; d++) numel *= k->shape[d];
    int64_t results = 1; /* over the kept axes */
    for (int d = 0; d < k->rank; d++) results *= d == axis ? 1 : k->shape[d];
    int64_t source = a->view >= 0 ? view_cases[a->view].source : numel;
    void *in = calloc((size_t)source + 1, es), *out[2] = {calloc((size_t)results + 1, rs), calloc((size_t)results + 1, rs)};
    void *stored = calloc((size_t)numel + 1, es);
    for (int64_t e = 0; e < source; e++) set(in, ct, e, operand_value(ct, 0, e) * 3);
    if (a->with_nan && source > 0) set(in, ct, source / 2, NAN);
    blocks_fn launch = (blocks_fn)dlsym(lib, "pe_emul_launch_blocks");
    char name[48];
    test_kernel_name(k, name, sizeof name);
    void *fn = dlsym(lib, name);
    assert_non_null(launch);
    assert_non_null(fn);
    static const unsigned grids[2][2] = {{1, 32}, {3, 64}}; /* fewer threads (warps) than results, and more */
    for (int run = 0; run < 2; run++) {
        pe_cuda_args args = {0};
        args.p[0].ptr = (unsigned long long)(uintptr_t)in;
        args.p[1].ptr = (unsigned long long)(uintptr_t)out[run];
        args.p[3].ptr = (unsigned long long)(uintptr_t)stored;
        launch(fn, results, &args, grids[run][0], grids[run][1]);
    }
    assert_memory_equal(out[0], out[1], (size_t)results * rs); /* whatever the launch */
    double *terms = malloc(((size_t)len + 1) * sizeof *terms);
    for (int64_t o = 0; o < results; o++) {
        int64_t c[PE_MAX_RANK] = {0}, rest = o; /* o's coordinates over the kept axes */
        for (int d = k->rank - 1; d >= 0; d--)
            if (d != axis) c[d] = rest % k->shape[d], rest /= k->shape[d];
        for (int64_t j = 0; j < len; j++) {
            c[axis] = j;
            double x = get(in, ct, axis_source_index(a, c));
            if (a->fused) {
                int64_t flat = 0;
                for (int d = 0; d < k->rank; d++) flat = flat * k->shape[d] + c[d];
                double ex = ct == PE_F32 ? (double)expf((float)x) : exp(x);
                assert_true(get(stored, ct, flat) == ex || (ex != ex && get(stored, ct, flat) != get(stored, ct, flat)));
                x = ct == PE_F32 ? (double)((float)ex * 2.0f) : ex * 2.0;
            }
            terms[j] = x;
        }
        long double size, want = axis_reference(op, ct, rt, terms, len, &size);
        double got = get(out[0], rt, o), rounded = pe_ref_round_to(rt, (double)want);
        bool ok = want != want ? got != got || (rt == PE_I32 && got == 0) /* NaN to i32: 0 */
                : axis_exact(op, rt) ? got == rounded
                : rt == PE_F32 ? tu_ulps_at(got, rounded, PE_F32) <= 1
                : op == PE_OP_prod || op == PE_OP_var || op == PE_OP_stddev ? fabsl((long double)got - want) <= 1e-13L * size
                : fabsl((long double)got - want) <= 1e-14L * size;
        if (!ok) {
            fprintf(stderr, "%s %s -> %s along axis %d of a rank %d shape (view %d%s%s), result %lld: %.17g, want %.17Lg\n",
                    pe_op_table[op].name, pe_dtype_name(ct), pe_dtype_name(rt), axis, k->rank, a->view, a->fused ? ", fused" : "",
                    a->with_nan ? ", NaN" : "", (long long)o, got, want);
            fail();
        }
    }
    free(terms), free(in), free(out[0]), free(out[1]), free(stored);
}

/* Axis reductions on the host: every reduction the generator emits along
 * an axis, in each operand and result type, along every axis of rank 1-4 shapes (size-1 and
 * empty axes, odd sizes, rows for a warp and rows for a thread), with and
 * without a NaN; fused producers (exp(x) * 2, exp(x) stored); reading
 * through views (transposed, reversed, periodic, clamped, rank 4).  Each
 * result against reduce_one's semantics (a C loop in long double; extremes
 * exact, NaN sticks, integers wrap), the same bits for two launch
 * configurations. */
static void test_axis_reductions_run_on_the_host(void **state)
{
    (void)state;
    axis_test *tests = NULL;
    size_t n = 0, cap = 0;
#define ADD_TEST(...)                                                                                  \
    do {                                                                                               \
        if (n == cap) tests = realloc(tests, (cap = cap ? 2 * cap : 256) * sizeof *tests);            \
        assert_non_null(tests);                                                                        \
        tests[n++] = (axis_test){__VA_ARGS__};                                                         \
    } while (0)
    const kir_param contig = {.kind = KIR_IN_CONTIG};
    for (size_t s = 0; s < sizeof axis_shapes / sizeof *axis_shapes; s++) {
        const axis_shape *sh = &axis_shapes[s];
        for (int axis = 0; axis < sh->rank; axis++) {
            for (size_t r = 0; r < sizeof axis_reductions / sizeof *axis_reductions; r++) {
                const axis_reduction *ar = &axis_reductions[r];
                kir_kernel k = axis_kernel(ar->op, ar->ct, ar->rt, sh->rank, sh->shape, axis, contig, false);
                ADD_TEST(.k = k, .view = -1, .with_nan = false);
                if (ar->ct == PE_F32 || ar->ct == PE_F64) ADD_TEST(.k = k, .view = -1, .with_nan = true);
            }
            ADD_TEST(.k = axis_kernel(PE_OP_sum, PE_F32, PE_F32, sh->rank, sh->shape, axis, contig, true), .view = -1, .fused = true);
            ADD_TEST(.k = axis_kernel(PE_OP_max_reduce, PE_F64, PE_F64, sh->rank, sh->shape, axis, contig, true), .view = -1,
                     .fused = true);
            ADD_TEST(.k = axis_kernel(PE_OP_stddev, PE_F64, PE_F64, sh->rank, sh->shape, axis, contig, true), .view = -1,
                     .fused = true);
        }
    }
    for (size_t v = 0; v < sizeof view_cases / sizeof *view_cases; v++) {
        const view_case *vc = &view_cases[v];
        for (int axis = 0; axis < vc->rank; axis++) {
            for (size_t r = 0; r < sizeof axis_reductions / sizeof *axis_reductions; r++) {
                const axis_reduction *ar = &axis_reductions[r];
                if (ar->ct == PE_F32)
                    ADD_TEST(.k = axis_kernel(ar->op, PE_F32, ar->rt, vc->rank, vc->shape, axis, vc->map, false), .view = (int)v);
            }
            ADD_TEST(.k = axis_kernel(PE_OP_mean, PE_F64, PE_F64, vc->rank, vc->shape, axis, vc->map, true), .view = (int)v,
                     .fused = true);
        }
    }
#undef ADD_TEST
    kernel_list l = {0};
    for (size_t i = 0; i < n; i++) {
        assert_true(kir_valid(&tests[i].k));
        add(&l, tests[i].k);
    }
    char *src = emit_all(&l);
    void *lib = host_build(src);
    int warps = 0;
    for (size_t i = 0; i < n; i++) {
        run_axis_test(lib, &tests[i]);
        warps += pe_cuda_threads_per_result(&tests[i].k) == 32;
    }
    printf("%zu axis reductions (%zu kernels, %d a warp per result) run on the host: as reduce_one gives them, "
           "the same bits for two launches\n", n, l.n, warps);
    dlclose(lib);
    free(src), free(l.k), free(tests);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_map_op_runs_on_the_host),
        cmocka_unit_test(test_complex_ops_run_on_the_host),
        cmocka_unit_test(test_cdf_norm_pair_runs_on_the_host),
        cmocka_unit_test(test_vector_loop_runs_on_the_host),
        cmocka_unit_test(test_vector_loop_with_broadcast_operands),
        cmocka_unit_test(test_vector_loop_at_rank_4),
        cmocka_unit_test(test_views_read_through_index_maps),
        cmocka_unit_test(test_random_draws_run_on_the_host),
        cmocka_unit_test(test_view_index_is_64_bit),
        cmocka_unit_test(test_concat_selects_by_coordinate),
        cmocka_unit_test(test_gather_reads_in_range_and_flags_outside),
        cmocka_unit_test(test_reductions_run_on_the_host),
        cmocka_unit_test(test_reduction_with_a_broadcast_operand),
        cmocka_unit_test(test_combiner_runs_on_the_host),
        cmocka_unit_test(test_folded_full_reductions_run_on_the_host),
        cmocka_unit_test(test_axis_reductions_run_on_the_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
