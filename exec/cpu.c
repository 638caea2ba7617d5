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

#include "executor.h"
#include "memory.h"
#include "threadpool.h"
#include "../jit/progcache.h"
#include "../jit/proggen.h"

static bool jit_disabled;
static char isa[32];

bool pe_cpu_executor_start(int threads)
{
    jit_disabled = false;
    pe_device_info info;
    pe_device_info_get(0, &info);
    snprintf(isa, sizeof isa, "%s", info.arch);
    return pe_pool_start(threads);
}

void pe_cpu_executor_stop(void)
{
    pe_pool_stop();
    pe_progcache_clear();
}

/* Finds or compiles the kernel of every KERNEL program; fns[i] stays NULL
 * where compilation failed. */
static void prepare_kernels(const pe_program_seq *seq, pe_kernel_fn *fns)
{
    const kir_kernel **missing = malloc(sizeof *missing * seq->n);
    size_t *where = malloc(sizeof *where * seq->n);
    pe_kernel_fn *compiled = malloc(sizeof *compiled * seq->n);
    size_t n_missing = 0;
    if (!missing || !where || !compiled) goto out;
    for (size_t i = 0; i < seq->n; i++) {
        const pe_program *p = &seq->progs[i];
        fns[i] = NULL;
        if (p->kind != PE_PROG_KERNEL) continue;
        fns[i] = pe_progcache_lookup(p->kir);
        if (fns[i]) {
            pe_rt.stats.program_cache_hits++;
            continue;
        }
        bool twin = false; /* the same kernel twice in one batch compiles once */
        for (size_t j = 0; j < n_missing && !twin; j++) twin = kir_equal(missing[j], p->kir);
        if (!twin) missing[n_missing++] = p->kir;
        where[i] = 1;
    }
    if (n_missing) {
        char err[512];
        pe_gccjit_unit *unit = NULL;
        if (pe_gccjit_compile(missing, n_missing, isa, compiled, &unit, err, sizeof err) &&
            pe_progcache_insert(missing, compiled, n_missing, unit)) {
            pe_rt.stats.kernels_compiled += n_missing;
            for (size_t i = 0; i < seq->n; i++)
                if (seq->progs[i].kind == PE_PROG_KERNEL && !fns[i]) fns[i] = pe_progcache_lookup(seq->progs[i].kir);
        } else {
            pe_log_message(PE_LOG_WARN, "the CPU JIT is off for this run, the interpreter computes instead: %s", err);
            jit_disabled = true;
        }
    }
out:
    free(missing), free(where), free(compiled);
}

static void finish_members(const pe_program *p)
{
    for (int m = 0; m < p->n_members; m++) pe_port_drop_inputs(pe_port_at(p->members[m]));
}

/* Runs one fused kernel; false if it could not (the caller interprets). */
static size_t run_kernel(const pe_program *p, pe_kernel_fn fn)
{
    const kir_kernel *k = p->kir;
    void *args[KIR_MAX_PARAMS];
    double scalars[KIR_MAX_PARAMS];
    for (int i = 0; i < k->n_params; i++) { /* an invalid input makes every member invalid */
        pe_port *q = pe_port_at(p->bind[i]);
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
        } else if (k->params[i].kind == KIR_OUT) {
            q->buf = pe_mem_alloc((size_t)q->numel * pe_dtype_size((pe_dtype)q->dtype));
            if (!q->buf) { /* out of memory: the interpreter reports it port by port */
                for (int j = 0; j < i; j++)
                    if (k->params[j].kind == KIR_OUT) {
                        pe_port *o = pe_port_at(p->bind[j]);
                        pe_mem_free(o->buf, (size_t)o->numel * pe_dtype_size((pe_dtype)o->dtype));
                        o->buf = NULL;
                    }
                size_t computed = 0;
                for (int m = 0; m < p->n_members; m++) computed += pe_interp_execute(pe_port_at(p->members[m]));
                return computed;
            }
            args[i] = q->buf;
        } else {
            args[i] = q->buf;
        }
    }
    if (p->numel > 0) pe_pool_run(fn, args, p->numel);
    pe_rt.stats.kernels_launched++;
    for (int m = 0; m < p->n_members; m++) pe_port_at(p->members[m])->state = PE_PORT_READY;
    finish_members(p);
    return (size_t)p->n_members;
}

static size_t cpu_run(pe_executor *ex, const pe_entry *entries, size_t n)
{
    pe_program_seq seq;
    if (jit_disabled || !pe_proggen(entries, n, pe_gccjit_can_emit, &seq))
        return pe_interp_executor.run(&pe_interp_executor, entries, n);
    (void)ex;
    pe_kernel_fn *fns = calloc(seq.n ? seq.n : 1, sizeof *fns);
    if (fns) prepare_kernels(&seq, fns);
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
            if (fns && fns[i]) {
                computed += run_kernel(p, fns[i]);
            } else {
                for (int m = 0; m < p->n_members; m++) computed += pe_interp_execute(pe_port_at(p->members[m]));
            }
            break;
        }
    }
    free(fns);
    pe_program_seq_free(&seq);
    return computed;
}

pe_executor pe_cpu_executor = {"cpu-jit", cpu_run};
