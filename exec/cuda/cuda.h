/* cuda.h — the CUDA executor (cuda.c and the files cuda_gpu.h lists): what
 * the rest of the runtime calls besides the executor interface. */
#ifndef PE_CUDA_CUDA_H
#define PE_CUDA_CUDA_H

#include "../base/executor.h"

/* The CUDA executor (cuda.c; cuda_gpu.h lists its files): its places are
 * the GPUs in use.  Start fails quietly (no GPU). */
extern pe_executor pe_cuda_executor;
bool pe_cuda_executor_start(int ordinal);
void pe_cuda_executor_stop(void);
/* True if the executor runs work on CUDA device `ordinal`. */
bool pe_cuda_executor_serves(int ordinal);
/* Copies a GPU result straight into dst (no host copy kept: pe_read);
 * false when it cannot, p is then INVALID with the reason. */
bool pe_port_copy_out(pe_port *p, void *dst);

#endif
