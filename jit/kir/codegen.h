/* codegen.h — what every code generator and the executors' fusion rules
 * know of ops: the per-op columns of irformat/ops_codegen.def (libm names,
 * emission classes, reductions, lowerings), the sets of compute types a
 * generator emits an op in and what decides it from a backend's own column
 * (pe_codegen_can_emit), the lowering passes (the exported name of a
 * kernel is the kernel IR's: kir_kernel_name).  What one backend alone
 * knows of ops and dtypes is in its own folder (its <backend>_ops.def and
 * its generator's type table); no generator includes another. */
#ifndef PE_KIR_CODEGEN_H
#define PE_KIR_CODEGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kir.h"

/* Compute types a generator emits an op in: a set of (1 << pe_dtype). */
enum {
    PE_EMITS_NONE = 0,
    PE_EMITS_F32 = 1u << PE_F32,
    PE_EMITS_FLOAT = (1u << PE_F32) | (1u << PE_F64),
    PE_EMITS_NUMERIC = (1u << PE_F32) | (1u << PE_F64) | (1u << PE_I32),
    PE_EMITS_ANY = (1u << PE_F32) | (1u << PE_F64) | (1u << PE_I32) | (1u << PE_BOOL),
};

/* Where a lowering step's operand comes from: the composed op's operand
 * (A0..A2) or an earlier step's value (S0, S1). */
typedef enum { PE_LOWER_A0, PE_LOWER_A1, PE_LOWER_A2, PE_LOWER_S0, PE_LOWER_S1, PE_LOWER_NONE } pe_lower_ref;

typedef struct {
    uint8_t op;   /* pe_op, a primitive */
    uint8_t x, y; /* pe_lower_ref */
} pe_lower_step;

typedef struct {
    uint8_t n_steps; /* 0: a primitive */
    pe_lower_step step[3];
} pe_lowering;

/* How a fused reduction accumulates, in double (the reduction column); sums
 * and products of i32 in i32, wrapping (pe_reduction_wraps). */
typedef enum {
    PE_ACC_NONE, PE_ACC_SUM, PE_ACC_MAX, PE_ACC_MIN, /* MAX, MIN: NaN sticks */
    PE_ACC_PROD,
    PE_ACC_ARGMAX, PE_ACC_ARGMIN, /* the extreme and its first index; the first NaN wins */
    PE_ACC_VAR                    /* var, stddev: the mean, the largest deviation, the scaled squares */
} pe_acc_kind;
typedef enum { PE_ELEM_VALUE, PE_ELEM_PRODUCT, PE_ELEM_ABS, PE_ELEM_SQUARE, PE_ELEM_NONZERO } pe_elem_kind; /* PRODUCT: x * y */
typedef struct {
    uint8_t acc;     /* pe_acc_kind */
    uint8_t element; /* pe_elem_kind: what is accumulated of the operand(s) */
    double identity; /* the accumulator's start */
} pe_reduction;

/* How a generator emits an element-wise op: the emission column, a class
 * that says how (LuaJIT's IR modes), so that neither generator lists the
 * ops of a class by hand. */
typedef enum {
    PE_EMIT_NONE,  /* never an element-wise op of a kernel (composed, reductions, views, ...) */
    PE_EMIT_LIBM,  /* of floats: the libm column's function of the operands */
    PE_EMIT_BINOP, /* C's binary operator `cop`; i32 in unsigned, wrapping */
    PE_EMIT_CMP,   /* C's comparison `cop`: a bool */
    PE_EMIT_OWN,   /* each generator's own code for the op */
} pe_emit_class;
/* The C operator of a BINOP or CMP op (libgccjit names them alike). */
typedef enum {
    PE_COP_NONE, PE_COP_PLUS, PE_COP_MINUS, PE_COP_MULT,
    PE_COP_LT, PE_COP_LE, PE_COP_GT, PE_COP_GE, PE_COP_EQ, PE_COP_NE,
    PE_COP__COUNT
} pe_c_operator;
typedef struct {
    uint8_t cls; /* pe_emit_class */
    uint8_t cop; /* pe_c_operator */
} pe_emission;

/* One row of ops_codegen.def. */
typedef struct {
    const char *libm;     /* f64 name; f32 appends "f" */
    pe_emission emission;
    bool f32_in_double;
    pe_reduction reduction;
    pe_lowering lowering;
} pe_op_codegen;

extern const pe_op_codegen pe_op_codegen_table[PE_OP__COUNT];

static inline const pe_op_codegen *pe_codegen_of(pe_op op) { return &pe_op_codegen_table[op]; }
/* The libm function behind a float op ("exp", "fabs", "fmod"), or NULL. */
static inline const char *pe_libm_name(pe_op op) { return pe_op_codegen_table[op].libm; }
/* How a generator emits op (the emission column), and a BINOP's or CMP's
 * operator as C writes it ("+", "<="). */
static inline pe_emit_class pe_emit_class_of(pe_op op) { return (pe_emit_class)pe_op_codegen_table[op].emission.cls; }
static inline pe_c_operator pe_c_operator_of(pe_op op) { return (pe_c_operator)pe_op_codegen_table[op].emission.cop; }
const char *pe_c_operator_text(pe_c_operator cop);
/* Whether op in f32 is computed in double and rounded once (see the column). */
static inline bool pe_f32_in_double(pe_op op) { return pe_op_codegen_table[op].f32_in_double; }
/* Whether op is composed: kir_lower.c rewrites it into primitives. */
static inline bool pe_op_composed(pe_op op) { return pe_op_codegen_table[op].lowering.n_steps != 0; }

/* A fused reduction's accumulation, and whether it keeps the extreme (max,
 * min, norminf) rather than a sum. */
static inline const pe_reduction *pe_reduction_of(pe_op op) { return &pe_op_codegen_table[op].reduction; }
static inline bool pe_reduction_is_extreme(pe_op op)
{
    return pe_op_codegen_table[op].reduction.acc == PE_ACC_MAX || pe_op_codegen_table[op].reduction.acc == PE_ACC_MIN;
}
/* Whether a reduction in compute type ctype accumulates in i32, wrapping as
 * the reference does (sums, products and dot of i32; bool sums are i32). */
static inline bool pe_reduction_wraps(pe_op op, pe_dtype ctype)
{
    pe_acc_kind acc = (pe_acc_kind)pe_op_codegen_table[op].reduction.acc;
    return ctype == PE_I32 && (acc == PE_ACC_SUM || acc == PE_ACC_PROD); /* norm1, norm2, mean of i32 compute in f32 */
}

/* asec and acsc, computed in double by both generators as by the reference
 * (exec/interp/refmath.c), each formula where it is well conditioned:
 *   asec(x) = |x| < 2 ? (x > 0 ? t : (pi - t) + pi_lo) : acos(1 / x),
 *             t = atan(sqrt(fma(x, x, -1))), pi_lo = PE_PI_LO (pi - M_PI)
 *   acsc(x) = |x| < 2 ? copysign(atan(1 / sqrt(fma(x, x, -1))), x) : asin(1 / x)
 * Near |x| = 1, acos and asin of 1/x amplify the rounding of 1/x (asec up
 * to 29752 ulp, acsc 58 ulp); x*x - 1 formed by fma with one rounding keeps
 * the atan forms within 2 ulp there (issue 24; test_mpfr measures them).
 * Outside, 1/x is at most 1/2 and acos, asin are well conditioned.  |x| < 1
 * gives NaN either way (sqrt of a negative, acos and asin beyond 1). */
#define PE_ASEC_ACSC_NEAR 2.0
#define PE_PI_LO 1.2246467991473532e-16
#define PE_TEXT_(x) #x
#define PE_TEXT(x) PE_TEXT_(x) /* a constant's text, for the CUDA preamble */

/* A generator's switch over the ops it writes itself (class OWN) has no
 * default, so that -Wswitch names an op it forgot; the case labels of every
 * other op come from the emission column, none by hand (not_own_cases.h
 * expands ops_codegen.def with PE_OP_CODEGEN as PE_CASE_UNLESS_OWN).
 * BINOP(PLUS)'s label: PE_CASE_UNLESS_OWN_BINOP(PLUS) is PE_CASE_OF, which
 * the row's name then follows in parentheses. */
#define PE_CASE_UNLESS_OWN(name, libm, emission, ...) PE_CASE_UNLESS_OWN_##emission(name)
#define PE_CASE_OF(name) case PE_OP_##name:
#define PE_CASE_UNLESS_OWN_NONE(name) case PE_OP_##name:
#define PE_CASE_UNLESS_OWN_LIBM(name) case PE_OP_##name:
#define PE_CASE_UNLESS_OWN_BINOP(cop) PE_CASE_OF
#define PE_CASE_UNLESS_OWN_CMP(cop) PE_CASE_OF
#define PE_CASE_UNLESS_OWN_OWN(name)

/* A generator's own table by dtype (its type of an element) is an X-list
 * LIST(X) of rows X(dtype, value), dtype without PE_ (F32), in
 * irformat/dtypes.def's order; PE_CHECK_DTYPE_ROWS(LIST), at file scope,
 * makes a row missing, doubled or out of place a compile error. */
#define PE_DTYPE_ROW_OF(en, value) PE_DTYPE_LIST_ROW_##en,
#define PE_DTYPE_ROW_IN_ORDER(en, value) \
    _Static_assert((int)PE_DTYPE_LIST_ROW_##en == (int)PE_##en, "a generator's dtype table follows pe_dtype's order");
#define PE_CHECK_DTYPE_ROWS(LIST)                                                                                  \
    enum { LIST(PE_DTYPE_ROW_OF) PE_DTYPE_LIST_ROWS };                                                             \
    _Static_assert((int)PE_DTYPE_LIST_ROWS == (int)PE_DTYPE__COUNT, "a generator's dtype table has every dtype"); \
    LIST(PE_DTYPE_ROW_IN_ORDER)

/* The op PE_TEST_PERTURB_OP names, whose results the generators make
 * wrong for tests of PE_CHECK (tests/test_check.c), or -1 (always, outside tests). */
int pe_codegen_perturbed_op(void);

/* True if a generator that emits `op` in the compute types `emits` (its
 * backend's column, PE_EMITS_*) can emit it computed in `ctype` giving
 * `dtype` (operand0: the dtype of the first operand, for casts): what each
 * backend's pe_emittable_fn (its fusion rules) answers from its own table.
 * Complex operands or results are the pair lowering's (kir_complex.c),
 * alike for every generator. */
bool pe_codegen_can_emit(uint8_t emits, pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0);

/* Whether every op of k is one a generator's emit_op handles: lowered
 * (kir_lower.c) and one `can_emit` (a backend's fusion rules' emittable)
 * takes in its types, as the program generator makes kernels.  The
 * generators refuse any other kernel rather than emit nonsense. */
bool pe_kernel_generatable(const kir_kernel *k, bool (*can_emit)(pe_op, pe_dtype, pe_dtype, pe_dtype));

/* Lowering (kir_lower.c): rewrites k's composed ops (sec, asec, logb,
 * clamp...: irformat/ops_codegen.def's lowering column) into primitives, in
 * place, with the arithmetic and roundings the generators emitted for them;
 * the program generator lowers every kernel it makes, so the code
 * generators only ever see primitives.  False, with k unchanged, if the
 * lowered body would not fit KIR_MAX_BODY. */
bool kir_lower(kir_kernel *k);
/* The instructions lowering one `op` adds to a body (0 for a primitive). */
int kir_lower_growth(pe_op op);
/* Whether k has no composed op and no complex value left: what the
 * generators require. */
bool kir_lowered(const kir_kernel *k);

/* The pair lowering (kir_complex.c), kir_lower's first step: every complex
 * value of k as two reals (its parts), complex arrays loaded and stored
 * part by part (KIR_LOAD/KIR_STORE of a complex parameter with imm 0: the
 * real part, 1: the imaginary part).  False, with k unchanged, if k has an
 * op it does not lower or would not fit KIR_MAX_BODY. */
bool kir_lower_complex(kir_kernel *k);
/* Whether k computes anything complex (before the pair lowering). */
bool kir_has_complex(const kir_kernel *k);
/* Whether the pair lowering takes op with a complex compute type, result or
 * operand: the element-wise ops of irformat/ops_complex.def, casts,
 * pe_complex and concat (not the reductions, not gather). */
bool kir_complex_emittable(pe_op op, pe_dtype ctype, pe_dtype dtype, pe_dtype operand0);
/* An upper bound on the instructions the pair lowering adds for one
 * complex op (its loads' and store's second parts excepted). */
int kir_complex_growth(pe_op op);

/* Identifies this build of the code generators, all of them (the hash of
 * their sources, CMakeLists.txt): the disk cache's names and the trace
 * file's have it, so no code or sequence made by another build is loaded. */
uint32_t pe_codegen_build_stamp(void);

#endif
