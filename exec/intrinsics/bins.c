/* bins.c — pe_histogram, pe_bincount and pe_scatter_add on the host:
 * accumulations into bins, on PE's pool, the same bits for any thread count.
 *
 * The elements are cut into groups that depend on the sizes alone (at most
 * MAX_GROUPS, each at least GROUP_MIN elements, their private bins at most
 * PARTIALS_BYTES in all), each group accumulates into private bins of its
 * own (in parallel), and the groups' bins are added in group order.  Counts
 * are integers (any order gives them); sums of floats are accumulated in
 * double within a group and added group by group in that order, so the
 * rounding depends on the sizes, never on the threads (scatter_add's sums
 * go onto the target last: target + (group 0 + group 1 + ...)); i32 sums
 * wrap, as the element-wise i32 ops do.
 *
 * pe_histogram's bin of x is NumPy's: between the edges lo + i * (hi - lo)
 * / bins (the last exactly hi) in a's float type (pe_histogram_edges: f32
 * edges for f32, as NumPy's bin_type), found from the estimate (x - lo) *
 * (bins / (hi - lo)) truncated, then moved while x lies below its lower
 * edge or on or above its upper one (the edges decide, not the estimate);
 * x == hi counts in the last bin; NaN and values outside the end edges are
 * not counted.  An index outside its range (bincount's idx past length,
 * scatter_add's past the target) fails the call at the caller's line,
 * naming the first such element. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrinsics.h"
#include "../interp/ref_linalg.h" /* pe_histogram_edges */

#define MAX_GROUPS     64
#define GROUP_MIN      (1 << 15)
#define PARTIALS_BYTES ((int64_t)64 << 20)

/* The number of groups for n elements over bins of `bin_bytes` each. */
static int64_t groups_for(int64_t n, int64_t bins, int64_t bin_bytes)
{
    int64_t g = n / GROUP_MIN;
    if (g > MAX_GROUPS) g = MAX_GROUPS;
    int64_t room = bins > 0 ? PARTIALS_BYTES / (bins * bin_bytes) : MAX_GROUPS;
    if (g > room) g = room;
    return g < 1 ? 1 : g;
}

/* What every task of a call shares. */
typedef struct {
    int64_t n, n_groups, bins;
    /* histogram */
    const void *x;
    pe_dtype t;
    double lo, hi, per_unit; /* per_unit: bins / (hi - lo) */
    const double *edges;
    /* bincount and scatter_add: the indices, the weights (NULL: counts), their dtype, the stride of the weights (0: one) */
    const int32_t *idx;
    const void *w;
    pe_dtype wt;
    int64_t w_stride;
    /* the groups' private bins: uint32_t counts or i32 sums, or double sums */
    uint32_t *counts;
    double *sums;
    int64_t *first_bad; /* per group: its first index out of range, or n */
} bins_job;

static inline int64_t group_begin(const bins_job *j, int64_t g) { return j->n * g / j->n_groups; }

/* ------------------------------------------------------------- histogram */

/* A group's elements of dtype T into its bins (NumPy's bin of each, as
 * above), the job's fields in locals. */
#define COUNT_GROUP(T)                                                                          \
    static void count_##T(const bins_job *j, const T *x, int64_t first, int64_t last, uint32_t *c) \
    {                                                                                           \
        const double *e = j->edges, lowest = e[0], highest = e[j->bins], lo = j->lo;            \
        const double per_unit = j->per_unit;                                                    \
        const int64_t top = j->bins - 1;                                                        \
        for (int64_t i = first; i < last; i++) {                                                \
            double v = (double)x[i];                                                            \
            if (!(v >= lowest && v <= highest)) continue;                                       \
            int64_t b = (int64_t)((v - lo) * per_unit);                                         \
            b = b > top ? top : b < 0 ? 0 : b;                                                  \
            while (b > 0 && v < e[b]) b--;                                                      \
            while (b < top && v >= e[b + 1]) b++;                                               \
            c[b]++;                                                                             \
        }                                                                                       \
    }
COUNT_GROUP(float)
COUNT_GROUP(double)
COUNT_GROUP(int32_t)

static void histogram_groups(int64_t begin, int64_t end, void *const *args)
{
    const bins_job *j = args[0];
    for (int64_t g = begin; g < end; g++) {
        uint32_t *c = j->counts + g * j->bins;
        int64_t first = group_begin(j, g), last = group_begin(j, g + 1);
        if (j->t == PE_F32) count_float(j, j->x, first, last, c);
        else if (j->t == PE_F64) count_double(j, j->x, first, last, c);
        else count_int32_t(j, j->x, first, last, c);
    }
}

bool pe_histogram_fits(pe_intrinsic_args *a)
{
    if (a->n_members != 1 || a->n_in != 1) return false;
    const pe_port *r = a->members[0], *x = a->in[0];
    double lo, hi;
    memcpy(&lo, &r->param[1], sizeof lo);
    memcpy(&hi, &r->param[2], sizeof hi);
    return (x->dtype == PE_F32 || x->dtype == PE_F64 || x->dtype == PE_I32) && r->dtype == PE_I32 && r->rank == 1 &&
           r->shape[0] == r->param[0] && r->param[0] >= 1 && isfinite(lo) && isfinite(hi) && lo < hi;
}

static bool no_memory(pe_intrinsic_args *a, const char *what)
{
    a->code = PE_E_NOMEM;
    snprintf(a->why, sizeof a->why, "out of memory for %s", what);
    return false;
}

/* The groups' counts added into out (i32) in group order. */
static void merge_counts(const bins_job *j, int32_t *out)
{
    for (int64_t b = 0; b < j->bins; b++) {
        uint32_t c = 0;
        for (int64_t g = 0; g < j->n_groups; g++) c += j->counts[g * j->bins + b];
        out[b] = (int32_t)c;
    }
}

bool pe_histogram_run(pe_intrinsic_args *a)
{
    const pe_port *r = a->members[0], *x = a->in[0];
    if (!a->out[0]) return true;
    bins_job j = {.n = x->numel, .bins = r->param[0], .x = x->buf, .t = (pe_dtype)x->dtype};
    memcpy(&j.lo, &r->param[1], sizeof j.lo);
    memcpy(&j.hi, &r->param[2], sizeof j.hi);
    j.per_unit = (double)j.bins / (j.hi - j.lo);
    j.n_groups = groups_for(j.n, j.bins, sizeof *j.counts);
    double *edges = malloc(sizeof *edges * (size_t)(j.bins + 1));
    j.counts = calloc((size_t)(j.n_groups * j.bins), sizeof *j.counts);
    if (!edges || !j.counts) {
        free(edges), free(j.counts);
        return no_memory(a, "the histogram's bins");
    }
    pe_histogram_edges(j.lo, j.hi, j.bins, j.t, edges);
    j.edges = edges;
    void *args[1] = {&j};
    pe_intrinsic_parallel(histogram_groups, args, j.n_groups, j.n / j.n_groups + 1);
    merge_counts(&j, a->out[0]);
    free(edges), free(j.counts);
    return true;
}

/* ------------------------------------------------- bincount, scatter_add */

/* Indices (and weights) of each group into its private bins; an index
 * outside [0, bins) stops the group, noting the first. */
static void index_groups(int64_t begin, int64_t end, void *const *args)
{
    const bins_job *j = args[0];
/* each index of the group, `add` accumulating element i into bin k */
#define EACH_INDEX(add)                                  \
    for (int64_t i = first; i < last; i++) {             \
        int32_t k = j->idx[i];                           \
        if (k < 0 || k >= j->bins) {                     \
            j->first_bad[g] = i;                         \
            break;                                       \
        }                                                \
        add;                                             \
    }
    for (int64_t g = begin; g < end; g++) {
        int64_t first = group_begin(j, g), last = group_begin(j, g + 1);
        uint32_t *c = j->counts ? j->counts + g * j->bins : NULL; /* counts or i32 sums, else double sums */
        double *sum = j->sums ? j->sums + g * j->bins : NULL;
        const int32_t *wi = j->w;
        j->first_bad[g] = j->n;
        if (!j->w) EACH_INDEX(c[k]++)
        else if (j->wt == PE_I32) EACH_INDEX(c[k] += (uint32_t)wi[i * j->w_stride])
        else if (j->wt == PE_F32) EACH_INDEX(sum[k] += ((const float *)j->w)[i * j->w_stride])
        else EACH_INDEX(sum[k] += ((const double *)j->w)[i * j->w_stride])
    }
#undef EACH_INDEX
}

/* Runs the groups of an indexed accumulation; false with the reason (an
 * index out of range, no memory).  `what` names the indices' bound. */
static bool accumulate(pe_intrinsic_args *a, bins_job *j, const char *bound)
{
    bool ints = !j->w || j->wt == PE_I32;
    j->n_groups = groups_for(j->n, j->bins, ints ? sizeof *j->counts : sizeof *j->sums);
    j->first_bad = malloc(sizeof *j->first_bad * (size_t)j->n_groups);
    if (ints) j->counts = calloc((size_t)(j->n_groups * j->bins) + 1, sizeof *j->counts);
    else j->sums = calloc((size_t)(j->n_groups * j->bins) + 1, sizeof *j->sums);
    if (!j->first_bad || !(ints ? (void *)j->counts : (void *)j->sums)) return no_memory(a, "the partial bins");
    void *args[1] = {j};
    pe_intrinsic_parallel(index_groups, args, j->n_groups, j->n / j->n_groups + 1);
    for (int64_t g = 0; g < j->n_groups; g++)
        if (j->first_bad[g] < j->n) {
            int64_t i = j->first_bad[g];
            a->code = PE_E_ARG;
            snprintf(a->why, sizeof a->why, "idx.flat[%lld] is %d: outside [0, %lld) (%s)", (long long)i,
                     j->idx[i], (long long)j->bins, bound);
            return false;
        }
    return true;
}

static void release(bins_job *j) { free(j->first_bad), free(j->counts), free(j->sums); }

bool pe_bincount_fits(pe_intrinsic_args *a)
{
    if (a->n_members != 1 || (a->n_in != 1 && a->n_in != 2)) return false;
    const pe_port *r = a->members[0], *idx = a->in[0], *w = a->n_in == 2 ? a->in[1] : NULL;
    if (idx->dtype != PE_I32 || r->rank != 1 || r->shape[0] != r->param[0]) return false;
    if (!w) return r->dtype == PE_I32;
    return (w->dtype == PE_F32 || w->dtype == PE_F64 || w->dtype == PE_I32) && r->dtype == w->dtype &&
           w->numel == idx->numel;
}

bool pe_bincount_run(pe_intrinsic_args *a)
{
    const pe_port *r = a->members[0], *idx = a->in[0], *w = a->n_in == 2 ? a->in[1] : NULL;
    bins_job j = {.n = idx->numel, .bins = r->param[0], .idx = idx->buf, .w = w ? w->buf : NULL,
                  .wt = w ? (pe_dtype)w->dtype : PE_I32, .w_stride = 1};
    bool ok = accumulate(a, &j, "the length");
    if (ok && a->out[0]) {
        if (!w || j.wt == PE_I32) merge_counts(&j, a->out[0]);
        for (int64_t b = 0; w && j.wt != PE_I32 && b < j.bins; b++) {
            double s = 0;
            for (int64_t g = 0; g < j.n_groups; g++) s += j.sums[g * j.bins + b];
            if (j.wt == PE_F32) ((float *)a->out[0])[b] = (float)s;
            else ((double *)a->out[0])[b] = s;
        }
    }
    release(&j);
    return ok;
}

bool pe_scatter_add_fits(pe_intrinsic_args *a)
{
    if (a->n_members != 1 || a->n_in != 3) return false;
    const pe_port *r = a->members[0], *target = a->in[0], *idx = a->in[1], *v = a->in[2];
    pe_dtype t = (pe_dtype)target->dtype;
    if ((t != PE_F32 && t != PE_F64 && t != PE_I32) || r->dtype != t || v->dtype != t || idx->dtype != PE_I32)
        return false;
    if (r->numel != target->numel || (v->numel != idx->numel && v->numel != 1)) return false;
    return true;
}

bool pe_scatter_add_run(pe_intrinsic_args *a)
{
    const pe_port *r = a->members[0], *target = a->in[0], *idx = a->in[1], *v = a->in[2];
    bins_job j = {.n = idx->numel, .bins = r->numel, .idx = idx->buf, .w = v->buf, .wt = (pe_dtype)v->dtype,
                  .w_stride = v->numel == idx->numel ? 1 : 0};
    bool ok = accumulate(a, &j, "the target's elements");
    if (ok && a->out[0]) {
        for (int64_t b = 0; b < j.bins; b++) {
            if (j.wt == PE_I32) {
                uint32_t s = (uint32_t)((const int32_t *)target->buf)[b];
                for (int64_t g = 0; g < j.n_groups; g++) s += j.counts[g * j.bins + b];
                ((int32_t *)a->out[0])[b] = (int32_t)s;
                continue;
            }
            double s = 0;
            for (int64_t g = 0; g < j.n_groups; g++) s += j.sums[g * j.bins + b];
            if (j.wt == PE_F32) ((float *)a->out[0])[b] = (float)((double)((const float *)target->buf)[b] + s);
            else ((double *)a->out[0])[b] = ((const double *)target->buf)[b] + s;
        }
    }
    release(&j);
    return ok;
}
