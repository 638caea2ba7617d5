/* ops.h — the operation catalog as C: the op enum and its per-op facts,
 * both expanded from ops.def (the only place an operation is declared). */
#ifndef PE_IRFORMAT_OPS_H
#define PE_IRFORMAT_OPS_H

#include <stdint.h>

typedef enum {
#define PE_OP(name, kind, arity, fusible, cost, result) PE_OP_##name,
#include "ops.def"
    PE_OP__COUNT
} pe_op;

typedef enum { PE_KIND_MAP, PE_KIND_REDUCE, PE_KIND_GENERATOR, PE_KIND_VIEW, PE_KIND_INTRINSIC, PE_KIND_IO } pe_op_kind;

/* How an op's result dtype follows from its promoted operand dtype. */
typedef enum {
    PE_RESULT_ARITH,    /* promoted, at least i32 */
    PE_RESULT_FLOAT,    /* promoted, at least f32 */
    PE_RESULT_BOOL,     /* always bool */
    PE_RESULT_SAME,     /* promoted, as is */
    PE_RESULT_INDEX,    /* i32 */
    PE_RESULT_COMPLEX,  /* the complex type of the promoted (real) type: f64 gives c128, others c64 */
    PE_RESULT_EXPLICIT  /* given by the request */
} pe_result_rule;

typedef struct {
    const char *name;
    pe_op_kind kind;
    uint8_t arity;
    uint8_t fusible;
    uint16_t cost;
    pe_result_rule result;
} pe_op_info;

extern const pe_op_info pe_op_table[PE_OP__COUNT];

static inline const pe_op_info *pe_op_info_of(pe_op op) { return &pe_op_table[op]; }

/* Complex operands (irformat/ops_complex.def): whether `op` takes them (a
 * view always does), and whether its result is then real (abs, arg, real,
 * imag: the type of the parts). */
int pe_op_takes_complex(pe_op op);
int pe_op_complex_gives_real(pe_op op);

#endif
