/* msgblob.c — framed msgpack blobs: framing, the bounded pre-validation walk
 * over untrusted msgpack bytes, unpacking with msgpack-c, typed accessors,
 * and whole-file reads and atomic writes.
 *
 * Why the walk: msgpack-c 4.0 reserves memory for a container from the count
 * in its header before it has seen the items (5 bytes claiming 2^26 elements
 * cost 1.6 GB), returns CONTINUE for truncated input and SUCCESS with bytes
 * left over.  Every item takes at least one byte, so a container claiming more
 * items than bytes remain is malformed and refused before msgpack-c sees it. */
#define _GNU_SOURCE
#include "msgblob.h"
#include "fnv.h"
#include "safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const pe_blob_limits pe_blob_default_limits = {.max_depth = 32, .max_objects = 1u << 26, .max_string = 1u << 20};

#define MAX_DEPTH_CAP 64

uint64_t pe_blob_checksum(const void *data, size_t len)
{
    /* FNV-1a from this seed (not FNV's offset basis, one digit short of it):
     * the frames already written and embedded were checked with it */
    return pe_fnv_bytes(1469598103934665603ull, data, len);
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_be(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v = v << 8 | p[i];
    return v;
}

uint8_t *pe_blob_frame(const char magic[4], uint16_t version, const msgpack_sbuffer *payload, size_t *out_len)
{
    if (payload->size > UINT32_MAX) return NULL;
    uint8_t *b = malloc(PE_BLOB_HEADER_SIZE + payload->size);
    if (!b) return NULL;
    memcpy(b, magic, 4);
    put_le(b + 4, version, 2);
    put_le(b + 6, 0, 2);
    put_le(b + 8, payload->size, 4);
    put_le(b + 12, pe_blob_checksum(payload->data, payload->size), 8);
    memcpy(b + PE_BLOB_HEADER_SIZE, payload->data, payload->size);
    *out_len = PE_BLOB_HEADER_SIZE + payload->size;
    return b;
}

#define FAIL(...) (snprintf(err, err_len, __VA_ARGS__), false)

/* One pass over the msgpack bytes with an explicit stack of items still to
 * read per open container. */
static bool walk(const uint8_t *p, size_t len, const pe_blob_limits *lim, char *err, size_t err_len)
{
    uint64_t stack[MAX_DEPTH_CAP];
    uint32_t max_depth = lim->max_depth < MAX_DEPTH_CAP ? lim->max_depth : MAX_DEPTH_CAP;
    uint32_t depth = 0;
    uint64_t todo = 1, objects = 0;
    size_t off = 0;
    for (;;) {
        while (todo == 0) {
            if (depth == 0) goto done;
            todo = stack[--depth];
        }
        if (off >= len) return FAIL("truncated payload (an object is missing at byte %zu)", off);
        todo--;
        if (++objects > lim->max_objects) return FAIL("more than %u objects", lim->max_objects);
        size_t at = off;
        uint8_t t = p[off++];
        uint64_t count = 0, skip = 0;
        int container = 0; /* 1 array, 2 map */
        int len_bytes = 0; /* size of a length field that follows */
        bool is_string = false;
        if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
            /* fixint, nil, bool */
        } else if (t >= 0x80 && t <= 0x8f) {
            container = 2, count = t & 0x0f;
        } else if (t >= 0x90 && t <= 0x9f) {
            container = 1, count = t & 0x0f;
        } else if (t >= 0xa0 && t <= 0xbf) {
            skip = t & 0x1f, is_string = true;
        } else {
            switch (t) {
            case 0xc4: case 0xd9: len_bytes = 1; is_string = true; break;
            case 0xc5: case 0xda: len_bytes = 2; is_string = true; break;
            case 0xc6: case 0xdb: len_bytes = 4; is_string = true; break;
            case 0xca: skip = 4; break;
            case 0xcb: skip = 8; break;
            case 0xcc: case 0xd0: skip = 1; break;
            case 0xcd: case 0xd1: skip = 2; break;
            case 0xce: case 0xd2: skip = 4; break;
            case 0xcf: case 0xd3: skip = 8; break;
            case 0xdc: container = 1; len_bytes = 2; break;
            case 0xdd: container = 1; len_bytes = 4; break;
            case 0xde: container = 2; len_bytes = 2; break;
            case 0xdf: container = 2; len_bytes = 4; break;
            default: return FAIL("byte 0x%02x at %zu is not a msgpack type PE writes", t, at);
            }
        }
        if (len_bytes) {
            if ((size_t)len_bytes > len - off) return FAIL("truncated payload (a length at byte %zu)", at);
            uint64_t n = get_be(p + off, len_bytes);
            off += (size_t)len_bytes;
            if (container) count = n;
            else skip = n;
        }
        if (is_string && skip > lim->max_string)
            return FAIL("a string of %llu bytes at byte %zu (limit %u)", (unsigned long long)skip, at, lim->max_string);
        if (container) {
            uint64_t items = container == 2 ? 2 * count : count;
            if (items > len - off)
                return FAIL("a container at byte %zu claims %llu items with %zu bytes left", at,
                            (unsigned long long)items, len - off);
            if (items) {
                if (depth >= max_depth) return FAIL("nesting deeper than %u at byte %zu", max_depth, at);
                stack[depth++] = todo;
                todo = items;
            }
        } else {
            if (skip > len - off) return FAIL("truncated payload (a value at byte %zu)", at);
            off += (size_t)skip;
        }
    }
done:
    if (off != len) return FAIL("%zu bytes after the end of the payload", len - off);
    return true;
}

bool pe_blob_open(pe_blob *b, const void *data, size_t len, const char magic[4], uint16_t max_version,
                  const pe_blob_limits *limits, char *err, size_t err_len)
{
    memset(b, 0, sizeof *b);
    const uint8_t *p = data;
    if (!limits) limits = &pe_blob_default_limits;
    if (len < PE_BLOB_HEADER_SIZE || memcmp(p, magic, 4) != 0)
        return FAIL("not a %.4s file (%s)", magic, len < PE_BLOB_HEADER_SIZE ? "too short" : "wrong magic");
    uint16_t version = (uint16_t)get_le(p + 4, 2);
    if (version == 0 || version > max_version)
        return FAIL("format version %u, this build reads 1..%u", version, max_version);
    if (get_le(p + 6, 2) != 0) return FAIL("unknown header flags 0x%04x", (unsigned)get_le(p + 6, 2));
    uint64_t payload_len = get_le(p + 8, 4);
    if (payload_len != len - PE_BLOB_HEADER_SIZE)
        return FAIL("length %llu in the header, %zu bytes present (truncated or padded)", (unsigned long long)payload_len,
                    len - PE_BLOB_HEADER_SIZE);
    if (get_le(p + 12, 8) != pe_blob_checksum(p + PE_BLOB_HEADER_SIZE, payload_len))
        return FAIL("checksum mismatch (the file is corrupt)");
    if (!walk(p + PE_BLOB_HEADER_SIZE, payload_len, limits, err, err_len)) return false;
    msgpack_unpacked_init(&b->unpacked);
    size_t off = 0;
    msgpack_unpack_return r =
        msgpack_unpack_next(&b->unpacked, (const char *)p + PE_BLOB_HEADER_SIZE, payload_len, &off);
    if (r != MSGPACK_UNPACK_SUCCESS || off != payload_len) {
        msgpack_unpacked_destroy(&b->unpacked);
        return FAIL("msgpack could not unpack the payload (%s)", r == MSGPACK_UNPACK_NOMEM_ERROR ? "out of memory" : "malformed");
    }
    b->root = b->unpacked.data;
    b->version = version;
    b->open = true;
    return true;
}

void pe_blob_close(pe_blob *b)
{
    if (b->open) msgpack_unpacked_destroy(&b->unpacked);
    b->open = false;
}

uint8_t *pe_blob_read_file(const char *path, size_t max_bytes, size_t *len, char *err, size_t err_len)
{
    struct stat st;
    int fd = pe_file_open_regular(AT_FDCWD, path, &st, err, err_len);
    if (fd < 0) return NULL;
    char why[256];
    uint8_t *data = pe_file_read_all(fd, &st, max_bytes, len, why, sizeof why);
    if (!data) snprintf(err, err_len, "%s: %s", path, why);
    close(fd);
    return data;
}

bool pe_blob_write_file(const char *path, const void *data, size_t len, char *err, size_t err_len)
{
    char name[NAME_MAX + 1], tmp[NAME_MAX + 32];
    int dfd = pe_file_write_target(path, name, sizeof name, err, err_len); /* a symlink resolved: its target's */
    if (dfd < 0) return false;
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", name, (int)getpid());
    unlinkat(dfd, tmp, 0);
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        close(dfd);
        return FAIL("%s: %s", path, strerror(e));
    }
    bool ok = write(fd, data, len) == (ssize_t)len;
    ok = (close(fd) == 0) && ok;
    if (!ok || renameat(dfd, tmp, dfd, name) != 0) {
        int e = errno;
        unlinkat(dfd, tmp, 0);
        close(dfd);
        return FAIL("%s: %s", path, ok ? strerror(e) : "write error");
    }
    close(dfd);
    return true;
}

/* ------------------------------------------------------- typed accessors */

void pe_mp_fail(pe_mp_reader *r, const char *fmt, ...)
{
    if (!r->ok) return; /* keep the first error */
    r->ok = false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
}

const msgpack_object *pe_mp_find(const msgpack_object *m, const char *key)
{
    if (!m || m->type != MSGPACK_OBJECT_MAP) return NULL;
    size_t klen = strlen(key);
    for (uint32_t i = 0; i < m->via.map.size; i++) {
        const msgpack_object *k = &m->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == klen && memcmp(k->via.str.ptr, key, klen) == 0)
            return &m->via.map.ptr[i].val;
    }
    return NULL;
}

const msgpack_object *pe_mp_get(pe_mp_reader *r, const msgpack_object *m, const char *key)
{
    if (!m || m->type != MSGPACK_OBJECT_MAP) {
        pe_mp_fail(r, "expected a map holding \"%s\"", key);
        return NULL;
    }
    const msgpack_object *v = pe_mp_find(m, key);
    if (!v) pe_mp_fail(r, "\"%s\" is missing", key);
    return v;
}

uint64_t pe_mp_uint(pe_mp_reader *r, const msgpack_object *o, const char *what)
{
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) return o->via.u64;
    if (o) pe_mp_fail(r, "%s: expected an unsigned integer", what);
    return 0;
}

int64_t pe_mp_int(pe_mp_reader *r, const msgpack_object *o, const char *what)
{
    if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) return o->via.i64;
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) return (int64_t)o->via.u64;
    if (o) pe_mp_fail(r, "%s: expected an integer", what);
    return 0;
}

double pe_mp_double(pe_mp_reader *r, const msgpack_object *o, const char *what)
{
    if (o && (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32)) return o->via.f64;
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) return (double)o->via.u64;
    if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) return (double)o->via.i64;
    if (o) pe_mp_fail(r, "%s: expected a number", what);
    return 0;
}

char *pe_mp_strdup(pe_mp_reader *r, const msgpack_object *o, const char *what)
{
    if (!o) return NULL;
    if (o->type != MSGPACK_OBJECT_STR || memchr(o->via.str.ptr, 0, o->via.str.size)) {
        pe_mp_fail(r, "%s: expected a string", what);
        return NULL;
    }
    char *s = strndup(o->via.str.ptr, o->via.str.size);
    if (!s) pe_mp_fail(r, "%s: out of memory", what);
    return s;
}

const msgpack_object *pe_mp_array(pe_mp_reader *r, const msgpack_object *o, const char *what, uint32_t *n)
{
    *n = 0;
    if (!o) return NULL;
    if (o->type != MSGPACK_OBJECT_ARRAY) {
        pe_mp_fail(r, "%s: expected an array", what);
        return NULL;
    }
    *n = o->via.array.size;
    return o->via.array.ptr;
}

void pe_mp_pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s ? s : "", n);
}

void pe_mp_pack_key_uint(msgpack_packer *pk, const char *key, uint64_t v)
{
    pe_mp_pack_str(pk, key);
    msgpack_pack_uint64(pk, v);
}
