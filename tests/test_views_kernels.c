/* test_views_kernels.c — issue 18: views, per-axis reductions and
 * integer-result reductions on the CPU JIT against the reference
 * interpreter.
 *
 * A suite of programs (the table `programs` below) covers every view
 * (slice, slice_step with negative steps, transpose, permute, reshape,
 * periodic, spread, broadcasting, gather, concat, the index and identity
 * generators), views of views, views feeding element-wise chains (a 5-point
 * stencil, a + transpose(a)), transposed reads walked in tiles, every per-axis reduction on f32, f64, i32 and
 * bool inputs of rank 1-4 with every axis (negative ones too), size-1 and
 * empty axes, reductions fed by element-wise chains and broadcast back,
 * softmax per row, and the integer-result reductions.  Each program runs in
 * a runtime on the interpreter (the oracle) and in another on the JIT; the
 * values read must agree: bitwise for i32, bool and the pure data movement,
 * within a few ulps for floating arithmetic (tolerance_of).
 *
 * Groups (argv[1], or PE_TEST_GROUP):
 *   agreement         interpreter vs JIT, determinism over PE_THREADS 1/2/3,
 *                     errors (an out-of-range gather inside a fused chain
 *                     reads nothing outside its array; bad views and axes)
 *   zero_interpreted  the JIT computes the whole suite without the
 *                     interpreter (pe_stats.ops_interpreted stays 0); prints
 *                     every program that still ran ports on the interpreter
 *   (none)            both
 * PE_TEST_PROGRAMS=substring runs only the programs whose name contains it,
 * e.g. PE_TEST_PROGRAMS=softmax ./test_views_kernels zero_interpreted;
 * PE_TEST_VERBOSE=1 prints each program's outputs, the largest difference
 * between the executors and the ports the JIT path left to the interpreter. */
#include "test_util.h"

#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------ deterministic inputs */

static uint64_t lcg_state;
static uint32_t lcg(void)
{
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(lcg_state >> 33); /* 31 bits */
}
static double unit(void) { return lcg() / 2147483648.0; } /* [0, 1) */

static int64_t numel_of(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    return n;
}

/* Random values: f32/f64 uniform in [lo, hi); i32 integers in [lo, hi];
 * bool true with probability lo. */
static pe_array input(pe_dtype t, int rank, const int64_t *shape, double lo, double hi)
{
    int64_t n = numel_of(rank, shape);
    void *buf = malloc((size_t)(n + 1) * 8);
    assert_non_null(buf);
    for (int64_t i = 0; i < n; i++) {
        double u = unit();
        switch (t) {
        case PE_F32: ((float *)buf)[i] = (float)(lo + (hi - lo) * u); break;
        case PE_F64: ((double *)buf)[i] = lo + (hi - lo) * u; break;
        case PE_I32: ((int32_t *)buf)[i] = (int32_t)floor(lo + (hi - lo + 1) * u); break;
        default: ((uint8_t *)buf)[i] = u < lo; break;
        }
    }
    pe_array a = pe_from_host(t, rank, shape, buf);
    free(buf);
    return a;
}

/* Floats that are 0 (+0 or -0, alike) with probability 1 - p_nonzero, for
 * any/all. */
static pe_array sparse(pe_dtype t, int rank, const int64_t *shape, double p_nonzero)
{
    int64_t n = numel_of(rank, shape);
    double *x = malloc((size_t)(n + 1) * sizeof *x);
    float *f = malloc((size_t)(n + 1) * sizeof *f);
    assert_non_null(x), assert_non_null(f);
    for (int64_t i = 0; i < n; i++) {
        double u = unit(), v = 0.5 + unit();
        x[i] = u < p_nonzero ? v : (lcg() & 1 ? 0.0 : -0.0);
        f[i] = (float)x[i];
    }
    pe_array a = pe_from_host(t, rank, shape, t == PE_F32 ? (const void *)f : (const void *)x);
    free(x), free(f);
    return a;
}

/* The default data: positive floats (well-conditioned sums), small signed
 * integers, fair booleans. */
static pe_array rnd(pe_dtype t, int rank, const int64_t *shape)
{
    switch (t) {
    case PE_F32: case PE_F64: return input(t, rank, shape, 0.5, 1.5);
    case PE_I32: return input(t, rank, shape, -3, 3);
    default: return input(t, rank, shape, 0.5, 0);
    }
}

/* An element-wise chain of the array's own type: x*2+1, x*3-1, !x. */
static pe_array chain(pe_array x)
{
    switch (pe_dtype_of(x)) {
    case PE_F32: return pe_add(pe_mul(x, 2.0f), 1.0f);
    case PE_F64: return pe_add(pe_mul(x, 2.0), 1.0);
    case PE_I32: return pe_sub(pe_mul(x, 3), 1);
    default: return pe_not(x);
    }
}

/* Two arrays combined element-wise, keeping the type (bool: xor). */
static pe_array combine(pe_array a, pe_array b)
{
    return pe_dtype_of(a) == PE_BOOL && pe_dtype_of(b) == PE_BOOL ? pe_xor(a, b) : pe_add(a, b);
}

/* ------------------------------------------------------------ the programs */

enum { MAX_OUTPUTS = 160 };
typedef struct {
    int n;
    pe_array a[MAX_OUTPUTS];
} outputs;

static void out(outputs *o, pe_array a)
{
    assert_true(o->n < MAX_OUTPUTS);
    o->a[o->n++] = a;
}
/* the view itself and the view feeding an element-wise chain */
static void out2(outputs *o, pe_array a) { out(o, a), out(o, chain(a)); }

typedef struct {
    int rank;
    int64_t shape[PE_MAX_RANK];
} shape_t;

/* ranks 1-4 at odd sizes, size-1 axes, empty axes */
static const shape_t base_shapes[] = {{1, {17}}, {2, {5, 7}}, {3, {3, 5, 7}}, {4, {2, 3, 5, 7}}};
static const shape_t reduce_shapes[] = {
    {1, {17}}, {2, {5, 7}},    {3, {3, 5, 7}},    {4, {2, 3, 5, 7}}, {1, {1}},    {2, {1, 7}},     {2, {5, 1}},
    {3, {3, 1, 7}}, {4, {1, 3, 1, 5}}, {1, {0}}, {2, {0, 5}}, {2, {5, 0}}, {3, {2, 0, 3}},
};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* --- views */

static void build_slice(outputs *o, int t, int unused)
{
    (void)unused;
    static const shape_t more[] = {{2, {1, 7}}, {3, {3, 1, 7}}};
    for (int k = 0; k < COUNT(base_shapes) + COUNT(more); k++) {
        const shape_t *s = k < COUNT(base_shapes) ? &base_shapes[k] : &more[k - COUNT(base_shapes)];
        pe_array x = rnd(t, s->rank, s->shape);
        int64_t start[PE_MAX_RANK], count[PE_MAX_RANK];
        for (int d = 0; d < s->rank; d++) {
            start[d] = s->shape[d] > 2 ? 1 : 0;
            count[d] = s->shape[d] > 2 ? s->shape[d] - 2 : s->shape[d];
        }
        out2(o, pe_slice(x, start, count));
        /* the last index of the first axis only: a size-1 axis in the result */
        for (int d = 0; d < s->rank; d++) start[d] = 0, count[d] = s->shape[d];
        start[0] = s->shape[0] - 1, count[0] = 1;
        out2(o, pe_slice(x, start, count));
    }
}

static void build_slice_step(outputs *o, int t, int unused)
{
    (void)unused;
    for (int k = 0; k < COUNT(base_shapes); k++) {
        const shape_t *s = &base_shapes[k];
        pe_array x = rnd(t, s->rank, s->shape);
        int64_t start[PE_MAX_RANK], count[PE_MAX_RANK], step[PE_MAX_RANK];
        for (int d = 0; d < s->rank; d++) { /* steps -1, 2, -2, 3 */
            int64_t n = s->shape[d];
            step[d] = d == 0 ? -1 : d == 1 ? 2 : d == 2 ? -2 : 3;
            if (step[d] > 0) start[d] = n > 1 ? 1 : 0, count[d] = (n - start[d] + step[d] - 1) / step[d];
            else start[d] = n - 1, count[d] = start[d] / -step[d] + 1;
        }
        out2(o, pe_slice_step(x, start, count, step));
        for (int d = 0; d < s->rank; d++) start[d] = s->shape[d] - 1, count[d] = s->shape[d], step[d] = -1;
        out2(o, pe_slice_step(x, start, count, step)); /* every axis reversed */
    }
    int64_t n17 = 17;
    pe_array x = rnd(t, 1, &n17);
    int64_t st[] = {16, 1, 15}, ct[] = {6, 4, 8}, sp[] = {-3, 5, -2};
    for (int k = 0; k < 3; k++) out2(o, pe_slice_step(x, &st[k], &ct[k], &sp[k]));
}

static void build_slice_edges(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s57[2] = {5, 7}, s05[2] = {0, 5}, s17[2] = {1, 7};
    pe_array x = rnd(t, 2, s57), e = rnd(t, 2, s05), r = rnd(t, 2, s17);
    int64_t z[2] = {0, 0}, c07[2] = {0, 7}, c50[2] = {5, 0}, c03[2] = {0, 3}, s01[2] = {0, 1}, s02[2] = {0, 2},
            c13[2] = {1, 3};
    out2(o, pe_slice(x, z, c07));   /* (0, 7) */
    out2(o, pe_slice(x, z, c50));   /* (5, 0) */
    out2(o, pe_slice(e, s01, c03)); /* a slice of an empty array */
    out2(o, pe_slice(r, s02, c13)); /* a slice of a single row */
    int64_t st[2] = {4, 6}, ct[2] = {0, 3}, sp[2] = {-1, -2};
    out2(o, pe_slice_step(x, st, ct, sp)); /* count 0 with a negative step */
    int64_t st1[2] = {0, 6}, ct1[2] = {1, 4}, sp1[2] = {7, -2};
    out2(o, pe_slice_step(r, st1, ct1, sp1)); /* a step beyond a size-1 axis */
}

static void build_transpose(outputs *o, int t, int unused)
{
    (void)unused;
    static const shape_t shapes[] = {{2, {5, 7}}, {2, {1, 7}}, {2, {7, 1}}, {1, {17}}, {2, {0, 3}}, {2, {33, 65}}};
    for (int k = 0; k < COUNT(shapes); k++) {
        const shape_t *s = &shapes[k];
        pe_array x = rnd(t, s->rank, s->shape);
        out2(o, pe_transpose(x));
        if (s->rank == 2) { /* transpose(x) + y */
            int64_t ts[2] = {s->shape[1], s->shape[0]};
            out(o, combine(pe_transpose(x), rnd(t, 2, ts)));
        }
    }
}

static void build_permute(outputs *o, int t, int unused)
{
    (void)unused;
    static const int p3[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    static const int p4[5][4] = {{3, 2, 1, 0}, {0, 2, 1, 3}, {1, 3, 0, 2}, {2, 0, 3, 1}, {0, 1, 3, 2}};
    static const int p2[2] = {1, 0}, p1[1] = {0};
    pe_array x3 = rnd(t, 3, base_shapes[2].shape), x4 = rnd(t, 4, base_shapes[3].shape);
    for (int k = 0; k < 6; k++) out2(o, pe_permute(x3, p3[k]));
    for (int k = 0; k < 5; k++) out2(o, pe_permute(x4, p4[k]));
    int64_t s1315[4] = {1, 3, 1, 5};
    out2(o, pe_permute(rnd(t, 4, s1315), p4[3]));
    out2(o, pe_permute(rnd(t, 2, base_shapes[1].shape), p2));
    out2(o, pe_permute(rnd(t, 1, base_shapes[0].shape), p1));
}

static void build_reshape(outputs *o, int t, int unused)
{
    (void)unused;
    pe_array x = rnd(t, 3, base_shapes[2].shape); /* (3, 5, 7) */
    static const shape_t to[] = {{2, {15, 7}}, {2, {3, 35}}, {1, {105}}, {3, {7, -1, 3}}, {4, {5, 1, 3, 7}},
                                 {2, {1, 105}}, {1, {-1}}};
    for (int k = 0; k < COUNT(to); k++) out2(o, pe_reshape(x, to[k].rank, to[k].shape));
    int64_t s353[2] = {35, 3};
    out2(o, pe_reshape(chain(x), 2, s353)); /* reshape of an element-wise result */
    int64_t s203[3] = {2, 0, 3}, s06[2] = {0, 6};
    out2(o, pe_reshape(rnd(t, 3, s203), 2, s06));
}

static void build_periodic(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s3[1] = {3}, s23[2] = {2, 3}, s15[2] = {1, 5}, s213[3] = {2, 1, 3};
    int64_t to46[2] = {4, 6}, to47[2] = {4, 7}, to57[2] = {5, 7}, to325[3] = {3, 2, 5}, to2245[4] = {2, 2, 4, 5},
            to11[1] = {11};
    pe_array a = rnd(t, 1, s3), b = rnd(t, 2, s23), c = rnd(t, 2, s15), d = rnd(t, 3, s213);
    out2(o, pe_periodic(a, 2, to46));
    out2(o, pe_periodic(a, 2, to47)); /* not a multiple of the period */
    out2(o, pe_periodic(a, 1, to11));
    out2(o, pe_periodic(b, 2, to57));
    out2(o, pe_periodic(c, 3, to325));
    out2(o, pe_periodic(d, 4, to2245));
}

static void build_spread(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s57[2] = {5, 7}, s51[2] = {5, 1}, s17[2] = {1, 7}, s17_1[1] = {17};
    pe_array x = rnd(t, 2, s57);
    for (int axis = -3; axis <= 2; axis++) out2(o, pe_spread(x, axis, 3)); /* a new axis anywhere */
    out2(o, pe_spread(rnd(t, 2, s51), 1, 4));  /* a size-1 axis replicated */
    out2(o, pe_spread(rnd(t, 2, s17), 0, 0));  /* replicated 0 times: (0, 7) */
    out2(o, pe_spread(rnd(t, 1, s17_1), 0, 3));
    out2(o, pe_spread(rnd(t, 3, base_shapes[2].shape), 3, 2)); /* to rank 4 */
}

static void build_broadcast(outputs *o, int t, int unused)
{
    (void)unused;
    static const shape_t pairs[][2] = {
        {{2, {5, 1}}, {2, {1, 7}}},       {{1, {7}}, {3, {3, 5, 7}}},  {{3, {3, 1, 7}}, {3, {1, 5, 1}}},
        {{4, {2, 3, 5, 7}}, {2, {5, 1}}}, {{2, {0, 7}}, {2, {1, 7}}}, {{4, {2, 1, 5, 1}}, {4, {1, 3, 1, 7}}},
    };
    for (int k = 0; k < COUNT(pairs); k++) {
        pe_array a = rnd(t, pairs[k][0].rank, pairs[k][0].shape), b = rnd(t, pairs[k][1].rank, pairs[k][1].shape);
        out(o, combine(a, b));
        out(o, chain(combine(b, a)));
    }
}

static void build_gather(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s57[2] = {5, 7}, n17 = 17, n20 = 20, s34[2] = {3, 4}, s232[3] = {2, 3, 2}, n0 = 0;
    pe_array x = rnd(t, 2, s57), v = rnd(t, 1, &n17);
    out2(o, pe_gather(x, input(PE_I32, 1, &n20, 0, 34))); /* the flat index of a matrix, repeats likely */
    out2(o, pe_gather(x, input(PE_I32, 2, s34, 0, 34)));
    out2(o, pe_gather(v, input(PE_I32, 3, s232, 0, 16)));
    out2(o, pe_gather(v, input(PE_I32, 1, &n0, 0, 16)));
    pe_array iota = pe_index(PE_I32, 1, &n17, 0);
    out2(o, pe_gather(v, iota));              /* identity */
    out2(o, pe_gather(v, pe_sub(16, iota)));  /* reversed, the index computed */
    out2(o, pe_gather(v, pe_mod(pe_mul(iota, 5), 17)));
}

static void build_concat(outputs *o, int t, int unused)
{
    (void)unused;
    for (int k = 0; k < COUNT(base_shapes); k++) {
        const shape_t *s = &base_shapes[k];
        pe_array a = rnd(t, s->rank, s->shape);
        for (int axis = -s->rank; axis < s->rank; axis++) {
            int ax = axis < 0 ? axis + s->rank : axis;
            int64_t bs[PE_MAX_RANK];
            memcpy(bs, s->shape, sizeof bs);
            bs[ax] = ax % 2 ? 1 : 3;
            out2(o, pe_concat(a, rnd(t, s->rank, bs), axis));
            if (axis == 0) out2(o, pe_concat(rnd(t, s->rank, bs), a, axis));
        }
    }
    int64_t s07[2] = {0, 7}, s57[2] = {5, 7};
    out2(o, pe_concat(rnd(t, 2, s07), rnd(t, 2, s57), 0)); /* empty ++ nonempty */
    out2(o, pe_concat(rnd(t, 2, s57), rnd(t, 2, s07), -2));
}

static void build_concat_promote(outputs *o, int unused1, int unused2)
{
    (void)unused1, (void)unused2;
    int64_t s57[2] = {5, 7}, s27[2] = {2, 7}, s53[2] = {5, 3};
    out2(o, pe_concat(rnd(PE_I32, 2, s57), rnd(PE_F32, 2, s27), 0));
    out2(o, pe_concat(rnd(PE_BOOL, 2, s57), rnd(PE_I32, 2, s53), 1));
    out2(o, pe_concat(rnd(PE_F32, 2, s57), rnd(PE_F64, 2, s53), -1));
    out2(o, pe_concat(rnd(PE_BOOL, 2, s57), rnd(PE_F64, 2, s27), 0));
}

static void build_generators(outputs *o, int unused1, int unused2)
{
    (void)unused1, (void)unused2;
    for (int k = 0; k < COUNT(base_shapes); k++) {
        const shape_t *s = &base_shapes[k];
        pe_dtype t = (pe_dtype)(k % 4);
        for (int axis = -s->rank; axis < s->rank; axis++) out(o, pe_index(t, s->rank, s->shape, axis));
        out(o, pe_mul(pe_index(PE_F32, s->rank, s->shape, -1), rnd(PE_F32, s->rank, s->shape)));
        out(o, pe_add(pe_index(PE_I32, s->rank, s->shape, 0), rnd(PE_I32, s->rank, s->shape)));
    }
    int64_t s05[2] = {0, 5};
    out(o, pe_index(PE_F64, 2, s05, 1));
    static const int64_t n[] = {7, 5, 4, 3, 1, 0};
    for (int k = 0; k < COUNT(n); k++) out2(o, pe_identity((pe_dtype)(k % 4), n[k]));
    int64_t s77[2] = {7, 7};
    out(o, pe_add(pe_mul(pe_identity(PE_F64, 7), 2.0), rnd(PE_F64, 2, s77)));
    out(o, pe_sum_axis(pe_mul(pe_identity(PE_F32, 7), rnd(PE_F32, 2, s77)), 1)); /* the diagonal */
}

/* --- views of views */

static void build_view_of_view(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s57[2] = {5, 7}, s23[2] = {2, 3};
    pe_array x2 = rnd(t, 2, s57), x3 = rnd(t, 3, base_shapes[2].shape), x4 = rnd(t, 4, base_shapes[3].shape);
    { /* slice of a transpose: (7, 5) -> (5, 3) */
        int64_t st[2] = {1, 1}, ct[2] = {5, 3};
        out2(o, pe_slice(pe_transpose(x2), st, ct));
    }
    { /* permute of a slice */
        int64_t st[3] = {1, 0, 2}, ct[3] = {2, 5, 4};
        static const int p[3] = {2, 0, 1};
        out2(o, pe_permute(pe_slice(x3, st, ct), p));
    }
    { /* spread then slice: (4, 5, 7) -> (2, 3, 5) */
        int64_t st[3] = {1, 1, 1}, ct[3] = {2, 3, 5};
        out2(o, pe_slice(pe_spread(x2, 0, 4), st, ct));
    }
    { /* periodic then slice */
        int64_t to[2] = {6, 9}, st[2] = {1, 2}, ct[2] = {4, 5};
        out2(o, pe_slice(pe_periodic(rnd(t, 2, s23), 2, to), st, ct));
    }
    { /* slice_step of a permute: (7, 3, 2, 5) walked with negative steps */
        static const int p[4] = {3, 1, 0, 2};
        int64_t st[4] = {6, 0, 1, 4}, ct[4] = {4, 3, 2, 3}, sp[4] = {-2, 1, -1, -2};
        out2(o, pe_slice_step(pe_permute(x4, p), st, ct, sp));
    }
    { /* reshape of a slice, slice of a slice, transpose of a transpose */
        int64_t st[3] = {0, 1, 0}, ct[3] = {3, 3, 7}, to[2] = {9, 7};
        pe_array s = pe_slice(x3, st, ct);
        out2(o, pe_reshape(s, 2, to));
        int64_t st2[3] = {1, 1, 2}, ct2[3] = {2, 2, 4};
        out2(o, pe_slice(s, st2, ct2));
        out2(o, pe_transpose(pe_transpose(x2)));
    }
    { /* gather of a transpose, concat of two views, spread of a slice_step, periodic of a transpose */
        int64_t n9 = 9, s95[2] = {9, 5}, st[2] = {1, 0}, ct[2] = {7, 5};
        out2(o, pe_gather(pe_transpose(x2), input(PE_I32, 1, &n9, 0, 34)));
        out2(o, pe_concat(pe_transpose(x2), pe_slice(rnd(t, 2, s95), st, ct), 0));
        int64_t st3[2] = {4, 6}, ct3[2] = {3, 4}, sp3[2] = {-2, -2};
        out2(o, pe_spread(pe_slice_step(x2, st3, ct3, sp3), 1, 2));
        int64_t to[3] = {2, 7, 5};
        out2(o, pe_periodic(pe_transpose(x2), 3, to));
    }
}

/* --- views feeding element-wise chains */

static void build_stencil(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s[2] = {33, 47}, count[2] = {31, 45};
    int64_t c0[2] = {1, 1}, n0[2] = {0, 1}, s0[2] = {2, 1}, w0[2] = {1, 0}, e0[2] = {1, 2};
    pe_array u = rnd(t, 2, s);
    pe_array c = pe_slice(u, c0, count), n = pe_slice(u, n0, count), so = pe_slice(u, s0, count),
             w = pe_slice(u, w0, count), e = pe_slice(u, e0, count);
    pe_array lap = pe_sub(pe_add(pe_add(n, so), pe_add(e, w)), pe_mul(c, 4.0));
    pe_array next = pe_add(c, pe_mul(lap, 0.125));
    out(o, next);
    out(o, pe_sum(next));
    out(o, pe_sum_axis(next, 0));
    out(o, pe_max_axis(pe_abs(lap), -1));
}

static void build_plus_transpose(outputs *o, int t, int unused)
{
    (void)unused;
    static const int64_t sizes[] = {17, 1, 0, 64};
    for (int k = 0; k < COUNT(sizes); k++) {
        int64_t s[2] = {sizes[k], sizes[k]};
        pe_array a = rnd(t, 2, s);
        out(o, combine(a, pe_transpose(a)));
        if (t == PE_F32 || t == PE_F64) out(o, pe_mul(pe_sub(a, pe_transpose(a)), 0.5));
    }
}

/* --- tiled walks: kernels that read a view across cache lines along the
 * last axis (a transpose, a permute with the buffer's contiguous axis
 * second-to-last) walk the last two axes in tiles (gccjit_loops.c's
 * pe_gj_emit_tiles); sizes that are no multiple of the tile, on both axes and per
 * plane of rank 3 and 4 */

static void build_tiles(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s[2] = {67, 131}, st[2] = {131, 67}, sq[2] = {67, 67}, small[2] = {40, 33};
    pe_array a = rnd(t, 2, s), b = rnd(t, 2, st), c = rnd(t, 2, sq);
    out(o, combine(a, pe_transpose(b)));
    out2(o, pe_transpose(a));
    out(o, combine(c, pe_transpose(c)));
    int64_t start[2] = {0, 66}, count[2] = {131, 67}, step[2] = {1, -1}; /* a negative step along the transposed axis */
    out2(o, pe_slice_step(pe_transpose(a), start, count, step));
    out(o, combine(pe_periodic(pe_transpose(rnd(t, 2, small)), 2, s), a)); /* wrapped along both axes */
    int64_t s3[3] = {2, 67, 131};
    out(o, chain(combine(rnd(t, 3, s3), pe_transpose(b)))); /* broadcast over the planes */
    int64_t x3[3] = {3, 131, 67}, y3[3] = {37, 5, 33}, x4[4] = {2, 3, 45, 70};
    static const int p021[3] = {0, 2, 1}, p120[3] = {1, 2, 0}, p0132[4] = {0, 1, 3, 2};
    out2(o, pe_permute(rnd(t, 3, x3), p021)); /* 3 planes of 67 x 131 */
    out2(o, pe_permute(rnd(t, 3, y3), p120)); /* 5 planes of 33 x 37 */
    out2(o, pe_permute(rnd(t, 4, x4), p0132));
}

/* past one launch chunk: launches split over threads start and end inside
 * rows and tiles */
static void build_large_tiles(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s[2] = {301, 257}, st[2] = {257, 301}, x3[3] = {3, 257, 301};
    static const int p021[3] = {0, 2, 1};
    pe_array a = rnd(t, 2, s);
    out(o, combine(a, pe_transpose(rnd(t, 2, st))));
    out2(o, pe_permute(rnd(t, 3, x3), p021));
}

/* --- reductions */

typedef pe_array (*axis_fn)(const pe_site *, pe_array, int);
typedef pe_array (*full_fn)(const pe_site *, pe_array);
enum {
    R_SUM, R_PROD, R_MAX, R_MIN, R_MEAN, R_VAR, R_STDDEV, R_ANY, R_ALL, R_ARGMAX, R_ARGMIN, R_NORM1, R_NORM2,
    R_NORMINF, R__COUNT
};
/* Tolerances: the sums (sum, mean, var, stddev, norms) are compensated or
 * accumulated in double and rounded once (docs/accuracy.md), so two correct
 * executors differ by a couple of ulps (f64 var: 8u = 4 ulps each, stddev
 * and norm2 about 2.5, so 8 ulps between the two);
 * products are not compensated, so another order differs by up to n
 * roundings; max/min/norminf/argmax/argmin/any/all select an element: exact. */
static const struct {
    const char *name;
    axis_fn axis;
    full_fn full;
    bool needs_element; /* an empty extent is an error */
    bool exact;
    double f32_ulps, f64_ulps, f32_rel, f64_rel;
} reductions[R__COUNT] = {
    [R_SUM] = {"sum", pe_sum_axis_at, pe_sum_at, false, false, 2, 4, 1e-6, 0},
    [R_PROD] = {"prod", pe_prod_axis_at, pe_prod_at, false, false, 2, 4, 1e-5, 1e-13},
    [R_MAX] = {"max", pe_max_reduce_axis_at, pe_max_reduce_at, true, true, 0, 0, 0, 0},
    [R_MIN] = {"min", pe_min_reduce_axis_at, pe_min_reduce_at, true, true, 0, 0, 0, 0},
    [R_MEAN] = {"mean", pe_mean_axis_at, pe_mean_at, false, false, 2, 4, 1e-6, 0},
    [R_VAR] = {"var", pe_var_axis_at, pe_var_at, false, false, 2, 8, 1e-6, 0},
    [R_STDDEV] = {"stddev", pe_stddev_axis_at, pe_stddev_at, false, false, 2, 8, 1e-6, 0},
    [R_ANY] = {"any", pe_any_axis_at, pe_any_at, false, true, 0, 0, 0, 0},
    [R_ALL] = {"all", pe_all_axis_at, pe_all_at, false, true, 0, 0, 0, 0},
    [R_ARGMAX] = {"argmax", pe_argmax_axis_at, pe_argmax_at, true, true, 0, 0, 0, 0},
    [R_ARGMIN] = {"argmin", pe_argmin_axis_at, pe_argmin_at, true, true, 0, 0, 0, 0},
    [R_NORM1] = {"norm1", pe_norm1_axis_at, pe_norm1_at, false, false, 2, 4, 1e-6, 0},
    [R_NORM2] = {"norm2", pe_norm2_axis_at, pe_norm2_at, false, false, 2, 8, 1e-6, 0},
    [R_NORMINF] = {"norminf", pe_norminf_axis_at, pe_norminf_at, false, true, 0, 0, 0, 0},
};

/* The input of reduction r: integers without 0 for products (an i32
 * product then wraps, identically on both), booleans (and floats for
 * any/all) mostly true or mostly false, so that whole rows are all true or
 * all false, signed floats for the selections. */
static pe_array reduce_input(int r, pe_dtype t, int k, const shape_t *s)
{
    double p = k % 2 ? 0.875 : 0.125;
    if (t == PE_BOOL) return input(t, s->rank, s->shape, p, 0);
    if ((t == PE_F32 || t == PE_F64) && (r == R_ANY || r == R_ALL)) return sparse(t, s->rank, s->shape, p);
    if (t == PE_I32 && r == R_PROD) {
        pe_array x = input(t, s->rank, s->shape, 0, 4); /* 0..4 -> -2, -1, 1, 2, 3 */
        return pe_add(x, pe_cond(pe_lt(x, 2), -2, -1));
    }
    if ((t == PE_F32 || t == PE_F64) && reductions[r].exact) return input(t, s->rank, s->shape, -1, 1);
    return rnd(t, s->rank, s->shape);
}

/* reduction r over every axis (-rank .. rank-1) of every shape */
static void build_axis_reduce(outputs *o, int t, int r)
{
    for (int k = 0; k < COUNT(reduce_shapes); k++) {
        const shape_t *s = &reduce_shapes[k];
        pe_array x = reduce_input(r, t, k, s);
        for (int axis = -s->rank; axis < s->rank; axis++) {
            if (reductions[r].needs_element && s->shape[axis < 0 ? axis + s->rank : axis] == 0) continue;
            out(o, reductions[r].axis(PE_HERE, x, axis));
        }
    }
}

/* reduction r over all elements, every shape and every dtype */
static void build_full_reduce(outputs *o, int unused, int r)
{
    (void)unused;
    for (int t = PE_F32; t <= PE_BOOL; t++)
        for (int k = 0; k < COUNT(reduce_shapes); k++) {
            const shape_t *s = &reduce_shapes[k];
            if (reductions[r].needs_element && numel_of(s->rank, s->shape) == 0) continue;
            out(o, reductions[r].full(PE_HERE, reduce_input(r, (pe_dtype)t, k, s)));
        }
}

/* reductions fed by element-wise chains and by views, and of reductions */
static void build_reduce_chain(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s57[2] = {5, 7}, s3_101[2] = {3, 101};
    const int64_t *s357 = base_shapes[2].shape;
    pe_array x = rnd(t, 2, s57), y = rnd(t, 3, s357), w = rnd(t, 2, s3_101);
    out(o, pe_sum_axis(pe_mul(pe_exp(x), 2.0), 1));
    out(o, pe_sum_axis(pe_mul(pe_exp(x), 2.0), 0));
    out(o, pe_sum_axis(pe_mul(pe_exp(w), 2.0), -1));
    out(o, pe_max_axis(pe_abs(pe_sub(x, 1.0)), 0));
    out(o, pe_mean_axis(pe_mul(y, y), -1));
    out(o, pe_norm2_axis(pe_sub(y, 1.0), 1));
    out(o, pe_var_axis(pe_add(y, 3.0), 0));
    out(o, pe_any_axis(pe_gt(x, 1.3), 1));
    out(o, pe_all_axis(pe_gt(x, 0.6), 0));
    out(o, pe_sum_axis(pe_gt(y, 1.0), 2)); /* a count: bool -> i32 */
    out(o, pe_argmax_axis(pe_mul(pe_sub(x, 1.0), pe_sub(x, 1.1)), 1));
    out(o, pe_argmin_axis(pe_neg(y), -2));
    /* reductions of views */
    out(o, pe_sum_axis(pe_transpose(x), 0));
    int64_t st[2] = {4, 6}, ct[2] = {5, 4}, sp[2] = {-1, -2};
    out(o, pe_argmin_axis(pe_slice_step(x, st, ct, sp), 1));
    int64_t to[2] = {4, 7};
    out(o, pe_max_axis(pe_periodic(pe_slice(x, ((int64_t[]){1, 0}), ((int64_t[]){2, 7})), 2, to), 0));
    out(o, pe_prod_axis(pe_spread(x, 0, 3), 0));
    static const int p[3] = {2, 0, 1};
    out(o, pe_mean_axis(pe_permute(y, p), 1));
    out(o, pe_sum(pe_slice(w, ((int64_t[]){0, 1}), ((int64_t[]){3, 99})))); /* a full sum over an odd offset */
    /* reductions of reductions */
    out(o, pe_sum_axis(pe_sum_axis(y, 2), 0));
    out(o, pe_mean_axis(pe_max_axis(y, 0), -1));
    out(o, pe_sum(pe_norm1_axis(y, 1)));
}

/* per-axis statistics broadcast back over their axis */
static void build_broadcast_back(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s57[2] = {5, 7}, s51[2] = {5, 1}, s317[3] = {3, 1, 7}, s351[3] = {3, 5, 1};
    pe_array x = rnd(t, 2, s57), y = rnd(t, 3, base_shapes[2].shape);
    pe_array centred = pe_sub(x, pe_reshape(pe_mean_axis(x, 1), 2, s51));
    out(o, centred);
    out(o, pe_div(centred, pe_reshape(pe_stddev_axis(x, 1), 2, s51)));
    out(o, pe_sub(x, pe_mean_axis(x, 0)));                    /* (7) broadcasts over the rows */
    out(o, pe_sub(x, pe_spread(pe_mean_axis(x, -1), 1, 7)));  /* spread back instead of reshape */
    out(o, pe_sub(y, pe_reshape(pe_mean_axis(y, 1), 3, s317)));
    out(o, pe_div(y, pe_reshape(pe_norm2_axis(y, -1), 3, s351)));
    out(o, pe_div(x, pe_sum(x)));
    out(o, pe_sub(x, pe_reshape(pe_max_axis(x, 1), 2, s51)));
}

/* softmax and log-softmax per row, and softmax per column */
static void build_softmax(outputs *o, int t, int unused)
{
    (void)unused;
    /* rows of 9000: longer than the CPU generator keeps exp's values in a row copy (ROW_COPY_MAX) */
    static const shape_t shapes[] = {{2, {5, 7}}, {2, {3, 101}}, {2, {1, 9}}, {2, {3, 9000}}};
    for (int k = 0; k < COUNT(shapes); k++) {
        int64_t m = shapes[k].shape[0], n = shapes[k].shape[1], col[2] = {m, 1};
        pe_array x = input(t, 2, shapes[k].shape, -2, 2);
        pe_array shifted = pe_sub(x, pe_reshape(pe_max_axis(x, 1), 2, col));
        pe_array e = pe_exp(shifted);
        pe_array total = pe_sum_axis(e, 1);
        out(o, pe_div(e, pe_reshape(total, 2, col)));
        out(o, pe_sub(shifted, pe_reshape(pe_log(total), 2, col)));
        pe_array e0 = pe_exp(pe_sub(x, pe_max_axis(x, 0)));
        out(o, pe_div(e0, pe_sum_axis(e0, 0)));
        (void)n;
    }
}

/* argmax/argmin, any/all, i32 sums and products, per axis and in full */
static void build_int_reductions(outputs *o, int unused1, int unused2)
{
    (void)unused1, (void)unused2;
    const shape_t *s3 = &base_shapes[2], *s4 = &base_shapes[3];
    pe_array f = input(PE_F32, 3, s3->shape, -1, 1), i = input(PE_I32, 4, s4->shape, -2, 2);
    pe_array hi = input(PE_BOOL, 3, s3->shape, 0.9, 0), lo = input(PE_BOOL, 3, s3->shape, 0.1, 0);
    out(o, pe_argmax(f)), out(o, pe_argmin(f)), out(o, pe_argmax(i)), out(o, pe_argmin(i)); /* ties: the first */
    out(o, pe_argmax(hi)), out(o, pe_argmin(lo));
    out(o, pe_argmax(pe_mul(f, f))), out(o, pe_argmin_axis(pe_abs(f), 1)), out(o, pe_argmax_axis(i, -1));
    out(o, pe_any(hi)), out(o, pe_all(hi)), out(o, pe_any(lo)), out(o, pe_all(lo));
    out(o, pe_all(pe_ge(i, -2))), out(o, pe_any(pe_gt(i, 2)));
    out(o, pe_any_axis(lo, 0)), out(o, pe_all_axis(hi, 2)), out(o, pe_any_axis(pe_gt(f, 0.9), -1));
    out(o, pe_sum(i)), out(o, pe_sum_axis(i, 0)), out(o, pe_sum_axis(i, 3)), out(o, pe_sum_axis(i, -3));
    out(o, pe_sum(hi)), out(o, pe_sum_axis(lo, 1));
    out(o, pe_prod_axis(i, 1)), out(o, pe_prod(pe_add(pe_mod(i, 2), 2))); /* 1s, 2s, 3s: wraps */
    /* near INT32_MAX: the sums wrap, identically on both */
    int64_t n = 64;
    pe_array big = pe_add(input(PE_I32, 1, &n, 0, 1000), 2147480000);
    out(o, pe_sum(big)), out(o, pe_sum_axis(pe_reshape(big, 2, ((int64_t[]){8, 8})), 1));
    out(o, pe_prod(pe_add(input(PE_I32, 1, &n, 0, 5), 3)));
}

/* NaN: max/min propagate it, argmax/argmin take the first NaN */
static void build_nan(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s57[2] = {5, 7};
    pe_array x = input(t, 2, s57, -1, 1);
    pe_array nan_at = pe_eq(pe_mod(pe_add(pe_mul(pe_index(PE_I32, 2, s57, 0), 7), pe_index(PE_I32, 2, s57, 1)), 11), 4);
    pe_array v = pe_cond(nan_at, pe_div(pe_sub(x, x), 0.0), x); /* NaN at flat 4, 15, 26 */
    out(o, v);
    out(o, pe_max_axis(v, 1)), out(o, pe_min_axis(v, 0)), out(o, pe_argmax_axis(v, 1)), out(o, pe_argmin_axis(v, 0));
    out(o, pe_norminf_axis(v, 1)), out(o, pe_sum_axis(v, 1)), out(o, pe_max(v)), out(o, pe_argmax(v));
    out(o, pe_argmin(v)), out(o, pe_any_axis(pe_isnan(v), 1));
}

/* Extremes over periodic views (a Jacobi sweep's change: rows walked, one
 * accumulator, since any order gives the same bits) with NaNs and signed
 * zeros in the rows: NaN sticks */
static void build_view_extremes(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s[2] = {7, 300};
    pe_array x = input(t, 2, s, -1, 1);
    pe_array flat = pe_add(pe_mul(pe_index(PE_I32, 2, s, 0), 300), pe_index(PE_I32, 2, s, 1));
    pe_array z = pe_cond(pe_eq(pe_mod(flat, 13), 5), pe_mul(x, 0.0), x); /* -0 where x < 0 */
    pe_array v = pe_cond(pe_eq(pe_mod(flat, 257), 100), pe_div(pe_sub(x, x), 0.0), z); /* NaN at 100, 357, ... */
    pe_array tv = pe_periodic(v, 2, (int64_t[]){14, 600}), tz = pe_periodic(z, 2, (int64_t[]){14, 600});
    pe_array left = pe_slice(tv, (int64_t[]){0, 299}, s), down = pe_slice(tv, (int64_t[]){1, 0}, s);
    pe_array zl = pe_slice(tz, (int64_t[]){0, 299}, s), zd = pe_slice(tz, (int64_t[]){1, 0}, s);
    out(o, pe_max(left)), out(o, pe_min(down)), out(o, pe_max(pe_abs(pe_sub(left, down)))), out(o, pe_any(pe_isnan(left)));
    /* not min/max over +0 and -0 together: the interpreter keeps the first it
     * meets, a keyed JIT reduction the total order's (-0 below +0) */
    out(o, pe_max(pe_abs(pe_sub(zl, zd)))), out(o, pe_min(pe_abs(zl))), out(o, pe_max(pe_neg(pe_abs(zd))));
    out(o, pe_any(pe_lt(zl, -2))), out(o, pe_all(pe_le(zd, 1))), out(o, pe_sum(pe_gt(zl, zd)));
}

/* edges of the reductions kernels now compute: overflow kept out of var and
 * stddev, extremes at either end, the first NaN, i32 wrapping, -inf only,
 * empty and size-1 extents along negative axes */
static void build_reduction_edges(outputs *o, int unused1, int unused2)
{
    (void)unused1, (void)unused2;
    int64_t two = 2, s22[2] = {2, 2}, s30[2] = {3, 0}, s13[2] = {1, 3};
    double big[2] = {1e200, -1e200}, huge[4] = {1e200, -1e200, 1e300, 1e300}, minf[2] = {-INFINITY, -INFINITY};
    pe_array b = pe_from_host(PE_F64, 1, &two, big), h = pe_from_host(PE_F64, 2, s22, huge);
    out(o, pe_stddev(b)), out(o, pe_var(b)), out(o, pe_stddev_axis(b, -1)), out(o, pe_norm2(b)), out(o, pe_norm2_axis(b, 0));
    out(o, pe_stddev_axis(h, 0)), out(o, pe_stddev_axis(h, -1)), out(o, pe_norm2(h)), out(o, pe_stddev(h));
    pe_array m = pe_from_host(PE_F64, 1, &two, minf);
    out(o, pe_argmax(m)), out(o, pe_argmin(m)), out(o, pe_argmax_axis(m, -1));
    int64_t n = 40000; /* past two chunks */
    pe_array i = pe_index(PE_I32, 1, &n, 0);
    pe_array at_end = pe_eq(i, (int32_t)(n - 1)), at_start = pe_eq(i, 0), at_mid = pe_eq(i, 20000);
    pe_array ramp = pe_cast(i, PE_F64), nan = pe_div(pe_sub(ramp, ramp), 0.0);
    out(o, pe_argmax(ramp)), out(o, pe_argmin(pe_neg(ramp))), out(o, pe_argmin(ramp)), out(o, pe_argmax(pe_cond(at_start, 1e9, ramp)));
    out(o, pe_argmax(pe_cond(at_mid, nan, ramp))), out(o, pe_argmin(pe_cond(pe_or(at_mid, at_end), nan, ramp)));
    out(o, pe_argmax(pe_cond(at_end, nan, ramp))), out(o, pe_argmax(pe_cond(pe_ge(i, 30000), 7.0, 7.0)));
    out(o, pe_sum(pe_mul(i, 100000))), out(o, pe_prod(pe_add(pe_mod(i, 3), 1))), out(o, pe_sum(pe_gt(i, 123)));
    out(o, pe_dot(i, i)), out(o, pe_any(at_end)), out(o, pe_all(pe_not(at_mid))), out(o, pe_all(pe_ge(i, 0)));
    out(o, pe_var(ramp)), out(o, pe_stddev(pe_mul(ramp, 1e150))), out(o, pe_norm2(pe_mul(ramp, 1e300)));
    pe_array e = pe_fill(PE_F64, 2, s30, 1.0), one = pe_add(pe_fill(PE_F64, 2, s13, 2.0), pe_index(PE_F64, 2, s13, 1));
    out(o, pe_sum_axis(pe_cast(e, PE_I32), -1)), out(o, pe_prod_axis(e, -1)), out(o, pe_any_axis(e, -1));
    out(o, pe_all_axis(e, -1)), out(o, pe_var_axis(e, -1)), out(o, pe_norm2_axis(e, -1)), out(o, pe_var(e));
    out(o, pe_var_axis(one, -2)), out(o, pe_argmax_axis(one, -2)), out(o, pe_stddev(one)), out(o, pe_argmin_axis(one, -1));
}

/* --- sizes past one chunk of 16384 iterations (launches split over threads) */

static void build_large_views(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s[2] = {301, 257}, n = 100003, s4[4] = {17, 33, 9, 13}, row = 257, m = 50000;
    pe_array x = rnd(t, 2, s), v = rnd(t, 1, &n);
    out2(o, pe_transpose(x));
    int64_t st = n - 1, ct = n, sp = -1;
    out2(o, pe_slice_step(v, &st, &ct, &sp));
    int64_t st2 = 3, ct2 = 33333, sp2 = 3;
    out2(o, pe_slice_step(v, &st2, &ct2, &sp2));
    static const int p[4] = {3, 0, 2, 1};
    out2(o, pe_permute(rnd(t, 4, s4), p));
    out(o, combine(pe_periodic(rnd(t, 1, &row), 2, s), x));
    out2(o, pe_spread(rnd(t, 1, &row), 0, 300));
    out2(o, pe_gather(v, input(PE_I32, 1, &m, 0, (double)(n - 1))));
    out2(o, pe_concat(x, x, 0));
    out2(o, pe_concat(x, pe_transpose(rnd(t, 2, ((int64_t[]){257, 301}))), 1));
}

static void build_large_reduce(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s[2] = {301, 257}, s3[3] = {7, 4099, 5};
    pe_array x = rnd(t, 2, s), y = rnd(t, 3, s3);
    for (int axis = -2; axis < 2; axis++) out(o, pe_sum_axis(x, axis));
    out(o, pe_mean_axis(x, 0)), out(o, pe_max_axis(x, 1)), out(o, pe_argmax_axis(x, 0)), out(o, pe_argmin_axis(x, 1));
    out(o, pe_norm2_axis(x, 1));
    for (int axis = 0; axis < 3; axis++) out(o, pe_sum_axis(y, axis));
    out(o, pe_sum_axis(pe_transpose(x), 1));
    out(o, pe_any_axis(pe_gt(y, 1), 1)), out(o, pe_all_axis(pe_gt(y, -2), 1));
    if (t == PE_F32 || t == PE_F64) {
        out(o, pe_var_axis(y, 1));
        pe_array e = pe_exp(pe_sub(x, pe_reshape(pe_max_axis(x, 1), 2, ((int64_t[]){301, 1}))));
        out(o, pe_div(e, pe_reshape(pe_sum_axis(e, 1), 2, ((int64_t[]){301, 1}))));
    }
}

/* Full reductions of views and broadcasts with rows long enough to be
 * walked row by row (the CPU's pe_gj_emit_rows_reduce), past a chunk, the
 * chunks ending inside rows: a stencil's shifted periodic views, a
 * transpose, a broadcast row. */
static void build_full_reduce_views(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s[2] = {301, 257}, row[2] = {1, 257};
    pe_array x = rnd(t, 2, s), v = rnd(t, 2, row);
    pe_array tiled = pe_periodic(x, 2, (int64_t[]){602, 514});
    pe_array up = pe_slice(tiled, (int64_t[]){300, 0}, s), left = pe_slice(tiled, (int64_t[]){0, 256}, s);
    pe_array around = pe_add(pe_add(up, left), x), t_x = pe_transpose(x), plus_row = pe_add(x, v);
    out(o, pe_sum(around)), out(o, pe_max(around)), out(o, pe_min(t_x)), out(o, pe_argmax(plus_row)), out(o, pe_argmin(around));
    out(o, pe_mean(t_x)), out(o, pe_norm1(pe_sub(around, x))), out(o, pe_norminf(pe_sub(up, left))), out(o, pe_dot(up, left));
    out(o, pe_any(pe_gt(around, 3))), out(o, pe_all(pe_gt(plus_row, -5))), out(o, pe_sum(pe_gt(up, left)));
    out(o, around); /* stored by the kernel that reduces it too */
    if (t != PE_I32) out(o, pe_prod(pe_add(pe_mul(pe_sub(up, left), 0.0001), 1.0)));
}

static void build_full_reduce_views_threads(outputs *o, int unused1, int unused2)
{
    (void)unused1, (void)unused2;
    build_full_reduce_views(o, PE_F32, 0);
    build_full_reduce_views(o, PE_F64, 0);
    build_full_reduce_views(o, PE_I32, 0);
}

/* products over long axes: not compensated, so only within n roundings */
static void build_large_prod(outputs *o, int t, int unused)
{
    (void)unused;
    int64_t s[2] = {301, 257};
    pe_array x = input(t, 2, s, 0.999, 1.001);
    out(o, pe_prod_axis(x, 0)), out(o, pe_prod_axis(x, -1)), out(o, pe_prod_axis(pe_transpose(x), 1));
}

/* ---------------------------------------------------------- the suite table */

typedef struct {
    const char *name;
    void (*build)(outputs *o, int a, int b);
    int a, b;
    int red;       /* a reduction program: reductions[red - 1] gives the tolerance */
    bool exact;    /* data movement only: the same values bit for bit */
    double f32_ulps, f64_ulps, f32_rel, f64_rel; /* 0: the defaults, 2 and 4 ulps */
    double scale;  /* errors in ulps of max(|value|, scale) (results near 0 that cancel) */
} program;

#define T1(name_, fn, t, ...) {.name = name_, .build = fn, .a = t, __VA_ARGS__}
#define TF(name_, fn, ...) T1(name_ " f32", fn, PE_F32, __VA_ARGS__), T1(name_ " f64", fn, PE_F64, __VA_ARGS__)
#define T4(name_, fn, ...) \
    TF(name_, fn, __VA_ARGS__), T1(name_ " i32", fn, PE_I32, __VA_ARGS__), T1(name_ " bool", fn, PE_BOOL, __VA_ARGS__)
#define RED(R, name_)                                                                    \
    T4(name_ "_axis", build_axis_reduce, .b = R, .red = R + 1),                          \
        {.name = name_ " full", .build = build_full_reduce, .b = R, .red = R + 1}
#define EXACT .exact = true

static const program programs[] = {
    T4("slice", build_slice, EXACT),
    T4("slice_step", build_slice_step, EXACT),
    T4("slice_edges", build_slice_edges, EXACT),
    T4("transpose", build_transpose, EXACT),
    T4("permute", build_permute, EXACT),
    T4("reshape", build_reshape, EXACT),
    T4("periodic", build_periodic, EXACT),
    T4("spread", build_spread, EXACT),
    T4("broadcast", build_broadcast, EXACT),
    T4("gather", build_gather, EXACT),
    T4("concat", build_concat, EXACT),
    {.name = "concat_promote", .build = build_concat_promote, EXACT},
    {.name = "generators", .build = build_generators},
    T4("view_of_view", build_view_of_view, EXACT),
    TF("stencil5", build_stencil, .exact = false),
    T4("a_plus_transpose", build_plus_transpose, EXACT),
    T4("tiles", build_tiles, EXACT),
    T4("large_tiles", build_large_tiles, EXACT),
    RED(R_SUM, "sum"),
    RED(R_PROD, "prod"),
    RED(R_MAX, "max"),
    RED(R_MIN, "min"),
    RED(R_MEAN, "mean"),
    RED(R_VAR, "var"),
    RED(R_STDDEV, "stddev"),
    RED(R_ANY, "any"),
    RED(R_ALL, "all"),
    RED(R_ARGMAX, "argmax"),
    RED(R_ARGMIN, "argmin"),
    RED(R_NORM1, "norm1"),
    RED(R_NORM2, "norm2"),
    RED(R_NORMINF, "norminf"),
    TF("reduce_chain", build_reduce_chain, .f32_ulps = 2, .f64_ulps = 8, .f32_rel = 1e-6),
    TF("broadcast_back", build_broadcast_back, .f32_ulps = 2, .f64_ulps = 8, .f32_rel = 1e-6, .scale = 2.0),
    TF("softmax", build_softmax, .f32_ulps = 4, .f64_ulps = 8, .f32_rel = 1e-6, .scale = 1.0),
    {.name = "int_reductions", .build = build_int_reductions, EXACT},
    T4("large_views", build_large_views, EXACT),
    TF("large_reduce", build_large_reduce, .f32_ulps = 4, .f64_ulps = 8, .f32_rel = 1e-6),
    T1("large_reduce i32", build_large_reduce, PE_I32, EXACT),
    TF("large_prod", build_large_prod, .f32_rel = 1e-5, .f64_rel = 1e-13),
    TF("full_reduce_views", build_full_reduce_views, .f32_ulps = 4, .f64_ulps = 8, .f32_rel = 1e-6, .f64_rel = 1e-13),
    T1("full_reduce_views i32", build_full_reduce_views, PE_I32, EXACT),
    TF("nan_extremes", build_nan, EXACT),
    TF("view_extremes", build_view_extremes, EXACT),
    {.name = "reduction_edges", .build = build_reduction_edges, .f64_ulps = 8},
};
enum { N_PROGRAMS = COUNT(programs) };

typedef struct {
    bool exact;
    double f32_ulps, f64_ulps, f32_rel, f64_rel, scale;
} tolerance;

static tolerance tolerance_of(const program *p)
{
    tolerance t = {p->exact, 2, 4, 0, 0, p->scale};
    if (p->red) {
        int r = p->red - 1;
        t.exact = reductions[r].exact;
        t.f32_ulps = reductions[r].f32_ulps, t.f64_ulps = reductions[r].f64_ulps;
        t.f32_rel = reductions[r].f32_rel, t.f64_rel = reductions[r].f64_rel;
    }
    if (p->f32_ulps) t.f32_ulps = p->f32_ulps;
    if (p->f64_ulps) t.f64_ulps = p->f64_ulps;
    if (p->f32_rel) t.f32_rel = p->f32_rel;
    if (p->f64_rel) t.f64_rel = p->f64_rel;
    return t;
}

static bool selected(const program *p)
{
    const char *only = getenv("PE_TEST_PROGRAMS");
    return !only || !*only || strstr(p->name, only) != NULL;
}

/* ------------------------------------------------------------ running them */

typedef struct {
    pe_dtype t;
    int rank;
    int64_t shape[PE_MAX_RANK];
    int64_t n;
    unsigned char *bytes;
} value;

typedef struct {
    int n;
    value v[MAX_OUTPUTS];
    uint64_t interpreted; /* ports the interpreter computed for this program */
    char error[1200];     /* an error the program raised: none expected */
} result;

static size_t size_of(pe_dtype t) { return t == PE_F64 ? 8 : t == PE_BOOL ? 1 : 4; }

static void free_result(result *r)
{
    for (int k = 0; k < r->n; k++) free(r->v[k].bytes);
    r->n = 0;
}

/* Runs program p in the current runtime, its inputs drawn from `seed`, and
 * reads every output. */
static void run_program(const program *p, uint64_t seed, result *r)
{
    lcg_state = seed;
    tu_errors_clear();
    pe_stats before, after;
    pe_get_stats(&before);
    pe_scope scope = pe_scope_begin();
    outputs o = {0};
    p->build(&o, p->a, p->b);
    memset(r, 0, sizeof *r);
    r->n = o.n;
    for (int k = 0; k < o.n; k++) {
        value *v = &r->v[k];
        v->t = pe_dtype_of(o.a[k]);
        v->rank = pe_rank(o.a[k]);
        for (int d = 0; d < v->rank; d++) v->shape[d] = pe_dim(o.a[k], d);
        v->n = pe_numel(o.a[k]);
        size_t bytes = (size_t)v->n * size_of(v->t);
        v->bytes = malloc(bytes + 1);
        assert_non_null(v->bytes);
        int rc = pe_read(o.a[k], v->bytes, bytes);
        if (rc != PE_OK && !r->error[0])
            snprintf(r->error, sizeof r->error, "output %d: read gave %s: %s", k, pe_status_name((pe_status)rc),
                     tu_errors.message);
    }
    pe_scope_end(scope);
    pe_sync();
    pe_get_stats(&after);
    r->interpreted = after.ops_interpreted - before.ops_interpreted;
    if (tu_errors.count && !r->error[0]) snprintf(r->error, sizeof r->error, "error: %s", tu_errors.message);
}

static char cache_dir[64];

/* One runtime on `executor` runs every selected program. */
static result *run_suite(const char *executor, int threads)
{
    result *res = calloc(N_PROGRAMS, sizeof *res);
    assert_non_null(res);
    pe_config cfg = {.executor = executor, .cache_dir = cache_dir, .threads = threads};
    assert_int_equal(pe_init(&cfg), PE_OK);
    for (int i = 0; i < N_PROGRAMS; i++)
        if (selected(&programs[i])) run_program(&programs[i], 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1), &res[i]);
    pe_stats st;
    pe_get_stats(&st);
    pe_shutdown();
    if (st.compile_failures) /* a rejected kernel runs on the interpreter and would hide a generator's bug */
        fail_msg("%s: %llu kernel(s) failed to compile: see the warnings", executor,
                 (unsigned long long)st.compile_failures);
    return res;
}

static void free_suite(result *res)
{
    for (int i = 0; i < N_PROGRAMS; i++) free_result(&res[i]);
    free(res);
}

static double element(const value *v, int64_t i)
{
    switch (v->t) {
    case PE_F32: return ((const float *)v->bytes)[i];
    case PE_F64: return ((const double *)v->bytes)[i];
    case PE_I32: return ((const int32_t *)v->bytes)[i];
    default: return ((const uint8_t *)v->bytes)[i];
    }
}

static const char *dtype_name(pe_dtype t)
{
    return t == PE_F32 ? "f32" : t == PE_F64 ? "f64" : t == PE_I32 ? "i32" : t == PE_BOOL ? "bool" : "?";
}

/* The distance of g from w in ulps of max(|w|, scale) of type t. */
static double ulps_scaled(double g, double w, pe_dtype t, double scale)
{
    double mag = fmax(fabs(w), scale);
    int e;
    frexp(mag > 0 ? mag : (t == PE_F32 ? 0x1p-126 : 0x1p-1022), &e);
    int mant = t == PE_F32 ? 24 : 53, emin = t == PE_F32 ? -125 : -1021;
    return fabs(g - w) / ldexp(1.0, (e < emin ? emin : e) - mant);
}

/* got against want within the tolerance; false with `why` set otherwise */
static bool agree(const value *want, const value *got, tolerance tol, char *why, size_t why_size, double *worst)
{
    if (got->t != want->t || got->rank != want->rank || got->n != want->n ||
        memcmp(got->shape, want->shape, sizeof(int64_t) * (size_t)want->rank)) {
        snprintf(why, why_size, "dtype or shape differ: jit %s rank %d numel %lld, interp %s rank %d numel %lld",
                 dtype_name(got->t), got->rank, (long long)got->n, dtype_name(want->t), want->rank,
                 (long long)want->n);
        return false;
    }
    bool floating = want->t == PE_F32 || want->t == PE_F64;
    size_t es = size_of(want->t);
    for (int64_t i = 0; i < want->n; i++) {
        double w = element(want, i), g = element(got, i);
        bool ok;
        if (!floating) /* i32, bool: bit for bit */
            ok = memcmp(want->bytes + (size_t)i * es, got->bytes + (size_t)i * es, es) == 0;
        else if (tol.exact || isnan(w) || isnan(g) || isinf(w) || isinf(g))
            ok = tu_same_value(g, w);
        else {
            bool f32 = want->t == PE_F32;
            double rel = f32 ? tol.f32_rel : tol.f64_rel;
            double ulps = ulps_scaled(g, w, want->t, tol.scale);
            ok = ulps <= (f32 ? tol.f32_ulps : tol.f64_ulps) || fabs(g - w) <= rel * fmax(fabs(w), tol.scale);
            if (ulps > *worst) *worst = ulps;
        }
        if (!ok) {
            snprintf(why, why_size, "%s [%lld] of %lld: jit %.17g interp %.17g", dtype_name(want->t), (long long)i,
                     (long long)want->n, g, w);
            return false;
        }
    }
    return true;
}

/* --------------------------------------------------------------- the tests */

static int make_cache(void **state)
{
    (void)state;
    snprintf(cache_dir, sizeof cache_dir, "/tmp/pe-test-views-XXXXXX");
    return mkdtemp(cache_dir) ? 0 : -1;
}

static int remove_cache(void **state)
{
    (void)state;
    tu_remove_dir(cache_dir);
    return 0;
}

static int push_handler(void **state)
{
    (void)state;
    tu_errors_clear();
    pe_push_error_handler(tu_record_error, NULL);
    return 0;
}

static int pop_handler(void **state)
{
    (void)state;
    pe_shutdown(); /* a test that failed inside a runtime: the next pe_init would keep it (and its executor) */
    pe_pop_error_handler();
    return 0;
}

/* Every program's values on the JIT are the interpreter's. */
static void test_jit_agrees_with_interpreter(void **state)
{
    (void)state;
    result *want = run_suite("interp", 0);
    result *got = run_suite("jit", 0);
    const char *v = getenv("PE_TEST_VERBOSE");
    bool verbose = v && *v && strcmp(v, "0");
    int failed = 0, ran = 0, outputs_seen = 0;
    for (int i = 0; i < N_PROGRAMS; i++) {
        const program *p = &programs[i];
        if (!selected(p)) continue;
        ran++;
        const result *w = &want[i], *g = &got[i];
        if (w->error[0] || g->error[0]) {
            fprintf(stderr, "  %s: interp %s / jit %s\n", p->name, w->error[0] ? w->error : "ok",
                    g->error[0] ? g->error : "ok");
            failed++;
            continue;
        }
        if (w->n != g->n) {
            fprintf(stderr, "  %s: %d outputs on the interpreter, %d on the JIT\n", p->name, w->n, g->n);
            failed++;
            continue;
        }
        outputs_seen += w->n;
        double worst = 0;
        int64_t elements = 0;
        for (int k = 0; k < w->n; k++) {
            char why[256];
            elements += w->v[k].n;
            if (!agree(&w->v[k], &g->v[k], tolerance_of(p), why, sizeof why, &worst)) {
                fprintf(stderr, "  %s, output %d: %s\n", p->name, k, why);
                failed++;
                break;
            }
        }
        if (verbose)
            fprintf(stderr, "  %-22s %3d outputs %6lld elements, largest float difference %g ulps; %llu ports "
                            "interpreted on the JIT path\n",
                    p->name, w->n, (long long)elements, worst, (unsigned long long)g->interpreted);
    }
    free_suite(want), free_suite(got);
    if (failed) fail_msg("%d of %d programs differ between the JIT and the interpreter (above)", failed, ran);
    assert_true(ran == 0 || outputs_seen > 0);
}

/* On the JIT nothing of the suite runs on the interpreter (issue 18): every
 * view, gather, concat and reduction of every program is a kernel. */
static void test_jit_interprets_nothing(void **state)
{
    (void)state;
    result *got = run_suite("jit", 0);
    int ran = 0, wrong = 0;
    for (int i = 0; i < N_PROGRAMS; i++) {
        if (!selected(&programs[i])) continue;
        ran++;
        if (got[i].error[0]) fprintf(stderr, "  %s: %s\n", programs[i].name, got[i].error);
        if (!got[i].interpreted) continue;
        wrong++;
        fprintf(stderr, "  %-22s %llu ports on the interpreter\n", programs[i].name, (unsigned long long)got[i].interpreted);
    }
    free_suite(got);
    if (wrong) fail_msg("%d of %d programs ran ports on the interpreter (above)", wrong, ran);
}

/* --- determinism over thread counts */

static void build_long_sums(outputs *o, int unused1, int unused2)
{
    (void)unused1, (void)unused2;
    /* mixed magnitudes and signs: the order of summation shows in the last bits */
    int64_t s3n[2] = {3, 100003}, sn3[2] = {100003, 3}, s2n3[3] = {2, 100003, 3};
    pe_array a = pe_mul(input(PE_F64, 2, s3n, -1, 1), pe_exp2(input(PE_I32, 2, s3n, -20, 20)));
    pe_array b = pe_mul(input(PE_F32, 2, sn3, -1, 1), pe_exp2(pe_cast(input(PE_I32, 2, sn3, -10, 10), PE_F32)));
    pe_array c = input(PE_F64, 3, s2n3, -1, 1);
    pe_array d = input(PE_F32, 2, s3n, 0.5, 1.5);
    out(o, pe_sum_axis(a, 1)), out(o, pe_sum_axis(a, -2)), out(o, pe_sum(a));
    out(o, pe_sum_axis(b, 0)), out(o, pe_sum_axis(b, 1));
    out(o, pe_sum_axis(c, 1)), out(o, pe_mean_axis(c, 1)), out(o, pe_norm2_axis(c, 1)), out(o, pe_var_axis(c, -2));
    out(o, pe_sum_axis(d, 1)), out(o, pe_sum_axis(pe_mul(pe_exp(d), 2.0f), 1));
    out(o, pe_sum_axis(pe_transpose(b), 1));
}

/* The reductions kernels took over from the interpreter, past a chunk and
 * along every kind of axis: i32 sums that wrap, products, extremes of
 * integers, any/all, argmax/argmin with NaNs, var, stddev, f64 norm2. */
static void build_long_reductions(outputs *o, int unused1, int unused2)
{
    (void)unused1, (void)unused2;
    int64_t s3n[2] = {3, 50001}, sn3[2] = {50001, 3}, n = 150003;
    pe_array i = input(PE_I32, 2, s3n, -2000000000, 2000000000), j = input(PE_I32, 2, sn3, -5, 5);
    pe_array f = pe_mul(input(PE_F64, 2, s3n, -1, 1), pe_exp2(input(PE_I32, 2, s3n, -30, 30)));
    pe_array g = input(PE_F32, 2, sn3, -1, 1), b = pe_gt(j, 3);
    pe_array nan_at = pe_eq(pe_mod(pe_index(PE_I32, 2, s3n, 1), 9973), 17);
    pe_array fn = pe_cond(nan_at, pe_div(pe_sub(f, f), 0.0), f);
    out(o, pe_sum(i)), out(o, pe_sum_axis(i, 1)), out(o, pe_sum_axis(j, 0)), out(o, pe_sum(b)), out(o, pe_sum_axis(b, -2));
    out(o, pe_prod(pe_add(pe_mod(j, 3), 2))), out(o, pe_prod_axis(pe_add(pe_mod(i, 3), 2), 1));
    out(o, pe_prod(pe_add(pe_mul(g, 0.001f), 1.0f))), out(o, pe_prod_axis(pe_add(pe_mul(f, 1e-12), 1.0), -1));
    out(o, pe_max(i)), out(o, pe_min_axis(i, 1)), out(o, pe_max_axis(j, 0)), out(o, pe_min(b));
    out(o, pe_any(pe_gt(i, 1999990000))), out(o, pe_all_axis(pe_gt(j, -5), 0)), out(o, pe_any_axis(b, 0));
    out(o, pe_argmax(f)), out(o, pe_argmin_axis(f, 1)), out(o, pe_argmax_axis(j, 0)), out(o, pe_argmin(j));
    out(o, pe_argmax(fn)), out(o, pe_argmin_axis(fn, 1)), out(o, pe_argmax_axis(pe_transpose(fn), 0));
    out(o, pe_var(f)), out(o, pe_stddev(g)), out(o, pe_var_axis(f, 1)), out(o, pe_stddev_axis(g, 0));
    out(o, pe_var(pe_reshape(i, 1, &n))), out(o, pe_norm2(f)), out(o, pe_norm2_axis(f, 1)), out(o, pe_norm2_axis(pe_transpose(f), 0));
    out(o, pe_dot(i, i)), out(o, pe_mean(i)), out(o, pe_mean_axis(b, 0));
}

/* Program p on the JIT with 1, 2 and 3 threads: the same bits every time;
 * its integer and bool results also bitwise the interpreter's. */
static void same_bits_for_any_thread_count(const program *p)
{
    result r[4];
    for (int k = 0; k < 4; k++) {
        pe_config cfg = {.executor = k < 3 ? "jit" : "interp", .cache_dir = cache_dir, .threads = k < 3 ? k + 1 : 1};
        assert_int_equal(pe_init(&cfg), PE_OK);
        run_program(p, 12345, &r[k]);
        pe_shutdown();
        if (r[k].error[0]) fail_msg("%s, %d threads: %s", p->name, k + 1, r[k].error);
    }
    for (int j = 0; j < r[0].n; j++) {
        assert_int_equal(r[3].v[j].n, r[0].v[j].n);
        if (r[0].v[j].t != PE_I32 && r[0].v[j].t != PE_BOOL) continue;
        for (int64_t i = 0; i < r[0].v[j].n; i++)
            if (element(&r[0].v[j], i) != element(&r[3].v[j], i))
                fail_msg("%s output %d [%lld]: JIT %.17g, interpreter %.17g", p->name, j, (long long)i, element(&r[0].v[j], i),
                         element(&r[3].v[j], i));
    }
    free_result(&r[3]);
    for (int k = 1; k < 3; k++) {
        assert_int_equal(r[k].n, r[0].n);
        for (int j = 0; j < r[0].n; j++) {
            assert_int_equal(r[k].v[j].n, r[0].v[j].n);
            size_t bytes = (size_t)r[0].v[j].n * size_of(r[0].v[j].t);
            if (memcmp(r[k].v[j].bytes, r[0].v[j].bytes, bytes)) {
                for (int64_t i = 0; i < r[0].v[j].n; i++)
                    if (memcmp(r[k].v[j].bytes + i * size_of(r[0].v[j].t), r[0].v[j].bytes + i * size_of(r[0].v[j].t),
                               size_of(r[0].v[j].t)))
                        fail_msg("output %d [%lld]: %d threads %.17g, 1 thread %.17g", j, (long long)i, k + 1,
                                 element(&r[k].v[j], i), element(&r[0].v[j], i));
            }
        }
    }
    for (int k = 0; k < 3; k++) free_result(&r[k]);
}

static void test_axis_sums_same_bits_for_any_thread_count(void **state)
{
    (void)state;
    static const program long_sums = {.name = "long_sums", .build = build_long_sums};
    same_bits_for_any_thread_count(&long_sums);
}

static void test_reductions_same_bits_for_any_thread_count(void **state)
{
    (void)state;
    static const program long_reductions = {.name = "long_reductions", .build = build_long_reductions};
    same_bits_for_any_thread_count(&long_reductions);
}

/* full reductions walked row by row, their launches split inside rows: the same bits for any thread count */
static void test_full_reductions_of_views_same_bits_for_any_thread_count(void **state)
{
    (void)state;
    static const program full = {.name = "full_reduce_views_threads", .build = build_full_reduce_views_threads};
    same_bits_for_any_thread_count(&full);
}

static void build_tiles_threads(outputs *o, int unused1, int unused2)
{
    (void)unused1, (void)unused2;
    build_large_tiles(o, PE_F32, 0);
    build_large_tiles(o, PE_I32, 0);
}

/* tiled walks whose launches split inside tiles: the same bits for any thread count */
static void test_tiles_same_bits_for_any_thread_count(void **state)
{
    (void)state;
    static const program tiles = {.name = "tiles_threads", .build = build_tiles_threads};
    same_bits_for_any_thread_count(&tiles);
}

/* var and stddev keep the reference's range in kernels: the deviations of
 * [1e200, -1e200] square past f64, their scaled squares do not. */
static void test_stddev_does_not_overflow_in_kernels(void **state)
{
    (void)state;
    pe_config cfg = {.executor = "jit", .cache_dir = cache_dir, .threads = 2};
    assert_int_equal(pe_init(&cfg), PE_OK);
    pe_stats before, after;
    pe_get_stats(&before);
    int64_t two = 2, s12[2] = {1, 2};
    double big[2] = {1e200, -1e200}, got[4];
    pe_array x = pe_from_host(PE_F64, 1, &two, big), y = pe_reshape(x, 2, s12);
    assert_int_equal(pe_read(pe_stddev(x), &got[0], 8), PE_OK);
    assert_int_equal(pe_read(pe_stddev_axis(y, 1), &got[1], 8), PE_OK);
    assert_int_equal(pe_read(pe_norm2(x), &got[2], 8), PE_OK);
    assert_int_equal(pe_read(pe_var(pe_mul(x, 1e-100)), &got[3], 8), PE_OK);
    pe_get_stats(&after);
    assert_true(got[0] == 1e200 && got[1] == 1e200);
    assert_true(fabs(got[2] / (1e200 * sqrt(2.0)) - 1) < 1e-15);
    assert_true(fabs(got[3] / 1e200 - 1) < 1e-15);
    /* all of them kernels, on the CPU and on a GPU (gpu-check runs this with PE_DEVICE=cuda) */
    assert_int_equal(after.ops_interpreted, before.ops_interpreted);
    pe_shutdown();
}

/* --- errors */

/* An f32 array of one page of elements, with no access on either side. */
static size_t page;
static void unmap_guarded(void *data, void *ctx)
{
    (void)data;
    munmap(ctx, 3 * page);
}
static pe_array guarded_f32(int64_t *n_out)
{
    page = (size_t)sysconf(_SC_PAGESIZE);
    char *base = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(base != MAP_FAILED);
    assert_int_equal(mprotect(base, page, PROT_NONE), 0);
    assert_int_equal(mprotect(base + 2 * page, page, PROT_NONE), 0);
    float *data = (float *)(base + page);
    int64_t n = (int64_t)(page / sizeof(float));
    for (int64_t i = 0; i < n; i++) data[i] = (float)i;
    *n_out = n;
    return pe_adopt(PE_F32, 1, &n, data, unmap_guarded, base);
}

/* The read of a fused consumer of an out-of-range gather: PE_E_ARG naming
 * the gather's line; nothing outside the array is read (a guard page on
 * either side of it would fault). */
static void expect_gather_error(pe_array y, int64_t n_elems, int line)
{
    char where[64];
    snprintf(where, sizeof where, "%s:%d:", tu_basename(__FILE__), line);
    float *buf = malloc((size_t)(n_elems + 1) * sizeof(float));
    int rc = pe_read(y, buf, (size_t)n_elems * sizeof(float));
    free(buf);
    if (rc != PE_E_ARG || tu_errors.code != PE_E_ARG || !strstr(tu_errors.message, where) ||
        !strstr(tu_errors.message, "out of range"))
        fail_msg("expected PE_E_ARG at %s (out of range), got %s, %d errors, last: %s", where,
                 pe_status_name((pe_status)rc), tu_errors.count, tu_errors.message);
    tu_errors_clear();
}

static void gather_errors(void)
{
    int64_t n;
    pe_array a = guarded_f32(&n);
    const int32_t bad_values[] = {(int32_t)n, -1, INT32_MAX, INT32_MIN, (int32_t)n + 1024};
    for (int k = 0; k < COUNT(bad_values); k++) {
        int64_t m = 9;
        int32_t idx[9] = {0, 3, (int32_t)n - 1, 2, 5, 1, 7, 4, 6};
        idx[(k * 4) % 9] = bad_values[k];
        pe_array index = pe_from_host(PE_I32, 1, &m, idx);
        int line = __LINE__ + 1;
        pe_array g = pe_gather(a, index);
        pe_array y = pe_mul(pe_add(g, 1.0f), 2.0f); /* fused chains after the gather */
        pe_array z = pe_sum(pe_add(pe_gather(a, index), 1.0f));
        int zline = __LINE__ - 1;
        tu_expect_no_error(); /* data-dependent: found when computed */
        expect_gather_error(y, m, line);
        expect_gather_error(z, 1, zline);
        expect_gather_error(g, m, line);
        pe_release(y), pe_release(z), pe_release(g), pe_release(index);
    }
    /* a 2-d gather, its index computed in the same chain, read through a per-axis reduction */
    int64_t s33[2] = {3, 3};
    int line = __LINE__ + 1;
    pe_array g = pe_gather(a, pe_add(pe_index(PE_I32, 2, s33, 1), (int32_t)n - 2)); /* n - 2 .. n */
    pe_array y = pe_sum_axis(pe_add(g, 1.0f), 1);
    expect_gather_error(y, 3, line);
    pe_release(y), pe_release(g), pe_release(a);
}

static void view_errors(void)
{
    pe_array x = rnd(PE_F32, 3, base_shapes[2].shape); /* (3, 5, 7) */
    int line;
#define EXPECT(code, call)                                                                       \
    do {                                                                                         \
        line = __LINE__;                                                                         \
        pe_array bad_ = call;                                                                    \
        tu_expect_error(code, line);                                                             \
        assert_false(pe_is_valid(bad_));                                                         \
    } while (0)
    EXPECT(PE_E_SHAPE, pe_slice(x, ((int64_t[]){0, 0, 5}), ((int64_t[]){3, 5, 3})));   /* past the end */
    EXPECT(PE_E_SHAPE, pe_slice(x, ((int64_t[]){-1, 0, 0}), ((int64_t[]){2, 5, 7})));  /* negative start */
    EXPECT(PE_E_SHAPE, pe_slice(x, ((int64_t[]){0, 0, 0}), ((int64_t[]){3, -1, 7})));  /* negative count */
    EXPECT(PE_E_SHAPE, pe_slice(x, ((int64_t[]){0, 6, 0}), ((int64_t[]){3, 0, 7})));   /* start past the end */
    EXPECT(PE_E_SHAPE, pe_slice_step(x, ((int64_t[]){2, 4, 6}), ((int64_t[]){3, 5, 5}), ((int64_t[]){-1, -1, -2})));
    EXPECT(PE_E_SHAPE, pe_slice_step(x, ((int64_t[]){0, 0, 1}), ((int64_t[]){1, 1, 4}), ((int64_t[]){1, 1, 2})));
    EXPECT(PE_E_SHAPE, pe_slice_step(x, ((int64_t[]){3, 0, 0}), ((int64_t[]){1, 1, 1}), ((int64_t[]){-1, 1, 1})));
    int64_t huge[3] = {1, 1, INT64_MAX};
    EXPECT(PE_E_SHAPE, pe_slice(x, ((int64_t[]){0, 0, 2}), huge)); /* 2 + count - 1 overflows */
    EXPECT(PE_E_SHAPE, pe_slice_step(x, ((int64_t[]){0, 0, 0}), ((int64_t[]){1, 1, 3}), huge)); /* 2 * step overflows */
    EXPECT(PE_E_SHAPE, pe_slice_step(x, ((int64_t[]){0, 0, 6}), ((int64_t[]){1, 1, 2}), huge)); /* 6 + step overflows */
    EXPECT(PE_E_ARG, pe_slice_step(x, ((int64_t[]){0, 0, 0}), ((int64_t[]){1, 1, 1}), ((int64_t[]){1, 0, 1})));
    EXPECT(PE_E_ARG, pe_slice_step(x, ((int64_t[]){0, 0, 0}), ((int64_t[]){1, 1, 1}), NULL));
    EXPECT(PE_E_ARG, pe_permute(x, ((int[]){0, 0, 1})));
    EXPECT(PE_E_ARG, pe_permute(x, ((int[]){0, 1, 3})));
    EXPECT(PE_E_ARG, pe_permute(x, ((int[]){-1, 0, 1})));
    EXPECT(PE_E_SHAPE, pe_transpose(x));
    EXPECT(PE_E_ARG, pe_sum_axis(x, 3));
    EXPECT(PE_E_ARG, pe_mean_axis(x, -4));
    EXPECT(PE_E_ARG, pe_argmax_axis(x, 7));
    EXPECT(PE_E_ARG, pe_concat(x, x, 3));
    EXPECT(PE_E_ARG, pe_concat(x, x, -4));
    EXPECT(PE_E_SHAPE, pe_concat(x, rnd(PE_F32, 2, base_shapes[1].shape), 0));
    EXPECT(PE_E_ARG, pe_spread(x, 5, 2));
    EXPECT(PE_E_ARG, pe_index(PE_I32, 3, base_shapes[2].shape, 3));
    EXPECT(PE_E_SHAPE, pe_reshape(x, 2, ((int64_t[]){4, 26})));
    EXPECT(PE_E_SHAPE, pe_periodic(x, 2, ((int64_t[]){5, 7})));
    EXPECT(PE_E_TYPE, pe_gather(x, pe_cast(x, PE_F32)));
    int64_t s203[3] = {2, 0, 3};
    pe_array e = rnd(PE_F64, 3, s203);
    EXPECT(PE_E_SHAPE, pe_max_axis(e, 1));
    EXPECT(PE_E_SHAPE, pe_argmin_axis(e, -2));
    EXPECT(PE_E_SHAPE, pe_argmax(e));
#undef EXPECT
    /* a consumer of a bad view is invalid silently; its read names the view's line */
    line = __LINE__ + 1;
    pe_array bad = pe_slice(x, ((int64_t[]){0, 0, 5}), ((int64_t[]){3, 5, 3}));
    tu_expect_error(PE_E_SHAPE, line);
    pe_array y = pe_sum_axis(pe_add(bad, 1.0f), 0);
    tu_expect_no_error();
    float buf[35];
    assert_int_equal(pe_read(y, buf, sizeof buf), PE_E_INVALID);
    char where[64];
    snprintf(where, sizeof where, "%s:%d:", tu_basename(__FILE__), line);
    if (!strstr(tu_errors.message, where)) fail_msg("the read should name %s: %s", where, tu_errors.message);
    tu_errors_clear();
    pe_release(y), pe_release(e), pe_release(x);
}

static void test_errors_at_the_callers_line(void **state)
{
    (void)state;
    static const char *const executors[] = {"interp", "jit"};
    for (int k = 0; k < 2; k++) {
        pe_config cfg = {.executor = executors[k], .cache_dir = cache_dir};
        assert_int_equal(pe_init(&cfg), PE_OK);
        tu_errors_clear();
        lcg_state = 99;
        gather_errors();
        view_errors();
        pe_shutdown();
    }
}

int main(int argc, char **argv)
{
    const char *group = argc > 1 ? argv[1] : getenv("PE_TEST_GROUP");
    if (group && *group && strcmp(group, "agreement") && strcmp(group, "zero_interpreted")) {
        fprintf(stderr, "usage: %s [agreement|zero_interpreted]\n", argv[0]);
        return 2;
    }
    const struct CMUnitTest agreement[] = {
        cmocka_unit_test_setup_teardown(test_jit_agrees_with_interpreter, push_handler, pop_handler),
        cmocka_unit_test_setup_teardown(test_axis_sums_same_bits_for_any_thread_count, push_handler, pop_handler),
        cmocka_unit_test_setup_teardown(test_reductions_same_bits_for_any_thread_count, push_handler, pop_handler),
        cmocka_unit_test_setup_teardown(test_tiles_same_bits_for_any_thread_count, push_handler, pop_handler),
        cmocka_unit_test_setup_teardown(test_full_reductions_of_views_same_bits_for_any_thread_count, push_handler, pop_handler),
        cmocka_unit_test_setup_teardown(test_stddev_does_not_overflow_in_kernels, push_handler, pop_handler),
        cmocka_unit_test_setup_teardown(test_errors_at_the_callers_line, push_handler, pop_handler),
    };
    const struct CMUnitTest zero_interpreted[] = {
        cmocka_unit_test_setup_teardown(test_jit_interprets_nothing, push_handler, pop_handler),
    };
    int failed = 0;
    if (!group || !*group || !strcmp(group, "agreement"))
        failed += cmocka_run_group_tests_name("agreement", agreement, make_cache, remove_cache);
    if (!group || !*group || !strcmp(group, "zero_interpreted"))
        failed += cmocka_run_group_tests_name("zero_interpreted", zero_interpreted, make_cache, remove_cache);
    return failed;
}
