/* test_cuda_gpu.c — the CUDA executor on a real GPU (ctest label `gpu`;
 * exit 77 where there is none): every element-wise op in f32 and f64 and
 * the fused reductions against the reference interpreter, complex sum, mean,
 * dot and vdot (two real reductions) and prod (polar form) against long
 * double, results that stay
 * on the GPU until read, and eviction to the host under PE_CUDA_MEM_LIMIT. */
#include "test_util.h"

#include "test_complex.h"
#undef complex /* the catalog has an op of that name */

#include "emul/emul_checks.h"
#include "irformat/ops.h"

typedef pe_array (*map1_fn)(const pe_site *, pe_array);
typedef pe_array (*map2_fn)(const pe_site *, pe_array, pe_array);
typedef pe_array (*map3_fn)(const pe_site *, pe_array, pe_array, pe_array);

typedef struct {
    pe_op op;
    int arity;
    void *fn;
} map_entry;

/* Every MAP row with a derived result type has pe_<name>_at. */
#define ENTRY(kind, arity, result, name) ENTRY_##kind##_##result(arity, name)
#define ROW(arity, name) {PE_OP_##name, arity, (void *)pe_##name##_at},
#define ENTRY_MAP_ARITH(arity, name) ROW(arity, name)
#define ENTRY_MAP_FLOAT(arity, name) ROW(arity, name)
#define ENTRY_MAP_BOOL(arity, name) ROW(arity, name)
#define ENTRY_MAP_SAME(arity, name) ROW(arity, name)
#define ENTRY_MAP_COMPLEX(arity, name) ROW(arity, name)
#define ENTRY_MAP_EXPLICIT(arity, name)
#define ENTRY_REDUCE_ARITH(arity, name)
#define ENTRY_REDUCE_FLOAT(arity, name)
#define ENTRY_REDUCE_BOOL(arity, name)
#define ENTRY_REDUCE_SAME(arity, name)
#define ENTRY_REDUCE_INDEX(arity, name)
#define ENTRY_IO_EXPLICIT(arity, name)
#define ENTRY_GENERATOR_EXPLICIT(arity, name)
#define ENTRY_VIEW_SAME(arity, name)
#define ENTRY_INTRINSIC_SAME(arity, name)
#define ENTRY_INTRINSIC_EXPLICIT(arity, name)
#define ENTRY_INTRINSIC_ARITH(arity, name)
#define ENTRY_INTRINSIC_INDEX(arity, name)
static const map_entry maps[] = {
#define PE_OP(name, kind, arity, fusible, cost, result) ENTRY(kind, arity, result, name)
#include "irformat/ops.def"
};

#define N_BIG 1000003

static int start(const char *executor)
{
    pe_config cfg = {0};
    if (strcmp(executor, "interp") == 0) cfg.executor = "interp";
    else cfg.device = 2; /* device 1: the first CUDA device */
    return pe_init(&cfg);
}

/* Operand j of a case: values in the domain most ops accept. */
static void fill(double *x, int64_t n, int j, unsigned seed)
{
    srand(seed + 7 * (unsigned)j);
    for (int64_t i = 0; i < n; i++) {
        double u = (double)rand() / RAND_MAX;
        x[i] = j == 0 ? 0.05 + 0.9 * u : 0.5 + 1.5 * u;
        if (i % 97 == 3) x[i] = -x[i]; /* some negatives: NaN paths and signs */
    }
}

static pe_array input(pe_dtype t, const double *x, int64_t n)
{
    if (t == PE_F64) return pe_f64_1d(x, n);
    float *f = malloc((size_t)n * sizeof *f);
    for (int64_t i = 0; i < n; i++) f[i] = (float)x[i];
    pe_array a = pe_f32_1d(f, n);
    free(f);
    return a;
}

/* The op's result as a pending f64 array (invalid if the op rejected the
 * operands). */
static pe_array record_case(const map_entry *m, const pe_array *in)
{
    pe_array r;
    if (m->arity == 1) r = ((map1_fn)m->fn)(PE_HERE, in[0]);
    else if (m->arity == 2) r = ((map2_fn)m->fn)(PE_HERE, in[0], in[1]);
    else r = ((map3_fn)m->fn)(PE_HERE, in[0], in[1], in[2]);
    pe_array d = pe_is_valid(r) ? pe_cast(r, PE_F64) : r;
    if (pe_is_valid(r)) pe_release(r);
    return d;
}

/* A recorded result as doubles (NULL if invalid); releases it. */
static double *take(pe_array d, int64_t n)
{
    double *out = NULL;
    if (pe_is_valid(d)) {
        out = malloc((size_t)n * sizeof *out);
        if (pe_read(d, out, (size_t)n * sizeof *out) != PE_OK) free(out), out = NULL;
    }
    pe_release(d);
    return out;
}

/* The op's result as doubles (NULL if the op rejected the operands). */
static double *run_case(const map_entry *m, pe_dtype t, int64_t n, double *const *x)
{
    pe_array in[3] = {{0}};
    for (int j = 0; j < m->arity; j++) in[j] = input(t, x[j], n);
    double *out = take(record_case(m, in), n);
    for (int j = 0; j < m->arity; j++) pe_release(in[j]);
    return out;
}

/* Every op of `maps` on the same operands, recorded before any is read: one
 * batch, its kernels compiled together (one NVRTC program) and spread over
 * the streams. */
static void run_every_case(pe_dtype t, int64_t n, double *const *x, double **out)
{
    const size_t n_ops = sizeof maps / sizeof maps[0];
    pe_array in[3], *r = malloc(n_ops * sizeof *r);
    for (int j = 0; j < 3; j++) in[j] = input(t, x[j], n);
    for (size_t o = 0; o < n_ops; o++) r[o] = record_case(&maps[o], in);
    for (size_t o = 0; o < n_ops; o++) out[o] = take(r[o], n);
    for (int j = 0; j < 3; j++) pe_release(in[j]);
    free(r);
}

/* CUDA's device functions are within 4 ulp of the correctly rounded f32
 * result (its documentation: tanf, powf, acoshf at most 4); f64 within 8
 * (normcdf 5), ops composed of two roundings included. */
static double allowed_ulps(pe_dtype t) { return t == PE_F32 ? 4 : 8; }

static void test_every_map_op_matches_the_interpreter(void **state)
{
    (void)state;
    static const int64_t sizes[] = {1, 7, 1023, N_BIG};
    const size_t n_ops = sizeof maps / sizeof maps[0];
    int checked = 0, mismatches = 0;
    static double worst[2][PE_OP__COUNT];
    for (int ti = 0; ti < 2; ti++) {
        pe_dtype t = ti ? PE_F64 : PE_F32;
        for (size_t si = 0; si < 4; si++) {
            int64_t n = sizes[si];
            double *x[3];
            for (int j = 0; j < 3; j++) x[j] = malloc((size_t)n * sizeof *x[j]), fill(x[j], n, j, (unsigned)si);
            double **want = calloc(n_ops, sizeof *want), **got_all = calloc(n_ops, sizeof *got_all);
            assert_int_equal(start("interp"), PE_OK);
            run_every_case(t, n, x, want);
            pe_shutdown();
            assert_int_equal(start("cuda"), PE_OK);
            pe_stats before;
            pe_get_stats(&before);
            run_every_case(t, n, x, got_all);
            for (size_t o = 0; o < n_ops; o++) {
                double *got = got_all[o];
                assert_true((got == NULL) == (want[o] == NULL));
                for (int64_t i = 0; got && i < n; i++) {
                    double u = tu_ulps_at(got[i], want[o][i], t);
                    if (u > worst[ti][maps[o].op]) worst[ti][maps[o].op] = u;
                    if (u <= allowed_ulps(t)) continue;
                    if (mismatches++ < 20)
                        fprintf(stderr, "%s %s n=%lld [%lld]: x=%.17g,%.17g GPU %.17g interpreter %.17g (%.1f ulp)\n",
                                pe_op_table[maps[o].op].name, t == PE_F32 ? "f32" : "f64", (long long)n, (long long)i,
                                x[0][i], x[1][i], got[i], want[o][i], u);
                    break;
                }
                checked++;
                free(got), free(want[o]);
            }
            pe_stats after;
            pe_get_stats(&after);
            assert_true(after.gpu_batches > before.gpu_batches); /* it did run there */
            pe_shutdown();
            free(want), free(got_all);
            for (int j = 0; j < 3; j++) free(x[j]);
        }
    }
    printf("%d op/dtype/size cases compared, %d beyond %g/%g ulp; largest distances seen (f32, f64 ulp):\n", checked,
           mismatches, allowed_ulps(PE_F32), allowed_ulps(PE_F64));
    for (size_t o = 0; o < n_ops; o++)
        printf("%s %g/%g%s", pe_op_table[maps[o].op].name, worst[0][maps[o].op], worst[1][maps[o].op],
               o + 1 < n_ops ? ", " : "\n");
    assert_int_equal(mismatches, 0);
}

/* cdf_norm's tails, where the f32 result is tiny and the argument's rounding
 * would show: [-15, 15] against the interpreter (long double). */
static void test_cdf_norm_tails(void **state)
{
    (void)state;
    const int64_t n = 300001;
    double *x = malloc(n * sizeof *x), *want = NULL, *got = NULL;
    for (int64_t i = 0; i < n; i++) x[i] = -15.0 + 30.0 * (double)i / (double)(n - 1);
    const map_entry cdf = {PE_OP_cdf_norm, 1, (void *)pe_cdf_norm_at};
    double *xs[3] = {x, x, x};
    for (int ti = 0; ti < 2; ti++) {
        pe_dtype t = ti ? PE_F64 : PE_F32;
        assert_int_equal(start("interp"), PE_OK);
        want = run_case(&cdf, t, n, xs);
        pe_shutdown();
        assert_int_equal(start("cuda"), PE_OK);
        got = run_case(&cdf, t, n, xs);
        pe_shutdown();
        double worst = 0;
        for (int64_t i = 0; i < n; i++) worst = fmax(worst, tu_ulps_at(got[i], want[i], t));
        printf("cdf_norm %s on [-15, 15]: at most %g ulp\n", ti ? "f64" : "f32", worst);
        assert_true(worst <= allowed_ulps(t));
        free(want), free(got);
    }
    free(x);
}

/* N(x) and N(-x) in one kernel share the tail of |x| (cuda_emit_ops.c): both
 * f32 results against the interpreter, on the same points. */
static void run_cdf_pair(const float *x, int64_t n, float *plus, float *minus)
{
    pe_array a = pe_f32_1d(x, n);
    pe_array neg = pe_neg(a), p = pe_cdf_norm(a), m = pe_cdf_norm(neg);
    pe_release(neg);
    assert_int_equal(pe_read(p, plus, (size_t)n * sizeof *plus), PE_OK);
    assert_int_equal(pe_read(m, minus, (size_t)n * sizeof *minus), PE_OK);
    pe_release(p), pe_release(m), pe_release(a);
}

static void test_cdf_norm_of_x_and_minus_x_in_one_kernel(void **state)
{
    (void)state;
    const int64_t n = 300001;
    float *x = malloc(n * sizeof *x), *want[2], *got[2];
    for (int k = 0; k < 2; k++) want[k] = malloc(n * sizeof(float)), got[k] = malloc(n * sizeof(float));
    for (int64_t i = 0; i < n; i++) x[i] = (float)(-15.0 + 30.0 * (double)i / (double)(n - 1));
    assert_int_equal(start("interp"), PE_OK);
    run_cdf_pair(x, n, want[0], want[1]);
    pe_shutdown();
    assert_int_equal(start("cuda"), PE_OK);
    pe_stats s0, s1;
    pe_get_stats(&s0);
    run_cdf_pair(x, n, got[0], got[1]);
    pe_get_stats(&s1);
    pe_shutdown();
    assert_true(s1.gpu_batches > s0.gpu_batches);
    double worst = 0;
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; i < n; i++) worst = fmax(worst, tu_ulps_at(got[k][i], want[k][i], PE_F32));
    printf("cdf_norm f32 of x and -x in one kernel: at most %g ulp\n", worst);
    assert_true(worst <= 1.0);
    for (int k = 0; k < 2; k++) free(want[k]), free(got[k]);
    free(x);
}

static void test_fused_reductions_match_the_interpreter(void **state)
{
    (void)state;
    double *x = malloc(N_BIG * sizeof *x), *y = malloc(N_BIG * sizeof *y);
    fill(x, N_BIG, 0, 11), fill(y, N_BIG, 1, 11);
    double want[2][6], got[2][6];
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(start(pass ? "cuda" : "interp"), PE_OK);
        for (int ti = 0; ti < 2; ti++) {
            pe_dtype t = ti ? PE_F64 : PE_F32;
            pe_array a = input(t, x, N_BIG), b = input(t, y, N_BIG);
            pe_array e = pe_exp(a);
            pe_array r[6] = {pe_sum(e), pe_dot(a, b), pe_max(e), pe_min(a), pe_mean(b), pe_norm1(a)};
            for (int k = 0; k < 6; k++) {
                assert_int_equal(pe_read_f64(r[k], pass ? &got[ti][k] : &want[ti][k]), PE_OK);
                pe_release(r[k]);
            }
            pe_release(e), pe_release(a), pe_release(b);
        }
        pe_shutdown();
    }
    for (int ti = 0; ti < 2; ti++)
        for (int k = 0; k < 6; k++) assert_true(fabs(got[ti][k] - want[ti][k]) <= 1e-10 * fabs(want[ti][k]));
    free(x), free(y);
}

/* The full reductions the CUDA generator folds in pairs (products, wrapping
 * i32 sums and dot, sums of bools, any, all, argmax, argmin) and those it
 * takes in several walks (var, stddev, f64 norm2) run as GPU
 * kernels (nothing interpreted) and agree with the interpreter: exactly
 * where the value is exact, within 1e-12 for f64 products (an ulp of f32's).
 * Ties of the extreme in many threads and chunks: the first index wins. */
static void test_folded_reductions_run_on_the_gpu(void **state)
{
    (void)state;
    enum { N = 300007, R = 15 };
    int32_t *k = malloc(N * sizeof *k), *m = malloc(N * sizeof *m);
    double *p = malloc(N * sizeof *p);
    for (int64_t i = 0; i < N; i++) {
        unsigned h = (unsigned)(i * 2654435761u);
        k[i] = (int32_t)(h ^ (h >> 13)), m[i] = (int32_t)(h % 1000) - 500; /* wraps; many ties */
        p[i] = 1 + ((double)(h % 2001) - 1000) * 1e-5;
    }
    double want[R], got[R];
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(start(pass ? "cuda" : "interp"), PE_OK);
        int64_t n = N;
        pe_array ki = pe_from_host(PE_I32, 1, &n, k), mi = pe_from_host(PE_I32, 1, &n, m), pf = pe_f64_1d(p, N);
        pe_array pf32 = pe_cast(pf, PE_F32), positive = pe_gt(mi, 0);
        pe_stats before, after;
        pe_get_stats(&before);
        pe_array r[R] = {pe_prod(pf),   pe_prod(pf32),  pe_prod(ki),   pe_sum(ki),        pe_dot(ki, mi),   pe_sum(positive),
                         pe_any(pe_gt(mi, 499)), pe_all(pe_gt(pf, 0.5)), pe_all(positive), pe_argmax(mi), pe_argmin(pe_mul(mi, 2.0)),
                         pe_argmax(pf32), pe_var(pf), pe_stddev(pf32), pe_norm2(pf)};
        for (int j = 0; j < R; j++) {
            assert_int_equal(pe_read_f64(r[j], pass ? &got[j] : &want[j]), PE_OK);
            pe_release(r[j]);
        }
        pe_get_stats(&after);
        if (pass) assert_int_equal(after.ops_interpreted, before.ops_interpreted);
        pe_release(ki), pe_release(mi), pe_release(pf), pe_release(pf32), pe_release(positive);
        pe_shutdown();
    }
    for (int j = 0; j < R; j++) {
        if (j < 2 || j >= 12) /* f64 within 1e-12, f32 within an ulp */
            assert_true(fabs(got[j] - want[j]) <= (j == 1 || j == 13 ? 3e-7 : 1e-12) * fabs(want[j]));
        else assert_true(got[j] == want[j]);
    }
    free(k), free(m), free(p);
}

/* r's `outputs` elements as double complex (c64: read as float complex),
 * computed on the GPU with nothing interpreted since `before`. */
static double _Complex *read_complex_from_gpu(pe_array r, bool c64, int outputs, const pe_stats *before)
{
    double _Complex *got = malloc((size_t)outputs * sizeof *got);
    if (c64) {
        float _Complex *f = malloc((size_t)outputs * sizeof *f);
        assert_int_equal(pe_read(r, f, (size_t)outputs * sizeof *f), PE_OK);
        for (int o = 0; o < outputs; o++) got[o] = f[o];
        free(f);
    } else {
        assert_int_equal(pe_read(r, got, (size_t)outputs * sizeof *got), PE_OK);
    }
    pe_stats after;
    pe_get_stats(&after);
    assert_int_equal(after.ops_interpreted, before->ops_interpreted);
    assert_true(after.gpu_batches > before->gpu_batches);
    return got;
}

/* Complex sum, mean, dot and vdot (c64, c128; sum and mean along an axis
 * too) are two real reductions of the parts (jit/record/record.c): GPU
 * kernels, nothing interpreted, within a few roundings of the terms'
 * magnitudes of <complex.h> in long double. */
static void test_complex_reductions_run_on_the_gpu(void **state)
{
    (void)state;
    enum { ROWS = 3, COLS = 4099, NC = ROWS * COLS };
    double _Complex *z = malloc(NC * sizeof *z), *w = malloc(NC * sizeof *w);
    float _Complex *zf = malloc(NC * sizeof *zf), *wf = malloc(NC * sizeof *wf);
    for (int i = 0; i < NC; i++) {
        z[i] = CMPLX(sin(i * 0.37) * 3, cos(i * 0.11)), w[i] = CMPLX(cos(i * 0.7), sin(i * 1.3) * 2);
        zf[i] = CMPLXF((float)creal(z[i]), (float)cimag(z[i])), wf[i] = CMPLXF((float)creal(w[i]), (float)cimag(w[i]));
    }
    assert_int_equal(start("cuda"), PE_OK);
    for (int c64 = 0; c64 < 2; c64++) {
        int64_t shape[2] = {ROWS, COLS};
        pe_dtype t = c64 ? PE_C64 : PE_C128;
        pe_array a = pe_from_host(t, 2, shape, c64 ? (void *)zf : (void *)z);
        pe_array b = pe_from_host(t, 2, shape, c64 ? (void *)wf : (void *)w);
        for (int c = 0; c < 5; c++) {
            pe_stats before;
            pe_get_stats(&before);
            pe_array e = pe_add(pe_mul(a, b), a);
            pe_array r = c == 0 ? pe_sum(e) : c == 1 ? pe_mean(e) : c == 2 ? pe_dot(pe_add(a, b), b)
                       : c == 3 ? pe_vdot(pe_add(a, b), b) : pe_sum_axis(e, 0);
            int outputs = c == 4 ? COLS : 1;
            double _Complex *got = read_complex_from_gpu(r, c64, outputs, &before);
            for (int o = 0; o < outputs; o++) {
                long double _Complex want = 0;
                long double scale = 0;
                for (int i = 0; i < NC; i++) {
                    if (c == 4 && i % COLS != o) continue;
                    long double _Complex p = c64 ? zf[i] : z[i], q = c64 ? wf[i] : w[i];
                    want += c == 2 ? (p + q) * q : c == 3 ? conjl(p + q) * q : p * q + p;
                    scale += cabsl(p) * (1 + cabsl(q)) + cabsl(q) * cabsl(q);
                }
                if (c == 1) want /= NC, scale /= NC;
                long double err = cabsl(got[o] - want);
                if (!(err <= 8 * (c64 ? 0x1p-24 : 0x1p-53) * scale))
                    fail_msg("case %d %s element %d: error %.3Lg, scale %.3Lg", c, c64 ? "c64" : "c128", o, err, scale);
            }
            free(got);
            pe_release(r), pe_release(e);
        }
        pe_release(a), pe_release(b);
    }
    pe_shutdown();
    free(z), free(w), free(zf), free(wf);
}

/* Complex prod (c64, c128; over all elements and along each axis) in polar
 * form, |z|'s product and arg z's sum (jit/record/record.c's
 * record_complex_prod): GPU kernels, nothing interpreted, within
 * record_complex_prod's bound ((3 + 2 pi) n + 8) u |prod| (u double's
 * unit roundoff; a c64 result 2 u_f32 more) of C99's sequential product in
 * long double.  The factors lie near the unit circle at every angle. */
static void test_complex_prod_runs_on_the_gpu(void **state)
{
    (void)state;
    enum { ROWS = 3, COLS = 4099, NC = ROWS * COLS };
    double _Complex *z = malloc(NC * sizeof *z);
    float _Complex *zf = malloc(NC * sizeof *zf);
    for (int i = 0; i < NC; i++) {
        double r = 1 + 0.01 * sin(i * 0.61), angle = 3 * sin(i * 0.37);
        z[i] = CMPLX(r * cos(angle), r * sin(angle));
        zf[i] = CMPLXF((float)creal(z[i]), (float)cimag(z[i]));
    }
    assert_int_equal(start("cuda"), PE_OK);
    for (int c64 = 0; c64 < 2; c64++) {
        int64_t shape[2] = {ROWS, COLS};
        pe_dtype t = c64 ? PE_C64 : PE_C128;
        pe_array a = pe_from_host(t, 2, shape, c64 ? (void *)zf : (void *)z);
        for (int axis = -1; axis <= 1; axis++) {
            pe_stats before;
            pe_get_stats(&before);
            pe_array r = axis < 0 ? pe_prod(pe_conj(a)) : pe_prod_axis(pe_conj(a), axis);
            int outputs = axis < 0 ? 1 : axis == 0 ? COLS : ROWS, n = axis < 0 ? NC : axis == 0 ? ROWS : COLS;
            double _Complex *got = read_complex_from_gpu(r, c64, outputs, &before);
            for (int o = 0; o < outputs; o++) {
                long double _Complex want = 1;
                for (int i = 0; i < NC; i++) {
                    if ((axis == 0 && i % COLS != o) || (axis == 1 && i / COLS != o)) continue;
                    want *= conjl(c64 ? (long double _Complex)zf[i] : (long double _Complex)z[i]);
                }
                long double err = cabsl(got[o] - want);
                long double bound = ((10.0L * n + 8) * 0x1p-53 + (c64 ? 2 * 0x1p-24 : 0)) * cabsl(want);
                if (!(err <= bound))
                    fail_msg("prod axis %d %s element %d: error %.3Lg, allowed %.3Lg", axis, c64 ? "c64" : "c128", o,
                             err, bound);
            }
            free(got);
            pe_release(r);
        }
        pe_release(a);
    }
    pe_shutdown();
    free(z), free(zf);
}

/* A result stays on the GPU until the host needs it; an input goes up once. */
static void test_results_stay_on_the_gpu_until_read(void **state)
{
    (void)state;
    assert_int_equal(start("cuda"), PE_OK);
    const int64_t n = 1 << 20;
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 1000) / 1000.0f;
    pe_array a = pe_f32_1d(x, n);
    pe_array e = pe_exp(a);
    pe_sync();
    pe_stats s1, s2, s3;
    pe_get_stats(&s1);
    assert_int_equal(s1.bytes_to_device, n * 4);
    assert_int_equal(s1.bytes_to_host, 0);
    pe_array f = pe_mul(e, a); /* both inputs are on the GPU already */
    pe_sync();
    pe_get_stats(&s2);
    assert_int_equal(s2.bytes_to_device, s1.bytes_to_device);
    assert_int_equal(s2.bytes_to_host, 0);
    assert_int_equal(pe_read(f, out, n * sizeof *out), PE_OK);
    pe_get_stats(&s3);
    assert_int_equal(s3.bytes_to_host, n * 4);
    for (int64_t i = 0; i < n; i++) assert_true(fabsf(out[i] - expf(x[i]) * x[i]) <= 4e-7f * fabsf(out[i]) + 1e-30f);
    pe_release(a), pe_release(e), pe_release(f);
    pe_shutdown();
    free(x), free(out);
}

/* Large copies go through the pinned staging buffers in chunks, both ways:
 * every element arrives (a chunk written over before its transfer left, or
 * one left out, shows as a wrong element; the emulation's pinned copies run
 * late, at random).  Sizes around the chunking's edges: less than two
 * chunks (directly), exactly two, and a tail of one element. */
static void test_large_copies_through_pinned_staging(void **state)
{
    (void)state;
    assert_int_equal(start("cuda"), PE_OK);
    const int64_t chunk = (8 << 20) / 4, sizes[] = {2 * chunk - 1, 2 * chunk, 5 * chunk + 1};
    float *x = malloc(sizes[2] * sizeof *x), *out = malloc(sizes[2] * sizeof *out);
    for (int64_t i = 0; i < sizes[2]; i++) x[i] = (float)(i % 16777216) + 0.5f * (float)(i >> 24);
    for (int s = 0; s < 3; s++) {
        int64_t n = sizes[s];
        pe_stats before, after;
        pe_get_stats(&before);
        pe_array a = pe_f32_1d(x, n), y = pe_add(a, 1.0f);
        assert_int_equal(pe_read(y, out, n * sizeof *out), PE_OK);
        pe_get_stats(&after);
        assert_int_equal(after.bytes_to_device - before.bytes_to_device, n * 4);
        assert_int_equal(after.bytes_to_host - before.bytes_to_host, n * 4);
        for (int64_t i = 0; i < n; i++)
            if (out[i] != x[i] + 1.0f) fail_msg("n = %lld: element %lld is %g, not %g", (long long)n, (long long)i, out[i], x[i] + 1.0f);
        pe_release(a), pe_release(y);
    }
    pe_shutdown();
    free(x), free(out);
}

/* With device memory capped below what the live results need, older ones go
 * to the host and every value stays right. */
static void test_eviction_under_a_memory_cap(void **state)
{
    (void)state;
    setenv("PE_CUDA_MEM_LIMIT", "40000000", 1); /* 40 MB: room for fewer than three 16 MB arrays */
    assert_int_equal(start("cuda"), PE_OK);
    unsetenv("PE_CUDA_MEM_LIMIT");
    const int64_t n = 4 << 20; /* 16 MB of f32 */
    float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 4096);
    pe_array a = pe_f32_1d(x, n), r[6];
    for (int k = 0; k < 6; k++) {
        r[k] = pe_add(a, (float)k);
        pe_sync();
    }
    pe_stats s;
    pe_get_stats(&s);
    assert_true(s.bytes_to_host > 0); /* something was evicted */
    for (int k = 0; k < 6; k++) {
        assert_int_equal(pe_read(r[k], out, n * sizeof *out), PE_OK);
        for (int64_t i = 0; i < n; i += 997) assert_true(out[i] == x[i] + (float)k);
        pe_release(r[k]);
    }
    pe_release(a);
    pe_shutdown();
    free(x), free(out);
}

/* A second runtime on the same cache directory compiles nothing: the
 * cubins come from the disk cache. */
static void test_second_runtime_takes_cubins_from_disk(void **state)
{
    (void)state;
    char dir[] = "/tmp/pe-test-gpu-cache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const int64_t n = 1 << 20;
    float *x = malloc(n * sizeof *x), *out[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 1000) / 1000.0f;
    pe_stats st[2];
    for (int run = 0; run < 2; run++) {
        assert_int_equal(pe_init(&(pe_config){.device = 2, .cache_dir = dir}), PE_OK);
        pe_array a = pe_f32_1d(x, n), e = pe_exp(a), r = pe_mul(e, 2.0f);
        pe_release(e);
        assert_int_equal(pe_read(r, out[run], n * sizeof(float)), PE_OK);
        pe_get_stats(&st[run]);
        pe_release(a), pe_release(r);
        pe_shutdown();
    }
    assert_true(st[0].kernels_compiled >= 1);
    assert_int_equal(st[1].kernels_compiled, 0);
    assert_true(st[1].disk_cache_hits >= 1);
    assert_memory_equal(out[0], out[1], n * sizeof(float));
    tu_remove_dir(dir);
    free(x), free(out[0]), free(out[1]);
}

/* One batch with kernels of two shapes (independent: two streams), a
 * reduction, and a kernel that needs both the first kernel's result (another
 * stream: an event wait) and the reduction's value (combined on the host
 * mid-batch); and an interpreted op on a reduction of the same batch. */
static void test_batch_across_streams_and_reductions(void **state)
{
    (void)state;
    assert_int_equal(start("cuda"), PE_OK);
    const int64_t n1 = 1 << 20, n2 = 3 << 20;
    float *x1 = malloc(n1 * sizeof *x1), *x2 = malloc(n2 * sizeof *x2), *out = malloc(n1 * sizeof *out);
    for (int64_t i = 0; i < n1; i++) x1[i] = (float)(i % 977) / 977.0f;
    for (int64_t i = 0; i < n2; i++) x2[i] = (float)(i % 1013) / 1013.0f;
    pe_array a1 = pe_f32_1d(x1, n1), a2 = pe_f32_1d(x2, n2);
    pe_sync();
    pe_stats s0, s1;
    pe_get_stats(&s0);
    pe_array e1 = pe_exp(a1), r1 = pe_mul(e1, 2.0f);  /* kernel A, 1M */
    pe_array q2 = pe_sqrt(a2), m2 = pe_add(q2, 1.0f); /* kernel B, 3M */
    pe_array s2 = pe_sum(m2);                          /* reduction fused with B */
    pe_array r3 = pe_add(r1, s2);                      /* kernel C: after A and the reduction */
    pe_array sq = pe_reshape(r3, 2, ((int64_t[]){1024, 1024})), t = pe_transpose(sq); /* interpreted */
    pe_release(sq);
    pe_release(e1), pe_release(q2), pe_release(m2);
    assert_int_equal(pe_read(r3, out, n1 * sizeof *out), PE_OK);
    pe_get_stats(&s1);
    assert_int_equal(s1.gpu_batches - s0.gpu_batches, 1);
    double sum = 0;
    for (int64_t i = 0; i < n2; i++) sum += (double)(sqrtf(x2[i]) + 1.0f);
    double got_sum = 0;
    assert_int_equal(pe_read_f64(s2, &got_sum), PE_OK);
    assert_true(fabs(got_sum - (float)sum) <= 1.2e-7 * sum); /* an f32 sum: within an ulp */
    for (int64_t i = 0; i < n1; i++) {
        float want = expf(x1[i]) * 2.0f + (float)got_sum;
        assert_true(fabsf(out[i] - want) <= 2e-7f * fabsf(want));
    }
    float *tv = malloc(n1 * sizeof *tv);
    assert_int_equal(pe_read(t, tv, n1 * sizeof *tv), PE_OK);
    for (int r = 0; r < 1024; r += 37)
        for (int c = 0; c < 1024; c += 41) assert_true(tv[(int64_t)r * 1024 + c] == out[(int64_t)c * 1024 + r]);
    pe_release(a1), pe_release(a2), pe_release(r1), pe_release(s2), pe_release(r3), pe_release(t);
    pe_shutdown();
    free(x1), free(x2), free(out), free(tv);
}

/* Batches end without waiting for the GPU: forty of them in a row, each
 * reading the last one's result and a new input uploaded for it, then
 * dropping both, so that their device memory goes back to the pool while
 * the kernel reading it may still run; the next upload (on a stream of its
 * own, not behind that kernel) must not get such a block before the kernel
 * ends.  Every value is the C loop's, exactly. */
static void test_batches_in_flight_keep_their_values(void **state)
{
    (void)state;
    assert_int_equal(start("cuda"), PE_OK);
    const int64_t n = 1 << 18;
    const int rounds = 40;
    float *x = malloc(n * sizeof *x), *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    for (int64_t i = 0; i < n; i++) want[i] = (float)(i % 1021);
    pe_stats s0, s1;
    pe_get_stats(&s0);
    pe_array y = pe_f32_1d(want, n);
    for (int k = 0; k < rounds; k++) {
        for (int64_t i = 0; i < n; i++) x[i] = (float)((i + 7 * k) % 509);
        pe_array u = pe_f32_1d(x, n), next = pe_add(pe_mul(y, 0.5f), u);
        pe_release(y), pe_release(u);
        y = next;
        pe_flush();
        for (int64_t i = 0; i < n; i++) want[i] = want[i] * 0.5f + x[i];
    }
    assert_int_equal(pe_read(y, got, n * sizeof *got), PE_OK);
    pe_get_stats(&s1);
    assert_memory_equal(got, want, n * sizeof *got);
    assert_true(s1.gpu_batches > s0.gpu_batches); /* on the GPU (flushes may meet in one batch) */
    pe_release(y);
    pe_shutdown();
    free(x), free(want), free(got);
}

/* A reduction does not stop a batch: its combiner leaves the value on the
 * GPU, where the next kernels read it.  Twenty batches in a row, each
 * centring the last one's result on its mean (y - mean(y)) * 0.5 + u, with
 * u's mean 100 higher each round, so that a mean read before its combiner
 * ran, or from an earlier round, is far off.  Against the C loop with the
 * mean summed in double. */
static void test_reductions_in_flight_feed_later_batches(void **state)
{
    (void)state;
    assert_int_equal(start("cuda"), PE_OK);
    const int64_t n = 1 << 18;
    const int rounds = 20;
    float *x = malloc(n * sizeof *x), *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    for (int64_t i = 0; i < n; i++) want[i] = (float)(i % 1021);
    pe_stats s0, s1;
    pe_get_stats(&s0);
    pe_array y = pe_f32_1d(want, n), mean = pe_scalar(PE_F32, 0);
    float want_mean = 0;
    for (int k = 0; k < rounds; k++) {
        for (int64_t i = 0; i < n; i++) x[i] = (float)((i + 7 * k) % 509 + 100 * k);
        pe_array u = pe_f32_1d(x, n);
        pe_release(mean);
        mean = pe_mean(y);
        pe_array next = pe_add(pe_mul(pe_sub(y, mean), 0.5f), u);
        pe_release(y), pe_release(u);
        y = next;
        pe_flush();
        double sum = 0;
        for (int64_t i = 0; i < n; i++) sum += want[i];
        want_mean = (float)(sum / (double)n);
        for (int64_t i = 0; i < n; i++) want[i] = (want[i] - want_mean) * 0.5f + x[i];
    }
    double got_mean = 0;
    assert_int_equal(pe_read(y, got, n * sizeof *got), PE_OK);
    assert_int_equal(pe_read_f64(mean, &got_mean), PE_OK);
    pe_get_stats(&s1);
    assert_true(fabs(got_mean - want_mean) <= 1e-6 * fabs(want_mean));
    for (int64_t i = 0; i < n; i++) assert_true(fabsf(got[i] - want[i]) <= 1e-5f * fabsf(want[i]) + 1e-3f);
    assert_true(s1.gpu_batches > s0.gpu_batches);
    pe_release(y), pe_release(mean);
    pe_shutdown();
    free(x), free(want), free(got);
}

/* An interpreted op in the middle of a batch (a gather, never a kernel,
 * of a GPU result: a per-axis sum) makes the host wait for the GPU there; the kernels launched after
 * it (they read its result) still run asynchronously, so what they free (a
 * reduction's partials, read by its combiner) must not go to a later kernel
 * of the same batch before they finish.  Ten such batches; every value
 * against the C loop. */
static void test_a_wait_inside_a_batch_keeps_later_kernels_apart(void **state)
{
    (void)state;
    assert_int_equal(start("cuda"), PE_OK);
    enum { ROWS = 256, COLS = 1024, N = ROWS * COLS, SUMS = 4 };
    float *m = malloc(N * sizeof *m), *v = malloc(N * sizeof *v), *axis = malloc(COLS * sizeof *axis);
    for (int i = 0; i < N; i++) m[i] = (float)(i % 97), v[i] = (float)(i % 89) / 89.0f;
    const int64_t shape[2] = {ROWS, COLS};
    pe_array a = pe_from_host(PE_F32, 2, shape, m), b = pe_from_host(PE_F32, 2, shape, v);
    pe_sync();
    for (int c = 0; c < COLS; c++) {
        float want = 0; /* integers: exact in any order */
        for (int r = 0; r < ROWS; r++) want += 2.0f * m[r * COLS + c];
        axis[c] = want;
    }
    const int64_t cols = COLS;
    pe_array every = pe_index(PE_I32, 1, &cols, 0); /* 0 .. COLS - 1 */
    for (int round = 0; round < 10; round++) {
        pe_array twice = pe_mul(a, 2.0f), sum = pe_sum_axis(twice, 0), ax = pe_gather(sum, every); /* kernels, then the interpreter */
        pe_release(sum);
        pe_array sums[SUMS];
        for (int k = 0; k < SUMS; k++) { /* independent kernels after it, on several streams */
            pe_array scaled = pe_mul(b, (float)(k + round + 1)), weighted = pe_mul(scaled, ax);
            sums[k] = pe_sum(weighted);
            pe_release(scaled), pe_release(weighted);
        }
        pe_release(twice);
        for (int k = 0; k < SUMS; k++) {
            double got = 0, want = 0, size = 0;
            assert_int_equal(pe_read_f64(sums[k], &got), PE_OK);
            for (int i = 0; i < N; i++) {
                double term = (double)(v[i] * (float)(k + round + 1) * axis[i % COLS]);
                want += term, size += fabs(term);
            }
            assert_true(fabs(got - want) <= 1e-5 * size);
            pe_release(sums[k]);
        }
        pe_release(ax);
    }
    pe_release(a), pe_release(b), pe_release(every);
    pe_shutdown();
    free(m), free(v), free(axis);
}

/* The CPU and the GPU fuse one batch differently (the CPU gives sum(pow(x,
 * x)) in f32 two kernels: gcc would not vectorise the reduction over pow's
 * primitive), and the trace cache keeps each one's sequence: the same batch
 * (same key), alternating between them, runs their own fusion each time. */
static double sum_of_pow(const float *x, int64_t n, uint64_t *kernels)
{
    pe_stats before, after;
    pe_get_stats(&before);
    pe_array a = pe_f32_1d(x, n), p = pe_pow(a, a), s = pe_sum(p);
    pe_release(p);
    double got = 0;
    assert_int_equal(pe_read_f64(s, &got), PE_OK);
    pe_release(s), pe_release(a);
    pe_get_stats(&after);
    *kernels = after.kernels_launched - before.kernels_launched;
    return got;
}

static void test_cpu_and_gpu_keep_their_own_fusion_of_a_batch(void **state)
{
    (void)state;
    assert_int_equal(start("cuda"), PE_OK);
    enum { N = 1 << 16 };
    float *x = malloc(N * sizeof *x);
    double want = 0;
    for (int i = 0; i < N; i++) {
        x[i] = 0.5f + (float)(i % 301) / 200.0f;
        want += (double)powf(x[i], x[i]);
    }
    for (int round = 0; round < 4; round++) {
        int device = round % 2 ? 0 : 1; /* the GPU first: its sequence is cached first */
        assert_int_equal(pe_set_device(device), PE_OK);
        uint64_t kernels;
        double got = sum_of_pow(x, N, &kernels);
        assert_true(fabs(got - want) <= 1e-6 * want);
        assert_int_equal(kernels, device ? 1 : 2);
    }
    pe_shutdown();
    free(x);
}

static void test_devices_are_listed(void **state)
{
    (void)state;
    assert_int_equal(pe_init(NULL), PE_OK);
    assert_true(pe_device_count() >= 2);
    pe_device_info info;
    assert_int_equal(pe_device_info(1, &info), PE_OK);
    assert_int_equal(info.kind, PE_DEVICE_CUDA);
    assert_true(strncmp(info.arch, "sm_", 3) == 0);
    assert_true(info.cores > 0 && info.memory_bytes > 0);
    printf("GPU: %s, %s, %d SMs, %.1f GiB\n", info.name, info.arch, info.cores, (double)info.memory_bytes / (1 << 30));
    pe_shutdown();
}

int main(void)
{
    pe_push_error_handler(tu_record_error, NULL);
    if (pe_init(NULL) != PE_OK) return 1;
    int devices = pe_device_count();
    pe_shutdown();
    if (devices < 2) {
        fprintf(stderr, "skipped: no CUDA device\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devices_are_listed),
        cmocka_unit_test(test_every_map_op_matches_the_interpreter),
        cmocka_unit_test(test_cdf_norm_tails),
        cmocka_unit_test(test_cdf_norm_of_x_and_minus_x_in_one_kernel),
        cmocka_unit_test(test_fused_reductions_match_the_interpreter),
        cmocka_unit_test(test_folded_reductions_run_on_the_gpu),
        cmocka_unit_test(test_complex_reductions_run_on_the_gpu),
        cmocka_unit_test(test_complex_prod_runs_on_the_gpu),
        cmocka_unit_test(test_results_stay_on_the_gpu_until_read),
        cmocka_unit_test(test_large_copies_through_pinned_staging),
        cmocka_unit_test(test_eviction_under_a_memory_cap),
        cmocka_unit_test(test_second_runtime_takes_cubins_from_disk),
        cmocka_unit_test(test_batch_across_streams_and_reductions),
        cmocka_unit_test(test_batches_in_flight_keep_their_values),
        cmocka_unit_test(test_reductions_in_flight_feed_later_batches),
        cmocka_unit_test(test_a_wait_inside_a_batch_keeps_later_kernels_apart),
        cmocka_unit_test(test_cpu_and_gpu_keep_their_own_fusion_of_a_batch),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (tu_emul_misuses() > 0) { /* on the emulated driver */
        fprintf(stderr, "the executor made %ld calls the emulated CUDA driver refuses\n", tu_emul_misuses());
        failed++;
    }
    return failed;
}
