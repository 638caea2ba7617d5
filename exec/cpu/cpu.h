/* cpu.h — the CPU executor (cpu.c): links the CPU target's shared objects
 * and runs program sequences on the thread pool. */
#ifndef PE_CPU_CPU_H
#define PE_CPU_CPU_H

#include "../base/executor.h"
#include "../../jit/kir/target.h"

/* The CPU's target: libgccjit into a shared object (cpu_target.c). */
extern const pe_target pe_cpu_target;

extern pe_executor pe_cpu_executor;

/* The CPU executor's life: its thread pool. */
bool pe_cpu_executor_start(int threads);
void pe_cpu_executor_stop(void);
/* Loads a shared object from memory (bytes the disk cache verified, or a
 * compiler's file read once), so that what runs is what was checked: the
 * dlopen handle, or NULL with the reason in err. */
void *pe_cpu_dlopen_bytes(const void *bytes, size_t size, char *err, size_t n_err);
/* The placement's figures for the CPU on `threads` threads. */
pe_place_speed pe_cpu_place_speed(int threads);
/* The CPU's ISA level ("x86-64-v3"): what its kernels are compiled for. */
const char *pe_cpu_isa(void);

/* Combines a reduction kernel's per-chunk (high, low) partials in chunk
 * order (kir.h; partials.c): sums, means, norms, extremes; the host's reference for the GPU's combiner, which must
 * agree with it bit for bit. */
double pe_combine_partials(pe_op op, const double *partials, int64_t n_chunks, int64_t numel);
/* Any full reduction's value from its kernel's partials (partials.c): op
 * computed in ctype, numel elements, kir_partial_width(op, ctype) doubles a
 * chunk; the float sums, means, norms and extremes as pe_combine_partials. */
double pe_combine_reduction(pe_op op, pe_dtype ctype, const double *partials, int64_t n_chunks, int64_t numel);
/* Writes a reduction's value into its (host, one-element) buffer. */
void pe_store_scalar(pe_port *p, double v);

#endif
