/* kir_lower.c — lowering: the kernel IR's composed ops (sec, asec, logb,
 * clamp, ...: the lowering column of irformat/ops_codegen.def) rewritten
 * into the primitives they are made of, once, before either code generator
 * sees the kernel.  So each composition is written once, as a table row,
 * and the generators emit primitives only.
 *
 * It runs in the program generator (proggen.c, as a kernel is closed): the
 * one place every kernel comes from on its way to the CPU JIT, the GPU, the
 * compile ahead and the trace cache, so every cache holds and hashes the
 * lowered kernel.  Lowering is a pure function of the kernel: the hashes stay
 * deterministic functions of the batch.
 *
 * The arithmetic is the one the generators emitted before: the steps
 * compute in the op's compute type, or in double for an f32 op the
 * reference rounds once (f32_in_double: the steps then hold doubles), and
 * the last step converts to the op's result type, the one rounding.
 * Operands meet the steps in the op's promoted type first, as they meet any
 * op. */
#include <string.h>

#include "codegen.h"
#include "kir.h"

int kir_lower_growth(pe_op op)
{
    int n = pe_op_codegen_table[op].lowering.n_steps;
    /* the steps, and an f32 conversion of each operand when they hold doubles */
    return (n > 1 ? n - 1 : 0) + (pe_f32_in_double(op) ? pe_op_table[op].arity : 0);
}

static bool composed(const kir_inst *in) { return in->kind == KIR_OP && pe_op_composed((pe_op)in->op); }

bool kir_lowered(const kir_kernel *k)
{
    for (int v = 0; v < k->n_body; v++)
        if (composed(&k->body[v])) return false;
    return !kir_has_complex(k);
}

bool kir_lower(kir_kernel *k)
{
    if (kir_lowered(k)) return true;
    kir_kernel before;
    bool had_complex = kir_has_complex(k);
    if (had_complex) {
        before = *k; /* "k unchanged" if the composed ops do not fit after */
        if (!kir_lower_complex(k)) return false;
    }
    int grown = k->n_body;
    for (int v = 0; v < k->n_body; v++)
        if (composed(&k->body[v])) grown += kir_lower_growth((pe_op)k->body[v].op);
    if (grown > KIR_MAX_BODY) {
        if (had_complex) *k = before;
        return false;
    }
    kir_inst body[KIR_MAX_BODY];
    uint16_t moved[KIR_MAX_BODY]; /* old value -> new value */
    int n = 0;
    for (int v = 0; v < k->n_body; v++) {
        kir_inst in = k->body[v];
        int first, n_values = kir_value_operands(&in, &first);
        for (int j = first; j < first + n_values; j++) in.a[j] = moved[in.a[j]];
        if (!composed(&in)) {
            moved[v] = (uint16_t)n;
            body[n++] = in;
            continue;
        }
        const pe_lowering *l = &pe_op_codegen_table[in.op].lowering;
        pe_dtype step_type = in.ctype == PE_F32 && pe_f32_in_double((pe_op)in.op) ? PE_F64 : (pe_dtype)in.ctype;
        uint16_t ref[PE_LOWER_NONE] = {0}; /* A0..A2, then S0, S1 (zeroed: gcc -O3 cannot see that n <= 3) */
        memcpy(ref, in.a, sizeof in.a);
        /* Steps in double take an operand of another type (i32, bool) through
         * f32 first: the op's promoted type, which the reference and the
         * primitives (sin, cos, tan, ...) round it to.  An i32 above 2^24
         * taken into double whole gives another angle altogether. */
        for (int j = 0; j < in.n && step_type != in.ctype; j++) {
            if (body[ref[j]].dtype == in.ctype) continue;
            body[n] = (kir_inst){.kind = KIR_OP, .op = PE_OP_cast, .ctype = in.ctype, .dtype = in.ctype, .n = 1, .a = {ref[j]}};
            ref[j] = (uint16_t)n++;
        }
        for (int s = 0; s < l->n_steps; s++) {
            const pe_lower_step *st = &l->step[s];
            bool last = s == l->n_steps - 1;
            kir_inst step = {.kind = KIR_OP, .op = st->op, .ctype = (uint8_t)step_type,
                             .dtype = last ? in.dtype : (uint8_t)step_type, .n = st->y == PE_LOWER_NONE ? 1 : 2,
                             .a = {ref[st->x], st->y == PE_LOWER_NONE ? 0 : ref[st->y]}};
            if (!last) ref[PE_LOWER_S0 + s] = (uint16_t)n;
            body[n++] = step;
        }
        moved[v] = (uint16_t)(n - 1);
    }
    memcpy(k->body, body, sizeof body[0] * (size_t)n);
    k->n_body = n;
    return true;
}
