/* batch.c — the batch driver: what the E-scheduler's thread does with a
 * batch (escheduler.c).  It decides where the batch runs — the device the
 * application asked for (pe_batch.device), else, in automatic mode, the
 * place the cost model (placement.c) says has its results soonest — has the
 * provisioning (provision.c) make its program sequence under that target's
 * fusion rules and get its kernels' code there, and hands both to the
 * executor.  A GPU that cannot take the batch (off, out of memory, its
 * compiler failing) sends it to the CPU; a CPU without its JIT, to the
 * interpreter.  Runs under the runtime lock. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "batch.h"
#include "placement.h"
#include "../provision/provision.h"
#include "../../exec/base/error.h"
#include "../../exec/backends.h"
#include "../../exec/interp/interp.h"
#include "../../exec/interp/reference.h"
static size_t interpret(const pe_batch *b) { return pe_interp_executor.run(&pe_interp_executor, b, NULL, NULL, 0); }

static void log_sequence(const pe_program_seq *seq, bool from_trace, const char *where)
{
    for (size_t i = 0; i < seq->n; i++) {
        const pe_program *p = &seq->progs[i];
        char text[4096] = "";
        if (p->kind == PE_PROG_KERNEL) kir_print(p->kir, text, sizeof text);
        pe_log_message(PE_LOG_DEBUG, "program %zu%s for %s: %s %s, %lld iterations\n%s", i,
                       from_trace ? " (trace cache)" : "", where,
                       p->kind == PE_PROG_KERNEL ? "kernel" : p->kind == PE_PROG_INTERP ? "interp" : p->kind == PE_PROG_VIEW ? "view"
                       : p->kind == PE_PROG_INTRINSIC ? "library call" : "skip",
                       pe_op_table[pe_port_at(p->port)->op].name, (long long)p->numel, text);
    }
}

/* Provisions the batch for target t at `place` and runs it there;
 * PE_RUN_DECLINED when the place cannot take it (nothing was computed).
 * seq: the batch's sequence under t's rules when the caller made it
 * already (it is consumed), else NULL. */
static size_t run_at(const pe_target *t, int place, const pe_batch *b, pe_program_seq *made, bool hit)
{
    pe_program_seq seq;
    if (made) seq = *made;
    else if (!pe_provision_sequence(b, t, &seq, &hit)) return PE_RUN_DECLINED;
    if (pe_rt.log_level >= PE_LOG_DEBUG) log_sequence(&seq, hit, t->name);
    /* most sequences are short: their code slots need no allocation */
    const void *few[16];
    const void **code = seq.n <= 16 ? few : malloc(sizeof *code * seq.n);
    bool ready = code && pe_provision_kernels(t, place, &seq, code);
    /* a CPU batch runs with what compiled (the interpreter takes the rest) */
    if (!hit && (ready || t->retry_alone)) pe_provision_remember(b, t, &seq);
    size_t computed = PE_RUN_DECLINED;
    if (ready) computed = t->executor->run(t->executor, b, &seq, code, place);
    if (code != few) free(code);
    pe_program_seq_free(&seq);
    return computed;
}

static size_t on_cpu(const pe_batch *b)
{
    const pe_target *cpu = pe_host_backend.target;
    if (!pe_target_on(cpu)) return interpret(b);
    size_t computed = run_at(cpu, 0, b, NULL, false);
    return computed == PE_RUN_DECLINED ? interpret(b) : computed;
}

/* The place the cost model says has the results of the batch's program
 * sequence soonest: the CPU (0) or a GPU in use (k: GPU k - 1). */
static int cheapest_place(const pe_batch *b, const pe_program_seq *seq)
{
    pe_batch_needs needs;
    if (!pe_place_needs(seq, &needs)) return 0; /* out of memory: the CPU */
    pe_executor *host = pe_host_backend.executor, *gpus = pe_device_backend.executor;
    pe_place_speed cpu = host->speed(host, PE_PLACE_HOST), gpu[PE_MAX_PLACES];
    const pe_place_speed *speeds[PE_PLACES] = {&cpu};
    int places[PE_MAX_PLACES];
    int n = gpus->places(gpus, places, PE_MAX_PLACES);
    for (int i = 0; i < n; i++) {
        gpu[i] = gpus->speed(gpus, places[i]);
        speeds[places[i]] = &gpu[i];
    }
    double seconds;
    int place = pe_place_cheapest(&needs, speeds, &seconds);
    if (pe_rt.log_level >= PE_LOG_DEBUG) {
        char where[16] = "the CPU";
        if (place) snprintf(where, sizeof where, "GPU %d", place - 1);
        pe_log_message(PE_LOG_DEBUG, "batch %u placed on %s: estimated %.1f us (CPU %.1f us)", b->epoch, where,
                       seconds * 1e6, pe_place_seconds(&needs, PE_PLACE_HOST, &cpu) * 1e6);
    }
    return place;
}

/* Whether the sequence holds a library call (PE_PROG_INTRINSIC) that the
 * GPU executor does not make (its library did not load: one warning
 * there, exec/cuda/cuda_libs.c): such a batch runs on the CPU, wherever it
 * was asked for. */
static bool needs_the_cpu(const pe_program_seq *seq)
{
    pe_executor *gpus = pe_device_backend.executor;
    bool cpu = false; /* every call asked: each missing library warns at its first call */
    for (size_t i = 0; i < seq->n; i++)
        if (seq->progs[i].kind == PE_PROG_INTRINSIC && (!gpus->calls || !gpus->calls(gpus, &seq->progs[i]))) cpu = true;
    return cpu;
}

/* With GPUs in use: the batch's place, then the batch there.  Sequences
 * are the same on every GPU (code is looked up per GPU); placement weighs
 * the GPU target's sequence, which is kept for the batch's next placement
 * when the batch goes to the CPU (whose fusion rules differ on reductions:
 * it gets its own). */
static size_t with_gpus(const pe_batch *b)
{
    pe_executor *gpus = pe_device_backend.executor;
    const pe_target *gpu = pe_device_backend.target;
    if (b->device == 0 || (b->device > 0 && !gpus->usable(gpus, b->device))) return on_cpu(b);
    pe_program_seq seq;
    bool hit;
    if (!pe_provision_sequence(b, gpu, &seq, &hit)) return on_cpu(b);
    int place = needs_the_cpu(&seq) ? 0 : b->device > 0 ? b->device : cheapest_place(b, &seq);
    if (place == 0 || !gpus->usable(gpus, place)) {
        if (!hit) pe_provision_remember(b, gpu, &seq);
        pe_program_seq_free(&seq);
        return on_cpu(b);
    }
    size_t computed = run_at(gpu, place, b, &seq, hit);
    return computed == PE_RUN_DECLINED ? on_cpu(b) : computed;
}

static size_t run_anywhere(const pe_batch *b)
{
    pe_executor *ex = pe_rt.executor;
    if (!(ex->caps & PE_EXEC_RUNS_KERNELS)) return interpret(b);
    if (ex->caps & PE_EXEC_DEVICE_MEMORY) return with_gpus(b);
    return on_cpu(b);
}

size_t pe_batch_run(const pe_batch *b)
{
    assert(pe_api_held());
    if (__builtin_expect(pe_check.mode == PE_CHECK_OFF, 1)) return run_anywhere(b);
    /* PE_CHECK: the references first (the inputs are still held), the results compared after */
    pe_check_before_run(b);
    size_t computed = run_anywhere(b);
    pe_check_after_run(b);
    return computed;
}
