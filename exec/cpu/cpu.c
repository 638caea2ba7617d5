/* cpu.c — the CPU executor: links the CPU target's shared objects (dlopen;
 * the code it holds is progcache.c's), and runs a batch's program sequence
 * (jit/sched/batch.c provisioned it): fused kernels launched in chunks on the
 * thread pool, library calls (exec/intrinsics), the interpreter for what has no kernel, partials of
 * reductions combined in chunk order (partials.c). */
#define _GNU_SOURCE
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu.h"
#include "cpu_gccjit.h"
#include "device.h"
#include "progcache.h"
#include "../pool/threadpool.h"
#include "../base/executor.h"
#include "../base/memory.h"
#include "../interp/interp.h"
#include "../intrinsics/intrinsics.h"
#include "../../profiler/collect.h"
static char isa[32];
const char *pe_cpu_isa(void) { return isa; }

bool pe_cpu_executor_start(int threads)
{
    pe_device_info info;
    pe_detect_cpu(&info);
    snprintf(isa, sizeof isa, "%s", pe_cpu_isa_capped(info.arch, true));
    pe_intrinsics_set_threads(threads); /* the pool waits while a library call runs */
    pe_intrinsics_set_pool(pe_pool_run); /* ... or runs spmv's generated loop */
    return pe_pool_start(threads);
}

void pe_cpu_executor_stop(void)
{
    pe_pool_stop();
    pe_progcache_clear();
}

static const void *cpu_linked(pe_executor *ex, int place, const kir_kernel *k)
{
    (void)ex, (void)place;
    return (const void *)pe_progcache_lookup(k);
}

/* Loads a shared object from memory (bytes the disk cache verified): a
 * memfd, opened by its /proc/self/fd path, so what runs is what was checked,
 * not whatever the file holds by the time it is opened again.  glibc knows a
 * loaded object by the name it was opened with, so an fd number whose name
 * an earlier object still carries would return that object: the memfd moves
 * up to a number no loaded object is named after. */
void *pe_cpu_dlopen_bytes(const void *bytes, size_t size, char *err, size_t n_err)
{
    int fd = memfd_create("pe-kernels", MFD_CLOEXEC);
    size_t done = 0;
    while (fd >= 0 && done < size) {
        ssize_t w = write(fd, (const char *)bytes + done, size - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    char path[64];
    void *dl = NULL;
    while (fd >= 0 && done == size) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        void *earlier = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
        if (!earlier) {
            if (!(dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) snprintf(err, n_err, "does not load (%s)", dlerror());
            break;
        }
        dlclose(earlier);
        int up = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
        close(fd);
        fd = up;
    }
    if (fd < 0 || done != size) snprintf(err, n_err, "does not load (no memory file: %s)", strerror(errno));
    if (fd >= 0) close(fd);
    return dl;
}

/* Loads a shared object the CPU target compiled (a file) or the disk cache
 * kept (bytes) and files its kernels' entry points. */
static bool cpu_link(pe_executor *ex, int place, const pe_artifact *a, const kir_kernel *const *kernels, size_t n,
                     bool *fatal, char *err, size_t n_err)
{
    assert(pe_api_held());
    (void)ex, (void)place;
    *fatal = false;
    void *dl = a->bytes ? pe_cpu_dlopen_bytes(a->bytes, a->size, err, n_err) : dlopen(a->path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        if (!a->bytes) snprintf(err, n_err, "does not load (%s)", dlerror());
        return false;
    }
    pe_kernel_fn *fns = malloc(sizeof *fns * (n ? n : 1));
    for (size_t i = 0; fns && i < n; i++) {
        char name[48];
        kir_kernel_name(kernels[i], name, sizeof name);
        if (!(fns[i] = (pe_kernel_fn)dlsym(dl, name))) {
            snprintf(err, n_err, "lacks %s", name);
            free(fns);
            dlclose(dl);
            return false;
        }
    }
    bool filed = fns && pe_progcache_insert(kernels, fns, n, dl); /* the cache owns dl */
    if (!fns) dlclose(dl);
    if (!filed) snprintf(err, n_err, "out of memory");
    free(fns);
    return filed;
}

static bool cpu_usable(pe_executor *ex, int place)
{
    (void)ex;
    return place == 0;
}

static void cpu_arch(pe_executor *ex, int place, char *out, size_t n)
{
    (void)ex, (void)place;
    snprintf(out, n, "%s", pe_cpu_isa());
}

static int cpu_places(pe_executor *ex, int *out, int max)
{
    (void)ex;
    if (max < 1) return 0;
    out[0] = 0;
    return 1;
}

static void finish_members(const pe_program *p)
{
    for (int m = 0; m < p->n_members; m++) pe_port_drop_inputs(pe_port_at(p->members[m]));
}

void pe_store_scalar(pe_port *p, double v)
{
    switch ((pe_dtype)p->dtype) {
    case PE_F32: *(float *)p->buf = (float)v; break;
    case PE_I32: *(int32_t *)p->buf = (int32_t)v; break; /* a wrapped sum, an extreme or an index: exact */
    case PE_BOOL: *(uint8_t *)p->buf = v != 0; break;
    default: *(double *)p->buf = v; break;
    }
}

/* The profile's record of one launch: bytes each array parameter moves. */
static void profile_kernel(const pe_program *p, uint64_t t0, uint64_t t1)
{
    pe_prof_kernel_run run = {.hash = kir_hash(p->kir), .device = "cpu", .members = p->members,
                              .n_members = p->n_members, .params = p->bind, .n_params = p->kir->n_params,
                              .elements = p->numel, .served = p->served, .compile_ns = p->compile_ns};
    pe_program_traffic(p, &run.bytes_read, &run.bytes_written);
    pe_prof_kernel_ran(&run, t0, t1, -1); /* the pool counts its utilisation itself (threadpool.c) */
}

/* The interpreter computes the kernel's members instead: out of memory for
 * its buffers (it reports that port by port), or a gather's index out of
 * range (it reports the index, as the contract says).  The kernel's
 * results go first, so that a member made invalid keeps no buffer. */
static size_t members_on_interpreter(const pe_program *p)
{
    const kir_kernel *k = p->kir;
    for (int i = 0; i < k->n_params; i++)
        if (k->params[i].kind == KIR_OUT || k->params[i].kind == KIR_OUT_PARTIAL) pe_port_result_drop(pe_port_at(p->bind[i]));
    size_t computed = 0;
    for (int m = 0; m < p->n_members; m++) computed += pe_interp_execute(pe_port_at(p->members[m]));
    return computed;
}

/* The results one launch of an axis reduction takes together: along an
 * outer axis, the generator's block along the last axis (up to
 * PE_GCCJIT_AXIS_BLOCK results, read from the same rows of the operand), so
 * that a launch does not cut a block: each launch walks the whole reduced
 * axis, and launches of 2 results of a sum over axis 0 of n x 16 each read
 * a 64-byte line per element for 8 bytes of it (8 walks over the array,
 * 17% of the C loop's speed).  Blocks of a short last axis (k-means' K x 2
 * sums) still spread over the threads. */
static int64_t launch_grain(const kir_kernel *k)
{
    if (!k->axis_reduction || k->reduce_axis == k->rank - 1) return 1;
    int64_t n_last = k->shape[k->rank - 1];
    return n_last < PE_GCCJIT_AXIS_BLOCK ? n_last : PE_GCCJIT_AXIS_BLOCK;
}

static size_t run_kernel(const pe_program *p, pe_kernel_fn fn)
{
    const kir_kernel *k = p->kir;
    void *args[KIR_MAX_PARAMS];
    double scalars[KIR_MAX_PARAMS];
    int64_t n_chunks = (p->numel + KIR_REDUCE_CHUNK - 1) / KIR_REDUCE_CHUNK;
    double *partials = NULL;
    int reduce_param = -1;
    uint32_t gather_out_of_range = 0; /* a KIR_OUT_FLAG */
    for (int i = 0; i < k->n_params; i++) { /* an invalid input makes every member invalid */
        pe_port *q = pe_port_at(p->bind[i]);
        bool input = k->params[i].kind != KIR_OUT && k->params[i].kind != KIR_OUT_FLAG;
        if (input && q->state == PE_PORT_READY) pe_port_host(q); /* a GPU result */
        if (input && q->state == PE_PORT_INVALID) {
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
        } else if (k->params[i].kind == KIR_OUT_FLAG) {
            args[i] = &gather_out_of_range;
        } else if (k->params[i].kind == KIR_OUT || k->params[i].kind == KIR_OUT_PARTIAL) {
            pe_port_result_buffer(q); /* NULL buf: out of memory, below */
            if (k->params[i].kind == KIR_OUT_PARTIAL) {
                reduce_param = i;
                int64_t width = kir_partial_width((pe_op)q->op, (pe_dtype)q->ctype); /* doubles per chunk */
                partials = malloc(sizeof *partials * (size_t)(n_chunks ? width * n_chunks : 1));
            }
            if (!q->buf || (k->params[i].kind == KIR_OUT_PARTIAL && !partials)) {
                free(partials);
                return members_on_interpreter(p);
            }
            args[i] = k->params[i].kind == KIR_OUT_PARTIAL ? (void *)partials : q->buf;
        } else {
            /* a gathered constant is read at computed positions: a buffer of it */
            if (k->params[i].kind == KIR_IN_GATHERED && !q->buf && !pe_interp_materialise(q)) return members_on_interpreter(p);
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
        else if (p->numel > 0) pe_pool_run_grain(fn, args, p->numel, k->axis_reduction ? k->shape[k->reduce_axis] : 1, launch_grain(k));
        pe_api_resume(depth);
        pe_counters.kernels_launched++;
        pe_counters.streaming_launches += k->stream_stores;
        for (int i = 0; i < k->n_params; i++) pe_counters.kernel_outputs += k->params[i].kind == KIR_OUT;
        if (pe_prof_on) profile_kernel(p, t0, pe_prof_now());
    }
    if (gather_out_of_range) {
        free(partials);
        return members_on_interpreter(p);
    }
    if (reduce_param >= 0) {
        pe_port *r = pe_port_at(p->bind[reduce_param]);
        pe_store_scalar(r, pe_combine_reduction((pe_op)r->op, (pe_dtype)r->ctype, partials, n_chunks, p->numel));
        free(partials);
    }
    pe_kernel_settle(p); /* values, or expressions again (deferred.c) */
    return (size_t)p->n_members;
}

static size_t cpu_run(pe_executor *ex, const pe_batch *b, const pe_program_seq *seq, const void *const *code,
                      int place)
{
    assert(pe_api_held());
    (void)ex, (void)b, (void)place;
    size_t computed = 0;
    for (size_t i = 0; i < seq->n; i++) {
        const pe_program *p = &seq->progs[i];
        switch (p->kind) {
        case PE_PROG_SKIP: {
            pe_port *port = pe_port_at(p->port);
            pe_port_drop_inputs(port);
            port->state = PE_PORT_READY;
            break;
        }
        case PE_PROG_VIEW: /* settled once its readers ran, below */
            break;
        case PE_PROG_INTERP:
            computed += pe_interp_execute(pe_port_at(p->port));
            break;
        case PE_PROG_INTRINSIC: /* OpenBLAS, LAPACKE on the host buffers (exec/intrinsics) */
            computed += pe_intrinsic_run(p);
            break;
        case PE_PROG_KERNEL:
            if (code[i]) {
                computed += run_kernel(p, (pe_kernel_fn)code[i]);
            } else {
                for (int m = 0; m < p->n_members; m++) computed += pe_interp_execute(pe_port_at(p->members[m]));
            }
            break;
        }
    }
    pe_views_settle(seq); /* the views its kernels read through */
    return computed;
}

/* The placement's figures for the CPU (jit/sched/placement.c). */
/* A CPU thread streams ~12 GB/s (the C triad: 32 GB/s on two cores here)
 * and does ~1.5e10 cost units a second in f32 (Black-Scholes, ~180 units an
 * option, 10M in 52 ms on two threads), half that in f64 (half the SIMD
 * lanes); a socket's memory stops scaling near 100 GB/s.  Waking the pool
 * for a batch ~5 us. */
#define CPU_THREAD_BYTES_PER_S 12e9
#define CPU_BYTES_PER_S_MAX 100e9
#define CPU_THREAD_WORK_PER_S 1.5e10
#define CPU_BATCH_S 5e-6


pe_place_speed pe_cpu_place_speed(int threads)
{
    double t = threads > 0 ? threads : 1, bytes = t * CPU_THREAD_BYTES_PER_S;
    return (pe_place_speed){.bytes_per_s = bytes < CPU_BYTES_PER_S_MAX ? bytes : CPU_BYTES_PER_S_MAX,
                            .work_per_s = t * CPU_THREAD_WORK_PER_S,
                            .f64_ratio = 2,
                            .batch_s = CPU_BATCH_S};
}

static pe_place_speed cpu_speed(pe_executor *ex, int place)
{
    (void)ex, (void)place;
    return pe_cpu_place_speed(pe_rt.threads);
}

pe_executor pe_cpu_executor = {
    .name = "cpu-jit",
    .caps = PE_EXEC_RUNS_KERNELS,
    .run = cpu_run,
    .usable = cpu_usable,
    .arch = cpu_arch,
    .speed = cpu_speed,
    .places = cpu_places,
    .linked = cpu_linked,
    .link = cpu_link,
};
