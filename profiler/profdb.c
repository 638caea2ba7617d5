/* profdb.c — the profile database's codec (msgpack through irformat/msgblob)
 * and the attribution of kernel time to call sites.  The layout is in
 * docs/profile-format.md: a top-level map, records as fixed-order arrays
 * (compact: a run has thousands of events), counters as a name→value map.
 * The decoder checks every index and weight, so the reports never need to.
 * It reads every version up to PE_PROF_VERSION (a version 1 site record has
 * no stored-unread pair: 0), and writes the latest. */
#define _GNU_SOURCE
#include "profdb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../irformat/msgblob.h"

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

/* ----------------------------------------------------------------- encode */

uint8_t *pe_profile_encode(const pe_profile *p, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 14);
    pe_mp_pack_key_str(&pk, "program", p->program);
    pe_mp_pack_key_str(&pk, "host", p->host);
    pe_mp_pack_key_str(&pk, "pe_version", p->pe_version);
    pe_mp_pack_key_str(&pk, "device", p->device);
    pe_mp_pack_key_uint(&pk, "pid", p->pid);
    pe_mp_pack_key_uint(&pk, "start_unix_ns", p->start_unix_ns);
    pe_mp_pack_key_uint(&pk, "wall_ns", p->wall_ns);
    pe_mp_pack_key_uint(&pk, "threads", p->threads);

    pe_mp_pack_str(&pk, "sites");
    msgpack_pack_array(&pk, p->n_sites);
    for (uint32_t i = 0; i < p->n_sites; i++) {
        const pe_prof_site *s = &p->sites[i];
        msgpack_pack_array(&pk, SITE_FIELDS);
        pe_mp_pack_str(&pk, s->file);
        pe_mp_pack_str(&pk, s->function);
        msgpack_pack_int64(&pk, s->line);
        msgpack_pack_int64(&pk, s->column);
        const uint64_t counts[] = {s->calls,      s->reads,    s->read_bytes, s->read_ns,       s->writes,
                                   s->write_bytes, s->write_ns, s->copies,     s->copy_bytes,    s->copy_ns,
                                   s->waits,      s->wait_ns,  s->stored_unread, s->stored_unread_bytes};
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) msgpack_pack_uint64(&pk, counts[c]);
    }

    pe_mp_pack_str(&pk, "kernels");
    msgpack_pack_array(&pk, p->n_kernels);
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        const pe_prof_kernel *k = &p->kernels[i];
        msgpack_pack_array(&pk, KERNEL_FIELDS);
        msgpack_pack_uint64(&pk, k->hash);
        pe_mp_pack_str(&pk, k->name);
        pe_mp_pack_str(&pk, k->device);
        const uint64_t counts[] = {k->executions, k->time_ns, k->elements, k->bytes_read, k->bytes_written,
                                   k->compile_ns, k->served};
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) msgpack_pack_uint64(&pk, counts[c]);
        msgpack_pack_array(&pk, k->n_shares);
        for (uint32_t j = 0; j < k->n_shares; j++) {
            msgpack_pack_array(&pk, 2);
            msgpack_pack_uint32(&pk, k->shares[j].site);
            msgpack_pack_double(&pk, k->shares[j].weight);
        }
    }

    pe_mp_pack_str(&pk, "tracks");
    msgpack_pack_array(&pk, p->n_tracks);
    for (uint32_t i = 0; i < p->n_tracks; i++) pe_mp_pack_str(&pk, p->tracks[i]);

    pe_mp_pack_str(&pk, "events");
    msgpack_pack_array(&pk, p->n_events);
    for (uint32_t i = 0; i < p->n_events; i++) {
        const pe_prof_event *e = &p->events[i];
        msgpack_pack_array(&pk, EVENT_FIELDS);
        msgpack_pack_uint32(&pk, e->kind);
        msgpack_pack_uint32(&pk, e->track);
        msgpack_pack_uint64(&pk, e->start_ns);
        msgpack_pack_uint64(&pk, e->dur_ns);
        msgpack_pack_int64(&pk, e->ref);
        msgpack_pack_uint64(&pk, e->bytes);
    }
    pe_mp_pack_key_uint(&pk, "events_dropped", p->events_dropped);

    pe_mp_pack_str(&pk, "counters");
    msgpack_pack_map(&pk, p->n_counters);
    for (uint32_t i = 0; i < p->n_counters; i++) pe_mp_pack_key_uint(&pk, p->counters[i].name, p->counters[i].value);

    uint8_t *blob = pe_blob_frame(PE_PROF_MAGIC, PE_PROF_VERSION, &sb, len);
    msgpack_sbuffer_destroy(&sb);
    return blob;
}

/* ----------------------------------------------------------------- decode */

/* The fields of a fixed-order record, or NULL (error) if it is not an array
 * of exactly n. */
static const msgpack_object *record(pe_mp_reader *r, const msgpack_object *o, uint32_t n, const char *what, uint32_t i)
{
    uint32_t got;
    const msgpack_object *f = pe_mp_array(r, o, what, &got);
    if (f && got != n) {
        pe_mp_fail(r, "%s %u has %u fields, expected %u", what, i, got, n);
        return NULL;
    }
    return f;
}

static void *alloc_array(pe_mp_reader *r, uint32_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) pe_mp_fail(r, "out of memory");
    return p;
}

bool pe_profile_decode(pe_profile *p, const void *data, size_t len, char *err, size_t err_len)
{
    memset(p, 0, sizeof *p);
    pe_blob blob;
    char why[256];
    if (!pe_blob_open(&blob, data, len, PE_PROF_MAGIC, PE_PROF_VERSION, NULL, why, sizeof why)) {
        snprintf(err, err_len, "not a readable PE profile: %s", why);
        return false;
    }
    pe_mp_reader r = {.ok = true};
    const msgpack_object *root = &blob.root;
    if (root->type != MSGPACK_OBJECT_MAP) pe_mp_fail(&r, "the root is not a map");
    p->program = pe_mp_strdup(&r, pe_mp_get(&r, root, "program"), "program");
    p->host = pe_mp_strdup(&r, pe_mp_get(&r, root, "host"), "host");
    p->pe_version = pe_mp_strdup(&r, pe_mp_get(&r, root, "pe_version"), "pe_version");
    p->device = pe_mp_strdup(&r, pe_mp_get(&r, root, "device"), "device");
    p->pid = pe_mp_uint(&r, pe_mp_get(&r, root, "pid"), "pid");
    p->start_unix_ns = pe_mp_uint(&r, pe_mp_get(&r, root, "start_unix_ns"), "start_unix_ns");
    p->wall_ns = pe_mp_uint(&r, pe_mp_get(&r, root, "wall_ns"), "wall_ns");
    p->threads = pe_mp_uint(&r, pe_mp_get(&r, root, "threads"), "threads");
    p->events_dropped = pe_mp_uint(&r, pe_mp_get(&r, root, "events_dropped"), "events_dropped");

    uint32_t n;
    const msgpack_object *items = pe_mp_array(&r, pe_mp_get(&r, root, "sites"), "sites", &n);
    if (r.ok && (p->sites = alloc_array(&r, n, sizeof *p->sites))) p->n_sites = n;
    uint32_t site_fields = blob.version == 1 ? SITE_FIELDS_V1 : SITE_FIELDS;
    for (uint32_t i = 0; r.ok && i < p->n_sites; i++) {
        const msgpack_object *f = record(&r, &items[i], site_fields, "site", i);
        if (!f) break;
        pe_prof_site *s = &p->sites[i];
        s->file = pe_mp_strdup(&r, &f[0], "site file");
        s->function = pe_mp_strdup(&r, &f[1], "site function");
        s->line = pe_mp_int(&r, &f[2], "site line");
        s->column = pe_mp_int(&r, &f[3], "site column");
        uint64_t *counts[] = {&s->calls,      &s->reads,    &s->read_bytes, &s->read_ns,    &s->writes, &s->write_bytes,
                              &s->write_ns,   &s->copies,   &s->copy_bytes, &s->copy_ns,    &s->waits,  &s->wait_ns,
                              &s->stored_unread, &s->stored_unread_bytes};
        for (uint32_t c = 0; c < site_fields - 4; c++) *counts[c] = pe_mp_uint(&r, &f[4 + c], "site counter");
    }

    items = pe_mp_array(&r, pe_mp_get(&r, root, "kernels"), "kernels", &n);
    if (r.ok && (p->kernels = alloc_array(&r, n, sizeof *p->kernels))) p->n_kernels = n;
    for (uint32_t i = 0; r.ok && i < p->n_kernels; i++) {
        const msgpack_object *f = record(&r, &items[i], KERNEL_FIELDS, "kernel", i);
        if (!f) break;
        pe_prof_kernel *k = &p->kernels[i];
        k->hash = pe_mp_uint(&r, &f[0], "kernel hash");
        k->name = pe_mp_strdup(&r, &f[1], "kernel name");
        k->device = pe_mp_strdup(&r, &f[2], "kernel device");
        uint64_t served = 0;
        uint64_t *counts[] = {&k->executions, &k->time_ns, &k->elements, &k->bytes_read, &k->bytes_written,
                              &k->compile_ns, &served};
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) *counts[c] = pe_mp_uint(&r, &f[3 + c], "kernel counter");
        if (served >= PE_SERVED__COUNT) pe_mp_fail(&r, "kernel %u: unknown cache %llu", i, (unsigned long long)served);
        k->served = (uint32_t)served;
        uint32_t ns;
        const msgpack_object *shares = pe_mp_array(&r, &f[10], "kernel sites", &ns);
        if (!r.ok || !(k->shares = alloc_array(&r, ns, sizeof *k->shares))) break;
        k->n_shares = ns;
        double total = 0;
        for (uint32_t j = 0; r.ok && j < ns; j++) {
            const msgpack_object *sf = record(&r, &shares[j], 2, "kernel share", j);
            if (!sf) break;
            uint64_t site = pe_mp_uint(&r, &sf[0], "share site");
            double w = pe_mp_double(&r, &sf[1], "share weight");
            if (site >= p->n_sites) pe_mp_fail(&r, "kernel %u names site %llu of %u", i, (unsigned long long)site, p->n_sites);
            if (!(w >= 0 && w <= 1)) pe_mp_fail(&r, "kernel %u: weight %g outside [0, 1]", i, w);
            k->shares[j] = (pe_prof_share){(uint32_t)site, w};
            total += w;
        }
        if (r.ok && ns && fabs(total - 1) > 1e-6) pe_mp_fail(&r, "kernel %u: weights sum to %.9g, not 1", i, total);
    }

    items = pe_mp_array(&r, pe_mp_get(&r, root, "tracks"), "tracks", &n);
    if (r.ok && (p->tracks = alloc_array(&r, n, sizeof *p->tracks))) p->n_tracks = n;
    for (uint32_t i = 0; r.ok && i < p->n_tracks; i++) p->tracks[i] = pe_mp_strdup(&r, &items[i], "track");

    items = pe_mp_array(&r, pe_mp_get(&r, root, "events"), "events", &n);
    if (r.ok && (p->events = alloc_array(&r, n, sizeof *p->events))) p->n_events = n;
    for (uint32_t i = 0; r.ok && i < p->n_events; i++) {
        const msgpack_object *f = record(&r, &items[i], EVENT_FIELDS, "event", i);
        if (!f) break;
        pe_prof_event *e = &p->events[i];
        uint64_t kind = pe_mp_uint(&r, &f[0], "event kind"), track = pe_mp_uint(&r, &f[1], "event track");
        e->start_ns = pe_mp_uint(&r, &f[2], "event start");
        e->dur_ns = pe_mp_uint(&r, &f[3], "event duration");
        e->ref = pe_mp_int(&r, &f[4], "event ref");
        e->bytes = pe_mp_uint(&r, &f[5], "event bytes");
        if (kind >= PE_EV__COUNT) pe_mp_fail(&r, "event %u: unknown kind %llu", i, (unsigned long long)kind);
        if (track >= p->n_tracks) pe_mp_fail(&r, "event %u: track %llu of %u", i, (unsigned long long)track, p->n_tracks);
        e->kind = (uint32_t)kind;
        e->track = (uint32_t)track;
        uint64_t limit = kind == PE_EV_kernel ? p->n_kernels : p->n_sites;
        bool refers = kind == PE_EV_kernel || kind == PE_EV_wait || kind == PE_EV_read || kind == PE_EV_write;
        if (e->ref < -1 || (e->ref >= 0 && (!refers || (uint64_t)e->ref >= limit)))
            pe_mp_fail(&r, "event %u refers to %lld, which does not exist", i, (long long)e->ref);
    }

    const msgpack_object *counters = pe_mp_get(&r, root, "counters");
    if (r.ok && counters->type != MSGPACK_OBJECT_MAP) pe_mp_fail(&r, "counters: expected a map");
    if (r.ok && (p->counters = alloc_array(&r, counters->via.map.size, sizeof *p->counters)))
        p->n_counters = counters->via.map.size;
    for (uint32_t i = 0; r.ok && i < p->n_counters; i++) {
        p->counters[i].name = pe_mp_strdup(&r, &counters->via.map.ptr[i].key, "counter name");
        p->counters[i].value = pe_mp_uint(&r, &counters->via.map.ptr[i].val, "counter value");
    }
    pe_blob_close(&blob);
    if (!r.ok) {
        snprintf(err, err_len, "malformed PE profile: %s", r.err);
        pe_profile_free(p);
        return false;
    }
    return true;
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
