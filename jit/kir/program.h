/* program.h — the program sequence: what the program generator (proggen.c)
 * makes of a batch, the trace cache keeps, the provisioning gives code and
 * the executors run.  Kernels are in kernel IR (kir.h). */
#ifndef PE_JIT_PROGRAM_H
#define PE_JIT_PROGRAM_H

#include "kir.h"
#include "../../exec/base/runtime.h"

typedef enum {
    PE_PROG_KERNEL, /* a fused element-wise kernel */
    PE_PROG_INTERP, /* one port computed by the reference interpreter */
    PE_PROG_SKIP,   /* a dead port: nobody can observe it */
    PE_PROG_VIEW,   /* a view the batch's kernels read through (never computed): once they ran, an
                       expression again if still visible, else nobody's (exec/base/deferred.c) */
    PE_PROG_INTRINSIC /* one library call (exec/intrinsics) on the host buffers of its operands: the
                         CPU executor runs it; never fused, so kernels end before it and start after */
} pe_prog_kind;

/* An intrinsic program's operands are bound in the order its op's row of
 * irformat/ops_intrinsic.def gives; flags say which of matmul's are there. */
enum {
    PE_INTR_TRANS_A = 1, /* operand a is the transpose of the array bound (cblas CblasTrans) */
    PE_INTR_TRANS_B = 2,
    PE_INTR_C = 4,       /* c is bound: the result is ... + beta * c */
    PE_INTR_ALPHA = 8,   /* alpha is bound (a 0-d constant), else 1 */
    PE_INTR_BETA = 16    /* beta is bound (a 0-d constant), else 1 */
};

typedef struct pe_program {
    pe_prog_kind kind;
    uint32_t port;          /* INTERP, SKIP: the port; KERNEL, INTRINSIC: the last member */
    int64_t numel;          /* KERNEL: iterations */
    kir_kernel *kir;        /* KERNEL */
    uint32_t *bind;         /* KERNEL: the port bound to each parameter; INTRINSIC: its operands (above) */
    uint32_t *members;      /* KERNEL, INTRINSIC: the ports it computes, in order */
    int n_members;
    uint8_t n_bind;         /* INTRINSIC: operands bound */
    uint8_t flags;          /* INTRINSIC: PE_INTR_* */
    int16_t *shares;        /* KERNEL, or NULL: per member, the member whose store holds its value too
                               (equal values, one store), which it shares once the kernel ran
                               (exec/base/deferred.c); -1: none */
    void *code;             /* KERNEL: the compiled entry point, once known (kept by the trace cache) */
    uint8_t served;         /* KERNEL: which cache gave the code (pe_prof_served), for the profiler */
    uint64_t compile_ns;    /* KERNEL: what getting the code cost (profiler) */
} pe_program;

typedef struct pe_program_seq {
    pe_program *progs;
    size_t n, cap;
    bool kir_borrowed; /* the kernels belong to a trace-cache entry */
} pe_program_seq;

void pe_program_seq_free(pe_program_seq *seq);
/* Bytes a KERNEL program reads from its array inputs and writes to its
 * outputs (the profiler's traffic figures). */
void pe_program_traffic(const pe_program *p, int64_t *read, int64_t *written);

/* settle.c: after a kernel ran, each member that is not invalid becomes
 * a value (READY, its inputs let go) or, when it was not stored and the
 * application or a kept member still needs it, an expression (DEFERRED,
 * its inputs held). */
void pe_kernel_settle(const pe_program *prog);
/* Once a sequence ran: each view its kernels read through (PE_PROG_VIEW),
 * never computed, is an expression again where the application or an
 * expression still sees it, else nobody's (settle.c). */
void pe_views_settle(const pe_program_seq *seq);

#endif
