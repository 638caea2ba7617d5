/* msgblob.h — framed msgpack blobs, the one container for PE's files and
 * sections (profile databases, the static IR): a header with magic, format
 * version, payload length and checksum, then one msgpack object.  The reader
 * treats its input as untrusted: the header is checked, then the payload is
 * walked once with limits on depth, container counts (each checked against
 * the bytes that remain, so a few bytes cannot make msgpack-c reserve
 * gigabytes), string sizes and object count, and only then unpacked.
 * Typed accessors turn msgpack objects into C values with a clear error
 * instead of a crash on a wrong type; msgfields.h builds the codecs' shared
 * pieces (writer, records, field tables) on them. */
#ifndef PE_IRFORMAT_MSGBLOB_H
#define PE_IRFORMAT_MSGBLOB_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PE_BLOB_HEADER_SIZE 20 /* magic[4], u16 version, u16 flags, u32 length, u64 FNV-1a of the payload */

typedef struct {
    uint32_t max_depth;      /* nesting of arrays and maps */
    uint32_t max_objects;    /* objects in the whole payload */
    uint32_t max_string;     /* bytes in one string or bin */
} pe_blob_limits;

/* Generous defaults for files PE wrote itself. */
extern const pe_blob_limits pe_blob_default_limits;

uint64_t pe_blob_checksum(const void *data, size_t len);

/* Frames the packed payload in `sbuf` (header in front); returns a malloc'd
 * blob of *out_len bytes, or NULL when out of memory. */
uint8_t *pe_blob_frame(const char magic[4], uint16_t version, const msgpack_sbuffer *payload, size_t *out_len);

/* A decoded blob: the root object lives as long as the blob. */
typedef struct {
    msgpack_unpacked unpacked;
    msgpack_object root;
    uint16_t version;
    bool open;
} pe_blob;

/* Checks and unpacks `data`: magic, a version in [1, max_version], exact
 * length, checksum, then the limits.  False with a message in err otherwise
 * (nothing to free then). */
bool pe_blob_open(pe_blob *b, const void *data, size_t len, const char magic[4], uint16_t max_version,
                  const pe_blob_limits *limits, char *err, size_t err_len);
void pe_blob_close(pe_blob *b);

/* Reads a whole file into memory (at most max_bytes); NULL with err set. */
uint8_t *pe_blob_read_file(const char *path, size_t max_bytes, size_t *len, char *err, size_t err_len);
/* Writes data to path through a temporary file and rename in its directory
 * (a symlink written through to its target after safefile.h's owner
 * checks, never replaced; anything but a regular file refused); false with
 * err set. */
bool pe_blob_write_file(const char *path, const void *data, size_t len, char *err, size_t err_len);

/* ------------------------------------------------------ typed accessors
 * Each returns false (and fills the reader's error, first error kept) when
 * the object is missing or of the wrong type; callers check reader.ok once. */
typedef struct {
    bool ok;
    char err[256];
} pe_mp_reader;

void pe_mp_fail(pe_mp_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The value of key `key` in map `m`, or NULL (error) when absent. */
const msgpack_object *pe_mp_get(pe_mp_reader *r, const msgpack_object *m, const char *key);
/* The same without an error when absent. */
const msgpack_object *pe_mp_find(const msgpack_object *m, const char *key);
uint64_t pe_mp_uint(pe_mp_reader *r, const msgpack_object *o, const char *what);
int64_t pe_mp_int(pe_mp_reader *r, const msgpack_object *o, const char *what);
double pe_mp_double(pe_mp_reader *r, const msgpack_object *o, const char *what);
/* A malloc'd NUL-terminated copy (strings holding NUL bytes are refused). */
char *pe_mp_strdup(pe_mp_reader *r, const msgpack_object *o, const char *what);
/* The array's items, with its size in *n; NULL (error) if not an array. */
const msgpack_object *pe_mp_array(pe_mp_reader *r, const msgpack_object *o, const char *what, uint32_t *n);

/* Packing shorthands. */
void pe_mp_pack_str(msgpack_packer *pk, const char *s);
void pe_mp_pack_key_uint(msgpack_packer *pk, const char *key, uint64_t v);

#endif
