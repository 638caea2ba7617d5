/* provision.c — kernel provisioning (provision.h), the same for every
 * target: the program sequence from the trace cache or the program
 * generator, then the code of each kernel at a place, looked for cheapest
 * first — linked already (the executor's), compiled ahead (aot.c: wait for
 * it), on disk (the executor links the file or blob), else compiled: all the
 * batch's missing kernels in one compilation, linked by the executor and
 * filed on disk.  What a failure costs is the target's to say: the CPU
 * retries kernel by kernel and leaves a rejected kernel to the interpreter
 * (and goes off when it compiles nothing); a GPU is given up for the run. */
#define _GNU_SOURCE
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "provision.h"
#include "../cache/diskcache.h"
#include "../kir/codegen.h"
#include "../trace/trace.h"
#include "../../exec/base/error.h"
#include "../../exec/base/grow.h"
#include "../../exec/backends.h"
#include "../../exec/intrinsics/intrinsics.h"
#include "../../irformat/fnv.h"
#include "../../profiler/collect.h"
/* What the provisioning knows of a target in this run. */
typedef struct {
    bool off; /* its compiler does not work (the CPU: everything runs on the interpreter) */
    /* Kernels its compiler rejected (by kernel-IR hash): they go to the
     * interpreter at once, without another compile and warning per batch. */
    uint64_t *rejected;
    size_t n_rejected, rejected_cap;
} target_state;

static struct {
    target_state of[PE_TARGETS];
    const pe_compile_ahead *ahead; /* the compile ahead (aot.c), while it runs */
} prov;

void pe_provision_compiled_ahead_by(const pe_compile_ahead *ahead) { prov.ahead = ahead; }

void pe_provision_start(const char *cache_dir, int trace_entries, uint64_t ir_fingerprint)
{
    pe_trace_configure(trace_entries);
    const char *why = NULL;
    const pe_backend *host = &pe_host_backend;
    if ((prov.of[host->target->index].off = !host->target->usable(&why)))
        pe_log_message(PE_LOG_WARN, "%s: the CPU JIT is off, the interpreter computes", why);
    /* kernels compiled with a developer's extra option are other kernels */
    char tag[64], isa[32];
    host->executor->arch(host->executor, 0, isa, sizeof isa);
    const char *extra = getenv("PE_JIT_OPTION");
    uint32_t h = (uint32_t)pe_fnv_string(PE_FNV_OFFSET, extra ? extra : "");
    int perturbed = pe_codegen_perturbed_op(); /* a test's wrong kernels (codegen.c): a tag of their own */
    if (perturbed >= 0) h = (uint32_t)pe_fnv_string(h, pe_op_table[perturbed].name);
    snprintf(tag, sizeof tag, (extra && *extra) || perturbed >= 0 ? "%s+%08x" : "%s", isa, h);
    pe_diskcache_open(cache_dir, tag);
    /* FFTW's wisdom beside the kernels (exec/intrinsics/fft.c) */
    static const pe_intrinsic_files cache_files = {pe_diskcache_read, pe_diskcache_write, pe_diskcache_remove};
    pe_intrinsics_use_files(pe_diskcache_enabled() ? &cache_files : NULL);
    if (!prov.of[host->target->index].off) pe_provision_spmv_start(tag); /* spmv's loops, generated at its first call */
    pe_trace_persist_load(ir_fingerprint); /* what earlier runs of this program remembered */
}

void pe_provision_stop(uint64_t ir_fingerprint)
{
    pe_trace_persist_save(ir_fingerprint);
    pe_trace_clear();
    for (int t = 0; t < PE_TARGETS; t++) {
        free(prov.of[t].rejected);
        prov.of[t] = (target_state){0};
    }
    pe_intrinsics_use_files(NULL);
    pe_provision_spmv_stop();
    pe_diskcache_close();
}

bool pe_target_on(const pe_target *t) { return !prov.of[t->index].off; }

/* ------------------------------------------------------------ sequences */

bool pe_provision_sequence(const pe_batch *b, const pe_target *t, pe_program_seq *seq, bool *hit)
{
    assert(pe_api_held());
    pe_counters.trace_lookups++;
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    *hit = pe_trace_lookup(b->key, t->rules, b->entries, b->n, seq);
    uint64_t t1 = pe_prof_on ? pe_prof_now() : 0;
    if (*hit) {
        pe_counters.trace_hits++;
        for (size_t i = 0; i < seq->n; i++) seq->progs[i].served = PE_SERVED_trace;
        if (pe_prof_on) pe_prof_proggen(true, t1 - t0, t0, t1);
        return true;
    }
    if (!pe_proggen(b->entries, b->n, b->epoch, t->rules, seq)) return false;
    pe_counters.proggen_runs++;
    if (pe_prof_on) pe_prof_proggen(false, t1 - t0, t1, pe_prof_now());
    return true;
}

void pe_provision_remember(const pe_batch *b, const pe_target *t, const pe_program_seq *seq)
{
    assert(pe_api_held());
    if (prov.of[t->index].off) return; /* its kernels would say nothing */
    pe_trace_store(b->key, t->rules, b->entries, b->n, b->epoch, seq);
}

/* ------------------------------------------------------------ rejected */

static bool was_rejected(const pe_target *t, const kir_kernel *k)
{
    const target_state *s = &prov.of[t->index];
    uint64_t h = kir_hash(k);
    for (size_t i = 0; i < s->n_rejected; i++)
        if (s->rejected[i] == h) return true;
    return false;
}

static void remember_rejected(const pe_target *t, const kir_kernel *k)
{
    target_state *s = &prov.of[t->index];
    pe_counters.compile_failures++;
    if (PE_GROW(s->rejected, s->rejected_cap, s->n_rejected + 1)) s->rejected[s->n_rejected++] = kir_hash(k);
}

/* -------------------------------------------------------------- linking */

static void arch_of(const pe_target *t, int place, char *out, size_t n)
{
    t->executor->arch(t->executor, place, out, n);
}

/* A file for the compiler to write a shared object to: in TMPDIR (mkstemps:
 * ours, 0600), removed once the executor has loaded it; the disk cache keeps
 * a sealed copy. */
bool pe_provision_private_path(char *out, size_t n)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    if ((size_t)snprintf(out, n, "%s/pe-kernels-XXXXXX.so", tmp) >= n) return false;
    int fd = mkstemps(out, 3);
    if (fd < 0) return false;
    close(fd);
    return true;
}

/* Kernel k's code from the disk cache, linked at `place`. */
static bool from_disk(const pe_target *t, int place, const kir_kernel *k)
{
    pe_executor *ex = t->executor;
    char err[512], name[48];
    bool fatal = false;
    if (t->code_in_files) { /* the verified bytes, linked from memory: the file is never opened again */
        size_t size = 0;
        void *bytes = pe_diskcache_load_so(k, &size);
        if (!bytes) return false;
        pe_artifact a = {.bytes = bytes, .size = size};
        bool linked = ex->link(ex, place, &a, &k, 1, &fatal, err, sizeof err);
        free(bytes);
        if (!linked) pe_diskcache_discard_so(k, err);
        return linked;
    }
    char arch[32], tag[64];
    size_t size = 0;
    arch_of(t, place, arch, sizeof arch);
    t->disk_tag(arch, tag, sizeof tag);
    void *bytes = pe_diskcache_load_blob(k, tag, &size);
    if (!bytes) return false;
    pe_artifact a = {.bytes = bytes, .size = size};
    bool linked = ex->link(ex, place, &a, &k, 1, &fatal, err, sizeof err);
    free(bytes);
    if (!linked) {
        kir_kernel_name(k, name, sizeof name);
        pe_log_message(PE_LOG_WARN, "cached code for %s does not load (%s): the kernel is recompiled", name, err);
    }
    return linked;
}

/* Code a target compiled: the artifact, and for a file target the private
 * path it was written to (the disk cache files a sealed copy). */
typedef struct {
    char path[4200];
    pe_artifact a;
} compiled_code;

/* Where a file target's compiler writes (runtime lock held: the disk
 * cache's temporary names). */
static bool choose_path(const pe_target *t, compiled_code *c, char *err, size_t n_err)
{
    assert(pe_api_held());
    *c = (compiled_code){0};
    if (!t->code_in_files) return true;
    if (pe_provision_private_path(c->path, sizeof c->path)) return true;
    snprintf(err, n_err, "no temporary file for the compiled code");
    return false;
}

/* Links compiled code at places[0..n_places) and files it on disk (runtime
 * lock held; the disk cache's files are written after).  False with the
 * reason in err; *fatal: a place was lost. */
static bool link_and_file(const pe_target *t, const char *arch, const int *places, int n_places,
                          const kir_kernel *const *kernels, size_t n, compiled_code *c, bool *fatal, char *err,
                          size_t n_err)
{
    assert(pe_api_held());
    bool ok = true;
    *fatal = false;
    for (int i = 0; i < n_places && ok; i++) ok = t->executor->link(t->executor, places[i], &c->a, kernels, n, fatal, err, n_err);
    if (ok && t->code_in_files) {
        pe_diskcache_store(c->path, kernels, n); /* a sealed copy; drop_code removes the file */
    } else if (ok && !t->code_in_files) {
        char tag[64];
        t->disk_tag(arch, tag, sizeof tag);
        pe_diskcache_store_blob(kernels, n, tag, c->a.bytes, c->a.size);
    }
    return ok;
}

/* What is left of compiled code once linked (or not): the file removed
 * (the executor has loaded it), the bytes freed. */
static void drop_code(compiled_code *c)
{
    if (c->path[0]) unlink(c->path);
    free((void *)c->a.bytes);
}

/* How a compilation at a place went. */
typedef enum {
    COMPILED,       /* compiled, linked, filed */
    COMPILE_FAILED, /* the compiler failed (err: its message) */
    LINK_FAILED,    /* the executor could not link it (err says why) */
    PLACE_LOST      /* ... because the place is lost (a CUDA error) */
} compile_outcome;

/* One compilation at `place`, linked there, counted and profiled. */
static compile_outcome compile_at(const pe_target *t, int place, const kir_kernel *const *kernels, size_t n, char *err,
                                  size_t n_err)
{
    char arch[32];
    arch_of(t, place, arch, sizeof arch);
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    compiled_code c;
    bool fatal = false;
    compile_outcome outcome = COMPILE_FAILED;
    if (choose_path(t, &c, err, n_err) && t->compile(kernels, n, arch, c.path, &c.a, err, n_err))
        outcome = link_and_file(t, arch, &place, 1, kernels, n, &c, &fatal, err, n_err) ? COMPILED
                  : fatal                                                                ? PLACE_LOST
                                                                                         : LINK_FAILED;
    drop_code(&c);
    bool ok = outcome == COMPILED;
    if (pe_prof_on) pe_prof_compile(ok ? (int)n : 0, t0, pe_prof_now());
    if (ok) pe_counters.kernels_compiled += n;
    return outcome;
}

/* ------------------------------------------------------------- kernels */

/* Linked already, else from disk; *served says which (pe_prof_served). */
static const void *cached_code(const pe_target *t, int place, const kir_kernel *k, uint8_t *served)
{
    pe_executor *ex = t->executor;
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    const void *code = ex->linked(ex, place, k);
    if (pe_prof_on) pe_prof_add(PE_PC_program_lookups, 1), pe_prof_add(PE_PC_program_lookup_ns, pe_prof_now() - t0);
    if (code) {
        pe_counters.program_cache_hits++;
        if (pe_prof_on) pe_prof_add(PE_PC_program_memory_hits, 1);
        if (*served != PE_SERVED_trace) *served = PE_SERVED_memory;
        if (prov.ahead) prov.ahead->note_served(k, t);
        return code;
    }
    uint64_t t1 = pe_prof_on ? pe_prof_now() : 0;
    if (!from_disk(t, place, k) || !(code = ex->linked(ex, place, k))) return NULL;
    pe_counters.disk_cache_hits++;
    if (pe_prof_on) pe_prof_add(PE_PC_program_disk_hits, 1), pe_prof_add(PE_PC_disk_load_ns, pe_prof_now() - t1);
    *served = PE_SERVED_disk;
    return code;
}

/* The CPU's way with a failed compilation: each kernel alone, so that one
 * the compiler rejects runs on the interpreter and the others compiled; a
 * compiler that compiles nothing is off for the run. */
static void compile_or_reject(const pe_target *t, int place, const kir_kernel **missing, size_t n)
{
    char err[512];
    if (compile_at(t, place, missing, n, err, sizeof err) == COMPILED) return;
    pe_log_message(PE_LOG_WARN, "compiling %zu kernel%s failed (%s)%s", n, n == 1 ? "" : "s", err,
                   n == 1 ? ": the interpreter computes it" : ": retrying one by one");
    if (n == 1) {
        remember_rejected(t, missing[0]);
        return;
    }
    size_t failed = 0;
    for (size_t k = 0; k < n; k++) {
        if (compile_at(t, place, &missing[k], 1, err, sizeof err) == COMPILED) continue;
        pe_log_message(PE_LOG_WARN, "compiling 1 kernel failed (%s): the interpreter computes it", err);
        failed++, remember_rejected(t, missing[k]);
    }
    if (failed == n) {
        pe_log_message(PE_LOG_WARN, "the CPU JIT compiles nothing: it is off for this run, the interpreter computes");
        prov.of[t->index].off = true;
    }
}

/* A GPU's way: one compilation, and a failure of its compiler or a lost
 * place gives the place up (out of memory to link only sends this batch
 * elsewhere). */
static bool compile_or_fail(const pe_target *t, int place, const kir_kernel **missing, size_t n)
{
    char err[512], arch[32];
    switch (compile_at(t, place, missing, n, err, sizeof err)) {
    case COMPILED:
        return true;
    case COMPILE_FAILED:
        arch_of(t, place, arch, sizeof arch);
        pe_log_message(PE_LOG_WARN, "%s could not compile %zu kernel%s for %s: %s", t->compiler, n, n == 1 ? "" : "s",
                       arch, err);
        snprintf(err, sizeof err, "%s failed", t->compiler);
        t->executor->fail(t->executor, place, err);
        return false;
    case PLACE_LOST:
        t->executor->fail(t->executor, place, err);
        return false;
    case LINK_FAILED:
        return false;
    }
    return false;
}

bool pe_provision_kernels(const pe_target *t, int place, pe_program_seq *seq, const void **code)
{
    assert(pe_api_held());
    bool one_place = t->one_place; /* code kept in the program, for the trace cache */
    const kir_kernel **missing = malloc(sizeof *missing * (seq->n ? seq->n : 1));
    if (!missing) return false;
    size_t n_missing = 0;
    for (size_t i = 0; i < seq->n; i++) {
        pe_program *p = &seq->progs[i];
        code[i] = NULL;
        if (p->kind != PE_PROG_KERNEL) continue;
        if (one_place && p->code) { /* a trace-cache hit brought it */
            code[i] = p->code;
            continue;
        }
        uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
        code[i] = cached_code(t, place, p->kir, &p->served);
        /* compiled ahead (aot.c) or being compiled ahead: wait for it, not a second compile */
        if (!code[i] && prov.ahead && prov.ahead->await(p->kir, t)) code[i] = cached_code(t, place, p->kir, &p->served);
        p->compile_ns = pe_prof_on ? pe_prof_now() - t0 : 0;
        if (one_place) p->code = (void *)code[i];
        if (code[i] || was_rejected(t, p->kir)) continue;
        bool twin = false; /* the same kernel twice in one batch compiles once */
        for (size_t j = 0; j < n_missing && !twin; j++) twin = kir_equal(missing[j], p->kir);
        if (!twin) missing[n_missing++] = p->kir;
    }
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    bool ok = true;
    if (n_missing && t->retry_alone) compile_or_reject(t, place, missing, n_missing);
    else if (n_missing) ok = compile_or_fail(t, place, missing, n_missing);
    free(missing);
    /* one compile serves the batch: each kernel it made is charged its share */
    uint64_t compile_share = n_missing && pe_prof_on ? (pe_prof_now() - t0) / n_missing : 0;
    for (size_t i = 0; i < seq->n && ok; i++) {
        pe_program *p = &seq->progs[i];
        if (p->kind != PE_PROG_KERNEL || code[i]) continue;
        code[i] = t->executor->linked(t->executor, place, p->kir);
        p->served = PE_SERVED_compiler;
        p->compile_ns += compile_share;
        if (one_place) p->code = (void *)code[i];
        else ok = code[i] != NULL;
    }
    return ok;
}

/* --------------------------------------------------------- compile ahead */

bool pe_provision_has(const pe_target *t, const kir_kernel *k)
{
    assert(pe_api_held());
    pe_executor *ex = t->executor;
    int places[PE_MAX_PLACES];
    int n = ex->places(ex, places, PE_MAX_PLACES);
    for (int i = 0; i < n; i++) {
        if (ex->linked(ex, places[i], k)) continue;
        if (t->code_in_files) {
            if (!pe_diskcache_has(k)) return false;
            continue;
        }
        char arch[32], tag[64];
        arch_of(t, places[i], arch, sizeof arch);
        t->disk_tag(arch, tag, sizeof tag);
        if (!pe_diskcache_has_blob(k, tag)) return false;
    }
    return true;
}

bool pe_provision_ahead(const pe_target *t, const kir_kernel *const *kernels, size_t n, char *err, size_t n_err)
{
    pe_executor *ex = t->executor;
    int places[PE_MAX_PLACES], n_places;
    char arch[PE_MAX_PLACES][32];
    {
        PE_API_GUARD;
        n_places = ex->places(ex, places, PE_MAX_PLACES);
        for (int i = 0; i < n_places; i++) arch_of(t, places[i], arch[i], sizeof arch[i]);
    }
    if (!n_places) {
        snprintf(err, n_err, "%s is off", t->name);
        return false;
    }
    /* once per architecture among the places, linked into each place of it */
    bool ok = true;
    for (int i = 0; i < n_places && ok; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(arch[i], arch[j]) == 0;
        if (seen) continue;
        int same[PE_MAX_PLACES], n_same = 0;
        for (int j = i; j < n_places; j++)
            if (strcmp(arch[i], arch[j]) == 0) same[n_same++] = places[j];
        compiled_code c;
        {
            PE_API_GUARD;
            ok = choose_path(t, &c, err, n_err);
        }
        ok = ok && t->compile(kernels, n, arch[i], c.path, &c.a, err, n_err); /* without the lock */
        if (ok) {
            PE_API_GUARD;
            bool fatal;
            ok = link_and_file(t, arch[i], same, n_same, kernels, n, &c, &fatal, err, n_err);
            if (ok) pe_counters.aot_kernels_compiled += n;
        }
        drop_code(&c);
    }
    return ok;
}
