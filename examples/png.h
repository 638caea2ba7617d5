/* png.h — a small PNG writer for the examples: one 8-bit image, grey or
 * indexed through a palette, its rows unfiltered (filter type 0) in one
 * IDAT chunk compressed by zlib's compress2; chunk CRCs from zlib's crc32.
 * (PNG: signature, IHDR, PLTE when indexed, IDAT, IEND; RFC 2083.) */
#ifndef PE_EXAMPLES_PNG_H
#define PE_EXAMPLES_PNG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

static void png_be32(unsigned char *p, uint32_t v) { p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v; }

/* One chunk: length, type, data, CRC of type and data; 0 on success. */
static int png_chunk(FILE *f, const char type[4], const unsigned char *data, size_t n)
{
    unsigned char word[4];
    png_be32(word, (uint32_t)n);
    uLong crc = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)type, 4);
    if (n) crc = crc32(crc, data, (uInt)n);
    if (fwrite(word, 1, 4, f) != 4 || fwrite(type, 1, 4, f) != 4 || (n && fwrite(data, 1, n, f) != n)) return -1;
    png_be32(word, (uint32_t)crc);
    return fwrite(word, 1, 4, f) == 4 ? 0 : -1;
}

/* Writes the w x h image of 8-bit `pixels` (row by row) to path: grey when
 * palette is NULL, else indexed through its `colours` RGB entries (1..256).
 * 0 on success, -1 (errno or zlib failed) otherwise. */
static int png_write(const char *path, const unsigned char *pixels, int64_t w, int64_t h, const unsigned char (*palette)[3], int colours)
{
    if (w < 1 || h < 1 || w > 0x7fffffff / 2 || h > 0x7fffffff / 2 || (palette && (colours < 1 || colours > 256))) return -1;
    size_t row = (size_t)w + 1, raw_n = row * (size_t)h;
    uLongf packed_n = compressBound((uLong)raw_n);
    unsigned char *raw = malloc(raw_n), *packed = malloc(packed_n);
    int rc = -1;
    FILE *f = NULL;
    if (!raw || !packed) goto done;
    for (int64_t y = 0; y < h; y++) {
        raw[(size_t)y * row] = 0; /* filter: none */
        memcpy(raw + (size_t)y * row + 1, pixels + (size_t)y * (size_t)w, (size_t)w);
    }
    if (compress2(packed, &packed_n, raw, (uLong)raw_n, Z_BEST_COMPRESSION) != Z_OK) goto done;
    unsigned char ihdr[13], plte[256 * 3];
    png_be32(ihdr, (uint32_t)w), png_be32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8;                /* bits per sample */
    ihdr[9] = palette ? 3 : 0;  /* colour type: indexed, or grey */
    ihdr[10] = ihdr[11] = ihdr[12] = 0; /* deflate, adaptive filtering, no interlace */
    for (int c = 0; palette && c < colours; c++) memcpy(plte + 3 * c, palette[c], 3);
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    f = fopen(path, "wb");
    if (!f || fwrite(signature, 1, 8, f) != 8 || png_chunk(f, "IHDR", ihdr, 13) != 0 ||
        (palette && png_chunk(f, "PLTE", plte, (size_t)colours * 3) != 0) || png_chunk(f, "IDAT", packed, packed_n) != 0 ||
        png_chunk(f, "IEND", NULL, 0) != 0)
        goto done;
    rc = 0;
done:
    if (f && fclose(f) != 0) rc = -1;
    free(raw), free(packed);
    return rc;
}

#endif
