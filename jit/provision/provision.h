/* provision.h — kernel provisioning, one module for every target: a batch's
 * program sequence (the trace cache, else the program generator) and the
 * code of its kernels at a place (what the executor has linked, the compile
 * ahead, the disk cache, else the target's compiler, whose artifact the
 * executor links and the disk cache keeps).  The batch driver (batch.c)
 * and the compile ahead (aot.c) use it; executors never compile.  Every
 * function runs under the runtime lock. */
#ifndef PE_JIT_PROVISION_H
#define PE_JIT_PROVISION_H

#include <stdbool.h>

#include "../kir/target.h"
#include "../proggen/proggen.h"
#include "../../exec/base/runtime.h"

/* At pe_init: the trace cache (`trace_entries`, persisted traces loaded),
 * the disk cache (`cache_dir`, its files tagged by the CPU's ISA: the CPU
 * executor has started), and whether the CPU target's toolchain works.
 * `ir_fingerprint` (pe_ir_fingerprint) names the persisted traces' file.  Stop: the reverse. */
void pe_provision_start(const char *cache_dir, int trace_entries, uint64_t ir_fingerprint);
void pe_provision_stop(uint64_t ir_fingerprint);

/* A fresh file (ours, 0600) in TMPDIR for a compiler to write a shared
 * object to, its path in out; false when none could be made.  Needs no lock. */
bool pe_provision_private_path(char *out, size_t n);

/* spmv's generated row loops (spmv_code.c): lent to the intrinsics at
 * start when the CPU JIT is on (compiled or loaded from the disk cache,
 * tagged `disk_tag`, at the first call), unlinked at stop. */
void pe_provision_spmv_start(const char *disk_tag);
void pe_provision_spmv_stop(void);

/* Whether target t compiles in this run (the CPU JIT goes off when its
 * toolchain is missing or it compiles nothing). */
bool pe_target_on(const pe_target *t);

/* A batch's program sequence under t's fusion rules: from the trace cache
 * (*hit), else from the program generator; counts lookups, hits and
 * generator runs.  False when out of memory. */
bool pe_provision_sequence(const pe_batch *b, const pe_target *t, pe_program_seq *seq, bool *hit);
/* Remembers a sequence the generator made for the batch (still pending) in
 * the trace cache, under t's rules. */
void pe_provision_remember(const pe_batch *b, const pe_target *t, const pe_program_seq *seq);

/* Gets the code of every KERNEL program of seq at `place` into code[i]
 * (one slot per program; NULL for the others).  A target with one place
 * (the CPU) keeps it in the program too (pe_program.code), so that a
 * trace-cache hit brings it along, and leaves NULL where the compiler
 * rejected a kernel (the interpreter computes it); a target with several
 * places (GPUs) fails as a whole: false, the place is given up. */
bool pe_provision_kernels(const pe_target *t, int place, pe_program_seq *seq, const void **code);

/* For the compile ahead (aot.c).  Has: every place of t has kernel k
 * linked, or its code on disk.  Ahead: compiles the kernels once per
 * architecture among t's places, without the runtime lock (it takes the
 * lock to link and file them); false with the reason in err. */
bool pe_provision_has(const pe_target *t, const kir_kernel *k);
bool pe_provision_ahead(const pe_target *t, const kir_kernel *const *kernels, size_t n, char *err, size_t n_err);

/* The compile ahead (aot.c) as the provisioning sees it, registered while
 * it runs (NULL: none), so that this module never calls up into it.
 * Await: it has kernel k in hand for t: waits for it (true; look again).
 * Note served: a batch of t took k from a cache (counted once if it was
 * compiled ahead). */
typedef struct {
    bool (*await)(const kir_kernel *k, const pe_target *t);
    void (*note_served)(const kir_kernel *k, const pe_target *t);
} pe_compile_ahead;
void pe_provision_compiled_ahead_by(const pe_compile_ahead *ahead);

#endif
