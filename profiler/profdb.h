/* profdb.h — the profile database: what one profiled run leaves behind, as C
 * structures, and its file format (a framed msgpack blob, irformat/msgblob.h;
 * documented in docs/profile-format.md).  The runtime's collector fills one
 * and writes it; pe-prof reads it, possibly on another machine.  Nothing here
 * depends on the runtime. */
#ifndef PE_PROFILER_PROFDB_H
#define PE_PROFILER_PROFDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PE_PROF_MAGIC "PEPF"
#define PE_PROF_VERSION 3 /* 2: sites carry stored_unread (version 1 files are read with it 0); 3: the macro
                             cache's counters, and pool_capacity_ns counts every pool launch, so that
                             pool_busy_ns <= pool_capacity_ns (version 2 files may break that) */

/* A call site (the patent's PC record): where requests came from, and the
 * counters attributable to it directly. */
typedef struct {
    char *file, *function;
    int64_t line, column;         /* column 0: unknown (known from the static IR) */
    uint64_t calls;               /* requests made here */
    uint64_t reads, read_bytes, read_ns;    /* pe_read / pe_map: copies to the application */
    uint64_t writes, write_bytes, write_ns; /* pe_from_host / pe_adopt: data from the application */
    uint64_t copies, copy_bytes, copy_ns;   /* transfers between devices made for this site's reads */
    uint64_t waits, wait_ns;                /* time the application waited here for results */
    uint64_t stored_unread, stored_unread_bytes; /* values made here that a kernel or the interpreter stored
                                                    and nothing read (no program's load, pe_read or pe_map)
                                                    before they died or the run ended */
} pe_prof_site;

/* Which cache gave a kernel its code. */
#define PE_PROF_SERVED(X) X(none) X(compiler) X(memory) X(disk) X(trace) X(interp)
typedef enum {
#define PE_PROF_SERVED_ENUM(n) PE_SERVED_##n,
    PE_PROF_SERVED(PE_PROF_SERVED_ENUM)
#undef PE_PROF_SERVED_ENUM
    PE_SERVED__COUNT
} pe_prof_served;
const char *pe_prof_served_name(int s);

typedef struct {
    uint32_t site; /* index into sites */
    double weight; /* share of the kernel's time; a kernel's weights sum to 1 */
} pe_prof_share;

/* A compute kernel (or an interpreted op): one record per distinct kernel
 * and set of covered sites. */
typedef struct {
    uint64_t hash;            /* kernel-IR hash (0 for interpreted ops) */
    char *name;               /* its ops, e.g. "mul+exp+sum" */
    char *device;             /* "cpu", "cuda:0", "interp" */
    uint64_t executions, time_ns, elements, bytes_read, bytes_written;
    uint64_t compile_ns;      /* time to get its code (compile, or load from the disk cache) */
    uint32_t served;          /* pe_prof_served of its first execution */
    pe_prof_share *shares;
    uint32_t n_shares;
} pe_prof_kernel;

/* Timeline events. */
#define PE_PROF_EVENT_KINDS(X) X(kernel) X(compile) X(proggen) X(to_device) X(to_host) X(wait) X(read) X(write)
typedef enum {
#define PE_PROF_EVENT_ENUM(n) PE_EV_##n,
    PE_PROF_EVENT_KINDS(PE_PROF_EVENT_ENUM)
#undef PE_PROF_EVENT_ENUM
    PE_EV__COUNT
} pe_prof_event_kind;
const char *pe_prof_event_name(int kind);

typedef struct {
    uint32_t kind;   /* pe_prof_event_kind */
    uint32_t track;  /* index into tracks */
    uint64_t start_ns, dur_ns; /* since the run's start */
    int64_t ref;     /* kernel index (kernel), site index (wait, read, write), else -1 */
    uint64_t bytes;
} pe_prof_event;

/* Runtime counters, by name (readers keep names they do not know). */
typedef struct {
    char *name;
    uint64_t value;
} pe_prof_counter;

typedef struct {
    char *program, *host, *pe_version, *device;
    uint64_t pid, start_unix_ns, wall_ns;
    uint64_t threads;
    pe_prof_site *sites;
    uint32_t n_sites;
    pe_prof_kernel *kernels;
    uint32_t n_kernels;
    char **tracks;
    uint32_t n_tracks;
    pe_prof_event *events;
    uint32_t n_events;
    uint64_t events_dropped;  /* past the collector's bound */
    pe_prof_counter *counters;
    uint32_t n_counters;
    uint32_t format_version;  /* the file's (pe_profile_decode), or PE_PROF_VERSION for a run's own; not stored */
} pe_profile;

/* Serialises (framed); a malloc'd blob, NULL when out of memory. */
uint8_t *pe_profile_encode(const pe_profile *p, size_t *len);
/* Parses and validates a blob; false with a message in err (nothing to free). */
bool pe_profile_decode(pe_profile *p, const void *data, size_t len, char *err, size_t err_len);
bool pe_profile_load(pe_profile *p, const char *path, char *err, size_t err_len);
/* Writes the database to path (pe_blob_write_file: through a symlink only
 * after its owner checks, never over anything but a regular file). */
bool pe_profile_save(const pe_profile *p, const char *path, char *err, size_t err_len);
void pe_profile_free(pe_profile *p);

uint64_t pe_profile_counter(const pe_profile *p, const char *name); /* 0 when absent */
bool pe_profile_has_counter(const pe_profile *p, const char *name);
/* Attribution: fills, per site (arrays of n_sites), the weighted shares of
 * every kernel covering it (these add up to the kernels' total time) and its
 * direct time (reads, writes, copies; waits are reported apart, since the
 * kernels that ran meanwhile are charged already). */
void pe_profile_attribute(const pe_profile *p, double *compute_ns, double *direct_ns);
uint64_t pe_profile_site_direct_ns(const pe_prof_site *s);

#endif
