/* profdb.c — the profile database's codec (msgpack through irformat/msgblob)
 * and the attribution of kernel time to call sites.  The layout is in
 * docs/profile-format.md: a top-level map, records as fixed-order arrays
 * (compact: a run has thousands of events), counters as a name→value map.
 * The decoder checks every index and weight, so the reports never need to.
 * It reads every version up to PE_PROF_VERSION (a version 1 site record has
 * no stored-unread pair: 0; a version 2 file has no macro-cache counters
 * and an older pool capacity, which the reports say), and writes the
 * latest. */
#define _GNU_SOURCE
#include "profdb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../irformat/msgfields.h"

#define SITE_FIELDS 18
#define SITE_FIELDS_V1 16 /* before stored_unread, stored_unread_bytes */
#define KERNEL_FIELDS 11
#define EVENT_FIELDS 6
#define MAX_PROFILE_BYTES ((size_t)1 << 31)

const char *pe_prof_served_name(int s)
{
    static const char *const names[] = {
#define PE_PROF_SERVED_NAME(n) #n,
        PE_PROF_SERVED(PE_PROF_SERVED_NAME)
#undef PE_PROF_SERVED_NAME
    };
    return s >= 0 && s < PE_SERVED__COUNT ? names[s] : "?";
}

const char *pe_prof_event_name(int kind)
{
    static const char *const names[] = {
#define PE_PROF_EVENT_NAME(n) #n,
        PE_PROF_EVENT_KINDS(PE_PROF_EVENT_NAME)
#undef PE_PROF_EVENT_NAME
    };
    return kind >= 0 && kind < PE_EV__COUNT ? names[kind] : "?";
}

/* ------------------------------------------------------------------ fields
 * Each record's fields in the format's order (docs/profile-format.md), for
 * the encoder and the decoder both; a kernel's shares, the tracks, the
 * events and the counters are packed and read here. */

/* The top-level map's scalar entries: the first PROFILE_HEAD before
 * "sites", "events_dropped" after "events". */
#define PROFILE_HEAD 8
static const pe_mp_field profile_fields[] = {
    PE_MP_FIELD(pe_profile, STR, program, "program"),
    PE_MP_FIELD(pe_profile, STR, host, "host"),
    PE_MP_FIELD(pe_profile, STR, pe_version, "pe_version"),
    PE_MP_FIELD(pe_profile, STR, device, "device"),
    PE_MP_FIELD(pe_profile, U64, pid, "pid"),
    PE_MP_FIELD(pe_profile, U64, start_unix_ns, "start_unix_ns"),
    PE_MP_FIELD(pe_profile, U64, wall_ns, "wall_ns"),
    PE_MP_FIELD(pe_profile, U64, threads, "threads"),
    PE_MP_FIELD(pe_profile, U64, events_dropped, "events_dropped"),
};

#define SITE_COUNTER(member) PE_MP_FIELD(pe_prof_site, U64, member, "site counter")
static const pe_mp_field site_fields[SITE_FIELDS] = { /* a version 1 site: the first SITE_FIELDS_V1 */
    PE_MP_FIELD(pe_prof_site, STR, file, "site file"),
    PE_MP_FIELD(pe_prof_site, STR, function, "site function"),
    PE_MP_FIELD(pe_prof_site, I64, line, "site line"),
    PE_MP_FIELD(pe_prof_site, I64, column, "site column"),
    SITE_COUNTER(calls),               SITE_COUNTER(reads),               SITE_COUNTER(read_bytes),
    SITE_COUNTER(read_ns),             SITE_COUNTER(writes),              SITE_COUNTER(write_bytes),
    SITE_COUNTER(write_ns),            SITE_COUNTER(copies),              SITE_COUNTER(copy_bytes),
    SITE_COUNTER(copy_ns),             SITE_COUNTER(waits),               SITE_COUNTER(wait_ns),
    SITE_COUNTER(stored_unread),       SITE_COUNTER(stored_unread_bytes),
};

#define KERNEL_COUNTER(kind, member) PE_MP_FIELD(pe_prof_kernel, kind, member, "kernel counter")
enum { KERNEL_SERVED = 9, KERNEL_SHARES };
_Static_assert(KERNEL_SHARES == KERNEL_FIELDS - 1, "a kernel's shares are its last field");
static const pe_mp_field kernel_fields[KERNEL_SHARES] = { /* then its shares */
    PE_MP_FIELD(pe_prof_kernel, U64, hash, "kernel hash"),
    PE_MP_FIELD(pe_prof_kernel, STR, name, "kernel name"),
    PE_MP_FIELD(pe_prof_kernel, STR, device, "kernel device"),
    KERNEL_COUNTER(U64, executions), KERNEL_COUNTER(U64, time_ns),       KERNEL_COUNTER(U64, elements),
    KERNEL_COUNTER(U64, bytes_read), KERNEL_COUNTER(U64, bytes_written), KERNEL_COUNTER(U64, compile_ns),
    KERNEL_COUNTER(U32, served),
};

static const pe_mp_field share_fields[] = {
    PE_MP_FIELD(pe_prof_share, U32, site, "share site"),
    PE_MP_FIELD(pe_prof_share, F64, weight, "share weight"),
};

static const pe_mp_field event_fields[EVENT_FIELDS] = {
    PE_MP_FIELD(pe_prof_event, U32, kind, "event kind"),
    PE_MP_FIELD(pe_prof_event, U32, track, "event track"),
    PE_MP_FIELD(pe_prof_event, U64, start_ns, "event start"),
    PE_MP_FIELD(pe_prof_event, U64, dur_ns, "event duration"),
    PE_MP_FIELD(pe_prof_event, I64, ref, "event ref"),
    PE_MP_FIELD(pe_prof_event, U64, bytes, "event bytes"),
};

/* ----------------------------------------------------------------- encode */

uint8_t *pe_profile_encode(const pe_profile *p, size_t *len)
{
    pe_mp_writer w;
    msgpack_packer *pk = pe_mp_writer_start(&w);
    msgpack_pack_map(pk, 14);
    pe_mp_pack_keyed(pk, p, profile_fields, PROFILE_HEAD);

    pe_mp_pack_str(pk, "sites");
    msgpack_pack_array(pk, p->n_sites);
    for (uint32_t i = 0; i < p->n_sites; i++) {
        msgpack_pack_array(pk, SITE_FIELDS);
        pe_mp_pack_fields(pk, &p->sites[i], site_fields, SITE_FIELDS);
    }

    pe_mp_pack_str(pk, "kernels");
    msgpack_pack_array(pk, p->n_kernels);
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        const pe_prof_kernel *k = &p->kernels[i];
        msgpack_pack_array(pk, KERNEL_FIELDS);
        pe_mp_pack_fields(pk, k, kernel_fields, KERNEL_SHARES);
        msgpack_pack_array(pk, k->n_shares);
        for (uint32_t j = 0; j < k->n_shares; j++) {
            msgpack_pack_array(pk, PE_MP_N_FIELDS(share_fields));
            pe_mp_pack_fields(pk, &k->shares[j], share_fields, PE_MP_N_FIELDS(share_fields));
        }
    }

    pe_mp_pack_str(pk, "tracks");
    pe_mp_pack_strs(pk, p->tracks, p->n_tracks);

    pe_mp_pack_str(pk, "events");
    msgpack_pack_array(pk, p->n_events);
    for (uint32_t i = 0; i < p->n_events; i++) {
        msgpack_pack_array(pk, EVENT_FIELDS);
        pe_mp_pack_fields(pk, &p->events[i], event_fields, EVENT_FIELDS);
    }
    pe_mp_pack_keyed(pk, p, profile_fields + PROFILE_HEAD, 1); /* events_dropped */

    pe_mp_pack_str(pk, "counters");
    msgpack_pack_map(pk, p->n_counters);
    for (uint32_t i = 0; i < p->n_counters; i++) pe_mp_pack_key_uint(pk, p->counters[i].name, p->counters[i].value);

    return pe_mp_writer_frame(&w, PE_PROF_MAGIC, PE_PROF_VERSION, len);
}

/* ----------------------------------------------------------------- decode */

bool pe_profile_decode(pe_profile *p, const void *data, size_t len, char *err, size_t err_len)
{
    memset(p, 0, sizeof *p);
    pe_mp_doc d;
    if (!pe_mp_doc_open(&d, data, len, PE_PROF_MAGIC, PE_PROF_VERSION, "PE profile", err, err_len)) return false;
    pe_mp_reader *r = &d.r;
    const msgpack_object *root = &d.blob.root, *items;
    if (root->type != MSGPACK_OBJECT_MAP) pe_mp_fail(r, "the root is not a map");
    pe_mp_read_keyed(r, root, p, profile_fields, PE_MP_N_FIELDS(profile_fields));

    p->sites = pe_mp_items(r, pe_mp_get(r, root, "sites"), "sites", sizeof *p->sites, &items, &p->n_sites);
    uint32_t site_fields_n = d.blob.version == 1 ? SITE_FIELDS_V1 : SITE_FIELDS;
    for (uint32_t i = 0; r->ok && i < p->n_sites; i++) {
        const msgpack_object *f = pe_mp_record(r, &items[i], site_fields_n, "site", i);
        if (!f) break;
        pe_mp_read_fields(r, f, &p->sites[i], site_fields, site_fields_n, NULL);
    }

    p->kernels = pe_mp_items(r, pe_mp_get(r, root, "kernels"), "kernels", sizeof *p->kernels, &items, &p->n_kernels);
    for (uint32_t i = 0; r->ok && i < p->n_kernels; i++) {
        const msgpack_object *f = pe_mp_record(r, &items[i], KERNEL_FIELDS, "kernel", i);
        if (!f) break;
        pe_prof_kernel *k = &p->kernels[i];
        uint64_t raw[KERNEL_SHARES];
        pe_mp_read_fields(r, f, k, kernel_fields, KERNEL_SHARES, raw);
        if (raw[KERNEL_SERVED] >= PE_SERVED__COUNT)
            pe_mp_fail(r, "kernel %u: unknown cache %llu", i, (unsigned long long)raw[KERNEL_SERVED]);
        const msgpack_object *shares;
        if (!(k->shares = pe_mp_items(r, &f[KERNEL_SHARES], "kernel sites", sizeof *k->shares, &shares, &k->n_shares)))
            break;
        double total = 0;
        for (uint32_t j = 0; r->ok && j < k->n_shares; j++) {
            const msgpack_object *sf = pe_mp_record(r, &shares[j], PE_MP_N_FIELDS(share_fields), "kernel share", j);
            if (!sf) break;
            uint64_t raw[PE_MP_N_FIELDS(share_fields)];
            pe_mp_read_fields(r, sf, &k->shares[j], share_fields, PE_MP_N_FIELDS(share_fields), raw);
            uint64_t site = raw[0];
            double w = k->shares[j].weight;
            if (site >= p->n_sites) pe_mp_fail(r, "kernel %u names site %llu of %u", i, (unsigned long long)site, p->n_sites);
            if (!(w >= 0 && w <= 1)) pe_mp_fail(r, "kernel %u: weight %g outside [0, 1]", i, w);
            total += w;
        }
        if (r->ok && k->n_shares && fabs(total - 1) > 1e-6) pe_mp_fail(r, "kernel %u: weights sum to %.9g, not 1", i, total);
    }

    p->tracks = pe_mp_strs(r, pe_mp_get(r, root, "tracks"), "tracks", "track", &p->n_tracks);

    p->events = pe_mp_items(r, pe_mp_get(r, root, "events"), "events", sizeof *p->events, &items, &p->n_events);
    for (uint32_t i = 0; r->ok && i < p->n_events; i++) {
        const msgpack_object *f = pe_mp_record(r, &items[i], EVENT_FIELDS, "event", i);
        if (!f) break;
        pe_prof_event *e = &p->events[i];
        uint64_t raw[EVENT_FIELDS];
        pe_mp_read_fields(r, f, e, event_fields, EVENT_FIELDS, raw);
        uint64_t kind = raw[0], track = raw[1];
        if (kind >= PE_EV__COUNT) pe_mp_fail(r, "event %u: unknown kind %llu", i, (unsigned long long)kind);
        if (track >= p->n_tracks) pe_mp_fail(r, "event %u: track %llu of %u", i, (unsigned long long)track, p->n_tracks);
        uint64_t limit = kind == PE_EV_kernel ? p->n_kernels : p->n_sites;
        bool refers = kind == PE_EV_kernel || kind == PE_EV_wait || kind == PE_EV_read || kind == PE_EV_write;
        if (e->ref < -1 || (e->ref >= 0 && (!refers || (uint64_t)e->ref >= limit)))
            pe_mp_fail(r, "event %u refers to %lld, which does not exist", i, (long long)e->ref);
    }

    const msgpack_object *counters = pe_mp_get(r, root, "counters");
    if (r->ok && counters->type != MSGPACK_OBJECT_MAP) pe_mp_fail(r, "counters: expected a map");
    if (r->ok && (p->counters = pe_mp_alloc(r, counters->via.map.size, sizeof *p->counters)))
        p->n_counters = counters->via.map.size;
    for (uint32_t i = 0; r->ok && i < p->n_counters; i++) {
        p->counters[i].name = pe_mp_strdup(r, &counters->via.map.ptr[i].key, "counter name");
        p->counters[i].value = pe_mp_uint(r, &counters->via.map.ptr[i].val, "counter value");
    }
    p->format_version = d.blob.version;
    if (pe_mp_doc_close(&d, "PE profile", err, err_len)) return true;
    pe_profile_free(p);
    return false;
}

bool pe_profile_load(pe_profile *p, const char *path, char *err, size_t err_len)
{
    size_t len;
    uint8_t *data = pe_blob_read_file(path, MAX_PROFILE_BYTES, &len, err, err_len);
    if (!data) {
        memset(p, 0, sizeof *p);
        return false;
    }
    char why[300];
    bool ok = pe_profile_decode(p, data, len, why, sizeof why);
    if (!ok) snprintf(err, err_len, "%s: %s", path, why);
    free(data);
    return ok;
}

bool pe_profile_save(const pe_profile *p, const char *path, char *err, size_t err_len)
{
    size_t len;
    uint8_t *blob = pe_profile_encode(p, &len);
    if (!blob) return snprintf(err, err_len, "%s: out of memory", path), false;
    bool ok = pe_blob_write_file(path, blob, len, err, err_len);
    free(blob);
    return ok;
}

void pe_profile_free(pe_profile *p)
{
    free(p->program), free(p->host), free(p->pe_version), free(p->device);
    for (uint32_t i = 0; i < p->n_sites; i++) free(p->sites[i].file), free(p->sites[i].function);
    for (uint32_t i = 0; i < p->n_kernels; i++)
        free(p->kernels[i].name), free(p->kernels[i].device), free(p->kernels[i].shares);
    for (uint32_t i = 0; i < p->n_tracks; i++) free(p->tracks[i]);
    for (uint32_t i = 0; i < p->n_counters; i++) free(p->counters[i].name);
    free(p->sites), free(p->kernels), free(p->tracks), free(p->events), free(p->counters);
    memset(p, 0, sizeof *p);
}

uint64_t pe_profile_counter(const pe_profile *p, const char *name)
{
    for (uint32_t i = 0; i < p->n_counters; i++)
        if (p->counters[i].name && strcmp(p->counters[i].name, name) == 0) return p->counters[i].value;
    return 0;
}

bool pe_profile_has_counter(const pe_profile *p, const char *name)
{
    for (uint32_t i = 0; i < p->n_counters; i++)
        if (p->counters[i].name && strcmp(p->counters[i].name, name) == 0) return true;
    return false;
}

/* ------------------------------------------------------------ attribution */

/* Waits are not part of it: while the application waited, kernels ran whose
 * time is already charged to the lines that asked for them. */
uint64_t pe_profile_site_direct_ns(const pe_prof_site *s) { return s->read_ns + s->write_ns + s->copy_ns; }

void pe_profile_attribute(const pe_profile *p, double *compute_ns, double *direct_ns)
{
    for (uint32_t i = 0; i < p->n_sites; i++) {
        compute_ns[i] = 0;
        direct_ns[i] = (double)pe_profile_site_direct_ns(&p->sites[i]);
    }
    for (uint32_t k = 0; k < p->n_kernels; k++)
        for (uint32_t j = 0; j < p->kernels[k].n_shares; j++)
            compute_ns[p->kernels[k].shares[j].site] += p->kernels[k].shares[j].weight * (double)p->kernels[k].time_ns;
}
