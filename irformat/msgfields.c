/* msgfields.c — the shared pieces of PE's msgpack codecs (msgfields.h):
 * the writer, the document reader, records, arrays into C arrays, and the
 * field tables' packing and reading.  Every reader here goes through
 * msgblob.c's typed accessors, so a wrong type is an error naming the
 * field, never a crash, and the first error is the one reported. */
#include "msgfields.h"

#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------- writing */

msgpack_packer *pe_mp_writer_start(pe_mp_writer *w)
{
    msgpack_sbuffer_init(&w->sb);
    msgpack_packer_init(&w->pk, &w->sb, msgpack_sbuffer_write);
    return &w->pk;
}

uint8_t *pe_mp_writer_frame(pe_mp_writer *w, const char magic[4], uint16_t version, size_t *len)
{
    uint8_t *blob = pe_blob_frame(magic, version, &w->sb, len);
    msgpack_sbuffer_destroy(&w->sb);
    return blob;
}

void pe_mp_pack_bool(msgpack_packer *pk, bool v)
{
    if (v) msgpack_pack_true(pk);
    else msgpack_pack_false(pk);
}

void pe_mp_pack_bin(msgpack_packer *pk, const void *data, size_t n)
{
    msgpack_pack_bin(pk, n);
    msgpack_pack_bin_body(pk, data, n);
}

void pe_mp_pack_strs(msgpack_packer *pk, char *const *strs, uint32_t n)
{
    msgpack_pack_array(pk, n);
    for (uint32_t i = 0; i < n; i++) pe_mp_pack_str(pk, strs[i]);
}

/* ------------------------------------------------------------- reading */

bool pe_mp_doc_open(pe_mp_doc *d, const void *data, size_t len, const char magic[4], uint16_t max_version,
                    const char *format, char *err, size_t err_len)
{
    d->r = (pe_mp_reader){.ok = true};
    if (!format) return pe_blob_open(&d->blob, data, len, magic, max_version, NULL, err, err_len);
    char why[256];
    if (pe_blob_open(&d->blob, data, len, magic, max_version, NULL, why, sizeof why)) return true;
    snprintf(err, err_len, "not a readable %s: %s", format, why);
    return false;
}

bool pe_mp_doc_close(pe_mp_doc *d, const char *format, char *err, size_t err_len)
{
    pe_blob_close(&d->blob);
    if (d->r.ok) return true;
    if (format) snprintf(err, err_len, "malformed %s: %s", format, d->r.err);
    else snprintf(err, err_len, "%s", d->r.err);
    return false;
}

const msgpack_object *pe_mp_record(pe_mp_reader *r, const msgpack_object *o, uint32_t n, const char *what,
                                   uint32_t index)
{
    uint32_t got;
    const msgpack_object *f = pe_mp_array(r, o, what, &got);
    if (f && got != n) {
        if (index == PE_MP_NO_INDEX) pe_mp_fail(r, "%s has %u fields, expected %u", what, got, n);
        else pe_mp_fail(r, "%s %u has %u fields, expected %u", what, index, got, n);
        return NULL;
    }
    return f;
}

void *pe_mp_alloc(pe_mp_reader *r, uint32_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) pe_mp_fail(r, "out of memory");
    return p;
}

void *pe_mp_items(pe_mp_reader *r, const msgpack_object *o, const char *what, size_t size,
                  const msgpack_object **items, uint32_t *n)
{
    uint32_t count;
    *items = pe_mp_array(r, o, what, &count);
    *n = 0;
    if (!r->ok) return NULL; /* this error, or an earlier one: the decode stops, nothing to fill */
    void *p = pe_mp_alloc(r, count, size);
    if (p) *n = count;
    return p;
}

bool pe_mp_bool(pe_mp_reader *r, const msgpack_object *o, const char *what)
{
    if (o && o->type == MSGPACK_OBJECT_BOOLEAN) return o->via.boolean;
    if (o) pe_mp_fail(r, "%s: expected a boolean", what);
    return false;
}

char **pe_mp_strs(pe_mp_reader *r, const msgpack_object *o, const char *what, const char *item, uint32_t *n)
{
    const msgpack_object *items;
    char **strs = pe_mp_items(r, o, what, sizeof *strs, &items, n);
    for (uint32_t i = 0; strs && i < *n && r->ok; i++) strs[i] = pe_mp_strdup(r, &items[i], item);
    return strs;
}

/* --------------------------------------------------------- field tables */

static void pack_value(msgpack_packer *pk, const unsigned char *rec, const pe_mp_field *f)
{
    const void *at = rec + f->at;
    switch (f->kind) {
    case PE_MP_STR: pe_mp_pack_str(pk, *(char *const *)at); break;
    case PE_MP_U64: msgpack_pack_uint64(pk, *(const uint64_t *)at); break;
    case PE_MP_U32: msgpack_pack_uint32(pk, *(const uint32_t *)at); break;
    case PE_MP_I64: msgpack_pack_int64(pk, *(const int64_t *)at); break;
    case PE_MP_F64: msgpack_pack_double(pk, *(const double *)at); break;
    case PE_MP_BOOL: pe_mp_pack_bool(pk, *(const bool *)at); break;
    case PE_MP_STRS: pe_mp_pack_strs(pk, *(char **const *)at, *(const uint32_t *)(rec + f->count_at)); break;
    case PE_MP_NIL: msgpack_pack_nil(pk); break;
    }
}

void pe_mp_pack_fields(msgpack_packer *pk, const void *rec, const pe_mp_field *fields, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) pack_value(pk, rec, &fields[i]);
}

void pe_mp_pack_keyed(msgpack_packer *pk, const void *rec, const pe_mp_field *fields, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        pe_mp_pack_str(pk, fields[i].name);
        pack_value(pk, rec, &fields[i]);
    }
}

/* o is NULL where a map's key is missing (the error is raised already):
 * the member then gets its zero. */
static void read_value(pe_mp_reader *r, const msgpack_object *o, unsigned char *rec, const pe_mp_field *f,
                       uint64_t *raw)
{
    void *at = rec + f->at;
    uint64_t u;
    switch (f->kind) {
    case PE_MP_STR: *(char **)at = pe_mp_strdup(r, o, f->name); break;
    case PE_MP_U64: *(uint64_t *)at = u = pe_mp_uint(r, o, f->name); if (raw) *raw = u; break;
    case PE_MP_U32: *(uint32_t *)at = (uint32_t)(u = pe_mp_uint(r, o, f->name)); if (raw) *raw = u; break;
    case PE_MP_I64: *(int64_t *)at = pe_mp_int(r, o, f->name); break;
    case PE_MP_F64: *(double *)at = pe_mp_double(r, o, f->name); break;
    case PE_MP_BOOL: *(bool *)at = pe_mp_bool(r, o, f->name); break;
    case PE_MP_STRS: *(char ***)at = pe_mp_strs(r, o, f->name, f->item, (uint32_t *)(rec + f->count_at)); break;
    case PE_MP_NIL: break; /* reserved: whatever a later writer puts there is not ours to check */
    }
}

void pe_mp_read_fields(pe_mp_reader *r, const msgpack_object *f, void *rec, const pe_mp_field *fields, uint32_t n,
                       uint64_t *raw)
{
    for (uint32_t i = 0; i < n; i++) read_value(r, &f[i], rec, &fields[i], raw ? &raw[i] : NULL);
}

void pe_mp_read_keyed(pe_mp_reader *r, const msgpack_object *m, void *rec, const pe_mp_field *fields, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) read_value(r, pe_mp_get(r, m, fields[i].name), rec, &fields[i], NULL);
}
