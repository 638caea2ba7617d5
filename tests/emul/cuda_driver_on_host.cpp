// cuda_driver_on_host.cpp — the part of the CUDA Driver API that PE uses,
// emulated on the host, so that the CUDA executor (exec/cuda*.c) runs and is
// tested on machines without a GPU: PE_CUDA_DRIVER=<this library>, with
// PE_NVRTC_LIBRARY=<libpe_nvrtc_on_host.so>, whose "cubins" are shared
// objects of the emitted CUDA C built by the host's C++ compiler over
// tests/cuda_on_host.hpp.
//
// What it keeps of CUDA's semantics, because the executor depends on it:
// - streams run their work in order on a thread each, asynchronously to the
//   caller and to each other; events order work across streams (a wait
//   waits for the event's latest record at the time of the wait call);
// - copies from pageable host memory take the source at the call; copies to
//   pageable host memory return when done; pinned memory (cuMemHostAlloc)
//   is truly asynchronous both ways;
// - launch arguments are copied at the launch;
// - a failed kernel loses the context: from the first call that waits for
//   the device on, every call returns the error;
// - each device has its own primary context, memory and allocations; a call
//   works on the calling thread's current context (cuCtxSetCurrent), and,
//   as on a GPU, a stream, module or event of another context, or memory of
//   another device, is an error (a kernel given another device's memory
//   faults as it runs, as on a GPU without peer access); cuMemcpyPeerAsync
//   copies between devices.
//
// And what it adds for tests:
// - PE_EMUL_CUDA_DELAY_US=N: each stream operation starts after a random
//   pause of up to N microseconds, so that a missing wait shows as a wrong
//   value rather than passing by luck of timing;
// - PE_EMUL_CUDA_FAIL=what:N (read, as the two below, when a runtime makes
//   its first primary context): the Nth call of a kind fails — `launch`
//   (cuLaunchKernel returns CUDA_ERROR_LAUNCH_FAILED), `kernel` (the Nth
//   kernel fails as it runs; the first call that waits for the device — a
//   synchronisation, an event query, a synchronous copy, cuMemFree —
//   reports it, as CUDA may: whether a batch ended in flight before its
//   kernel's fault is known never depends on timing), `record` (the Nth
//   cuEventRecord reports CUDA_ERROR_ILLEGAL_ADDRESS, an earlier kernel's
//   fault surfacing there, and the context is lost: the asynchronous error
//   a launch or a record may return), `alloc` (cuMemAlloc runs out of
//   memory once);
// - PE_EMUL_CUDA_MEMORY=bytes: each device's memory (1 GiB unless set);
// - PE_EMUL_CUDA_FRAGMENTED=bytes: that much of it is free but in pieces
//   no allocation can use (cuMemGetInfo counts it, cuMemAlloc cannot);
// - PE_EMUL_CUDA_DEVICES=90,86,...: one device per compute capability (one
//   sm_90 unless set); an sm_90 or sm_80 device is a data-centre part (fast
//   f64), the others have 1/64 of the f32 rate in f64;
// - pe_emul_cuda_kernels_run(device): kernels run on a device so far;
//   pe_emul_cuda_misuses(): calls with a wrong context, handle or pointer;
// - for the emulated CUDA libraries (cuda_libs_on_host.c, linked against
//   this one): pe_emul_cuda_enqueue(stream, fn, arg) runs fn(arg) on the
//   stream as a library's kernel runs, pe_emul_cuda_check(stream, p, bytes)
//   whether [p, p + bytes) is memory of the stream's device (a misuse if not).
// Device pointers are host addresses: nothing here checks that the host
// never dereferences one.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <elf.h>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum : CUresult {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    INVALID_IMAGE = 200,
    INVALID_HANDLE = 400,
    NOT_FOUND = 500,
    NOT_READY = 600,
    INVALID_CONTEXT = 201,
    ILLEGAL_ADDRESS = 700,
    LAUNCH_FAILED = 719,
};

namespace {

// never destroyed: stream threads may still wait on them at exit
std::mutex &mu = *new std::mutex; // all state below, events included
std::condition_variable &changed = *new std::condition_variable;

constexpr int max_devices = 16;
struct Device {
    int cc = 90;          // compute capability, major * 10 + minor
    size_t allocated = 0; // bytes of its memory in use
    long kernels_run = 0;
};
Device devices[max_devices];
int n_devices = 1;
size_t device_memory = 1ull << 30; // each device's
size_t fragmented = 0;             // of which unusable

// a device's primary context; `sticky`: its error once lost, `reported`
// once a call that waits has returned it
struct Context {
    int device;
    CUresult sticky;
    bool reported;
    int retained;
};
Context contexts[max_devices];
thread_local Context *current_context;

struct Allocation {
    size_t bytes;
    int device;
};
std::map<CUdeviceptr, Allocation> allocations;
std::map<void *, size_t> pinned; /* cuMemHostAlloc's, with their sizes */
unsigned delay_us = 0;
struct {
    char what[16];
    long at, seen;
} failure;

struct Event {
    Context *context;
    unsigned long long recorded = 0, done = 0;
};

struct Stream {
    Context *context;
    std::deque<std::function<void()>> work;
    bool running = false, stop = false;
    std::thread thread;
};

struct Module {
    Context *context;
    void *lib;
    void (*launch)(void *fn, long long n, const void *args, unsigned grid, unsigned block);
    size_t args_size;
};

struct Function {
    Module *module;
    void *fn;
};

bool fails_now(const char *what)
{
    if (std::strcmp(failure.what, what) != 0) return false;
    return ++failure.seen == failure.at;
}

void pause_a_little()
{
    if (!delay_us) return;
    static thread_local std::minstd_rand rng(std::hash<std::thread::id>()(std::this_thread::get_id()));
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % delay_us));
}

void stream_main(Stream *s)
{
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
        changed.wait(lock, [&] { return s->stop || !s->work.empty(); });
        if (s->work.empty()) return;
        std::function<void()> op = std::move(s->work.front());
        s->work.pop_front();
        s->running = true;
        lock.unlock();
        pause_a_little();
        op();
        lock.lock();
        s->running = false;
        changed.notify_all();
    }
}

// Work for a stream; with the lock held.
void enqueue(Stream *s, std::function<void()> op)
{
    s->work.push_back(std::move(op));
    changed.notify_all();
}

void wait_idle(std::unique_lock<std::mutex> &lock, Stream *s)
{
    changed.wait(lock, [&] { return s->work.empty() && !s->running; });
}

std::set<Stream *> streams;

void wait_all_idle(std::unique_lock<std::mutex> &lock)
{
    for (Stream *s : streams) wait_idle(lock, s);
}

bool is_pinned(const void *p, size_t bytes)
{
    auto it = pinned.upper_bound((void *)p);
    if (it == pinned.begin()) return false;
    --it;
    return (const char *)p >= (const char *)it->first && (const char *)p + bytes <= (const char *)it->first + it->second;
}

// Calls PE should never make (a wrong context, stream, pointer): counted,
// for tests to assert none happened (PE ignores some calls' results, such
// as cuMemFree's, where a misuse would only leak).
std::atomic<long> misuses{0};
CUresult misuse(CUresult r)
{
    misuses++;
    return r;
}

// The device whose allocation holds [p, p + bytes), or -1.
int device_of(CUdeviceptr p, size_t bytes)
{
    auto it = allocations.upper_bound(p);
    if (it == allocations.begin()) return -1;
    --it;
    return p >= it->first && p + bytes <= it->first + it->second.bytes ? it->second.device : -1;
}

// Whether [p, p + bytes) is memory of the stream's device.
bool is_device(CUdeviceptr p, size_t bytes, void *stream)
{
    return device_of(p, bytes) == ((Stream *)stream)->context->device;
}

// A context's error as a call that does not wait for the device sees it.
CUresult told(const Context *c) { return c->reported ? c->sticky : SUCCESS; }

// A context's error as a call that waits for the device sees it: reported
// from then on to every call.
CUresult waited(Context *c)
{
    if (c->sticky) c->reported = true;
    return c->sticky;
}

// The calling thread's context's state: its error, or none current.
CUresult context_state()
{
    return current_context ? told(current_context) : misuse(INVALID_CONTEXT);
}

// ----------------------------------------------------------- entry points

CUresult cuInit(unsigned) { return SUCCESS; }
bool is_ordinal(int dev) { return dev >= 0 && dev < n_devices; }

CUresult cuDeviceGetCount(int *n) { return *n = n_devices, SUCCESS; }
CUresult cuDeviceGet(int *dev, int ordinal) { return is_ordinal(ordinal) ? (*dev = ordinal, SUCCESS) : INVALID_VALUE; }
CUresult cuDeviceGetName(char *name, int len, int dev)
{
    if (!is_ordinal(dev)) return INVALID_VALUE;
    if (n_devices == 1) std::snprintf(name, (size_t)len, "PE host emulation of a CUDA device");
    else std::snprintf(name, (size_t)len, "PE host emulation of a CUDA device (%d of %d)", dev + 1, n_devices);
    return SUCCESS;
}
CUresult cuDeviceTotalMem(size_t *bytes, int dev) { return is_ordinal(dev) ? (*bytes = device_memory, SUCCESS) : INVALID_VALUE; }
CUresult cuDeviceGetAttribute(int *value, int attribute, int dev)
{
    if (!is_ordinal(dev)) return INVALID_VALUE;
    int cc = devices[dev].cc;
    switch (attribute) {
    case 16: *value = 2; return SUCCESS;  /* SMs: small grids, few host threads */
    /* clocks and memory bus of the part the compute capability stands for
     * (an H100 SXM, an A100, an RTX 3090), as the placement model reads them */
    case 13: *value = cc == 90 ? 1980000 : cc == 80 ? 1410000 : 1695000; return SUCCESS;   /* kHz */
    case 36: *value = cc == 90 ? 2619000 : cc == 80 ? 1215000 : 9751000; return SUCCESS;   /* kHz */
    case 37: *value = cc == 90 ? 5120 : cc == 80 ? 5120 : 384; return SUCCESS;            /* bits */
    case 75: *value = cc / 10; return SUCCESS;
    case 76: *value = cc % 10; return SUCCESS;
    case 87: *value = cc == 90 || cc == 80 ? 2 : 64; return SUCCESS; /* single to double ratio */
    default: return INVALID_VALUE;
    }
}
void read_test_settings();

// A retain after the last release makes a new context: the lost one's error
// goes; PE_EMUL_CUDA_FAIL is read again when no context was retained (a
// test's next runtime).
int retained_anywhere;
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
    std::lock_guard<std::mutex> lock(mu);
    if (!is_ordinal(dev)) return INVALID_VALUE;
    if (retained_anywhere++ == 0) read_test_settings();
    Context *c = &contexts[dev];
    if (c->retained++ == 0) c->sticky = SUCCESS, c->reported = false;
    c->device = dev;
    *ctx = c;
    return SUCCESS;
}
// The last release destroys the context: the device's memory is all free
// again (a runtime that lost its context cannot free what it held).
CUresult cuDevicePrimaryCtxRelease(int dev)
{
    std::unique_lock<std::mutex> lock(mu);
    if (!is_ordinal(dev) || contexts[dev].retained == 0) return misuse(INVALID_VALUE);
    contexts[dev].retained--, retained_anywhere--;
    if (contexts[dev].retained > 0) return SUCCESS;
    wait_all_idle(lock);
    for (auto it = allocations.begin(); it != allocations.end();) {
        if (it->second.device != dev) {
            ++it;
            continue;
        }
        std::free((void *)(uintptr_t)it->first);
        it = allocations.erase(it);
    }
    devices[dev].allocated = 0;
    return SUCCESS;
}
CUresult cuCtxSetCurrent(void *ctx)
{
    std::lock_guard<std::mutex> lock(mu);
    Context *c = (Context *)ctx;
    if (!c) return current_context = nullptr, SUCCESS;
    if (c < contexts || c >= contexts + n_devices || c->retained == 0) return misuse(INVALID_CONTEXT);
    current_context = c;
    return told(c);
}

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = context_state()) return r;
    if (bytes == 0) return misuse(INVALID_VALUE);
    Device &d = devices[current_context->device];
    if (d.allocated + bytes + fragmented > device_memory || fails_now("alloc")) return OUT_OF_MEMORY;
    void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p) return OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)(uintptr_t)p;
    allocations[*ptr] = {bytes, current_context->device};
    d.allocated += bytes;
    return SUCCESS;
}

// Synchronous, as on a GPU: the memory's last users finish first.  Memory
// of the current context's device only.
CUresult cuMemFree(CUdeviceptr ptr)
{
    std::unique_lock<std::mutex> lock(mu);
    if (!current_context) return misuse(INVALID_CONTEXT);
    auto it = allocations.find(ptr);
    if (it == allocations.end() || it->second.device != current_context->device) return misuse(INVALID_VALUE);
    wait_all_idle(lock);
    devices[it->second.device].allocated -= it->second.bytes;
    allocations.erase(it);
    std::free((void *)(uintptr_t)ptr);
    return waited(current_context);
}

CUresult cuMemGetInfo(size_t *free_bytes, size_t *total)
{
    std::lock_guard<std::mutex> lock(mu);
    if (!current_context) return misuse(INVALID_CONTEXT);
    *free_bytes = device_memory - devices[current_context->device].allocated, *total = device_memory;
    return told(current_context);
}

CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = context_state()) return r;
    if (!(*ptr = std::malloc(bytes ? bytes : 1))) return OUT_OF_MEMORY;
    pinned[*ptr] = bytes;
    return SUCCESS;
}

CUresult cuMemFreeHost(void *ptr)
{
    std::unique_lock<std::mutex> lock(mu);
    if (!pinned.erase(ptr)) return misuse(INVALID_VALUE);
    wait_all_idle(lock);
    std::free(ptr);
    return SUCCESS;
}

// Work for a stream: it must be of the current context.
CUresult check_stream(void *stream)
{
    if (CUresult r = context_state()) return r;
    return stream && streams.count((Stream *)stream) && ((Stream *)stream)->context == current_context ? SUCCESS
                                                                                                         : misuse(INVALID_HANDLE);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, void *stream)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    if (!is_device(dst, bytes, stream)) return misuse(INVALID_VALUE);
    if (is_pinned(src, bytes)) {
        enqueue((Stream *)stream, [=] { std::memcpy((void *)(uintptr_t)dst, src, bytes); });
    } else { /* pageable: staged at the call, the caller may reuse it at once */
        auto staged = std::make_shared<std::vector<char>>((const char *)src, (const char *)src + bytes);
        enqueue((Stream *)stream, [=] { std::memcpy((void *)(uintptr_t)dst, staged->data(), bytes); });
    }
    return SUCCESS;
}

CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, void *stream)
{
    std::unique_lock<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    if (!is_device(src, bytes, stream)) return misuse(INVALID_VALUE);
    enqueue((Stream *)stream, [=] { std::memcpy(dst, (const void *)(uintptr_t)src, bytes); });
    if (is_pinned(dst, bytes)) return SUCCESS;
    wait_idle(lock, (Stream *)stream); /* pageable: done on return */
    return waited(((Stream *)stream)->context);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *stream)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    if (!is_device(dst, bytes, stream) || !is_device(src, bytes, stream)) return misuse(INVALID_VALUE);
    enqueue((Stream *)stream, [=] { std::memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes); });
    return SUCCESS;
}

// Between the memory of two contexts' devices, on a stream of the current one.
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void *dst_ctx, CUdeviceptr src, void *src_ctx, size_t bytes, void *stream)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    Context *to = (Context *)dst_ctx, *from = (Context *)src_ctx;
    if (!to || !from || device_of(dst, bytes) != to->device || device_of(src, bytes) != from->device) return misuse(INVALID_VALUE);
    if (CUresult r = told(from)) return r;
    enqueue((Stream *)stream, [=] { std::memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes); });
    return SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes, void *stream)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    if (!is_device(dst, bytes, stream)) return misuse(INVALID_VALUE);
    enqueue((Stream *)stream, [=] { std::memset((void *)(uintptr_t)dst, value, bytes); });
    return SUCCESS;
}

CUresult cuStreamCreate(void **stream, unsigned)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = context_state()) return r;
    Stream *s = new Stream;
    s->context = current_context;
    s->thread = std::thread(stream_main, s);
    streams.insert(s);
    *stream = s;
    return SUCCESS;
}

CUresult cuStreamDestroy(void *stream)
{
    std::unique_lock<std::mutex> lock(mu);
    if (!stream || !streams.count((Stream *)stream)) return misuse(INVALID_HANDLE);
    Stream *s = (Stream *)stream;
    wait_idle(lock, s);
    s->stop = true;
    changed.notify_all();
    streams.erase(s);
    lock.unlock();
    s->thread.join();
    delete s;
    return SUCCESS;
}

CUresult cuStreamSynchronize(void *stream)
{
    std::unique_lock<std::mutex> lock(mu);
    if (!stream || !streams.count((Stream *)stream)) return misuse(INVALID_HANDLE);
    wait_idle(lock, (Stream *)stream);
    return waited(((Stream *)stream)->context);
}

CUresult cuEventCreate(void **event, unsigned)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = context_state()) return r;
    *event = new Event{current_context};
    return SUCCESS;
}

CUresult cuEventDestroy(void *event)
{
    delete (Event *)event;
    return SUCCESS;
}

CUresult cuEventRecord(void *event, void *stream)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    Event *e = (Event *)event;
    if (e->context != current_context) return misuse(INVALID_HANDLE); /* recorded in its own context only */
    if (fails_now("record")) /* an earlier kernel's fault, reported here: the context is lost */
        return current_context->reported = true, current_context->sticky = ILLEGAL_ADDRESS;
    unsigned long long generation = ++e->recorded;
    enqueue((Stream *)stream, [=] {
        std::lock_guard<std::mutex> l(mu);
        e->done = std::max(e->done, generation);
        changed.notify_all();
    });
    return SUCCESS;
}

CUresult cuEventQuery(void *event)
{
    std::lock_guard<std::mutex> lock(mu);
    Event *e = (Event *)event;
    if (CUresult r = waited(e->context)) return r;
    return e->done >= e->recorded ? SUCCESS : NOT_READY;
}

CUresult cuEventSynchronize(void *event)
{
    std::unique_lock<std::mutex> lock(mu);
    Event *e = (Event *)event;
    unsigned long long generation = e->recorded;
    changed.wait(lock, [&] { return e->done >= generation || e->context->sticky; });
    return waited(e->context);
}

CUresult cuStreamWaitEvent(void *stream, void *event, unsigned)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    Event *e = (Event *)event;
    unsigned long long generation = e->recorded; /* its latest record now; none: no wait */
    enqueue((Stream *)stream, [=] {
        std::unique_lock<std::mutex> l(mu);
        changed.wait(l, [&] { return e->done >= generation; });
    });
    return SUCCESS;
}

// A cubin here is a shared object: its size from its ELF header (section
// headers come last), loaded from a file of a name never used before in the
// process (dlopen knows a library by its path, and one with C++'s unique
// symbols is never unloaded).
CUresult cuModuleLoadData(void **module, const void *image)
{
    static std::atomic<unsigned> loaded{0};
    Context *context;
    {
        std::lock_guard<std::mutex> lock(mu);
        if (CUresult r = context_state()) return r;
        context = current_context;
    }
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)image;
    if (std::memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_type != ET_DYN)
        return INVALID_IMAGE;
    size_t size = h->e_shoff + (size_t)h->e_shnum * h->e_shentsize;
    char path[96];
    std::snprintf(path, sizeof path, "/tmp/pe-emulated-cubin-%d-%u-XXXXXX", (int)getpid(), loaded++);
    int fd = mkstemp(path);
    if (fd < 0) return OUT_OF_MEMORY;
    bool written = write(fd, image, size) == (ssize_t)size;
    close(fd);
    void *lib = written ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    unlink(path); /* the mapping stays */
    if (!lib) return INVALID_IMAGE;
    Module *m = new Module{context, lib, nullptr, 0};
    *(void **)&m->launch = dlsym(lib, "pe_emul_launch_blocks");
    const unsigned long *args_size = (const unsigned long *)dlsym(lib, "pe_emul_args_size");
    if (!m->launch || !args_size) {
        dlclose(lib);
        delete m;
        return INVALID_IMAGE;
    }
    m->args_size = *args_size;
    *module = m;
    return SUCCESS;
}

CUresult cuModuleUnload(void *module)
{
    std::unique_lock<std::mutex> lock(mu);
    wait_all_idle(lock);
    Module *m = (Module *)module;
    dlclose(m->lib);
    delete m;
    return SUCCESS;
}

CUresult cuModuleGetFunction(void **fn, void *module, const char *name)
{
    Module *m = (Module *)module;
    void *sym = dlsym(m->lib, name);
    if (!sym) return NOT_FOUND;
    *fn = new Function{m, sym}; /* lives as long as the process: modules are few */
    return SUCCESS;
}

// Kernels take (long long n, pe_cuda_args a), launched as 1-D grids.
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    if (!f || gx == 0 || bx == 0 || gy != 1 || gz != 1 || by != 1 || bz != 1 || shared || extra || !params)
        return misuse(INVALID_VALUE);
    Context *context = current_context;
    if (fails_now("launch")) return context->reported = true, context->sticky = LAUNCH_FAILED;
    Function *fn = (Function *)f;
    if (fn->module->context != context) return misuse(INVALID_HANDLE); /* a function of another context's module */
    long long n = *(const long long *)params[0];
    auto args = std::make_shared<std::vector<char>>((const char *)params[1], (const char *)params[1] + fn->module->args_size);
    /* another device's memory among the arguments: the kernel faults (no
     * peer access here), as it would on a GPU */
    CUresult fault = fails_now("kernel") ? LAUNCH_FAILED : SUCCESS;
    for (size_t at = 0; at + 8 <= args->size() && !fault; at += 8) {
        CUdeviceptr word;
        std::memcpy(&word, args->data() + at, 8);
        int owner = device_of(word, 1);
        if (owner >= 0 && owner != context->device) fault = ILLEGAL_ADDRESS;
    }
    enqueue((Stream *)stream, [=] {
        {
            std::lock_guard<std::mutex> l(mu);
            if (context->sticky) return; /* the context is lost: nothing more runs */
            if (fault) {
                context->sticky = fault;
                return;
            }
            devices[context->device].kernels_run++;
        }
        fn->module->launch(fn->fn, n, args->data(), gx, bx);
    });
    return SUCCESS;
}

const char *error_name(CUresult r)
{
    switch (r) {
    case SUCCESS: return "CUDA_SUCCESS";
    case INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case NOT_READY: return "CUDA_ERROR_NOT_READY";
    case LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    case INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    default: return nullptr;
    }
}

CUresult cuGetErrorName(CUresult r, const char **name)
{
    *name = error_name(r);
    return *name ? SUCCESS : INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char **text)
{
    *text = r == LAUNCH_FAILED      ? "unspecified launch failure (emulated)"
            : r == ILLEGAL_ADDRESS ? "an illegal memory access was encountered (emulated)"
                                   : error_name(r);
    return *text ? SUCCESS : INVALID_VALUE;
}

CUresult cuDriverGetVersionImpl(int *version) { return *version = 13000, SUCCESS; }

struct Entry {
    const char *name;
    void *fn;
};
#define E(name) {#name, (void *)name}
const Entry entry_points[] = {
    {"cuDriverGetVersion", (void *)cuDriverGetVersionImpl},
    E(cuInit), E(cuDeviceGetCount), E(cuDeviceGet), E(cuDeviceGetName), E(cuDeviceTotalMem),
    E(cuDeviceGetAttribute), E(cuDevicePrimaryCtxRetain), E(cuDevicePrimaryCtxRelease), E(cuCtxSetCurrent),
    E(cuModuleLoadData), E(cuModuleUnload), E(cuModuleGetFunction), E(cuLaunchKernel), E(cuMemAlloc),
    E(cuMemFree), E(cuMemGetInfo), E(cuMemcpyHtoDAsync), E(cuMemcpyDtoHAsync), E(cuMemcpyDtoDAsync), E(cuMemcpyPeerAsync),
    E(cuMemHostAlloc), E(cuMemFreeHost), E(cuMemsetD8Async), E(cuStreamCreate), E(cuStreamDestroy),
    E(cuStreamSynchronize), E(cuStreamWaitEvent), E(cuEventCreate), E(cuEventRecord), E(cuEventDestroy),
    E(cuEventQuery), E(cuEventSynchronize),
    E(cuGetErrorName), E(cuGetErrorString),
};
#undef E

// What a test sets for its runtime: read when it retains the first context.
void read_test_settings()
{
    const char *m = std::getenv("PE_EMUL_CUDA_MEMORY"), *f = std::getenv("PE_EMUL_CUDA_FRAGMENTED");
    device_memory = m && *m ? std::strtoull(m, nullptr, 10) : 1ull << 30;
    fragmented = f && *f ? std::strtoull(f, nullptr, 10) : 0;
    failure = {};
    if (const char *f = std::getenv("PE_EMUL_CUDA_FAIL")) {
        const char *colon = std::strchr(f, ':');
        if (colon && (size_t)(colon - f) < sizeof failure.what) {
            std::memcpy(failure.what, f, (size_t)(colon - f));
            failure.at = std::strtol(colon + 1, nullptr, 10);
        }
    }
}

__attribute__((constructor)) void configure()
{
    if (const char *d = std::getenv("PE_EMUL_CUDA_DELAY_US")) delay_us = (unsigned)std::strtoul(d, nullptr, 10);
    if (const char *list = std::getenv("PE_EMUL_CUDA_DEVICES")) {
        n_devices = 0;
        for (const char *at = list; *at && n_devices < max_devices;) {
            char *end;
            long cc = std::strtol(at, &end, 10);
            if (end == at) break;
            devices[n_devices++].cc = (int)cc;
            at = *end == ',' ? end + 1 : end;
        }
        if (n_devices == 0) n_devices = 1; /* not a list: the default device */
    }
}

} // namespace

extern "C" {
CUresult cuDriverGetVersion(int *version) { return cuDriverGetVersionImpl(version); }

long pe_emul_cuda_misuses(void) { return misuses; }

int pe_emul_cuda_enqueue(void *stream, void (*fn)(void *), void *arg)
{
    std::lock_guard<std::mutex> lock(mu);
    if (!streams.count((Stream *)stream) || ((Stream *)stream)->context != current_context) return misuse(-1);
    if (CUresult r = told(current_context)) return r;
    enqueue((Stream *)stream, [=] { fn(arg); });
    return 0;
}

int pe_emul_cuda_check(void *stream, const void *p, size_t bytes)
{
    std::lock_guard<std::mutex> lock(mu);
    if (!streams.count((Stream *)stream) || !is_device((CUdeviceptr)(uintptr_t)p, bytes ? bytes : 1, stream))
        return misuse(-1);
    return 0;
}

long pe_emul_cuda_kernels_run(int device)
{
    std::lock_guard<std::mutex> lock(mu);
    return is_ordinal(device) ? devices[device].kernels_run : -1;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **fn, int version, unsigned long long flags, int *status)
{
    (void)version, (void)flags;
    for (const Entry &e : entry_points)
        if (std::strcmp(e.name, symbol) == 0) {
            *fn = e.fn;
            if (status) *status = 0;
            return SUCCESS;
        }
    *fn = nullptr;
    if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    return NOT_FOUND;
}
}
