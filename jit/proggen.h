/* proggen.h — the program generator: turns a batch of work-queue entries into
 * a program sequence (fused kernels in kernel IR, and ports left to the
 * interpreter), in an order that respects every dependency. */
#ifndef PE_JIT_PROGGEN_H
#define PE_JIT_PROGGEN_H

#include "kir.h"
#include "runtime.h"

typedef enum {
    PE_PROG_KERNEL, /* a fused element-wise kernel */
    PE_PROG_INTERP, /* one port computed by the reference interpreter */
    PE_PROG_SKIP    /* a dead port: nobody can observe it */
} pe_prog_kind;

typedef struct {
    pe_prog_kind kind;
    uint32_t port;          /* INTERP, SKIP: the port; KERNEL: the last member */
    int64_t numel;          /* KERNEL: iterations */
    kir_kernel *kir;        /* KERNEL */
    uint32_t *bind;         /* KERNEL: the port bound to each parameter */
    uint32_t *members;      /* KERNEL: the ports it computes, in order */
    int n_members;
    void *code;             /* KERNEL: the compiled entry point, once known (kept by the trace cache) */
    uint8_t served;         /* KERNEL: which cache gave the code (pe_prof_served), for the profiler */
    uint64_t compile_ns;    /* KERNEL: what getting the code cost (profiler) */
} pe_program;

typedef struct {
    pe_program *progs;
    size_t n, cap;
    bool kir_borrowed; /* the kernels belong to a trace-cache entry */
} pe_program_seq;

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
} pe_fusion_rules;

/* The backward pass (also the interpreter's): counts each pending port's
 * consumers in the batch that are still to be computed; a port the batch
 * released with none of them is dead, and so, in turn, its producers. */
void pe_find_live_consumers(const pe_entry *entries, size_t n, uint32_t epoch);
bool pe_port_dead_in_batch(const pe_port *p);

/* Builds the sequence for a batch; false when out of memory (nothing is
 * then changed: the caller runs the batch on the interpreter). */
bool pe_proggen(const pe_entry *entries, size_t n, uint32_t epoch, const pe_fusion_rules *rules,
                pe_program_seq *out);
void pe_program_seq_free(pe_program_seq *seq);
/* Bytes a KERNEL program reads from its array inputs and writes to its
 * outputs (the profiler's traffic figures). */
void pe_program_traffic(const pe_program *p, int64_t *read, int64_t *written);

#endif
