/* test_profile.c — the profiler's collector and database: a run with
 * PE_PROFILE records each line's requests, reads and writes as the program
 * made them (counted here independently), kernel weights follow the op
 * catalog's costs and sum to 1, per-line shares add up to the kernel totals,
 * the bytes stored and never read go to the lines that made them (and the
 * summary says so), results are bitwise the same with and without
 * profiling, the database round-trips byte for byte, a version 1 file is
 * still read, and corrupt, truncated, hostile or foreign files are rejected
 * with a message (never a crash: this runs under ASan). */
#include "test_util.h"

#include <unistd.h>

#include "irformat/msgblob.h"
#include "irformat/ops.h"
#include "profiler/profdb.h"
#include "profiler/report.h"

#define N 100003
#define ITERS 12

static int line_data, line_exp, line_mul, line_add, line_sum, line_read;

static void run_program(float *result)
{
    float *h = malloc(sizeof *h * N);
    assert_non_null(h);
    for (int i = 0; i < N; i++) h[i] = (float)((i % 1000) * 0.001);
    pe_array two = pe_scalar(PE_F32, 2.0);
    line_data = __LINE__ + 1;
    pe_array x = pe_f32_1d(h, N);
    for (int it = 0; it < ITERS; it++) {
        line_exp = __LINE__ + 1;
        pe_array e = pe_exp(x);
        line_mul = __LINE__ + 1;
        pe_array m = pe_mul(e, two);
        line_add = __LINE__ + 1;
        pe_array a = pe_add(m, x);
        line_sum = __LINE__ + 1;
        pe_array s = pe_sum(a);
        pe_release(e), pe_release(m), pe_release(a);
        line_read = __LINE__ + 1;
        assert_int_equal(pe_read_f32(s, &result[it]), PE_OK);
        pe_release(s);
    }
    pe_release(x), pe_release(two);
    free(h);
}

static char profile_path[256];

/* program(arg) run under PE_PROFILE=<name>.<pid>.pep (profile_path, left
 * for the caller), the profile it wrote loaded into p. */
static void profile_of(const char *name, void (*program)(void *), void *arg, pe_profile *p)
{
    snprintf(profile_path, sizeof profile_path, "%s.%d.pep", name, (int)getpid());
    setenv("PE_PROFILE", profile_path, 1);
    assert_int_equal(pe_init(NULL), PE_OK);
    program(arg);
    pe_shutdown();
    unsetenv("PE_PROFILE");
    char err[600];
    if (!pe_profile_load(p, profile_path, err, sizeof err)) fail_msg("%s", err);
}

static void run_program_into(void *result) { run_program(result); }

/* One profiled run of run_program into profile_path, loaded. */
static void profiled_run(pe_profile *p, float *result) { profile_of("test_profile", run_program_into, result, p); }

static const pe_prof_site *site_at_line(const pe_profile *p, int line)
{
    const pe_prof_site *found = NULL;
    for (uint32_t i = 0; i < p->n_sites; i++)
        if (p->sites[i].line == line && strstr(p->sites[i].file, "test_profile.c")) {
            if (found) fail_msg("two sites at line %d", line);
            found = &p->sites[i];
        }
    if (!found) fail_msg("no site at line %d", line);
    return found;
}

static bool jit_executor(void)
{
    const char *e = getenv("PE_EXECUTOR");
    return !e || strcmp(e, "interp") != 0;
}

static void test_sites_kernels_and_attribution(void **state)
{
    (void)state;
    float plain[ITERS], profiled[ITERS];
    assert_int_equal(pe_init(NULL), PE_OK);
    run_program(plain);
    pe_shutdown();
    pe_profile p;
    profiled_run(&p, profiled);
    /* profiling never changes results */
    assert_memory_equal(plain, profiled, sizeof plain);

    /* sites: what this file asked for, line by line */
    const pe_prof_site *data = site_at_line(&p, line_data);
    assert_int_equal(data->calls, 1);
    assert_int_equal(data->writes, 1);
    assert_int_equal(data->write_bytes, N * sizeof(float));
    assert_int_equal(site_at_line(&p, line_exp)->calls, ITERS);
    assert_int_equal(site_at_line(&p, line_mul)->calls, ITERS);
    assert_int_equal(site_at_line(&p, line_add)->calls, ITERS);
    assert_int_equal(site_at_line(&p, line_sum)->calls, ITERS);
    const pe_prof_site *read = site_at_line(&p, line_read);
    assert_int_equal(read->reads, ITERS);
    assert_int_equal(read->read_bytes, ITERS * sizeof(float));
    assert_true(read->waits >= 1 && read->waits <= ITERS);
    assert_true(strcmp(read->function, "run_program") == 0);

    /* kernels: weights sum to 1; every run of the loop body is accounted */
    uint64_t runs = 0;
    double kernel_ns = 0;
    for (uint32_t k = 0; k < p.n_kernels; k++) {
        double w = 0;
        for (uint32_t j = 0; j < p.kernels[k].n_shares; j++) w += p.kernels[k].shares[j].weight;
        assert_true(fabs(w - 1) < 1e-12);
        runs += p.kernels[k].executions;
        kernel_ns += (double)p.kernels[k].time_ns;
    }
    if (jit_executor()) {
        /* one fused kernel exp+mul+add+sum per iteration, weighted by the catalog's costs */
        assert_int_equal(p.n_kernels, 1);
        const pe_prof_kernel *k = &p.kernels[0];
        assert_int_equal(k->executions, ITERS);
        assert_int_equal(k->elements, (uint64_t)ITERS * N);
        assert_int_equal(k->bytes_read, (uint64_t)ITERS * N * sizeof(float));
        assert_true(k->served == PE_SERVED_compiler || k->served == PE_SERVED_disk || k->served == PE_SERVED_memory);
        double total = pe_op_table[PE_OP_exp].cost + pe_op_table[PE_OP_mul].cost + pe_op_table[PE_OP_add].cost +
                       pe_op_table[PE_OP_sum].cost;
        for (uint32_t j = 0; j < k->n_shares; j++) {
            int line = (int)p.sites[k->shares[j].site].line;
            double want = line == line_exp ? pe_op_table[PE_OP_exp].cost
                          : line == line_mul ? pe_op_table[PE_OP_mul].cost
                          : line == line_add ? pe_op_table[PE_OP_add].cost
                                             : pe_op_table[PE_OP_sum].cost;
            assert_true(fabs(k->shares[j].weight - want / total) < 1e-12);
        }
        assert_int_equal(k->n_shares, 4);
        assert_int_equal(pe_profile_counter(&p, "trace_lookups"), ITERS);
        assert_true(pe_profile_counter(&p, "trace_hits") >= ITERS - 1);
    } else {
        assert_int_equal(runs, 4 * ITERS); /* the interpreter: one record per op */
    }

    /* attribution adds up: per-line compute shares sum to the kernels' total */
    pe_prof_row *rows;
    long n = pe_prof_rows(&p, PE_BY_LINE, &rows);
    assert_true(n > 0);
    double lines_ns = 0, direct_ns = 0;
    for (long i = 0; i < n; i++) lines_ns += rows[i].compute_ns, direct_ns += rows[i].direct_ns;
    free(rows);
    assert_true(kernel_ns > 0);
    assert_true(fabs(lines_ns - kernel_ns) <= 1e-3 * kernel_ns);
    double direct_want = 0;
    for (uint32_t i = 0; i < p.n_sites; i++) direct_want += (double)pe_profile_site_direct_ns(&p.sites[i]);
    assert_true(fabs(direct_ns - direct_want) <= 1e-3 * direct_want + 1);
    n = pe_prof_rows(&p, PE_BY_FUNCTION, &rows);
    double function_ns = 0;
    for (long i = 0; i < n; i++) function_ns += rows[i].compute_ns;
    free(rows);
    assert_true(fabs(function_ns - kernel_ns) <= 1e-3 * kernel_ns);

    /* every value stored here was read: a loaded input, a pe_read */
    for (uint32_t i = 0; i < p.n_sites; i++) assert_int_equal(p.sites[i].stored_unread_bytes, 0);

    /* the timeline refers to what exists and lies within the run */
    assert_true(p.n_events > 0);
    for (uint32_t i = 0; i < p.n_events; i++) assert_true(p.events[i].start_ns <= p.wall_ns);
    assert_true(p.wall_ns > 0);
    pe_profile_free(&p);
    unlink(profile_path);
}

/* pe-prof report's summary of p, as text into *text (malloc'd). */
static void summary_of(const pe_profile *p, char **text, size_t *len)
{
    FILE *f = open_memstream(text, len);
    assert_non_null(f);
    pe_prof_report_summary(p, f);
    fclose(f);
}

#define UNREAD_N 250000 /* f32: 1,000,000 bytes a value */
static int line_kept, line_hinted, line_read_now, line_read_later;

/* Values stored and never read, and values stored and read, one line each. */
static void run_unread_program(void *unused)
{
    (void)unused;
    float *h = malloc(sizeof *h * UNREAD_N), *out = malloc(sizeof *out * UNREAD_N);
    assert_true(h && out);
    for (int i = 0; i < UNREAD_N; i++) h[i] = (float)(i % 100) * 0.01f;
    pe_array x = pe_f32_1d(h, UNREAD_N);
    line_kept = __LINE__ + 1;
    pe_array kept = pe_add(x, 1.0f); /* a result kept for later, never read: stored, alive at the end */
    line_hinted = __LINE__ + 1;
    pe_array hinted = pe_exp(x);
    line_read_now = __LINE__ + 1;
    pe_array now = pe_mul(hinted, 2.0f);
    line_read_later = __LINE__ + 1;
    pe_array later = pe_mul(x, 3.0f); /* stored: nothing in its batch consumes it */
    /* stored (demanded), but its one consumer is in its own kernel: nothing
     * loads the stored copy (the interpreter's consumer does), and it dies so */
    pe_hint_read(hinted);
    assert_int_equal(pe_read(now, out, sizeof *out * UNREAD_N), PE_OK);
    pe_array total = pe_sum(later); /* a later batch loads it */
    float v;
    assert_int_equal(pe_read_f32(total, &v), PE_OK);
    pe_release(hinted), pe_release(now), pe_release(later), pe_release(total), pe_release(x);
    (void)kept; /* freed by pe_shutdown */
    free(h), free(out);
}

static void test_stored_never_read(void **state)
{
    (void)state;
    pe_profile p;
    profile_of("test_profile_unread", run_unread_program, NULL, &p);
    unlink(profile_path);

    const uint64_t value_bytes = UNREAD_N * sizeof(float);
    const pe_prof_site *kept = site_at_line(&p, line_kept), *hinted = site_at_line(&p, line_hinted);
    assert_int_equal(kept->stored_unread, 1);
    assert_int_equal(kept->stored_unread_bytes, value_bytes);
    assert_int_equal(site_at_line(&p, line_read_now)->stored_unread_bytes, 0);
    assert_int_equal(site_at_line(&p, line_read_later)->stored_unread_bytes, 0);
    /* the JIT stored the hinted value beside the register its consumer used;
     * the interpreter's consumer loaded it */
    assert_int_equal(hinted->stored_unread, jit_executor() ? 1 : 0);
    assert_int_equal(hinted->stored_unread_bytes, jit_executor() ? value_bytes : 0);
    uint64_t all = 0;
    for (uint32_t i = 0; i < p.n_sites; i++) all += p.sites[i].stored_unread_bytes;
    assert_int_equal(all, kept->stored_unread_bytes + hinted->stored_unread_bytes);

    /* pe-prof report's summary: the total and the lines */
    char *text;
    size_t text_len;
    summary_of(&p, &text, &text_len);
    const char *want = jit_executor() ? "stored, never read: 2.000 MB (2 values) at 2 lines:"
                                      : "stored, never read: 1.000 MB (1 value) at 1 line:";
    const char *line = strstr(text, want);
    if (!line) fail_msg("the summary lacks '%s':\n%s", want, text);
    char at[64];
    snprintf(at, sizeof at, "test_profile.c:%d (1.000 MB)", line_kept);
    const char *end = strchr(line, '\n');
    assert_true(strstr(line, at) && strstr(line, at) < end);
    snprintf(at, sizeof at, "test_profile.c:%d (1.000 MB)", line_hinted);
    assert_true(jit_executor() == (strstr(line, at) && strstr(line, at) < end));
    free(text);
    pe_profile_free(&p);
}

#define WAIT_N (1 << 20)
#define MACRO_RUNS 3
static int line_waited_sync, line_waited_read, line_slow;

static pe_array halved(pe_array a)
{
    pe_array ins[1] = {a}, outs[1];
    PE_MACRO(halved, ins, 1, outs, 1, NULL, 0)
    {
        outs[0] = pe_mul(ins[0], 0.5f);
    }
    return outs[0];
}

/* The application blocks twice on work it asked for: in a pe_sync and in a
 * read of a sum whose line computes nothing; and a PE_MACRO section runs
 * MACRO_RUNS times. */
static void run_waiting_program(void *unused)
{
    (void)unused;
    float *h = malloc(sizeof *h * WAIT_N);
    assert_non_null(h);
    for (int i = 0; i < WAIT_N; i++) h[i] = (float)(i % 1000) * 0.001f;
    pe_array x = pe_f32_1d(h, WAIT_N);
    line_slow = __LINE__ + 1;
    pe_array y = pe_exp(x), z = pe_mul(y, x), s = pe_sum(z);
    line_waited_sync = __LINE__ + 1;
    pe_sync();
    float v;
    assert_int_equal(pe_read_f32(s, &v), PE_OK); /* computed already: no wait */
    pe_release(y), pe_release(z), pe_release(s);
    pe_array s2 = pe_sum(pe_exp(pe_mul(x, x)));
    line_waited_read = __LINE__ + 1;
    assert_int_equal(pe_read_f32(s2, &v), PE_OK);
    pe_release(s2);
    for (int r = 0; r < MACRO_RUNS; r++) {
        pe_array m = halved(x), ms = pe_sum(m);
        assert_int_equal(pe_read_f32(ms, &v), PE_OK);
        pe_release(m), pe_release(ms);
    }
    pe_release(x);
    free(h);
}

/* The kernel time charged to a line of this file (its weighted shares). */
static double compute_at_line(const pe_profile *p, int line)
{
    double t = 0;
    for (uint32_t k = 0; k < p->n_kernels; k++)
        for (uint32_t j = 0; j < p->kernels[k].n_shares; j++) {
            const pe_prof_site *s = &p->sites[p->kernels[k].shares[j].site];
            if (s->line == line && strstr(s->file, "test_profile.c"))
                t += p->kernels[k].shares[j].weight * (double)p->kernels[k].time_ns;
        }
    return t;
}

/* Waits are recorded at the lines that waited (a read, a pe_sync) and rank
 * with compute in the line tables, a column each; pool utilisation is busy
 * over capacity, at most 100% by construction; the macro cache's counters
 * are the runtime's. */
static void test_waits_pool_macro(void **state)
{
    (void)state;
    pe_profile p;
    profile_of("test_profile_waits", run_waiting_program, NULL, &p);
    unlink(profile_path);
    assert_int_equal(p.format_version, PE_PROF_VERSION);

    /* the pe_sync waited for the kernel computing line_slow's values: at
     * least that kernel's time; the read after it found its value ready */
    const pe_prof_site *sync = site_at_line(&p, line_waited_sync), *read = site_at_line(&p, line_waited_read);
    double slow_ns = compute_at_line(&p, line_slow);
    assert_true(slow_ns > 0);
    assert_int_equal(sync->waits, 1);
    assert_true((double)sync->wait_ns >= slow_ns);
    assert_int_equal(read->waits, 1);
    assert_true(read->wait_ns > 0);
    assert_true(compute_at_line(&p, line_waited_read) == 0);

    /* the line table: a row per line, totals = compute + direct + waited,
     * longest first; the waiting lines are there with their waits */
    pe_prof_row *rows;
    long n = pe_prof_rows(&p, PE_BY_LINE, &rows);
    assert_true(n > 0);
    bool saw_sync = false, saw_read = false;
    for (long i = 0; i < n; i++) {
        assert_true(pe_prof_row_total(&rows[i]) == rows[i].compute_ns + rows[i].direct_ns + rows[i].wait_ns);
        if (i) assert_true(pe_prof_row_total(&rows[i - 1]) >= pe_prof_row_total(&rows[i]));
        char want[32];
        snprintf(want, sizeof want, "test_profile.c:%d", line_waited_sync);
        if (strstr(rows[i].label, want)) {
            saw_sync = true;
            assert_true(rows[i].wait_ns == (double)sync->wait_ns && rows[i].waits == 1 && rows[i].compute_ns == 0);
        }
        snprintf(want, sizeof want, "test_profile.c:%d", line_waited_read);
        if (strstr(rows[i].label, want)) {
            saw_read = true;
            assert_true(rows[i].wait_ns == (double)read->wait_ns && rows[i].compute_ns == 0);
        }
    }
    free(rows);
    assert_true(saw_sync && saw_read);
    /* the summary's top lines: the pe_sync line, whose wait is at least the
     * kernel it waited for, ranks at or above that kernel's line */
    char *text;
    size_t text_len;
    summary_of(&p, &text, &text_len);
    char at[64];
    snprintf(at, sizeof at, "test_profile.c:%d\n", line_waited_sync);
    const char *top = strstr(text, "top lines"), *sync_row = top ? strstr(top, at) : NULL;
    if (!sync_row) fail_msg("the summary's top lines lack line %d:\n%s", line_waited_sync, text);
    snprintf(at, sizeof at, "test_profile.c:%d\n", line_slow);
    const char *slow_row = strstr(top, at);
    assert_true(!slow_row || sync_row < slow_row);

    /* pool utilisation from the run's own counters: within (0, 100%] */
    uint64_t busy = pe_profile_counter(&p, "pool_busy_ns"), capacity = pe_profile_counter(&p, "pool_capacity_ns");
    assert_true(busy <= capacity);
    if (jit_executor()) assert_true(busy > 0);
    char pool[160];
    pe_prof_pool_utilisation(&p, pool, sizeof pool);
    if (capacity) {
        double pct = strtod(pool, NULL);
        assert_true(pct > 0 && pct <= 100);
        assert_non_null(strstr(text, "pool utilisation "));
    }

    /* the macro cache: recorded once, replayed after */
    assert_true(pe_profile_has_counter(&p, "macro_hits"));
    assert_int_equal(pe_profile_counter(&p, "macro_records"), 1);
    assert_int_equal(pe_profile_counter(&p, "macro_hits"), MACRO_RUNS - 1);
    assert_true(pe_profile_counter(&p, "macro_ops_replayed") >= MACRO_RUNS - 1);
    char want[64];
    snprintf(want, sizeof want, "macro cache %d/%d hits", MACRO_RUNS - 1, MACRO_RUNS);
    if (!strstr(text, want)) fail_msg("the summary lacks '%s':\n%s", want, text);
    free(text);
    pe_profile_free(&p);
}

/* Encode(decode(file)) is the file, byte for byte. */
static void test_round_trip(void **state)
{
    (void)state;
    float result[ITERS];
    pe_profile p;
    profiled_run(&p, result);
    char err[600];
    size_t len, len2;
    uint8_t *file = pe_blob_read_file(profile_path, 1 << 30, &len, err, sizeof err);
    assert_non_null(file);
    uint8_t *again = pe_profile_encode(&p, &len2);
    assert_non_null(again);
    assert_int_equal(len, len2);
    assert_memory_equal(file, again, len);
    pe_profile_free(&p);
    free(again);
    free(file);
    unlink(profile_path);
}

static void expect_rejected(const void *data, size_t len, const char *why)
{
    pe_profile p;
    char err[600] = "";
    if (pe_profile_decode(&p, data, len, err, sizeof err)) fail_msg("accepted %s", why);
    assert_true(strlen(err) > 10);
}

/* Reframes a payload with a correct checksum: the decoder's checks past the
 * frame must hold on their own. */
static uint8_t *reframe_as(uint16_t version, const uint8_t *payload, size_t n, size_t *len)
{
    msgpack_sbuffer sb = {.size = n, .data = (char *)payload, .alloc = n};
    return pe_blob_frame(PE_PROF_MAGIC, version, &sb, len);
}

static uint8_t *reframe(const uint8_t *payload, size_t n, size_t *len)
{
    return reframe_as(PE_PROF_VERSION, payload, n, len);
}

/* A version 1 database (the fuzzing corpus's first seeds are version 1
 * payloads) is still read, with nothing stored unread; the same payload
 * claiming the current version is refused: its site records are short. */
static void test_version_1(void **state)
{
    (void)state;
    char err[600];
    size_t len, flen;
    uint8_t *payload = pe_blob_read_file(PE_TESTS_DIR "/corpus/profile/seed0.payload", 1 << 20, &len, err, sizeof err);
    if (!payload) fail_msg("%s", err);
    uint8_t *framed = reframe_as(1, payload, len, &flen);
    assert_non_null(framed);
    pe_profile p;
    if (!pe_profile_decode(&p, framed, flen, err, sizeof err)) fail_msg("%s", err);
    free(framed);
    assert_true(p.n_sites > 0);
    for (uint32_t i = 0; i < p.n_sites; i++) {
        assert_true(p.sites[i].calls > 0);
        assert_int_equal(p.sites[i].stored_unread, 0);
        assert_int_equal(p.sites[i].stored_unread_bytes, 0);
    }
    char *text;
    size_t text_len;
    summary_of(&p, &text, &text_len);
    assert_non_null(strstr(text, "stored, never read: none"));
    free(text);
    pe_profile_free(&p);
    framed = reframe(payload, len, &flen);
    assert_false(pe_profile_decode(&p, framed, flen, err, sizeof err));
    assert_non_null(strstr(err, "fields, expected 18"));
    free(framed);
    free(payload);
}

/* A version 2 database (before the macro cache's counters, when the pool's
 * capacity counted kernel launches only) is read; its reports say that the
 * macro cache was not recorded, and give no utilisation over 100%. */
static void test_version_2(void **state)
{
    (void)state;
    pe_prof_counter counters[2] = {{"pool_busy_ns", 2000000}, {"pool_capacity_ns", 1000000}};
    pe_profile v = {.program = "old", .host = "h", .pe_version = "0.0", .device = "cpu", .wall_ns = 5000000,
                    .threads = 2, .counters = counters, .n_counters = 2};
    size_t len, flen;
    uint8_t *blob = pe_profile_encode(&v, &len);
    assert_non_null(blob);
    uint8_t *framed = reframe_as(2, blob + PE_BLOB_HEADER_SIZE, len - PE_BLOB_HEADER_SIZE, &flen);
    free(blob);
    assert_non_null(framed);
    pe_profile p;
    char err[600];
    if (!pe_profile_decode(&p, framed, flen, err, sizeof err)) fail_msg("%s", err);
    free(framed);
    assert_int_equal(p.format_version, 2);
    assert_false(pe_profile_has_counter(&p, "macro_hits"));
    char *text;
    size_t text_len;
    summary_of(&p, &text, &text_len);
    if (!strstr(text, "macro cache not recorded (a format version 2 profile)") ||
        !strstr(text, "pool utilisation unknown (a format version 2 profile: busy 2.000 ms over a capacity of 1.000 ms)"))
        fail_msg("%s", text);
    free(text);
    pe_profile_free(&p);
}

static void test_corrupt_truncated_foreign(void **state)
{
    (void)state;
    float result[ITERS];
    pe_profile p;
    profiled_run(&p, result);
    pe_profile_free(&p);
    char err[600];
    size_t len;
    uint8_t *file = pe_blob_read_file(profile_path, 1 << 30, &len, err, sizeof err);
    assert_non_null(file);
    unlink(profile_path);

    for (size_t cut = 0; cut < len; cut++) expect_rejected(file, cut, "a truncated file");
    srand(7);
    for (int i = 0; i < 2000; i++) { /* a flipped byte anywhere: header or checksum catches it */
        size_t at = (size_t)rand() % len;
        uint8_t was = file[at];
        file[at] ^= (uint8_t)(1 + rand() % 255);
        expect_rejected(file, len, "a corrupt file");
        file[at] = was;
    }
    free(file);

    /* payload damage behind a valid checksum: rejected or decoded, never a crash */
    profiled_run(&p, result);
    pe_profile_free(&p);
    file = pe_blob_read_file(profile_path, 1 << 30, &len, err, sizeof err);
    assert_non_null(file);
    unlink(profile_path);
    const uint8_t *payload = file + PE_BLOB_HEADER_SIZE;
    size_t plen = len - PE_BLOB_HEADER_SIZE;
    uint8_t *copy = malloc(plen);
    assert_non_null(copy);
    int rejected = 0;
    for (int i = 0; i < 3000; i++) {
        memcpy(copy, payload, plen);
        for (int flips = 1 + rand() % 3; flips > 0; flips--) copy[(size_t)rand() % plen] ^= (uint8_t)(1 + rand() % 255);
        size_t flen;
        uint8_t *framed = reframe(copy, plen, &flen);
        assert_non_null(framed);
        pe_profile q;
        if (pe_profile_decode(&q, framed, flen, err, sizeof err)) pe_profile_free(&q);
        else rejected++, assert_non_null(strstr(err, "profile"));
        free(framed);
    }
    assert_true(rejected > 100);
    for (size_t cut = 0; cut < plen; cut += 1 + plen / 500) { /* a cut payload with a matching header */
        size_t flen;
        uint8_t *framed = reframe(payload, cut, &flen);
        expect_rejected(framed, flen, "a cut payload");
        free(framed);
    }
    free(copy);
    free(file);

    /* hostile: 5 bytes claiming 2^26 array elements are refused before msgpack-c reserves memory */
    const uint8_t hostile[] = {0xdd, 0x04, 0x00, 0x00, 0x00};
    size_t flen;
    uint8_t *framed = reframe(hostile, sizeof hostile, &flen);
    pe_profile q;
    assert_false(pe_profile_decode(&q, framed, flen, err, sizeof err));
    assert_non_null(strstr(err, "claims"));
    free(framed);
    /* deep nesting */
    uint8_t deep[200];
    memset(deep, 0x91, sizeof deep - 1);
    deep[sizeof deep - 1] = 0xc0;
    framed = reframe(deep, sizeof deep, &flen);
    assert_false(pe_profile_decode(&q, framed, flen, err, sizeof err));
    assert_non_null(strstr(err, "nesting"));
    free(framed);

    /* foreign files: this executable, text, nothing */
    char exe[4096]; /* the file itself: a symlink (/proc/self/exe) is not followed */
    assert_non_null(realpath("/proc/self/exe", exe));
    assert_false(pe_profile_load(&q, exe, err, sizeof err));
    assert_non_null(strstr(err, "not a readable PE profile"));
    assert_false(pe_profile_load(&q, "/proc/self/exe", err, sizeof err));
    assert_non_null(strstr(err, "a symlink"));
    const char text[] = "this is not a profile, it is text that goes on for a while";
    expect_rejected(text, sizeof text, "text");
    expect_rejected("", 0, "an empty file");
    assert_false(pe_profile_load(&q, "/nonexistent/profile.pep", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/profile.pep"));
    /* a future version is named as such */
    profiled_run(&p, result);
    pe_profile_free(&p);
    file = pe_blob_read_file(profile_path, 1 << 30, &len, err, sizeof err);
    unlink(profile_path);
    file[4] = PE_PROF_VERSION + 1;
    assert_false(pe_profile_decode(&q, file, len, err, sizeof err));
    assert_non_null(strstr(err, "version"));
    free(file);
}

/* PE_PROFILE=1 names the file after the program and the process; 0 and
 * unset write nothing. */
static void test_default_name_and_off(void **state)
{
    (void)state;
    char name[256];
    snprintf(name, sizeof name, "pe-profile.test_profile.%d.pep", (int)getpid());
    unlink(name);
    float result[ITERS];
    setenv("PE_PROFILE", "0", 1);
    assert_int_equal(pe_init(NULL), PE_OK);
    run_program(result);
    pe_shutdown();
    assert_int_not_equal(access(name, F_OK), 0);
    setenv("PE_PROFILE", "1", 1);
    assert_int_equal(pe_init(NULL), PE_OK);
    run_program(result);
    pe_shutdown();
    unsetenv("PE_PROFILE");
    assert_int_equal(access(name, F_OK), 0);
    pe_profile p;
    char err[600];
    if (!pe_profile_load(&p, name, err, sizeof err)) fail_msg("%s", err);
    assert_string_equal(p.program, "test_profile");
    assert_int_equal(p.pid, (uint64_t)getpid());
    pe_profile_free(&p);
    unlink(name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sites_kernels_and_attribution),
        cmocka_unit_test(test_stored_never_read),
        cmocka_unit_test(test_waits_pool_macro),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_corrupt_truncated_foreign),
        cmocka_unit_test(test_version_1),
        cmocka_unit_test(test_version_2),
        cmocka_unit_test(test_default_name_and_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
