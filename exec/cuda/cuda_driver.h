/* cuda_driver.h — the CUDA Driver API, loaded at run time: libcuda.so.1 by
 * dlopen and every entry point through cuGetProcAddress, so that libpe links
 * and runs on machines without a driver or a GPU.  Owns discovery (devices,
 * compute capability, memory, SMs) and the reason there is no usable GPU. */
#ifndef PE_EXEC_CUDA_DRIVER_H
#define PE_EXEC_CUDA_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The few CUDA types PE uses, ABI-identical to cuda.h (not needed to build). */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define PE_CUDA_MAX_DEVICES 16 /* PE uses the first 16 usable GPUs */

#define PE_CUDA_SUCCESS 0
#define PE_CUDA_ERROR_OUT_OF_MEMORY 2
#define PE_CUDA_ERROR_INSUFFICIENT_DRIVER 35
#define PE_CUDA_ERROR_STUB_LIBRARY 34
#define PE_CUDA_ERROR_NO_DEVICE 100
#define PE_CUDA_ERROR_NOT_READY 600
#define PE_CUDA_ERROR_NO_BINARY_FOR_GPU 209

/* Entry points, resolved for the CUDA 12.0 ABI (the _v2 variants where cuda.h
 * maps names to them). */
typedef struct {
    CUresult (*cuInit)(unsigned flags);
    CUresult (*cuDriverGetVersion)(int *version);
    CUresult (*cuDeviceGetCount)(int *count);
    CUresult (*cuDeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice dev);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev);
    CUresult (*cuCtxSetCurrent)(CUcontext ctx);
    CUresult (*cuModuleLoadData)(CUmodule *module, const void *image);
    CUresult (*cuModuleUnload)(CUmodule module);
    CUresult (*cuModuleGetFunction)(CUfunction *fn, CUmodule module, const char *name);
    CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared_bytes, CUstream stream, void **params, void **extra);
    CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);
    CUresult (*cuMemFree)(CUdeviceptr ptr);
    CUresult (*cuMemGetInfo)(size_t *free_bytes, size_t *total_bytes);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream);
    CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
    CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,
                                  CUstream stream);
    CUresult (*cuMemHostAlloc)(void **ptr, size_t bytes, unsigned flags);
    CUresult (*cuMemFreeHost)(void *ptr);
    CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t bytes, CUstream stream);
    CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
    CUresult (*cuStreamDestroy)(CUstream stream);
    CUresult (*cuStreamSynchronize)(CUstream stream);
    CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
    CUresult (*cuEventCreate)(CUevent *event, unsigned flags);
    CUresult (*cuEventRecord)(CUevent event, CUstream stream);
    CUresult (*cuEventDestroy)(CUevent event);
    CUresult (*cuEventQuery)(CUevent event);
    CUresult (*cuEventSynchronize)(CUevent event);
    CUresult (*cuGetErrorName)(CUresult error, const char **name);
    CUresult (*cuGetErrorString)(CUresult error, const char **text);
} pe_cuda_api;

typedef struct {
    CUdevice handle;
    char name[128];
    int cc_major, cc_minor;
    int sms;
    uint64_t memory_bytes;
    /* for the placement cost model (jit/sched/placement.c); 0 where the driver
     * does not say */
    int f64_ratio;          /* single-precision throughput over double: at most 4 on data-centre parts */
    int clock_khz;          /* SM clock */
    int memory_clock_khz;   /* peak memory clock */
    int memory_bus_bits;    /* global memory bus width */
} pe_cuda_device;

/* Loads the driver and lists the devices, once per process (thread-safe).
 * NULL when there is no usable GPU; *reason then says why (missing driver,
 * stub library, no device, driver too old, compute capability < 7.5, ...).
 * PE_CUDA_DRIVER=<path> loads another library (tests). */
const pe_cuda_api *pe_cuda_load(const char **reason);
int pe_cuda_device_count(void);
const pe_cuda_device *pe_cuda_device_at(int i);
/* "CUDA_ERROR_OUT_OF_MEMORY: out of memory" for a result code. */
void pe_cuda_describe(CUresult r, char *out, size_t n);

#endif
