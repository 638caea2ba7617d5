/* emul_checks.h — what a test can ask the emulated CUDA driver
 * (tests/emul/cuda_driver_on_host.cpp) when it runs on it: kernels run per
 * device, and calls PE should never make (a wrong context, handle or
 * pointer; PE ignores some calls' results, so a misuse could pass unseen).
 * On a real driver both answer -1. */
#ifndef PE_TESTS_EMUL_CHECKS_H
#define PE_TESTS_EMUL_CHECKS_H

#include <dlfcn.h>
#include <stdlib.h>

static inline void *tu_emul_symbol(const char *name)
{
    const char *driver = getenv("PE_CUDA_DRIVER");
    void *lib = driver && *driver ? dlopen(driver, RTLD_NOW | RTLD_NOLOAD) : NULL;
    return lib ? dlsym(lib, name) : NULL;
}

static inline long tu_emul_kernels_run(int device)
{
    long (*fn)(int) = (long (*)(int))tu_emul_symbol("pe_emul_cuda_kernels_run");
    return fn ? fn(device) : -1;
}

static inline long tu_emul_misuses(void)
{
    long (*fn)(void) = (long (*)(void))tu_emul_symbol("pe_emul_cuda_misuses");
    return fn ? fn() : -1;
}

#endif
