/* cuda_target.c — the GPU's target (jit/kir/target.h): the kernel IR as CUDA
 * C (cuda_emit.c) through NVRTC (nvrtc.c) into a cubin per architecture,
 * linked and run by the CUDA executor (cuda.c). */
#include <stdio.h>
#include <stdlib.h>

#include "cuda.h"
#include "cuda_emit.h"
#include "nvrtc.h"
#include "../../jit/kir/codegen.h"
#include "../../jit/kir/target.h"

static void cuda_disk_tag(const char *arch, char *out, size_t n)
{
    int perturbed = pe_codegen_perturbed_op(); /* a test's wrong kernels (codegen.c): a tag of their own */
    if (perturbed >= 0) snprintf(out, n, "%s-nvrtc%d-%s", arch, pe_nvrtc_version(), pe_op_table[perturbed].name);
    else snprintf(out, n, "%s-nvrtc%d", arch, pe_nvrtc_version());
}

static bool cuda_usable(const char **why) { return pe_nvrtc_available(why); }

/* arch: "sm_90" */
static bool cuda_compile(const kir_kernel *const *kernels, size_t n, const char *arch, const char *path,
                         pe_artifact *a, char *err, size_t n_err)
{
    (void)path;
    int sm = atoi(arch + 3);
    char *source = pe_cuda_emit(kernels, n);
    if (!source) {
        snprintf(err, n_err, "out of memory for the CUDA source");
        return false;
    }
    void *cubin = NULL;
    size_t size = 0;
    bool ok = pe_nvrtc_compile(source, "pe_kernels.cu", sm, false, &cubin, &size, err, n_err);
    free(source);
    if (ok) *a = (pe_artifact){.bytes = cubin, .size = size};
    return ok;
}

const pe_target pe_cuda_target = {
    .index = PE_TARGET_DEVICE,
    .name = "the GPU",
    .compiler = "NVRTC",
    .rules = &pe_cuda_fusion_rules,
    .executor = &pe_cuda_executor,
    .code_in_files = false,
    .one_place = false,
    .retry_alone = false,
    .disk_tag = cuda_disk_tag,
    .usable = cuda_usable,
    .compile = cuda_compile,
};
