/* ref_fft.c — the reference interpreter's spectral intrinsics: fft and
 * ifft as the direct DFT, and conv_fft as the direct "same" convolution,
 * both in long double.  No library and no fast algorithm: this is the
 * oracle of exec/intrinsics/fft.c (PE_CHECK, pe_reference, a call that
 * cannot run).  The DFT of each line is sum_j x_j w^(jk mod n), the
 * twiddles w^m = e^(-+2 pi i m/n) from one table of cosl/sinl per line
 * length; two axes are the lines of the last axis, then those of the one
 * before (the DFT is separable).  O(n^2) per line: sizes for tests. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ref_fft.h"
#include "ref_linalg.h" /* pe_ref_element, pe_ref_store */
#include "refmath.h" /* CMPLX where <complex.h> lacks it */

typedef long double complex lcomplex;

/* The DFT of the lines of x (count of them, each n long at stride `stride`,
 * the first elements at first[l]) in place. */
static bool dft_lines(lcomplex *x, int64_t n, int64_t stride, int64_t count, int64_t line_step, int64_t inner,
                      int64_t inner_step, long double sign)
{
    lcomplex *w = malloc(sizeof *w * (size_t)n), *line = malloc(sizeof *line * (size_t)n);
    if (!w || !line) {
        free(w), free(line);
        return false;
    }
    const long double two_pi = 6.283185307179586476925286766559005768L;
    for (int64_t m = 0; m < n; m++) w[m] = cosl(two_pi * (long double)m / (long double)n) + sign * sinl(two_pi * (long double)m / (long double)n) * I;
    for (int64_t c = 0; c < count; c++)
        for (int64_t q = 0; q < inner; q++) {
            lcomplex *base = x + c * line_step + q * inner_step;
            for (int64_t k = 0; k < n; k++) {
                lcomplex s = 0;
                for (int64_t j = 0; j < n; j++) s += base[j * stride] * w[(j * k) % n];
                line[k] = s;
            }
            for (int64_t k = 0; k < n; k++) base[k * stride] = line[k];
        }
    free(w), free(line);
    return true;
}

static bool fft(pe_port *p, const pe_port *in)
{
    int dims = (int)p->param[0];
    bool inverse = p->op == PE_OP_ifft;
    int64_t cols = p->shape[p->rank - 1], rows = dims == 2 ? p->shape[p->rank - 2] : 1, line = rows * cols;
    if (p->numel == 0) return true;
    int64_t batch = p->numel / line;
    lcomplex *x = malloc(sizeof *x * (size_t)p->numel);
    if (!x) return false;
    for (int64_t i = 0; i < p->numel; i++) x[i] = pe_ref_element(in, i);
    long double sign = inverse ? 1 : -1;
    /* the last axis: rows lines in each of batch blocks; the one before: cols lines (stride cols) */
    bool ok = dft_lines(x, cols, 1, batch * rows, cols, 1, 0, sign);
    if (ok && dims == 2) ok = dft_lines(x, rows, cols, batch, line, cols, 1, sign);
    for (int64_t i = 0; ok && i < p->numel; i++) pe_ref_store(p, i, inverse ? x[i] / (long double)line : x[i]);
    free(x);
    return ok;
}

/* out[i] = sum_j a[i + (k - 1) / 2 - j] kernel[j] per axis (a correlation:
 * the kernel reversed and conjugated, as scipy's), a zero outside a:
 * scipy.signal.convolve's "same"; complex throughout (a real array's
 * imaginary parts are zero). */
static void conv(pe_port *p, const pe_port *a, const pe_port *k)
{
    int dims = (int)p->param[0];
    bool correlate = p->param[1] != 0;
    int64_t n1 = p->shape[p->rank - 1], n0 = dims == 2 ? p->shape[p->rank - 2] : 1;
    int64_t k1 = k->shape[dims - 1], k0 = dims == 2 ? k->shape[0] : 1;
    int64_t o0 = (k0 - 1) / 2, o1 = (k1 - 1) / 2, batch = p->numel / (n0 * n1);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n0; i++)
            for (int64_t j = 0; j < n1; j++) {
                lcomplex s = 0;
                for (int64_t u = 0; u < k0; u++)
                    for (int64_t v = 0; v < k1; v++) {
                        int64_t si = i + o0 - u, sj = j + o1 - v;
                        if (si < 0 || si >= n0 || sj < 0 || sj >= n1) continue;
                        int64_t kk = correlate ? (k0 - 1 - u) * k1 + (k1 - 1 - v) : u * k1 + v;
                        lcomplex kv = pe_ref_element(k, kk);
                        s += pe_ref_element(a, (b * n0 + si) * n1 + sj) * (correlate ? conjl(kv) : kv);
                    }
                pe_ref_store(p, (b * n0 + i) * n1 + j, s);
            }
}

bool pe_ref_spectral(pe_port *p, pe_port *const *in, char *why, size_t n_why, pe_status *code)
{
    if (p->op == PE_OP_conv_fft) {
        if (p->numel > 0) conv(p, in[0], in[1]);
        return true;
    }
    if (fft(p, in[0])) return true;
    snprintf(why, n_why, "out of memory");
    *code = PE_E_NOMEM;
    return false;
}
