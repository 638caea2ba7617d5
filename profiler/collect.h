/* collect.h — the profiler's collector inside the runtime (PE_PROFILE).  The
 * runtime calls these hooks behind `if (pe_prof_on)`, so a run without
 * PE_PROFILE pays one predictable branch per hook (and a port's death one
 * test of flags only these hooks set).  At pe_shutdown the
 * collector writes the profile database (profdb.h) and prints the summary
 * report to stderr. */
#ifndef PE_PROFILER_COLLECT_H
#define PE_PROFILER_COLLECT_H

#include <stdbool.h>
#include <stdint.h>

#include "pe.h"
#include "profdb.h"

/* Runtime counters (the database stores them by name).  The macro_* four
 * are the macro cache's own (pe_stats.macro_*, jit/macro/macro.c), copied
 * when the profile is written. */
#define PE_PROF_COUNTERS(X)                                                                                   \
    X(batches) X(trace_lookups) X(trace_hits) X(trace_misses) X(trace_lookup_ns) X(proggen_runs) X(proggen_ns) \
    X(program_lookups) X(program_memory_hits) X(program_disk_hits) X(program_lookup_ns) X(disk_load_ns)        \
    X(compiles) X(kernels_compiled) X(compile_ns) X(interp_ops) X(interp_ns)                                   \
    X(bytes_to_device) X(to_device_ns) X(bytes_to_host) X(to_host_ns)                                          \
    X(queue_flow_waits) X(queue_flow_wait_ns) X(result_waits) X(result_wait_ns)                                \
    X(pool_threads) X(pool_busy_ns) X(pool_capacity_ns) X(bytes_allocated) X(api_calls)                      \
    X(macro_hits) X(macro_records) X(macro_evictions) X(macro_ops_replayed)
typedef enum {
#define PE_PROF_COUNTER_ENUM(n) PE_PC_##n,
    PE_PROF_COUNTERS(PE_PROF_COUNTER_ENUM)
#undef PE_PROF_COUNTER_ENUM
    PE_PC__COUNT
} pe_prof_counter_id;

extern bool pe_prof_on;

/* Starts collecting (for a run of PE `version` on `device_name`) if
 * `setting` (pe_config.profile), else PE_PROFILE, asks
 * for it (`1`: pe-profile.<program>.<pid>.pep in the working directory;
 * another non-empty value other than `0`: that path). */
void pe_prof_start(const char *device_name, const char *version, int threads, const char *setting);
/* Writes the database, prints the summary, frees everything. */
void pe_prof_finish(void);

uint64_t pe_prof_now(void); /* monotonic ns */
void pe_prof_add(pe_prof_counter_id c, uint64_t v);

/* Names the calling thread's timeline track (before its first event). */
void pe_prof_name_thread(const char *name);
/* A track by name (CUDA streams); its index. */
uint32_t pe_prof_track(const char *name);

/* Direct counters of a site. */
typedef enum { PE_PROF_READ, PE_PROF_WRITE, PE_PROF_COPY, PE_PROF_WAIT } pe_prof_io;
void pe_prof_call(const pe_site *s);
void pe_prof_io_at(const pe_site *s, pe_prof_io kind, uint64_t bytes, uint64_t start_ns, uint64_t end_ns);

/* A kernel run: what it is (kernel-IR hash, device), which ports it computed
 * (their ops and sites weigh its time), which ports it loaded and stored,
 * its work and its time.  `track` < 0: the calling thread's track. */
typedef struct {
    uint64_t hash;
    const char *device;
    const uint32_t *members; /* port indices ... */
    int n_members;
    const struct pe_port *port; /* ... or, members NULL, the one port the interpreter computed */
    const uint32_t *params;  /* the ports bound to its parameters: its members among them are what it
                                stored, the others what it loaded */
    int n_params;
    int64_t elements, bytes_read, bytes_written;
    int served;              /* pe_prof_served */
    uint64_t compile_ns;
} pe_prof_kernel_run;
void pe_prof_kernel_ran(const pe_prof_kernel_run *k, uint64_t start_ns, uint64_t end_ns, int track);
/* One port computed by the interpreter (it stored the value, loaded its inputs). */
void pe_prof_interp(struct pe_port *port, uint64_t start_ns, uint64_t end_ns);
/* A library call (exec/intrinsics): its time charged to the line of the
 * intrinsic the port computes (pe_matmul's, pe_lu's), whatever it fused. */
void pe_prof_library_call(struct pe_port *port, uint64_t start_ns, uint64_t end_ns);
/* The application read a value (pe_read, pe_map): its store was not wasted. */
void pe_prof_value_read(struct pe_port *port);
/* Spans on the calling thread's track, with their counters. */
void pe_prof_compile(int kernels, uint64_t start_ns, uint64_t end_ns);
void pe_prof_proggen(bool trace_hit, uint64_t lookup_ns, uint64_t start_ns, uint64_t end_ns);
void pe_prof_transfer(bool to_device, uint64_t bytes, uint64_t start_ns, uint64_t end_ns, int track);

#endif
