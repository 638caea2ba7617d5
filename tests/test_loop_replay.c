/* test_loop_replay.c — the loop-replay differential (issue 36).
 *
 * A loop is where the trace cache earns its keep and where it can lie: the
 * same requests batch after batch, but their operands change kind between
 * iterations (a fill the first time, a computed array after; a buffer a
 * library call materialised; an adopted buffer put in mid-loop), and where
 * reads cut the batches changes with the iteration.  A key that misses one
 * such fact replays a sequence made for another batch: wrong values, no
 * error (a logistic regression's weights, issue 36: the key called a fill
 * that a matmul had materialised an array, the generator a uniform).
 *
 * Each program here is drawn from a seed: loop-carried values (started as a
 * fill, an adopted buffer, host data or a random draw), a body of random
 * requests (element-wise ops, reductions, views, matmul, fft, random draws,
 * fills, C scalars that change every iteration), reads at random
 * iterations, releases inside the body, carried values reset at random
 * iterations to a fill or an adopted buffer; iterated 5 to 20 times.  It
 * runs on the CPU JIT with the trace cache on, off, under PE_CHECK=all
 * (every value against the interpreter's), on one thread, and on the
 * reference interpreter.  The JIT runs must agree bit for bit (the same
 * arithmetic), the interpreter within rounding; no run may raise an error,
 * and no trace-cache hit may be refused as not fitting its batch (a key
 * made in this run that does not describe its batch is the defect itself).
 *
 *   test_loop_replay            16 programs (CI: seconds)
 *   test_loop_replay soak N S   N programs from seed S (scripts/soak-loop-replay) */
#include "test_util.h"

#include <stdbool.h>

#define MAX_CARRIED 4
#define MAX_STEPS 14
#define MAX_ITERS 20
#define MAX_VALUES (2 + MAX_CARRIED + MAX_STEPS)
#define MAX_OUT (1 << 15)

typedef enum { VEC_N, VEC_M, SCALAR } kind; /* the shapes a value can have: n, m, or a 0-d sum */

typedef enum { START_FILL, START_ADOPT, START_HOST, START_DRAW, N_STARTS } start_kind;

typedef enum {
    S_ADD, S_SUB_SCALED, S_TANH_MUL, S_SIN, S_COND, S_WITH_FILL, S_ITER_SCALAR, /* element-wise */
    S_MEAN, S_MAX, S_SUM_AXIS,                                                  /* reductions */
    S_ROTATE, S_TRANSPOSE_RESHAPE,                                              /* views */
    S_MATMUL, S_MATMUL_T, S_FFT, S_DRAW, /* library calls and generators */
    N_STEP_KINDS
} step_kind;

typedef struct {
    step_kind op;
    int a, b;      /* operand value numbers (inputs, carried, earlier steps) */
    kind k;        /* the result's */
    double c;      /* a constant the step uses */
    bool release;  /* released right after the step (a consumer may still hold it) */
} step;

typedef struct {
    pe_dtype t;
    int64_t n, m;
    int n_carried, n_steps, iters;
    kind carried_kind[MAX_CARRIED];
    start_kind start[MAX_CARRIED];
    int update_from[MAX_CARRIED];   /* the step whose value (tanh'd, or as a gradient step) is the next carried */
    bool gradient[MAX_CARRIED];     /* next = carried - 0.01 * step value, else tanh(step value) */
    step steps[MAX_STEPS];
    uint32_t read_mask[MAX_ITERS];  /* per iteration: which steps are read (bit s) */
    uint32_t reset_mask[MAX_ITERS]; /* per iteration: which carried values restart (bit c) */
    start_kind reset_to[MAX_ITERS][MAX_CARRIED];
} program;

static uint64_t rng;
static uint32_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* A value's kind: 0 the matrix x (m x n), 1 the vector y (m), then the carried values, then the steps. */
static kind kind_of(const program *p, int v)
{
    if (v == 0) return SCALAR; /* never asked: x is only matmul's */
    if (v == 1) return VEC_M;
    if (v < 2 + p->n_carried) return p->carried_kind[v - 2];
    return p->steps[v - 2 - p->n_carried].k;
}

/* A random value of kind k among the first `known` (y, carried, steps so far); -1 if none. */
static int pick(const program *p, int known, kind k)
{
    int candidates[MAX_VALUES], n = 0;
    for (int v = 1; v < known; v++)
        if (kind_of(p, v) == k) candidates[n++] = v;
    return n ? candidates[next() % (uint32_t)n] : -1;
}

static void draw_program(program *p, uint64_t seed)
{
    rng = seed * 0x9e3779b97f4a7c15ull + 1;
    memset(p, 0, sizeof *p);
    p->t = next() % 4 ? PE_F64 : PE_F32;
    p->n = 4 << (next() % 3);       /* 4, 8, 16: fft sizes FFTW and the interpreter both take */
    p->m = 3 + next() % 9;
    p->n_carried = 1 + (int)(next() % MAX_CARRIED);
    p->n_steps = 4 + (int)(next() % (MAX_STEPS - 3));
    p->iters = 5 + (int)(next() % 16);
    for (int c = 0; c < p->n_carried; c++) {
        p->carried_kind[c] = next() % 3 ? VEC_N : VEC_M;
        p->start[c] = (start_kind)(next() % N_STARTS);
    }
    int known = 2 + p->n_carried;
    for (int s = 0; s < p->n_steps; s++, known++) {
        step *st = &p->steps[s];
        st->c = 0.125 * (1 + next() % 15);
        st->release = next() % 4 == 0;
        for (int tries = 0;; tries++) {
            st->op = (step_kind)(next() % N_STEP_KINDS);
            kind k = next() % 3 ? VEC_N : VEC_M;
            st->a = pick(p, known, k);
            st->b = pick(p, known, k);
            st->k = k;
            if (st->a < 0) continue;
            switch (st->op) {
            case S_MEAN: case S_MAX: st->k = SCALAR; break;
            case S_MATMUL: st->a = pick(p, known, VEC_N), st->k = VEC_M; break;
            case S_MATMUL_T: st->a = pick(p, known, VEC_M), st->k = VEC_N; break;
            case S_FFT:
                if (k != VEC_N) continue; /* n is a power of two, m not */
                break;
            default: break;
            }
            if (st->a >= 0 || tries > 20) break;
        }
        if (st->a < 0) st->op = S_DRAW, st->a = 1, st->k = VEC_M;
        /* a scalar operand broadcasts against a vector: the second operand may be one */
        if (next() % 5 == 0) {
            int sc = pick(p, known, SCALAR);
            if (sc >= 0) st->b = sc;
        }
        if (st->b < 0) st->b = st->a;
    }
    for (int c = 0; c < p->n_carried; c++) {
        int from = -1;
        for (int s = p->n_steps - 1; s >= 0 && from < 0; s--)
            if (p->steps[s].k == p->carried_kind[c] && next() % 2) from = s;
        p->update_from[c] = from; /* -1: the carried value goes on unchanged */
        p->gradient[c] = next() % 2;
    }
    uint32_t steady_reads = next() % 3 ? 1u << (next() % (uint32_t)p->n_steps) : 0;
    for (int it = 0; it < p->iters; it++) {
        /* a loop's reads: the same steps every iteration (a loss, a residual), now and then others */
        p->read_mask[it] = steady_reads | (next() % 4 == 0 ? next() & ((1u << p->n_steps) - 1) : 0);
        p->reset_mask[it] = it > 0 && next() % 6 == 0 ? next() & ((1u << p->n_carried) - 1) : 0;
        for (int c = 0; c < p->n_carried; c++) p->reset_to[it][c] = (start_kind)(next() % N_STARTS);
    }
}

/* ------------------------------------------------------------ one run */

typedef struct {
    double *out;
    int n_out;
} results;

static void keep_values(results *r, pe_array a)
{
    int64_t count = pe_numel(a);
    double raw[64];
    bool f32 = pe_dtype_of(a) == PE_F32;
    assert_true(count <= 64 && (f32 || pe_dtype_of(a) == PE_F64));
    if (pe_read(a, raw, (size_t)count * (f32 ? sizeof(float) : sizeof(double))) != PE_OK)
        fail_msg("a read failed: %s:%d: %s", tu_errors.file, tu_errors.line, tu_errors.message);
    for (int64_t i = 0; i < count && r->n_out < MAX_OUT; i++) r->out[r->n_out++] = f32 ? ((float *)raw)[i] : raw[i];
}

static int64_t len_of(const program *p, kind k) { return k == VEC_N ? p->n : p->m; }

/* Deterministic host values for a start or a reset: the same in every run. */
static void host_values(const program *p, void *dst, int64_t len, int salt)
{
    for (int64_t i = 0; i < len; i++) {
        double v = 0.5 * sin(0.7 * (double)i + 1.3 * salt);
        if (p->t == PE_F32) ((float *)dst)[i] = (float)v;
        else ((double *)dst)[i] = v;
    }
}

static void adopted_free(void *data, void *ctx)
{
    (void)ctx;
    free(data);
}

static pe_array start_value(const program *p, kind k, start_kind how, pe_rng draws, int salt)
{
    int64_t len = len_of(p, k);
    size_t bytes = (size_t)len * (p->t == PE_F32 ? sizeof(float) : sizeof(double));
    switch (how) {
    case START_FILL: return pe_fill(p->t, 1, (int64_t[]){len}, 0.25 * (salt % 3));
    case START_ADOPT: {
        void *buf = malloc(bytes);
        assert_non_null(buf);
        host_values(p, buf, len, salt);
        return pe_adopt(p->t, 1, (int64_t[]){len}, buf, adopted_free, NULL);
    }
    case START_HOST: {
        double tmp[64];
        host_values(p, tmp, len, salt);
        return pe_from_host(p->t, 1, (int64_t[]){len}, tmp);
    }
    default: return pe_sub(pe_rng_uniform(draws, p->t, 1, (int64_t[]){len}), 0.5);
    }
}

static pe_array run_step(const program *p, const step *st, const pe_array *v, int it, pe_rng draws)
{
    pe_array a = v[st->a], b = v[st->b], x = v[0];
    int64_t len = len_of(p, st->k);
    switch (st->op) {
    case S_ADD: return pe_add(a, b);
    case S_SUB_SCALED: return pe_sub(a, pe_mul(b, st->c));
    case S_TANH_MUL: return pe_tanh(pe_mul(a, b));
    case S_SIN: return pe_sin(pe_add(a, st->c));
    case S_COND: return pe_cond(pe_gt(a, b), a, pe_mul(b, 0.5));
    case S_WITH_FILL: return pe_mul(a, pe_fill(p->t, 1, (int64_t[]){pe_numel(a)}, st->c));
    case S_ITER_SCALAR: return pe_tanh(pe_add(a, 0.01 * it + st->c)); /* a C scalar that changes every iteration */
    case S_MEAN: return pe_mean(a);
    case S_MAX: return pe_max(pe_abs(a));
    case S_SUM_AXIS: return pe_mul(pe_sum_axis(pe_spread(a, 0, 3), 0), 1.0 / 3);
    case S_ROTATE: {
        int64_t n = pe_numel(a);
        int64_t from1[1] = {1}, rest[1] = {n - 1}, from0[1] = {0}, one[1] = {1};
        return pe_concat(pe_slice(a, from1, rest), pe_slice(a, from0, one), 0);
    }
    case S_TRANSPOSE_RESHAPE: {
        int64_t n = pe_numel(a);
        int64_t row[2] = {1, n}, flat[1] = {n};
        return pe_reshape(pe_transpose(pe_reshape(a, 2, row)), 1, flat);
    }
    case S_MATMUL: return pe_mul(pe_matmul(x, a), 1.0 / (double)p->n);
    case S_MATMUL_T: return pe_mul(pe_matmul(pe_transpose(x), a), 1.0 / (double)p->m);
    case S_FFT: return pe_mul(pe_real(pe_fft(a, 1)), 1.0 / (double)p->n);
    default: return pe_add(pe_rng_uniform(draws, p->t, 1, (int64_t[]){len}), pe_mul(a, 0.0));
    }
}

typedef struct {
    const char *name;
    pe_config cfg;
} setting;

/* Runs program p under one setting; its reads, in order, into r.  Returns
 * the trace hits.  `dir`: the cache directory, one for every run of the
 * test (compiled kernels are shared, so each is compiled once; the trace
 * files the runs leave there are the disk's replays for the later runs). */
static uint64_t run_program(const program *p, uint64_t seed, const setting *how, const char *dir, results *r)
{
    pe_config cfg = how->cfg;
    cfg.cache_dir = dir;
    tu_errors_clear();
    assert_int_equal(pe_init(&cfg), PE_OK);
    pe_push_error_handler(tu_record_error, NULL);
    pe_rng draws = pe_rng_create(PE_RNG_PHILOX, seed);
    pe_scope whole = pe_scope_begin(); /* the inputs, the start values and their temporaries, what the body keeps */
    double xs[16 * 16], ys[16];
    for (int64_t i = 0; i < p->m * p->n; i++) xs[i] = sin(0.37 * (double)i + (double)seed);
    for (int64_t i = 0; i < p->m; i++) ys[i] = cos(0.11 * (double)i);
    pe_array v[MAX_VALUES];
    int64_t x_shape[2] = {p->m, p->n};
    v[0] = pe_cast(pe_from_host(PE_F64, 2, x_shape, xs), p->t);
    v[1] = pe_cast(pe_f64_1d(ys, p->m), p->t);
    int first_step = 2 + p->n_carried;
    for (int c = 0; c < p->n_carried; c++) v[2 + c] = start_value(p, p->carried_kind[c], p->start[c], draws, c);
    r->n_out = 0;
    for (int it = 0; it < p->iters; it++) {
        for (int c = 0; c < p->n_carried; c++)
            if (p->reset_mask[it] & (1u << c)) {
                pe_release(v[2 + c]);
                v[2 + c] = start_value(p, p->carried_kind[c], p->reset_to[it][c], draws, it + c);
            }
        pe_scope sc = pe_scope_begin();
        bool live[MAX_STEPS];
        for (int s = 0; s < p->n_steps; s++) {
            const step *st = &p->steps[s];
            v[first_step + s] = run_step(p, st, v, it, draws);
            /* one to release by hand: kept out of the scope (a fold may give back an operand's handle,
             * which a release inside the scope and the scope's end would release twice) */
            if (st->release) pe_keep(v[first_step + s]);
            live[s] = true;
            if (p->read_mask[it] & (1u << s)) keep_values(r, v[first_step + s]);
        }
        /* the next carried values, kept past the body's scope (the old ones released by hand) */
        pe_array next_carried[MAX_CARRIED];
        for (int c = 0; c < p->n_carried; c++) {
            int from = p->update_from[c];
            if (from < 0) {
                next_carried[c] = v[2 + c];
                pe_retain(next_carried[c]);
                continue;
            }
            pe_array s = v[first_step + from];
            next_carried[c] = p->gradient[c] ? pe_sub(v[2 + c], pe_mul(s, 0.01)) : pe_tanh(s);
            pe_keep(next_carried[c]);
        }
        for (int s = 0; s < p->n_steps; s++) /* released by hand inside the body, before the next carried are used */
            if (p->steps[s].release && live[s]) pe_release(v[first_step + s]), live[s] = false;
        pe_scope_end(sc);
        for (int c = 0; c < p->n_carried; c++) {
            pe_release(v[2 + c]);
            v[2 + c] = next_carried[c];
        }
    }
    for (int c = 0; c < p->n_carried; c++) keep_values(r, v[2 + c]);
    pe_scope_end(whole);
    pe_rng_destroy(draws);
    pe_sync(); /* the releases queued last take effect */
    pe_stats st;
    pe_get_stats(&st);
    if (tu_errors.count)
        fail_msg("program %llu (%s): %d errors, the last: %s:%d: %s", (unsigned long long)seed, how->name, tu_errors.count,
                 tu_errors.file, tu_errors.line, tu_errors.message);
    if (st.trace_misfits)
        fail_msg("program %llu (%s): %llu trace-cache hits did not fit their batch: the key misses a fact",
                 (unsigned long long)seed, how->name, (unsigned long long)st.trace_misfits);
    assert_int_equal(st.live_arrays, 0);
    pe_pop_error_handler();
    pe_shutdown();
    return st.trace_hits;
}

static const setting settings[] = {
    {"jit, trace cache on", {.executor = "jit", .threads = 2}},
    {"jit, trace cache off", {.executor = "jit", .threads = 2, .trace_cache_entries = -1}},
    {"jit, PE_CHECK=all", {.executor = "jit", .threads = 2, .check = "all"}},
    {"jit, 1 thread", {.executor = "jit", .threads = 1}},
    {"interpreter", {.executor = "interp"}},
};
enum { N_SETTINGS = sizeof settings / sizeof settings[0], INTERPRETER = N_SETTINGS - 1 };

static uint64_t soak_seed = 1;
static int soak_programs = 0; /* soak mode: each run named on stderr as it starts */

static void differential(uint64_t first_seed, int programs)
{
    results r[N_SETTINGS];
    for (int s = 0; s < N_SETTINGS; s++) r[s].out = malloc(MAX_OUT * sizeof(double));
    uint64_t hits = 0;
    long values = 0;
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/pe-loop-replay-XXXXXX");
    assert_non_null(mkdtemp(dir));
    for (int prog = 0; prog < programs; prog++) {
        uint64_t seed = first_seed + (uint64_t)prog;
        program p;
        draw_program(&p, seed);
        for (int s = 0; s < N_SETTINGS; s++) {
            if (soak_programs) fprintf(stderr, "program %llu: %s\n", (unsigned long long)seed, settings[s].name);
            uint64_t h = run_program(&p, seed, &settings[s], dir, &r[s]);
            if (s == 0) hits += h;
        }
        values += r[0].n_out;
        for (int s = 1; s < N_SETTINGS; s++) {
            assert_int_equal(r[s].n_out, r[0].n_out);
            bool bitwise = s != INTERPRETER;
            double tol = p.t == PE_F32 ? 1e-4 : 1e-10;
            for (int i = 0; i < r[0].n_out; i++) {
                double a = r[0].out[i], b = r[s].out[i];
                bool same = bitwise ? memcmp(&a, &b, sizeof a) == 0 : fabs(a - b) <= tol * (fabs(b) > 1 ? fabs(b) : 1);
                if (!same)
                    fail_msg("program %llu (%s, n %lld, m %lld, %d iterations) value %d of %d: %s %.17g, %s %.17g",
                             (unsigned long long)seed, p.t == PE_F32 ? "f32" : "f64", (long long)p.n, (long long)p.m,
                             p.iters, i, r[0].n_out, settings[0].name, a, settings[s].name, b);
            }
        }
    }
    /* the loops did replay from the trace cache, and read something */
    assert_true(hits > (uint64_t)programs);
    assert_true(values > 10L * programs);
    for (int s = 0; s < N_SETTINGS; s++) free(r[s].out);
    tu_remove_dir(dir);
}

static void test_loop_replay_agrees(void **state)
{
    (void)state;
    differential(soak_programs ? soak_seed : 1, soak_programs ? soak_programs : 16);
}

/* The logistic regression, as a user writes it: for each start
 * (fill or host data), each gradient (matmul or a sum along an axis), with
 * and without a read every iteration, the weights against a C loop. */
static void test_logistic_regression(void **state)
{
    (void)state;
    enum { N = 64, D = 8, ITERS = 12 };
    double xs[N * D], ys[N];
    for (int i = 0; i < N * D; i++) xs[i] = sin(i * 0.37);
    for (int i = 0; i < N; i++) ys[i] = cos(i * 0.11);
    for (int combo = 0; combo < 8; combo++) {
        bool fill = combo & 1, by_matmul = combo & 2, read_each = combo & 4;
        double w_c[D] = {0}, z_c[N], g_c[D];
        char dir[64];
        snprintf(dir, sizeof dir, "/tmp/pe-loop-replay-XXXXXX");
        assert_non_null(mkdtemp(dir));
        assert_int_equal(pe_init(&(pe_config){.cache_dir = dir}), PE_OK);
        pe_array x = pe_f64_2d(xs, N, D), y = pe_f64_1d(ys, N);
        pe_array w = fill ? pe_fill(PE_F64, 1, ((int64_t[]){D}), 0.0) : pe_f64_1d(w_c, D);
        for (int it = 0; it < ITERS; it++) {
            pe_scope sc = pe_scope_begin();
            pe_array z = by_matmul ? pe_matmul(x, w) : pe_sum_axis(pe_mul(x, pe_reshape(w, 2, ((int64_t[]){1, D}))), 1);
            double loss;
            if (read_each) assert_int_equal(pe_read_f64(pe_sum(z), &loss), PE_OK);
            pe_array g = pe_matmul(pe_transpose(x), pe_sub(z, y));
            pe_array next_w = pe_sub(w, pe_mul(g, 0.01));
            pe_keep(next_w);
            pe_scope_end(sc);
            pe_release(w);
            w = next_w;
            for (int i = 0; i < N; i++) {
                double s = 0;
                for (int j = 0; j < D; j++) s += xs[i * D + j] * w_c[j];
                z_c[i] = s - ys[i];
            }
            for (int j = 0; j < D; j++) {
                double s = 0;
                for (int i = 0; i < N; i++) s += xs[i * D + j] * z_c[i];
                g_c[j] = s;
            }
            for (int j = 0; j < D; j++) w_c[j] -= 0.01 * g_c[j];
        }
        double w_pe[D];
        assert_int_equal(pe_read(w, w_pe, sizeof w_pe), PE_OK);
        pe_stats st;
        pe_get_stats(&st);
        assert_int_equal(st.trace_misfits, 0); /* no sequence replayed for a batch its key did not describe */
        for (int j = 0; j < D; j++)
            if (!(fabs(w_pe[j] - w_c[j]) <= 1e-12))
                fail_msg("start %s, %s, %s: w[%d] %.17g, the C loop %.17g", fill ? "fill" : "host data",
                         by_matmul ? "matmul" : "sum along an axis", read_each ? "a read every iteration" : "no read",
                         j, w_pe[j], w_c[j]);
        pe_release(x), pe_release(y), pe_release(w);
        pe_shutdown();
        tu_remove_dir(dir);
    }
}

void debug_program(uint64_t seed);
void debug_program(uint64_t seed)
{
    program p;
    draw_program(&p, seed);
    fprintf(stderr, "t %d n %lld m %lld carried %d steps %d iters %d\n", p.t, (long long)p.n, (long long)p.m, p.n_carried, p.n_steps, p.iters);
    for (int c = 0; c < p.n_carried; c++) fprintf(stderr, " carried %d kind %d start %d from %d grad %d\n", c, p.carried_kind[c], p.start[c], p.update_from[c], p.gradient[c]);
    for (int s = 0; s < p.n_steps; s++) fprintf(stderr, " step %d op %d a %d b %d k %d rel %d\n", s, p.steps[s].op, p.steps[s].a, p.steps[s].b, p.steps[s].k, p.steps[s].release);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "debug") == 0) { debug_program(strtoull(argv[2], NULL, 0)); return 0; }
    if (argc >= 2 && strcmp(argv[1], "soak") == 0) {
        soak_programs = argc >= 3 ? atoi(argv[2]) : 1000;
        soak_seed = argc >= 4 ? strtoull(argv[3], NULL, 0) : 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logistic_regression),
        cmocka_unit_test(test_loop_replay_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
