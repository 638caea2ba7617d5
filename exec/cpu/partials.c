/* partials.c — a full reduction's value from the partials its kernel left,
 * one per fixed chunk of KIR_REDUCE_CHUNK iterations (kir.h), combined in
 * chunk order: Neumaier sums, NaN-sticky extremes, wrapped i32 sums and
 * products, the first index of an extreme, and the multi-pass reductions'
 * chunk statistics (var and stddev by Chan's formula on deviations scaled
 * by a power of two, f64 norm2 rescaled to the largest chunk's scale).  The
 * order is fixed, so a result is bitwise the same for any thread count. */
#include <math.h>
#include <stdint.h>

#include "cpu.h"
#include "../../jit/kir/program.h"

/* Neumaier over (high, low) pairs 2 * stride doubles apart.  A low part
 * means nothing once its high part is not finite (it is inf - inf), and
 * neither does the compensation once the sum is not: an infinity or an
 * overflow makes the sum the IEEE result alone. */
static double sum_pairs(const double *partials, int64_t n_chunks, int stride)
{
    double sum = 0, comp = 0;
    for (int64_t c = 0; c < n_chunks; c++)
        for (int part = 0; part < 2; part++) {
            const double *at = partials + c * stride;
            double x = part && !isfinite(at[0]) ? 0.0 : at[part], t = sum + x;
            comp += fabs(sum) >= fabs(x) ? (sum - t) + x : (x - t) + sum;
            sum = t;
        }
    return isfinite(sum) ? sum + comp : sum;
}

double pe_combine_partials(pe_op op, const double *partials, int64_t n_chunks, int64_t numel)
{
    if (op == PE_OP_max_reduce || op == PE_OP_min_reduce || op == PE_OP_norminf) {
        double best = op == PE_OP_min_reduce ? INFINITY : op == PE_OP_norminf ? 0.0 : -INFINITY;
        for (int64_t c = 0; c < n_chunks; c++) {
            double v = partials[2 * c];
            if (v != v) return v;
            if (op == PE_OP_min_reduce ? v < best : v > best) best = v;
        }
        return best;
    }
    double sum = sum_pairs(partials, n_chunks, 2);
    if (op == PE_OP_mean) return sum / (double)numel;
    if (op == PE_OP_norm2) return sqrt(sum);
    return sum;
}

/* argmax, argmin: partials (extreme, flat index); the first chunk's NaN, else
 * the first chunk holding the extreme (chunks hold their first). */
static double first_extreme(pe_op op, const double *partials, int64_t n_chunks)
{
    double best = partials[0], at = partials[1];
    for (int64_t c = 1; c < n_chunks && best == best; c++) {
        double v = partials[2 * c];
        if (v != v || (op == PE_OP_argmax ? v > best : v < best)) best = v, at = partials[2 * c + 1];
    }
    return at;
}

/* var, stddev: per chunk (sum high, sum low, e, scaled squared deviations
 * from the chunk's mean).  Chan: the squared deviations from the mean are
 * each chunk's own plus n_c (mean_c - mean)^2, all scaled by 2^-2E for the
 * largest exponent E met, so that neither overflows where the result does
 * not (stddev([1e200, -1e200]) = 1e200, as the reference). */
/* A chunk's mean minus the mean, from its sum (high, low) without rounding
 * the chunk's mean first: values far from 0 (an offset) would lose to that
 * rounding what their deviations keep. */
static double chunk_deviation(const double *at, int64_t n_c, double mean)
{
    if (!isfinite(at[0]) || !isfinite(mean)) return at[0] / (double)n_c - mean;
    double p = (double)n_c * mean, p_err = fma((double)n_c, mean, -p); /* n_c * mean = p + p_err exactly */
    return ((at[0] - p) - p_err + at[1]) / (double)n_c;
}

static double variance(pe_op op, const double *partials, int64_t n_chunks, int64_t numel)
{
    double mean = sum_pairs(partials, n_chunks, KIR_PARTIAL_WIDE) / (double)numel;
    int big = 0;
    for (int64_t c = 0; c < n_chunks; c++) {
        const double *at = partials + c * KIR_PARTIAL_WIDE;
        int64_t n_c = numel - c * KIR_REDUCE_CHUNK < KIR_REDUCE_CHUNK ? numel - c * KIR_REDUCE_CHUNK : KIR_REDUCE_CHUNK;
        double d = fabs(chunk_deviation(at, n_c, mean));
        int e = (int)at[2];
        if (d > 0 && isfinite(d) && ilogb(d) > e) e = ilogb(d);
        if (c == 0 || e > big) big = e;
    }
    double sum = 0, comp = 0;
    for (int64_t c = 0; c < n_chunks; c++) {
        const double *at = partials + c * KIR_PARTIAL_WIDE;
        int64_t n_c = numel - c * KIR_REDUCE_CHUNK < KIR_REDUCE_CHUNK ? numel - c * KIR_REDUCE_CHUNK : KIR_REDUCE_CHUNK;
        double d = ldexp(chunk_deviation(at, n_c, mean), -big);
        double terms[2] = {ldexp(at[3], 2 * ((int)at[2] - big)), (double)n_c * d * d};
        for (int j = 0; j < 2; j++) {
            double x = terms[j], t = sum + x;
            comp += fabs(sum) >= fabs(x) ? (sum - t) + x : (x - t) + sum;
            sum = t;
        }
    }
    double scaled_var = (isfinite(sum) ? sum + comp : sum) / (double)numel;
    return op == PE_OP_var ? ldexp(scaled_var, 2 * big) : ldexp(sqrt(scaled_var), big);
}

/* f64 norm2: per chunk (scale: its largest magnitude, NaN sticking; the
 * squares of its elements divided by it, high and low).  The chunks'
 * squares rescaled to the largest scale S: S * sqrt(sum (s_c / S)^2 q_c). */
static double scaled_norm2(const double *partials, int64_t n_chunks)
{
    double scale = 0;
    for (int64_t c = 0; c < n_chunks; c++) {
        double s = partials[c * KIR_PARTIAL_WIDE];
        if (s != s) return s;
        if (s > scale) scale = s;
    }
    if (scale == 0 || isinf(scale)) return scale;
    double sum = 0, comp = 0;
    for (int64_t c = 0; c < n_chunks; c++) {
        const double *at = partials + c * KIR_PARTIAL_WIDE;
        double r = at[0] / scale, q = isfinite(at[1]) ? at[1] + at[2] : at[1], x = r * r * q, t = sum + x;
        comp += fabs(sum) >= fabs(x) ? (sum - t) + x : (x - t) + sum;
        sum = t;
    }
    return scale * sqrt(isfinite(sum) ? sum + comp : sum);
}

double pe_combine_reduction(pe_op op, pe_dtype ctype, const double *partials, int64_t n_chunks, int64_t numel)
{
    switch (op) {
    case PE_OP_sum: case PE_OP_dot: case PE_OP_prod:
        if (ctype == PE_I32) { /* each chunk's value wrapped: wrap on */
            uint32_t acc = op == PE_OP_prod;
            for (int64_t c = 0; c < n_chunks; c++) {
                uint32_t v = (uint32_t)(int32_t)partials[2 * c];
                acc = op == PE_OP_prod ? acc * v : acc + v;
            }
            return (int32_t)acc;
        }
        if (op == PE_OP_prod) { /* not compensated: in chunk order */
            double acc = 1;
            for (int64_t c = 0; c < n_chunks; c++) acc *= partials[2 * c];
            return acc;
        }
        break;
    case PE_OP_any: case PE_OP_all:
        for (int64_t c = 0; c < n_chunks; c++)
            if ((partials[2 * c] != 0) == (op == PE_OP_any)) return op == PE_OP_any;
        return op == PE_OP_all;
    case PE_OP_argmax: case PE_OP_argmin: return first_extreme(op, partials, n_chunks); /* never empty */
    case PE_OP_var: case PE_OP_stddev: return variance(op, partials, n_chunks, numel);
    case PE_OP_norm2:
        if (ctype == PE_F64) return scaled_norm2(partials, n_chunks);
        break;
    default: break;
    }
    return pe_combine_partials(op, partials, n_chunks, numel);
}
