/* aot.h — ahead-of-time compilation of the op lists of closed regions that
 * pecc's static IR describes: speculative batches built from the IR at
 * start-up (aot_speculate.c), their kernels compiled on a background thread
 * into the program cache and the disk cache (aot.c), and what the CPU
 * provisioning asks of it. */
#ifndef PE_JIT_AOT_H
#define PE_JIT_AOT_H

#include <stdbool.h>

#include "../kir/kir.h"
#include "../proggen/proggen.h"
#include "../../irformat/static_ir.h"

/* ------------------------------------------------------ aot_speculate.c */

/* Receives each kernel a speculative batch's program sequence holds. */
typedef void (*pe_aot_kernel_sink)(const kir_kernel *k, void *ctx);
/* Builds a speculative batch for each closed region of the unit (loop
 * bodies, then closed function bodies), runs the program generator on it
 * with the executor's reduction fusion rule and hands its kernels to sink;
 * every stand-in port is gone again when it returns.  Under the runtime lock. */
void pe_aot_speculate_unit(const pe_ir_unit *u, const pe_fusion_rules *rules, pe_aot_kernel_sink sink, void *ctx);

/* ----------------------------------------------------------------- aot.c */

/* At the end of pe_init (runtime lock held): speculates over the registered
 * units and starts the background compile, unless PE_AOT=0, the executor
 * is not the CPU JIT, or the JIT is unusable. */
void pe_aot_start(void);
/* A unit was registered after pe_init (a shared library): the same for it. */
void pe_aot_units_added(void);
/* At pe_shutdown, before the executor stops (runtime lock held; released
 * while waiting): no new compile starts, the one under way is waited for. */
void pe_aot_stop(void);
#endif
