/* cuda.h — the CUDA executor (cuda.c and the files cuda_gpu.h lists): what
 * the rest of the runtime calls besides the executor interface. */
#ifndef PE_CUDA_CUDA_H
#define PE_CUDA_CUDA_H

#include "../base/executor.h"
#include "cuda_driver.h"
#include "../../jit/kir/target.h"

/* The GPU's target: CUDA C through NVRTC into cubins (cuda_target.c). */
extern const pe_target pe_cuda_target;

/* The CUDA executor (cuda.c; cuda_gpu.h lists its files): its places are
 * the GPUs in use.  Start fails quietly (no GPU). */
extern pe_executor pe_cuda_executor;
bool pe_cuda_executor_start(int ordinal);
void pe_cuda_executor_stop(void);
/* True if the executor runs work on CUDA device `ordinal`. */
bool pe_cuda_executor_serves(int ordinal);
/* What pe_device_info reports of CUDA device `ordinal`. */
void pe_cuda_device_info(int ordinal, pe_device_info *out);
/* The placement's figures for a GPU, from its attributes. */
pe_place_speed pe_cuda_place_speed(const pe_cuda_device *d);
/* Copies a GPU result straight into dst (no host copy kept: pe_read);
 * false when it cannot, p is then INVALID with the reason. */
bool pe_port_copy_out(pe_port *p, void *dst);

#endif
