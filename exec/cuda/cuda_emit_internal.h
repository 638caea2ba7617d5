/* cuda_emit_internal.h — internal to the CUDA code generator: cuda_emit.c
 * (the driver) and its pieces cuda_emit_prelude.c, cuda_emit_ops.c,
 * cuda_emit_reduce.c, cuda_emit_loops.c and cuda_emit_combine.c include it,
 * nothing else does.  It holds the text being written (text, put), the
 * state of the kernel being emitted (emitter), the kinds of accumulation
 * the reduction pieces share (axis_kind, FOLD_*), the one-line helpers as
 * static inline, and the functions one piece calls in another, named pe_cu_
 * so that no short name (put, emit_body...) becomes a symbol of the
 * library. */
#ifndef PE_CUDA_EMIT_INTERNAL_H
#define PE_CUDA_EMIT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "../../jit/kir/codegen.h"
#include "cuda_emit.h"

/* The CUDA C written so far: a growing string; oom once it could not grow
 * (later text is dropped and pe_cuda_emit returns NULL). */
typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} text;

/* printf into t (cuda_emit_prelude.c).  A variadic function is not
 * inlined, so it is one function, in the piece that calls no other; every
 * piece writes it under the short name the generator has always used. */
void pe_cu_put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define put pe_cu_put

/* The kernel being emitted and where its emission stands: the loop shapes
 * (cuda_emit_loops.c) set the lanes and the walk, the body reads them. */
typedef struct {
    text *t;
    const kir_kernel *k;
    bool has_tail[KIR_MAX_BODY]; /* tail<v> = pe_cdf_tail_f32(|v|) is emitted */
    bool lanes; /* the body of the vector loop: arrays are the lane arrays in<p>[L] / out<p>[L] */
    int pass;   /* an axis reduction's walk along its axis (var: 3, f64 norm2: 2); stores in the first only */
    int perturbed_op; /* PE_TEST_PERTURB_OP's op (tests only: codegen.c), else -1 */
} emitter;

/* ------------------------------------------------------------- helpers */

/* The CUDA C type of an element, by pe_dtype (cuda_emit_prelude.c). */
extern const char *const pe_cu_type_names[PE_DTYPE__COUNT];
static inline const char *ctype_name(pe_dtype t) { return pe_cu_type_names[t]; }

static inline bool is_float(pe_dtype t) { return pe_dtype_is_float(t); }

static inline bool is_extreme(pe_op op) { return pe_reduction_is_extreme(op); }
static inline bool is_min(pe_op op) { return pe_reduction_of(op)->acc == PE_ACC_MIN; }
static inline bool compensated(const kir_inst *r) { return r->ctype == PE_F64 && !is_extreme((pe_op)r->op); }

/* How an axis reduction accumulates its elements, as reduce_one does
 * (exec/interp/interp.c): the full reductions' way (a double from the
 * ops_codegen.def column, f64 sums compensated: sum, mean, extremes,
 * norm1, norm2 but of f64); i32 sums and products wrapping (unsigned);
 * float products in double, uncompensated; any, all; the first index of
 * the extreme (argmax, argmin: the first NaN's wins); var and stddev in
 * three walks (the mean, the largest deviation, the scaled squares); f64
 * norm2 in two (the largest magnitude, the scaled squares). */
typedef enum { AX_COLUMN, AX_WRAP_SUM, AX_WRAP_PROD, AX_PROD, AX_ANY, AX_ALL, AX_ARG, AX_VAR, AX_SCALED_NORM2 } axis_kind;

/* The combining kinds shared by the block trees and the combiner kernel
 * (pe_fold in the prelude), as the combiner's parameter 5 says: */
enum { FOLD_PROD = 1, FOLD_WRAP_SUM, FOLD_WRAP_PROD, FOLD_ANY, FOLD_ALL, FOLD_ARGMAX, FOLD_ARGMIN };
_Static_assert(FOLD_PROD == 1 && FOLD_WRAP_SUM == 2 && FOLD_WRAP_PROD == 3 && FOLD_ANY == 4 && FOLD_ALL == 5 &&
                   FOLD_ARGMAX == 6 && FOLD_ARGMIN == 7,
               "pe_fold's cases in the prelude");

/* ------------------------------------------------- across the pieces */

/* cuda_emit_prelude.c: the helpers every kernel may use, and the f32
 * normal CDF, once at the top of a program's source */
void pe_cu_emit_prelude(text *t);

/* cuda_emit_ops.c: operands in a compute type, and the kernel body (loads,
 * ops, gathers, stores, reductions' updates) for element i */
void pe_cu_operand(emitter *e, const kir_inst *in, int j, pe_dtype to, char *out, size_t n);
void pe_cu_emit_body(emitter *e);

/* cuda_emit_reduce.c: how a reduction accumulates, one element's update,
 * its accumulator, the warp trees and an axis reduction's result */
axis_kind pe_cu_axis_kind_of(const kir_inst *r);
axis_kind pe_cu_full_kind_of(const kir_inst *r);
int pe_cu_axis_passes(axis_kind kind);
bool pe_cu_axis_combines(axis_kind kind);
int pe_cu_fold_of(const kir_inst *r);
void pe_cu_emit_axis_update(emitter *e, const kir_inst *r);
void pe_cu_emit_full_update(emitter *e, const kir_inst *r);
void pe_cu_emit_full_state(text *t, const kir_inst *r);
void pe_cu_emit_full_pair(text *t, const kir_inst *r);
void pe_cu_emit_shuffle_tree(text *t, const kir_inst *r, int from);
void pe_cu_emit_axis_state(text *t, const kir_inst *r);
void pe_cu_emit_axis_between(text *t, const kir_inst *r, int pass, long long len);
void pe_cu_emit_axis_tree(text *t, const kir_inst *r);
void pe_cu_emit_axis_store(text *t, const kir_kernel *k, const kir_inst *r, const char *in);

/* cuda_emit_loops.c: the kernel shapes, each a whole __global__ function
 * named `name` */
void pe_cu_emit_elementwise_kernel(emitter *e, const char *name);
void pe_cu_emit_axis_kernel(emitter *e, const char *name);
void pe_cu_emit_full_kernel(emitter *e, const char *name, const kir_inst *r);
void pe_cu_emit_multi_walk_kernel(emitter *e, const char *name, const kir_inst *r);

/* cuda_emit_combine.c: the combiner kernel of a program's full reductions */
void pe_cu_emit_combiner(text *t);

#endif
