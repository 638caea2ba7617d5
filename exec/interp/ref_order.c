/* ref_order.c — the reference interpreter's order ops: cumsum, cumprod,
 * sort, argsort, histogram, bincount and scatter_add, each the plain
 * sequential definition in long double (the oracle of exec/intrinsics'
 * scan.c, sort.c and bins.c, which cut the work into chunks and groups):
 *   scans    one running value along the axis, element by element (i32 in
 *            uint32_t, wrapping as the kernels do);
 *   sorts    a merge sort of the indices along the axis (stable), by value,
 *            NaN after every number, -0.0 equal to +0.0;
 *   bins     each element's bin by a binary search of the edges (histogram)
 *            or its index, summed in element order. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_linalg.h"

static bool no_memory(char *why, size_t n_why, pe_status *code)
{
    snprintf(why, n_why, "out of memory");
    *code = PE_E_NOMEM;
    return false;
}

/* The array as [outer, n, inner] around axis. */
static void around(const pe_port *p, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = *inner = 1;
    for (int d = 0; d < axis; d++) *outer *= p->shape[d];
    for (int d = axis + 1; d < p->rank; d++) *inner *= p->shape[d];
    *n = p->shape[axis];
}

static void scan(pe_port *p, const pe_port *x)
{
    int64_t outer, n, inner;
    around(p, (int)p->param[0], &outer, &n, &inner);
    bool product = p->op == PE_OP_cumprod, wraps = p->dtype == PE_I32;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            long double complex acc = product ? 1 : 0;
            uint32_t iacc = product;
            for (int64_t i = 0; i < n; i++) {
                int64_t e = (o * n + i) * inner + j;
                long double complex v = pe_ref_element(x, e);
                if (wraps) {
                    uint32_t u = (uint32_t)(int64_t)creall(v);
                    iacc = product ? iacc * u : iacc + u;
                    pe_ref_store(p, e, (long double)(int32_t)iacc);
                } else {
                    acc = i == 0 ? v : product ? acc * v : acc + v; /* the first element as it is: -0.0 stays */
                    pe_ref_store(p, e, acc);
                }
            }
        }
}

/* ------------------------------------------------------------------ sorts */

typedef struct {
    const long double *v;
    bool descending;
} order;

/* Whether element a goes after element b: NaN after every number. */
static bool after(const order *o, int64_t a, int64_t b)
{
    long double x = o->v[a], y = o->v[b];
    if (isnan(y)) return false;
    if (isnan(x)) return true;
    return o->descending ? x < y : x > y;
}

static void merge_sort(const order *o, int64_t *ix, int64_t *tmp, int64_t n)
{
    if (n < 2) return;
    int64_t h = n / 2;
    merge_sort(o, ix, tmp, h);
    merge_sort(o, ix + h, tmp, n - h);
    int64_t i = 0, k = h, t = 0;
    while (i < h && k < n) tmp[t++] = after(o, ix[i], ix[k]) ? ix[k++] : ix[i++]; /* ties: the left first */
    while (i < h) tmp[t++] = ix[i++];
    while (k < n) tmp[t++] = ix[k++];
    memcpy(ix, tmp, sizeof *ix * (size_t)n);
}

static bool sort(pe_port *p, const pe_port *x, char *why, size_t n_why, pe_status *code)
{
    int64_t outer, n, inner;
    around(p, (int)p->param[0], &outer, &n, &inner);
    long double *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    int64_t *ix = malloc(sizeof *ix * (size_t)(n ? n : 1)), *tmp = malloc(sizeof *tmp * (size_t)(n ? n : 1));
    if (!v || !ix || !tmp) {
        free(v), free(ix), free(tmp);
        return no_memory(why, n_why, code);
    }
    order o = {v, p->param[1] != 0};
    for (int64_t r = 0; r < outer; r++)
        for (int64_t j = 0; j < inner; j++) {
            for (int64_t i = 0; i < n; i++) v[i] = creall(pe_ref_element(x, (r * n + i) * inner + j)), ix[i] = i;
            merge_sort(&o, ix, tmp, n);
            for (int64_t i = 0; i < n; i++)
                pe_ref_store(p, (r * n + i) * inner + j, p->op == PE_OP_argsort ? (long double)ix[i] : v[ix[i]]);
        }
    free(v), free(ix), free(tmp);
    return true;
}

/* ------------------------------------------------------------------- bins */

void pe_histogram_edges(double lo, double hi, int64_t bins, pe_dtype t, double *edges)
{
    double step = (hi - lo) / (double)bins; /* NumPy's linspace: in double, then the bins' type */
    for (int64_t i = 0; i <= bins; i++) {
        double e = i == bins ? hi : lo + (double)i * step;
        edges[i] = t == PE_F32 ? (double)(float)e : e;
    }
}

static bool histogram(pe_port *p, const pe_port *x, char *why, size_t n_why, pe_status *code)
{
    int64_t bins = p->param[0];
    double lo, hi;
    memcpy(&lo, &p->param[1], sizeof lo);
    memcpy(&hi, &p->param[2], sizeof hi);
    double *edges = malloc(sizeof *edges * (size_t)(bins + 1));
    int64_t *count = calloc((size_t)bins, sizeof *count);
    if (!edges || !count) {
        free(edges), free(count);
        return no_memory(why, n_why, code);
    }
    pe_histogram_edges(lo, hi, bins, (pe_dtype)x->dtype, edges);
    for (int64_t e = 0; e < x->numel; e++) {
        long double v = creall(pe_ref_element(x, e));
        if (!(v >= edges[0] && v <= edges[bins])) continue;
        int64_t a = 0, b = bins; /* the last edge at or below v: edges[a] <= v < edges[b] */
        while (b - a > 1) {
            int64_t m = (a + b) / 2;
            if (v >= edges[m]) a = m;
            else b = m;
        }
        count[a]++;
    }
    for (int64_t i = 0; i < bins; i++) pe_ref_store(p, i, (long double)(int32_t)(uint32_t)count[i]);
    free(edges), free(count);
    return true;
}

/* bincount (target NULL) or scatter_add: sums of the weights (NULL: ones)
 * at each index, in element order, onto the target's elements. */
static bool indexed_sums(pe_port *p, const pe_port *target, const pe_port *idx, const pe_port *w, char *why,
                         size_t n_why, pe_status *code)
{
    int64_t bins = p->numel;
    long double *sum = calloc((size_t)(bins ? bins : 1), sizeof *sum);
    uint32_t *isum = calloc((size_t)(bins ? bins : 1), sizeof *isum);
    if (!sum || !isum) {
        free(sum), free(isum);
        return no_memory(why, n_why, code);
    }
    bool ints = p->dtype == PE_I32, one_weight = w && w->numel == 1 && idx->numel != 1;
    for (int64_t i = 0; i < idx->numel; i++) {
        long double k = creall(pe_ref_element(idx, i));
        if (!(k >= 0 && k < (long double)bins)) {
            snprintf(why, n_why, "idx.flat[%lld] is %.0Lf: outside [0, %lld) (%s)", (long long)i, k, (long long)bins,
                     target ? "the target's elements" : "the length");
            *code = PE_E_ARG;
            free(sum), free(isum);
            return false;
        }
        long double v = w ? creall(pe_ref_element(w, one_weight ? 0 : i)) : 1;
        if (ints) isum[(int64_t)k] += (uint32_t)(int64_t)v;
        else sum[(int64_t)k] += v;
    }
    for (int64_t b = 0; b < bins; b++) {
        long double base = target ? creall(pe_ref_element(target, b)) : 0;
        if (ints) pe_ref_store(p, b, (long double)(int32_t)((uint32_t)(int64_t)base + isum[b]));
        else pe_ref_store(p, b, base + sum[b]);
    }
    free(sum), free(isum);
    return true;
}

bool pe_ref_order(pe_port *p, pe_port *const *in, char *why, size_t n_why, pe_status *code)
{
    switch ((pe_op)p->op) {
    case PE_OP_cumsum:
    case PE_OP_cumprod: scan(p, in[0]); return true;
    case PE_OP_sort:
    case PE_OP_argsort: return sort(p, in[0], why, n_why, code);
    case PE_OP_histogram: return histogram(p, in[0], why, n_why, code);
    case PE_OP_bincount: return indexed_sums(p, NULL, in[0], p->n_in > 1 ? in[1] : NULL, why, n_why, code);
    case PE_OP_scatter_add: return indexed_sums(p, in[0], in[1], in[2], why, n_why, code);
    default:
        snprintf(why, n_why, "%s is no order op", pe_op_table[p->op].name);
        *code = PE_E_INVALID;
        return false;
    }
}
