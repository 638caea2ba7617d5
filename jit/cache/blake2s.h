/* blake2s.h — keyed BLAKE2s-256 (RFC 7693), the MAC that authenticates what
 * the disk cache hands back: FNV-1a or any unkeyed checksum can be
 * recomputed by whoever changes a file, a MAC needs the per-user key. */
#ifndef PE_JIT_BLAKE2S_H
#define PE_JIT_BLAKE2S_H

#include <stddef.h>
#include <stdint.h>

#define PE_BLAKE2S_BYTES 32

/* out = BLAKE2s-256 of data under key (key_len <= 32; 0: unkeyed). */
void pe_blake2s(uint8_t out[PE_BLAKE2S_BYTES], const void *key, size_t key_len, const void *data, size_t len);

#endif
