/* test_complex_kernels.c — complex values computed by generated kernels
 * (the pair lowering, jit/kir/kir_complex.c, then the CPU JIT): every
 * element-wise op that takes complex operands, casts, pe_complex, cond,
 * fused chains, views, complex sum, mean, dot and vdot (two real
 * reductions) and prod (polar form: two real reductions), each
 *   - computed with no port on the interpreter (pe_stats.ops_interpreted
 *     unchanged),
 *   - against the interpreter's value of the same expression (pe_reference,
 *     exec/interp/complexmath.c: the oracle the lowering copies), on random
 *     values and on edge values (zeros of both signs, infinities, NaN, huge
 *     and subnormal parts),
 *   - against C99 <complex.h> in long double on the random values, with
 *     test_complex.c's normwise bounds |got - want| <= k u |want|.
 * And the lowering itself: every op it takes leaves a kernel with no
 * complex value, valid, that both generators accept, grown by no more than
 * the program generator reserved for it (kir_complex_growth). */
#include <float.h>

#include "complex_values.h"

#include "cuda_test_kernels.h" /* complex_kernels(): the lowering's cases */

#undef complex /* the catalog has an op of that name: the types are spelt _Complex */

#define N 1001 /* not a multiple of any vector width: the loops' tails run too */
#define N_EDGE 24
typedef double _Complex dc;

/* Values where the formulas branch: signed zeros, infinities, NaN, parts
 * far apart in magnitude, huge and subnormal ones (c64: rounded to f32). */
static dc edge_value(int i)
{
    static const double parts[][2] = {
        {0.0, 0.0}, {-0.0, 0.0}, {0.0, -0.0}, {-0.0, -0.0}, {-4.0, 0.0}, {-4.0, -0.0}, {1.0, 1e-30},
        {1e300, 1e300}, {1e-310, 3e-310}, {2.5, -1e-320}, {INFINITY, 1.0}, {1.0, INFINITY}, {-INFINITY, 2.0},
        {NAN, 1.0}, {1.0, NAN}, {3.0, -4.0}, {1e20, 1e-20}, {-1e-20, 1e20}, {0.5, 0.0}, {0.0, 2.0},
        {700.0, 0.0}, {-2.0, -0.0}, {1e154, -1e154}, {1.0, 1.0}};
    return CMPLX(parts[i % N_EDGE][0], parts[i % N_EDGE][1]);
}

/* a's elements as double complex (a real array: imaginary parts 0). */
static dc *read_any(pe_array a)
{
    int64_t n = pe_numel(a);
    dc *out = calloc((size_t)(n ? n : 1), sizeof *out);
    assert_non_null(out);
    pe_dtype t = pe_dtype_of(a);
    if (t == PE_C64) {
        float _Complex *f = malloc((size_t)(n ? n : 1) * sizeof *f);
        assert_int_equal(pe_read(a, f, (size_t)n * sizeof *f), PE_OK);
        for (int64_t i = 0; i < n; i++) out[i] = f[i];
        free(f);
    } else if (t == PE_C128) {
        assert_int_equal(pe_read(a, out, (size_t)n * sizeof *out), PE_OK);
    } else {
        double *r = tu_read_as_f64(a, NULL);
        for (int64_t i = 0; i < n; i++) out[i] = r[i];
        free(r);
    }
    return out;
}

/* One part of the kernel's value against the interpreter's: NaN matches
 * NaN, an infinity itself, anything else within `allowed`. */
/* |z| over its finite parts (an infinite or NaN part is compared alone). */
static double finite_norm(dc z)
{
    if (isinf(creal(z)) || isinf(cimag(z))) return DBL_MAX; /* beside an infinite part the other is noise */
    double re = isfinite(creal(z)) ? creal(z) : 0, im = isfinite(cimag(z)) ? cimag(z) : 0;
    return hypot(re, im);
}

/* Set while an op whose CPU loop gcc fuses into vfmaddsub is checked (a
 * c128 product, kir_complex.c): where ac and bd both overflow, its real
 * part is an infinity where the interpreter's is NaN. */
static bool fused_product;

/* Set for pow's edge values where the base is 0 or not finite (log z has
 * an infinite part) or the exponent is not finite: the product w log z
 * meets an infinity; the
 * interpreter's C99 product recovers infinities (Annex G) where the
 * textbook product the lowering emits gives NaN (kir_complex.c). */
static bool pow_at_singularity;

static bool part_agrees(double got, double want, double allowed)
{
    if (fused_product && isnan(want) && isinf(got)) return true;
    if (pow_at_singularity && isnan(got)) return true;
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    return fabs(got - want) <= allowed;
}

/* Reads r (computed by kernels alone: no port on the interpreter) and its
 * interpreter value; each element within k u of the interpreter's,
 * normwise.  Returns the values read (the caller frees). */
static const dc *singular_bases; /* pow's bases, when pow is checked */

/* r read, computed by kernels alone: no port on the interpreter. */
static dc *read_by_kernels(const char *what, pe_array r)
{
    pe_stats before = tu_stats();
    dc *got = read_any(r);
    pe_stats after = tu_stats();
    if (after.ops_interpreted != before.ops_interpreted)
        fail_msg("%s: %llu port(s) on the interpreter", what, (unsigned long long)(after.ops_interpreted - before.ops_interpreted));
    assert_true(after.kernels_launched > before.kernels_launched);
    return got;
}

static dc *expect_kernels_agree(const char *what, pe_array r, double k, double u)
{
    pe_array ref = pe_reference(r); /* while r is pending: its whole expression from the inputs */
    dc *want = read_any(ref), *got = read_by_kernels(what, r);
    for (int64_t i = 0; i < pe_numel(r); i++) {
        double allowed = k * u * finite_norm(want[i]);
        pow_at_singularity = singular_bases && (singular_bases[i] == 0 || !isfinite(creal(singular_bases[i])) ||
                                                !isfinite(cimag(singular_bases[i])));
        if (!part_agrees(creal(got[i]), creal(want[i]), allowed) || !part_agrees(cimag(got[i]), cimag(want[i]), allowed))
            fail_msg("%s element %lld: kernel %.17g%+.17gi, interpreter %.17g%+.17gi", what, (long long)i, creal(got[i]),
                     cimag(got[i]), creal(want[i]), cimag(want[i]));
    }
    free(want);
    pe_release(ref);
    return got;
}

/* ------------------------------------------------------- element-wise ops */

typedef pe_array (*op1)(const pe_site *, pe_array);
typedef pe_array (*op2)(const pe_site *, pe_array, pe_array);

static ldc l_eq(ldc a, ldc b) { return a == b; }
static ldc l_ne(ldc a, ldc b) { return a != b; }
static ldc l_abs(ldc a) { return cabsl(a); }
static ldc l_arg(ldc a) { return cargl(a); }
static ldc l_real(ldc a) { return creall(a); }
static ldc l_imag(ldc a) { return cimagl(a); }

/* x's first N values random, the rest edge values; y alike, the edge
 * values shifted so that each meets many others. */
static void inputs(dc *x, dc *y, int shift)
{
    random_values(x, N);
    random_values(y, N);
    for (int i = 0; i < N_EDGE * N_EDGE; i++) {
        x[N + i] = edge_value(i / N_EDGE);
        y[N + i] = edge_value(i % N_EDGE + shift);
    }
}

#define M (N + N_EDGE * N_EDGE)

static void check_ops(pe_dtype t)
{
    static dc x[M], y[M];
    inputs(x, y, 0);
    int64_t n = M;
    pe_array a = make(t, 1, &n, x), b = make(t, 1, &n, y);
    double u = is_c64(t) ? U32 : U64;
    /* against the interpreter: c64 parts are computed in double by both and
     * rounded once (a rounding apart at most); c128 the same steps but for
     * libm's cexp, clog, csqrt, hypot against the lowering's real formulas */
    double k_interp = is_c64(t) ? 2 : 16;
    static const struct {
        const char *name;
        op2 fn;
        ldc (*ref)(ldc, ldc);
        double k;
    } binary[] = {{"add", pe_add_at, l_add, 2}, {"sub", pe_sub_at, l_sub, 2}, {"mul", pe_mul_at, l_mul, 4},
                  {"div", pe_div_at, l_div, 8},   {"pow", pe_pow_at, l_pow, 8}, {"eq", pe_eq_at, l_eq, 0},
                  {"ne", pe_ne_at, l_ne, 0}};
    static const struct {
        const char *name;
        op1 fn;
        ldc (*ref)(ldc);
        double k;
    } unary[] = {{"neg", pe_neg_at, l_neg, 2},    {"conj", pe_conj_at, l_conj, 2}, {"exp", pe_exp_at, l_exp, 8},
                 {"log", pe_log_at, l_log, 8},    {"sqrt", pe_sqrt_at, l_sqrt, 8}, {"abs", pe_abs_at, l_abs, 4},
                 {"arg", pe_arg_at, l_arg, 4},    {"real", pe_real_at, l_real, 2}, {"imag", pe_imag_at, l_imag, 2}};
    char what[64];
    for (size_t o = 0; o < sizeof binary / sizeof binary[0]; o++) {
        snprintf(what, sizeof what, "%s %s", pe_dtype_name(t), binary[o].name);
        pe_array r = binary[o].fn(PE_HERE, a, b);
        fused_product = !is_c64(t) && (binary[o].ref == l_mul || binary[o].ref == l_pow);
        static dc bases[M]; /* as the op sees them (c64: rounded to f32) */
        for (int i = 0; i < M; i++) {
            ldc p = operand(t, x[i]), q = operand(t, y[i]);
            bool wild = !isfinite(creall(q)) || !isfinite(cimagl(q)); /* marked as a singular base */
            bases[i] = wild ? 0 : CMPLX((double)creall(p), (double)cimagl(p));
        }
        singular_bases = binary[o].ref == l_pow ? bases : NULL;
        dc *got = expect_kernels_agree(what, r, binary[o].name[0] == 'p' ? 4 * k_interp : k_interp, u);
        fused_product = false, singular_bases = NULL, pow_at_singularity = false;
        for (int i = 0; i < N; i++) {
            ldc p = operand(t, x[i]), q = operand(t, y[i]);
            double k = binary[o].k;
            if (binary[o].ref == l_pow) k += 4 * (double)cabsl(q * clogl(p));
            if (binary[o].k == 0) assert_true(creal(got[i]) == creall(binary[o].ref(p, q)));
            else expect_close(what, i, got[i], binary[o].ref(p, q), k, u);
        }
        free(got);
        pe_release(r);
    }
    for (size_t o = 0; o < sizeof unary / sizeof unary[0]; o++) {
        snprintf(what, sizeof what, "%s %s", pe_dtype_name(t), unary[o].name);
        pe_array r = unary[o].fn(PE_HERE, a);
        dc *got = expect_kernels_agree(what, r, k_interp, u);
        for (int i = 0; i < N; i++) expect_close(what, i, got[i], unary[o].ref(operand(t, x[i])), unary[o].k, u);
        free(got);
        pe_release(r);
    }
    pe_release(a), pe_release(b);
    tu_expect_no_error();
}

static void test_ops_c64(void **state)
{
    (void)state;
    check_ops(PE_C64);
}

static void test_ops_c128(void **state)
{
    (void)state;
    check_ops(PE_C128);
}

/* Real operands meeting complex ones (promoted: x + 0i), C scalars, casts
 * (real to complex, between the complex types), pe_complex and cond. */
static void test_mixed_casts_complex_cond(void **state)
{
    (void)state;
    static dc z[N], w[N];
    double re[N], im[N];
    random_values(z, N);
    random_values(w, N);
    for (int i = 0; i < N; i++) re[i] = uniform(-3, 3), im[i] = i % 5 == 0 ? -0.0 : uniform(-3, 3);
    int64_t n = N;
    pe_array zc = make(PE_C128, 1, &n, z), wc = make(PE_C64, 1, &n, w);
    pe_array x = pe_from_host(PE_F64, 1, &n, re), y = pe_from_host(PE_F64, 1, &n, im);
    float ref32[N];
    for (int i = 0; i < N; i++) ref32[i] = (float)re[i];
    pe_array x32 = pe_from_host(PE_F32, 1, &n, ref32);

    pe_array r = pe_mul(pe_add(zc, x), 2.5); /* (z + x) * 2.5: c128 with f64 and a C double */
    dc *got = expect_kernels_agree("(z + x) * 2.5", r, 4, U64);
    for (int i = 0; i < N; i++) expect_close("(z + x) * 2.5", i, got[i], (operand(PE_C128, z[i]) + re[i]) * 2.5L, 4, U64);
    free(got), pe_release(r);

    r = pe_div(x32, wc); /* f32 / c64: c64 */
    assert_int_equal(pe_dtype_of(r), PE_C64);
    got = expect_kernels_agree("x32 / w", r, 2, U32);
    for (int i = 0; i < N; i++) expect_close("x32 / w", i, got[i], (long double)ref32[i] / operand(PE_C64, w[i]), 8, U32);
    free(got), pe_release(r);

    r = pe_complex(x, y);
    got = expect_kernels_agree("complex(x, y)", r, 0, U64);
    for (int i = 0; i < N; i++) {
        assert_true(creal(got[i]) == re[i] && cimag(got[i]) == im[i]);
        assert_true(signbit(cimag(got[i])) == signbit(im[i]));
    }
    free(got), pe_release(r);

    r = pe_cast(x, PE_C64); /* rounded to f32, imaginary part 0 */
    got = expect_kernels_agree("cast f64 -> c64", r, 0, U32);
    for (int i = 0; i < N; i++) assert_true(creal(got[i]) == (float)re[i] && cimag(got[i]) == 0);
    free(got), pe_release(r);

    r = pe_cast(wc, PE_C128); /* exact */
    got = expect_kernels_agree("cast c64 -> c128", r, 0, U64);
    for (int i = 0; i < N; i++) assert_true(creal(got[i]) == (float)creal(w[i]) && cimag(got[i]) == (float)cimag(w[i]));
    free(got), pe_release(r);

    r = pe_cast(zc, PE_C64); /* each part rounded once */
    got = expect_kernels_agree("cast c128 -> c64", r, 0, U32);
    for (int i = 0; i < N; i++) assert_true(creal(got[i]) == (float)creal(z[i]) && cimag(got[i]) == (float)cimag(z[i]));
    free(got), pe_release(r);

    r = pe_cond(pe_gt(x, 0.0), zc, wc); /* c128 where x > 0, else w widened */
    got = expect_kernels_agree("cond(x > 0, z, w)", r, 0, U64);
    for (int i = 0; i < N; i++) {
        dc want = re[i] > 0 ? z[i] : CMPLX((float)creal(w[i]), (float)cimag(w[i]));
        assert_true(creal(got[i]) == creal(want) && cimag(got[i]) == cimag(want));
    }
    free(got), pe_release(r);

    r = pe_add(pe_real(zc), pe_abs(wc)); /* real results of complex operands, fused with a real op */
    got = expect_kernels_agree("real(z) + abs(w)", r, 2, U64);
    for (int i = 0; i < N; i++) { /* abs(w) is f32: its rounding, not the sum's magnitude, bounds the error */
        long double aw = cabsl(operand(PE_C64, w[i])), want = creall(operand(PE_C128, z[i])) + aw;
        assert_true(fabsl(creal(got[i]) - want) <= U32 * aw && cimag(got[i]) == 0);
    }
    free(got), pe_release(r);
    pe_release(zc), pe_release(wc), pe_release(x), pe_release(y), pe_release(x32);
    tu_expect_no_error();
}

/* ------------------------------------------------------------ fused chains */

/* z <- z^2 + c, 8 times, then |z|: one kernel (the reserve for the
 * lowering is tight enough), no store between iterations; against the
 * interpreter and a C loop. */
static void test_mandelbrot_chain(void **state)
{
    (void)state;
    enum { W = 37, H = 29, ITER = 8 };
    static dc c[W * H];
    for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++) c[i * W + j] = CMPLX(-0.7 + 0.9 * j / W, -0.5 + 1.0 * i / H);
    int64_t shape[2] = {H, W};
    for (int pass = 0; pass < 2; pass++) {
        pe_dtype t = pass ? PE_C64 : PE_C128;
        pe_array cc = make(t, 2, shape, c), z = cc;
        pe_retain(z);
        pe_stats before = tu_stats();
        for (int it = 0; it < ITER; it++) {
            pe_array next = pe_add(pe_mul(z, z), cc);
            pe_release(z);
            z = next;
        }
        pe_array m = pe_abs(z);
        /* c128: the products and sums are the interpreter's, |z| within a few ulps of hypot */
        dc *got = expect_kernels_agree("mandelbrot", m, pass ? 2 : 4, pass ? U32 : U64);
        pe_stats after = tu_stats();
        assert_int_equal(after.kernels_launched - before.kernels_launched, 1); /* fused: 17 ops, one kernel */
        for (int i = 0; i < W * H; i++) {
            dc zz = pass ? (dc)CMPLXF((float)creal(c[i]), (float)cimag(c[i])) : c[i];
            for (int it = 0; it < ITER; it++) {
                dc q = CMPLX(creal(zz) * creal(zz) - cimag(zz) * cimag(zz), 2 * creal(zz) * cimag(zz)) + c[i];
                if (pass) q = CMPLXF((float)creal(q), (float)cimag(q));
                zz = q;
            }
            double want = cabs(zz);
            double allowed = pass ? 1e-4 * fmax(want, 1) : 4 * U64 * want;
            if (isfinite(want) && want < 1e30 && !(fabs(creal(got[i]) - want) <= allowed))
                fail_msg("mandelbrot %s point %d: %.17g, the C loop %.17g", pass ? "c64" : "c128", i, creal(got[i]), want);
        }
        free(got);
        pe_release(m), pe_release(z), pe_release(cc);
    }
    tu_expect_no_error();
}

/* sum |exp(i x) y|: a real reduction of a complex chain, all in one kernel. */
static void test_phase_chain_into_real_sum(void **state)
{
    (void)state;
    static dc y[N];
    double x[N];
    random_values(y, N);
    for (int i = 0; i < N; i++) x[i] = uniform(-10, 10);
    int64_t n = N;
    pe_array xa = pe_from_host(PE_F64, 1, &n, x), ya = make(PE_C128, 1, &n, y);
    pe_array zero = pe_mul(xa, 0.0);
    pe_array e = pe_abs(pe_mul(pe_exp(pe_complex(zero, xa)), ya));
    pe_array s = pe_sum(e);
    pe_stats before = tu_stats();
    double got;
    assert_int_equal(pe_read_f64(s, &got), PE_OK);
    pe_stats after = tu_stats();
    assert_int_equal(after.ops_interpreted, before.ops_interpreted);
    long double want = 0;
    for (int i = 0; i < N; i++) want += cabsl(cexpl(CMPLXL(0, x[i])) * operand(PE_C128, y[i]));
    assert_true(fabsl(got - want) <= 16 * U64 * want);
    pe_release(s), pe_release(e), pe_release(zero), pe_release(xa), pe_release(ya);
    tu_expect_no_error();
}

/* ------------------------------------------------------------------ views */

static void test_views_of_complex_arrays(void **state)
{
    (void)state;
    enum { R = 33, C = 21 };
    static dc a[R * C], b[C * R];
    random_values(a, R * C);
    random_values(b, C * R);
    int64_t sa[2] = {R, C}, sb[2] = {C, R};
    for (int pass = 0; pass < 2; pass++) {
        pe_dtype t = pass ? PE_C64 : PE_C128;
        double u = pass ? U32 : U64;
        pe_array A = make(t, 2, sa, a), B = make(t, 2, sb, b);
        /* transpose(A) * B: A read through a transposing map */
        pe_array r = pe_mul(pe_transpose(A), B);
        dc *got = expect_kernels_agree("transpose(A) * B", r, 2, u);
        for (int i = 0; i < C; i++)
            for (int j = 0; j < R; j++)
                expect_close("transpose(A) * B", i * R + j, got[i * R + j], operand(t, a[j * C + i]) * operand(t, b[i * R + j]), 4, u);
        free(got), pe_release(r);
        /* a strided slice (every other row, reversed columns), conjugated */
        int64_t start[2] = {1, C - 1}, count[2] = {(R - 1) / 2, C}, step[2] = {2, -1};
        r = pe_conj(pe_slice_step(A, start, count, step));
        got = expect_kernels_agree("conj(A[1::2, ::-1])", r, 0, u);
        for (int i = 0; i < count[0]; i++)
            for (int j = 0; j < C; j++) {
                dc src = a[(1 + 2 * i) * C + (C - 1 - j)];
                ldc want = conjl(operand(t, src));
                assert_true(creal(got[i * C + j]) == (double)creall(want) && cimag(got[i * C + j]) == (double)cimagl(want));
            }
        free(got), pe_release(r);
        pe_release(A), pe_release(B);
    }
    tu_expect_no_error();
}

/* ------------------------------------------------------------- reductions */

/* sum, mean, dot, vdot of complex values: two real reductions (the part
 * sums, jit/record/record.c's record_complex_sum), each a kernel with its
 * fused producer: no port on the interpreter.  Against the interpreter
 * (pe_reference) and <complex.h> in long double, both normwise over the
 * terms: the interpreter's Neumaier sums in double and the kernels'
 * chunked compensated ones differ by a few roundings of the result; a c64
 * producer rounds each term to floats.  Over all elements and along each
 * axis.  prod: test_prod_is_kernels. */
typedef struct {
    const char *name;
    int axis; /* -1: all elements */
} reduction_case;

static pe_array complex_reduction(int c, int axis, pe_array a, pe_array b)
{
    switch (c) {
    case 0: return axis < 0 ? pe_sum(pe_add(pe_mul(a, b), a)) : pe_sum_axis(pe_add(pe_mul(a, b), a), axis);
    case 1: return axis < 0 ? pe_mean(pe_add(pe_mul(a, b), a)) : pe_mean_axis(pe_add(pe_mul(a, b), a), axis);
    case 2: return pe_dot(pe_add(a, b), b);
    default: return pe_vdot(pe_add(a, b), b);
    }
}

/* The long double value of case c at output element o (rows x cols input;
 * axis 0 sums a column, 1 a row, -1 everything) and its scale, the sum of
 * the terms' magnitudes. */
static ldc complex_reduction_want(int c, int axis, pe_dtype t, const dc *z, const dc *w, int rows, int cols, int o,
                                  long double *scale)
{
    ldc acc = 0;
    int count = 0;
    *scale = 0;
    for (int i = 0; i < rows * cols; i++) {
        if ((axis == 0 && i % cols != o) || (axis == 1 && i / cols != o)) continue;
        ldc p = operand(t, z[i]), q = operand(t, w[i]), term = c < 2 ? p * q + p : c == 2 ? (p + q) * q : conjl(p + q) * q;
        acc += term;
        *scale += cabsl(p) * (1 + cabsl(q)) + cabsl(q) * cabsl(q);
        count++;
    }
    if (c == 1) acc /= count, *scale /= count;
    return acc;
}

static void test_reductions_are_kernels(void **state)
{
    (void)state;
    enum { ROWS = 7, COLS = N / 7 };
    static dc z[N], w[N];
    random_values(z, N);
    random_values(w, N);
    static const char *const names[] = {"sum", "mean", "dot", "vdot"};
    for (pe_dtype t = PE_C64; t <= PE_C128; t++) {
        double u = is_c64(t) ? U32 : U64;
        int64_t shape[2] = {ROWS, COLS};
        pe_array a = make(t, 2, shape, z), b = make(t, 2, shape, w);
        for (int c = 0; c < 4; c++)
            for (int axis = -1; axis <= (c < 2 ? 1 : -1); axis++) {
                pe_array r = complex_reduction(c, axis, a, b);
                assert_int_equal(pe_dtype_of(r), t);
                pe_array ref = pe_reference(r); /* the interpreter's value of the whole expression */
                dc *want_interp = read_any(ref);
                pe_stats before = tu_stats();
                dc *got = read_any(r);
                pe_stats after = tu_stats();
                if (after.ops_interpreted != before.ops_interpreted)
                    fail_msg("%s %s axis %d: %llu port(s) on the interpreter", names[c], pe_dtype_name(t), axis,
                             (unsigned long long)(after.ops_interpreted - before.ops_interpreted));
                assert_true(after.kernels_launched > before.kernels_launched);
                int outputs = axis < 0 ? 1 : axis == 0 ? COLS : ROWS;
                assert_int_equal(pe_numel(r), outputs);
                for (int o = 0; o < outputs; o++) {
                    long double scale;
                    ldc want = complex_reduction_want(c, axis, t, z, w, ROWS, COLS, o, &scale);
                    long double to_ld = cabsl(CMPLXL(creal(got[o]), cimag(got[o])) - want);
                    long double to_interp = cabsl(CMPLXL(creal(got[o]) - creal(want_interp[o]),
                                                         cimag(got[o]) - cimag(want_interp[o])));
                    if (!(to_ld <= 8 * u * scale) || !(to_interp <= 8 * u * scale))
                        fail_msg("%s %s axis %d element %d: error %.3Lg (long double), %.3Lg (interpreter), scale %.3Lg",
                                 names[c], pe_dtype_name(t), axis, o, to_ld, to_interp, scale);
                }
                free(got), free(want_interp);
                pe_release(ref), pe_release(r);
            }
        pe_release(a), pe_release(b);
    }
    tu_expect_no_error();
}

/* ------------------------------------------------------------------ prod */

/* prod of complex values in polar form (jit/record/record.c's
 * record_complex_prod: |z|'s product and arg z's sum, each a real
 * reduction kernel, joined element-wise), over all elements and along each
 * axis, c64 and c128 (both computed in double).  The oracle: C99's
 * sequential product in long double complex of the operands as stored.
 * The bound, normwise: |got - want| <= ((3 + 2 pi) n + 8) u |want|, u
 * double's unit roundoff (hypot's and the real product's roundings, 3 n u;
 * T = sum arg z_k within u sum |arg z_k| + the compensated sum's u |T|,
 * both <= pi n u; cos and sin of T and the last product a few u), plus
 * 2 u_f32 where a c64 result is rounded to floats once. */
static double prod_bound(pe_dtype t, int64_t n) { return (10.0 * (double)n + 8) * U64 + (is_c64(t) ? 2 * U32 : 0); }

static void expect_prod_close(const char *what, pe_dtype t, int o, dc got, ldc want, int64_t n)
{
    long double err = cabsl(CMPLXL(creal(got), cimag(got)) - want), bound = prod_bound(t, n) * cabsl(want);
    if (!(err <= bound))
        fail_msg("%s %s element %d: got %.17g%+.17gi, want %.17Lg%+.17Lgi (error %.3Lg, allowed %.3Lg)", what,
                 pe_dtype_name(t), o, creal(got), cimag(got), creall(want), cimagl(want), err, bound);
}

/* The sequential product (C99, long double) of conj(z) (conjugate) or z
 * over output element o of a rows x cols array reduced along axis (-1:
 * everything), the operands as stored in t. */
static ldc sequential_prod(pe_dtype t, const dc *z, int rows, int cols, int axis, int o, bool conjugate)
{
    ldc acc = 1;
    for (int i = 0; i < rows * cols; i++) {
        if ((axis == 0 && i % cols != o) || (axis == 1 && i / cols != o)) continue;
        acc *= conjugate ? conjl(operand(t, z[i])) : operand(t, z[i]);
    }
    return acc;
}

/* Random factors near the unit circle (|z| = e^x, |x| <= 0.05, every
 * angle; 1001 of them stay well within range), the producer conj fused;
 * and in c128 a product of products (pe_mul's textbook product per factor,
 * 3 u more each) — against the sequential product and the interpreter's
 * value of the same expression. */
static void test_prod_random_factors(void **state)
{
    (void)state;
    enum { ROWS = 7, COLS = N / 7 };
    static dc z[N], w[N];
    for (int i = 0; i < N; i++) {
        double r = exp(uniform(-0.05, 0.05)), a = uniform(-3.14159, 3.14159), b = uniform(-3.14159, 3.14159);
        z[i] = CMPLX(r * cos(a), r * sin(a)), w[i] = CMPLX(cos(b) / r, sin(b) / r);
    }
    int64_t shape[2] = {ROWS, COLS};
    for (pe_dtype t = PE_C64; t <= PE_C128; t++) {
        pe_array a = make(t, 2, shape, z), b = make(t, 2, shape, w);
        for (int axis = -1; axis <= 1; axis++) {
            pe_array r = axis < 0 ? pe_prod(pe_conj(a)) : pe_prod_axis(pe_conj(a), axis);
            assert_int_equal(pe_dtype_of(r), t);
            int outputs = axis < 0 ? 1 : axis == 0 ? COLS : ROWS, n = axis < 0 ? N : axis == 0 ? ROWS : COLS;
            assert_int_equal(pe_numel(r), outputs);
            pe_array ref = pe_reference(r);
            dc *interp = read_any(ref), *got = read_by_kernels("prod(conj)", r);
            for (int o = 0; o < outputs; o++) {
                ldc want = sequential_prod(t, z, ROWS, COLS, axis, o, true);
                expect_prod_close("prod(conj) against long double", t, o, got[o], want, n);
                expect_prod_close("prod(conj) against the interpreter", t, o, got[o],
                                  CMPLXL(creal(interp[o]), cimag(interp[o])), n);
            }
            free(got), free(interp), pe_release(ref), pe_release(r);
        }
        if (t == PE_C128) {
            pe_array r = pe_prod_axis(pe_mul(a, b), 1);
            dc *got = read_by_kernels("prod(mul)", r);
            for (int o = 0; o < ROWS; o++) {
                ldc want = 1;
                for (int i = o * COLS; i < (o + 1) * COLS; i++) want *= operand(t, z[i]) * operand(t, w[i]);
                expect_prod_close("prod(mul)", t, o, got[o], want, 2 * COLS);
            }
            free(got), pe_release(r);
        }
        pe_release(a), pe_release(b);
    }
    tu_expect_no_error();
}

/* The n-th roots of unity (stored rounded) multiply to (-1)^(n+1): within
 * the bound plus the inputs' own rounding, n u_in, of the closed form, and
 * within the bound of the sequential product.  Odd and even n, over all
 * elements and along each axis (every row, or every column, the roots). */
static void test_prod_roots_of_unity(void **state)
{
    (void)state;
    static const struct {
        int rows, cols, axis;
    } cases[] = {{1, 1001, -1}, {1, 12, -1}, {4, 257, 1}, {256, 3, 0}, {5, 1, 0}};
    for (pe_dtype t = PE_C64; t <= PE_C128; t++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            int rows = cases[c].rows, cols = cases[c].cols, axis = cases[c].axis, total = rows * cols;
            int n = axis < 0 ? total : axis == 0 ? rows : cols, outputs = total / n;
            dc *z = malloc((size_t)total * sizeof *z);
            for (int i = 0; i < total; i++) {
                int k = (axis == 0 ? i / cols : i % cols) + (axis == 0 ? i % cols : i / cols); /* each line from another root */
                long double angle = 2 * 3.14159265358979323846264338327950288L * (k % n) / n;
                z[i] = CMPLX((double)cosl(angle), (double)sinl(angle));
            }
            int64_t shape[2] = {rows, cols};
            pe_array a = make(t, 2, shape, z);
            pe_array r = axis < 0 ? pe_prod(a) : pe_prod_axis(a, axis);
            dc *got = read_by_kernels("prod of roots of unity", r);
            long double closed = n % 2 ? 1 : -1, inputs = 2 * n * (is_c64(t) ? U32 : U64);
            for (int o = 0; o < outputs; o++) {
                expect_prod_close("roots of unity, sequentially", t, o, got[o], sequential_prod(t, z, rows, cols, axis, o, false), n);
                long double err = cabsl(CMPLXL(creal(got[o]), cimag(got[o])) - closed);
                if (!(err <= prod_bound(t, n) + inputs))
                    fail_msg("%s: %d roots of unity multiply to %.17g%+.17gi, not %.0Lf", pe_dtype_name(t), n, creal(got[o]),
                             cimag(got[o]), closed);
            }
            free(got), free(z), pe_release(r), pe_release(a);
        }
    tu_expect_no_error();
}

/* Edge cases, the values the polar form defines (record_complex_prod):
 * c64 factors whose partial products leave f32's range (the product is
 * taken in double: right); a c128 product that overflows: the infinity in
 * the direction of sum arg z_k; a zero factor: zero; NaN: NaN + NaN i; an
 * infinite factor: an infinity in its direction times the rest. */
static void test_prod_edges(void **state)
{
    (void)state;
    /* c64: 1e20 * 1e20 overflows f32, the product does not */
    dc big[5] = {CMPLX(1e20 * cos(0.3), 1e20 * sin(0.3)), CMPLX(1e20 * cos(-1.1), 1e20 * sin(-1.1)),
                 CMPLX(1e-20 * cos(2.0), 1e-20 * sin(2.0)), CMPLX(1e-20 * cos(0.5), 1e-20 * sin(0.5)), CMPLX(3, 4)};
    int64_t five = 5;
    pe_array a = make(PE_C64, 1, &five, big), r = pe_prod(a);
    dc *got = read_by_kernels("c64 past f32's range", r);
    expect_prod_close("c64 past f32's range", PE_C64, 0, got[0], sequential_prod(PE_C64, big, 1, 5, -1, 0, false), 5);
    free(got), pe_release(r), pe_release(a);

    /* c128 overflow: row 0 at angles 0.1 (sum 0.3: +inf + inf i), row 1 at 1 (sum 3: -inf + inf i) */
    dc huge[6];
    for (int i = 0; i < 6; i++) {
        double angle = i < 3 ? 0.1 : 1.0;
        huge[i] = CMPLX(1e200 * cos(angle), 1e200 * sin(angle));
    }
    int64_t two_by_three[2] = {2, 3};
    a = make(PE_C128, 2, two_by_three, huge), r = pe_prod_axis(a, 1);
    got = read_by_kernels("c128 overflow", r);
    assert_true(creal(got[0]) == INFINITY && cimag(got[0]) == INFINITY);
    assert_true(creal(got[1]) == -INFINITY && cimag(got[1]) == INFINITY);
    free(got), pe_release(r), pe_release(a);

    /* along axis 1: a zero, a negative zero, a NaN part, an infinite factor times 2i */
    static const double rows[4][3][2] = {{{2, 1}, {0, 0}, {-3, 0.5}},
                                         {{-0.0, -0.0}, {1, 1}, {0.5, -2}},
                                         {{1, 1}, {NAN, 1}, {2, 0}},
                                         {{INFINITY, INFINITY}, {0, 2}, {1, 0}}};
    dc edge[12];
    for (int i = 0; i < 12; i++) edge[i] = CMPLX(rows[i / 3][i % 3][0], rows[i / 3][i % 3][1]);
    int64_t four_by_three[2] = {4, 3};
    for (pe_dtype t = PE_C64; t <= PE_C128; t++) {
        a = make(t, 2, four_by_three, edge), r = pe_prod_axis(a, 1);
        got = read_by_kernels("edge values", r);
        for (int o = 0; o < 2; o++)
            if (!(creal(got[o]) == 0 && cimag(got[o]) == 0))
                fail_msg("%s: a product with a zero factor is %g%+gi", pe_dtype_name(t), creal(got[o]), cimag(got[o]));
        assert_true(isnan(creal(got[2])) && isnan(cimag(got[2])));
        /* arg: pi/4 + pi/2 + 0 = 3 pi/4 */
        assert_true(creal(got[3]) == -INFINITY && cimag(got[3]) == INFINITY);
        free(got), pe_release(r), pe_release(a);
    }
    tu_expect_no_error();
}

/* --------------------------------------------------------------- lowering */

/* Every complex kernel of cuda_test_kernels.h (each op in c64 and c128,
 * with a real second operand, casts, pe_complex, cond) lowered: no complex
 * value left, valid, accepted by both generators, grown by no more than
 * the program generator reserved (the op's growth, a second load per
 * operand, a second store). */
static void test_lowering_leaves_reals_within_the_reserved_room(void **state)
{
    (void)state;
    kernel_list l = complex_kernels();
    for (size_t c = 0; c < l.n; c++) {
        kir_kernel k = l.k[c];
        const kir_inst written = k.body[k.n_body - 2], *op = &written; /* k's body is rewritten below */
        pe_dtype operand0 = (pe_dtype)k.params[0].dtype;
        assert_true(pe_cpu_can_emit((pe_op)op->op, (pe_dtype)op->ctype, (pe_dtype)op->dtype, operand0));
        assert_true(pe_cuda_can_emit((pe_op)op->op, (pe_dtype)op->ctype, (pe_dtype)op->dtype, operand0));
        int before = k.n_body, reserved = kir_complex_growth((pe_op)op->op) + 3 * op->n + 2; /* proggen's complex_growth for loaded operands */
        assert_true(kir_has_complex(&k));
        assert_true(kir_lower(&k));
        assert_true(kir_lowered(&k) && kir_valid(&k) && !kir_has_complex(&k));
        assert_true(pe_kernel_generatable(&k, pe_cpu_can_emit) && pe_kernel_generatable(&k, pe_cuda_can_emit));
        if (k.n_body - before > reserved)
            fail_msg("%s in %s grew by %d, %d reserved", pe_op_table[op->op].name, pe_dtype_name((pe_dtype)op->ctype),
                     k.n_body - before, reserved);
    }
    assert_true(l.n > 50);
    free(l.k);
    /* no reduction and no gather of complex values is taken (they arrive as real reductions) */
    for (pe_dtype ct = PE_C64; ct <= PE_C128; ct++) {
        assert_false(pe_cpu_can_emit(PE_OP_sum, ct, ct, ct) || pe_cuda_can_emit(PE_OP_sum, ct, ct, ct));
        assert_false(pe_cpu_can_emit(PE_OP_prod, ct, ct, ct) || pe_cuda_can_emit(PE_OP_prod, ct, ct, ct));
        assert_false(pe_cpu_can_emit(PE_OP_gather, ct, ct, ct) || pe_cuda_can_emit(PE_OP_gather, ct, ct, ct));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lowering_leaves_reals_within_the_reserved_room),
        cmocka_unit_test_setup_teardown(test_ops_c64, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_ops_c128, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_mixed_casts_complex_cond, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_mandelbrot_chain, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_phase_chain_into_real_sum, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_views_of_complex_arrays, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_reductions_are_kernels, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_prod_random_factors, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_prod_roots_of_unity, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_prod_edges, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
