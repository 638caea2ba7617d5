/* collect.c — the collector: site (PC) records, kernel records with the
 * sites they cover, runtime counters and a bounded timeline, gathered while
 * the program runs with PE_PROFILE and written as a profile database at
 * pe_shutdown.
 *
 * Kernel time goes to sites by weight: each port a kernel computes brings its
 * op's cost per element from the catalog (ops.def), and a site's weight is the
 * cost of its ports over the kernel's total — so a fused exp+mul+add kernel
 * charges the exp's line most.  Kernel records are keyed by the kernel-IR
 * hash, the device and the covered (site, op) list, so one kernel shape asked
 * for from two places stays two records.
 *
 * Stored, never read: a kernel or the interpreter that stores a value marks
 * its port (prof_stored), and a program that loads it or the application
 * reading it (pe_read, pe_map) marks it read (prof_read).  A port that dies
 * stored but unread (exec/base/port.c calls back), or is still so when the
 * run ends, charges its bytes to the line that asked for it: store traffic
 * nothing needed, the sign of a value demanded (a hint, a result kept) but
 * never used.  The marks are set only here, so without PE_PROFILE a port's
 * death tests two false flags and nothing more.
 *
 * Hooks come from the application threads (sites, reads, waits) and from the
 * E-scheduler (kernels, compiles): one mutex guards the tables; counters are
 * atomics, so the pool's workers add their busy time without it.  The marks
 * on ports need no mutex of their own: the hooks that set them, and port.c's
 * call back, run under the runtime lock, as everything that touches a port. */
#define _GNU_SOURCE
#include "collect.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "profdb.h"
#include "report.h"
#include "../exec/base/grow.h"
#include "../exec/base/runtime.h"
#include "../exec/base/site.h"
#define MAX_EVENTS (1u << 19) /* 20 MB of timeline at most; later events are counted as dropped */

bool pe_prof_on;

typedef struct {
    const pe_site *key;
    pe_prof_site rec;
} site_slot;

typedef struct {
    uint64_t key;
    pe_prof_kernel rec;
} kernel_slot;

static struct {
    pthread_mutex_t mu;
    char path[4096];
    uint64_t start_ns, start_unix_ns;
    char device[512];
    char version[64]; /* PE's, as pe_version() says */
    int threads;
    unsigned generation; /* pe_init cycles: thread tracks are per cycle */
    unsigned cycle;
    site_slot *sites;
    uint32_t n_sites, sites_cap;
    uint32_t *site_index; /* open addressing: site index + 1, 0 empty */
    uint32_t site_index_cap;
    kernel_slot *kernels;
    uint32_t n_kernels, kernels_cap;
    char **tracks;
    uint32_t n_tracks, tracks_cap;
    pe_prof_event *events;
    uint32_t n_events, events_cap;
    uint64_t events_dropped;
    _Atomic uint64_t counters[PE_PC__COUNT];
    bool out_of_memory;
} col = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local const char *thread_name;
static _Thread_local unsigned thread_generation;
static _Thread_local uint32_t thread_track;
static unsigned application_threads;

uint64_t pe_prof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void pe_prof_add(pe_prof_counter_id c, uint64_t v) { atomic_fetch_add_explicit(&col.counters[c], v, memory_order_relaxed); }

/* Room for `need` items (grow.h); running out of memory is remembered:
 * the profile then says it is incomplete. */
#define GROW(arr, cap, need) (PE_GROW(arr, cap, need) || (col.out_of_memory = true, false))

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* ------------------------------------------------------------ lifecycle */

static void unread_died(const pe_port *p); /* port.c's call when a stored, unread value dies */

void pe_prof_start(const char *device_name, const char *version, int threads, const char *setting)
{
    const char *v = setting ? setting : getenv("PE_PROFILE");
    pe_prof_on = false;
    if (!v || !*v || strcmp(v, "0") == 0) return;
    if (strcmp(v, "1") == 0) {
        if (++col.cycle == 1) /* a later pe_init in the same process gets its own file */
            snprintf(col.path, sizeof col.path, "pe-profile.%s.%d.pep", program_invocation_short_name, (int)getpid());
        else
            snprintf(col.path, sizeof col.path, "pe-profile.%s.%d.%u.pep", program_invocation_short_name, (int)getpid(),
                     col.cycle);
    } else {
        snprintf(col.path, sizeof col.path, "%s", v);
    }
    snprintf(col.device, sizeof col.device, "%s", device_name);
    snprintf(col.version, sizeof col.version, "%s", version);
    col.threads = threads;
    col.generation++;
    application_threads = 0;
    for (int c = 0; c < PE_PC__COUNT; c++) atomic_store(&col.counters[c], 0);
    col.counters[PE_PC_pool_threads] = (uint64_t)threads;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    col.start_unix_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    col.start_ns = pe_prof_now();
    pe_port_unread_dies_to(unread_died);
    pe_prof_on = true;
}

void pe_prof_name_thread(const char *name) { thread_name = name; }

static uint32_t add_track(const char *name)
{
    for (uint32_t i = 0; i < col.n_tracks; i++)
        if (strcmp(col.tracks[i], name) == 0) return i;
    char *copy = strdup(name);
    if (!copy || !GROW(col.tracks, col.tracks_cap, col.n_tracks + 1)) {
        free(copy);
        return 0;
    }
    col.tracks[col.n_tracks] = copy;
    return col.n_tracks++;
}

uint32_t pe_prof_track(const char *name)
{
    pthread_mutex_lock(&col.mu);
    uint32_t t = add_track(name);
    pthread_mutex_unlock(&col.mu);
    return t;
}

/* The calling thread's track; the caller holds col.mu. */
static uint32_t my_track(void)
{
    if (thread_generation != col.generation) {
        char name[64];
        if (thread_name) snprintf(name, sizeof name, "%s", thread_name);
        else if (application_threads++ == 0) snprintf(name, sizeof name, "application");
        else snprintf(name, sizeof name, "application thread %u", application_threads);
        thread_track = add_track(name);
        thread_generation = col.generation;
    }
    return thread_track;
}

static void add_event(pe_prof_event_kind kind, uint32_t track, uint64_t start, uint64_t end, int64_t ref, uint64_t bytes)
{
    if (col.n_events >= MAX_EVENTS ||
        !GROW(col.events, col.events_cap, col.n_events + 1)) {
        col.events_dropped++;
        return;
    }
    col.events[col.n_events++] = (pe_prof_event){kind, track, start > col.start_ns ? start - col.start_ns : 0,
                                                  end > start ? end - start : 0, ref, bytes};
}

/* ------------------------------------------------------------------ sites */

/* The index of a site's record, made on first use; UINT32_MAX when out of
 * memory.  The caller holds col.mu. */
static uint32_t site_of(const pe_site *s)
{
    if (!s) s = pe_site_from_address(NULL);
    if (col.n_sites * 2 >= col.site_index_cap) { /* rehash at half load */
        uint32_t cap = col.site_index_cap ? col.site_index_cap * 2 : 256;
        uint32_t *index = calloc(cap, sizeof *index);
        if (!index) return col.out_of_memory = true, UINT32_MAX;
        for (uint32_t i = 0; i < col.n_sites; i++) {
            uint32_t h = (uint32_t)mix(0, (uintptr_t)col.sites[i].key) & (cap - 1);
            while (index[h]) h = (h + 1) & (cap - 1);
            index[h] = i + 1;
        }
        free(col.site_index);
        col.site_index = index;
        col.site_index_cap = cap;
    }
    uint32_t h = (uint32_t)mix(0, (uintptr_t)s) & (col.site_index_cap - 1);
    for (; col.site_index[h]; h = (h + 1) & (col.site_index_cap - 1))
        if (col.sites[col.site_index[h] - 1].key == s) return col.site_index[h] - 1;
    if (!GROW(col.sites, col.sites_cap, col.n_sites + 1)) return UINT32_MAX;
    site_slot *slot = &col.sites[col.n_sites];
    memset(slot, 0, sizeof *slot);
    slot->key = s;
    slot->rec.file = (char *)(s->file ? s->file : "?");
    slot->rec.function = (char *)(s->func ? s->func : "?");
    slot->rec.line = s->line;
    slot->rec.column = pe_site_column(s);
    col.site_index[h] = col.n_sites + 1;
    return col.n_sites++;
}

void pe_prof_call(const pe_site *s)
{
    pthread_mutex_lock(&col.mu);
    uint32_t i = site_of(s);
    if (i != UINT32_MAX) col.sites[i].rec.calls++;
    pthread_mutex_unlock(&col.mu);
    pe_prof_add(PE_PC_api_calls, 1);
}

void pe_prof_io_at(const pe_site *s, pe_prof_io kind, uint64_t bytes, uint64_t start_ns, uint64_t end_ns)
{
    uint64_t ns = end_ns > start_ns ? end_ns - start_ns : 0;
    pthread_mutex_lock(&col.mu);
    uint32_t i = site_of(s);
    if (i != UINT32_MAX) {
        pe_prof_site *r = &col.sites[i].rec;
        static const pe_prof_event_kind event_of[] = {PE_EV_read, PE_EV_write, PE_EV_to_host, PE_EV_wait};
        switch (kind) {
        case PE_PROF_READ: r->calls++, r->reads++, r->read_bytes += bytes, r->read_ns += ns; break;
        case PE_PROF_WRITE: r->writes++, r->write_bytes += bytes, r->write_ns += ns; break;
        case PE_PROF_COPY: r->copies++, r->copy_bytes += bytes, r->copy_ns += ns; break;
        case PE_PROF_WAIT: r->waits++, r->wait_ns += ns; break;
        }
        add_event(event_of[kind], my_track(), start_ns, end_ns, kind == PE_PROF_COPY ? -1 : (int64_t)i, bytes);
    }
    pthread_mutex_unlock(&col.mu);
    if (kind == PE_PROF_WAIT) pe_prof_add(PE_PC_result_waits, 1), pe_prof_add(PE_PC_result_wait_ns, ns);
}

/* A value stored and never read, dying (port.c) or alive at the end of the
 * run: its bytes go to the line that asked for it. */
static void unread_value(const pe_port *p)
{
    uint32_t i = site_of(p->site);
    if (i == UINT32_MAX) return;
    col.sites[i].rec.stored_unread++;
    col.sites[i].rec.stored_unread_bytes += pe_port_bytes(p);
}

static void unread_died(const pe_port *p)
{
    if (!pe_prof_on) return; /* pe_shutdown frees the ports after the profile is written */
    pthread_mutex_lock(&col.mu);
    unread_value(p);
    pthread_mutex_unlock(&col.mu);
}

void pe_prof_value_read(pe_port *p) { p->prof_read = true; }

/* ---------------------------------------------------------------- kernels */

#define MAX_SHARES 64

static const pe_port *member(const pe_prof_kernel_run *k, int m)
{
    return k->members ? pe_port_at(k->members[m]) : k->port;
}

/* The record of a kernel run, made on first use.  The caller holds col.mu. */
static int64_t kernel_of(const pe_prof_kernel_run *k, const char *name_prefix)
{
    uint32_t sites[MAX_SHARES];
    double cost[MAX_SHARES];
    int n = 0;
    uint64_t key = mix(k->hash, (uintptr_t)k->device);
    double total = 0;
    for (int m = 0; m < k->n_members; m++) {
        const pe_port *p = member(k, m);
        uint32_t s = site_of(p->site);
        if (s == UINT32_MAX) return -1;
        key = mix(mix(key, s), p->op);
        double c = pe_op_table[p->op].cost ? pe_op_table[p->op].cost : 1;
        total += c;
        int j = 0;
        while (j < n && sites[j] != s) j++;
        if (j == n && n == MAX_SHARES) j = n - 1; /* very wide kernels: the rest goes to the last site */
        if (j == n) sites[n] = s, cost[n++] = 0;
        cost[j] += c;
    }
    for (uint32_t i = 0; i < col.n_kernels; i++) /* few distinct kernels per program: a scan is enough */
        if (col.kernels[i].key == key) return i;
    if (!GROW(col.kernels, col.kernels_cap, col.n_kernels + 1)) return -1;
    kernel_slot *slot = &col.kernels[col.n_kernels];
    memset(slot, 0, sizeof *slot);
    slot->key = key;
    pe_prof_kernel *r = &slot->rec;
    r->hash = k->hash;
    r->device = strdup(k->device);
    char name[160];
    size_t len = (size_t)snprintf(name, sizeof name, "%s", name_prefix);
    for (int m = 0; m < k->n_members && len < sizeof name; m++)
        len += (size_t)snprintf(name + len, sizeof name - len, "%s%s", m ? "+" : "",
                                pe_op_table[member(k, m)->op].name);
    if (len >= sizeof name) strcpy(name + sizeof name - 4, "...");
    r->name = strdup(name);
    r->shares = calloc(n ? (size_t)n : 1, sizeof *r->shares);
    if (!r->device || !r->name || !r->shares) {
        free(r->device), free(r->name), free(r->shares);
        col.out_of_memory = true;
        return -1;
    }
    double given = 0;
    for (int j = 0; j < n; j++) { /* the last share takes the rounding rest: weights sum to 1 exactly */
        r->shares[j] = (pe_prof_share){sites[j], j == n - 1 ? 1.0 - given : cost[j] / total};
        given += r->shares[j].weight;
    }
    r->n_shares = (uint32_t)n;
    r->served = (uint32_t)k->served;
    r->compile_ns = k->compile_ns;
    return col.n_kernels++;
}

static void record_run(const pe_prof_kernel_run *k, const char *name_prefix, uint64_t start_ns, uint64_t end_ns,
                       int track)
{
    pthread_mutex_lock(&col.mu);
    int64_t i = kernel_of(k, name_prefix);
    if (i >= 0) {
        pe_prof_kernel *r = &col.kernels[i].rec;
        r->executions++;
        r->time_ns += end_ns - start_ns;
        r->elements += (uint64_t)k->elements;
        r->bytes_read += (uint64_t)k->bytes_read;
        r->bytes_written += (uint64_t)k->bytes_written;
        add_event(PE_EV_kernel, track < 0 ? my_track() : (uint32_t)track, start_ns, end_ns, i, 0);
    }
    pthread_mutex_unlock(&col.mu);
}

void pe_prof_kernel_ran(const pe_prof_kernel_run *k, uint64_t start_ns, uint64_t end_ns, int track)
{
    for (int i = 0; i < k->n_params; i++) { /* a parameter bound to a member is an output */
        bool output = false;
        for (int m = 0; m < k->n_members && !output; m++) output = k->members[m] == k->params[i];
        pe_port *q = pe_port_at(k->params[i]);
        if (output) q->prof_stored = true;
        else q->prof_read = true;
    }
    record_run(k, "", start_ns, end_ns, track);
}

void pe_prof_interp(pe_port *p, uint64_t start_ns, uint64_t end_ns)
{
    p->prof_stored = true;
    for (int i = 0; i < p->n_in; i++) pe_port_at(p->in[i])->prof_read = true;
    pe_prof_kernel_run k = {.device = "interp", .port = p, .n_members = 1, .elements = p->numel,
                            .bytes_written = (int64_t)pe_port_bytes(p),
                            .served = PE_SERVED_interp};
    record_run(&k, "interp:", start_ns, end_ns, -1);
    pe_prof_add(PE_PC_interp_ops, 1);
    pe_prof_add(PE_PC_interp_ns, end_ns - start_ns);
}

void pe_prof_library_call(pe_port *p, uint64_t start_ns, uint64_t end_ns)
{
    pe_prof_kernel_run k = {.device = "library", .port = p, .n_members = 1, .elements = p->numel,
                            .bytes_written = (int64_t)pe_port_bytes(p), .served = PE_SERVED_none};
    record_run(&k, "library:", start_ns, end_ns, -1);
}

static void span(pe_prof_event_kind kind, uint64_t start_ns, uint64_t end_ns, uint64_t bytes, int track)
{
    pthread_mutex_lock(&col.mu);
    add_event(kind, track < 0 ? my_track() : (uint32_t)track, start_ns, end_ns, -1, bytes);
    pthread_mutex_unlock(&col.mu);
}

void pe_prof_compile(int kernels, uint64_t start_ns, uint64_t end_ns)
{
    pe_prof_add(PE_PC_compiles, 1);
    pe_prof_add(PE_PC_kernels_compiled, (uint64_t)kernels);
    pe_prof_add(PE_PC_compile_ns, end_ns - start_ns);
    span(PE_EV_compile, start_ns, end_ns, 0, -1);
}

void pe_prof_proggen(bool trace_hit, uint64_t lookup_ns, uint64_t start_ns, uint64_t end_ns)
{
    pe_prof_add(PE_PC_batches, 1);
    pe_prof_add(PE_PC_trace_lookups, 1);
    pe_prof_add(trace_hit ? PE_PC_trace_hits : PE_PC_trace_misses, 1);
    pe_prof_add(PE_PC_trace_lookup_ns, lookup_ns);
    if (trace_hit) return;
    pe_prof_add(PE_PC_proggen_runs, 1);
    pe_prof_add(PE_PC_proggen_ns, end_ns - start_ns);
    span(PE_EV_proggen, start_ns, end_ns, 0, -1);
}

void pe_prof_transfer(bool to_device, uint64_t bytes, uint64_t start_ns, uint64_t end_ns, int track)
{
    pe_prof_add(to_device ? PE_PC_bytes_to_device : PE_PC_bytes_to_host, bytes);
    pe_prof_add(to_device ? PE_PC_to_device_ns : PE_PC_to_host_ns, end_ns - start_ns);
    span(to_device ? PE_EV_to_device : PE_EV_to_host, start_ns, end_ns, bytes, track);
}

/* ----------------------------------------------------------------- finish */

static const char *const counter_names[] = {
#define PE_PROF_COUNTER_NAME(n) #n,
    PE_PROF_COUNTERS(PE_PROF_COUNTER_NAME)
#undef PE_PROF_COUNTER_NAME
};

/* The database of this run.  Strings are copied so that pe_profile_free
 * owns everything; the tables are moved out. */
static bool build_profile(pe_profile *p)
{
    memset(p, 0, sizeof *p);
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    p->program = strdup(program_invocation_short_name);
    p->host = strdup(host);
    p->pe_version = strdup(col.version);
    p->device = strdup(col.device);
    p->pid = (uint64_t)getpid();
    p->start_unix_ns = col.start_unix_ns;
    p->wall_ns = pe_prof_now() - col.start_ns;
    p->threads = (uint64_t)col.threads;
    p->format_version = PE_PROF_VERSION;
    bool ok = p->program && p->host && p->pe_version && p->device;
    p->sites = calloc(col.n_sites ? col.n_sites : 1, sizeof *p->sites);
    p->kernels = calloc(col.n_kernels ? col.n_kernels : 1, sizeof *p->kernels);
    p->counters = calloc(PE_PC__COUNT, sizeof *p->counters);
    ok = ok && p->sites && p->kernels && p->counters;
    for (uint32_t i = 0; ok && i < col.n_sites; i++) {
        p->sites[i] = col.sites[i].rec;
        p->sites[i].file = strdup(col.sites[i].rec.file);
        p->sites[i].function = strdup(col.sites[i].rec.function);
        p->n_sites = i + 1;
        ok = p->sites[i].file && p->sites[i].function;
    }
    if (ok) { /* kernel records own their strings already: move them */
        for (uint32_t i = 0; i < col.n_kernels; i++) p->kernels[i] = col.kernels[i].rec;
        p->n_kernels = col.n_kernels;
        col.n_kernels = 0;
    }
    /* the macro cache counts in pe_stats (reset by the same pe_init) */
    atomic_store(&col.counters[PE_PC_macro_hits], pe_counters.macro_hits);
    atomic_store(&col.counters[PE_PC_macro_records], pe_counters.macro_records);
    atomic_store(&col.counters[PE_PC_macro_evictions], pe_counters.macro_evictions);
    atomic_store(&col.counters[PE_PC_macro_ops_replayed], pe_counters.macro_ops_replayed);
    for (int c = 0; ok && c < PE_PC__COUNT; c++) {
        p->counters[c] = (pe_prof_counter){strdup(counter_names[c]), atomic_load(&col.counters[c])};
        p->n_counters = (uint32_t)c + 1;
        ok = p->counters[c].name != NULL;
    }
    if (ok) {
        p->tracks = col.tracks, p->n_tracks = col.n_tracks;
        p->events = col.events, p->n_events = col.n_events;
        p->events_dropped = col.events_dropped;
        col.tracks = NULL, col.events = NULL;
        col.n_tracks = col.tracks_cap = col.n_events = col.events_cap = 0;
    }
    return ok;
}

static void reset(void)
{
    for (uint32_t i = 0; i < col.n_kernels; i++)
        free(col.kernels[i].rec.device), free(col.kernels[i].rec.name), free(col.kernels[i].rec.shares);
    for (uint32_t i = 0; i < col.n_tracks; i++) free(col.tracks[i]);
    free(col.sites), free(col.site_index), free(col.kernels), free(col.tracks), free(col.events);
    col.sites = NULL, col.site_index = NULL, col.kernels = NULL, col.tracks = NULL, col.events = NULL;
    col.n_sites = col.sites_cap = col.site_index_cap = col.n_kernels = col.kernels_cap = 0;
    col.n_tracks = col.tracks_cap = col.n_events = col.events_cap = 0;
    col.events_dropped = 0;
    col.out_of_memory = false;
}

void pe_prof_finish(void)
{
    if (!pe_prof_on) return;
    pe_prof_on = false;
    pthread_mutex_lock(&col.mu);
    for (uint32_t i = 0; i < pe_rt.n_slots; i++) { /* values still alive were never read either */
        const pe_port *p = pe_port_at(i);
        if (p->state != PE_PORT_FREE && p->prof_stored && !p->prof_read) unread_value(p);
    }
    pe_profile p;
    char err[512];
    if (col.out_of_memory)
        fprintf(stderr, "pe: profile: out of memory while collecting; the profile misses some records\n");
    if (!build_profile(&p)) {
        fprintf(stderr, "pe: profile: out of memory; %s not written\n", col.path);
    } else if (!pe_profile_save(&p, col.path, err, sizeof err)) {
        fprintf(stderr, "pe: profile not written: %s\n", err);
    } else {
        pe_prof_report_summary(&p, stderr);
        fprintf(stderr, "pe: profile written to %s (pe-prof report %s)\n", col.path, col.path);
    }
    pe_profile_free(&p);
    reset();
    pthread_mutex_unlock(&col.mu);
}
