/* cpu.c — the CPU executor: runs a batch of the work queue as a program
 * sequence (proggen.c) of fused kernels compiled by libgccjit, launched in
 * chunks on the thread pool, with the interpreter for what the code
 * generator does not emit.  Kernels missing from the program cache are
 * compiled together, once per batch.  If compilation fails the batch runs on
 * the interpreter and the JIT is switched off with one warning: a missing
 * assembler or an unwritable TMPDIR must not stop the program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor.h"
#include "memory.h"
#include "threadpool.h"
#include "../irformat/fnv.h"
#include "../jit/aot.h"
#include "../jit/diskcache.h"
#include "../jit/progcache.h"
#include "../jit/proggen.h"
#include "../jit/trace.h"
#include "../profiler/collect.h"

static bool jit_disabled; /* the toolchain is unusable: everything runs on the interpreter */
bool pe_cpu_jit_usable(void) { return !jit_disabled; }
/* Kernels the compiler rejected in this run (by kernel-IR hash): they go
 * to the interpreter at once, without another compile and warning per batch. */
static uint64_t *rejected;
static size_t n_rejected, rejected_cap;

static bool was_rejected(const kir_kernel *k)
{
    uint64_t h = kir_hash(k);
    for (size_t i = 0; i < n_rejected; i++)
        if (rejected[i] == h) return true;
    return false;
}

static void remember_rejected(const kir_kernel *k)
{
    pe_rt.stats.compile_failures++;
    if (n_rejected == rejected_cap) {
        size_t cap = rejected_cap ? rejected_cap * 2 : 16;
        uint64_t *r = realloc(rejected, cap * sizeof *r);
        if (!r) return;
        rejected = r, rejected_cap = cap;
    }
    rejected[n_rejected++] = kir_hash(k);
}
static char isa[32];
const char *pe_cpu_isa(void) { return isa; }

/* libgccjit runs the assembler and linker as programs and writes temporary
 * files: without them every compilation would fail. */
static bool toolchain_usable(void)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    if (access(tmp, W_OK | X_OK) != 0) {
        pe_log_message(PE_LOG_WARN, "TMPDIR %s is not writable: the CPU JIT is off, the interpreter computes", tmp);
        return false;
    }
    const char *path = getenv("PATH");
    char dir[4096];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(dir, sizeof dir, "%.*s/as", (int)len, p);
        if (access(dir, X_OK) == 0) return true;
        p += len + (p[len] == ':');
    }
    pe_log_message(PE_LOG_WARN, "no assembler (as, from binutils) on PATH: the CPU JIT is off, the interpreter computes");
    return false;
}

bool pe_cpu_executor_start(int threads, const char *cache_dir, int trace_entries)
{
    pe_trace_configure(trace_entries);
    jit_disabled = !toolchain_usable();
    pe_device_info info;
    pe_device_info_at(NULL, 0, &info);
    snprintf(isa, sizeof isa, "%s", info.arch);
    /* kernels compiled with a developer's extra option are other kernels */
    char tag[32];
    const char *extra = getenv("PE_JIT_OPTION");
    uint32_t h = (uint32_t)pe_fnv_string(PE_FNV_OFFSET, extra ? extra : "");
    snprintf(tag, sizeof tag, extra && *extra ? "%s+%08x" : "%s", isa, h);
    pe_diskcache_open(cache_dir, tag);
    pe_trace_persist_load(); /* what earlier runs of this program remembered */
    return pe_pool_start(threads);
}

void pe_cpu_executor_stop(void)
{
    pe_pool_stop();
    pe_progcache_clear();
    pe_trace_persist_save();
    pe_trace_clear();
    free(rejected);
    rejected = NULL, n_rejected = rejected_cap = 0;
    pe_diskcache_close();
}

/* Memory, then disk: the kernel if it was compiled before; *served says
 * which (pe_prof_served). */
static pe_kernel_fn cached_kernel(const kir_kernel *k, uint8_t *served)
{
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    pe_kernel_fn fn = pe_progcache_lookup(k);
    if (pe_prof_on) pe_prof_add(PE_PC_program_lookups, 1), pe_prof_add(PE_PC_program_lookup_ns, pe_prof_now() - t0);
    if (fn) {
        pe_rt.stats.program_cache_hits++;
        if (pe_prof_on) pe_prof_add(PE_PC_program_memory_hits, 1);
        *served = PE_SERVED_memory;
        pe_aot_note_served(k, &pe_cpu_executor);
        return fn;
    }
    pe_gccjit_unit *unit = NULL;
    uint64_t t1 = pe_prof_on ? pe_prof_now() : 0;
    fn = pe_diskcache_load(k, &unit);
    if (!fn) return NULL;
    if (!pe_progcache_insert(&k, &fn, 1, unit)) {
        pe_gccjit_unit_free(unit);
        return NULL;
    }
    pe_rt.stats.disk_cache_hits++;
    if (pe_prof_on) pe_prof_add(PE_PC_program_disk_hits, 1), pe_prof_add(PE_PC_disk_load_ns, pe_prof_now() - t1);
    *served = PE_SERVED_disk;
    return fn;
}

/* Compiles kernels together into the program cache (and the disk cache);
 * false, with a warning naming the compiler's message, if it failed. */
static bool compile_kernels(const kir_kernel **kernels, size_t n, pe_kernel_fn *fns)
{
    char err[512], so_path[4200];
    bool to_disk = pe_diskcache_temp_path(so_path, sizeof so_path);
    pe_gccjit_unit *unit = NULL;
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    bool compiled = pe_gccjit_compile(kernels, n, isa, to_disk ? so_path : NULL, fns, &unit, err, sizeof err);
    if (pe_prof_on) pe_prof_compile(compiled ? (int)n : 0, t0, pe_prof_now());
    if (!compiled) {
        pe_log_message(PE_LOG_WARN, "compiling %zu kernel%s failed (%s)%s", n, n == 1 ? "" : "s", err,
                       n == 1 ? ": the interpreter computes it" : ": retrying one by one");
        if (to_disk) unlink(so_path);
        return false;
    }
    if (!pe_progcache_insert(kernels, fns, n, unit)) {
        pe_gccjit_unit_free(unit);
        if (to_disk) unlink(so_path);
        return false;
    }
    pe_rt.stats.kernels_compiled += n;
    if (to_disk) pe_diskcache_store(so_path, kernels, n);
    return true;
}

/* Finds or compiles the kernel of every KERNEL program that has none yet
 * (a trace-cache hit brings its kernels along); p->code stays NULL where
 * compilation failed. */
static void prepare_kernels(pe_program_seq *seq)
{
    const kir_kernel **missing = malloc(sizeof *missing * seq->n);
    pe_kernel_fn *compiled = malloc(sizeof *compiled * seq->n);
    size_t n_missing = 0;
    if (!missing || !compiled) goto out;
    for (size_t i = 0; i < seq->n; i++) {
        pe_program *p = &seq->progs[i];
        if (p->kind != PE_PROG_KERNEL || p->code) continue;
        uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
        p->code = (void *)cached_kernel(p->kir, &p->served);
        /* compiled ahead (aot.c) or being compiled ahead: wait for it, not a second compile */
        if (!p->code && pe_aot_await(p->kir, &pe_cpu_executor)) p->code = (void *)cached_kernel(p->kir, &p->served);
        p->compile_ns = pe_prof_on ? pe_prof_now() - t0 : 0;
        if (p->code || was_rejected(p->kir)) continue;
        bool twin = false; /* the same kernel twice in one batch compiles once */
        for (size_t j = 0; j < n_missing && !twin; j++) twin = kir_equal(missing[j], p->kir);
        if (!twin) missing[n_missing++] = p->kir;
    }
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    if (n_missing == 1 && !compile_kernels(missing, 1, compiled)) {
        remember_rejected(missing[0]);
    } else if (n_missing > 1 && !compile_kernels(missing, n_missing, compiled)) {
        /* split: compile each kernel alone, so one that the compiler rejects
         * runs on the interpreter and the others still run compiled */
        size_t failed = 0;
        for (size_t k = 0; k < n_missing; k++)
            if (!compile_kernels(&missing[k], 1, compiled)) failed++, remember_rejected(missing[k]);
        if (failed == n_missing) {
            pe_log_message(PE_LOG_WARN, "the CPU JIT compiles nothing: it is off for this run, the interpreter computes");
            jit_disabled = true;
        }
    }
    /* one compile serves the batch: each kernel it made is charged its share */
    uint64_t compile_share = n_missing && pe_prof_on ? (pe_prof_now() - t0) / n_missing : 0;
    for (size_t i = 0; i < seq->n; i++)
        if (seq->progs[i].kind == PE_PROG_KERNEL && !seq->progs[i].code) {
            seq->progs[i].code = (void *)pe_progcache_lookup(seq->progs[i].kir);
            seq->progs[i].served = PE_SERVED_compiler;
            seq->progs[i].compile_ns += compile_share;
        }
out:
    free(missing), free(compiled);
}

static void finish_members(const pe_program *p)
{
    for (int m = 0; m < p->n_members; m++) pe_port_drop_inputs(pe_port_at(p->members[m]));
}

/* Combines the per-chunk partials of a reduction kernel, in chunk order:
 * each chunk leaves (high, low) parts, the low part nonzero for compensated
 * f64 sums. */
double pe_combine_partials(pe_op op, const double *partials, int64_t n_chunks, int64_t numel)
{
    if (op == PE_OP_max_reduce || op == PE_OP_min_reduce || op == PE_OP_norminf) {
        double best = op == PE_OP_min_reduce ? __builtin_inf() : op == PE_OP_norminf ? 0.0 : -__builtin_inf();
        for (int64_t c = 0; c < n_chunks; c++) {
            double v = partials[2 * c];
            if (v != v) return v;
            if (op == PE_OP_min_reduce ? v < best : v > best) best = v;
        }
        return best;
    }
    double sum = 0, comp = 0; /* Neumaier */
    for (int64_t c = 0; c < 2 * n_chunks; c++) {
        double x = partials[c], t = sum + x;
        comp += __builtin_fabs(sum) >= __builtin_fabs(x) ? (sum - t) + x : (x - t) + sum;
        sum = t;
    }
    sum += comp;
    if (op == PE_OP_mean) return sum / (double)numel;
    if (op == PE_OP_norm2) return __builtin_sqrt(sum);
    return sum;
}

void pe_store_scalar(pe_port *p, double v)
{
    if (p->dtype == PE_F32) *(float *)p->buf = (float)v;
    else *(double *)p->buf = v;
}

/* Runs one fused kernel; false if it could not (the caller interprets). */
static void log_sequence(const pe_program_seq *seq, bool from_trace)
{
    for (size_t i = 0; i < seq->n; i++) {
        const pe_program *p = &seq->progs[i];
        char text[4096] = "";
        if (p->kind == PE_PROG_KERNEL) kir_print(p->kir, text, sizeof text);
        pe_log_message(PE_LOG_DEBUG, "program %zu%s: %s %s, %lld iterations\n%s", i, from_trace ? " (trace cache)" : "",
                       p->kind == PE_PROG_KERNEL ? "kernel" : p->kind == PE_PROG_INTERP ? "interp" : "skip",
                       pe_op_table[pe_port_at(p->port)->op].name, (long long)p->numel, text);
    }
}

/* The profile's record of one launch: bytes each array parameter moves. */
static void profile_kernel(const pe_program *p, uint64_t t0, uint64_t t1)
{
    pe_prof_kernel_run run = {.hash = kir_hash(p->kir), .device = "cpu", .members = p->members,
                              .n_members = p->n_members, .elements = p->numel, .served = p->served,
                              .compile_ns = p->compile_ns};
    pe_program_traffic(p, &run.bytes_read, &run.bytes_written);
    pe_prof_kernel_ran(&run, t0, t1, -1);
    pe_prof_add(PE_PC_pool_capacity_ns, (t1 - t0) * (uint64_t)pe_rt.threads);
}

static size_t run_kernel(const pe_program *p, pe_kernel_fn fn)
{
    const kir_kernel *k = p->kir;
    void *args[KIR_MAX_PARAMS];
    double scalars[KIR_MAX_PARAMS];
    int64_t n_chunks = (p->numel + KIR_REDUCE_CHUNK - 1) / KIR_REDUCE_CHUNK;
    double *partials = NULL;
    int reduce_param = -1;
    for (int i = 0; i < k->n_params; i++) { /* an invalid input makes every member invalid */
        pe_port *q = pe_port_at(p->bind[i]);
        if (k->params[i].kind != KIR_OUT && q->state == PE_PORT_READY) pe_port_host(q); /* a GPU result */
        if (k->params[i].kind != KIR_OUT && q->state == PE_PORT_INVALID) {
            for (int m = 0; m < p->n_members; m++) pe_port_inherit_invalid(pe_port_at(p->members[m]), q);
            finish_members(p);
            return 0;
        }
    }
    for (int i = 0; i < k->n_params; i++) {
        pe_port *q = pe_port_at(p->bind[i]);
        if (k->params[i].kind == KIR_IN_SCALAR) {
            scalars[i] = q->value;
            args[i] = &scalars[i];
        } else if (k->params[i].kind == KIR_OUT || k->params[i].kind == KIR_OUT_PARTIAL) {
            pe_port_result_buffer(q); /* NULL buf: out of memory, below */
            if (k->params[i].kind == KIR_OUT_PARTIAL) {
                reduce_param = i;
                partials = malloc(sizeof *partials * (size_t)(n_chunks ? 2 * n_chunks : 1));
            }
            if (!q->buf || (k->params[i].kind == KIR_OUT_PARTIAL && !partials)) {
                /* out of memory: the interpreter reports it port by port */
                free(partials);
                pe_port_result_drop(q);
                for (int j = 0; j < i; j++)
                    if (k->params[j].kind == KIR_OUT || k->params[j].kind == KIR_OUT_PARTIAL)
                        pe_port_result_drop(pe_port_at(p->bind[j]));
                size_t computed = 0;
                for (int m = 0; m < p->n_members; m++) computed += pe_interp_execute(pe_port_at(p->members[m]));
                return computed;
            }
            args[i] = k->params[i].kind == KIR_OUT_PARTIAL ? (void *)partials : q->buf;
        } else {
            args[i] = q->buf;
        }
    }
    /* kernels touch only buffers this batch keeps alive: run them without
     * the runtime lock, so the application goes on recording */
    bool has_output = reduce_param >= 0;
    for (int i = 0; i < k->n_params && !has_output; i++) has_output = k->params[i].kind == KIR_OUT;
    if (has_output) { /* a kernel whose values nobody sees (all released) need not run */
        uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
        int depth = pe_api_suspend();
        if (reduce_param >= 0) pe_pool_run_chunks(fn, args, p->numel, KIR_REDUCE_CHUNK);
        else if (p->numel > 0) pe_pool_run(fn, args, p->numel);
        pe_api_resume(depth);
        pe_rt.stats.kernels_launched++;
        if (pe_prof_on) profile_kernel(p, t0, pe_prof_now());
    }
    if (reduce_param >= 0) {
        pe_port *r = pe_port_at(p->bind[reduce_param]);
        pe_store_scalar(r, pe_combine_partials((pe_op)r->op, partials, n_chunks, p->numel));
        free(partials);
    }
    for (int m = 0; m < p->n_members; m++) pe_port_at(p->members[m])->state = PE_PORT_READY;
    finish_members(p);
    return (size_t)p->n_members;
}

static size_t cpu_run(pe_executor *ex, const pe_batch *b)
{
    (void)ex;
    if (jit_disabled) return pe_interp_executor.run(&pe_interp_executor, b);
    /* the program sequence: from the trace cache, else from the program generator */
    pe_program_seq seq;
    bool hit;
    if (!pe_trace_or_proggen(b, &pe_gccjit_fusion_rules, &seq, &hit))
        return pe_interp_executor.run(&pe_interp_executor, b);
    if (pe_rt.log_level >= PE_LOG_DEBUG) log_sequence(&seq, hit);
    prepare_kernels(&seq);
    if (!hit && !jit_disabled) pe_trace_store(b->key, &pe_gccjit_fusion_rules, b->entries, b->n, b->epoch, &seq);
    size_t computed = 0;
    for (size_t i = 0; i < seq.n; i++) {
        const pe_program *p = &seq.progs[i];
        switch (p->kind) {
        case PE_PROG_SKIP: {
            pe_port *port = pe_port_at(p->port);
            pe_port_drop_inputs(port);
            port->state = PE_PORT_READY;
            break;
        }
        case PE_PROG_INTERP:
            computed += pe_interp_execute(pe_port_at(p->port));
            break;
        case PE_PROG_KERNEL:
            if (p->code) {
                computed += run_kernel(p, (pe_kernel_fn)p->code);
            } else {
                for (int m = 0; m < p->n_members; m++) computed += pe_interp_execute(pe_port_at(p->members[m]));
            }
            break;
        }
    }
    pe_program_seq_free(&seq);
    return computed;
}

pe_executor pe_cpu_executor = {"cpu-jit", cpu_run};
