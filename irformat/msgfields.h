/* msgfields.h — what the codecs of PE's msgpack formats (the static IR,
 * irformat/static_ir.c; the profile database, profiler/profdb.c; the trace
 * cache's file, jit/trace/trace_persist.c) share above msgblob.h's frame
 * and scalar accessors: a writer that ends in a frame, a reader of one
 * framed document with its error messages, fixed-order records, arrays
 * read into zeroed C arrays, and field tables.
 *
 * A field table describes a C struct's members once, in the order the
 * format lists them, for both directions: the encoder packs a record (or
 * a map's named entries) from it and the decoder reads it back from it,
 * so a field can no longer be written in one order and read in another.
 * Each member is checked against its kind when the table is compiled.
 * What a table does not describe — nested arrays, checks between fields —
 * each codec writes itself, after the fields it reads from the table. */
#ifndef PE_IRFORMAT_MSGFIELDS_H
#define PE_IRFORMAT_MSGFIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msgblob.h"

/* ------------------------------------------------------------- writing */

typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} pe_mp_writer;

/* Starts a payload; pack into the packer it returns. */
msgpack_packer *pe_mp_writer_start(pe_mp_writer *w);
/* Frames the payload (pe_blob_frame) and frees the writer's buffer: the
 * blob, malloc'd, or NULL when out of memory. */
uint8_t *pe_mp_writer_frame(pe_mp_writer *w, const char magic[4], uint16_t version, size_t *len);

void pe_mp_pack_bool(msgpack_packer *pk, bool v);
void pe_mp_pack_bin(msgpack_packer *pk, const void *data, size_t n);
/* An array of n strings (NULL ones as ""). */
void pe_mp_pack_strs(msgpack_packer *pk, char *const *strs, uint32_t n);

/* ------------------------------------------------------------- reading */

/* One framed document being read: its blob and the reader's first error. */
typedef struct {
    pe_blob blob;
    pe_mp_reader r;
} pe_mp_doc;

/* Opens and checks a framed blob (pe_blob_open, default limits): false with
 * "not a readable <format>: <why>" in err (<why> alone where format is
 * NULL), nothing to close then. */
bool pe_mp_doc_open(pe_mp_doc *d, const void *data, size_t len, const char magic[4], uint16_t max_version,
                    const char *format, char *err, size_t err_len);
/* Closes it: true when all that was read was well formed, else false with
 * "malformed <format>: <the first error>" in err (the error alone where
 * format is NULL). */
bool pe_mp_doc_close(pe_mp_doc *d, const char *format, char *err, size_t err_len);

/* A record: the fields of an array of exactly n, or NULL after an error
 * "<what> [<index> ]has <m> fields, expected <n>" (no index where index is
 * PE_MP_NO_INDEX), or "<what>: expected an array". */
#define PE_MP_NO_INDEX UINT32_MAX
const msgpack_object *pe_mp_record(pe_mp_reader *r, const msgpack_object *o, uint32_t n, const char *what,
                                   uint32_t index);
/* n zeroed items of size bytes (one at least), or NULL after "out of memory". */
void *pe_mp_alloc(pe_mp_reader *r, uint32_t n, size_t size);
/* An array's items (*items, *n) and a zeroed C array of as many of size
 * bytes; NULL with *n = 0 after an error, or where the reader already
 * has one (nothing to fill then). */
void *pe_mp_items(pe_mp_reader *r, const msgpack_object *o, const char *what, size_t size,
                  const msgpack_object **items, uint32_t *n);
bool pe_mp_bool(pe_mp_reader *r, const msgpack_object *o, const char *what);
/* An array of strings (malloc'd, as pe_mp_items) named what, its items item. */
char **pe_mp_strs(pe_mp_reader *r, const msgpack_object *o, const char *what, const char *item, uint32_t *n);

/* --------------------------------------------------------- field tables */

typedef enum {
    PE_MP_STR,  /* char *: a string (NULL written as "") */
    PE_MP_U64,  /* uint64_t: an unsigned integer */
    PE_MP_U32,  /* uint32_t: an unsigned integer, read whole (raw) and narrowed */
    PE_MP_I64,  /* int64_t: an integer */
    PE_MP_F64,  /* double: a float 64 (read from any number) */
    PE_MP_BOOL, /* bool */
    PE_MP_STRS, /* char ** with a uint32_t count: an array of strings */
    PE_MP_NIL,  /* no member: a reserved nil, written, never read */
} pe_mp_kind;

typedef struct {
    const char *name;  /* a map's key; a record's field as errors name it */
    pe_mp_kind kind;
    size_t at;         /* offsetof the member */
    size_t count_at;   /* PE_MP_STRS: offsetof its count */
    const char *item;  /* PE_MP_STRS: an item as errors name it */
} pe_mp_field;

/* The C type of each kind, checked at compile time: a member of another
 * type does not compile (_Generic has no match). */
#define PE_MP_IS_STR(m) _Generic((m), char *: 1)
#define PE_MP_IS_U64(m) _Generic((m), uint64_t: 1)
#define PE_MP_IS_U32(m) _Generic((m), uint32_t: 1)
#define PE_MP_IS_I64(m) _Generic((m), int64_t: 1)
#define PE_MP_IS_F64(m) _Generic((m), double: 1)
#define PE_MP_IS_BOOL(m) _Generic((m), bool: 1)
#define PE_MP_MEMBER_AT(type, kind, member) \
    (offsetof(type, member) + 0 * sizeof(char[PE_MP_IS_##kind(((type *)0)->member)]))
/* A member of struct `type` of kind PE_MP_<kind>, named `name`. */
#define PE_MP_FIELD(type, kind, member, name) {(name), PE_MP_##kind, PE_MP_MEMBER_AT(type, kind, member), 0, NULL}
/* An array of strings `member`, its count `count`. */
#define PE_MP_STRS_FIELD(type, member, count, name, item)                                                        \
    {(name), PE_MP_STRS, offsetof(type, member) + 0 * sizeof(char[_Generic(((type *)0)->member, char **: 1)]), \
     PE_MP_MEMBER_AT(type, U32, count), (item)}
#define PE_MP_NIL_FIELD {"reserved", PE_MP_NIL, 0, 0, NULL}
/* The number of fields of a table array. */
#define PE_MP_N_FIELDS(table) ((uint32_t)(sizeof(table) / sizeof *(table)))

/* Packs the n fields of rec in table order, values only (a record's array
 * header is the caller's: a record may go on with fields of its own). */
void pe_mp_pack_fields(msgpack_packer *pk, const void *rec, const pe_mp_field *fields, uint32_t n);
/* The same as a map's entries: each field's name, then its value. */
void pe_mp_pack_keyed(msgpack_packer *pk, const void *rec, const pe_mp_field *fields, uint32_t n);
/* Reads the n fields of rec from the record's items f, in table order, each
 * with its typed accessor (errors name the field).  raw, when not NULL,
 * gets each unsigned field's value as read, before narrowing (raw[i] for
 * fields[i]), for the caller's range checks. */
void pe_mp_read_fields(pe_mp_reader *r, const msgpack_object *f, void *rec, const pe_mp_field *fields, uint32_t n,
                       uint64_t *raw);
/* Reads them from map m by name (a missing key: "\"<name>\" is missing"). */
void pe_mp_read_keyed(pe_mp_reader *r, const msgpack_object *m, void *rec, const pe_mp_field *fields, uint32_t n);

#endif
