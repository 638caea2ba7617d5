/* test_complex.c — the complex dtypes (PE_C64, PE_C128) against C99
 * <complex.h> in long double complex: host layout round trips (float
 * complex / double complex buffers through pe_from_host, pe_adopt, pe_read,
 * pe_map), every element-wise op that takes complex operands on random
 * inputs, reductions (sum, prod, mean over all and along each axis, dot
 * and vdot), views, promotion (with C complex scalars), casts, constants,
 * robust division, signed zeros on the branch cut, real kernels around
 * complex values (against the interpreter's reference), and the errors of
 * ops complex operands do not take, at the caller's line.  Both executors.
 *
 * Bounds are normwise, |got - want| <= k u |want| (u: the unit roundoff of
 * the result's parts, 2^-53 for c128, 2^-24 for c64): the standard measure
 * for complex arithmetic (Higham, Accuracy and Stability, 3.6).  c128: add,
 * sub, neg, conj are one rounding per part (k = 2); the textbook product is
 * within sqrt(2) * 2u (k = 4); Smith's quotient within a few u (k = 8);
 * glibc's cexp, clog, csqrt within a few ulps per part (k = 8); cpow is
 * cexp(b clog a), whose error grows with |b log a| (k = 8 + 4 |b log a|).
 * c64: computed in double and rounded once per part (k = 2).  Reductions:
 * part-by-part compensated sums within 2u |sum| + 4 n u^2 sum|x|; products
 * (polar form, jit/record/record.c's record_complex_prod) within
 * ((3 + 2 pi) n + 8) u |prod| (k = 10 n + 8; c64: k = 2). */
#include "complex_values.h"

#define N 257

/* What the array holds, as double complex (c64 values exactly). */
static double complex *read_c(pe_array a, pe_dtype want)
{
    assert_int_equal(pe_dtype_of(a), want);
    int64_t n = pe_numel(a);
    double complex *out = malloc((size_t)(n ? n : 1) * sizeof *out);
    if (is_c64(want)) {
        float complex *f = malloc((size_t)(n ? n : 1) * sizeof *f);
        assert_int_equal(pe_read(a, f, (size_t)n * sizeof *f), PE_OK);
        for (int64_t i = 0; i < n; i++) out[i] = f[i];
        free(f);
    } else {
        assert_int_equal(pe_read(a, out, (size_t)n * sizeof *out), PE_OK);
    }
    return out;
}

static void expect_close_real(const char *what, int i, double got, long double want, double k, double u)
{
    long double err = fabsl(got - want), bound = k * u * fabsl(want);
    if (!(err <= bound)) fail_msg("%s element %d: got %.17g, want %.17Lg (allowed %.3Lg)", what, i, got, want, bound);
}

static double *read_real(pe_array a, pe_dtype want)
{
    assert_int_equal(pe_dtype_of(a), want);
    return tu_read_as_f64(a, NULL);
}

/* ------------------------------------------------------------ host layout */

static void free_adopted(void *data, void *ctx)
{
    (void)ctx;
    free(data);
}

static void test_host_layout(void **state)
{
    (void)state;
    double complex d[6];
    float complex f[6];
    for (int i = 0; i < 6; i++) {
        d[i] = CMPLX(i + 0.25, -2.5 * i);
        f[i] = CMPLXF(0.5f * (float)i, (float)i - 3.0f);
    }
    int64_t shape[2] = {2, 3};
    pe_array a = pe_from_host(PE_C128, 2, shape, d), b = pe_from_host(PE_C64, 2, shape, f);
    double complex d_back[6];
    float complex f_back[6];
    assert_int_equal(pe_read(a, d_back, sizeof d_back), PE_OK);
    assert_int_equal(pe_read(b, f_back, sizeof f_back), PE_OK);
    assert_memory_equal(d, d_back, sizeof d);
    assert_memory_equal(f, f_back, sizeof f);
    /* a wrong byte count (a real-sized buffer) is refused */
    double half[6];
    int line = __LINE__ + 1;
    assert_int_equal(pe_read(a, half, sizeof half), PE_E_ARG);
    tu_expect_error(PE_E_ARG, line);
    /* pe_map: the same interleaved layout */
    const double *m = pe_map(a);
    for (int i = 0; i < 6; i++) assert_true(m[2 * i] == creal(d[i]) && m[2 * i + 1] == cimag(d[i]));
    pe_unmap(a);
    /* pe_adopt takes a double complex buffer as it is */
    double complex *owned = malloc(sizeof d);
    memcpy(owned, d, sizeof d);
    pe_array c = pe_adopt(PE_C128, 2, shape, owned, free_adopted, NULL);
    double complex *back = read_c(pe_transpose(c), PE_C128);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) assert_true(back[i * 2 + j] == d[j * 3 + i]);
    free(back);
    /* a one-element complex array is no pe_read_f64 */
    double one;
    int64_t n1 = 1;
    pe_array z = pe_from_host(PE_C128, 1, &n1, d);
    line = __LINE__ + 1;
    assert_int_equal(pe_read_f64(z, &one), PE_E_TYPE);
    tu_expect_error(PE_E_TYPE, line);
    pe_release(z), pe_release(a), pe_release(b), pe_release(c);
    tu_expect_no_error();
}

/* ------------------------------------------------------- element-wise ops */

typedef pe_array (*op1)(const pe_site *, pe_array);
typedef pe_array (*op2)(const pe_site *, pe_array, pe_array);

static long double l_abs(ldc a) { return cabsl(a); }
static long double l_arg(ldc a) { return cargl(a); }
static long double l_real(ldc a) { return creall(a); }
static long double l_imag(ldc a) { return cimagl(a); }

static void check_elementwise(pe_dtype t)
{
    double complex x[N], y[N];
    random_values(x, N);
    random_values(y, N);
    int64_t n = N;
    pe_array a = make(t, 1, &n, x), b = make(t, 1, &n, y);
    double u = is_c64(t) ? U32 : U64;
    pe_dtype part = is_c64(t) ? PE_F32 : PE_F64;
    static const struct {
        const char *name;
        op2 fn;
        ldc (*ref)(ldc, ldc);
        double k;
    } binary[] = {{"add", pe_add_at, l_add, 2}, {"sub", pe_sub_at, l_sub, 2}, {"mul", pe_mul_at, l_mul, 4},
                  {"div", pe_div_at, l_div, 8},   {"pow", pe_pow_at, l_pow, 8}};
    for (size_t o = 0; o < sizeof binary / sizeof *binary; o++) {
        double complex *got = read_c(binary[o].fn(PE_HERE, a, b), t);
        for (int i = 0; i < N; i++) {
            ldc xa = operand(t, x[i]), yb = operand(t, y[i]);
            double k = is_c64(t) ? 2 : binary[o].k;
            if (binary[o].ref == l_pow && !is_c64(t)) k += 4 * (double)cabsl(yb * clogl(xa));
            expect_close(binary[o].name, i, got[i], binary[o].ref(xa, yb), k, u);
        }
        free(got);
    }
    static const struct {
        const char *name;
        op1 fn;
        ldc (*ref)(ldc);
        double k;
    } unary[] = {{"neg", pe_neg_at, l_neg, 2}, {"conj", pe_conj_at, l_conj, 2}, {"exp", pe_exp_at, l_exp, 8},
                 {"log", pe_log_at, l_log, 8}, {"sqrt", pe_sqrt_at, l_sqrt, 8}};
    for (size_t o = 0; o < sizeof unary / sizeof *unary; o++) {
        double complex *got = read_c(unary[o].fn(PE_HERE, a), t);
        for (int i = 0; i < N; i++)
            expect_close(unary[o].name, i, got[i], unary[o].ref(operand(t, x[i])), is_c64(t) ? 2 : unary[o].k, u);
        free(got);
    }
    static const struct {
        const char *name;
        op1 fn;
        long double (*ref)(ldc);
    } to_real[] = {{"abs", pe_abs_at, l_abs}, {"arg", pe_arg_at, l_arg}, {"real", pe_real_at, l_real},
                   {"imag", pe_imag_at, l_imag}};
    for (size_t o = 0; o < sizeof to_real / sizeof *to_real; o++) {
        double *got = read_real(to_real[o].fn(PE_HERE, a), part);
        for (int i = 0; i < N; i++) expect_close_real(to_real[o].name, i, got[i], to_real[o].ref(operand(t, x[i])), 4, u);
        free(got);
    }
    /* eq / ne: every third element equal, every third sharing only the real part */
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0) y[i] = x[i];
        if (i % 3 == 1) y[i] = CMPLX(creal(x[i]), cimag(x[i]) + 1);
    }
    pe_array c = make(t, 1, &n, y);
    double *eq = read_real(pe_eq(a, c), PE_BOOL), *ne = read_real(pe_ne(a, c), PE_BOOL);
    for (int i = 0; i < N; i++) {
        assert_true(eq[i] == (i % 3 == 0));
        assert_true(ne[i] == (i % 3 != 0));
    }
    free(eq), free(ne);
    pe_release(a), pe_release(b), pe_release(c);
    tu_expect_no_error();
}

static void test_elementwise_c128(void **state) { (void)state; check_elementwise(PE_C128); }
static void test_elementwise_c64(void **state) { (void)state; check_elementwise(PE_C64); }

/* Smith's division where |divisor|^2 would overflow or underflow, x / 0
 * (Annex G's infinities), and csqrt's branch cut keeping the zero's sign. */
static void test_division_and_branch_cuts(void **state)
{
    (void)state;
    double complex x[5] = {CMPLX(1e300, 1e300), CMPLX(1e-300, 1e-300), CMPLX(3e-20, -4e-20), CMPLX(1, 2), CMPLX(-1, 5)};
    double complex y[5] = {CMPLX(1e300, 1e300), CMPLX(1e-300, 1e-300), CMPLX(1e-310, 2e-310), CMPLX(0, 0),
                           CMPLX(-1e308, 1e308)};
    int64_t n = 5;
    double complex *q = read_c(pe_div(pe_from_host(PE_C128, 1, &n, x), pe_from_host(PE_C128, 1, &n, y)), PE_C128);
    assert_true(q[0] == 1 && q[1] == 1);
    expect_close("small / subnormal", 2, q[2], CMPLXL(3e-20, -4e-20) / CMPLXL(1e-310, 2e-310), 8, U64);
    assert_true(isinf(creal(q[3])) && creal(q[3]) > 0 && isinf(cimag(q[3])) && cimag(q[3]) > 0);
    expect_close("huge divisor", 4, q[4], CMPLXL(-1, 5) / CMPLXL(-1e308, 1e308), 8, U64);
    free(q);
    double complex cut[2] = {CMPLX(-4, 0.0), CMPLX(-4, -0.0)};
    int64_t two = 2;
    double complex *r = read_c(pe_sqrt(pe_from_host(PE_C128, 1, &two, cut)), PE_C128);
    assert_true(r[0] == CMPLX(0, 2) && r[1] == CMPLX(0, -2));
    free(r);
    tu_expect_no_error();
}

/* ---------------------------------------------------- promotion and casts */

static void test_promotion(void **state)
{
    (void)state;
    int64_t n = 4;
    float f[4] = {1, 2, 3, 4};
    double d[4] = {1, 2, 3, 4};
    int32_t k[4] = {1, 2, 3, 4};
    uint8_t bits[4] = {1, 0, 1, 0};
    double complex zd[4] = {CMPLX(1, 1), CMPLX(2, -1), CMPLX(0, 3), CMPLX(-1, 0.5)};
    pe_array af = pe_from_host(PE_F32, 1, &n, f), ad = pe_from_host(PE_F64, 1, &n, d);
    pe_array ai = pe_from_host(PE_I32, 1, &n, k), ab = pe_from_host(PE_BOOL, 1, &n, bits);
    pe_array c64 = pe_cast(pe_from_host(PE_C128, 1, &n, zd), PE_C64), c128 = pe_from_host(PE_C128, 1, &n, zd);
    struct {
        pe_array r;
        pe_dtype want;
    } cases[] = {
        {pe_add(af, c64), PE_C64},         {pe_add(ad, c64), PE_C128},       {pe_add(ai, c64), PE_C64},
        {pe_add(ab, c128), PE_C128},       {pe_add(c64, c128), PE_C128},     {pe_mul(c64, 2.0), PE_C64},
        {pe_mul(af, 2.0 + 1.0 * I), PE_C64}, {pe_mul(ad, 2.0f * I), PE_C128}, {pe_mul(ai, I), PE_C64},
        {pe_add(c128, 3), PE_C128},        {pe_abs(c64), PE_F32},            {pe_real(c128), PE_F64},
        {pe_arg(c64), PE_F32},             {pe_imag(c64), PE_F32},           {pe_eq(c64, c128), PE_BOOL},
        {pe_complex(af, af), PE_C64},      {pe_complex(ad, af), PE_C128},    {pe_complex(ai, 1), PE_C64},
        {pe_sum(c64), PE_C64},             {pe_mean(c128), PE_C128},         {pe_dot(af, c64), PE_C64},
        {pe_real(ai), PE_I32},             {pe_imag(ab), PE_I32},            {pe_arg(ai), PE_F32},
        {pe_exp(pe_cast(ai, PE_C64)), PE_C64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (pe_dtype_of(cases[i].r) != cases[i].want)
            fail_msg("case %zu: dtype %d, want %d", i, pe_dtype_of(cases[i].r), cases[i].want);
    /* values of the weak complex scalar cases: f32 * (2 + i), f64 * 2i, i32 * i */
    double complex *v = read_c(cases[6].r, PE_C64);
    for (int i = 0; i < 4; i++) assert_true(v[i] == CMPLX(2 * f[i], f[i]));
    free(v);
    v = read_c(cases[7].r, PE_C128);
    for (int i = 0; i < 4; i++) assert_true(v[i] == CMPLX(0, 2 * d[i]));
    free(v);
    v = read_c(cases[8].r, PE_C64);
    for (int i = 0; i < 4; i++) assert_true(v[i] == CMPLX(0, k[i]));
    free(v);
    v = read_c(cases[17].r, PE_C64); /* complex(i32, 1) */
    for (int i = 0; i < 4; i++) assert_true(v[i] == CMPLX(k[i], 1));
    free(v);
    /* of reals: real is the value, imag 0, arg 0 or pi */
    double *re = read_real(cases[21].r, PE_I32), *im = read_real(cases[22].r, PE_I32);
    for (int i = 0; i < 4; i++) assert_true(re[i] == k[i] && im[i] == 0);
    free(re), free(im);
    double neg[2] = {-2, 3};
    int64_t two = 2;
    double *arg = read_real(pe_arg(pe_from_host(PE_F64, 1, &two, neg)), PE_F64);
    assert_true(arg[0] == M_PI && arg[1] == 0);
    free(arg);
    tu_expect_no_error();
}

static void test_casts_and_constants(void **state)
{
    (void)state;
    int64_t n = 3;
    double d[3] = {1.5, -0.1, 1e300};
    int32_t k[3] = {7, -3, 0};
    double complex *v = read_c(pe_cast(pe_from_host(PE_F64, 1, &n, d), PE_C128), PE_C128);
    for (int i = 0; i < 3; i++) assert_true(v[i] == CMPLX(d[i], 0));
    free(v);
    v = read_c(pe_cast(pe_from_host(PE_F64, 1, &n, d), PE_C64), PE_C64); /* each part rounded to float */
    for (int i = 0; i < 3; i++) assert_true(creal(v[i]) == (double)(float)d[i] && cimag(v[i]) == 0);
    free(v);
    v = read_c(pe_cast(pe_from_host(PE_I32, 1, &n, k), PE_C64), PE_C64);
    for (int i = 0; i < 3; i++) assert_true(v[i] == CMPLX(k[i], 0));
    free(v);
    double complex z[3] = {CMPLX(0.1, -0.2), CMPLX(1e-50, 3), CMPLX(-2, 1e40)};
    pe_array c128 = pe_from_host(PE_C128, 1, &n, z), c64 = pe_cast(c128, PE_C64);
    v = read_c(c64, PE_C64);
    for (int i = 0; i < 3; i++)
        assert_true(tu_same_value(creal(v[i]), (float)creal(z[i])) && tu_same_value(cimag(v[i]), (float)cimag(z[i])));
    double complex *w = read_c(pe_cast(c64, PE_C128), PE_C128); /* c64 -> c128 exactly */
    assert_memory_equal(v, w, sizeof z);
    free(v), free(w);
    /* constants: with an imaginary part, without, and real fills of a complex dtype */
    int64_t shape[2] = {2, 2};
    v = read_c(pe_fill_c(PE_C64, 2, shape, 0.5, 3), PE_C64);
    for (int i = 0; i < 4; i++) assert_true(v[i] == CMPLX(0.5, 3));
    free(v);
    v = read_c(pe_scalar_c(PE_C128, 1, -2), PE_C128);
    assert_true(v[0] == CMPLX(1, -2));
    free(v);
    v = read_c(pe_fill(PE_C128, 2, shape, 2.5), PE_C128);
    for (int i = 0; i < 4; i++) assert_true(v[i] == CMPLX(2.5, 0));
    free(v);
    v = read_c(pe_add(pe_scalar_c(PE_C128, 2, 0), pe_scalar_c(PE_C128, 0, -0.0)), PE_C128); /* uniform + stored */
    assert_true(creal(v[0]) == 2 && cimag(v[0]) == 0);
    free(v);
    v = read_c(pe_mul(c128, pe_scalar_c(PE_C128, 0, 1)), PE_C128); /* times i */
    for (int i = 0; i < 3; i++) assert_true(v[i] == CMPLX(-cimag(z[i]), creal(z[i])));
    free(v);
    pe_array uniform_c = pe_fill(PE_C128, 1, &n, -1.0);
    const double *mapped = pe_map(uniform_c); /* a uniform complex constant materialised */
    for (int i = 0; i < 3; i++) assert_true(mapped[2 * i] == -1 && mapped[2 * i + 1] == 0);
    pe_unmap(uniform_c);
    tu_expect_no_error();
}

/* -------------------------------------------------------------- reductions */

static void check_reductions(pe_dtype t)
{
    enum { R = 7, C = 9 };
    double complex x[R * C], y[R * C];
    random_values(x, R * C);
    random_values(y, R * C);
    for (int i = 0; i < R * C; i++) x[i] /= cabs(x[i]) > 1.5 ? 2 : 1; /* products stay near 1 */
    int64_t shape[2] = {R, C}, n = R * C;
    pe_array a = make(t, 2, shape, x), b = make(t, 2, shape, y);
    double u = is_c64(t) ? U32 : U64, uc = U64; /* computed in double, rounded to u */
    /* over all elements */
    ldc sum = 0, prod = 1, dot = 0, vdot = 0;
    long double abs_sum = 0, abs_dot = 0;
    for (int i = 0; i < n; i++) {
        ldc xa = operand(t, x[i]), yb = operand(t, y[i]);
        sum += xa, prod *= xa, dot += xa * yb, vdot += conjl(xa) * yb;
        abs_sum += cabsl(xa), abs_dot += cabsl(xa) * cabsl(yb);
    }
    double complex *g = read_c(pe_sum(a), t);
    assert_true(cabsl(g[0] - sum) <= 2 * u * cabsl(sum) + 4 * n * uc * uc * abs_sum);
    free(g);
    g = read_c(pe_mean(a), t);
    assert_true(cabsl(g[0] - sum / n) <= 2 * u * cabsl(sum / n) + 4 * uc * uc * abs_sum);
    free(g);
    g = read_c(pe_prod(a), t);
    expect_close("prod", 0, g[0], prod, is_c64(t) ? 2 : 10.0 * n + 8, u);
    free(g);
    g = read_c(pe_dot(a, b), t);
    assert_true(cabsl(g[0] - dot) <= 2 * u * cabsl(dot) + 4 * uc * abs_dot);
    free(g);
    g = read_c(pe_vdot(a, b), t);
    assert_true(cabsl(g[0] - vdot) <= 2 * u * cabsl(vdot) + 4 * uc * abs_dot);
    assert_true(cabsl(vdot - dot) > 1e-3); /* the inputs tell the two apart */
    free(g);
    /* along each axis */
    for (int axis = 0; axis < 2; axis++) {
        int outer = axis == 0 ? C : R, len = axis == 0 ? R : C;
        double complex *s = read_c(pe_sum_axis(a, axis), t), *p = read_c(pe_prod_axis(a, axis), t);
        double complex *m = read_c(pe_mean_axis(a, -2 + axis), t);
        for (int o = 0; o < outer; o++) {
            ldc ws = 0, wp = 1;
            long double wabs = 0;
            for (int k = 0; k < len; k++) {
                ldc v = operand(t, x[axis == 0 ? k * C + o : o * C + k]);
                ws += v, wp *= v, wabs += cabsl(v);
            }
            assert_true(cabsl(s[o] - ws) <= 2 * u * cabsl(ws) + 4 * len * uc * uc * wabs);
            assert_true(cabsl(m[o] - ws / len) <= 2 * u * cabsl(ws / len) + 4 * uc * uc * wabs);
            expect_close("prod_axis", o, p[o], wp, is_c64(t) ? 2 : 10.0 * len + 8, u);
        }
        free(s), free(p), free(m);
    }
    /* the sum of nothing is 0, the product 1 */
    int64_t none = 0;
    g = read_c(pe_sum(make(t, 1, &none, x)), t);
    assert_true(g[0] == 0);
    free(g);
    g = read_c(pe_prod(make(t, 1, &none, x)), t);
    assert_true(g[0] == 1);
    free(g);
    pe_release(a), pe_release(b);
    tu_expect_no_error();
}

static void test_reductions_c128(void **state) { (void)state; check_reductions(PE_C128); }
static void test_reductions_c64(void **state) { (void)state; check_reductions(PE_C64); }

/* ------------------------------------------------------------------- views */

static void test_views(void **state)
{
    (void)state;
    enum { R = 4, C = 5 };
    double complex x[R * C];
    random_values(x, R * C);
    int64_t shape[2] = {R, C};
    pe_array a = pe_from_host(PE_C128, 2, shape, x);
    double complex *v = read_c(pe_transpose(a), PE_C128);
    for (int i = 0; i < C; i++)
        for (int j = 0; j < R; j++) assert_true(v[i * R + j] == x[j * C + i]);
    free(v);
    int64_t start[2] = {3, 1}, count[2] = {2, 2}, step[2] = {-2, 3};
    v = read_c(pe_slice_step(a, start, count, step), PE_C128);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) assert_true(v[i * 2 + j] == x[(3 - 2 * i) * C + 1 + 3 * j]);
    free(v);
    int64_t flat[1] = {R * C};
    v = read_c(pe_reshape(a, 1, flat), PE_C128);
    assert_memory_equal(v, x, sizeof x);
    free(v);
    /* broadcasting: a row of c64 against the c128 matrix, and a spread column */
    int64_t row = C;
    pe_array r = pe_cast(pe_from_host(PE_C128, 1, &row, x), PE_C64);
    double complex *sum = read_c(pe_add(a, r), PE_C128);
    for (int i = 0; i < R * C; i++) {
        ldc want = CMPLXL(creal(x[i]), cimag(x[i])) + operand(PE_C64, x[i % C]);
        expect_close("broadcast add", i, sum[i], want, 2, U64);
    }
    free(sum);
    int64_t one_row[2] = {1, C};
    v = read_c(pe_spread(pe_reshape(r, 2, one_row), 0, 3), PE_C64);
    for (int i = 0; i < 3 * C; i++) assert_true(v[i] == (double complex)operand(PE_C64, x[i % C]));
    free(v);
    int32_t idx[3] = {19, 0, 7};
    int64_t three = 3;
    v = read_c(pe_gather(a, pe_from_host(PE_I32, 1, &three, idx)), PE_C128);
    for (int i = 0; i < 3; i++) assert_true(v[i] == x[idx[i]]);
    free(v);
    v = read_c(pe_concat(a, pe_cast(a, PE_C64), 0), PE_C128);
    for (int i = 0; i < R * C; i++) assert_true(v[i] == x[i] && v[R * C + i] == (double complex)operand(PE_C64, x[i]));
    free(v);
    v = read_c(a, PE_C128); /* the source is unchanged */
    assert_memory_equal(v, x, sizeof x);
    free(v);
    tu_expect_no_error();
}

/* Real kernels around complex values: exp(i x) from a fused real kernel's
 * results, |.| and arg back to reals, then real kernels again; against the
 * interpreter's reference of the same expression and against C. */
static void test_real_kernels_around_complex(void **state)
{
    (void)state;
    enum { M = 1000 };
    double x[M];
    for (int i = 0; i < M; i++) x[i] = uniform(-10, 10);
    int64_t n = M;
    pe_array a = pe_from_host(PE_F64, 1, &n, x);
    pe_array z = pe_mul(pe_complex(pe_mul(a, 0.5), pe_sin(a)), pe_exp(pe_mul(pe_sqrt(pe_abs(a)), I)));
    pe_array back = pe_add(pe_mul(pe_abs(z), 2.0), pe_cos(pe_arg(z)));
    pe_array ref = pe_reference(back);
    double *got = read_real(back, PE_F64), *want = read_real(ref, PE_F64);
    for (int i = 0; i < M; i++) {
        assert_true(fabs(got[i] - want[i]) <= 1e-14 * fabs(want[i]));
        ldc zi = CMPLXL(0.5L * x[i], sinl(x[i])) * cexpl(CMPLXL(0, sqrtl(fabsl(x[i]))));
        long double c = 2 * cabsl(zi) + cosl(cargl(zi));
        assert_true(fabsl(got[i] - c) <= 1e-13L * fabsl(c));
    }
    free(got), free(want);
    tu_expect_no_error();
}

/* ------------------------------------------------------------------ errors */

static void test_unsupported_ops(void **state)
{
    (void)state;
    int64_t n = 2;
    double complex zd[2] = {CMPLX(1, 2), CMPLX(3, 4)};
    double d[2] = {1, 2};
    int32_t k[2] = {0, 1};
    pe_array z = pe_from_host(PE_C128, 1, &n, zd), r = pe_from_host(PE_F64, 1, &n, d), i = pe_from_host(PE_I32, 1, &n, k);
    int line;
#define EXPECT_TYPE_ERROR(call)                      \
    do {                                             \
        line = __LINE__;                             \
        pe_array bad_ = call;                        \
        tu_expect_error(PE_E_TYPE, line);            \
        assert_false(pe_is_valid(bad_));             \
        pe_release(bad_);                            \
    } while (0)
    EXPECT_TYPE_ERROR(pe_sin(z));
    EXPECT_TYPE_ERROR(pe_lt(z, r));
    EXPECT_TYPE_ERROR(pe_max(z, r));
    EXPECT_TYPE_ERROR(pe_floor(pe_add(r, I))); /* complex by promotion */
    EXPECT_TYPE_ERROR(pe_max(z));
    EXPECT_TYPE_ERROR(pe_norm2(z));
    EXPECT_TYPE_ERROR(pe_argmin_axis(z, 0));
    EXPECT_TYPE_ERROR(pe_cond(z, r, r));       /* a complex condition */
    EXPECT_TYPE_ERROR(pe_complex(z, r));       /* parts must be real */
    EXPECT_TYPE_ERROR(pe_gather(r, pe_cast(i, PE_C64)));
    EXPECT_TYPE_ERROR(pe_cast(z, PE_F64));     /* pe_real or pe_abs say which part */
    EXPECT_TYPE_ERROR(pe_cast(z, PE_BOOL));
    EXPECT_TYPE_ERROR(pe_fill_c(PE_F64, 1, &n, 1, 1));
#undef EXPECT_TYPE_ERROR
    assert_non_null(strstr(pe_last_error()->message, "complex dtype"));
    /* a selection between complex values by a real condition is defined */
    double complex *v = read_c(pe_cond(pe_gt(r, 1.5), z, 0.0), PE_C128);
    assert_true(v[0] == 0 && v[1] == zd[1]);
    free(v);
    pe_release(z), pe_release(r), pe_release(i);
    tu_expect_no_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_host_layout, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_elementwise_c128, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_elementwise_c64, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_division_and_branch_cuts, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_promotion, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_casts_and_constants, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_reductions_c128, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_reductions_c64, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_views, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_real_kernels_around_complex, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_ops, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
