/* scan.c — pe_cumsum and pe_cumprod on the host: inclusive scans along one
 * axis, on PE's pool, the same bits for any thread count.
 *
 * The array is [outer, n, inner] around the axis.  Along the last axis
 * (inner 1) each row is scanned alone; a row longer than SCAN_CHUNK is cut
 * into chunks of SCAN_CHUNK elements and scanned in two passes (reduce, then
 * scan): each chunk's total, the totals' running combination per row (the
 * offsets, in chunk order), then each chunk scanned from its offset.  Both
 * passes are parallel over every row's chunks; the cut depends on n alone,
 * never on the threads, so the rounding does too.  Along another axis the
 * scan walks the axis and vectorises across `inner`: blocks of
 * SCAN_COLUMNS columns, each walked down the axis, in parallel.
 *
 * Within a chunk the order is fixed too, and made for the vector units
 * rather than one long chain of dependent adds: a chunk's total runs LANES
 * running values side by side, combined pairwise at the end; its scan takes
 * groups of LANES elements (4 for f32 and f64 sums, in vector registers),
 * each group's own running values first (groups do not wait for each
 * other), then the carry from the groups before added onto each.  Element i of a group is so carry + (x_0 + ... + x_i), not
 * ((carry + x_0) + ...) + x_i: the same error bound, other bits than a
 * sequential loop's.
 *
 * Arithmetic: floats in their dtype (a row's first element starts its sum,
 * so cumsum of -0.0 is -0.0, as NumPy's); i32 and bool in i32, wrapping (in
 * unsigned); complex in C's complex arithmetic. */
#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrinsics.h"

#define LANES        8     /* a chunk's running values: a total's lanes, a scan's groups */
#define SCAN_CHUNK   16384 /* elements: a chunk's two reads stay within L2 on either pass */
#define SCAN_COLUMNS 512   /* columns one task of a scan along an outer axis walks together */

/* One element type pair of a scan: its element operations on an accumulator. */
typedef struct {
    size_t acc_size;
    /* *total = the combination of in[0..n) (n >= 1) */
    void (*total)(const void *in, int64_t n, void *total);
    /* out[i] = start op in[0] op ... op in[i] (start NULL: from in[0]) */
    void (*row)(const void *in, void *out, int64_t n, const void *start);
    /* acc = acc op x */
    void (*combine)(void *acc, const void *x);
    /* columns [j0, j1) of an [n, inner] block scanned down its rows */
    void (*columns)(const void *in, void *out, int64_t n, int64_t inner, int64_t j0, int64_t j1);
} scan_kind;

#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))

#define SCAN_KIND(name, TIN, TACC, TOUT, OP, ROW)                                                         \
    static inline void name##_total(const void *in_, int64_t n, void *total)                              \
    {                                                                                                     \
        const TIN *in = in_;                                                                              \
        int64_t i = 0;                                                                                    \
        TACC acc;                                                                                         \
        if (n >= 2 * LANES) { /* LANES running values, combined in a fixed order */                       \
            TACC lane[LANES];                                                                             \
            for (int k = 0; k < LANES; k++) lane[k] = (TACC)in[k];                                        \
            for (i = LANES; i + LANES <= n; i += LANES)                                                   \
                for (int k = 0; k < LANES; k++) lane[k] = OP(lane[k], (TACC)in[i + k]);                   \
            for (int w = LANES / 2; w > 0; w /= 2)                                                        \
                for (int k = 0; k < w; k++) lane[k] = OP(lane[k], lane[k + w]);                           \
            acc = lane[0];                                                                                \
        } else {                                                                                          \
            acc = (TACC)in[i++];                                                                          \
        }                                                                                                 \
        for (; i < n; i++) acc = OP(acc, (TACC)in[i]);                                                    \
        *(TACC *)total = acc;                                                                             \
    }                                                                                                     \
    __attribute__((unused)) static void name##_row(const void *in_, void *out_, int64_t n, const void *start) \
    {                                                                                                     \
        const TIN *in = in_;                                                                              \
        TOUT *out = out_;                                                                                 \
        int64_t i = 0;                                                                                    \
        bool carried = start != NULL;                                                                     \
        TACC carry = carried ? *(const TACC *)start : (TACC)0;                                            \
        for (; i + LANES <= n; i += LANES) { /* a group's own running values, then the carry onto them */ \
            TACC t[LANES];                                                                                \
            t[0] = (TACC)in[i];                                                                           \
            for (int k = 1; k < LANES; k++) t[k] = OP(t[k - 1], (TACC)in[i + k]);                         \
            if (carried)                                                                                  \
                for (int k = 0; k < LANES; k++) t[k] = OP(carry, t[k]);                                   \
            for (int k = 0; k < LANES; k++) out[i + k] = (TOUT)t[k];                                      \
            carry = t[LANES - 1], carried = true;                                                         \
        }                                                                                                 \
        for (; i < n; i++) {                                                                              \
            carry = carried ? OP(carry, (TACC)in[i]) : (TACC)in[i];                                       \
            carried = true;                                                                               \
            out[i] = (TOUT)carry;                                                                         \
        }                                                                                                 \
    }                                                                                                     \
    static inline void name##_combine(void *acc, const void *x) { *(TACC *)acc = OP(*(TACC *)acc, *(const TACC *)x); } \
    static inline void name##_columns(const void *in_, void *out_, int64_t n, int64_t inner, int64_t j0, int64_t j1) \
    {                                                                                                     \
        const TIN *in = in_;                                                                              \
        TOUT *out = out_;                                                                                 \
        for (int64_t j = j0; j < j1; j++) out[j] = (TOUT)(TACC)in[j];                                     \
        for (int64_t i = 1; i < n; i++) {                                                                 \
            const TIN *x = in + i * inner;                                                                \
            TOUT *y = out + i * inner, *prev = y - inner;                                                 \
            for (int64_t j = j0; j < j1; j++) y[j] = (TOUT)OP((TACC)prev[j], (TACC)x[j]);                 \
        }                                                                                                 \
    }                                                                                                     \
    static const scan_kind name = {sizeof(TACC), name##_total, ROW, name##_combine, name##_columns};

/* f32 and f64 sums: the groups' running values by a log-step tree in
 * vector registers ([x0, x0+x1, x1+x2, x2+x3], then pairs two apart: four
 * elements, two adds and two shuffles), the carry added onto the group in
 * one vector add.  A lane with nothing before it keeps its value as it is
 * (a -0.0 stays -0.0).  The order is this C's, not the compiler's: the same
 * bits on every machine. */
#define VECTOR_SUM_ROW(name, T, TI)                                                                       \
    typedef T name##_vec __attribute__((vector_size(4 * sizeof(T))));                                     \
    typedef TI name##_ivec __attribute__((vector_size(4 * sizeof(T))));                                   \
    static void name(const void *in_, void *out_, int64_t n, const void *start)                           \
    {                                                                                                     \
        const T *in = in_;                                                                                \
        T *out = out_;                                                                                    \
        const name##_vec zero = {0};                                                                      \
        const name##_ivec one = {-1, 0, 0, 0}, two = {-1, -1, 0, 0}; /* lanes kept */                     \
        bool carried = start != NULL;                                                                     \
        T carry = carried ? *(const T *)start : 0;                                                        \
        int64_t i = 0;                                                                                    \
        for (; i + 4 <= n; i += 4) {                                                                      \
            name##_vec v;                                                                                 \
            memcpy(&v, in + i, sizeof v);                                                                 \
            name##_ivec sum = (name##_ivec)(v + __builtin_shufflevector(v, zero, 4, 0, 1, 2));            \
            v = (name##_vec)((sum & ~one) | ((name##_ivec)v & one));                                      \
            sum = (name##_ivec)(v + __builtin_shufflevector(v, zero, 4, 5, 0, 1));                        \
            v = (name##_vec)((sum & ~two) | ((name##_ivec)v & two));                                      \
            if (carried) v = (name##_vec){carry, carry, carry, carry} + v;                                \
            memcpy(out + i, &v, sizeof v);                                                                \
            carry = v[3], carried = true;                                                                 \
        }                                                                                                 \
        for (; i < n; i++) {                                                                              \
            carry = carried ? carry + in[i] : in[i];                                                      \
            carried = true;                                                                               \
            out[i] = carry;                                                                               \
        }                                                                                                 \
    }
VECTOR_SUM_ROW(sum_f32_vector_row, float, int32_t)
VECTOR_SUM_ROW(sum_f64_vector_row, double, int64_t)

/* i32 results wrap: accumulated in uint32_t, stored as int32_t (two's complement, as gcc and clang define) */
SCAN_KIND(sum_bool, unsigned char, uint32_t, int32_t, ADD, sum_bool_row)
SCAN_KIND(sum_i32, int32_t, uint32_t, int32_t, ADD, sum_i32_row)
SCAN_KIND(sum_f32, float, float, float, ADD, sum_f32_vector_row)
SCAN_KIND(sum_f64, double, double, double, ADD, sum_f64_vector_row)
SCAN_KIND(sum_c64, float _Complex, float _Complex, float _Complex, ADD, sum_c64_row)
SCAN_KIND(sum_c128, double _Complex, double _Complex, double _Complex, ADD, sum_c128_row)
SCAN_KIND(prod_bool, unsigned char, uint32_t, int32_t, MUL, prod_bool_row)
SCAN_KIND(prod_i32, int32_t, uint32_t, int32_t, MUL, prod_i32_row)
SCAN_KIND(prod_f32, float, float, float, MUL, prod_f32_row)
SCAN_KIND(prod_f64, double, double, double, MUL, prod_f64_row)
SCAN_KIND(prod_c64, float _Complex, float _Complex, float _Complex, MUL, prod_c64_row)
SCAN_KIND(prod_c128, double _Complex, double _Complex, double _Complex, MUL, prod_c128_row)

static const scan_kind *kind_of(pe_op op, pe_dtype in)
{
    static const scan_kind *const sums[PE_DTYPE__COUNT] = {[PE_F32] = &sum_f32, [PE_F64] = &sum_f64,
                                                           [PE_I32] = &sum_i32, [PE_BOOL] = &sum_bool,
                                                           [PE_C64] = &sum_c64, [PE_C128] = &sum_c128};
    static const scan_kind *const prods[PE_DTYPE__COUNT] = {[PE_F32] = &prod_f32, [PE_F64] = &prod_f64,
                                                            [PE_I32] = &prod_i32, [PE_BOOL] = &prod_bool,
                                                            [PE_C64] = &prod_c64, [PE_C128] = &prod_c128};
    if ((unsigned)in >= PE_DTYPE__COUNT) return NULL;
    return op == PE_OP_cumsum ? sums[in] : op == PE_OP_cumprod ? prods[in] : NULL;
}

/* The result dtype of a scan of `in`: the recorder's (ARITH: bool in i32). */
static pe_dtype result_of(pe_dtype in) { return in == PE_BOOL ? PE_I32 : in; }

bool pe_scan_fits(pe_intrinsic_args *a)
{
    if (a->n_members != 1 || a->n_in != 1) return false;
    const pe_port *r = a->members[0], *x = a->in[0];
    if (!kind_of((pe_op)r->op, (pe_dtype)x->dtype) || r->dtype != result_of((pe_dtype)x->dtype)) return false;
    if (r->rank != x->rank || r->rank < 1 || r->param[0] < 0 || r->param[0] >= r->rank) return false;
    for (int d = 0; d < r->rank; d++)
        if (r->shape[d] != x->shape[d]) return false;
    return true;
}

typedef struct {
    const scan_kind *k;
    const char *in;
    char *out;
    size_t in_size, out_size;
    int64_t n, inner, chunks_per_row; /* rows of n along the last axis cut into chunks_per_row chunks */
    int64_t column_blocks;            /* an outer axis: blocks of SCAN_COLUMNS per outer index */
    char *totals;                     /* per chunk, acc_size each; then each chunk's offset */
} scan_job;

static void chunk_totals(int64_t begin, int64_t end, void *const *args)
{
    const scan_job *j = args[0];
    for (int64_t c = begin; c < end; c++) {
        int64_t row = c / j->chunks_per_row, first = row * j->n + c % j->chunks_per_row * SCAN_CHUNK;
        int64_t len = j->n - c % j->chunks_per_row * SCAN_CHUNK;
        j->k->total(j->in + first * (int64_t)j->in_size, len < SCAN_CHUNK ? len : SCAN_CHUNK,
                    j->totals + c * (int64_t)j->k->acc_size);
    }
}

static void chunk_scans(int64_t begin, int64_t end, void *const *args)
{
    const scan_job *j = args[0];
    for (int64_t c = begin; c < end; c++) {
        int64_t at = c % j->chunks_per_row, first = c / j->chunks_per_row * j->n + at * SCAN_CHUNK;
        int64_t len = j->n - at * SCAN_CHUNK;
        const void *start = at ? j->totals + c * (int64_t)j->k->acc_size : NULL;
        j->k->row(j->in + first * (int64_t)j->in_size, j->out + first * (int64_t)j->out_size,
                  len < SCAN_CHUNK ? len : SCAN_CHUNK, start);
    }
}

static void column_blocks(int64_t begin, int64_t end, void *const *args)
{
    const scan_job *j = args[0];
    for (int64_t b = begin; b < end; b++) {
        int64_t outer = b / j->column_blocks, j0 = b % j->column_blocks * SCAN_COLUMNS;
        int64_t j1 = j0 + SCAN_COLUMNS < j->inner ? j0 + SCAN_COLUMNS : j->inner;
        int64_t first = outer * j->n * j->inner;
        j->k->columns(j->in + first * (int64_t)j->in_size, j->out + first * (int64_t)j->out_size, j->n, j->inner, j0,
                      j1);
    }
}

/* Each row's chunk totals turned into the chunks' offsets, in place: chunk
 * c > 0 starts from the combination of chunks 0 .. c-1. */
static void offsets(const scan_job *j, int64_t rows)
{
    size_t z = j->k->acc_size;
    char running[16];
    for (int64_t r = 0; r < rows; r++) {
        char *t = j->totals + r * j->chunks_per_row * (int64_t)z;
        memcpy(running, t, z);
        for (int64_t c = 1; c < j->chunks_per_row; c++) {
            char total[16];
            memcpy(total, t + c * (int64_t)z, z);
            memcpy(t + c * (int64_t)z, running, z);
            j->k->combine(running, total);
        }
    }
}

bool pe_scan_run(pe_intrinsic_args *a)
{
    const pe_port *r = a->members[0], *x = a->in[0];
    if (!a->out[0] || r->numel == 0) return true;
    int axis = (int)r->param[0];
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= r->shape[d];
    for (int d = axis + 1; d < r->rank; d++) inner *= r->shape[d];
    scan_job j = {.k = kind_of((pe_op)r->op, (pe_dtype)x->dtype), .in = x->buf, .out = a->out[0],
                  .in_size = pe_dtype_size((pe_dtype)x->dtype), .out_size = pe_dtype_size((pe_dtype)r->dtype),
                  .n = r->shape[axis], .inner = inner};
    void *args[1] = {&j};
    if (inner > 1) {
        j.column_blocks = (inner + SCAN_COLUMNS - 1) / SCAN_COLUMNS;
        int64_t width = inner < SCAN_COLUMNS ? inner : SCAN_COLUMNS;
        pe_intrinsic_parallel(column_blocks, args, outer * j.column_blocks, j.n * width);
        return true;
    }
    j.chunks_per_row = (j.n + SCAN_CHUNK - 1) / SCAN_CHUNK;
    if (j.chunks_per_row == 1) { /* rows of one chunk: the scan alone, row by row */
        pe_intrinsic_parallel(chunk_scans, args, outer, j.n);
        return true;
    }
    j.totals = malloc((size_t)(outer * j.chunks_per_row) * j.k->acc_size);
    if (!j.totals) {
        a->code = PE_E_NOMEM;
        snprintf(a->why, sizeof a->why, "out of memory for the scan's %lld chunk totals",
                 (long long)(outer * j.chunks_per_row));
        return false;
    }
    pe_intrinsic_parallel(chunk_totals, args, outer * j.chunks_per_row, SCAN_CHUNK);
    offsets(&j, outer);
    pe_intrinsic_parallel(chunk_scans, args, outer * j.chunks_per_row, SCAN_CHUNK);
    free(j.totals);
    return true;
}
