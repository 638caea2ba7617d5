/* test_trace_check.c — a program sequence the trace cache got from outside
 * (a file) is checked against the batch it is applied to before anything
 * runs (issue 22, item 6; jit/trace/trace_check.c).  A program runs once on
 * the CPU JIT so that its batch's sequence is cached; each case takes that
 * entry, changes one field as a damaged or forged file would (a kernel's
 * count, a parameter's kind, dtype or strides, a bound port, a program left
 * out, a stored member said to share another's store, the count of a kernel
 * that reads no array; a library call reading its own result, whose first
 * member is no intrinsic, or that computes a port twice), puts it back as an
 * entry read from disk and runs the program again: the values must be a C
 * loop's, the entry refused with a warning, and the batch generated again.
 * The untouched entry is used as it is. */
#define _GNU_SOURCE
#include "test_util.h"

#include <unistd.h>

#include "jit/trace/trace.h"

#define N 3000

static float x[N], y[N];

static double ramp_total; /* the sum of a kernel that reads no array (pe_index) */

/* One batch: a kernel with a broadcast input, two outputs and a sum, and a
 * sum of a generator (a kernel with no array parameter). */
static void run_program(float *out, float *out2, double *total)
{
    int64_t n = N, row_shape[2] = {N / 3, 3}, three = 3;
    float w[3] = {0.5f, -1.0f, 2.0f};
    pe_array a = pe_f32_1d(x, N), b = pe_f32_1d(y, N), v = pe_from_host(PE_F32, 1, &three, w);
    pe_array m = pe_reshape(a, 2, row_shape);
    pe_array r = pe_add(pe_mul(m, v), 1.0f); /* v broadcast along rows */
    pe_array e = pe_exp(pe_mul(b, 0.001f));
    pe_array s = pe_sum(pe_mul(e, 2.0f));
    pe_array ramp = pe_index(PE_F32, 1, &n, 0), ramp_sum = pe_sum(pe_mul(ramp, 0.5f));
    assert_int_equal(pe_read(r, out, sizeof(float) * N), PE_OK);
    assert_int_equal(pe_read(e, out2, sizeof(float) * N), PE_OK);
    assert_int_equal(pe_read_f64(s, total), PE_OK);
    assert_int_equal(pe_read_f64(ramp_sum, &ramp_total), PE_OK);
    pe_release(a), pe_release(b), pe_release(v), pe_release(m), pe_release(r), pe_release(e), pe_release(s);
    pe_release(ramp), pe_release(ramp_sum);
}

static void check_values(const float *out, const float *out2, double total)
{
    const float w[3] = {0.5f, -1.0f, 2.0f};
    double sum = 0;
    for (int i = 0; i < N; i++) {
        float want = x[i] * w[i % 3] + 1.0f, want2 = expf(y[i] * 0.001f);
        if (out[i] != want) fail_msg("r[%d] = %.9g, want %.9g", i, out[i], want);
        if (fabsf(out2[i] - want2) > 2e-7f * fabsf(want2)) fail_msg("e[%d] = %.9g, want %.9g", i, out2[i], want2);
        sum += (double)(want2 * 2.0f);
    }
    if (fabs(total - sum) > 1e-5 * fabs(sum)) fail_msg("sum %.9g, want %.9g", total, sum);
    if (ramp_total != 0.25 * N * (N - 1)) fail_msg("ramp sum %.17g, want %.17g", ramp_total, 0.25 * N * (N - 1));
}

/* ------------------------------------------------ copies of cache entries */

typedef struct {
    uint8_t *key;
    size_t key_len;
    uint64_t first_site;
    uint32_t n_externals;
    uint8_t rules;
    pe_program_seq seq;
} entry_copy;

static entry_copy copies[64];
static int n_copies;

static void copy_entry(const pe_trace_record *r, void *ctx)
{
    (void)ctx;
    assert_true(n_copies < 64);
    entry_copy *c = &copies[n_copies++];
    c->key = malloc(r->key_len ? r->key_len : 1);
    memcpy(c->key, r->key, r->key_len);
    c->key_len = r->key_len, c->first_site = r->first_site, c->n_externals = r->n_externals, c->rules = r->rules;
    c->seq = (pe_program_seq){calloc(r->seq->n, sizeof(pe_program)), r->seq->n, r->seq->n, false};
    for (size_t i = 0; i < r->seq->n; i++) {
        const pe_program *a = &r->seq->progs[i];
        pe_program *b = &c->seq.progs[i];
        *b = *a;
        b->code = NULL;
        if (a->kind == PE_PROG_INTRINSIC) { /* members and operands */
            b->bind = malloc(sizeof *b->bind * (size_t)(a->n_bind ? a->n_bind : 1));
            memcpy(b->bind, a->bind, sizeof *b->bind * (size_t)a->n_bind);
            b->members = malloc(sizeof *b->members * (size_t)a->n_members);
            memcpy(b->members, a->members, sizeof *b->members * (size_t)a->n_members);
            continue;
        }
        if (a->kind != PE_PROG_KERNEL) continue;
        b->kir = malloc(sizeof *b->kir);
        memcpy(b->kir, a->kir, sizeof *b->kir);
        b->bind = malloc(sizeof *b->bind * (size_t)a->kir->n_params);
        memcpy(b->bind, a->bind, sizeof *b->bind * (size_t)a->kir->n_params);
        b->members = malloc(sizeof *b->members * (size_t)a->n_members);
        memcpy(b->members, a->members, sizeof *b->members * (size_t)a->n_members);
        if (a->shares) {
            b->shares = malloc(sizeof *b->shares * (size_t)a->n_members);
            memcpy(b->shares, a->shares, sizeof *b->shares * (size_t)a->n_members);
        }
    }
}

static void free_copies(void)
{
    for (int i = 0; i < n_copies; i++) {
        free(copies[i].key);
        pe_program_seq_free(&copies[i].seq);
    }
    n_copies = 0;
}

/* The cache holds exactly the copies, as if read from a file. */
static void adopt_copies(void)
{
    pe_trace_clear();
    for (int i = 0; i < n_copies; i++) {
        pe_trace_record r = {copies[i].key, copies[i].key_len, copies[i].first_site, copies[i].n_externals,
                             copies[i].rules, &copies[i].seq};
        assert_true(pe_trace_adopt(&r));
    }
}

static int param_of_kind(const pe_program *p, kir_param_kind kind)
{
    for (int i = 0; i < p->kir->n_params; i++)
        if (p->kir->params[i].kind == kind) return i;
    return -1;
}

/* The kernel program of the copies with a broadcast input (r's), or NULL. */
static pe_program *broadcasting_kernel(void)
{
    for (int i = 0; i < n_copies; i++)
        for (size_t k = 0; k < copies[i].seq.n; k++) {
            pe_program *p = &copies[i].seq.progs[k];
            if (p->kind == PE_PROG_KERNEL && param_of_kind(p, KIR_IN_STRIDED) >= 0) return p;
        }
    return NULL;
}

/* ------------------------------------------------------------- the cases */

typedef enum {
    UNTOUCHED, COUNT_HALVED, SHAPE_HALVED, DTYPE_CHANGED, STRIDE_CHANGED, CONTIG_AS_SCALAR, OUTPUT_REBOUND,
    INPUT_IS_OUTPUT, PROGRAM_DROPPED, STORE_SHARED, GENERATOR_COUNT_HALVED, N_CASES
} tamper;
static const char *const tamper_names[] = {"untouched", "count halved", "shape halved", "dtype changed",
                                           "stride changed", "array as scalar", "output rebound",
                                           "input bound to the output", "program dropped",
                                           "a stored member shares another's store",
                                           "count halved, a kernel reading no array"};

static void apply(tamper t)
{
    pe_program *p = broadcasting_kernel();
    assert_non_null(p);
    int bc = param_of_kind(p, KIR_IN_STRIDED), out = param_of_kind(p, KIR_OUT), in = param_of_kind(p, KIR_IN_CONTIG);
    assert_true(bc >= 0 && out >= 0 && in >= 0);
    switch (t) {
    case UNTOUCHED: break;
    case COUNT_HALVED: p->numel /= 2; break;
    case SHAPE_HALVED: p->kir->shape[0] /= 2, p->numel /= 2; break;
    case DTYPE_CHANGED: p->kir->params[in].dtype = PE_F64; break;
    case STRIDE_CHANGED: p->kir->params[bc].stride[0] = 1; break;
    case CONTIG_AS_SCALAR: p->kir->params[in].kind = KIR_IN_SCALAR; break;
    case OUTPUT_REBOUND: p->bind[out] = p->bind[in]; break;
    case INPUT_IS_OUTPUT: p->bind[in] = p->bind[out]; break;
    case PROGRAM_DROPPED:
        for (int i = 0; i < n_copies; i++)
            if (copies[i].seq.n > 1) { /* the last program of a sequence is lost */
                pe_program *last = &copies[i].seq.progs[--copies[i].seq.n];
                if (last->kind == PE_PROG_KERNEL)
                    free(last->kir), free(last->bind), free(last->members), free(last->shares);
                break;
            }
        break;
    case GENERATOR_COUNT_HALVED: /* only the members' own counts can tell */
        for (int i = 0; i < n_copies; i++)
            for (size_t k = 0; k < copies[i].seq.n; k++) {
                pe_program *q = &copies[i].seq.progs[k];
                if (q->kind == PE_PROG_KERNEL && param_of_kind(q, KIR_IN_CONTIG) < 0 &&
                    param_of_kind(q, KIR_IN_STRIDED) < 0) {
                    q->numel /= 2; /* and its iteration shape with it */
                    if (q->kir->rank > 0) q->kir->shape[q->kir->rank - 1] /= 2;
                }
            }
        break;
    case STORE_SHARED: /* r, which the kernel stores, said to take the first member's buffer */
        free(p->shares);
        p->shares = malloc(sizeof *p->shares * (size_t)p->n_members);
        for (int m = 0; m < p->n_members; m++) p->shares[m] = p->members[m] == p->bind[out] && m > 0 ? 0 : -1;
        break;
    default: break;
    }
}

/* stderr caught in a file while one run is watched (the runtime's warnings). */
typedef struct {
    char path[32];
    int fd, saved_stderr;
} caught_log;

static void log_open(caught_log *l)
{
    snprintf(l->path, sizeof l->path, "/tmp/pe-trace-check-XXXXXX");
    l->fd = mkstemp(l->path);
    assert_true(l->fd >= 0);
    l->saved_stderr = dup(STDERR_FILENO);
}

static void log_watch(caught_log *l) /* from empty */
{
    assert_int_equal(ftruncate(l->fd, 0), 0);
    assert_int_equal(lseek(l->fd, 0, SEEK_SET), 0);
    fflush(stderr);
    dup2(l->fd, STDERR_FILENO);
}

static void log_unwatch(caught_log *l, char *text, size_t size) /* what it caught, as a string */
{
    fflush(stderr);
    dup2(l->saved_stderr, STDERR_FILENO);
    ssize_t got = pread(l->fd, text, size - 1, 0);
    text[got > 0 ? got : 0] = 0;
}

static void log_close(caught_log *l)
{
    close(l->saved_stderr);
    close(l->fd);
    unlink(l->path);
}

static void test_saved_sequences_are_checked(void **state)
{
    (void)state;
    for (int i = 0; i < N; i++) x[i] = (float)((i * 37) % 101) - 50.0f, y[i] = (float)((i * 13) % 97);
    float *out = malloc(sizeof(float) * N), *out2 = malloc(sizeof(float) * N);
    double total;
    caught_log caught;
    log_open(&caught);
    char cache[] = "/tmp/pe-trace-check-cache-XXXXXX"; /* kernels compiled once; no trace file from elsewhere */
    assert_non_null(mkdtemp(cache));
    for (int t = 0; t < N_CASES; t++) {
        pe_config cfg = {.device = 1, .executor = "jit", .cache_dir = cache, .log_level = PE_LOG_WARN + 1};
        assert_int_equal(pe_init(&cfg), PE_OK);
        /* a value the first run computes again (e: read after the batch that
         * made it for its sum) is stored where it is computed from then on
         * (exec/base/deferred.c), which makes other batches: the second
         * run's are the program's steady ones */
        run_program(out, out2, &total);
        pe_trace_clear();
        run_program(out, out2, &total); /* the sequence is made and cached */
        check_values(out, out2, total);
        pe_trace_each(copy_entry, NULL);
        assert_true(n_copies > 0);
        apply((tamper)t);
        adopt_copies();
        pe_stats before, after;
        pe_get_stats(&before);
        log_watch(&caught);
        memset(out, 0, sizeof(float) * N);
        run_program(out, out2, &total);
        char log[4096];
        log_unwatch(&caught, log, sizeof log);
        check_values(out, out2, total);
        pe_get_stats(&after);
        bool warned = strstr(log, "does not fit its batch") != NULL;
        if (t == UNTOUCHED) {
            if (warned || after.proggen_runs != before.proggen_runs)
                fail_msg("the untouched entry was not used: %s", log);
        } else if (!warned || after.proggen_runs == before.proggen_runs) {
            fail_msg("%s: not refused (warning: %s, program generator runs %llu -> %llu)", tamper_names[t],
                     warned ? "yes" : "no", (unsigned long long)before.proggen_runs,
                     (unsigned long long)after.proggen_runs);
        }
        free_copies();
        pe_shutdown();
    }
    tu_remove_dir(cache);
    log_close(&caught);
    free(out), free(out2);
}

/* ------------------------------------------------------- library calls */

/* One batch: 0.5 * (a @ b) + c, one gemm (intrinsic_plan.c), then a kernel. */
static void run_calls(double *out)
{
    enum { M = 12 };
    static double a[M * M], c[M * M];
    for (int i = 0; i < M * M; i++) a[i] = (double)((i * 7) % 11) - 5, c[i] = (double)(i % 5);
    int64_t s[2] = {M, M};
    pe_array A = pe_from_host(PE_F64, 2, s, a), C = pe_from_host(PE_F64, 2, s, c);
    pe_array P = pe_matmul(A, A), S = pe_mul(P, 0.5), E = pe_add(S, C), F = pe_exp(pe_mul(E, 0.01));
    pe_release(P), pe_release(S);
    assert_int_equal(pe_read(F, out, sizeof(double) * M * M), PE_OK);
    pe_release(A), pe_release(C), pe_release(E), pe_release(F);
}

typedef enum { CALL_UNTOUCHED, CALL_READS_ITS_RESULT, CALL_NOT_AN_INTRINSIC, CALL_MEMBER_TWICE, N_CALL_CASES } call_tamper;
static const char *const call_tamper_names[] = {"untouched", "an operand computed by the call itself",
                                                "a first member that is no intrinsic", "a member computed twice"};

static void apply_call(call_tamper t)
{
    pe_program *p = NULL;
    for (int i = 0; i < n_copies && !p; i++)
        for (size_t k = 0; k < copies[i].seq.n && !p; k++)
            if (copies[i].seq.progs[k].kind == PE_PROG_INTRINSIC) p = &copies[i].seq.progs[k];
    assert_non_null(p);
    assert_true(p->n_members >= 3); /* the product, its scaling, the sum */
    switch (t) {
    case CALL_READS_ITS_RESULT: p->bind[0] = p->port; break;
    case CALL_NOT_AN_INTRINSIC: p->members[0] = p->members[p->n_members - 1]; break;
    case CALL_MEMBER_TWICE: p->members[1] = p->members[0]; break;
    default: break;
    }
}

static void test_saved_library_calls_are_checked(void **state)
{
    (void)state;
    enum { M = 12 };
    double want[M * M], got[M * M];
    caught_log caught;
    log_open(&caught);
    char cache[] = "/tmp/pe-trace-check-cache-XXXXXX";
    assert_non_null(mkdtemp(cache));
    for (int t = 0; t < N_CALL_CASES; t++) {
        pe_config cfg = {.device = 1, .executor = "jit", .cache_dir = cache, .log_level = PE_LOG_WARN + 1};
        assert_int_equal(pe_init(&cfg), PE_OK);
        run_calls(want);
        pe_trace_each(copy_entry, NULL);
        apply_call((call_tamper)t);
        adopt_copies();
        pe_stats before, after;
        pe_get_stats(&before);
        log_watch(&caught);
        run_calls(got);
        char log[4096];
        log_unwatch(&caught, log, sizeof log);
        assert_memory_equal(want, got, sizeof want);
        pe_get_stats(&after);
        bool warned = strstr(log, "does not fit its batch") != NULL;
        assert_int_equal(after.library_calls - before.library_calls, 1);
        if (t == CALL_UNTOUCHED ? warned || after.proggen_runs != before.proggen_runs
                                : !warned || after.proggen_runs == before.proggen_runs)
            fail_msg("%s: %s (%s)", call_tamper_names[t], t == CALL_UNTOUCHED ? "not used" : "not refused", log);
        free_copies();
        pe_shutdown();
    }
    tu_remove_dir(cache);
    log_close(&caught);
}

int main(void)
{
    setenv("PE_AOT", "0", 1); /* the runtime is started per case */
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_saved_sequences_are_checked),
                                       cmocka_unit_test(test_saved_library_calls_are_checked)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
