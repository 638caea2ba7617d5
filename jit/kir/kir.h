/* kir.h — the kernel IR: a target-independent, canonical, hashable
 * description of one fused element-wise kernel, ending in a reduction (of
 * every element, or along one axis) or not.  The program generator
 * (jit/proggen) builds it from ports; the code generators (jit/codegen:
 * cpu_gccjit.c, cuda_emit.c) consume it and never see ports.  Its canonical
 * hash names the kernel in compiled code and keys every cache of compiled
 * kernels (the executors' linked code, the disk cache).
 *
 * A kernel iterates i over [begin, end) of a row-major iteration space.
 * Parameters are arrays read or written at i (CONTIG), arrays read through
 * an index map of the iteration coordinates (STRIDED: broadcasts and views —
 * slices with steps, permutations, spreads, periodic tiling, concat's
 * operands; the iteration shape is then part of the kernel), arrays read at
 * positions the kernel computes (GATHERED, with an out-of-range flag
 * OUT_FLAG), uniform scalars passed at
 * launch (SCALAR: the value is not part of the kernel), or uniform scalars
 * compiled in (LITERAL: the value is part of the kernel).  An axis
 * reduction's kernel iterates over its operand's shape and launches over its
 * results (see axis_reduction).  The body is SSA: value v is the result of
 * body[v]. */
#ifndef PE_KIR_KIR_H
#define PE_KIR_KIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pe.h"
#include "../../irformat/dtypes.h"
#include "../../irformat/ops.h"

#define KIR_MAX_PARAMS 64
#define KIR_MAX_BODY 256

/* KIR_IN_LITERAL: a uniform scalar whose value is part of the kernel (a
 * source literal, per the static IR): compiled in as a constant.
 * KIR_IN_GATHERED: an array of `extent` elements read at flat positions
 * the body computes (KIR_GATHER).  KIR_OUT_FLAG: one u32 the kernel sets
 * nonzero when a gather's index was out of range (it then read element 0
 * instead); the executor recomputes the kernel's members on the
 * interpreter, which reports the index and its position as the contract
 * says. */
typedef enum {
    KIR_IN_CONTIG, KIR_IN_STRIDED, KIR_IN_SCALAR, KIR_OUT, KIR_OUT_PARTIAL, KIR_IN_LITERAL, KIR_IN_GATHERED, KIR_OUT_FLAG
} kir_param_kind;

/* A reduction kernel accumulates each fixed chunk of KIR_REDUCE_CHUNK
 * iterations in double and writes the chunk's partial as (high, low) to
 * partials[2 * (begin / KIR_REDUCE_CHUNK)] and the slot after it (low is the
 * compensation of f64 sums, else 0; argmax, argmin: the extreme and its
 * flat index; a wrapped i32 sum or product: its value, 0); the executor
 * combines the partials in chunk order.  The multi-pass reductions leave
 * KIR_PARTIAL_WIDE doubles a chunk (kir_partial_width): var and stddev the
 * chunk's sum (high, low), the exponent e of its largest deviation from its
 * mean and its squared deviations scaled by 2^-2e; f64 norm2 its largest
 * magnitude and its squares divided by it (sum, compensation).  Launches are
 * cut at chunk boundaries whatever the thread count, so results are bitwise
 * the same for any number of threads. */
#define KIR_REDUCE_CHUNK 16384
#define KIR_PARTIAL_WIDE 4
/* The doubles per chunk of a full reduction `op` computed in `ctype`: what
 * the code generator writes and the executor allocates and combines. */
static inline int kir_partial_width(pe_op op, pe_dtype ctype)
{
    return op == PE_OP_var || op == PE_OP_stddev || (op == PE_OP_norm2 && ctype == PE_F64) ? KIR_PARTIAL_WIDE : 2;
}

/* A STRIDED parameter's element at iteration coordinates c:
 *     offset + sum over axes d of  stride[d] * m_d(c[d])
 *     m_d(x) = x clamped into [lo[d], hi[d] - 1] when hi[d] > 0 (else x),
 *              then (x + shift[d]) mod wrap[d] when wrap[d] > 0
 * Strides may be 0 (broadcast, spread) or negative (a slice's negative
 * step); the program generator composes views into one such map, and the
 * trace cache checks that every element the map can name lies inside the
 * bound array (trace_check.c). */
typedef struct {
    uint8_t kind;  /* kir_param_kind */
    uint8_t dtype; /* pe_dtype of the array (or of the scalar's value) */
    int64_t offset;              /* STRIDED: the element at coordinates 0 */
    int64_t stride[PE_MAX_RANK]; /* STRIDED, by iteration axis */
    int64_t wrap[PE_MAX_RANK], shift[PE_MAX_RANK];
    int64_t lo[PE_MAX_RANK], hi[PE_MAX_RANK];
    int64_t extent;              /* GATHERED: the array's element count (positions at or past it are out of range) */
    double value;                /* KIR_IN_LITERAL only (already rounded to dtype) */
} kir_param;

/* Complex values (PE_C64, PE_C128) reach the generators as pairs of reals
 * (the pair lowering, jit/kir/kir_complex.c): a parameter keeps its
 * complex dtype, and a LOAD or STORE of it takes one part, imm 0 the real
 * part (element 2i of the buffer seen as reals), 1 the imaginary (2i + 1). */
typedef enum {
    KIR_LOAD, /* value = param a[0] at i, converted to `dtype` (a complex param: its part imm) */
    KIR_OP,   /* value = op(a[0..n-1]) computed in `ctype`, giving `dtype`;
                 generators (n = 0): pe_index's axis in a[0]; the random
                 generators (n = 3): i32 key words and draw number, the
                 Philox round count in imm (irformat/philox.h);
                 concat (n = 2): a[0] where coordinate a[2] < imm, else a[1];
                 constant (n = 0, a float dtype): the double whose bits are imm
                 (made by the pair lowering only) */
    KIR_STORE, /* param a[0] at i = value a[1] (a complex param: its part imm) */
    KIR_REDUCE, /* accumulate `op` (a REDUCE op) of value a[1] (pe_dot: a[1] * a[2])
                  into partial parameter a[0] (an axis reduction: its result, KIR_OUT);
                  n counts a[] entries in use */
    KIR_GATHER /* value = GATHERED param a[0] at flat position value a[1] (i32);
                  a position outside [0, extent) reads element 0 and sets
                  OUT_FLAG param a[2] */
} kir_inst_kind;

typedef struct {
    uint8_t kind;  /* kir_inst_kind */
    uint8_t op;    /* KIR_OP: pe_op (a MAP op) */
    uint8_t dtype; /* type of the value this instruction makes */
    uint8_t ctype; /* KIR_OP: type operands are converted to; KIR_REDUCE: the operands' type */
    uint8_t n;     /* number of operands */
    uint16_t a[3];
    int64_t imm; /* concat: the first operand's extent along the axis; random: the rounds (0 otherwise) */
} kir_inst;

/* An axis reduction (axis_reduction set): the iteration shape is the
 * operand's, the reduction runs along reduce_axis, and a launch's [begin,
 * end) counts results (row-major over the other axes); each result is
 * accumulated over its axis in one fixed order, whatever the launch, so
 * results are bitwise the same for any number of threads. */
typedef struct kir_kernel {
    int rank;                     /* iteration shape; rank 0 when no parameter or generator needs it */
    int64_t shape[PE_MAX_RANK];
    bool axis_reduction;
    uint8_t reduce_axis;
    /* Its outputs bypass the caches (non-temporal stores: no read for
     * ownership of lines the kernel overwrites whole, 3 memory streams for a
     * triad instead of 4).  Only a flat element-wise kernel that reads and
     * writes contiguous arrays (kir_streamable) whose outputs outgrow the
     * last-level cache: nothing would find them there anyway. */
    bool stream_stores;
    int n_params, n_body;
    kir_param params[KIR_MAX_PARAMS];
    kir_inst body[KIR_MAX_BODY];
} kir_kernel;

/* k's reduction instruction (a kernel holds at most one), or NULL. */
static inline const kir_inst *kir_reduction_of(const kir_kernel *k)
{
    for (int v = 0; v < k->n_body; v++)
        if (k->body[v].kind == KIR_REDUCE) return &k->body[v];
    return NULL;
}

/* Whether op is one of the random generators (n = 3 values, rounds in imm). */
static inline bool kir_is_random(unsigned op) { return op == PE_OP_random_uniform || op == PE_OP_random_normal; }

/* Whether k may stream its stores: flat (rank 0), no reduction, its arrays
 * all read and written at the iteration index (no views, gathers, index
 * generators or random draws) of a real dtype (a complex one is addressed
 * by parts), so a code generator can rebase every array at an aligned
 * iteration. */
bool kir_streamable(const kir_kernel *k);

/* The 64-bit FNV-1a hash of k's canonical bytes (the fields that define the
 * computation, in a fixed order); equal kernels hash equally. */
uint64_t kir_hash(const kir_kernel *k);
/* The name kernel k is exported under in compiled code ("pe_k_<hash>"):
 * the code generators name it, the executors look it up. */
void kir_kernel_name(const kir_kernel *k, char *out, size_t n);
bool kir_equal(const kir_kernel *a, const kir_kernel *b);
/* Whether k is well formed (counts, kinds, types, ops and operand indices in
 * range): kernels read back from disk are checked before any generator
 * sees them. */
bool kir_valid(const kir_kernel *k);
/* The value operands of instruction in: n entries of a[] from *first (the
 * others are parameters, an axis). */
int kir_value_operands(const kir_inst *in, int *first);
/* A readable listing, for PE_LOG=debug and tests. */
void kir_print(const kir_kernel *k, char *out, size_t n);
/* Reorders k's body canonically: depth first from its stores and reduction,
 * operands left to right (kir_schedule.c); drops what no root reads. */
void kir_schedule(kir_kernel *k);

#endif
