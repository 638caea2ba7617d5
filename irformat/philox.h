/* philox.h — what the random generator ops of the catalog compute
 * (random_uniform, random_normal: irformat/ops.def), in plain C: the
 * reference the interpreter runs and the definition both code generators
 * emit (exec/cpu/gccjit_ops.c, exec/cuda/cuda_emit_prelude.c), bit for bit.
 *
 * The block function is Philox4x32-R (Salmon, Moraes, Dror, Shaw, "Parallel
 * random numbers: as easy as 1, 2, 3", SC11): a 128-bit counter and a 64-bit
 * key, R rounds of two 32 x 32 -> 64 bit products, the key bumped by the
 * Weyl constants between rounds.  R = 10 is PE_RNG_PHILOX (Random123's
 * default, the published known-answer vectors hold: tests/test_rng.c),
 * R = 7 is PE_RNG_FAST (the fewest rounds the paper reports passing
 * TestU01's BigCrush; 30% less work).
 *
 * Element i (row-major flat index) of draw k of a generator seeded s:
 *     key     = (s mod 2^32, s >> 32)
 *     counter = (i mod 2^32, i >> 32, k, 0)
 *     (w0, w1, w2, w3) = Philox4x32-R(counter, key)
 * This is cuRAND's Philox4_32_10 block for seed s, subsequence k and offset
 * 4i (its counter's high half is the subsequence, its low half the offset
 * in blocks), w0 being what curand() returns first there: the mapping,
 * not checked here (no cuRAND on the build machines).  So a stream never
 * shares a block with another: seeds differ in the key, draws in word 2,
 * elements in words 0-1.  A generator has 2^32 draws (the next one is an
 * error), each of up to 2^64 elements.
 *
 * From the words, in the draw's dtype:
 *     uniform f32   (w0 >> 8) * 2^-24                         [0, 1), exact
 *     uniform f64   ((w0 >> 5) * 2^26 + (w1 >> 6)) * 2^-53    [0, 1), exact
 *     uniform i32   w0 as a two's complement int32            every i32 value
 *     normal        Box-Muller in double on u1 = 1 - uniform f64 of (w0, w1)
 *                   (in (0, 1]) and u2 = uniform f64 of (w2, w3):
 *                   sqrt(-2 log u1) * cos(2 pi u2); an f32 draw is that
 *                   double rounded once.
 * Every step but log and cos is exact or one IEEE operation, and the CPU
 * kernels call the same libm log and cos the interpreter does, so the
 * CPU JIT and the interpreter agree bitwise for every dtype and thread
 * count.  A GPU's log and cos are CUDA's (documented within 1-2 ulp in
 * double), so a GPU's normal draws may differ from the CPU's in the last
 * bits (f64), or by one f32 ulp where the double falls near a rounding
 * boundary; its uniform draws are bitwise the CPU's. */
#ifndef PE_IRFORMAT_PHILOX_H
#define PE_IRFORMAT_PHILOX_H

#include <math.h>
#include <stdint.h>

#define PE_PHILOX_M0 0xD2511F53u /* the round multipliers */
#define PE_PHILOX_M1 0xCD9E8D57u
#define PE_PHILOX_W0 0x9E3779B9u /* the key bumps (golden ratio, sqrt(3) - 1) */
#define PE_PHILOX_W1 0xBB67AE85u
#define PE_PHILOX_ROUNDS 10      /* PE_RNG_PHILOX */
#define PE_PHILOX_FAST_ROUNDS 7  /* PE_RNG_FAST */
#define PE_TWO_PI 6.283185307179586 /* 2 pi rounded to double */

/* ctr <- Philox4x32-rounds(ctr, key).  Round r (from 0) uses the key
 * bumped r times; the words are locals so that a loop calling this
 * vectorises (an array would go through memory: 3x slower). */
static inline void pe_philox4x32(uint32_t ctr[4], uint32_t key0, uint32_t key1, int rounds)
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    for (int r = 0; r < rounds; r++) {
        uint64_t p0 = (uint64_t)PE_PHILOX_M0 * c0, p1 = (uint64_t)PE_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ key0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ key1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        key0 += PE_PHILOX_W0;
        key1 += PE_PHILOX_W1;
    }
    ctr[0] = c0, ctr[1] = c1, ctr[2] = c2, ctr[3] = c3;
}

/* The words of element i of draw `draw` under key (key0, key1). */
static inline void pe_philox_element(uint32_t w[4], uint32_t key0, uint32_t key1, uint32_t draw, uint64_t i, int rounds)
{
    w[0] = (uint32_t)i;
    w[1] = (uint32_t)(i >> 32);
    w[2] = draw;
    w[3] = 0;
    pe_philox4x32(w, key0, key1, rounds);
}

static inline double pe_philox_unit53(uint32_t hi, uint32_t lo)
{
    return ((double)(hi >> 5) * 67108864.0 + (double)(lo >> 6)) * 0x1p-53;
}

/* The uniform draw's element in the dtype of size `bytes` (4: f32 or i32
 * by `is_float`, 8: f64), as a double (an i32 as its value). */
static inline double pe_philox_uniform(const uint32_t w[4], int is_float, int bytes)
{
    if (!is_float) return (double)(int32_t)w[0];
    if (bytes == 4) return (double)(w[0] >> 8) * 0x1p-24;
    return pe_philox_unit53(w[0], w[1]);
}

/* The normal draw's element, in double (an f32 draw rounds it once). */
static inline double pe_philox_normal(const uint32_t w[4])
{
    double u1 = 1.0 - pe_philox_unit53(w[0], w[1]), u2 = pe_philox_unit53(w[2], w[3]);
    return sqrt(-2.0 * log(u1)) * cos(PE_TWO_PI * u2);
}

#endif
