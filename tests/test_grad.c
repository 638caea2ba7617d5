/* test_grad.c — automatic differentiation (issue 43: jit/grad, jit/record/tape.c):
 * every derivative rule of irformat/ops_grad.def against central finite
 * differences in f64 and c128 (directional: F(x + h v) - F(x - h v) over 2h
 * against Re <gradient, v> and against pe_jvp's), operands of broadcast
 * shapes; the closed forms (Black-Scholes delta and vega, the logistic
 * regression's gradient X^T (sigmoid(X w) - y) / N, d log|det A| = A^-T
 * through LU); products with zeros
 * and ties of max split as JAX does; a loop of 1000 gradient steps whose
 * live arrays stay flat; gradients through PE_MACRO replays; the errors
 * (an unmarked variable, an integer variable, lu_cond, misuse)
 * naming this file's line.  A row of ops_grad.def of kind MAP, REDUCE or
 * RULE without a case here fails test_every_rule_has_a_case.  Both
 * executors, and PE_CHECK=all (tests/CMakeLists.txt). */
#define _GNU_SOURCE
#include "test_util.h"

#include "irformat/ops.h"

/* ------------------------------------------------ the finite-difference check */

typedef pe_array (*grad_fn)(const pe_array *x);

typedef struct {
    const char *op;          /* the catalog's op it differentiates (ops_grad.def's row) */
    grad_fn f;
    int n_in;
    int rank[3];
    int64_t shape[3][3];
    double lo[3], hi[3];     /* each operand's values: away from kinks and poles */
    double h, tol;           /* 0: 1e-5 and 2e-6 */
    unsigned complex_in;     /* bit i: operand i is c128 (its real and imaginary parts from lo..hi) */
} grad_case;


static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static void fill(double *v, int64_t n, double lo, double hi)
{
    for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (tu_uniform(&rng_state) + 1) / 2;
}

static int64_t numel_of(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    return n;
}

/* sum(f(x) * W), W a fixed pattern of f(x)'s shape: every element of the result counts, differently */
static pe_array objective(const grad_case *c, const pe_array *x)
{
    pe_array y = c->f(x);
    int rank = pe_rank(y);
    int64_t shape[8];
    for (int d = 0; d < rank; d++) shape[d] = pe_dim(y, d);
    int64_t n = numel_of(rank, shape);
    pe_array w = pe_reshape(pe_add(pe_sin(pe_arange(PE_F64, 1, (double)n + 1, 1)), 1.5), rank, shape);
    return pe_real(pe_sum(pe_mul(y, w))); /* of a complex result its real part: a real loss */
}

static bool is_c(const grad_case *c, int i) { return (c->complex_in >> i) & 1; }

/* doubles held for operand i: its elements, twice for a complex one */
static int64_t values_of(const grad_case *c, int i) { return numel_of(c->rank[i], c->shape[i]) * (is_c(c, i) ? 2 : 1); }

static pe_array operand_from(const grad_case *c, int i, const double *v)
{
    return pe_from_host(is_c(c, i) ? PE_C128 : PE_F64, c->rank[i], c->shape[i], v);
}

static const char *current_case = "";

static double read1(pe_array a)
{
    double v = NAN;
    int rc = pe_read_f64(a, &v);
    if (rc != PE_OK) fail_msg("%s: read gave %d (%s)", current_case, rc, tu_errors.message);
    return v;
}

static double value_at(const grad_case *c, double *const *data, const double *const *dir, double h)
{
    pe_scope sc = pe_scope_begin();
    pe_array x[3];
    double *moved[3] = {0};
    for (int i = 0; i < c->n_in; i++) {
        int64_t n = values_of(c, i);
        moved[i] = malloc((size_t)n * sizeof(double));
        for (int64_t k = 0; k < n; k++) moved[i][k] = data[i][k] + h * dir[i][k];
        x[i] = operand_from(c, i, moved[i]);
    }
    double v = read1(objective(c, x));
    pe_scope_end(sc);
    for (int i = 0; i < c->n_in; i++) free(moved[i]);
    return v;
}

static void check_case(const grad_case *c)
{
    current_case = c->op;
    double *data[3], *dir[3];
    for (int i = 0; i < c->n_in; i++) {
        int64_t n = values_of(c, i);
        data[i] = malloc((size_t)n * sizeof(double));
        dir[i] = malloc((size_t)n * sizeof(double));
        fill(data[i], n, c->lo[i], c->hi[i]);
        fill(dir[i], n, -1, 1);
    }
    double h = c->h ? c->h : 1e-5, tol = c->tol ? c->tol : 2e-6;
    double fd = (value_at(c, data, (const double *const *)dir, h) - value_at(c, data, (const double *const *)dir, -h)) / (2 * h);

    pe_scope sc = pe_scope_begin();
    pe_array x[3], g[3], t[3];
    for (int i = 0; i < c->n_in; i++) {
        x[i] = pe_grad_enable(operand_from(c, i, data[i]));
        t[i] = operand_from(c, i, dir[i]);
    }
    pe_array y = objective(c, x);
    int rc = pe_grad(y, c->n_in, x, g);
    if (rc != PE_OK || tu_errors.count) fail_msg("%s: pe_grad gave %d: %s", c->op, rc, tu_errors.message);
    double reverse = 0;
    for (int i = 0; i < c->n_in; i++) {
        assert_int_equal(pe_rank(g[i]), c->rank[i]);
        for (int d = 0; d < c->rank[i]; d++) assert_int_equal(pe_dim(g[i], d), c->shape[i][d]);
        assert_int_equal(pe_dtype_of(g[i]), is_c(c, i) ? PE_C128 : PE_F64);
        reverse += read1(pe_real(pe_vdot(g[i], t[i]))); /* dL = Re(conj(g) v): g = dL/dx + i dL/dy */
    }
    double forward = read1(pe_real(pe_jvp(y, c->n_in, x, t)));
    pe_scope_end(sc);
    tu_expect_no_error();
    double scale = fabs(fd) + 1e-3;
    if (fabs(reverse - fd) > tol * scale || fabs(forward - fd) > tol * scale)
        fail_msg("%s: finite difference %.15g, pe_grad %.15g, pe_jvp %.15g", c->op, fd, reverse, forward);
    for (int i = 0; i < c->n_in; i++) free(data[i]), free(dir[i]);
}

/* ----------------------------------------------------------------- the cases */

#define UNARY(name) static pe_array f_##name(const pe_array *x) { return pe_##name(x[0]); }
#define BINARY(name) static pe_array f_##name(const pe_array *x) { return pe_##name(x[0], x[1]); }
UNARY(neg) UNARY(abs) UNARY(exp) UNARY(exp2) UNARY(exp10) UNARY(expm1) UNARY(log) UNARY(log2) UNARY(log10)
UNARY(log1p) UNARY(sqrt) UNARY(rsqrt) UNARY(cbrt) UNARY(rcp) UNARY(sin) UNARY(cos) UNARY(tan) UNARY(sec) UNARY(csc)
UNARY(cot) UNARY(asin) UNARY(acos) UNARY(atan) UNARY(asec) UNARY(acsc) UNARY(acot) UNARY(sinh) UNARY(cosh)
UNARY(tanh) UNARY(sech) UNARY(csch) UNARY(coth) UNARY(asinh) UNARY(acosh) UNARY(atanh) UNARY(erf) UNARY(erfc)
UNARY(cdf_norm) UNARY(conj) UNARY(real) UNARY(sigmoid)
BINARY(add) BINARY(sub) BINARY(mul) BINARY(div) BINARY(pow) BINARY(mod) BINARY(logb) BINARY(root) BINARY(atan2)
BINARY(dot) BINARY(vdot) BINARY(matmul)
static pe_array f_min(const pe_array *x) { return pe_min(x[0], x[1]); }
static pe_array f_max(const pe_array *x) { return pe_max(x[0], x[1]); }
/* C scalars as operands: temporaries the tape keeps for the sweep (their ops let them go) */
static pe_array f_relu(const pe_array *x) { return pe_max(x[0], 0.0); }
static pe_array f_scalars(const pe_array *x) { return pe_add(pe_mul(pe_pow(x[0], 2.5), 3.0), pe_div(1.0, x[0])); }
static pe_array f_fma(const pe_array *x) { return pe_fma(x[0], x[1], x[2]); }
static pe_array f_clamp(const pe_array *x) { return pe_clamp(x[0], x[1], x[2]); }
static pe_array f_cond(const pe_array *x) { return pe_cond(pe_gt(x[0], 0.0), x[1], x[2]); }
static pe_array f_cast(const pe_array *x) { return pe_cast(pe_mul(x[0], x[0]), PE_F32); }
static pe_array f_sign_mul(const pe_array *x) { return pe_mul(pe_sign(x[0]), pe_floor(x[0])); } /* zero */
static pe_array f_sum(const pe_array *x) { return pe_sum(x[0]); }
static pe_array f_sum0(const pe_array *x) { return pe_sum_axis(x[0], 0); }
static pe_array f_prod(const pe_array *x) { return pe_prod(x[0]); }
static pe_array f_prod1(const pe_array *x) { return pe_prod_axis(x[0], 1); }
static pe_array f_max_reduce(const pe_array *x) { return pe_max(x[0]); }
static pe_array f_max_axis(const pe_array *x) { return pe_max_axis(x[0], 0); }
static pe_array f_min_reduce(const pe_array *x) { return pe_min_axis(x[0], 1); }
static pe_array f_mean(const pe_array *x) { return pe_mean_axis(x[0], 1); }
static pe_array f_var(const pe_array *x) { return pe_var_axis(x[0], 0); }
static pe_array f_var_all(const pe_array *x) { return pe_var(x[0]); }
static pe_array f_stddev(const pe_array *x) { return pe_stddev_axis(x[0], 1); }
static pe_array f_norm1(const pe_array *x) { return pe_norm1(x[0]); }
static pe_array f_norm2(const pe_array *x) { return pe_norm2_axis(x[0], 0); }
static pe_array f_norminf(const pe_array *x) { return pe_norminf_axis(x[0], 1); }
static pe_array f_reshape(const pe_array *x) { return pe_reshape(x[0], 2, (int64_t[]){2, 6}); }
static pe_array f_transpose(const pe_array *x) { return pe_mul(pe_transpose(x[0]), pe_transpose(x[0])); }
static pe_array f_permute(const pe_array *x) { return pe_sin(pe_permute(x[0], (int[]){2, 0, 1})); }
static pe_array f_slice(const pe_array *x) { return pe_exp(pe_slice(x[0], (int64_t[]){1, 1}, (int64_t[]){2, 2})); }
static pe_array f_slice_step(const pe_array *x)
{
    return pe_exp(pe_slice_step(x[0], (int64_t[]){2, 3}, (int64_t[]){2, 2}, (int64_t[]){-1, -2}));
}
static pe_array f_periodic(const pe_array *x) { return pe_sin(pe_periodic(x[0], 3, (int64_t[]){2, 6, 6})); }
static pe_array f_spread(const pe_array *x) { return pe_sin(pe_spread(x[0], 1, 3)); }
static pe_array f_gather(const pe_array *x)
{
    return pe_sin(pe_gather(x[0], pe_from_host(PE_I32, 1, (int64_t[]){5}, (int32_t[]){3, 0, 3, 11, 7})));
}
static pe_array f_concat(const pe_array *x) { return pe_exp(pe_concat(x[0], x[1], 0)); }
static pe_array f_expand_dims(const pe_array *x) { return pe_mul(pe_expand_dims(x[0], 1), x[0]); }
static pe_array f_roll(const pe_array *x) { return pe_sin(pe_roll(x[0], 2, 1)); }
static pe_array f_pad_constant(const pe_array *x) { return pe_exp(pe_pad(x[0], 1, 1, 2, PE_PAD_CONSTANT, 0.5)); }
static pe_array f_pad_edge(const pe_array *x) { return pe_exp(pe_pad(x[0], 0, 2, 1, PE_PAD_EDGE, 0.0)); }
static pe_array f_pad_wrap(const pe_array *x) { return pe_exp(pe_pad(x[0], 1, 2, 2, PE_PAD_WRAP, 0.0)); }
static pe_array f_pad_reflect(const pe_array *x) { return pe_exp(pe_pad(x[0], 1, 2, 1, PE_PAD_REFLECT, 0.0)); }
static pe_array f_slice_update(const pe_array *x) { return pe_sin(pe_slice_update(x[0], x[1], (int64_t[]){1, 2})); }
static pe_array f_softmax(const pe_array *x) { return pe_softmax(x[0], 1); }
static pe_array f_logsumexp(const pe_array *x) { return pe_logsumexp(x[0], 0); }
static pe_array f_matvec(const pe_array *x) { return pe_matmul(x[0], x[1]); }
static pe_array f_lu_solve(const pe_array *x)
{
    double a[9] = {4, 1, 0.5, 1, 3, -1, 0.5, 0.2, 5};
    pe_array lu, pivots;
    pe_lu(pe_f64_2d(a, 3, 3), &lu, &pivots);
    return pe_lu_solve(lu, pivots, x[0]);
}
static pe_array shifted(pe_array x) { return pe_add(x, pe_mul(pe_identity(PE_F64, 4), 4.0)); } /* well conditioned */
static pe_array f_logdet(const pe_array *x)
{
    pe_array lu, pivots;
    pe_lu(shifted(x[0]), &lu, &pivots);
    pe_array diagonal = pe_gather(lu, pe_from_host(PE_I32, 1, (int64_t[]){4}, (int32_t[]){0, 5, 10, 15}));
    return pe_sum(pe_log(pe_abs(diagonal)));
}
static pe_array f_solve_by_a(const pe_array *x)
{
    pe_array lu, pivots;
    pe_lu(shifted(x[0]), &lu, &pivots);
    return pe_lu_solve(lu, pivots, x[1]);
}
static pe_array f_solve_columns(const pe_array *x)
{
    pe_array lu, pivots;
    pe_lu(shifted(x[0]), &lu, &pivots);
    return pe_lu_solve(lu, pivots, pe_reshape(x[1], 2, (int64_t[]){4, 2}));
}
/* a 4 x 5 CSR matrix of 7 values (row 2 empty) times x */
static pe_array f_spmv(const pe_array *x)
{
    pe_array row_ptr = pe_from_host(PE_I32, 1, (int64_t[]){5}, (int32_t[]){0, 2, 5, 5, 7});
    pe_array col_idx = pe_from_host(PE_I32, 1, (int64_t[]){7}, (int32_t[]){0, 3, 1, 2, 4, 0, 4});
    pe_csr m = pe_csr_create(row_ptr, col_idx, x[0], 5);
    pe_array y = pe_spmv(m, x[1]);
    pe_csr_destroy(m);
    return pe_sin(y);
}
/* a running product over values with zeros in them (x times a 0/1 mask) */
static pe_array f_cumprod(const pe_array *x)
{
    double mask[12] = {1, 0, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1};
    return pe_cumprod(pe_mul(x[0], pe_f64_2d(mask, 3, 4)), 1);
}
/* convolutions: kernels past PE_CONV_DIRECT_TAPS go through FFTs (conv_fft), small ones are views */
static pe_array f_conv(const pe_array *x) { return pe_sin(pe_conv(x[0], x[1])); }
static pe_array f_correlate(const pe_array *x) { return pe_sin(pe_correlate(x[0], x[1])); }
static pe_array f_c_conv(const pe_array *x) { return pe_exp(pe_mul(pe_conv(x[0], x[1]), 0.1)); }
static pe_array f_c_correlate(const pe_array *x) { return pe_exp(pe_mul(pe_correlate(x[0], x[1]), 0.1)); }
static pe_array f_cumprod0(const pe_array *x) { return pe_cumprod(x[0], 0); }
static pe_array f_cumsum0(const pe_array *x) { return pe_cumsum(x[0], 0); }
static pe_array f_cumsum1(const pe_array *x) { return pe_sin(pe_cumsum(x[0], 1)); }
static pe_array f_sort(const pe_array *x) { return pe_mul(pe_sort(x[0], 1, false), pe_sort(x[0], 0, true)); }
static pe_array f_bincount(const pe_array *x)
{
    return pe_bincount(pe_from_host(PE_I32, 1, (int64_t[]){5}, (int32_t[]){2, 0, 2, 4, 1}), x[0], 6);
}
static pe_array f_scatter_add(const pe_array *x)
{
    pe_array idx = pe_from_host(PE_I32, 1, (int64_t[]){4}, (int32_t[]){5, 1, 5, 0});
    return pe_sin(pe_scatter_add(x[0], idx, x[1]));
}

/* complex operands (c128) */
static pe_array f_conj_mul(const pe_array *x) { return pe_mul(pe_conj(x[0]), pe_exp(x[0])); }
static pe_array f_imag(const pe_array *x) { return pe_mul(pe_imag(x[0]), pe_real(x[0])); }
static pe_array f_arg(const pe_array *x) { return pe_arg(x[0]); }
static pe_array f_complex(const pe_array *x) { return pe_exp(pe_complex(x[0], x[1])); }
static pe_array f_fft(const pe_array *x) { return pe_mul(pe_fft(x[0], 1), pe_fft(x[0], 1)); }
static pe_array f_fft2(const pe_array *x) { return pe_abs(pe_fft(x[0], 2)); }
static pe_array f_ifft(const pe_array *x) { return pe_mul(pe_ifft(x[0], 1), x[0]); }
static pe_array f_c_sum(const pe_array *x) { return pe_mul(pe_sum_axis(x[0], 0), pe_sum(x[0])); }
static pe_array f_c_prod(const pe_array *x) { return pe_prod_axis(x[0], 1); }
static pe_array f_c_periodic(const pe_array *x) { return pe_exp(pe_periodic(x[0], 3, (int64_t[]){2, 6, 6})); }
static pe_array f_c_gather(const pe_array *x)
{
    return pe_exp(pe_gather(x[0], pe_from_host(PE_I32, 1, (int64_t[]){5}, (int32_t[]){3, 0, 3, 11, 7})));
}
static pe_array f_c_cast(const pe_array *x) { return pe_mul(pe_cast(x[0], PE_C128), x[1]); }

#define ONE(op_, f_, lo_, hi_) {.op = op_, .f = f_, .n_in = 1, .rank = {2}, .shape = {{3, 4}}, .lo = {lo_}, .hi = {hi_}}
#define TWO(op_, f_, lo0, hi0, lo1, hi1) \
    {.op = op_, .f = f_, .n_in = 2, .rank = {2, 1}, .shape = {{3, 4}, {4}}, .lo = {lo0, lo1}, .hi = {hi0, hi1}}
#define THREE(op_, f_, lo0, hi0, lo1, hi1, lo2, hi2)                                                      \
    {.op = op_, .f = f_, .n_in = 3, .rank = {2, 1, 2}, .shape = {{3, 4}, {4}, {3, 1}}, .lo = {lo0, lo1, lo2}, \
     .hi = {hi0, hi1, hi2}}
/* any other shapes: OTHER(op, f, n, ranks, shapes, lows, highs) */
#define OTHER(op_, f_, n_, rank_, shape_, lo_, hi_) \
    {.op = op_, .f = f_, .n_in = n_, .rank = rank_, .shape = shape_, .lo = lo_, .hi = hi_}
#define L(...) {__VA_ARGS__}

static const grad_case cases[] = {
    TWO("add", f_add, -2, 2, -2, 2),
    TWO("sub", f_sub, -2, 2, -2, 2),
    TWO("mul", f_mul, -2, 2, -2, 2),
    TWO("div", f_div, -2, 2, 0.5, 2),
    TWO("pow", f_pow, 0.5, 2, -1.5, 2),
    TWO("mod", f_mod, 2.2, 2.6, 1.4, 1.5),
    ONE("neg", f_neg, -2, 2),
    ONE("abs", f_abs, -2, -0.2),
    ONE("sign", f_sign_mul, 0.2, 0.8),
    THREE("fma", f_fma, -2, 2, -2, 2, -2, 2),
    TWO("min", f_min, -2, 2, -2, 2),
    TWO("max", f_max, -2, 2, -2, 2),
    ONE("max", f_relu, -2, 2),
    ONE("pow", f_scalars, 0.5, 2),
    THREE("clamp", f_clamp, -2, 2, -1, -0.5, 0.5, 1),
    ONE("exp", f_exp, -1, 1), ONE("exp2", f_exp2, -1, 1), ONE("exp10", f_exp10, -1, 1), ONE("expm1", f_expm1, -1, 1),
    ONE("log", f_log, 0.5, 3), ONE("log2", f_log2, 0.5, 3), ONE("log10", f_log10, 0.5, 3),
    ONE("log1p", f_log1p, -0.5, 3),
    TWO("logb", f_logb, 0.5, 3, 1.5, 3),
    ONE("sqrt", f_sqrt, 0.5, 3), ONE("rsqrt", f_rsqrt, 0.5, 3), ONE("cbrt", f_cbrt, 0.5, 3),
    TWO("root", f_root, 0.5, 3, 2, 4),
    ONE("rcp", f_rcp, 0.5, 3),
    ONE("sin", f_sin, -1, 1), ONE("cos", f_cos, -1, 1), ONE("tan", f_tan, -1, 1),
    ONE("sec", f_sec, 0.3, 1.2), ONE("csc", f_csc, 0.3, 1.2), ONE("cot", f_cot, 0.3, 1.2),
    ONE("asin", f_asin, -0.8, 0.8), ONE("acos", f_acos, -0.8, 0.8), ONE("atan", f_atan, -2, 2),
    ONE("asec", f_asec, 1.2, 3), ONE("acsc", f_acsc, 1.2, 3), ONE("acot", f_acot, 0.3, 2),
    TWO("atan2", f_atan2, 0.5, 2, -2, 2),
    ONE("sinh", f_sinh, -1, 1), ONE("cosh", f_cosh, -1, 1), ONE("tanh", f_tanh, -1, 1),
    ONE("sech", f_sech, -1, 1), ONE("csch", f_csch, 0.3, 2), ONE("coth", f_coth, 0.3, 2),
    ONE("asinh", f_asinh, -2, 2), ONE("acosh", f_acosh, 1.2, 3), ONE("atanh", f_atanh, -0.8, 0.8),
    ONE("erf", f_erf, -2, 2), ONE("erfc", f_erfc, -2, 2), ONE("cdf_norm", f_cdf_norm, -2, 2),
    THREE("cond", f_cond, -1, 1, -2, 2, -2, 2),
    /* complex operands: holomorphic ops as d, the others (conj, abs, real, imag, arg) by their own partials */
#define C_ONE(op_, f_, lo_, hi_) \
    {.op = op_, .f = f_, .n_in = 1, .rank = {2}, .shape = {{3, 4}}, .lo = {lo_}, .hi = {hi_}, .complex_in = 1}
#define C_TWO(op_, f_, lo0, hi0, lo1, hi1)                                                                   \
    {.op = op_, .f = f_, .n_in = 2, .rank = {2, 1}, .shape = {{3, 4}, {4}}, .lo = {lo0, lo1}, .hi = {hi0, hi1}, \
     .complex_in = 3}
    C_TWO("add", f_add, -2, 2, -2, 2), C_TWO("sub", f_sub, -2, 2, -2, 2), C_TWO("mul", f_mul, -2, 2, -2, 2),
    C_TWO("div", f_div, 0.5, 2, 0.5, 2), C_TWO("pow", f_pow, 0.5, 2, -1, 1),
    C_ONE("neg", f_neg, -2, 2), C_ONE("abs", f_abs, 0.2, 2), C_ONE("exp", f_exp, -1, 1),
    C_ONE("log", f_log, 0.5, 2), C_ONE("sqrt", f_sqrt, 0.5, 2),
    C_ONE("conj", f_conj_mul, -1, 1), C_ONE("real", f_real, -2, 2), C_ONE("imag", f_imag, -2, 2),
    C_ONE("arg", f_arg, 0.3, 2), TWO("complex", f_complex, -1, 1, -1, 1),
    C_ONE("sum", f_c_sum, -1, 1), C_ONE("prod", f_c_prod, 0.5, 1.5), C_TWO("dot", f_dot, -2, 2, -2, 2),
    C_TWO("vdot", f_vdot, -2, 2, -2, 2), C_ONE("transpose", f_transpose, -1, 1), C_ONE("slice", f_slice_step, -1, 1),
    C_ONE("periodic", f_c_periodic, -1, 1), C_ONE("gather", f_c_gather, -1, 1),
    {.op = "matmul", .f = f_matmul, .n_in = 2, .rank = {2, 2}, .shape = {{3, 4}, {4, 2}}, .lo = {-2, -2}, .hi = {2, 2},
     .complex_in = 3},
    {.op = "cast", .f = f_c_cast, .n_in = 2, .rank = {2, 1}, .shape = {{3, 4}, {4}}, .lo = {-2, -2}, .hi = {2, 2},
     .complex_in = 2},
    ONE("fft", f_fft, -1, 1), C_ONE("fft", f_fft, -1, 1), C_ONE("fft", f_fft2, -1, 1), C_ONE("ifft", f_ifft, -1, 1),
    {.op = "cast", .f = f_cast, .n_in = 1, .rank = {2}, .shape = {{3, 4}}, .lo = {0.5}, .hi = {2}, .h = 1e-2, .tol = 1e-3},
    ONE("conj", f_conj, -2, 2), ONE("real", f_real, -2, 2),
    ONE("sum", f_sum, -2, 2), ONE("sum", f_sum0, -2, 2),
    ONE("prod", f_prod, 0.5, 1.5), ONE("prod", f_prod1, -2, 2),
    ONE("max_reduce", f_max_reduce, -2, 2), ONE("max_reduce", f_max_axis, -2, 2),
    ONE("min_reduce", f_min_reduce, -2, 2),
    ONE("mean", f_mean, -2, 2), ONE("var", f_var, -2, 2), ONE("var", f_var_all, -2, 2),
    ONE("stddev", f_stddev, -2, 2),
    ONE("norm1", f_norm1, -2, 2), ONE("norm2", f_norm2, -2, 2), ONE("norminf", f_norminf, -2, 2),
    TWO("dot", f_dot, -2, 2, -2, 2), TWO("vdot", f_vdot, -2, 2, -2, 2),
    ONE("reshape", f_reshape, -2, 2), ONE("transpose", f_transpose, -2, 2),
    OTHER("transpose", f_permute, 1, L(3), L({2, 3, 4}), L(-2), L(2)),
    ONE("slice", f_slice, -1, 1), ONE("slice", f_slice_step, -1, 1),
    ONE("periodic", f_periodic, -2, 2), ONE("spread", f_spread, -2, 2), ONE("gather", f_gather, -2, 2),
    OTHER("concat", f_concat, 2, L(2, 2), L({3, 4}, {2, 4}), L(-1, -1), L(1, 1)),
    ONE("expand_dims", f_expand_dims, -2, 2), ONE("roll", f_roll, -2, 2),
    ONE("pad", f_pad_constant, -1, 1), ONE("pad", f_pad_edge, -1, 1), ONE("pad", f_pad_wrap, -1, 1),
    ONE("pad", f_pad_reflect, -1, 1),
    OTHER("slice_update", f_slice_update, 2, L(2, 2), L({3, 4}, {2, 2}), L(-2, -2), L(2, 2)),
    ONE("sigmoid", f_sigmoid, -3, 3), ONE("softmax", f_softmax, -3, 3), ONE("logsumexp", f_logsumexp, -3, 3),
    OTHER("matmul", f_matmul, 2, L(2, 2), L({3, 4}, {4, 2}), L(-2, -2), L(2, 2)),
    OTHER("matmul", f_matvec, 2, L(2, 1), L({3, 4}, {4}), L(-2, -2), L(2, 2)),
    OTHER("lu_solve", f_lu_solve, 1, L(1), L({3}), L(-2), L(2)),
    {.op = "lu", .f = f_logdet, .n_in = 1, .rank = {2}, .shape = {{4, 4}}, .lo = {-1}, .hi = {1}},
    {.op = "lu_solve", .f = f_solve_by_a, .n_in = 2, .rank = {2, 1}, .shape = {{4, 4}, {4}}, .lo = {-1, -2}, .hi = {1, 2}},
    {.op = "lu_solve", .f = f_solve_columns, .n_in = 2, .rank = {2, 1}, .shape = {{4, 4}, {8}}, .lo = {-1, -2},
     .hi = {1, 2}},
    {.op = "spmv", .f = f_spmv, .n_in = 2, .rank = {1, 1}, .shape = {{7}, {5}}, .lo = {-2, -2}, .hi = {2, 2}},
    {.op = "conv_fft", .f = f_conv, .n_in = 2, .rank = {2, 1}, .shape = {{3, 80}, {70}}, .lo = {-1, -1}, .hi = {1, 1}},
    {.op = "conv_fft", .f = f_conv, .n_in = 2, .rank = {2, 1}, .shape = {{2, 75}, {71}}, .lo = {-1, -1}, .hi = {1, 1}},
    {.op = "conv_fft", .f = f_correlate, .n_in = 2, .rank = {2, 1}, .shape = {{3, 80}, {70}}, .lo = {-1, -1}, .hi = {1, 1}},
    {.op = "conv_fft", .f = f_correlate, .n_in = 2, .rank = {1, 1}, .shape = {{75}, {71}}, .lo = {-1, -1}, .hi = {1, 1}},
    {.op = "conv_fft", .f = f_conv, .n_in = 2, .rank = {2, 2}, .shape = {{9, 10}, {9, 8}}, .lo = {-1, -1}, .hi = {1, 1}},
    {.op = "conv_fft", .f = f_correlate, .n_in = 2, .rank = {3, 2}, .shape = {{2, 9, 10}, {8, 9}}, .lo = {-1, -1},
     .hi = {1, 1}},
    {.op = "conv_fft", .f = f_c_conv, .n_in = 2, .rank = {2, 2}, .shape = {{6, 7}, {5, 4}}, .lo = {-1, -1}, .hi = {1, 1},
     .complex_in = 3},
    {.op = "conv_fft", .f = f_c_correlate, .n_in = 2, .rank = {1, 1}, .shape = {{30}, {20}}, .lo = {-1, -1}, .hi = {1, 1},
     .complex_in = 3},
    {.op = "conv_fft", .f = f_conv, .n_in = 2, .rank = {2, 1}, .shape = {{3, 20}, {5}}, .lo = {-1, -1}, .hi = {1, 1}}, /* views */
    ONE("cumprod", f_cumprod, 0.5, 2), ONE("cumprod", f_cumprod0, -2, 2),
    ONE("cumsum", f_cumsum0, -2, 2), ONE("cumsum", f_cumsum1, -2, 2),
    ONE("sort", f_sort, -2, 2),
    OTHER("bincount", f_bincount, 1, L(1), L({5}), L(-2), L(2)),
    OTHER("scatter_add", f_scatter_add, 2, L(1, 1), L({6}, {4}), L(-2, -2), L(2, 2)),
};

static void test_rules_against_finite_differences(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) check_case(&cases[k]);
}

/* Every row of a kind that differentiates has a case above. */
static void test_every_rule_has_a_case(void **state)
{
    (void)state;
    static const char *const differentiated[] = {
#define PE_GRAD_MAP(name, d0, d1, d2) #name,
#define PE_GRAD_REDUCE(name, w) #name,
#define PE_GRAD_RULE(name) #name,
#define PE_GRAD_ZERO(name)
#define PE_GRAD_UNSUPPORTED(name, why)
#include "irformat/ops_grad.def"
    };
    for (size_t r = 0; r < sizeof differentiated / sizeof differentiated[0]; r++) {
        bool found = false;
        for (size_t k = 0; k < sizeof cases / sizeof cases[0] && !found; k++) found = !strcmp(cases[k].op, differentiated[r]);
        if (!found) fail_msg("ops_grad.def's row %s has no finite-difference case in test_grad.c", differentiated[r]);
    }
}

/* ------------------------------------------------------------- special values */

static void read_all(pe_array a, double *out, size_t n) { assert_int_equal(pe_read(a, out, n * sizeof *out), PE_OK); }

static void test_products_with_zeros_and_ties(void **state)
{
    (void)state;
    double g[4];
    pe_array x = pe_grad_enable(pe_f64_1d((double[]){2, 0, 3, 5}, 4)), out;
    assert_int_equal(pe_grad(pe_prod(x), 1, &x, &out), PE_OK);
    read_all(out, g, 4);
    assert_true(g[0] == 0 && g[1] == 30 && g[2] == 0 && g[3] == 0); /* one zero: the others' product */
    pe_array z = pe_grad_enable(pe_f64_1d((double[]){2, 0, 3, 0}, 4));
    assert_int_equal(pe_grad(pe_prod(z), 1, &z, &out), PE_OK);
    read_all(out, g, 4);
    for (int i = 0; i < 4; i++) assert_true(g[i] == 0); /* two: nothing moves the product */
    pe_array m = pe_grad_enable(pe_f64_1d((double[]){1, 3, 3, -2}, 4));
    assert_int_equal(pe_grad(pe_max(m), 1, &m, &out), PE_OK);
    read_all(out, g, 4);
    assert_true(g[0] == 0 && g[1] == 0.5 && g[2] == 0.5 && g[3] == 0); /* a tie splits, as JAX */
    pe_array a = pe_grad_enable(pe_f64_1d((double[]){1, 2}, 2)), b = pe_grad_enable(pe_f64_1d((double[]){1, 3}, 2));
    pe_array gab[2];
    assert_int_equal(pe_grad(pe_max(a, b), 2, (pe_array[]){a, b}, gab), PE_OK);
    read_all(gab[0], g, 2);
    assert_true(g[0] == 0.5 && g[1] == 0);
    read_all(gab[1], g, 2);
    assert_true(g[0] == 0.5 && g[1] == 1);
    tu_expect_no_error();
}

/* --------------------------------------------------------------- closed forms */

static double phi(double x) { return exp(-0.5 * x * x) / sqrt(2 * M_PI); }

/* Black-Scholes call prices of f32 inputs; delta = N(d1), vega = S phi(d1) sqrt(T) */
static void test_black_scholes_greeks(void **state)
{
    (void)state;
    enum { N = 1000 };
    float s[N], k[N], t[N];
    const float r = 0.02f, v = 0.3f;
    for (int i = 0; i < N; i++) {
        s[i] = 20 + 80 * (float)(tu_uniform(&rng_state) + 1) / 2;
        k[i] = 20 + 80 * (float)(tu_uniform(&rng_state) + 1) / 2;
        t[i] = 0.25f + 2 * (float)(tu_uniform(&rng_state) + 1) / 2;
    }
    pe_array S = pe_grad_enable(pe_f32_1d(s, N)), V = pe_grad_enable(pe_fill(PE_F32, 1, (int64_t[]){N}, v));
    pe_array K = pe_f32_1d(k, N), T = pe_f32_1d(t, N);
    pe_array sqrt_t = pe_sqrt(T);
    pe_array d1 = pe_div(pe_add(pe_log(pe_div(S, K)), pe_mul(pe_add(r, pe_mul(pe_mul(V, V), 0.5f)), T)), pe_mul(V, sqrt_t));
    pe_array d2 = pe_sub(d1, pe_mul(V, sqrt_t));
    pe_array call = pe_sub(pe_mul(S, pe_cdf_norm(d1)), pe_mul(pe_mul(K, pe_exp(pe_mul(-r, T))), pe_cdf_norm(d2)));
    pe_array g[2];
    assert_int_equal(pe_grad(call, 2, (pe_array[]){S, V}, g), PE_OK);
    float delta[N], vega[N];
    assert_int_equal(pe_read(g[0], delta, sizeof delta), PE_OK);
    assert_int_equal(pe_read(g[1], vega, sizeof vega), PE_OK);
    for (int i = 0; i < N; i++) {
        double D1 = (log((double)s[i] / k[i]) + (r + 0.5 * v * v) * t[i]) / (v * sqrt((double)t[i]));
        double want_delta = 0.5 * erfc(-D1 / sqrt(2)), want_vega = s[i] * phi(D1) * sqrt((double)t[i]);
        if (fabs(delta[i] - want_delta) > 2e-5 || fabs(vega[i] - want_vega) > 2e-4 * (1 + want_vega))
            fail_msg("option %d: delta %.7g (want %.7g), vega %.7g (want %.7g)", i, delta[i], want_delta, vega[i], want_vega);
    }
    tu_expect_no_error();
}

/* mean log-loss of sigmoid(X w) against y: its gradient is X^T (sigmoid(X w) - y) / N */
static void test_logistic_regression_gradient(void **state)
{
    (void)state;
    enum { ROWS = 200, COLS = 7 };
    static double x[ROWS * COLS], y[ROWS], w[COLS];
    fill(x, ROWS * COLS, -1, 1);
    fill(w, COLS, -0.5, 0.5);
    for (int i = 0; i < ROWS; i++) y[i] = tu_uniform(&rng_state) > 0;
    pe_array X = pe_f64_2d(x, ROWS, COLS), Y = pe_f64_1d(y, ROWS);
    pe_array W = pe_grad_enable(pe_f64_1d(w, COLS));
    pe_array z = pe_matmul(X, W);
    pe_array loss = pe_mean(pe_sub(pe_log1p(pe_exp(z)), pe_mul(Y, z)));
    pe_array g;
    assert_int_equal(pe_grad(loss, 1, &W, &g), PE_OK);
    double got[COLS], want[COLS] = {0};
    read_all(g, got, COLS);
    for (int i = 0; i < ROWS; i++) {
        double zi = 0;
        for (int j = 0; j < COLS; j++) zi += x[i * COLS + j] * w[j];
        double err = 1 / (1 + exp(-zi)) - y[i];
        for (int j = 0; j < COLS; j++) want[j] += x[i * COLS + j] * err / ROWS;
    }
    for (int j = 0; j < COLS; j++)
        if (fabs(got[j] - want[j]) > 1e-13) fail_msg("w[%d]: %.17g, want %.17g", j, got[j], want[j]);
    tu_expect_no_error();
}

/* d log|det A| / dA = A^-T (Jacobi's formula), through pe_lu; the inverse by Gauss-Jordan in C */
static void test_log_determinant(void **state)
{
    (void)state;
    enum { N = 5 };
    double a[N * N], inv[N][2 * N];
    fill(a, N * N, -1, 1);
    for (int i = 0; i < N; i++) a[i * N + (i + 2) % N] += 3; /* pivoting needed, well conditioned */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < 2 * N; j++) inv[i][j] = j < N ? a[i * N + j] : (j - N == i);
    for (int p = 0; p < N; p++) {
        int best = p;
        for (int i = p + 1; i < N; i++)
            if (fabs(inv[i][p]) > fabs(inv[best][p])) best = i;
        for (int j = 0; j < 2 * N; j++) {
            double t = inv[p][j];
            inv[p][j] = inv[best][j], inv[best][j] = t;
        }
        for (int i = 0; i < N; i++) {
            if (i == p) continue;
            double f = inv[i][p] / inv[p][p];
            for (int j = 0; j < 2 * N; j++) inv[i][j] -= f * inv[p][j];
        }
    }
    pe_array A = pe_grad_enable(pe_f64_2d(a, N, N)), lu, pivots, g;
    assert_int_equal(pe_lu(A, &lu, &pivots), PE_OK);
    int32_t diagonal[N];
    for (int i = 0; i < N; i++) diagonal[i] = i * (N + 1);
    pe_array logdet = pe_sum(pe_log(pe_abs(pe_gather(lu, pe_from_host(PE_I32, 1, (int64_t[]){N}, diagonal)))));
    assert_int_equal(pe_grad(logdet, 1, &A, &g), PE_OK);
    double got[N * N];
    read_all(g, got, N * N);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double want = inv[j][N + i] / inv[j][j]; /* (A^-1)^T [i][j] */
            if (fabs(got[i * N + j] - want) > 1e-12 * (1 + fabs(want)))
                fail_msg("[%d][%d]: %.17g, A^-T's %.17g", i, j, got[i * N + j], want);
        }
    tu_expect_no_error();
}

/* ----------------------------------------------------------- loops and sections */

/* Solves the normal equations X^T X w = X^T y (Gaussian elimination, small n). */
static void least_squares(const double *x, const double *y, int rows, int cols, double *w)
{
    double a[8][9] = {{0}};
    for (int i = 0; i < cols; i++) {
        for (int j = 0; j < cols; j++)
            for (int r = 0; r < rows; r++) a[i][j] += x[r * cols + i] * x[r * cols + j];
        for (int r = 0; r < rows; r++) a[i][cols] += x[r * cols + i] * y[r];
    }
    for (int p = 0; p < cols; p++)
        for (int i = p + 1; i < cols; i++) {
            double f = a[i][p] / a[p][p];
            for (int j = p; j <= cols; j++) a[i][j] -= f * a[p][j];
        }
    for (int i = cols - 1; i >= 0; i--) {
        double v = a[i][cols];
        for (int j = i + 1; j < cols; j++) v -= a[i][j] * w[j];
        w[i] = v / a[i][i];
    }
}

/* 1000 gradient steps of a least-squares fit (noisy data: the residual
 * stays far from cancelling), each step's values in a scope, the carried
 * w marked again each step: the live arrays stay flat, and the fit reaches
 * the normal equations' solution */
static void test_training_loop_stays_flat(void **state)
{
    (void)state;
    enum { ROWS = 64, COLS = 4 };
    static double x[ROWS * COLS], y[ROWS];
    const double truth[COLS] = {0.5, -1, 2, 0.25};
    fill(x, ROWS * COLS, -1, 1);
    for (int i = 0; i < ROWS; i++) {
        y[i] = 0;
        for (int j = 0; j < COLS; j++) y[i] += x[i * COLS + j] * truth[j];
        y[i] += 0.3 * tu_uniform(&rng_state);
    }
    double best[COLS];
    least_squares(x, y, ROWS, COLS, best);
    pe_array X = pe_f64_2d(x, ROWS, COLS), Y = pe_f64_1d(y, ROWS);
    pe_array w = pe_grad_enable(pe_fill(PE_F64, 1, (int64_t[]){COLS}, 0.0));
    int64_t live_at_10 = 0;
    for (int step = 0; step < 1000; step++) {
        pe_scope sc = pe_scope_begin();
        pe_array r = pe_sub(pe_matmul(X, w), Y);
        pe_array loss = pe_mean(pe_mul(r, r)), g;
        assert_int_equal(pe_grad(loss, 1, &w, &g), PE_OK);
        pe_array next = pe_keep(pe_grad_enable(pe_sub(w, pe_mul(g, 0.5))));
        pe_scope_end(sc);
        pe_release(w);
        w = next;
        if (step == 10) live_at_10 = tu_live_arrays();
        if (step > 10 && step % 100 == 0) assert_true(tu_live_arrays() <= live_at_10);
    }
    double got[COLS];
    read_all(w, got, COLS);
    for (int j = 0; j < COLS; j++)
        if (fabs(got[j] - best[j]) > 1e-10) fail_msg("w[%d] = %.17g, the least-squares solution %.17g", j, got[j], best[j]);
    tu_expect_no_error();
}

/* A section's replays are differentiated like its first execution */
static void test_gradient_through_macro_replays(void **state)
{
    (void)state;
    double xs[3] = {0.3, -0.7, 1.1};
    for (int it = 0; it < 4; it++) {
        pe_scope sc = pe_scope_begin();
        pe_array x = pe_grad_enable(pe_f64_1d(xs, 3));
        pe_array ins[1] = {x}, outs[1];
        PE_MACRO(body, ins, 1, outs, 1, NULL, 0) { outs[0] = pe_mul(pe_sin(ins[0]), pe_exp(ins[0])); }
        pe_array g;
        assert_int_equal(pe_grad(pe_sum(outs[0]), 1, &x, &g), PE_OK);
        double got[3];
        read_all(g, got, 3);
        for (int i = 0; i < 3; i++) {
            double want = (cos(xs[i]) + sin(xs[i])) * exp(xs[i]);
            if (fabs(got[i] - want) > 1e-14 * fabs(want)) fail_msg("execution %d, x[%d]: %.17g want %.17g", it, i, got[i], want);
        }
        pe_scope_end(sc);
    }
    pe_stats st = tu_stats();
    assert_true(st.macro_hits >= 3);
    /* pe_grad inside a section: the sweep's operations are the body's, replayed with it */
    for (int it = 0; it < 4; it++) {
        pe_scope sc = pe_scope_begin();
        pe_array x = pe_grad_enable(pe_f64_1d(xs, 3));
        pe_array ins[1] = {x}, outs[1];
        PE_MACRO(sweep, ins, 1, outs, 1, NULL, 0) { pe_grad(pe_sum(pe_mul(pe_sin(ins[0]), ins[0])), 1, &ins[0], &outs[0]); }
        double got[3];
        read_all(outs[0], got, 3);
        for (int i = 0; i < 3; i++) {
            double want = cos(xs[i]) * xs[i] + sin(xs[i]);
            if (fabs(got[i] - want) > 1e-14 * fabs(want)) fail_msg("in-body sweep %d, x[%d]: %.17g want %.17g", it, i, got[i], want);
        }
        pe_scope_end(sc);
    }
    assert_true(tu_stats().macro_hits >= st.macro_hits + 3);
    tu_expect_no_error();
}

/* ------------------------------------------------------------------- errors */

static void test_errors_name_the_line(void **state)
{
    (void)state;
    pe_array x = pe_f64_1d((double[]){1, 2}, 2), g = {0};
    pe_array y = pe_sum(pe_exp(x));
    int line = __LINE__ + 1;
    assert_int_equal(pe_grad(y, 1, &x, &g), PE_E_ARG); /* x was never marked */
    assert_non_null(strstr(tu_errors.message, "was not marked by pe_grad_enable"));
    tu_expect_error(PE_E_ARG, line);

    pe_array k = pe_from_host(PE_I32, 1, (int64_t[]){2}, (int32_t[]){1, 2});
    line = __LINE__ + 1;
    pe_array bad = pe_grad_enable(k);
    tu_expect_error(PE_E_TYPE, line);
    assert_int_equal(pe_read(bad, NULL, 0), PE_E_INVALID);

    pe_array v = pe_grad_enable(pe_f64_1d((double[]){1, 2}, 2));
    pe_array lu, pivots;
    pe_lu(pe_add(pe_mul(pe_identity(PE_F64, 2), v), 1.0), &lu, &pivots);
    pe_array c = pe_sum(pe_lu_cond(lu, pivots));
    tu_errors_clear();
    line = __LINE__ + 1;
    assert_int_equal(pe_grad(c, 1, &v, &g), PE_E_TYPE); /* not differentiated: an error, never zeros */
    assert_non_null(strstr(tu_errors.message, "cannot differentiate through lu_cond (recorded at"));
    tu_expect_error(PE_E_TYPE, line);

    /* misuse: each a clear error at this line, never a crash */
    pe_array w = pe_grad_enable(pe_f64_1d((double[]){1, 2, 3}, 3)), out3[1];
    pe_array wy = pe_sum(pe_exp(w));
    line = __LINE__ + 1;
    pe_array bad_jvp = pe_jvp(wy, 1, &w, NULL);
    tu_expect_error(PE_E_ARG, line);
    assert_int_equal(pe_read(bad_jvp, NULL, 0), PE_E_INVALID);
    tu_errors_clear(); /* the read's own report */
    line = __LINE__ + 1;
    bad_jvp = pe_jvp(wy, 1, &w, (pe_array[]){pe_f64_1d((double[]){1, 2}, 2)});
    tu_expect_error(PE_E_SHAPE, line);
    line = __LINE__ + 1;
    assert_int_equal(pe_grad(wy, 1, &w, NULL), PE_E_ARG);
    tu_expect_error(PE_E_ARG, line);
    line = __LINE__ + 1;
    assert_int_equal(pe_grad(wy, -1, &w, out3), PE_E_ARG);
    tu_expect_error(PE_E_ARG, line);
    pe_array gone = pe_sum(w);
    pe_release(gone);
    line = __LINE__ + 1;
    assert_int_equal(pe_grad(gone, 1, &w, out3), PE_E_HANDLE);
    tu_expect_error(PE_E_HANDLE, line);

    /* an input y does not depend on: zeros; an integer path: zeros */
    pe_array u = pe_grad_enable(pe_f64_1d((double[]){3, 4}, 2)), gu[2];
    pe_array through_int = pe_sum(pe_cast(pe_cast(u, PE_I32), PE_F64));
    assert_int_equal(pe_grad(pe_add(pe_sum(pe_exp(v)), through_int), 2, (pe_array[]){v, u}, gu), PE_OK);
    double got[2];
    read_all(gu[1], got, 2);
    assert_true(got[0] == 0 && got[1] == 0);
    read_all(gu[0], got, 2);
    assert_true(fabs(got[0] - exp(1)) < 1e-15 && fabs(got[1] - exp(2)) < 1e-14);
    tu_expect_no_error();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_rule_has_a_case),
        cmocka_unit_test_setup_teardown(test_rules_against_finite_differences, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_products_with_zeros_and_ties, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_black_scholes_greeks, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_logistic_regression_gradient, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_log_determinant, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_training_loop_stays_flat, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_gradient_through_macro_replays, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_errors_name_the_line, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
