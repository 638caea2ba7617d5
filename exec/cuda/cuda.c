/* cuda.c — the CUDA executor: runs a batch's program sequence on a GPU.
 * The batch driver (jit/sched/batch.c) chose the GPU and had the provisioning
 * (jit/provision/provision.c) get the kernels' code: the GPU target compiles kernel
 * IR as CUDA C with NVRTC, and this executor links the cubin into the
 * device's primary context (cuModuleLoadData: cuda_kernels.c).
 *
 * Several GPUs: each in use has its own context, streams, memory pool and
 * compiled kernels (compiled for its architecture, loaded into its
 * context), and is started when first asked for: the GPU PE_DEVICE names
 * (the first one for auto) at pe_init, others at pe_set_device.
 *
 * Device choice per batch is the batch driver's: the device preferred when
 * it was recorded (PE_DEVICE / pe_set_device), else (automatic) the CPU or
 * the GPU in use that the cost model of placement.c expects to have its
 * results soonest.  A batch a GPU cannot take goes to the CPU executor.
 *
 * Residency: array values are immutable, so a copy on either side never goes
 * stale; a port computed on the GPU is READY with its value in dev_buf (on
 * GPU dev_gpu) and host_stale set, and pe_port_host() copies it down only
 * when the host needs it (a read, a map, a CPU kernel or the interpreter).
 * Inputs are uploaded once and keep their device copy while they live; a
 * batch on another GPU moves the copy there (peer copy).
 *
 * Kernels of a batch go to up to STREAMS streams, with the event waits that
 * stream_sync.c plans from their dependencies (independent kernels overlap;
 * uploads go on a stream of their own and complete before any kernel uses
 * them).  A reduction's partials are combined on the GPU too, by the
 * combiner launched after it (cuda_emit.h), so its value stays there like any
 * other result.  A batch ends without waiting for the GPU: its
 * streams join into stream 0, which records the batch's event, and the next
 * batch's streams wait for that event, so the GPU works on while the host
 * plans and launches the next batch (up to IN_FLIGHT batches ahead).  The
 * device memory its kernels read may go back to the pool at once (members'
 * inputs are dropped), so a freed block is reused only once the batches that
 * may still use it have finished (deferred frees, by batch serial).  The
 * host waits where it reads: a copy to the host drains every stream.
 *
 * A batch run under the profiler (kernel time is measured per batch) ends
 * with one synchronisation of every stream, before members' inputs are
 * dropped.
 *
 * Failures: a launch that fails, or a failure a synchronisation reports
 * while the batch's inputs are alive, sends the batch's remaining work to
 * the CPU; the GPU is switched off with one warning naming the reason.  A
 * kernel that faults after its batch ended without waiting loses the
 * context, and with it the values that lived only on the GPU: reading one
 * is an error naming its line and the reason, never a wrong value.
 *
 * This file: launches, batches, a GPU's start and stop; failures and the
 * bound context are cuda_context.c, the device memory pool cuda_memory.c,
 * residency and copies cuda_transfer.c, compiled kernels and the compile
 * ahead cuda_kernels.c, library calls cuda_intrinsics.c (cuBLAS,
 * cuSOLVER and cuSPARSE, loaded by cuda_libs.c); what they share, cuda_gpu.h. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "cuda_gpu.h"
#include "stream_sync.h"
#include "../base/error.h"
#include "../base/memory.h"
#include "../interp/interp.h"
#include "../intrinsics/intrinsics.h"
#include "cuda_emit.h"
#include "../../profiler/collect.h"
#define BLOCK 256

/* The GPU's context current on this thread, else the GPU given up. */
static bool current(cuda_gpu *g)
{
    CUresult r = pe_cuda_bind(g);
    if (r != PE_CUDA_SUCCESS) pe_cuda_disable(g, "cuCtxSetCurrent failed", r);
    return r == PE_CUDA_SUCCESS;
}

/* ------------------------------------------------------------ launches */

/* Launches one fused kernel: inputs to the device, outputs allocated there.
 * A reduction kernel leaves per-chunk partials, which its module's combiner
 * (cuda_emit.h) turns into the result right after it on the same stream, so
 * the value stays on the GPU until the host asks for it.  Members are READY
 * at once (later work is ordered after them on the GPU); their inputs are
 * dropped at the batch's end.  *launched: whether a kernel went to the GPU
 * (not when every member is invalid already).  False when it could not
 * launch: the caller computes the members on the CPU. */
static bool launch(cuda_gpu *g, const pe_program *p, const compiled *fn, bool *launched, const pe_sync_op *sync, const int *waits)
{
    const kir_kernel *k = p->kir;
    pe_cuda_args args, combine_args;
    uint32_t keep[KIR_MAX_PARAMS];
    memset(&args, 0, sizeof args);
    memset(&combine_args, 0, sizeof combine_args);
    *launched = false;
    for (int i = 0; i < k->n_params; i++) keep[i] = p->bind[i];
    for (int i = 0; i < k->n_params; i++) {
        pe_port *q = pe_port_at(p->bind[i]);
        if (k->params[i].kind != KIR_OUT && k->params[i].kind != KIR_OUT_PARTIAL && q->state == PE_PORT_INVALID) {
            for (int m = 0; m < p->n_members; m++) {
                pe_port_inherit_invalid(pe_port_at(p->members[m]), q);
                pe_port_drop_inputs(pe_port_at(p->members[m]));
            }
            return true; /* nothing to compute: every member is invalid */
        }
    }
    int result = -1;      /* a reduction's parameter */
    CUdeviceptr flag = 0; /* a gather's out-of-range flag (KIR_OUT_FLAG) */
    for (int i = 0; i < k->n_params; i++) {
        pe_port *q = pe_port_at(p->bind[i]);
        switch (k->params[i].kind) {
        case KIR_IN_SCALAR:
            args.p[i].value = q->value;
            break;
        case KIR_IN_LITERAL: /* compiled in */
            break;
        case KIR_IN_CONTIG: case KIR_IN_STRIDED: case KIR_IN_GATHERED:
            /* (a gathered constant: pe_cuda_to_device gives it a buffer first) */
            if (!pe_cuda_to_device(g, q, keep, k->n_params)) return false;
            args.p[i].ptr = (CUdeviceptr)(uintptr_t)q->dev_buf;
            break;
        case KIR_OUT: case KIR_OUT_PARTIAL: {
            CUdeviceptr d = pe_cuda_device_alloc(g, pe_port_bytes(q), keep, k->n_params);
            if (!d) return false;
            pe_cuda_give_copy(q, g, d);
            args.p[i].ptr = d;
            if (k->params[i].kind == KIR_OUT_PARTIAL) result = i;
            break;
        }
        case KIR_OUT_FLAG:
            if (!(flag = pe_cuda_device_alloc(g, sizeof(uint32_t), keep, k->n_params))) return false;
            args.p[i].ptr = flag;
            break;
        }
    }
    long long n = p->numel, n_chunks = (n + KIR_REDUCE_CHUNK - 1) / KIR_REDUCE_CHUNK;
    const kir_inst *reduce = kir_reduction_of(k);
    /* doubles a chunk's partial takes (var, stddev, f64 norm2: their chunk statistics) */
    int width = reduce ? kir_partial_width((pe_op)reduce->op, (pe_dtype)reduce->ctype) : 2;
    size_t partial_bytes = sizeof(double) * (size_t)width * (size_t)(n_chunks ? n_chunks : 1);
    CUdeviceptr partials = 0;
    if (result >= 0) {
        const pe_port *r = pe_port_at(p->bind[result]);
        if (!fn->combine || !(partials = pe_cuda_device_alloc(g, partial_bytes, keep, k->n_params))) return false;
        combine_args.p[0].ptr = partials;
        combine_args.p[1].ptr = args.p[result].ptr;
        combine_args.p[2].value = (double)n;
        combine_args.p[3].value = r->op;
        combine_args.p[4].value = r->dtype;
        combine_args.p[5].value = reduce->ctype; /* which way the combiner folds */
        args.p[result].ptr = partials; /* the kernel writes the partials */
    }
    void *params[] = {&n, &args}, *combine_params[] = {&n_chunks, &combine_args};
    CUstream stream = g->streams[sync->stream];
    g->busy |= 1u << sync->stream;
    CUresult r = PE_CUDA_SUCCESS;
    for (int w = 0; w < sync->n_waits && r == PE_CUDA_SUCCESS; w++)
        r = pe_cuda_api_in_use->cuStreamWaitEvent(stream, g->events[waits[sync->wait_begin + w]], 0);
    if (r == PE_CUDA_SUCCESS && flag) r = pe_cuda_api_in_use->cuMemsetD8Async(flag, 0, sizeof(uint32_t), stream);
    if (r != PE_CUDA_SUCCESS) {
    } else if (partials) {
        if (n_chunks > 0)
            r = pe_cuda_api_in_use->cuLaunchKernel(fn->fn, (unsigned)n_chunks, 1, 1, PE_CUDA_REDUCE_THREADS, 1, 1, 0, stream, params,
                                       NULL);
        if (r == PE_CUDA_SUCCESS)
            r = pe_cuda_api_in_use->cuLaunchKernel(fn->combine, 1, 1, 1, PE_CUDA_REDUCE_THREADS, 1, 1, 0, stream, combine_params, NULL);
    } else if (n > 0) {
        /* at most 32 blocks per SM, each thread striding over several
         * elements: measured on an H100, one element per thread made the
         * triad 68% and the chain 50% of the copy bandwidth instead of 79
         * and 68% */
        /* an axis reduction may take a warp per result (cuda_emit_loops.c decides
         * which; the executor cannot ask it, below it in the layering): a
         * warp's worth of threads per result for each, idle past the
         * results in a kernel taking a thread per result (both stride over
         * their results, so any grid is correct) */
        long long threads = n * (k->axis_reduction ? 32 : 1);
        long long blocks = (threads + BLOCK - 1) / BLOCK, most = (long long)g->dev->sms * 32;
        r = pe_cuda_api_in_use->cuLaunchKernel(fn->fn, (unsigned)(blocks < most ? blocks : most), 1, 1, BLOCK, 1, 1, 0, stream,
                                   params, NULL);
    }
    if (partials) pe_cuda_device_free(g, partials, partial_bytes); /* deferred: reused once this batch has finished */
    /* A kernel that gathers: its flag read back before anything consumes its
     * members (one wait on its stream).  An index out of range leaves the
     * members to the interpreter, which reports it at the caller's line, as
     * on the CPU (exec/cpu/cpu.c); its consumers, launched after, read the
     * interpreter's values. */
    uint32_t out_of_range = 0;
    const char *failed = "cuLaunchKernel failed";
    if (r == PE_CUDA_SUCCESS && flag && n > 0) {
        failed = "a kernel that gathers failed";
        r = pe_cuda_api_in_use->cuMemcpyDtoHAsync(&out_of_range, flag, sizeof out_of_range, stream);
        /* waited for holding the runtime lock: the batch is half launched */
        if (r == PE_CUDA_SUCCESS) r = pe_cuda_api_in_use->cuStreamSynchronize(stream);
    }
    if (flag) pe_cuda_device_free(g, flag, sizeof(uint32_t));
    /* the record goes even when nothing launched (n = 0): a later wait needs it */
    if (r == PE_CUDA_SUCCESS && sync->record_event >= 0) r = pe_cuda_api_in_use->cuEventRecord(g->events[sync->record_event], stream);
    if (r != PE_CUDA_SUCCESS) {
        pe_cuda_disable(g, failed, r);
        return false;
    }
    if (out_of_range) return false; /* the caller has the interpreter compute the members */
    *launched = true;
    pe_counters.kernels_launched++;
    for (int i = 0; i < k->n_params; i++) {
        pe_counters.kernel_outputs += k->params[i].kind == KIR_OUT;
        if (k->params[i].kind == KIR_OUT || k->params[i].kind == KIR_OUT_PARTIAL) pe_port_at(p->bind[i])->host_stale = true;
    }
    for (int m = 0; m < p->n_members; m++) {
        pe_port *q = pe_port_at(p->members[m]);
        if (q->state == PE_PORT_PENDING) q->state = PE_PORT_READY;
    }
    return true;
}

/* Undoes a launch that did not happen (or whose results are lost): device
 * buffers go, members are pending again for the CPU. */
static void unlaunch(cuda_gpu *g, const pe_program *p)
{
    for (int i = 0; i < p->kir->n_params; i++) {
        pe_port *q = pe_port_at(p->bind[i]);
        kir_param_kind kind = p->kir->params[i].kind;
        if ((kind == KIR_OUT || kind == KIR_OUT_PARTIAL) && q->state != PE_PORT_INVALID) {
            if (!g->disabled) pe_cuda_port_free(q);
            if (q->buf) pe_mem_free(q->buf, pe_port_bytes(q)); /* a host copy made mid-batch */
            q->buf = NULL;
            q->dev_buf = NULL;
            q->host_stale = false;
            q->state = PE_PORT_PENDING;
        }
    }
}

/* ------------------------------------------------------------- batches */

/* Streams and events for the batch's kernels: kernel k depends on an earlier
 * kernel that computes one of its inputs.  A batch holding a library call
 * runs on stream 0 alone, in its order: the call (cuda_intrinsics.c) goes
 * there between the kernels that make its operands and those that read
 * its results. */
static bool plan_streams(cuda_gpu *g, const pe_program_seq *seq, pe_sync_plan *plan)
{
    size_t n = 0, n_edges = 0;
    int streams = g->n_streams;
    for (size_t i = 0; i < seq->n; i++) {
        if (seq->progs[i].kind == PE_PROG_KERNEL) n++, n_edges += (size_t)seq->progs[i].kir->n_params;
        if (seq->progs[i].kind == PE_PROG_INTRINSIC) streams = 1;
    }
    int *start = malloc(sizeof *start * (n + 1)), *preds = malloc(sizeof *preds * (n_edges ? n_edges : 1));
    const pe_program **kernels = malloc(sizeof *kernels * (n ? n : 1));
    bool ok = start && preds && kernels;
    if (ok) {
        size_t k = 0, e = 0;
        for (size_t i = 0; i < seq->n; i++)
            if (seq->progs[i].kind == PE_PROG_KERNEL) kernels[k++] = &seq->progs[i];
        for (k = 0; k < n; k++) {
            start[k] = (int)e;
            const pe_program *p = kernels[k];
            for (int a = 0; a < p->kir->n_params; a++) {
                if (p->kir->params[a].kind == KIR_OUT || p->kir->params[a].kind == KIR_OUT_PARTIAL) continue;
                for (size_t j = 0; j < k; j++) {
                    bool made_there = false;
                    for (int m = 0; m < kernels[j]->n_members && !made_there; m++) made_there = kernels[j]->members[m] == p->bind[a];
                    if (made_there) {
                        preds[e++] = (int)j;
                        break;
                    }
                }
            }
        }
        start[n] = (int)e;
        pe_sync_dag dag = {(int)n, start, preds};
        ok = pe_sync_plan_make(&dag, streams, EVENTS, plan);
    }
    free(start), free(preds), free(kernels);
    return ok;
}


/* Computes a port on the CPU's interpreter, its inputs copied to the host
 * first; an input whose GPU copy is lost makes it invalid. */
static size_t interpret(pe_port *p)
{
    for (int k = 0; k < p->n_in; k++) {
        pe_port *q = pe_port_at(p->in[k]);
        if (q->state == PE_PORT_READY && !pe_port_host(q)) {
            pe_port_inherit_invalid(p, q);
            pe_port_drop_inputs(p);
            return 0;
        }
    }
    return pe_interp_execute(p) ? 1 : 0;
}

/* The profile's kernel records of a GPU batch.  Kernels run asynchronously
 * on several streams and are timed here per batch (host clock, launch to the
 * end of the synchronisation): each launched kernel gets the share of that
 * time its estimated work (elements x catalog cost of its ops) has, so the
 * records are estimates. */
static void profile_gpu_kernels(cuda_gpu *g, const pe_program_seq *seq, const bool *launched, uint64_t start, uint64_t end)
{
    double total = 0;
    double *work = calloc(seq->n ? seq->n : 1, sizeof *work);
    if (!work) return;
    for (size_t i = 0; i < seq->n; i++) {
        const pe_program *p = &seq->progs[i];
        if (p->kind != PE_PROG_KERNEL || !launched[i]) continue;
        double cost = 0;
        for (int m = 0; m < p->n_members; m++) cost += pe_op_table[pe_port_at(p->members[m])->op].cost + 1;
        total += work[i] = cost * (double)(p->numel > 0 ? p->numel : 1);
    }
    char device[16];
    snprintf(device, sizeof device, "cuda:%d", g->ordinal);
    int track = pe_cuda_gpu_track(g, "kernels (batch time shared by estimated work)");
    uint64_t at = start;
    for (size_t i = 0; i < seq->n && total > 0; i++) {
        const pe_program *p = &seq->progs[i];
        if (!work[i]) continue;
        uint64_t span = (uint64_t)((double)(end - start) * work[i] / total);
        pe_prof_kernel_run run = {.hash = kir_hash(p->kir), .device = device, .members = p->members,
                                  .n_members = p->n_members, .params = p->bind, .n_params = p->kir->n_params,
                                  .elements = p->numel, .served = p->served, .compile_ns = p->compile_ns};
        pe_program_traffic(p, &run.bytes_read, &run.bytes_written);
        pe_prof_kernel_ran(&run, at, at + span, track);
        at += span;
    }
    free(work);
}

/* Begins a batch on the GPU: its serial, and its streams wait for the
 * previous batch to finish (its event on stream 0, which they do not follow
 * otherwise): its results are this batch's inputs, and the planner's events
 * are reused. */
static bool begin_batch(cuda_gpu *g)
{
    g->batches++;
    g->launching = true;
    if (g->finished + 1 >= g->batches) return true;
    CUevent previous = g->ended[(g->batches - 1) % IN_FLIGHT]; /* it ended in flight */
    CUresult r = PE_CUDA_SUCCESS;
    for (int i = 1; i < g->n_streams && r == PE_CUDA_SUCCESS; i++) r = pe_cuda_api_in_use->cuStreamWaitEvent(g->streams[i], previous, 0);
    if (r != PE_CUDA_SUCCESS) pe_cuda_disable(g, "cuStreamWaitEvent failed", r);
    return r == PE_CUDA_SUCCESS;
}

/* Ends a batch without waiting for it: the streams it used join into
 * stream 0, which records the batch's event; at most IN_FLIGHT batches are
 * in flight (the oldest is waited for).  False on a CUDA failure. */
static bool end_batch_in_flight(cuda_gpu *g)
{
    uint64_t serial = g->batches;
    if (g->finished + IN_FLIGHT < serial) { /* its event's slot is the oldest batch's, IN_FLIGHT ago */
        int depth = pe_api_suspend(); /* the application records on meanwhile */
        CUresult r = pe_cuda_api_in_use->cuEventSynchronize(g->ended[serial % IN_FLIGHT]);
        pe_api_resume(depth);
        if (r != PE_CUDA_SUCCESS) {
            pe_cuda_disable(g, "a kernel failed", r);
            return false;
        }
        g->finished = serial - IN_FLIGHT;
    }
    CUresult r = PE_CUDA_SUCCESS;
    for (int i = 1; i < g->n_streams && r == PE_CUDA_SUCCESS; i++) {
        if (!(g->busy & (1u << i))) continue;
        r = pe_cuda_api_in_use->cuEventRecord(g->joins[i], g->streams[i]);
        if (r == PE_CUDA_SUCCESS) r = pe_cuda_api_in_use->cuStreamWaitEvent(g->stream, g->joins[i], 0);
    }
    if (r == PE_CUDA_SUCCESS) r = pe_cuda_api_in_use->cuEventRecord(g->ended[serial % IN_FLIGHT], g->stream);
    if (r != PE_CUDA_SUCCESS) {
        pe_cuda_disable(g, "cuEventRecord failed", r);
        return false;
    }
    g->in_flight = serial;
    return true;
}

static size_t cuda_run(pe_executor *ex, const pe_batch *b, const pe_program_seq *seq, const void *const *code,
                       int place)
{
    assert(pe_api_held());
    (void)ex, (void)b;
    uint64_t t0 = pe_rt.log_level >= PE_LOG_DEBUG ? pe_prof_now() : 0; /* ns */
    cuda_gpu *g = &pe_cuda_gpus[place - 1];
    bool *launched = calloc(seq->n ? seq->n : 1, sizeof *launched);
    pe_sync_plan plan = {0};
    if (!launched || !current(g) || !plan_streams(g, seq, &plan)) {
        free(launched);
        return PE_RUN_DECLINED;
    }
    size_t computed = 0;
    int kernel_no = 0;
    uint64_t t1 = t0 ? pe_prof_now() : 0;
    begin_batch(g);
    uint64_t prof_start = pe_prof_on ? pe_prof_now() : 0;
    for (size_t i = 0; i < seq->n; i++) {
        const pe_program *p = &seq->progs[i];
        pe_port *port = pe_port_at(p->port);
        switch (p->kind) {
        case PE_PROG_SKIP:
            pe_port_drop_inputs(port);
            port->state = PE_PORT_READY;
            break;
        case PE_PROG_VIEW: /* settled once its readers ran, below */
            break;
        case PE_PROG_INTERP: /* its inputs from the GPU come down first */
            computed += interpret(port);
            break;
        case PE_PROG_INTRINSIC: { /* cuBLAS / cuSOLVER / cuSPARSE on stream 0, else the host's library */
            int made = g->disabled ? -1 : pe_cuda_intrinsic(g, p);
            computed += made >= 0 ? (size_t)made : pe_intrinsic_run_locked(p); /* the batch is half launched */
            break;
        }
        case PE_PROG_KERNEL:
            if (g->disabled || !launch(g, p, code[i], &launched[i], &plan.ops[kernel_no], plan.waits)) {
                unlaunch(g, p);
                for (int m = 0; m < p->n_members; m++) computed += interpret(pe_port_at(p->members[m]));
            }
            kernel_no++;
            break;
        }
    }
    pe_sync_plan_free(&plan);
    g->launching = false;
    uint64_t t2 = t0 ? pe_prof_now() : 0;
    /* The batch ends in flight, unless the profiler times it (per batch) or
     * that fails: then every stream is waited for, the application
     * recording on meanwhile. */
    bool in_flight = g->overlap && !pe_prof_on && !g->disabled && end_batch_in_flight(g);
    CUresult r = PE_CUDA_SUCCESS;
    if (!in_flight) {
        int depth = pe_api_suspend();
        for (int i = 0; i < g->n_streams && r == PE_CUDA_SUCCESS; i++) /* every stream: `busy` is the lock holder's */
            r = pe_cuda_api_in_use->cuStreamSynchronize(g->streams[i]);
        pe_api_resume(depth);
        if (r == PE_CUDA_SUCCESS) {
            g->busy = 0;
            g->finished = g->batches; /* every batch before it too */
        } else {
            pe_cuda_disable(g, "a kernel failed", r);
        }
        if (pe_prof_on && r == PE_CUDA_SUCCESS) profile_gpu_kernels(g, seq, launched, prof_start, pe_prof_now());
    }
    if (!g->disabled) pe_counters.gpu_batches++; /* a batch that lost the GPU midway counts as the CPU's */
    for (size_t i = 0; i < seq->n; i++) {
        const pe_program *p = &seq->progs[i];
        if (p->kind != PE_PROG_KERNEL || !launched[i]) continue;
        if (r != PE_CUDA_SUCCESS) { /* results lost with the context: the CPU computes them */
            unlaunch(g, p);
            for (int m = 0; m < p->n_members; m++) computed += interpret(pe_port_at(p->members[m]));
            continue;
        }
        computed += (size_t)p->n_members;
        pe_kernel_settle(p); /* values, or expressions again (exec/base/deferred.c) */
    }
    pe_views_settle(seq); /* the views its kernels read through */
    if (t0)
        pe_log_message(PE_LOG_DEBUG, "GPU %d batch of %zu programs: plan %.1f us, launch %.1f us, %s %.1f us",
                       g->ordinal, seq->n, (double)(t1 - t0) / 1e3, (double)(t2 - t1) / 1e3,
                       in_flight ? "in flight after" : "wait+finish", (double)(pe_prof_now() - t2) / 1e3);
    free(launched);
    return computed;
}

/* Waits for the GPU's batches still in flight (pe_sync: all work done). */
static void cuda_wait(pe_executor *ex)
{
    (void)ex;
    cuda_gpu *was = pe_cuda_bound;
    for (int i = 0; i < PE_CUDA_MAX_DEVICES; i++) {
        cuda_gpu *g = &pe_cuda_gpus[i];
        if (!in_use(g) || g->finished == g->batches || !current(g)) continue;
        CUresult r = pe_cuda_drain(g);
        if (r != PE_CUDA_SUCCESS) pe_cuda_disable(g, "a kernel failed", r);
    }
    pe_cuda_bind_again(was);
}

static cuda_gpu *gpu_at(int place)
{
    return place >= 1 && place <= PE_CUDA_MAX_DEVICES && in_use(&pe_cuda_gpus[place - 1]) ? &pe_cuda_gpus[place - 1] : NULL;
}

/* In use and its context current on this thread (a failure to bind gives
 * it up). */
static bool cuda_usable(pe_executor *ex, int place)
{
    (void)ex;
    cuda_gpu *g = gpu_at(place);
    return g && current(g);
}

static void cuda_arch(pe_executor *ex, int place, char *out, size_t n)
{
    (void)ex;
    cuda_gpu *g = gpu_at(place);
    snprintf(out, n, "sm_%d", g ? sm_of(g) : 0);
}

static int cuda_places(pe_executor *ex, int *out, int max)
{
    (void)ex;
    int n = 0;
    for (int i = 0; i < PE_CUDA_MAX_DEVICES && n < max; i++)
        if (in_use(&pe_cuda_gpus[i])) out[n++] = 1 + i;
    return n;
}

static void cuda_fail(pe_executor *ex, int place, const char *what)
{
    (void)ex;
    cuda_gpu *g = gpu_at(place);
    if (g) pe_cuda_disable(g, what, PE_CUDA_SUCCESS);
}

void pe_cuda_device_info(int ordinal, pe_device_info *out)
{
    const pe_cuda_device *d = pe_cuda_device_at(ordinal);
    memset(out, 0, sizeof *out);
    out->kind = PE_DEVICE_CUDA;
    snprintf(out->name, sizeof out->name, "%s", d->name);
    snprintf(out->arch, sizeof out->arch, "sm_%d%d", d->cc_major, d->cc_minor);
    out->memory_bytes = d->memory_bytes;
    out->cores = d->sms;
}

/* The placement's figures for a GPU, from its attributes (jit/sched/placement.c). */
/* A GPU batch: launches, stream joins and its event, ~20 us.  Kernels
 * reach ~80% of the memory's peak (an H100's device-to-device copy:
 * 2.5-2.7 of 3.35 TB/s); one cost unit per FP32 lane per clock. */
#define GPU_BATCH_S 20e-6
#define GPU_BANDWIDTH_REACHED 0.8

pe_place_speed pe_cuda_place_speed(const pe_cuda_device *d)
{
    /* a figure the driver did not give (the clock attributes are
     * deprecated): HBM on a data-centre part, GDDR on the others */
    bool data_centre = d->f64_ratio > 0 && d->f64_ratio <= 4;
    double memory_hz = d->memory_clock_khz > 0 ? d->memory_clock_khz * 1e3 : data_centre ? 1.5e9 : 9.5e9;
    double bus_bytes = d->memory_bus_bits > 0 ? d->memory_bus_bits / 8.0 : data_centre ? 512 : 48;
    double clock_hz = d->clock_khz > 0 ? d->clock_khz * 1e3 : 1.5e9;
    int cc = d->cc_major * 10 + d->cc_minor;
    double lanes = cc == 60 || (cc >= 70 && cc <= 80) ? 64 : 128; /* FP32 units per SM (P100, V100, T4, A100: 64) */
    return (pe_place_speed){.bytes_per_s = 2 * memory_hz * bus_bytes * GPU_BANDWIDTH_REACHED, /* double data rate */
                            .work_per_s = (d->sms > 0 ? d->sms : 1) * lanes * clock_hz,
                            .f64_ratio = d->f64_ratio > 0 ? d->f64_ratio : 32,
                            .batch_s = GPU_BATCH_S};
}

static pe_place_speed cuda_speed(pe_executor *ex, int place)
{
    (void)ex;
    return pe_cuda_place_speed(pe_cuda_device_at(place - 1));
}

pe_executor pe_cuda_executor = {
    .name = "cuda",
    .caps = PE_EXEC_RUNS_KERNELS | PE_EXEC_DEVICE_MEMORY,
    .run = cuda_run,
    .usable = cuda_usable,
    .arch = cuda_arch,
    .speed = cuda_speed,
    .places = cuda_places,
    .linked = pe_cuda_linked,
    .link = pe_cuda_link,
    .fail = cuda_fail,
    .free_device_copy = pe_cuda_port_free,
    .wait = cuda_wait,
    .host_copy = pe_cuda_host_copy,
    .copy_out = pe_port_copy_out,
    .calls = pe_cuda_calls,
};

bool pe_cuda_executor_serves(int ordinal)
{
    return ordinal >= 0 && ordinal < PE_CUDA_MAX_DEVICES && in_use(&pe_cuda_gpus[ordinal]);
}

/* Gives back all a GPU holds (also one that failed as it started, or
 * later: no kernel runs any more then). */
static void stop_gpu(cuda_gpu *g)
{
    if (!g->ctx || pe_cuda_bind(g) != PE_CUDA_SUCCESS) g->up = false; /* nothing to wait for */
    if (g->up) pe_cuda_drain(g);
    if (g->up) pe_cuda_release_handles(g);
    g->blas = NULL, g->solver = NULL, g->sparse = NULL; /* a lost context took them */
    pe_cuda_pool_trim(g);
    while (g->deferred) {
        cached_block *b = g->deferred;
        g->deferred = b->next;
        pe_cuda_api_in_use->cuMemFree(b->ptr);
        free(b);
    }
    pe_cuda_forget_kernels(g);
    for (int i = 0; i < 2; i++) {
        if (g->staging[i]) pe_cuda_api_in_use->cuMemFreeHost(g->staging[i]);
        if (g->staged[i]) pe_cuda_api_in_use->cuEventDestroy(g->staged[i]);
    }
    for (int i = 0; i < g->n_streams; i++) pe_cuda_api_in_use->cuStreamDestroy(g->streams[i]);
    if (g->uploads) pe_cuda_api_in_use->cuStreamDestroy(g->uploads);
    for (int e = 0; e < EVENTS; e++)
        if (g->events[e]) pe_cuda_api_in_use->cuEventDestroy(g->events[e]);
    for (int i = 0; i < STREAMS; i++)
        if (g->joins[i]) pe_cuda_api_in_use->cuEventDestroy(g->joins[i]);
    for (int k = 0; k < IN_FLIGHT; k++)
        if (g->ended[k]) pe_cuda_api_in_use->cuEventDestroy(g->ended[k]);
    if (g->ctx) pe_cuda_api_in_use->cuDevicePrimaryCtxRelease(g->dev->handle);
    memset(g, 0, sizeof *g);
}

/* Starts GPU `ordinal` (its context, streams, events, staging buffers), once;
 * false (with a warning) when it cannot be used. */
bool pe_cuda_executor_start(int ordinal)
{
    const char *why = NULL;
    pe_cuda_api_in_use = pe_cuda_load(&why);
    if (!pe_cuda_api_in_use) {
        pe_log_message(PE_LOG_INFO, "no GPU: %s", why);
        return false;
    }
    const pe_cuda_device *dev = pe_cuda_device_at(ordinal);
    if (!dev) {
        pe_log_message(PE_LOG_WARN, "there is no CUDA device %d (%d found)", ordinal, pe_cuda_device_count());
        return false;
    }
    cuda_gpu *g = &pe_cuda_gpus[ordinal];
    if (g->up && g->disabled)
        pe_log_message(PE_LOG_WARN, "GPU %d (%s) went off after a CUDA failure earlier in this run", ordinal, dev->name);
    if (g->up) return !g->disabled;
    cuda_gpu *was = pe_cuda_bound;
    g->ordinal = ordinal;
    g->dev = dev;
    CUresult r = pe_cuda_api_in_use->cuDevicePrimaryCtxRetain(&g->ctx, g->dev->handle);
    if (r == PE_CUDA_SUCCESS) r = pe_cuda_bind(g);
    if (r == PE_CUDA_SUCCESS) r = pe_cuda_api_in_use->cuStreamCreate(&g->streams[0], 1 /* non-blocking */);
    g->stream = g->streams[0];
    g->n_streams = r == PE_CUDA_SUCCESS;
    /* more streams and the event pool: without them, one stream does it all */
    bool extra = r == PE_CUDA_SUCCESS;
    for (int e = 0; e < EVENTS && extra; e++) extra = pe_cuda_api_in_use->cuEventCreate(&g->events[e], 2 /* no timing */) == PE_CUDA_SUCCESS;
    for (int i = 1; i < STREAMS && extra; i++) {
        extra = pe_cuda_api_in_use->cuStreamCreate(&g->streams[i], 1) == PE_CUDA_SUCCESS;
        if (extra) g->n_streams = i + 1;
    }
    /* batches in flight: without these, every batch waits for its end */
    bool overlap = r == PE_CUDA_SUCCESS && pe_cuda_api_in_use->cuStreamCreate(&g->uploads, 1) == PE_CUDA_SUCCESS;
    for (int i = 1; i < g->n_streams && overlap; i++) overlap = pe_cuda_api_in_use->cuEventCreate(&g->joins[i], 2) == PE_CUDA_SUCCESS;
    for (int k = 0; k < IN_FLIGHT && overlap; k++) overlap = pe_cuda_api_in_use->cuEventCreate(&g->ended[k], 2) == PE_CUDA_SUCCESS;
    g->overlap = overlap;
    if (r != PE_CUDA_SUCCESS) {
        char d[200];
        describe(r, d, sizeof d);
        pe_log_message(PE_LOG_WARN, "the GPU %s cannot be used (%s): the CPU computes", g->dev->name, d);
        stop_gpu(g);
        pe_cuda_bind_again(was);
        return false;
    }
    g->cap = SIZE_MAX;
    const char *limit = getenv("PE_CUDA_MEM_LIMIT");
    if (limit && *limit) {
        char *end;
        unsigned long long v = strtoull(limit, &end, 10);
        if (*end || v == 0) pe_log_message(PE_LOG_WARN, "PE_CUDA_MEM_LIMIT=%s is not a byte count; ignored", limit);
        else g->cap = (size_t)v;
    }
    pe_cuda_refresh_limit(g);
    bool staging = true; /* optional: without the buffers copies go directly */
    for (int i = 0; i < 2 && staging; i++) {
        if (!(staging = pe_cuda_api_in_use->cuMemHostAlloc(&g->staging[i], STAGING_BYTES, 0) == PE_CUDA_SUCCESS)) g->staging[i] = NULL;
        if (staging && !(staging = pe_cuda_api_in_use->cuEventCreate(&g->staged[i], 2) == PE_CUDA_SUCCESS)) g->staged[i] = NULL;
    }
    for (int i = 0; i < 2 && !staging; i++) {
        if (g->staging[i]) pe_cuda_api_in_use->cuMemFreeHost(g->staging[i]);
        if (g->staged[i]) pe_cuda_api_in_use->cuEventDestroy(g->staged[i]);
        g->staging[i] = NULL, g->staged[i] = NULL;
    }
    g->up = true;
    g->disabled = false;
    pe_cuda_bind_again(was);
    pe_log_message(PE_LOG_INFO, "GPU %d: %s (sm_%d%d, %d SMs, %.1f GiB)", ordinal, g->dev->name, g->dev->cc_major,
                   g->dev->cc_minor, g->dev->sms, (double)g->dev->memory_bytes / (1 << 30));
    return true;
}

void pe_cuda_executor_stop(void)
{
    for (int i = 0; i < PE_CUDA_MAX_DEVICES; i++)
        if (pe_cuda_gpus[i].ctx) stop_gpu(&pe_cuda_gpus[i]);
    if (pe_cuda_api_in_use) pe_cuda_api_in_use->cuCtxSetCurrent(NULL); /* the application's thread keeps no released context */
    pe_cuda_bound = NULL;
}
