/* backends.c — the registry (backends.h): the CPU as the host's backend,
 * CUDA as the devices'.  A new device backend is a folder beside exec/cuda
 * and its row here. */
#include <stdio.h>

#include "backends.h"
#include "cpu/cpu.h"
#include "cpu/device.h"
#include "cuda/cuda.h"

static int one_host(void) { return 1; }

/* pe_detect_cpu reads /proc and /sys: once.  The level is the one the
 * generator targets (PE_CPU_ISA, read at each pe_init, may cap it). */
static void host_info(int device, pe_device_info *out)
{
    static pe_device_info info;
    static bool known;
    (void)device;
    if (!known) pe_detect_cpu(&info), known = true;
    *out = info;
    snprintf(out->arch, sizeof out->arch, "%s", pe_cpu_isa_capped(info.arch, false));
}

static bool host_serves(int device) { return device == 0; }

const pe_backend pe_host_backend = {
    .name = "CPU",
    .target = &pe_cpu_target,
    .executor = &pe_cpu_executor,
    .device_count = one_host,
    .device_info = host_info,
    .start = pe_cpu_executor_start,
    .stop = pe_cpu_executor_stop,
    .serves = host_serves,
};

const pe_backend pe_device_backend = {
    .name = "CUDA",
    .target = &pe_cuda_target,
    .executor = &pe_cuda_executor,
    .device_count = pe_cuda_device_count,
    .device_info = pe_cuda_device_info,
    .start = pe_cuda_executor_start,
    .stop = pe_cuda_executor_stop,
    .serves = pe_cuda_executor_serves,
};
