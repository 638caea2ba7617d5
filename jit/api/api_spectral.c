/* api_spectral.c — the entry points of the spectral intrinsics: pe_fft,
 * pe_ifft, pe_conv and pe_correlate.  They validate shapes and dtypes at
 * the caller's line and record; nothing is computed here.
 *
 * fft and ifft are one port each, a library call (exec/intrinsics/fft.c).
 * A convolution with a small kernel (at most PE_CONV_DIRECT_TAPS elements)
 * is recorded as what it is, a sum over the kernel's elements of a shifted
 * copy of a (a rotation by a periodic view, masked to zero past a's edge)
 * times that element (a view of the kernel), so the program generator fuses it with
 * its producers and consumers into one kernel and nothing is stored
 * between; a larger kernel is one conv_fft call (pad, r2c, multiply, c2r,
 * crop).  The threshold is measured: bench/RESULTS.md. */
#include <stdlib.h>

#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"

/* Kernels of up to this many elements are convolved directly (fused views),
 * larger ones through FFTs: bench/bench_intrinsics.c's conv rows measure
 * both (PE_CONV_DIRECT_TAPS=n moves the threshold, for them).  16 until the
 * CPU generator cut rows at the parts' seams (gccjit_loops.c, static
 * segments): since then the direct sum of 64 taps on 2^22 elements takes 12
 * ms against the FFTs' 90 (bench/RESULTS.md). */
#define DIRECT_TAPS 64
/* Complex sums of taps are cut into kernels of at most 6 taps (the pair
 * lowering's size bound), each stored: the threshold stays where it was. */
#define DIRECT_TAPS_COMPLEX 16

static int64_t direct_taps(pe_dtype t)
{
    const char *e = getenv("PE_CONV_DIRECT_TAPS");
    return e && *e ? atoll(e) : pe_dtype_is_complex(t) ? DIRECT_TAPS_COMPLEX : DIRECT_TAPS;
}

static pe_array record_fft(const pe_site *s, pe_op op, pe_array a, int dims)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = op == PE_OP_fft ? "pe_fft" : "pe_ifft";
    pe_port *x;
    uint32_t xi;
    pe_array r;
    if (!pe_resolve_operands(s, op, &a, 1, api, &x, &xi, &r)) return r;
    pe_dtype t = (pe_dtype)x->dtype;
    if (t != PE_F32 && t != PE_F64 && t != PE_C64 && t != PE_C128) {
        pe_raise(s, PE_E_TYPE, api, "a is %s: it takes f32, f64, c64 or c128 (pe_cast)", pe_dtype_name(t));
        return pe_invalid_result(s, op, PE_E_TYPE);
    }
    if (dims != 1 && dims != 2) {
        pe_raise(s, PE_E_ARG, api, "dims is %d: it is 1 (the last axis) or 2 (the last two)", dims);
        return pe_invalid_result(s, op, PE_E_ARG);
    }
    char shape[96];
    pe_format_shape(shape, sizeof shape, x->rank, x->shape);
    if (x->rank < dims) {
        pe_raise(s, PE_E_SHAPE, api, "a is %s: %d-d transforms take at least %d axes", shape, dims, dims);
        return pe_invalid_result(s, op, PE_E_SHAPE);
    }
    for (int d = x->rank - dims; d < x->rank; d++)
        if (x->shape[d] == 0) {
            pe_raise(s, PE_E_SHAPE, api, "a is %s: a transformed axis of length 0 has no DFT", shape);
            return pe_invalid_result(s, op, PE_E_SHAPE);
        }
    pe_dtype ct = pe_dtype_complex_of(t);
    int64_t param = dims;
    return pe_record_op(s, op, &xi, 1, ct, ct, x->rank, x->shape, &param, 1);
}

pe_array pe_fft_at(const pe_site *s, pe_array a, int dims) { return record_fft(s, PE_OP_fft, a, dims); }
pe_array pe_ifft_at(const pe_site *s, pe_array a, int dims) { return record_fft(s, PE_OP_ifft, a, dims); }

/* acc op term (acc empty: term), both handles given up. */
static pe_array fold(const pe_site *s, pe_op op, pe_array acc, pe_array term)
{
    if (!acc.h) return term;
    pe_array next = op == PE_OP_and ? pe_and_at(s, acc, term) : pe_add_at(s, acc, term);
    pe_release_at(s, acc), pe_release_at(s, term);
    return next;
}

/* a shifted by d[k] along its last n_axes axes: y[i] = a[i + d], zero where
 * i + d is outside a.  A slice of a periodic view (the rotation, a fused
 * index map: no nested concatenations, which the generator cannot fuse)
 * under a mask from index comparisons.  A new handle. */
static pe_array shifted(const pe_site *s, pe_array a, const pe_port *x, int n_axes, const int64_t *d)
{
    int rank = x->rank;
    int64_t big[PE_MAX_RANK], start[PE_MAX_RANK] = {0};
    bool moved = false;
    for (int k = 0; k < rank; k++) big[k] = x->shape[k];
    for (int k = 0; k < n_axes; k++) {
        int ax = rank - n_axes + k;
        int64_t n = x->shape[ax];
        if (d[k] >= n || -d[k] >= n) return pe_fill_at(s, (pe_dtype)x->dtype, rank, x->shape, 0);
        if (d[k] == 0) continue;
        big[ax] = 2 * n, start[ax] = (d[k] % n + n) % n, moved = true;
    }
    if (!moved) return pe_reshape_at(s, a, rank, x->shape); /* a new handle on the same values */
    pe_array tiled = pe_periodic_at(s, a, rank, big), rotated = pe_slice_at(s, tiled, start, x->shape), mask = {0};
    pe_release_at(s, tiled);
    for (int k = 0; k < n_axes; k++) {
        int ax = rank - n_axes + k;
        int64_t n = x->shape[ax];
        if (d[k] == 0) continue;
        pe_array at = pe_index_at(s, PE_I32, rank, x->shape, ax);
        pe_array edge = pe_scalar_at(s, PE_I32, (double)(d[k] > 0 ? n - d[k] : -d[k]));
        pe_array inside = d[k] > 0 ? pe_lt_at(s, at, edge) : pe_ge_at(s, at, edge);
        pe_release_at(s, at), pe_release_at(s, edge);
        mask = fold(s, PE_OP_and, mask, inside);
    }
    pe_array zero = pe_scalar_at(s, (pe_dtype)x->dtype, 0);
    pe_array y = pe_cond_at(s, mask, rotated, zero);
    pe_release_at(s, mask), pe_release_at(s, rotated), pe_release_at(s, zero);
    return y;
}

/* The direct "same" convolution (correlation) of a with a kernel of rank
 * dims over a's last dims axes: sum over the kernel's elements u of
 * a shifted by o - u (o = (k - 1) / 2 per axis) times kernel[u]. */
static pe_array direct(const pe_site *s, pe_array a, pe_array kernel, const pe_port *x, const pe_port *k, int dims,
                       bool correlate)
{
    int64_t k0 = dims == 2 ? k->shape[0] : 1, k1 = k->shape[dims - 1];
    pe_array sum = {0};
    /* scipy's correlate conjugates a complex kernel: once, the whole kernel (a small kernel of its own; a
     * conjugate per tap would be one per tap, a [1] array fusing with nothing) */
    pe_array taps = correlate && pe_dtype_is_complex((pe_dtype)k->dtype) ? pe_conj_at(s, kernel) : pe_retain_at(s, kernel);
    for (int64_t u = 0; u < k0; u++)
        for (int64_t v = 0; v < k1; v++) {
            int64_t d[2] = {(k0 - 1) / 2 - u, (k1 - 1) / 2 - v};
            int64_t n0 = dims == 2 ? x->shape[x->rank - 2] : 1, n1 = x->shape[x->rank - 1];
            if (d[0] >= n0 || -d[0] >= n0 || d[1] >= n1 || -d[1] >= n1) continue; /* a shift past a: a zero term */
            int64_t ku = correlate ? k0 - 1 - u : u, kv = correlate ? k1 - 1 - v : v;
            int64_t start[2] = {dims == 2 ? ku : kv, kv}, one[2] = {1, 1};
            pe_array tap = pe_slice_at(s, taps, start, one); /* [1] or [1, 1]: broadcast over a */
            pe_array moved = shifted(s, a, x, dims, dims == 2 ? d : &d[1]);
            pe_array term = pe_mul_at(s, moved, tap);
            pe_release_at(s, moved), pe_release_at(s, tap);
            sum = fold(s, PE_OP_add, sum, term);
        }
    pe_release_at(s, taps);
    return sum;
}

static pe_array record_conv(const pe_site *s, pe_array a, pe_array kernel, bool correlate)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = correlate ? "pe_correlate" : "pe_conv";
    pe_array ins[2] = {a, kernel}, r;
    pe_port *in[2];
    uint32_t idx[2];
    if (!pe_resolve_operands(s, PE_OP_conv_fft, ins, 2, api, in, idx, &r)) return r;
    pe_dtype t = (pe_dtype)in[0]->dtype;
    if ((t != PE_F32 && t != PE_F64 && t != PE_C64 && t != PE_C128) || in[1]->dtype != t) {
        pe_raise(s, PE_E_TYPE, api, "a is %s and the kernel %s: it takes f32, f64, c64 or c128, both of one dtype (pe_cast)",
                 pe_dtype_name(t), pe_dtype_name((pe_dtype)in[1]->dtype));
        return pe_invalid_result(s, PE_OP_conv_fft, PE_E_TYPE);
    }
    char sa[96], sk[96];
    pe_format_shape(sa, sizeof sa, in[0]->rank, in[0]->shape);
    pe_format_shape(sk, sizeof sk, in[1]->rank, in[1]->shape);
    int dims = in[1]->rank;
    if (dims < 1 || dims > 2 || in[0]->rank < dims || in[1]->numel == 0) {
        pe_raise(s, PE_E_SHAPE, api,
                 "a is %s and the kernel %s: it takes a non-empty 1-d or 2-d kernel over as many last axes of a", sa, sk);
        return pe_invalid_result(s, PE_OP_conv_fft, PE_E_SHAPE);
    }
    if (in[0]->numel == 0) return pe_fill_at(s, t, in[0]->rank, in[0]->shape, 0);
    if (in[1]->numel <= direct_taps(t)) return direct(s, a, kernel, in[0], in[1], dims, correlate);
    int64_t params[2] = {dims, correlate};
    return pe_record_op(s, PE_OP_conv_fft, idx, 2, t, t, in[0]->rank, in[0]->shape, params, 2);
}

pe_array pe_conv_at(const pe_site *s, pe_array a, pe_array kernel) { return record_conv(s, a, kernel, false); }
pe_array pe_correlate_at(const pe_site *s, pe_array a, pe_array kernel) { return record_conv(s, a, kernel, true); }
