/* proggen.h — the program generator: turns a batch of work-queue entries into
 * a program sequence (fused kernels in kernel IR, and ports left to the
 * interpreter), in an order that respects every dependency. */
#ifndef PE_JIT_PROGGEN_H
#define PE_JIT_PROGGEN_H

#include "../kir/kir.h"
#include "../kir/program.h"
#include "../../exec/base/runtime.h"

/* Which element-wise ops, in which compute type, a code generator can emit;
 * other ops end fusion and run on the interpreter. */
typedef bool (*pe_emittable_fn)(pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0);
/* Whether a code generator keeps a reduction appended to this kernel body
 * fast (NULL: always); if not, the reduction gets a kernel of its own. */
typedef bool (*pe_reduction_fusible_fn)(const kir_kernel *body);
/* An executor's fusion rules: what its code generator emits and when a
 * reduction may join a kernel body.  Two executors' rules can make
 * different sequences for one batch, so the trace cache keeps them apart by
 * `id` (which also goes to disk with the persisted traces). */
typedef struct {
    uint8_t id;
    pe_emittable_fn emittable;
    pe_reduction_fusible_fn reduction_fusible;
    /* Kernels write host memory, so members of equal value share one store
     * (exec/base/deferred.c); a GPU's results live on the device, where a
     * second member would be an expression again: each is stored. */
    bool shares_stores;
} pe_fusion_rules;

/* Builds the sequence for a batch; false when out of memory (nothing is
 * then changed: the caller runs the batch on the interpreter). */
bool pe_proggen(const pe_entry *entries, size_t n, uint32_t epoch, const pe_fusion_rules *rules,
                pe_program_seq *out);
#endif
