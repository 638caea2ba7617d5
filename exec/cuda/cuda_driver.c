/* cuda_driver.c — loads the CUDA driver at run time and discovers the GPUs
 * (patent 7.2: the processing elements found at start-up).  Only
 * cuGetProcAddress and cuDriverGetVersion come from dlsym; every other entry
 * point is asked of cuGetProcAddress for the CUDA 12.0 ABI, which hands out
 * the right versioned function (cuMemAlloc_v2, ...) without us repeating
 * cuda.h's #define renaming.  Anything that makes the GPU unusable is a
 * reason string, never an error: PE then computes on the CPU. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"

#define ABI_VERSION 12000 /* CUDA 12.0: every entry point below exists in it */

enum { ATTR_CLOCK_RATE = 13, ATTR_SMS = 16, ATTR_MEMORY_CLOCK_RATE = 36, ATTR_MEMORY_BUS_WIDTH = 37 };
enum { ATTR_CC_MAJOR = 75, ATTR_CC_MINOR = 76, ATTR_SINGLE_TO_DOUBLE_RATIO = 87 };

/* A positive attribute, or 0 where the driver does not say. */
static int attribute_or_0(const pe_cuda_api *cu, int attribute, CUdevice dev)
{
    int value = 0;
    return cu->cuDeviceGetAttribute(&value, attribute, dev) == PE_CUDA_SUCCESS && value > 0 ? value : 0;
}

static struct {
    pthread_once_t once;
    pe_cuda_api api;
    bool usable;
    char reason[256];
    int n_devices;
    pe_cuda_device devices[PE_CUDA_MAX_DEVICES];
} drv = {.once = PTHREAD_ONCE_INIT};

void pe_cuda_describe(CUresult r, char *out, size_t n)
{
    const char *name = NULL, *text = NULL;
    if (drv.api.cuGetErrorName) drv.api.cuGetErrorName(r, &name);
    if (drv.api.cuGetErrorString) drv.api.cuGetErrorString(r, &text);
    if (name) snprintf(out, n, "%s: %s", name, text ? text : "");
    else snprintf(out, n, "CUDA error %d", r);
}

/* Why a failing cuInit/cuDeviceGetCount means "no GPU", in words. */
static void no_gpu(CUresult r, const char *what)
{
    char d[160];
    pe_cuda_describe(r, d, sizeof d);
    switch (r) {
    case PE_CUDA_ERROR_STUB_LIBRARY:
        snprintf(drv.reason, sizeof drv.reason, "the CUDA driver is the toolkit's stub library, not a real driver (%s)", d);
        break;
    case PE_CUDA_ERROR_NO_DEVICE:
        snprintf(drv.reason, sizeof drv.reason, "no CUDA device (%s)", d);
        break;
    case PE_CUDA_ERROR_INSUFFICIENT_DRIVER:
        snprintf(drv.reason, sizeof drv.reason, "the CUDA driver is older than the runtime needs (%s)", d);
        break;
    default:
        snprintf(drv.reason, sizeof drv.reason, "%s failed (%s)", what, d);
    }
}

typedef CUresult (*get_proc_fn)(const char *symbol, void **pfn, int version, unsigned long long flags, int *status);

static bool resolve(get_proc_fn get_proc, const char *name, void **slot)
{
    int status = 0;
    *slot = NULL;
    if (get_proc(name, slot, ABI_VERSION, 0, &status) != PE_CUDA_SUCCESS || !*slot || status != 0) {
        snprintf(drv.reason, sizeof drv.reason, "the CUDA driver has no %s for CUDA 12.0", name);
        return false;
    }
    return true;
}

static void load_once(void)
{
    const char *path = getenv("PE_CUDA_DRIVER");
    if (!path || !*path) path = "libcuda.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(drv.reason, sizeof drv.reason, "no CUDA driver (%s: %s)", path, e ? e : "cannot load");
        return;
    }
    /* never dlclose: the driver keeps threads and atexit handlers */
    CUresult (*driver_version)(int *) = (CUresult(*)(int *))dlsym(lib, "cuDriverGetVersion");
    get_proc_fn get_proc = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!driver_version || !get_proc) {
        snprintf(drv.reason, sizeof drv.reason, "%s is not a CUDA 12+ driver (no cuGetProcAddress_v2)", path);
        return;
    }
    int version = 0;
    CUresult r = driver_version(&version);
    if (r == PE_CUDA_ERROR_STUB_LIBRARY) {
        snprintf(drv.reason, sizeof drv.reason, "%s is the CUDA toolkit's stub library, not a driver", path);
        return;
    }
    if (r != PE_CUDA_SUCCESS) {
        snprintf(drv.reason, sizeof drv.reason, "cuDriverGetVersion failed (CUDA error %d)", r);
        return;
    }
    if (version < ABI_VERSION) {
        snprintf(drv.reason, sizeof drv.reason, "the CUDA driver supports CUDA %d.%d; PE needs 12.0 or later",
                 version / 1000, version % 1000 / 10);
        return;
    }
#define RESOLVE(name) \
    if (!resolve(get_proc, #name, (void **)&drv.api.name)) return;
    RESOLVE(cuGetErrorName) RESOLVE(cuGetErrorString) RESOLVE(cuInit) RESOLVE(cuDriverGetVersion)
    RESOLVE(cuDeviceGetCount) RESOLVE(cuDeviceGet) RESOLVE(cuDeviceGetName) RESOLVE(cuDeviceTotalMem)
    RESOLVE(cuDeviceGetAttribute) RESOLVE(cuDevicePrimaryCtxRetain) RESOLVE(cuDevicePrimaryCtxRelease)
    RESOLVE(cuCtxSetCurrent) RESOLVE(cuModuleLoadData) RESOLVE(cuModuleUnload) RESOLVE(cuModuleGetFunction)
    RESOLVE(cuLaunchKernel) RESOLVE(cuMemAlloc) RESOLVE(cuMemFree) RESOLVE(cuMemGetInfo)
    RESOLVE(cuMemcpyHtoDAsync) RESOLVE(cuMemcpyDtoHAsync) RESOLVE(cuMemcpyDtoDAsync) RESOLVE(cuMemcpyPeerAsync)
    RESOLVE(cuMemHostAlloc) RESOLVE(cuMemFreeHost) RESOLVE(cuMemsetD8Async) RESOLVE(cuStreamCreate)
    RESOLVE(cuStreamDestroy) RESOLVE(cuStreamSynchronize) RESOLVE(cuStreamWaitEvent)
    RESOLVE(cuEventCreate) RESOLVE(cuEventRecord) RESOLVE(cuEventDestroy)
    RESOLVE(cuEventQuery) RESOLVE(cuEventSynchronize)
#undef RESOLVE
    const pe_cuda_api *cu = &drv.api;
    r = cu->cuInit(0);
    if (r != PE_CUDA_SUCCESS) { no_gpu(r, "cuInit"); return; }
    int count = 0;
    r = cu->cuDeviceGetCount(&count);
    if (r != PE_CUDA_SUCCESS) { no_gpu(r, "cuDeviceGetCount"); return; }
    if (count == 0) { no_gpu(PE_CUDA_ERROR_NO_DEVICE, "cuDeviceGetCount"); return; }
    char skipped[256] = "";
    for (int i = 0; i < count && drv.n_devices < PE_CUDA_MAX_DEVICES; i++) {
        pe_cuda_device d = {0};
        size_t mem = 0;
        if (cu->cuDeviceGet(&d.handle, i) != PE_CUDA_SUCCESS ||
            cu->cuDeviceGetName(d.name, sizeof d.name, d.handle) != PE_CUDA_SUCCESS ||
            cu->cuDeviceTotalMem(&mem, d.handle) != PE_CUDA_SUCCESS ||
            cu->cuDeviceGetAttribute(&d.cc_major, ATTR_CC_MAJOR, d.handle) != PE_CUDA_SUCCESS ||
            cu->cuDeviceGetAttribute(&d.cc_minor, ATTR_CC_MINOR, d.handle) != PE_CUDA_SUCCESS ||
            cu->cuDeviceGetAttribute(&d.sms, ATTR_SMS, d.handle) != PE_CUDA_SUCCESS)
            continue;
        /* NVRTC 13 generates code for compute capability 7.5 and later */
        if (d.cc_major * 10 + d.cc_minor < 75) {
            snprintf(skipped, sizeof skipped, "%.100s has compute capability %d.%d (< 7.5)", d.name, d.cc_major, d.cc_minor);
            continue;
        }
        d.memory_bytes = mem;
        /* speeds the cost model weighs */
        d.f64_ratio = attribute_or_0(cu, ATTR_SINGLE_TO_DOUBLE_RATIO, d.handle);
        d.clock_khz = attribute_or_0(cu, ATTR_CLOCK_RATE, d.handle);
        d.memory_clock_khz = attribute_or_0(cu, ATTR_MEMORY_CLOCK_RATE, d.handle);
        d.memory_bus_bits = attribute_or_0(cu, ATTR_MEMORY_BUS_WIDTH, d.handle);
        drv.devices[drv.n_devices++] = d;
    }
    if (drv.n_devices == 0) {
        snprintf(drv.reason, sizeof drv.reason, "no usable CUDA device%s%s", *skipped ? ": " : "", skipped);
        return;
    }
    drv.usable = true;
}

const pe_cuda_api *pe_cuda_load(const char **reason)
{
    pthread_once(&drv.once, load_once);
    if (reason) *reason = drv.usable ? NULL : drv.reason;
    return drv.usable ? &drv.api : NULL;
}

int pe_cuda_device_count(void) { return pe_cuda_load(NULL) ? drv.n_devices : 0; }

const pe_cuda_device *pe_cuda_device_at(int i)
{
    if (!pe_cuda_load(NULL) || i < 0 || i >= drv.n_devices) return NULL;
    return &drv.devices[i];
}
