/* test_lazy.c — progressive evaluation, observed through pe_get_stats:
 * recording computes nothing until a result is needed (read, map, hint,
 * flush, sync, the end of the outermost block, the queue limit); queries
 * never compute; constant folding and strength reduction answer at record
 * time; blocks defer the automatic flush; dead values are never computed; a
 * Black-Scholes chain equals plain C. */
#include "test_util.h"

static pe_stats stats(void)
{
    pe_stats st;
    pe_get_stats(&st);
    return st;
}

static void assert_no_live_arrays(void)
{
    pe_sync();
    assert_int_equal(stats().live_arrays, 0);
}

/* Records a small chain on `a` (3 ops), returns the end; the intermediates
 * are released (the chain keeps them). */
static pe_array chain3(pe_array a, double k)
{
    pe_array m = pe_mul(a, k);
    pe_array e = pe_sqrt(m);
    pe_array r = pe_add(e, 1.0);
    pe_release(m), pe_release(e);
    return r;
}

static void check_chain3(pe_array r, const double *x, int n, double k)
{
    int64_t got_n;
    double *got = tu_read_as_f64(r, &got_n);
    assert_int_equal(got_n, n);
    for (int i = 0; i < n; i++)
        if (got[i] != sqrt(x[i] * k) + 1.0) fail_msg("element %d: %.17g != %.17g", i, got[i], sqrt(x[i] * k) + 1.0);
    free(got);
}

/* -------------------------------------------------- nothing before needed */

static void test_recording_executes_nothing(void **state)
{
    (void)state;
    enum { N = 64 };
    double x[N];
    for (int i = 0; i < N; i++) x[i] = i + 1;
    pe_array a = pe_f64_1d(x, N);
    pe_sync();
    pe_stats s0 = stats();
    pe_array r = chain3(a, 2.0);
    pe_array r2 = chain3(r, 3.0);
    pe_stats s1 = stats();
    assert_int_equal(s1.ops_executed, s0.ops_executed);
    assert_int_equal(s1.flushes, s0.flushes);
    assert_int_equal(s1.kernels_launched, s0.kernels_launched);
    assert_true(s1.queued >= s0.queued + 6);
    assert_true(s1.ops_recorded >= s0.ops_recorded + 6);
    /* releasing intermediates did not compute either */
    assert_int_equal(s1.ops_executed, s0.ops_executed);
    /* the read computes */
    double v[N];
    assert_int_equal(pe_read(r2, v, sizeof v), PE_OK);
    pe_stats s2 = stats();
    assert_true(s2.ops_executed >= s0.ops_executed + 6);
    assert_true(s2.flushes > s1.flushes);
    for (int i = 0; i < N; i++) assert_true(v[i] == sqrt((sqrt(x[i] * 2.0) + 1.0) * 3.0) + 1.0);
    pe_sync();
    assert_int_equal(stats().queued, 0);
    pe_release(a), pe_release(r), pe_release(r2);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* Each of the triggers processes the queue; before it, nothing ran. */
static void test_each_trigger_computes(void **state)
{
    (void)state;
    enum { N = 32 };
    double x[N];
    for (int i = 0; i < N; i++) x[i] = 0.5 * i;
    pe_array a = pe_f64_1d(x, N);
    pe_sync();
    for (int trigger = 0; trigger < 7; trigger++) {
        pe_stats s0 = stats();
        double k = trigger + 2.0; /* not 1: x*1 would be answered at record time */
        if (trigger == 6) pe_block_begin(), pe_block_begin();
        pe_array r = chain3(a, k);
        pe_stats s1 = stats();
        assert_int_equal(s1.ops_executed, s0.ops_executed);
        assert_int_equal(s1.flushes, s0.flushes);
        assert_true(s1.queued >= s0.queued + 3);
        double v[N], f;
        const double *p = NULL;
        switch (trigger) {
        case 0: assert_int_equal(pe_read(r, v, sizeof v), PE_OK); break;
        case 1: p = pe_map(r); assert_non_null(p); break;
        case 2: pe_hint_read(r); break;
        case 3: pe_flush(); break;
        case 4: pe_sync(); break;
        case 5: {
            pe_array s = pe_sum(r);
            assert_int_equal(pe_read_f64(s, &f), PE_OK);
            pe_release(s);
            break;
        }
        case 6:
            pe_block_end(); /* the inner end does not process */
            assert_int_equal(stats().flushes, s0.flushes);
            assert_int_equal(stats().ops_executed, s0.ops_executed);
            pe_block_end();
            break;
        }
        pe_stats s2 = stats();
        if (s2.flushes <= s0.flushes) fail_msg("trigger %d did not process the queue", trigger);
        pe_sync(); /* hint and flush need not wait */
        pe_stats s3 = stats();
        if (s3.ops_executed < s0.ops_executed + 3) fail_msg("trigger %d: only %d ops executed", trigger, (int)(s3.ops_executed - s0.ops_executed));
        assert_int_equal(s3.queued, 0);
        if (p) {
            for (int i = 0; i < N; i++) assert_true(p[i] == sqrt(x[i] * k) + 1.0);
            pe_unmap(r);
        }
        /* reading now computes nothing new — except after the sum (trigger 5),
         * which only read r in its kernel: r was an expression after it
         * (exec/base/deferred.c), computed again now, to the same bits */
        pe_stats s4 = stats();
        check_chain3(r, x, N, k);
        pe_stats s5 = stats();
        const char *executor = getenv("PE_EXECUTOR");
        if (trigger == 5 && !(executor && strcmp(executor, "interp") == 0)) { /* the interpreter stores all */
            assert_true(s3.values_deferred >= s0.values_deferred + 1);
            assert_int_equal(s5.values_recomputed, s4.values_recomputed + 3);
            assert_int_equal(s5.ops_executed, s4.ops_executed + 3);
        } else {
            assert_int_equal(s5.ops_executed, s4.ops_executed);
        }
        pe_release(r);
    }
    pe_release(a);
    tu_expect_no_error();
    assert_no_live_arrays();
}

static void test_queries_never_compute(void **state)
{
    (void)state;
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)i;
    pe_array m = pe_f32_2d(x, 3, 4);
    pe_sync();
    pe_stats s0 = stats();
    pe_array t = pe_exp(m);
    pe_array r = pe_sum_axis(t, 0);
    pe_array c = pe_gt(r, 5.0f);
    pe_array d = pe_cast(c, PE_F64);
    pe_stats s1 = stats();
    assert_int_equal(pe_rank(t), 2);
    assert_int_equal(pe_dim(t, 0), 3);
    assert_int_equal(pe_dim(t, 1), 4);
    assert_int_equal(pe_dim(t, -1), 4);
    assert_int_equal(pe_numel(t), 12);
    assert_int_equal(pe_rank(r), 1);
    assert_int_equal(pe_dim(r, 0), 4);
    assert_int_equal(pe_numel(r), 4);
    assert_int_equal(pe_dtype_of(t), PE_F32);
    assert_int_equal(pe_dtype_of(c), PE_BOOL);
    assert_int_equal(pe_dtype_of(d), PE_F64);
    assert_true(pe_is_valid(d));
    pe_stats s2 = stats();
    assert_int_equal(s2.ops_executed, s0.ops_executed);
    assert_int_equal(s2.flushes, s0.flushes);
    assert_int_equal(s2.queued, s1.queued);
    assert_int_equal(s2.ops_executed, s1.ops_executed);
    pe_release(m), pe_release(t), pe_release(r), pe_release(c), pe_release(d);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* --------------------------------------------------------- record time */

static void test_constant_folding(void **state)
{
    (void)state;
    int64_t shape[2] = {2, 3};
    pe_sync();
    pe_stats s0 = stats();
    pe_array two = pe_scalar(PE_F64, 2.0);
    pe_array three = pe_fill(PE_F64, 2, shape, 3.0);
    pe_array sixteen = pe_scalar(PE_F32, 16.0);
    pe_stats s1 = stats();
    assert_int_equal(s1.queued, s0.queued); /* constants queue nothing */
    pe_array p = pe_mul(two, three);   /* 6 */
    pe_array q = pe_add(p, 1.0);       /* 7, C scalar */
    pe_array e = pe_exp(two);          /* e^2 */
    pe_array g = pe_sqrt(sixteen);     /* 4, f32 */
    pe_stats s2 = stats();
    assert_true(s2.ops_folded >= s1.ops_folded + 4);
    assert_int_equal(s2.queued, s1.queued);
    assert_int_equal(s2.ops_executed, s0.ops_executed);
    assert_int_equal(s2.flushes, s0.flushes);
    /* the right values, shapes and types */
    assert_int_equal(pe_rank(q), 2);
    assert_int_equal(pe_dim(q, 1), 3);
    assert_int_equal(pe_dtype_of(q), PE_F64);
    assert_int_equal(pe_dtype_of(g), PE_F32);
    int64_t n;
    double *v = tu_read_as_f64(q, &n);
    assert_int_equal(n, 6);
    for (int i = 0; i < 6; i++) assert_true(v[i] == 7.0);
    free(v);
    double ev = 0;
    assert_int_equal(pe_read_f64(e, &ev), PE_OK);
    assert_true(tu_ulps_f64(ev, exp(2.0)) <= 1);
    float gv = 0;
    assert_int_equal(pe_read_f32(g, &gv), PE_OK);
    assert_true(gv == 4.0f);
    /* an integer fold wraps and truncates like the executors */
    pe_array i7 = pe_scalar(PE_I32, 7);
    pe_array idiv = pe_div(i7, -2);
    pe_array imod = pe_mod(i7, -2);
    double dv;
    assert_int_equal(pe_dtype_of(idiv), PE_I32);
    assert_int_equal(pe_read_f64(idiv, &dv), PE_OK);
    assert_true(dv == -3.0);
    assert_int_equal(pe_read_f64(imod, &dv), PE_OK);
    assert_true(dv == 1.0);
    /* a fold gives the same value as the same op on a real array */
    double one_x[1] = {2.0};
    pe_array real = pe_f64_1d(one_x, 1);
    pe_array real_e = pe_exp(real);
    double rv;
    assert_int_equal(pe_read_f64(real_e, &rv), PE_OK);
    assert_true(tu_ulps_f64(rv, ev) <= 1);
    tu_expect_no_error();
    pe_release(sixteen), pe_release(two), pe_release(three), pe_release(p), pe_release(q), pe_release(e), pe_release(g);
    pe_release(i7), pe_release(idiv), pe_release(imod), pe_release(real), pe_release(real_e);
    tu_expect_no_error();
    assert_no_live_arrays();
}

static void test_strength_reduction(void **state)
{
    (void)state;
    enum { N = 257 };
    double x[N];
    for (int i = 0; i < N; i++) x[i] = 0.37 * i + 1e-3 * (i % 7) + 0.01; /* positive, no -0 */
    pe_array a = pe_f64_1d(x, N);
    pe_sync();

    /* pow(x, 2) == x*x exactly; pow(x, 0.5) == sqrt(x) exactly */
    pe_array sq = pe_pow(a, 2.0), rt = pe_pow(a, 0.5);
    int64_t n;
    double *vs = tu_read_as_f64(sq, &n), *vr = tu_read_as_f64(rt, &n);
    for (int i = 0; i < N; i++) {
        if (vs[i] != x[i] * x[i]) fail_msg("pow(x,2)[%d] = %.17g, x*x = %.17g", i, vs[i], x[i] * x[i]);
        if (vr[i] != sqrt(x[i])) fail_msg("pow(x,0.5)[%d] = %.17g, sqrt = %.17g", i, vr[i], sqrt(x[i]));
    }
    free(vs), free(vr);
    /* only the exponents that are identities fold: pow(x, 3) stays a power */
    pe_array cube = pe_pow(a, 3.0);
    double *vc = tu_read_as_f64(cube, &n);
    for (int i = 0; i < N; i++)
        if (fabs(vc[i] - pow(x[i], 3.0)) > 4e-16 * pow(x[i], 3.0))
            fail_msg("pow(x,3)[%d] = %.17g, C pow = %.17g", i, vc[i], pow(x[i], 3.0));
    free(vc);
    pe_release(cube);

    /* the identities answer at record time, with a's values */
    pe_stats s0 = stats();
    pe_array ids[6] = {pe_mul(a, 1.0), pe_mul(1.0, a), pe_add(a, 0.0), pe_add(0.0, a), pe_sub(a, 0.0), pe_div(a, 1.0)};
    pe_stats s1 = stats();
    assert_true(s1.ops_folded >= s0.ops_folded + 6);
    assert_int_equal(s1.queued, s0.queued);
    assert_int_equal(s1.ops_executed, s0.ops_executed);
    for (int k = 0; k < 6; k++) {
        assert_true(pe_is_valid(ids[k]));
        assert_int_equal(pe_dtype_of(ids[k]), PE_F64);
        assert_int_equal(pe_numel(ids[k]), N);
        double *v = tu_read_as_f64(ids[k], &n);
        assert_memory_equal(v, x, sizeof x);
        free(v);
    }
    assert_int_equal(stats().ops_executed, s0.ops_executed);
    /* each result is its own reference: releasing them leaves a intact */
    for (int k = 0; k < 6; k++) pe_release(ids[k]);
    assert_true(pe_is_valid(a));
    double back[N];
    assert_int_equal(pe_read(a, back, sizeof back), PE_OK);
    assert_memory_equal(back, x, sizeof x);

    /* a reduction that would lose a promotion does not apply: f32 * 1.0 (f64 array) */
    float xf[3] = {1.1f, 2.2f, 3.3f};
    pe_array af = pe_f32_1d(xf, 3);
    pe_array one64 = pe_fill(PE_F64, 1, (int64_t[]){3}, 1.0);
    pe_array prom = pe_mul(af, one64);
    assert_int_equal(pe_dtype_of(prom), PE_F64);
    double pv[3];
    assert_int_equal(pe_read(prom, pv, sizeof pv), PE_OK);
    for (int i = 0; i < 3; i++) assert_true(pv[i] == (double)xf[i]);
    pe_release(af), pe_release(one64), pe_release(prom);
    pe_release(a), pe_release(sq), pe_release(rt);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* ------------------------------------------------------ blocks and limit */

static void test_block_defers_queue_limit(void **state)
{
    (void)state;
    pe_shutdown();
    pe_config cfg = {0};
    cfg.queue_limit = 8;
    assert_int_equal(pe_init(&cfg), PE_OK);
    enum { N = 16, OPS = 20 };
    double x[N];
    for (int i = 0; i < N; i++) x[i] = i;
    pe_array a = pe_f64_1d(x, N);
    pe_sync();

    /* outside a block: more than 8 entries flush on their own */
    pe_stats s0 = stats();
    pe_array h[OPS];
    h[0] = pe_add(a, 1.0);
    for (int k = 1; k < OPS; k++) h[k] = pe_add(h[k - 1], 1.0);
    pe_stats s1 = stats();
    assert_true(s1.flushes > s0.flushes);
    assert_true(s1.queued <= 8);
    for (int k = 0; k < OPS; k++) pe_release(h[k]);
    pe_sync();

    /* inside a block: nothing until the outermost end */
    s0 = stats();
    pe_block_begin();
    h[0] = pe_mul(a, 2.0);
    for (int k = 1; k < OPS; k++) h[k] = pe_add(h[k - 1], 1.0);
    pe_block_begin();
    pe_array extra = pe_exp(h[OPS - 1]);
    pe_block_end();
    s1 = stats();
    assert_int_equal(s1.flushes, s0.flushes);
    assert_int_equal(s1.ops_executed, s0.ops_executed);
    assert_true(s1.queued >= OPS + 1);
    pe_block_end();
    pe_stats s2 = stats();
    assert_true(s2.flushes > s0.flushes);
    pe_sync();
    assert_true(stats().ops_executed >= s0.ops_executed + OPS + 1);
    double v[N];
    assert_int_equal(pe_read(h[OPS - 1], v, sizeof v), PE_OK);
    for (int i = 0; i < N; i++) assert_true(v[i] == 2.0 * i + (OPS - 1));
    for (int k = 0; k < OPS; k++) pe_release(h[k]);
    pe_release(extra);

    /* a read inside a block still gives the value */
    pe_block_begin();
    pe_array r = pe_mul(a, 3.0);
    double rv[N];
    assert_int_equal(pe_read(r, rv, sizeof rv), PE_OK);
    for (int i = 0; i < N; i++) assert_true(rv[i] == 3.0 * i);
    pe_block_end();
    pe_release(r), pe_release(a);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* ------------------------------------------------------------ dead values */

static uint64_t executed_for_read(int release_dead)
{
    double x[128];
    for (int i = 0; i < 128; i++) x[i] = i * 0.25;
    pe_array a = pe_f64_1d(x, 128);
    pe_sync();
    pe_stats s0 = stats();
    pe_array m = pe_mul(a, 3.0);
    pe_array d = pe_exp(m);
    pe_array d2 = pe_sum(d);
    pe_release(m);
    if (release_dead) pe_release(d), pe_release(d2);
    pe_array live = pe_add(a, 1.0);
    double v[128];
    assert_int_equal(pe_read(live, v, sizeof v), PE_OK);
    for (int i = 0; i < 128; i++) assert_true(v[i] == x[i] + 1.0);
    pe_sync();
    uint64_t executed = stats().ops_executed - s0.ops_executed;
    assert_int_equal(stats().queued, 0);
    if (!release_dead) {
        double s;
        assert_int_equal(pe_read_f64(d2, &s), PE_OK);
        assert_true(s > 0);
        pe_release(d), pe_release(d2);
    }
    pe_release(live), pe_release(a);
    return executed;
}

static void test_dead_values_not_computed(void **state)
{
    (void)state;
    uint64_t with_dead = executed_for_read(1);
    uint64_t all_alive = executed_for_read(0);
    assert_int_equal(with_dead, 1); /* only `live` */
    assert_true(all_alive >= with_dead + 3);
    /* a dead value on its own: never computed, even by a sync */
    double x[4] = {1, 2, 3, 4};
    pe_array a = pe_f64_1d(x, 4);
    pe_sync();
    pe_stats s0 = stats();
    pe_array d = pe_log(a);
    pe_release(d);
    pe_flush();
    pe_sync();
    assert_int_equal(stats().ops_executed, s0.ops_executed);
    assert_int_equal(stats().queued, 0);
    pe_release(a);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* ------------------------------------------------------------------ stores */

/* Two requests that compute one value (equal expressions in one kernel: a
 * common subexpression) store it once: the second array shares the first's
 * buffer (jit/proggen/proggen.c, exec/base/deferred.c) and keeps it after
 * the first is released; where the first's buffer is the caller's (a read
 * computes in place) the second gets a copy, never the caller's memory.  The same from the trace cache. */
static void test_equal_values_stored_once(void **state)
{
    (void)state;
    enum { N = 20000 }; /* 80 kB: pe_read_release computes into the caller's buffer */
    static float x[N], y[N], a_out[N], a_kept[N], b_out[N], c_out[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 100) * 0.01f, y[i] = 1.0f + (float)(i % 7);
    const char *executor = getenv("PE_EXECUTOR");
    bool jit = !(executor && strcmp(executor, "interp") == 0); /* the interpreter stores every value */
    pe_array px = pe_f32_1d(x, N), py = pe_f32_1d(y, N);
    for (int round = 0; round < 3; round++) {
        pe_sync();
        pe_stats s0 = stats();
        pe_array m1 = pe_mul(px, py), m2 = pe_mul(px, py);
        pe_array a = pe_exp(m1), b = pe_exp(m2), c = pe_add(px, py);
        pe_release(m1), pe_release(m2);
        if (round < 2) {
            assert_int_equal(pe_read(a, a_out, sizeof a_out), PE_OK);
            pe_release(a);
        } else {
            assert_int_equal(pe_read_release(a, a_out, sizeof a_out), PE_OK); /* into a_out, then released */
        }
        pe_stats s1 = stats();
        if (jit) {
            assert_int_equal(s1.kernels_launched - s0.kernels_launched, 1);
            assert_int_equal(s1.kernel_outputs - s0.kernel_outputs, 2); /* a's value and c */
            assert_int_equal(s1.stores_shared - s0.stores_shared, 1);   /* b's is a's */
            assert_int_equal(s1.reads_in_place - s0.reads_in_place, 1); /* a read computes into a_out either way */
        }
        memcpy(a_kept, a_out, sizeof a_out);
        memset(a_out, 0, sizeof a_out); /* the caller reuses its buffer */
        assert_int_equal(pe_read(b, b_out, sizeof b_out), PE_OK);
        assert_int_equal(pe_read(c, c_out, sizeof c_out), PE_OK);
        assert_int_equal(stats().kernels_launched, s1.kernels_launched); /* b and c were computed */
        for (int i = 0; i < N; i++) {
            if (memcmp(&b_out[i], &a_kept[i], sizeof b_out[i]) != 0)
                fail_msg("round %d, element %d: b %.9g, a %.9g", round, i, b_out[i], a_kept[i]);
            if (!(fabsf(b_out[i] - expf(x[i] * y[i])) <= 1e-6f * expf(x[i] * y[i])) || c_out[i] != x[i] + y[i])
                fail_msg("round %d, element %d: %.9g, %.9g", round, i, b_out[i], c_out[i]);
        }
        pe_release(b), pe_release(c);
    }
    pe_release(px), pe_release(py);
    tu_expect_no_error();
    assert_no_live_arrays();
}

/* ------------------------------------------------------- Black-Scholes */

static void test_black_scholes_matches_c(void **state)
{
    (void)state;
    enum { N = 1000 };
    static double S[N], K[N], T[N], V[N], want[N];
    const double r = 0.03;
    for (int i = 0; i < N; i++) {
        S[i] = 80.0 + 40.0 * i / N;
        K[i] = 100.0 - 10.0 * (i % 3);
        T[i] = 0.5 + 1.5 * ((i * 37) % N) / N;
        V[i] = 0.2 + 0.2 * ((i * 11) % N) / N;
        double sqT = sqrt(T[i]);
        double d1 = (log(S[i] / K[i]) + (r + 0.5 * V[i] * V[i]) * T[i]) / (V[i] * sqT);
        double d2 = d1 - V[i] * sqT;
        double n1 = 0.5 * erfc(-d1 * M_SQRT1_2), n2 = 0.5 * erfc(-d2 * M_SQRT1_2);
        want[i] = S[i] * n1 - K[i] * exp(-r * T[i]) * n2;
    }
    pe_scope sc = pe_scope_begin();
    pe_array s = pe_f64_1d(S, N), k = pe_f64_1d(K, N), t = pe_f64_1d(T, N), v = pe_f64_1d(V, N);
    pe_sync();
    pe_stats s0 = stats();
    pe_array sqT = pe_sqrt(t);                                     /* 1 */
    pe_array lg = pe_log(pe_div(s, k));                            /* 2, 3 */
    pe_array drift = pe_mul(pe_add(pe_mul(pe_mul(v, v), 0.5), r), t); /* 4..7 */
    pe_array vsq = pe_mul(v, sqT);                                 /* 8 */
    pe_array d1 = pe_div(pe_add(lg, drift), vsq);                  /* 9, 10 */
    pe_array d2 = pe_sub(d1, vsq);                                 /* 11 */
    pe_array n1 = pe_mul(pe_erfc(pe_mul(d1, -M_SQRT1_2)), 0.5);    /* 12..14 */
    pe_array n2 = pe_mul(pe_erfc(pe_mul(d2, -M_SQRT1_2)), 0.5);    /* 15..17 */
    pe_array disc = pe_exp(pe_mul(t, -r));                         /* 18, 19 */
    pe_array call = pe_sub(pe_mul(s, n1), pe_mul(pe_mul(k, disc), n2)); /* 20..23 */
    pe_stats s1 = stats();
    assert_int_equal(s1.ops_executed, s0.ops_executed); /* all recorded, none run */
    assert_true(s1.queued >= s0.queued + 20);
    int64_t n;
    double *got = tu_read_as_f64(call, &n);
    assert_int_equal(n, N);
    pe_stats s2 = stats();
    assert_true(s2.ops_executed > s0.ops_executed);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double rel = fabs(got[i] - want[i]) / fabs(want[i]);
        if (rel > worst) worst = rel;
        if (!(rel <= 1e-12)) fail_msg("option %d: %.17g vs C %.17g (rel %.3g)", i, got[i], want[i], rel);
    }
    free(got);
    print_message("black-scholes: worst relative difference %.3g\n", worst);
    pe_scope_end(sc);
    tu_expect_no_error();
    assert_no_live_arrays();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_recording_executes_nothing, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_each_trigger_computes, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_queries_never_compute, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_constant_folding, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_strength_reduction, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_block_defers_queue_limit, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_dead_values_not_computed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_equal_values_stored_once, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_black_scholes_matches_c, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
