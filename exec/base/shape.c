/* shape.c — NumPy broadcasting and PE's type promotion (bool < i32 < f32 <
 * f64 < c64 < c128, with weakly typed C-scalar operands that adopt the
 * array's type). */
#include "runtime.h"
#include "shape.h"

/* The promotion order is a column of irformat/dtypes.def. */
static int promote_rank(pe_dtype t) { return pe_dtype_valid(t) ? pe_dtype_table[t].promote_rank : 3; }

/* A complex type meets a real one as NumPy has it for f32 and f64: its
 * parts widen to the real type's precision (c64 with f64 is c128); with
 * bool and i32 it stays (PE's rule for reals: i32 with f32 is f32). */
pe_dtype pe_promote(pe_dtype a, pe_dtype b)
{
    if (pe_dtype_is_complex(a) || pe_dtype_is_complex(b)) {
        pe_dtype wider = promote_rank(a) >= promote_rank(b) ? a : b;
        return a == PE_F64 || b == PE_F64 ? PE_C128 : wider;
    }
    return promote_rank(a) >= promote_rank(b) ? a : b;
}

/* Strong operands promote among themselves; a weak operand only raises the
 * kind: a weak float with integer or bool arrays gives f32, a weak int with
 * bool arrays gives i32, a weak complex with real arrays the complex type of
 * their precision (f32, i32, bool: c64; f64: c128).  Only weak operands:
 * ordinary promotion. */
pe_dtype pe_promote_operands(pe_port *const *in, int n)
{
    bool any_strong = false, weak_float = false, weak_int = false, weak_complex = false;
    pe_dtype strong = PE_BOOL, weak = PE_BOOL;
    for (int i = 0; i < n; i++) {
        if (in[i]->weak) {
            weak = pe_promote(weak, (pe_dtype)in[i]->dtype);
            if (pe_dtype_is_complex((pe_dtype)in[i]->dtype)) weak_complex = true;
            else if (pe_dtype_is_float((pe_dtype)in[i]->dtype)) weak_float = true;
            else if (in[i]->dtype == PE_I32) weak_int = true;
        } else {
            strong = any_strong ? pe_promote(strong, (pe_dtype)in[i]->dtype) : (pe_dtype)in[i]->dtype;
            any_strong = true;
        }
    }
    if (!any_strong) return weak;
    if (weak_complex) return pe_dtype_complex_of(strong);
    if (weak_float && pe_dtype_is_complex(strong)) return strong;
    if (weak_float && !pe_dtype_is_float(strong)) return PE_F32;
    if (weak_int && strong == PE_BOOL) return PE_I32;
    return strong;
}

pe_dtype pe_compute_dtype(pe_result_rule rule, pe_dtype promoted)
{
    switch (rule) {
    case PE_RESULT_ARITH: return promoted == PE_BOOL ? PE_I32 : promoted;
    case PE_RESULT_FLOAT: return pe_dtype_is_float(promoted) || pe_dtype_is_complex(promoted) ? promoted : PE_F32;
    case PE_RESULT_COMPLEX: return pe_dtype_real_part(pe_compute_dtype(PE_RESULT_FLOAT, promoted));
    default: return promoted;
    }
}

pe_dtype pe_result_dtype(pe_result_rule rule, pe_dtype promoted)
{
    switch (rule) {
    case PE_RESULT_BOOL: return PE_BOOL;
    case PE_RESULT_INDEX: return PE_I32;
    case PE_RESULT_COMPLEX: return pe_dtype_complex_of(pe_compute_dtype(rule, promoted));
    default: return pe_compute_dtype(rule, promoted);
    }
}

void pe_op_types(pe_op op, pe_port *const *in, int n, pe_dtype *dtype, pe_dtype *ctype)
{
    pe_dtype promoted;
    if (pe_op_table[op].kind == PE_KIND_REDUCE) /* one operand keeps its type; dot's two promote */
        promoted = n == 2 ? pe_promote_operands(in, 2) : (pe_dtype)in[0]->dtype;
    else /* cond's condition does not take part in promotion */
        promoted = op == PE_OP_cond ? pe_promote_operands(in + 1, n - 1) : pe_promote_operands(in, n);
    *ctype = pe_compute_dtype(pe_op_table[op].result, promoted);
    *dtype = pe_result_dtype(pe_op_table[op].result, promoted);
    /* abs, arg, real, imag of a complex value are real (irformat/ops_complex.def) */
    if (pe_dtype_is_complex(*ctype) && pe_op_complex_gives_real(op)) *dtype = pe_dtype_real_part(*ctype);
}

bool pe_broadcast_shapes(pe_port *const *in, int n, int *rank, int64_t *shape)
{
    int r = 0;
    for (int i = 0; i < n; i++)
        if (in[i]->rank > r) r = in[i]->rank;
    for (int d = 0; d < r; d++) shape[d] = 1;
    for (int i = 0; i < n; i++) {
        int off = r - in[i]->rank;
        for (int d = 0; d < in[i]->rank; d++) {
            int64_t have = shape[off + d], dim = in[i]->shape[d];
            if (dim == have || dim == 1) continue;
            if (have == 1) shape[off + d] = dim;
            else return false;
        }
    }
    *rank = r;
    return true;
}

bool pe_normalise_axis(int *axis, int rank)
{
    int a = *axis < 0 ? *axis + rank : *axis;
    if (a < 0 || a >= rank) return false;
    *axis = a;
    return true;
}

bool pe_shape_numel_checked(int rank, const int64_t *shape, int64_t *numel)
{
    /* every product checked: a wrapped count (2^62 + 3 by 4 is 12) would be
     * accepted as a small array whose views and kernels then index far
     * outside the buffer (issue 22) */
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        if (shape[d] < 0 || __builtin_mul_overflow(n, shape[d], &n)) return false;
    if (n > PE_MAX_NUMEL) return false;
    *numel = n;
    return true;
}

int64_t pe_shape_numel(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    return n;
}

void pe_broadcast_strides(int in_rank, const int64_t *in_shape, int rank, int64_t *stride)
{
    int off = rank - in_rank;
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        int k = d - off;
        if (k < 0 || in_shape[k] == 1) stride[d] = 0;
        else {
            stride[d] = s;
            s *= in_shape[k];
        }
    }
}
