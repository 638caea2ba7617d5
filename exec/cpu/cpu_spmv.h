/* cpu_spmv.h — pe_spmv's row loops generated through libgccjit (cpu_spmv.c):
 * one function per value dtype, the CPU kernels' ABI (pe_range_fn) with
 * the operands intrinsics.h lays out (PE_SPMV_*), which
 * exec/intrinsics/sparse.c runs on PE's pool. */
#ifndef PE_CPU_SPMV_H
#define PE_CPU_SPMV_H

#include <stdbool.h>
#include <stddef.h>

#include "../../exec/intrinsics/intrinsics.h" /* the ABI: pe_range_fn, PE_SPMV_* */

/* The dtypes it generates a loop for, and that loop's exported name. */
bool pe_gccjit_spmv_dtype(pe_dtype t);
const char *pe_gccjit_spmv_name(pe_dtype t);

/* Compiles every dtype's loop into one shared object at `so_path` (one
 * compilation: gcc's fixed cost paid once); false with the compiler's
 * message in err. */
bool pe_gccjit_spmv_compile(const char *isa, const char *so_path, char *err, size_t err_size);

#endif
