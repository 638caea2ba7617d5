// cuda_driver_on_host.cpp — the part of the CUDA Driver API that PE uses,
// emulated on the host, so that the CUDA executor (exec/cuda.c) runs and is
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
// - a failed kernel loses the context: every later call returns the error.
//
// And what it adds for tests:
// - PE_EMUL_CUDA_DELAY_US=N: each stream operation starts after a random
//   pause of up to N microseconds, so that a missing wait shows as a wrong
//   value rather than passing by luck of timing;
// - PE_EMUL_CUDA_FAIL=what:N (read when the primary context is made): the
//   Nth call of a kind fails — `launch`
//   (cuLaunchKernel returns CUDA_ERROR_LAUNCH_FAILED), `kernel` (the Nth
//   kernel fails as it runs, reported by the calls after it, as a fault on a
//   GPU is), `alloc` (cuMemAlloc runs out of memory once);
// - PE_EMUL_CUDA_MEMORY=bytes: the device's memory (1 GiB unless set).
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
    LAUNCH_FAILED = 719,
};

namespace {

// never destroyed: stream threads may still wait on them at exit
std::mutex &mu = *new std::mutex; // all state below, events included
std::condition_variable &changed = *new std::condition_variable;
CUresult sticky = SUCCESS; // a lost context
std::map<CUdeviceptr, size_t> allocations;
std::map<void *, size_t> pinned; /* cuMemHostAlloc's, with their sizes */
size_t device_memory = 1ull << 30, allocated = 0;
unsigned delay_us = 0;
struct {
    char what[16];
    long at, seen;
} failure;

struct Event {
    unsigned long long recorded = 0, done = 0;
};

struct Stream {
    std::deque<std::function<void()>> work;
    bool running = false, stop = false;
    std::thread thread;
};

struct Module {
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

bool is_device(CUdeviceptr p, size_t bytes)
{
    auto it = allocations.upper_bound(p);
    if (it == allocations.begin()) return false;
    --it;
    return p >= it->first && p + bytes <= it->first + it->second;
}

// ----------------------------------------------------------- entry points

CUresult cuInit(unsigned) { return SUCCESS; }
CUresult cuDeviceGetCount(int *n) { return *n = 1, SUCCESS; }
CUresult cuDeviceGet(int *dev, int ordinal) { return ordinal == 0 ? (*dev = 0, SUCCESS) : INVALID_VALUE; }
CUresult cuDeviceGetName(char *name, int len, int)
{
    std::snprintf(name, (size_t)len, "PE host emulation of a CUDA device");
    return SUCCESS;
}
CUresult cuDeviceTotalMem(size_t *bytes, int) { return *bytes = device_memory, SUCCESS; }
CUresult cuDeviceGetAttribute(int *value, int attribute, int)
{
    switch (attribute) {
    case 16: *value = 2; return SUCCESS;  /* SMs: small grids, few host threads */
    case 75: *value = 9; return SUCCESS;  /* compute capability 9.0 */
    case 76: *value = 0; return SUCCESS;
    case 87: *value = 2; return SUCCESS;  /* single to double ratio: fast f64 */
    default: return INVALID_VALUE;
    }
}
void read_failure_plan();

// A retain after the last release makes a new context: the lost one's error
// goes, and PE_EMUL_CUDA_FAIL is read again (a test's next runtime).
int primary_context, retained;
CUresult cuDevicePrimaryCtxRetain(void **ctx, int)
{
    std::lock_guard<std::mutex> lock(mu);
    if (retained++ == 0) sticky = SUCCESS, read_failure_plan();
    *ctx = &primary_context;
    return SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(int)
{
    std::lock_guard<std::mutex> lock(mu);
    if (retained == 0) return INVALID_VALUE;
    retained--;
    return SUCCESS;
}
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &primary_context ? sticky : INVALID_HANDLE; }

CUresult cuMemAlloc(CUdeviceptr *ptr, size_t bytes)
{
    std::lock_guard<std::mutex> lock(mu);
    if (sticky) return sticky;
    if (bytes == 0) return INVALID_VALUE;
    if (allocated + bytes > device_memory || fails_now("alloc")) return OUT_OF_MEMORY;
    void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!p) return OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)(uintptr_t)p;
    allocations[*ptr] = bytes;
    allocated += bytes;
    return SUCCESS;
}

// Synchronous, as on a GPU: the memory's last users finish first.
CUresult cuMemFree(CUdeviceptr ptr)
{
    std::unique_lock<std::mutex> lock(mu);
    auto it = allocations.find(ptr);
    if (it == allocations.end()) return INVALID_VALUE;
    wait_all_idle(lock);
    allocated -= it->second;
    allocations.erase(it);
    std::free((void *)(uintptr_t)ptr);
    return sticky;
}

CUresult cuMemGetInfo(size_t *free_bytes, size_t *total)
{
    std::lock_guard<std::mutex> lock(mu);
    *free_bytes = device_memory - allocated, *total = device_memory;
    return sticky;
}

CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned)
{
    std::lock_guard<std::mutex> lock(mu);
    if (!(*ptr = std::malloc(bytes ? bytes : 1))) return OUT_OF_MEMORY;
    pinned[*ptr] = bytes;
    return sticky;
}

CUresult cuMemFreeHost(void *ptr)
{
    std::unique_lock<std::mutex> lock(mu);
    if (!pinned.erase(ptr)) return INVALID_VALUE;
    wait_all_idle(lock);
    std::free(ptr);
    return SUCCESS;
}

CUresult check_stream(void *stream)
{
    return stream && streams.count((Stream *)stream) ? sticky : INVALID_HANDLE;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes, void *stream)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    if (!is_device(dst, bytes)) return INVALID_VALUE;
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
    if (!is_device(src, bytes)) return INVALID_VALUE;
    enqueue((Stream *)stream, [=] { std::memcpy(dst, (const void *)(uintptr_t)src, bytes); });
    if (!is_pinned(dst, bytes)) wait_idle(lock, (Stream *)stream); /* pageable: done on return */
    return sticky;
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *stream)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    if (!is_device(dst, bytes) || !is_device(src, bytes)) return INVALID_VALUE;
    enqueue((Stream *)stream, [=] { std::memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes); });
    return SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes, void *stream)
{
    std::lock_guard<std::mutex> lock(mu);
    if (CUresult r = check_stream(stream)) return r;
    if (!is_device(dst, bytes)) return INVALID_VALUE;
    enqueue((Stream *)stream, [=] { std::memset((void *)(uintptr_t)dst, value, bytes); });
    return SUCCESS;
}

CUresult cuStreamCreate(void **stream, unsigned)
{
    std::lock_guard<std::mutex> lock(mu);
    Stream *s = new Stream;
    s->thread = std::thread(stream_main, s);
    streams.insert(s);
    *stream = s;
    return sticky;
}

CUresult cuStreamDestroy(void *stream)
{
    std::unique_lock<std::mutex> lock(mu);
    if (!stream || !streams.count((Stream *)stream)) return INVALID_HANDLE;
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
    if (!stream || !streams.count((Stream *)stream)) return INVALID_HANDLE;
    wait_idle(lock, (Stream *)stream);
    return sticky;
}

CUresult cuEventCreate(void **event, unsigned)
{
    *event = new Event;
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
    if (sticky) return sticky;
    return e->done >= e->recorded ? SUCCESS : NOT_READY;
}

CUresult cuEventSynchronize(void *event)
{
    std::unique_lock<std::mutex> lock(mu);
    Event *e = (Event *)event;
    unsigned long long generation = e->recorded;
    changed.wait(lock, [&] { return e->done >= generation || sticky; });
    return sticky;
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
    Module *m = new Module{lib, nullptr, 0};
    *(void **)&m->launch = dlsym(lib, "pe_emul_launch_blocks");
    const unsigned long *args_size = (const unsigned long *)dlsym(lib, "pe_emul_args_size");
    if (!m->launch || !args_size) {
        dlclose(lib);
        delete m;
        return INVALID_IMAGE;
    }
    m->args_size = *args_size;
    *module = m;
    return sticky;
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
        return INVALID_VALUE;
    if (fails_now("launch")) return sticky = LAUNCH_FAILED;
    Function *fn = (Function *)f;
    long long n = *(const long long *)params[0];
    auto args = std::make_shared<std::vector<char>>((const char *)params[1], (const char *)params[1] + fn->module->args_size);
    bool fault = fails_now("kernel");
    enqueue((Stream *)stream, [=] {
        {
            std::lock_guard<std::mutex> l(mu);
            if (sticky) return; /* the context is lost: nothing more runs */
            if (fault) {
                sticky = LAUNCH_FAILED;
                return;
            }
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
    *text = r == LAUNCH_FAILED ? "unspecified launch failure (emulated)" : error_name(r);
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
    E(cuMemFree), E(cuMemGetInfo), E(cuMemcpyHtoDAsync), E(cuMemcpyDtoHAsync), E(cuMemcpyDtoDAsync),
    E(cuMemHostAlloc), E(cuMemFreeHost), E(cuMemsetD8Async), E(cuStreamCreate), E(cuStreamDestroy),
    E(cuStreamSynchronize), E(cuStreamWaitEvent), E(cuEventCreate), E(cuEventRecord), E(cuEventDestroy),
    E(cuEventQuery), E(cuEventSynchronize),
    E(cuGetErrorName), E(cuGetErrorString),
};
#undef E

void read_failure_plan()
{
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
    if (const char *m = std::getenv("PE_EMUL_CUDA_MEMORY")) device_memory = std::strtoull(m, nullptr, 10);
    if (const char *d = std::getenv("PE_EMUL_CUDA_DELAY_US")) delay_us = (unsigned)std::strtoul(d, nullptr, 10);
}

} // namespace

extern "C" {
CUresult cuDriverGetVersion(int *version) { return cuDriverGetVersionImpl(version); }

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
