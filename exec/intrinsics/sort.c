/* sort.c — pe_sort and pe_argsort on the host: a stable LSD radix sort of
 * each row along the axis, on PE's pool.
 *
 * Keys: each element's bits mapped to an unsigned integer whose order is
 * the values' (i32: the sign bit flipped; floats: the sign bit set on a
 * positive, every bit flipped on a negative), -0.0 mapped to +0.0's key
 * (they are equal: a stable sort keeps their order, as NumPy's), every NaN
 * to the largest key (NaN last, as NumPy's); descending inverts the keys of
 * the numbers, so NaN stays last and equal elements keep their order.  A
 * record is the key and a payload: the element's own bits (sort) or its
 * index along the axis (argsort); the sort moves records, 8 bits of the key
 * per pass, a pass skipped where every key has the same digit.
 *
 * Rows: the array is [outer, n, inner] around the axis; a row is gathered
 * (stride inner), sorted and scattered back.  Rows shorter than SORT_SPLIT
 * are sorted one per task in parallel (insertion sort up to SORT_INSERTION
 * elements); a longer row is sorted by all threads: each pass counts the
 * digits of fixed blocks of the row in parallel, lays the blocks' buckets
 * out in (digit, block) order and scatters the blocks in parallel.  A
 * stable sort has one answer, so the result never depends on the threads. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrinsics.h"

#define SORT_INSERTION 32       /* rows up to this many elements: insertion sort */
#define SORT_SPLIT     (1 << 17) /* rows from this many elements: sorted by all threads */
#define SORT_BLOCK     (1 << 15) /* elements of one block of a row sorted by all threads */
#define RADIX          256

bool pe_sort_fits(pe_intrinsic_args *a)
{
    if (a->n_members != 1 || a->n_in != 1) return false;
    const pe_port *r = a->members[0], *x = a->in[0];
    pe_dtype t = (pe_dtype)x->dtype;
    if (t != PE_I32 && t != PE_F32 && t != PE_F64) return false;
    if (r->dtype != (r->op == PE_OP_argsort ? PE_I32 : t) || r->rank != x->rank || r->rank < 1 || r->param[0] < 0 ||
        r->param[0] >= r->rank)
        return false;
    for (int d = 0; d < r->rank; d++)
        if (r->shape[d] != x->shape[d]) return false;
    return r->op != PE_OP_argsort || r->shape[r->param[0]] <= INT32_MAX;
}

/* ------------------------------------------------------------------ keys */

static inline uint32_t key_i32(uint32_t b, bool descending)
{
    uint32_t k = b ^ 0x80000000u;
    return descending ? ~k : k;
}

static inline uint32_t key_f32(uint32_t b, bool descending)
{
    if ((b & 0x7fffffffu) > 0x7f800000u) return UINT32_MAX; /* NaN: last */
    if (b == 0x80000000u) b = 0;                             /* -0.0 equals +0.0 */
    uint32_t k = b & 0x80000000u ? ~b : b | 0x80000000u;
    return descending ? ~k : k; /* never UINT32_MAX: k is never 0 */
}

static inline uint64_t key_f64(uint64_t b, bool descending)
{
    if ((b & 0x7fffffffffffffffu) > 0x7ff0000000000000u) return UINT64_MAX;
    if (b == 0x8000000000000000u) b = 0;
    uint64_t k = b & 0x8000000000000000u ? ~b : b | 0x8000000000000000u;
    return descending ? ~k : k;
}

/* ------------------------------------------------- the sort, per key width */

/* What a row's sort reads and writes, for either width. */
typedef struct {
    pe_dtype t;
    bool descending, indices; /* indices: argsort's payload */
    const char *in;
    char *out;
    int64_t n, inner, rows;
    _Atomic int no_memory;
    /* a row sorted by all threads: its records, the other buffer, the blocks' digit counts */
    void *rec, *tmp;
    int64_t n_blocks;
    int shift;
    int64_t (*counts)[RADIX];
} sort_job;

#define RADIX_SORT(W)                                                                                    \
    typedef struct {                                                                                     \
        uint##W##_t key, val;                                                                            \
    } rec##W;                                                                                            \
                                                                                                         \
    /* Row `row`'s records: its elements (stride inner) keyed, with their bits or their index. */        \
    static void load##W(const sort_job *j, int64_t row, int64_t from, int64_t to, rec##W *r)             \
    {                                                                                                    \
        int64_t base = row / j->inner * j->n * j->inner + row % j->inner;                                \
        const uint##W##_t *x = (const uint##W##_t *)j->in + base;                                        \
        for (int64_t i = from; i < to; i++) {                                                            \
            uint##W##_t b = x[i * j->inner];                                                             \
            uint##W##_t k = W == 64 ? (uint##W##_t)key_f64((uint64_t)b, j->descending)                   \
                            : j->t == PE_F32 ? (uint##W##_t)key_f32((uint32_t)b, j->descending)          \
                                             : (uint##W##_t)key_i32((uint32_t)b, j->descending);         \
            r[i] = (rec##W){k, j->indices ? (uint##W##_t)i : b};                                         \
        }                                                                                                \
    }                                                                                                    \
                                                                                                         \
    static void store##W(const sort_job *j, int64_t row, int64_t from, int64_t to, const rec##W *r)      \
    {                                                                                                    \
        int64_t base = row / j->inner * j->n * j->inner + row % j->inner;                                \
        if (j->indices) {                                                                                \
            int32_t *y = (int32_t *)j->out + base;                                                       \
            for (int64_t i = from; i < to; i++) y[i * j->inner] = (int32_t)r[i].val;                     \
        } else {                                                                                         \
            uint##W##_t *y = (uint##W##_t *)j->out + base;                                               \
            for (int64_t i = from; i < to; i++) y[i * j->inner] = r[i].val;                              \
        }                                                                                                \
    }                                                                                                    \
                                                                                                         \
    /* r sorted (stable) by key on one thread, tmp as scratch; returns where the result is. */           \
    static rec##W *sort_row##W(rec##W *r, rec##W *tmp, int64_t n)                                        \
    {                                                                                                    \
        if (n <= SORT_INSERTION) {                                                                       \
            for (int64_t i = 1; i < n; i++) {                                                            \
                rec##W x = r[i];                                                                         \
                int64_t k = i;                                                                           \
                for (; k > 0 && r[k - 1].key > x.key; k--) r[k] = r[k - 1];                              \
                r[k] = x;                                                                                \
            }                                                                                            \
            return r;                                                                                    \
        }                                                                                                \
        static _Thread_local int64_t count[W / 8][RADIX];                                                \
        memset(count, 0, sizeof count);                                                                  \
        for (int64_t i = 0; i < n; i++)                                                                  \
            for (int d = 0; d < W / 8; d++) count[d][(r[i].key >> (8 * d)) & 0xff]++;                    \
        for (int d = 0; d < W / 8; d++) {                                                                \
            if (count[d][(r[0].key >> (8 * d)) & 0xff] == n) continue; /* one digit: nothing moves */    \
            int64_t at[RADIX], sum = 0;                                                                  \
            for (int v = 0; v < RADIX; v++) at[v] = sum, sum += count[d][v];                             \
            for (int64_t i = 0; i < n; i++) tmp[at[(r[i].key >> (8 * d)) & 0xff]++] = r[i];              \
            rec##W *swap = r;                                                                            \
            r = tmp, tmp = swap;                                                                         \
        }                                                                                                \
        return r;                                                                                        \
    }                                                                                                    \
                                                                                                         \
    /* Tasks of short rows: each sorts its rows alone. */                                                \
    static void short_rows##W(int64_t begin, int64_t end, void *const *args)                             \
    {                                                                                                    \
        sort_job *j = args[0];                                                                           \
        rec##W *buf = malloc(sizeof *buf * 2 * (size_t)j->n);                                            \
        if (!buf) {                                                                                      \
            atomic_store(&j->no_memory, 1);                                                              \
            return;                                                                                      \
        }                                                                                                \
        for (int64_t row = begin; row < end; row++) {                                                    \
            load##W(j, row, 0, j->n, buf);                                                               \
            store##W(j, row, 0, j->n, sort_row##W(buf, buf + j->n, j->n));                               \
        }                                                                                                \
        free(buf);                                                                                       \
    }                                                                                                    \
                                                                                                         \
    /* The tasks of a long row's pass: blocks of SORT_BLOCK records. */                                  \
    static void block_load##W(int64_t begin, int64_t end, void *const *args)                             \
    {                                                                                                    \
        const sort_job *j = args[0];                                                                     \
        int64_t row = *(const int64_t *)args[1];                                                         \
        for (int64_t b = begin; b < end; b++)                                                            \
            load##W(j, row, b * SORT_BLOCK, b + 1 < j->n_blocks ? (b + 1) * SORT_BLOCK : j->n, j->rec);  \
    }                                                                                                    \
    static void block_store##W(int64_t begin, int64_t end, void *const *args)                            \
    {                                                                                                    \
        const sort_job *j = args[0];                                                                     \
        int64_t row = *(const int64_t *)args[1];                                                         \
        for (int64_t b = begin; b < end; b++)                                                            \
            store##W(j, row, b * SORT_BLOCK, b + 1 < j->n_blocks ? (b + 1) * SORT_BLOCK : j->n, j->rec); \
    }                                                                                                    \
    static void block_count##W(int64_t begin, int64_t end, void *const *args)                            \
    {                                                                                                    \
        const sort_job *j = args[0];                                                                     \
        const rec##W *r = j->rec;                                                                        \
        for (int64_t b = begin; b < end; b++) {                                                          \
            int64_t *c = j->counts[b], last = b + 1 < j->n_blocks ? (b + 1) * SORT_BLOCK : j->n;         \
            memset(c, 0, sizeof *j->counts);                                                             \
            for (int64_t i = b * SORT_BLOCK; i < last; i++) c[(r[i].key >> j->shift) & 0xff]++;         \
        }                                                                                                \
    }                                                                                                    \
    static void block_scatter##W(int64_t begin, int64_t end, void *const *args)                          \
    {                                                                                                    \
        const sort_job *j = args[0];                                                                     \
        const rec##W *r = j->rec;                                                                        \
        rec##W *to = j->tmp;                                                                             \
        for (int64_t b = begin; b < end; b++) {                                                          \
            int64_t *at = j->counts[b], last = b + 1 < j->n_blocks ? (b + 1) * SORT_BLOCK : j->n;        \
            for (int64_t i = b * SORT_BLOCK; i < last; i++) to[at[(r[i].key >> j->shift) & 0xff]++] = r[i]; \
        }                                                                                                \
    }                                                                                                    \
                                                                                                         \
    /* One long row sorted by all threads. */                                                            \
    static void long_row##W(sort_job *j, int64_t row)                                                    \
    {                                                                                                    \
        void *args[2] = {j, &row};                                                                       \
        pe_intrinsic_parallel(block_load##W, args, j->n_blocks, SORT_BLOCK);                             \
        for (int d = 0; d < W / 8; d++) {                                                                \
            j->shift = 8 * d;                                                                            \
            pe_intrinsic_parallel(block_count##W, args, j->n_blocks, SORT_BLOCK);                        \
            int64_t sum = 0;                                                                             \
            bool one_digit = false;                                                                      \
            for (int v = 0; v < RADIX; v++) { /* buckets in (digit, block) order: the stable layout */   \
                int64_t before = sum;                                                                    \
                for (int64_t b = 0; b < j->n_blocks; b++) {                                              \
                    int64_t c = j->counts[b][v];                                                         \
                    j->counts[b][v] = sum, sum += c;                                                     \
                }                                                                                        \
                one_digit |= sum - before == j->n;                                                       \
            }                                                                                            \
            if (one_digit) continue;                                                                     \
            pe_intrinsic_parallel(block_scatter##W, args, j->n_blocks, SORT_BLOCK);                      \
            void *swap = j->rec;                                                                         \
            j->rec = j->tmp, j->tmp = swap;                                                              \
        }                                                                                                \
        pe_intrinsic_parallel(block_store##W, args, j->n_blocks, SORT_BLOCK);                            \
    }

RADIX_SORT(32)
RADIX_SORT(64)

bool pe_sort_run(pe_intrinsic_args *a)
{
    const pe_port *r = a->members[0], *x = a->in[0];
    if (!a->out[0] || r->numel == 0) return true;
    int axis = (int)r->param[0];
    int64_t inner = 1;
    for (int d = axis + 1; d < r->rank; d++) inner *= r->shape[d];
    sort_job j = {.t = (pe_dtype)x->dtype, .descending = r->param[1] != 0, .indices = r->op == PE_OP_argsort,
                  .in = x->buf, .out = a->out[0], .n = r->shape[axis], .inner = inner};
    j.rows = r->numel / j.n;
    bool wide = j.t == PE_F64;
    atomic_init(&j.no_memory, 0);
    void *args[1] = {&j};
    if (j.n < SORT_SPLIT) {
        pe_intrinsic_parallel(wide ? short_rows64 : short_rows32, args, j.rows, 8 * j.n);
    } else {
        size_t rec_size = wide ? sizeof(rec64) : sizeof(rec32);
        j.n_blocks = (j.n + SORT_BLOCK - 1) / SORT_BLOCK;
        j.rec = malloc(rec_size * (size_t)j.n);
        j.tmp = malloc(rec_size * (size_t)j.n);
        j.counts = malloc(sizeof *j.counts * (size_t)j.n_blocks);
        if (j.rec && j.tmp && j.counts)
            for (int64_t row = 0; row < j.rows; row++) (wide ? long_row64 : long_row32)(&j, row);
        else atomic_store(&j.no_memory, 1);
        free(j.rec), free(j.tmp), free(j.counts);
    }
    if (!atomic_load(&j.no_memory)) return true;
    a->code = PE_E_NOMEM;
    snprintf(a->why, sizeof a->why, "out of memory for the sort's records (%lld elements)", (long long)j.n);
    return false;
}
