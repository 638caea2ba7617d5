/* fnv.h — FNV-1a, the one 64-bit hash behind PE's keys and checksums (kernel
 * IR hashes, disk-cache names, stable site ids, blob checksums): fast,
 * byte-order independent for byte input, and stable across runs, which is
 * what keys of files that outlive a process need.  Not for adversarial
 * input: blobs are checked, not authenticated. */
#ifndef PE_IRFORMAT_FNV_H
#define PE_IRFORMAT_FNV_H

#include <stddef.h>
#include <stdint.h>

#define PE_FNV_OFFSET 0xcbf29ce484222325ull
#define PE_FNV_PRIME 0x100000001b3ull

/* Folds one value in (a byte, or a whole small integer). */
static inline uint64_t pe_fnv_mix(uint64_t h, uint64_t v) { return (h ^ v) * PE_FNV_PRIME; }

static inline uint64_t pe_fnv_bytes(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n; i++) h = pe_fnv_mix(h, p[i]);
    return h;
}

static inline uint64_t pe_fnv_string(uint64_t h, const char *s)
{
    for (; *s; s++) h = pe_fnv_mix(h, (uint8_t)*s);
    return h;
}

#endif
