/* blake2s.c — keyed BLAKE2s-256 (RFC 7693, section 3 and appendix D), one
 * shot over a buffer.  Small enough to keep here rather than add a library
 * dependency; tests/test_cache_security.c checks it against the RFC's and the
 * reference implementation's known answers. */
#include <string.h>

#include "blake2s.h"

static const uint32_t IV[8] = {0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
                               0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19};

static const uint8_t SIGMA[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static uint32_t load32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define G(a, b, c, d, x, y)                                                                                            \
    do {                                                                                                               \
        v[a] = v[a] + v[b] + (x), v[d] = rotr(v[d] ^ v[a], 16);                                                        \
        v[c] = v[c] + v[d], v[b] = rotr(v[b] ^ v[c], 12);                                                              \
        v[a] = v[a] + v[b] + (y), v[d] = rotr(v[d] ^ v[a], 8);                                                         \
        v[c] = v[c] + v[d], v[b] = rotr(v[b] ^ v[c], 7);                                                               \
    } while (0)

/* The compression function F over one 64-byte block; t: bytes so far. */
static void compress(uint32_t h[8], const uint8_t block[64], uint64_t t, int last)
{
    uint32_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load32(block + 4 * i);
    for (int i = 0; i < 8; i++) v[i] = h[i], v[i + 8] = IV[i];
    v[12] ^= (uint32_t)t, v[13] ^= (uint32_t)(t >> 32);
    if (last) v[14] = ~v[14];
    for (int r = 0; r < 10; r++) {
        const uint8_t *s = SIGMA[r];
        G(0, 4, 8, 12, m[s[0]], m[s[1]]); G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        G(2, 6, 10, 14, m[s[4]], m[s[5]]); G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        G(0, 5, 10, 15, m[s[8]], m[s[9]]); G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        G(2, 7, 8, 13, m[s[12]], m[s[13]]); G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

void pe_blake2s(uint8_t out[PE_BLAKE2S_BYTES], const void *key, size_t key_len, const void *data, size_t len)
{
    uint32_t h[8];
    memcpy(h, IV, sizeof h);
    h[0] ^= 0x01010000u ^ (uint32_t)key_len << 8 ^ PE_BLAKE2S_BYTES;
    uint8_t block[64];
    uint64_t t = 0;
    const uint8_t *p = data;
    if (key_len) { /* the key, zero-padded, is the first block */
        memset(block, 0, sizeof block);
        memcpy(block, key, key_len);
        t = 64;
        compress(h, block, t, len == 0);
    }
    /* every full block but the last; the last (possibly partial) one is padded */
    while (len > 64) {
        t += 64;
        compress(h, p, t, 0);
        p += 64, len -= 64;
    }
    if (len || !key_len) {
        memset(block, 0, sizeof block);
        if (len) memcpy(block, p, len);
        t += len;
        compress(h, block, t, 1);
    }
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++) out[4 * i + b] = (uint8_t)(h[i] >> (8 * b));
}
