/* cuda_host_run.h — the CUDA generator's kernels built and run on the host
 * (no GPU, no NVRTC): the host's C++ compiler builds the emitted source
 * with tests/cuda_on_host.hpp standing in for CUDA (device library = libm).
 * Shared by test_cuda_on_host.c and test_mpfr.c; the includer's target
 * defines PE_TESTS_DIR. */
#ifndef PE_TESTS_CUDA_HOST_RUN_H
#define PE_TESTS_CUDA_HOST_RUN_H

#include <dlfcn.h>

#include "cuda_test_kernels.h"

/* The kernels of src built as a shared library by the host's C++ compiler
 * (alignment checked: a misaligned vector access traps as on a GPU). */
static void *host_build(const char *src)
{
    char dir[] = "/tmp/pe-cuda-host-XXXXXX", path[128], cmd[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/k.cpp", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#include \"%s/cuda_on_host.hpp\"\n%s\nPE_EMUL_ENTRY\n", PE_TESTS_DIR, src);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "c++ -std=c++20 -O1 -pthread -shared -fPIC -ffp-contract=off -fsanitize=alignment "
             "-fsanitize-undefined-trap-on-error -w -o %s/k.so %s",
             dir, path);
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "%s: exit %d\n", cmd, rc);
    assert_int_equal(rc, 0);
    snprintf(path, sizeof path, "%s/k.so", dir);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) fprintf(stderr, "dlopen: %s\n", dlerror());
    assert_non_null(lib);
    tu_remove_dir(dir); /* the mapping stays */
    return lib;
}

typedef void (*kernel_fn)(long long n, pe_cuda_args a);
typedef void (*thread_fn)(unsigned block, unsigned thread, unsigned grid, unsigned block_size);

/* A launch of grid x block emulated threads, one after the other (an
 * element-wise kernel's threads are independent). */
static void host_launch(void *lib, const kir_kernel *k, long long n, pe_cuda_args *a, unsigned grid, unsigned block)
{
    char name[48];
    test_kernel_name(k, name, sizeof name);
    kernel_fn fn = (kernel_fn)dlsym(lib, name);
    thread_fn at = (thread_fn)dlsym(lib, "pe_emul_thread");
    assert_non_null(fn);
    assert_non_null(at);
    for (unsigned b = 0; b < grid; b++)
        for (unsigned t = 0; t < block; t++) at(b, t, grid, block), fn(n, *a);
}

#endif
