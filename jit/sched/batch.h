/* batch.h — the batch driver (batch.c): where a batch runs and what runs
 * there, for the E-scheduler's thread. */
#ifndef PE_JIT_BATCH_H
#define PE_JIT_BATCH_H

#include <stddef.h>

#include "../../exec/base/runtime.h"

/* Runs a batch (its inputs READY or INVALID, or computed earlier in the
 * batch) on the executor and place it belongs to; every live COMPUTE
 * entry's port ends READY or INVALID.  Returns the ports computed. */
size_t pe_batch_run(const pe_batch *b);

#endif
