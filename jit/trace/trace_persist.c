/* trace_persist.c — the trace cache across runs.  At pe_shutdown the
 * remembered program sequences go to PE_CACHE_DIR as one file per program
 * build: traces-<hash>.petc, the hash of the executable's path, the code
 * generator's build stamp, the hash of the runtime's sources (a program
 * generator that differs makes other sequences) and the static IR's
 * fingerprint.  At pe_init they
 * come back, so the second run of a program runs the program generator for
 * none of the batches it saw before (its kernels come from the disk cache).
 * Keys name sites by stable ids (trace.c), never addresses.
 *
 * The file is a framed msgpack blob (irformat/msgblob.h, magic "PETC"),
 * sealed by the disk cache with this user's MAC (diskcache.c), so a file
 * re-framed with a valid checksum by someone else is refused unread:
 * {"entries": [[key (bin), first_site, n_externals, fusion rules id, programs]]}, a program
 * [kind, port code, numel, members [codes], bind [codes], kernel (bin: the
 * kir_kernel of this very build, its parameters and body cut to their
 * counts; a library call's PE_INTR_* flags, an integer), shares [member
 * positions, or empty]].  Whatever fails a check — frame,
 * checksum, counts, kernel validity — is dropped with a warning; a code that
 * does not fit a batch is caught again at instantiation. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"
#include "../cache/diskcache.h"
#include "../kir/codegen.h"
#include "../../exec/base/error.h"
#include "../../irformat/fnv.h"
#include "../../irformat/msgfields.h"
#define MAGIC PE_TRACE_FILE_MAGIC
#define VERSION PE_TRACE_FILE_VERSION
/* A kernel's bytes before its parameters (its shape, counts, axis): the
 * file holds those, then only the parameters and instructions in use. */
#define KERNEL_HEAD offsetof(kir_kernel, params)
_Static_assert(offsetof(kir_kernel, params) < offsetof(kir_kernel, body), "a kernel's parameters precede its body");
#define MAX_FILE ((size_t)64 << 20)

static bool file_name(uint64_t ir_fingerprint, char *out, size_t n)
{
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return false;
    exe[len] = 0;
    uint64_t h = pe_blob_checksum(exe, (size_t)len);
    h = pe_fnv_mix(h, pe_codegen_build_stamp());
    h = pe_fnv_string(h, PE_RUNTIME_HASH); /* the runtime that made the sequences (CMakeLists.txt) */
    h = pe_fnv_mix(h, ir_fingerprint);
    snprintf(out, n, "traces-%016llx.petc", (unsigned long long)h);
    return pe_diskcache_enabled();
}

/* ------------------------------------------------------------------ save */

static void pack_codes(msgpack_packer *pk, const uint32_t *codes, int n)
{
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_uint32(pk, codes[i]);
}

static void pack_entry(const pe_trace_record *r, void *ctx)
{
    msgpack_packer *pk = ctx;
    msgpack_pack_array(pk, 5);
    pe_mp_pack_bin(pk, r->key, r->key_len);
    msgpack_pack_uint64(pk, r->first_site);
    msgpack_pack_uint32(pk, r->n_externals);
    msgpack_pack_uint32(pk, r->rules);
    msgpack_pack_array(pk, r->seq->n);
    for (size_t i = 0; i < r->seq->n; i++) {
        const pe_program *p = &r->seq->progs[i];
        msgpack_pack_array(pk, 7);
        msgpack_pack_uint32(pk, (uint32_t)p->kind);
        msgpack_pack_uint32(pk, p->port);
        msgpack_pack_int64(pk, p->numel);
        bool kernel = p->kind == PE_PROG_KERNEL, call = p->kind == PE_PROG_INTRINSIC;
        pack_codes(pk, kernel || call ? p->members : NULL, kernel || call ? p->n_members : 0);
        pack_codes(pk, kernel || call ? p->bind : NULL, kernel ? p->kir->n_params : call ? p->n_bind : 0);
        if (kernel) { /* the kernel's fields, then the parameters and instructions in use */
            size_t params = sizeof p->kir->params[0] * (size_t)p->kir->n_params, body = sizeof p->kir->body[0] * (size_t)p->kir->n_body;
            msgpack_pack_bin(pk, KERNEL_HEAD + params + body);
            msgpack_pack_bin_body(pk, p->kir, KERNEL_HEAD);
            msgpack_pack_bin_body(pk, p->kir->params, params);
            msgpack_pack_bin_body(pk, p->kir->body, body);
        } else if (call) { /* which operands are there, and transposed */
            msgpack_pack_uint32(pk, p->flags);
        } else {
            msgpack_pack_nil(pk);
        }
        int n_shares = kernel && p->shares ? p->n_members : 0;
        msgpack_pack_array(pk, (size_t)n_shares);
        for (int m = 0; m < n_shares; m++) msgpack_pack_int64(pk, p->shares[m]);
    }
}

typedef struct {
    msgpack_packer *pk;
    size_t n;
} counter;

static void count_entry(const pe_trace_record *r, void *ctx)
{
    (void)r;
    ((counter *)ctx)->n++;
}

void pe_trace_persist_save(uint64_t ir_fingerprint)
{
    char name[64];
    counter c = {NULL, 0};
    if (!pe_trace_each(count_entry, &c) || c.n == 0 || !file_name(ir_fingerprint, name, sizeof name)) return;
    pe_mp_writer w;
    msgpack_packer *pk = pe_mp_writer_start(&w);
    msgpack_pack_map(pk, 1);
    pe_mp_pack_str(pk, "entries");
    msgpack_pack_array(pk, c.n);
    pe_trace_each(pack_entry, pk); /* least recently used first: loading restores the order */
    size_t len;
    uint8_t *blob = pe_mp_writer_frame(&w, MAGIC, VERSION, &len);
    if (!blob || !pe_diskcache_write(name, blob, len))
        pe_log_message(PE_LOG_WARN, "the trace cache was not saved: %s", blob ? strerror(errno) : "out of memory");
    free(blob);
}

/* ------------------------------------------------------------------ load */

static uint32_t *read_codes(pe_mp_reader *r, const msgpack_object *o, uint32_t want)
{
    uint32_t n;
    const msgpack_object *items = pe_mp_array(r, o, "codes", &n);
    if (!r->ok) return NULL;
    if (n != want) {
        pe_mp_fail(r, "%u codes where %u belong", n, want);
        return NULL;
    }
    uint32_t *codes = pe_mp_alloc(r, n, sizeof *codes);
    for (uint32_t i = 0; codes && i < n; i++) codes[i] = (uint32_t)pe_mp_uint(r, &items[i], "code");
    return codes;
}

static bool read_program(pe_mp_reader *r, const msgpack_object *o, pe_program *p)
{
    uint32_t n;
    const msgpack_object *f = pe_mp_array(r, o, "program", &n);
    if (!r->ok || n != 7) return pe_mp_fail(r, "a program is not 7 fields"), false;
    uint64_t kind = pe_mp_uint(r, &f[0], "kind");
    if (kind > PE_PROG_INTRINSIC) return pe_mp_fail(r, "unknown program kind"), false;
    *p = (pe_program){.kind = (pe_prog_kind)kind, .port = (uint32_t)pe_mp_uint(r, &f[1], "port"),
                      .numel = pe_mp_int(r, &f[2], "numel")};
    if (p->kind == PE_PROG_INTRINSIC) { /* its members and operands are checked at the first hit (trace_check.c) */
        uint32_t n_members, n_bind;
        pe_mp_array(r, &f[3], "members", &n_members);
        pe_mp_array(r, &f[4], "operands", &n_bind);
        if (!r->ok || n_members == 0 || n_members > 4 || n_bind > 5) return pe_mp_fail(r, "a malformed library call"), false;
        p->n_members = (int)n_members;
        p->n_bind = (uint8_t)n_bind;
        p->flags = (uint8_t)pe_mp_uint(r, &f[5], "flags");
        p->members = read_codes(r, &f[3], n_members);
        p->bind = read_codes(r, &f[4], n_bind);
        return r->ok;
    }
    if (p->kind != PE_PROG_KERNEL) return r->ok;
    if (f[5].type != MSGPACK_OBJECT_BIN || f[5].via.bin.size < KERNEL_HEAD) return pe_mp_fail(r, "a kernel of another build"), false;
    if (!(p->kir = pe_mp_alloc(r, 1, sizeof *p->kir))) return false;
    const char *bytes = f[5].via.bin.ptr;
    if ((uint8_t)bytes[offsetof(kir_kernel, axis_reduction)] > 1 || (uint8_t)bytes[offsetof(kir_kernel, stream_stores)] > 1)
        return pe_mp_fail(r, "a malformed kernel"), false; /* a bool holds 0 or 1 */
    memcpy(p->kir, bytes, KERNEL_HEAD);
    if (p->kir->n_params < 0 || p->kir->n_params > KIR_MAX_PARAMS || p->kir->n_body < 0 || p->kir->n_body > KIR_MAX_BODY)
        return pe_mp_fail(r, "a malformed kernel"), false;
    size_t params = sizeof p->kir->params[0] * (size_t)p->kir->n_params, body = sizeof p->kir->body[0] * (size_t)p->kir->n_body;
    if (f[5].via.bin.size != KERNEL_HEAD + params + body) return pe_mp_fail(r, "a kernel of another build"), false;
    memcpy(p->kir->params, bytes + KERNEL_HEAD, params);
    memcpy(p->kir->body, bytes + KERNEL_HEAD + params, body);
    if (!kir_valid(p->kir)) return pe_mp_fail(r, "a malformed kernel"), false;
    uint32_t n_members;
    pe_mp_array(r, &f[3], "members", &n_members);
    if (!r->ok || n_members == 0 || n_members > KIR_MAX_BODY) return pe_mp_fail(r, "bad member count"), false;
    p->n_members = (int)n_members;
    p->members = read_codes(r, &f[3], n_members);
    p->bind = read_codes(r, &f[4], (uint32_t)p->kir->n_params);
    uint32_t n_shares;
    const msgpack_object *shares = pe_mp_array(r, &f[6], "shares", &n_shares);
    if (!r->ok || (n_shares && n_shares != n_members)) return pe_mp_fail(r, "bad share count"), false;
    if (n_shares && !(p->shares = pe_mp_alloc(r, n_shares, sizeof *p->shares))) return false;
    for (uint32_t m = 0; m < n_shares && r->ok; m++) { /* what they share is checked at the first hit (trace_check.c) */
        int64_t v = pe_mp_int(r, &shares[m], "share");
        if (v < -1 || v >= (int64_t)n_members) return pe_mp_fail(r, "a share outside the kernel"), false;
        p->shares[m] = (int16_t)v;
    }
    return r->ok;
}

/* Decodes a trace file's bytes and adopts its entries (pe_trace_adopt
 * checks them against this build); false, with why in err, on the first
 * malformed part (entries before it are kept: each was whole).  An older
 * format is not an error: *stale is set and nothing is adopted.  The
 * libFuzzer target tests/fuzz_trace_file.c calls it directly. */
bool pe_trace_persist_decode(const uint8_t *data, size_t len, bool *stale, char *err, size_t err_len)
{
    pe_mp_doc d;
    *stale = false;
    if (!pe_mp_doc_open(&d, data, len, MAGIC, VERSION, NULL, err, err_len)) return false;
    if (d.blob.version != VERSION) {
        *stale = true;
        return pe_mp_doc_close(&d, NULL, err, err_len);
    }
    pe_mp_reader *r = &d.r;
    uint32_t n;
    const msgpack_object *entries = pe_mp_array(r, pe_mp_get(r, &d.blob.root, "entries"), "entries", &n);
    for (uint32_t i = 0; i < n && r->ok; i++) {
        uint32_t nf;
        const msgpack_object *f = pe_mp_array(r, &entries[i], "entry", &nf);
        if (!r->ok || nf != 5 || f[0].type != MSGPACK_OBJECT_BIN) {
            pe_mp_fail(r, "entry %u is malformed", i);
            break;
        }
        uint32_t np;
        const msgpack_object *progs = pe_mp_array(r, &f[4], "programs", &np);
        pe_program_seq seq = {.progs = pe_mp_alloc(r, np, sizeof(pe_program)), .cap = np};
        for (uint32_t k = 0; k < np && r->ok; k++) {
            read_program(r, &progs[k], &seq.progs[k]);
            seq.n = k + 1;
        }
        pe_trace_record rec = {(const uint8_t *)f[0].via.bin.ptr, f[0].via.bin.size, pe_mp_uint(r, &f[1], "site"),
                               (uint32_t)pe_mp_uint(r, &f[2], "externals"), (uint8_t)pe_mp_uint(r, &f[3], "rules"),
                               &seq};
        if (r->ok) pe_trace_adopt(&rec);
        if (seq.progs) pe_program_seq_free(&seq);
    }
    return pe_mp_doc_close(&d, NULL, err, err_len);
}

void pe_trace_persist_load(uint64_t ir_fingerprint)
{
    char path[64], err[600];
    size_t len = 0;
    if (!file_name(ir_fingerprint, path, sizeof path)) return;
    /* sealed with this user's key (diskcache.c): a file that is not is
     * refused there with a warning, before any of it is decoded */
    uint8_t *data = pe_diskcache_read(path, &len);
    if (!data) return;
    bool stale = false;
    if (len > MAX_FILE || !pe_trace_persist_decode(data, len, &stale, err, sizeof err)) {
        pe_log_message(PE_LOG_WARN, "the saved trace cache %s is unusable (%s): removed, it is rebuilt", path,
                       len > MAX_FILE ? "too large" : err);
        pe_diskcache_remove(path);
    } else if (stale) { /* an older format: nothing wrong, just rebuilt */
        pe_log_message(PE_LOG_DEBUG, "the saved trace cache %s has an older format: removed, it is rebuilt", path);
        pe_diskcache_remove(path);
    }
    free(data);
}
