/* cuda_test_kernels.h — kernels in kernel IR for the CUDA generator's tests
 * (test_cuda_codegen.c compiles them with NVRTC, test_cuda_on_host.c runs
 * them on the host): one per element-wise op and compute type, casts, every
 * reduction, the f32 cdf_norm pair. */
#ifndef PE_TESTS_CUDA_TEST_KERNELS_H
#define PE_TESTS_CUDA_TEST_KERNELS_H

#include "test_util.h"

#include "jit/kir/codegen.h"
#include "exec/cpu/cpu_gccjit.h"
#include "exec/cuda/cuda_emit.h"
#include "jit/kir/kir.h"

static const pe_dtype dtypes[] = {PE_F32, PE_F64, PE_I32, PE_BOOL};

/* The dtype of op's result for compute type ct (enough for compilation). */
static inline pe_dtype result_of(pe_op op, pe_dtype ct)
{
    switch (pe_op_table[op].result) {
    case PE_RESULT_BOOL: return PE_BOOL;
    default: return ct;
    }
}

/* A kernel: n inputs of dtype ct (CONTIG), op, one output. */
static inline kir_kernel map_kernel(pe_op op, pe_dtype ct, int arity)
{
    kir_kernel k = {0};
    k.rank = 1;
    k.shape[0] = 1000;
    for (int j = 0; j < arity; j++) {
        k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = ct};
        k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = ct, .n = 1, .a = {(uint16_t)j}};
    }
    pe_dtype rt = result_of(op, ct);
    uint16_t value = (uint16_t)k.n_body, out = (uint16_t)k.n_params;
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = op, .dtype = rt, .ctype = ct, .n = (uint8_t)arity, .a = {0, 1, 2}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = rt};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {out, value}};
    return k;
}

typedef struct {
    kir_kernel *k;
    size_t n, cap;
} kernel_list;

static inline void add(kernel_list *l, kir_kernel k)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->k = realloc(l->k, l->cap * sizeof *l->k);
        assert_non_null(l->k);
    }
    /* a kernel twice (same IR) would define its function twice */
    for (size_t i = 0; i < l->n; i++)
        if (kir_equal(&l->k[i], &k)) return;
    l->k[l->n++] = k;
}

/* The kernels here are written as the recorder asks (one op each, sec and
 * clamp included); the generator takes them as the program generator hands
 * them over: lowered (kir_lower.c), composed ops turned into primitives.
 * The tests keep the written kernel (its op is what the reference computes)
 * and emit, and look up by name, its lowered copy. */
static inline kir_kernel *lowered_copy(const kir_kernel *k)
{
    kir_kernel *c = malloc(sizeof *c);
    assert_non_null(c);
    *c = *k;
    assert_true(kir_lower(c));
    return c;
}

/* The exported name of written kernel k once lowered. */
static inline void test_kernel_name(const kir_kernel *k, char *out, size_t n)
{
    kir_kernel *c = lowered_copy(k);
    kir_kernel_name(c, out, n);
    free(c);
}

/* The CUDA C of n kernels (lowered first). */
static inline char *emit_lowered(const kir_kernel *const *ks, size_t n)
{
    const kir_kernel **lowered = malloc((n ? n : 1) * sizeof *lowered);
    assert_non_null(lowered);
    for (size_t i = 0; i < n; i++) lowered[i] = lowered_copy(ks[i]);
    char *src = pe_cuda_emit(lowered, n);
    assert_non_null(src);
    for (size_t i = 0; i < n; i++) free((void *)lowered[i]);
    free(lowered);
    return src;
}

/* The CUDA C of kernel k alone. */
static inline char *emit_one(const kir_kernel *k)
{
    const kir_kernel *ks[] = {k};
    return emit_lowered(ks, 1);
}

/* The CUDA C of every kernel of the list (one source). */
static inline char *emit_all(const kernel_list *l)
{
    const kir_kernel **ptrs = malloc(l->n * sizeof *ptrs);
    assert_non_null(ptrs);
    for (size_t i = 0; i < l->n; i++) ptrs[i] = &l->k[i];
    char *src = emit_lowered(ptrs, l->n);
    free(ptrs);
    return src;
}

/* One kernel per element-wise op and compute type the generators take, and
 * casts between every pair of types. */
static inline kernel_list map_kernels(void)
{
    kernel_list l = {0};
    for (int op = 0; op < PE_OP__COUNT; op++) {
        if (pe_op_table[op].kind != PE_KIND_MAP || op == PE_OP_cast) continue;
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
            pe_dtype ct = dtypes[d];
            if (!pe_cpu_can_emit((pe_op)op, ct, result_of((pe_op)op, ct), ct)) continue;
            add(&l, map_kernel((pe_op)op, ct, pe_op_table[op].arity));
        }
    }
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 4; b++) {
            kir_kernel k = map_kernel(PE_OP_cast, dtypes[a], 1);
            k.body[1].dtype = dtypes[b];
            k.params[1].dtype = dtypes[b];
            add(&l, k);
        }
    return l;
}

/* Complex values (the pair lowering, kir_complex.c): each element-wise op
 * that takes complex operands, in c64 and c128, its operands of dtypes
 * `in` (CONTIG) and its result of dtype rt. */
static inline kir_kernel complex_kernel(pe_op op, pe_dtype ct, pe_dtype rt, const pe_dtype *in, int arity)
{
    kir_kernel k = {0};
    k.rank = 1;
    k.shape[0] = 1000;
    for (int j = 0; j < arity; j++) {
        k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = (uint8_t)in[j]};
        k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = (uint8_t)in[j], .n = 1, .a = {(uint16_t)j}};
    }
    uint16_t value = (uint16_t)k.n_body, out = (uint16_t)k.n_params;
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = (uint8_t)op, .dtype = (uint8_t)rt, .ctype = (uint8_t)ct,
                                    .n = (uint8_t)arity, .a = {0, 1, 2}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = (uint8_t)rt};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .dtype = (uint8_t)rt, .n = 2, .a = {out, value}};
    return k;
}

static const pe_op complex_ops[] = {PE_OP_add, PE_OP_sub, PE_OP_mul, PE_OP_div, PE_OP_pow, PE_OP_neg, PE_OP_abs,
                                    PE_OP_exp, PE_OP_log, PE_OP_sqrt, PE_OP_eq, PE_OP_ne, PE_OP_conj, PE_OP_real,
                                    PE_OP_imag, PE_OP_arg};

/* Every complex op in c64 and c128 (binary ones also with a real second
 * operand), casts real -> complex and between the complex types,
 * pe_complex and cond. */
static inline kernel_list complex_kernels(void)
{
    kernel_list l = {0};
    for (int c = 0; c < 2; c++) {
        pe_dtype ct = c ? PE_C128 : PE_C64, part = pe_dtype_real_part(ct);
        for (size_t o = 0; o < sizeof complex_ops / sizeof complex_ops[0]; o++) {
            pe_op op = complex_ops[o];
            int arity = pe_op_table[op].arity;
            pe_dtype rt = op == PE_OP_eq || op == PE_OP_ne ? PE_BOOL : pe_op_complex_gives_real(op) ? part : ct;
            for (int mixed = 0; mixed < (arity > 1 ? 2 : 1); mixed++) {
                pe_dtype in[2] = {ct, mixed ? part : ct};
                add(&l, complex_kernel(op, ct, rt, in, arity));
            }
        }
        pe_dtype other = c ? PE_C64 : PE_C128;
        add(&l, complex_kernel(PE_OP_cast, ct, ct, &part, 1));   /* real -> complex */
        add(&l, complex_kernel(PE_OP_cast, ct, ct, &other, 1));  /* between the complex types */
        pe_dtype parts[2] = {part, part};
        add(&l, complex_kernel(PE_OP_complex, part, ct, parts, 2));
        pe_dtype cond_in[3] = {PE_BOOL, ct, ct};
        add(&l, complex_kernel(PE_OP_cond, ct, ct, cond_in, 3));
    }
    return l;
}

/* The two reductions a complex prod is recorded as (jit/record/record.c's
 * record_complex_prod), for c64 and c128 operands: |z| (z taken in c128)
 * into a product, arg z into a sum, each into (high, low) partials. */
static inline kernel_list complex_prod_kernels(void)
{
    kernel_list l = {0};
    for (pe_dtype ct = PE_C64; ct <= PE_C128; ct++)
        for (int angle = 0; angle < 2; angle++) {
            kir_kernel k = {0};
            k.rank = 1, k.shape[0] = 100000;
            k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = ct};
            k.body[0] = (kir_inst){.kind = KIR_LOAD, .dtype = ct, .n = 1, .a = {0}};
            uint16_t z = 0;
            if (ct != PE_C128)
                k.body[z = 1] = (kir_inst){.kind = KIR_OP, .op = PE_OP_cast, .dtype = PE_C128, .ctype = PE_C128, .n = 1, .a = {0}};
            uint16_t part = (uint16_t)(z + 1);
            k.body[part] = (kir_inst){.kind = KIR_OP, .op = angle ? PE_OP_arg : PE_OP_abs, .dtype = PE_F64, .ctype = PE_C128,
                                      .n = 1, .a = {z}};
            k.params[k.n_params++] = (kir_param){.kind = KIR_OUT_PARTIAL, .dtype = PE_F64};
            k.body[part + 1] = (kir_inst){.kind = KIR_REDUCE, .op = angle ? PE_OP_sum : PE_OP_prod, .dtype = PE_F64,
                                          .ctype = PE_F64, .n = 2, .a = {1, part}};
            k.n_body = part + 2;
            add(&l, k);
        }
    return l;
}

static const pe_op reductions[] = {PE_OP_sum,        PE_OP_mean,       PE_OP_dot,    PE_OP_norm1,
                                   PE_OP_norm2,      PE_OP_max_reduce, PE_OP_min_reduce, PE_OP_norminf};

/* Operands x (dot: x, y) of type ct; exp(x) stored on the way (a visible
 * producer); the reduction of exp(x) (dot: of exp(x) * y) into partials. */
static inline kir_kernel reduction_kernel(pe_op op, pe_dtype ct)
{
    kir_kernel k = {0};
    k.rank = 1, k.shape[0] = 100000;
    int arity = op == PE_OP_dot ? 2 : 1;
    for (int j = 0; j < arity; j++) {
        k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = ct};
        k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = ct, .n = 1, .a = {(uint16_t)j}};
    }
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_exp, .dtype = ct, .ctype = ct, .n = 1, .a = {0}};
    int produced = k.n_body - 1;
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = ct};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {(uint16_t)(k.n_params - 1), (uint16_t)produced}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT_PARTIAL, .dtype = PE_F64};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_REDUCE, .op = op, .dtype = PE_F64, .ctype = ct, .n = (uint8_t)(1 + arity),
                                    .a = {(uint16_t)(k.n_params - 1), (uint16_t)produced, 1}};
    return k;
}

/* x (dot: x, y) of type ct loaded and reduced by op into partials: no
 * producer, so that any compute type fits (the folded full reductions). */
static inline kir_kernel plain_reduction_kernel(pe_op op, pe_dtype ct, int64_t n)
{
    kir_kernel k = {0};
    k.rank = 1, k.shape[0] = n;
    int arity = op == PE_OP_dot ? 2 : 1;
    for (int j = 0; j < arity; j++) {
        k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = ct};
        k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = ct, .n = 1, .a = {(uint16_t)j}};
    }
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT_PARTIAL, .dtype = PE_F64};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_REDUCE, .op = op, .dtype = PE_F64, .ctype = ct, .n = (uint8_t)(1 + arity),
                                    .a = {(uint16_t)arity, 0, 1}};
    return k;
}

/* Every reduction of the list in every compute type both generators take
 * it in, that leaves (high, low) partials (f64 norm2 leaves chunk
 * statistics: test_cuda_on_host's folded and multi-walk test). */
static inline kernel_list reduction_kernels(void)
{
    kernel_list l = {0};
    for (size_t r = 0; r < sizeof reductions / sizeof reductions[0]; r++)
        for (pe_dtype ct = PE_F32; ct <= PE_F64; ct++)
            if (pe_cpu_can_emit(reductions[r], ct, PE_F64, ct) && pe_cuda_can_emit(reductions[r], ct, PE_F64, ct) &&
                kir_partial_width(reductions[r], ct) == 2) /* f64 norm2's chunk statistics: test_folded_... */
                add(&l, reduction_kernel(reductions[r], ct));
    return l;
}

/* x -> cdf_norm(-x), cdf_norm(x), cdf_norm(exp(x)), all f32. */
static inline kir_kernel cdf_pair_kernel(void)
{
    kir_kernel k = {0};
    k.rank = 1, k.shape[0] = 1000;
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = PE_F32};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {0}};                          /* v0 x */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_neg, .dtype = PE_F32, .ctype = PE_F32, .n = 1, .a = {0}}; /* v1 -x */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_cdf_norm, .dtype = PE_F32, .ctype = PE_F32, .n = 1, .a = {1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_cdf_norm, .dtype = PE_F32, .ctype = PE_F32, .n = 1, .a = {0}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_exp, .dtype = PE_F32, .ctype = PE_F32, .n = 1, .a = {0}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_cdf_norm, .dtype = PE_F32, .ctype = PE_F32, .n = 1, .a = {4}};
    for (int v = 2; v <= 5; v++) {
        if (v == 4) continue;
        k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_F32};
        k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {(uint16_t)(k.n_params - 1), (uint16_t)v}};
    }
    return k;
}

/* Views read through index maps (STRIDED parameters, kir.h): the map, the
 * iteration shape and the size of the buffer read. */
typedef struct {
    const char *what;
    int rank;
    int64_t shape[PE_MAX_RANK];
    kir_param map;
    int64_t source; /* elements in the buffer */
} view_case;

static const view_case view_cases[] = {
    /* transpose(s[1:10, 2:8]) of a 10 x 8 s: (r, c) -> s[1 + c][2 + r] */
    {"transposed slice", 2, {6, 9}, {.kind = KIR_IN_STRIDED, .dtype = PE_F32, .offset = 10, .stride = {1, 8}}, 80},
    /* a 4 x 120 s reversed along both axes, every third column: (r, c) -> s[3 - r][119 - 3c] */
    {"reversed slice", 2, {4, 37}, {.kind = KIR_IN_STRIDED, .dtype = PE_F32, .offset = 479, .stride = {-120, -3}}, 480},
    /* a 4 x 7 s tiled periodically, shifted by (1, 3): (r, c) -> s[(r + 1) % 4][(c + 3) % 7] */
    {"periodic read", 2, {6, 25},
     {.kind = KIR_IN_STRIDED, .dtype = PE_F32, .stride = {7, 1}, .wrap = {4, 7}, .shift = {1, 3}}, 28},
    /* concatenation's part from column 10 of a 9 x 12 s, clamped: (r, c) -> s[r][min(max(c, 10), 21) - 10] */
    {"concat-like clamped read", 2, {9, 30},
     {.kind = KIR_IN_STRIDED, .dtype = PE_F32, .offset = -10, .stride = {12, 1}, .lo = {0, 10}, .hi = {0, 22}}, 108},
    /* rank 4 over a 3 x 7 x 11 s, each axis its own map (a spread, a clamp then a shifted wrap, a
     * reversal, a plain stride): (i, j, k, l) -> s[(min(max(j, 1), 3) + 2) % 3][6 - k][l] */
    {"rank 4, every kind of axis", 4, {3, 5, 7, 11},
     {.kind = KIR_IN_STRIDED, .dtype = PE_F32, .offset = 6 * 11, .stride = {0, 7 * 11, -11, 1},
      .wrap = {0, 3, 0, 0}, .shift = {0, 2, 0, 0}, .lo = {0, 1, 0, 0}, .hi = {0, 4, 0, 0}}, 3 * 7 * 11},
};

/* x + v for view case c: x CONTIG f32 (p0), v the view (p1), the sum p2. */
static inline kir_kernel view_kernel(const view_case *c)
{
    kir_kernel k = {0};
    k.rank = c->rank;
    memcpy(k.shape, c->shape, sizeof k.shape);
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = PE_F32};
    k.params[k.n_params++] = c->map;
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_F32};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {0}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_add, .dtype = PE_F32, .ctype = PE_F32, .n = 2, .a = {0, 1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {2, 2}};
    return k;
}

/* concat as the program generator makes it: an i32 CONCAT_R x CONCAT_NA
 * part (p0) and an f32 CONCAT_R x CONCAT_NB part (p1) along axis 1, each
 * read through its map clamped into its columns, then the select by
 * coordinate (KIR_OP concat) in f32; the result p2. */
enum { CONCAT_R = 5, CONCAT_NA = 7, CONCAT_NB = 3 };
static inline kir_kernel concat_kernel(void)
{
    enum { R = CONCAT_R, NA = CONCAT_NA, NB = CONCAT_NB, N = NA + NB };
    kir_kernel k = {.rank = 2, .shape = {R, N}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_STRIDED, .dtype = PE_I32, .stride = {NA, 1}, .lo = {0, 0}, .hi = {0, NA}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_STRIDED, .dtype = PE_F32, .offset = -NA, .stride = {NB, 1},
                                         .lo = {0, NA}, .hi = {0, N}};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_F32};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_I32, .n = 1, .a = {0}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F32, .n = 1, .a = {1}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_concat, .dtype = PE_F32, .ctype = PE_F32, .n = 2, .a = {0, 1, 1}, .imm = NA};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {2, 2}};
    return k;
}

/* gather as the program generator makes it: an i32 index array (p0), the
 * f64 array of GATHER_EXTENT elements it reads (p1, KIR_IN_GATHERED), the
 * out-of-range flag (p2), the element plus 0.5 in f32 (p3). */
enum { GATHER_EXTENT = 37 };
static inline kir_kernel gather_kernel(void)
{
    kir_kernel k = {0};
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_CONTIG, .dtype = PE_I32};
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_GATHERED, .dtype = PE_F64, .extent = GATHER_EXTENT};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT_FLAG, .dtype = PE_I32};
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = PE_F32};
    k.params[k.n_params++] = (kir_param){.kind = KIR_IN_LITERAL, .dtype = PE_F64, .value = 0.5};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_I32, .n = 1, .a = {0}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_GATHER, .dtype = PE_F64, .n = 3, .a = {1, 0, 2}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_F64, .n = 1, .a = {4}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_add, .dtype = PE_F64, .ctype = PE_F64, .n = 2, .a = {1, 2}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_cast, .dtype = PE_F32, .ctype = PE_F64, .n = 1, .a = {3}};
    k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {3, 4}};
    return k;
}

/* Reductions along an axis (kir_kernel.axis_reduction) the CUDA generator
 * emits: each op with operand and result types the recorder gives it
 * (integer sums and products wrap; means, variances of integers are f64;
 * any and all give bool, argmax and argmin i32). */
typedef struct {
    pe_op op;
    pe_dtype ct, rt;
} axis_reduction;

static const axis_reduction axis_reductions[] = {
    {PE_OP_sum, PE_F32, PE_F32},        {PE_OP_sum, PE_F64, PE_F64},        {PE_OP_sum, PE_I32, PE_I32},
    {PE_OP_sum, PE_BOOL, PE_I32},       {PE_OP_prod, PE_F32, PE_F32},       {PE_OP_prod, PE_F64, PE_F64},
    {PE_OP_prod, PE_I32, PE_I32},       {PE_OP_max_reduce, PE_F32, PE_F32}, {PE_OP_max_reduce, PE_F64, PE_F64},
    {PE_OP_max_reduce, PE_I32, PE_I32}, {PE_OP_max_reduce, PE_BOOL, PE_BOOL}, {PE_OP_min_reduce, PE_F32, PE_F32},
    {PE_OP_min_reduce, PE_F64, PE_F64}, {PE_OP_min_reduce, PE_I32, PE_I32}, {PE_OP_mean, PE_F32, PE_F32},
    {PE_OP_mean, PE_F64, PE_F64},       {PE_OP_mean, PE_I32, PE_F64},       {PE_OP_var, PE_F32, PE_F32},
    {PE_OP_var, PE_F64, PE_F64},        {PE_OP_var, PE_I32, PE_F64},        {PE_OP_stddev, PE_F32, PE_F32},
    {PE_OP_stddev, PE_F64, PE_F64},     {PE_OP_any, PE_F32, PE_BOOL},       {PE_OP_any, PE_I32, PE_BOOL},
    {PE_OP_any, PE_BOOL, PE_BOOL},      {PE_OP_all, PE_F64, PE_BOOL},       {PE_OP_all, PE_BOOL, PE_BOOL},
    {PE_OP_argmax, PE_F32, PE_I32},     {PE_OP_argmax, PE_F64, PE_I32},     {PE_OP_argmax, PE_I32, PE_I32},
    {PE_OP_argmin, PE_F32, PE_I32},     {PE_OP_argmin, PE_I32, PE_I32},     {PE_OP_norm1, PE_F32, PE_F32},
    {PE_OP_norm1, PE_F64, PE_F64},      {PE_OP_norm2, PE_F32, PE_F32},      {PE_OP_norm2, PE_F64, PE_F64},
    {PE_OP_norminf, PE_F32, PE_F32},    {PE_OP_norminf, PE_F64, PE_F64},    {PE_OP_norminf, PE_I32, PE_I32},
};

/* Iteration shapes with the axes reduced along: warps (a last axis of 32
 * and more) and threads per result, size-1 axes, odd sizes, an empty
 * axis (results over nothing) and an empty result. */
typedef struct {
    int rank;
    int64_t shape[PE_MAX_RANK];
} axis_shape;

static const axis_shape axis_shapes[] = {
    {1, {1000}}, {1, {7}}, {2, {37, 45}}, {2, {5, 0}}, {2, {0, 3}}, {2, {1, 1}}, {3, {3, 1, 33}}, {4, {2, 3, 5, 7}},
};

/* `op` along `axis` of an operand of type ct read through parameter `in`
 * (CONTIG, or STRIDED: a view) over (rank, shape); its result p1 of type rt.
 * Fused (float ct): the operand is exp(x) * 2 (2 a literal, p2), exp(x)
 * stored on the way (p3: a visible producer, written once per element). */
static inline kir_kernel axis_kernel(pe_op op, pe_dtype ct, pe_dtype rt, int rank, const int64_t *shape, int axis,
                                     kir_param in, bool fused)
{
    kir_kernel k = {0};
    k.rank = rank;
    memcpy(k.shape, shape, sizeof k.shape[0] * (size_t)rank);
    k.axis_reduction = true;
    k.reduce_axis = (uint8_t)axis;
    in.dtype = ct;
    k.params[k.n_params++] = in;                                            /* p0 */
    k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = rt};     /* p1 the result */
    k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = ct, .n = 1, .a = {0}}; /* v0 */
    uint16_t operand = 0;
    if (fused) {
        k.params[k.n_params++] = (kir_param){.kind = KIR_IN_LITERAL, .dtype = ct, .value = 2}; /* p2 */
        k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = ct};                    /* p3 exp(x) */
        k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_exp, .dtype = ct, .ctype = ct, .n = 1, .a = {0}}; /* v1 */
        k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = ct, .n = 1, .a = {2}};                             /* v2 */
        k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = PE_OP_mul, .dtype = ct, .ctype = ct, .n = 2, .a = {1, 2}}; /* v3 */
        k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .dtype = ct, .n = 2, .a = {3, 1}};
        operand = 3;
    }
    k.body[k.n_body++] = (kir_inst){.kind = KIR_REDUCE, .op = op, .dtype = rt, .ctype = ct, .n = 2, .a = {1, operand}};
    return k;
}

/* A random draw (irformat/philox.h) over a 3 x 700 iteration space: the
 * key words and the draw number are i32 scalar parameters 0-2, the draw is
 * stored to parameter 3, or (sum) summed into partials. */
typedef struct {
    pe_op op;
    pe_dtype t;
    int rounds;
} random_case;

static const random_case random_cases[] = {
    {PE_OP_random_uniform, PE_F32, 10}, {PE_OP_random_uniform, PE_F64, 10}, {PE_OP_random_uniform, PE_I32, 10},
    {PE_OP_random_normal, PE_F32, 10},  {PE_OP_random_normal, PE_F64, 10},  {PE_OP_random_uniform, PE_F32, 7},
    {PE_OP_random_uniform, PE_F64, 7},  {PE_OP_random_uniform, PE_I32, 7},  {PE_OP_random_normal, PE_F32, 7},
    {PE_OP_random_normal, PE_F64, 7},
};

static inline kir_kernel random_kernel(const random_case *c, bool sum)
{
    kir_kernel k = {0};
    k.rank = 2, k.shape[0] = 3, k.shape[1] = 700;
    for (uint16_t j = 0; j < 3; j++) {
        k.params[k.n_params++] = (kir_param){.kind = KIR_IN_SCALAR, .dtype = PE_I32};
        k.body[k.n_body++] = (kir_inst){.kind = KIR_LOAD, .dtype = PE_I32, .n = 1, .a = {j}};
    }
    k.body[k.n_body++] = (kir_inst){.kind = KIR_OP, .op = c->op, .dtype = c->t, .ctype = c->t, .n = 3, .a = {0, 1, 2}, .imm = c->rounds};
    if (sum) {
        k.params[k.n_params++] = (kir_param){.kind = KIR_OUT_PARTIAL, .dtype = PE_F64};
        k.body[k.n_body++] = (kir_inst){.kind = KIR_REDUCE, .op = PE_OP_sum, .dtype = c->t, .ctype = c->t, .n = 2, .a = {3, 3}};
    } else {
        k.params[k.n_params++] = (kir_param){.kind = KIR_OUT, .dtype = c->t};
        k.body[k.n_body++] = (kir_inst){.kind = KIR_STORE, .n = 2, .a = {3, 3}};
    }
    return k;
}

#endif
