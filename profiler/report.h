/* report.h — the profile analyser: time attributed to lines, functions and
 * kernels, and the four text reports of the patent (summary, compute, I/O,
 * runtime).  Used by pe-prof and, for the summary at exit, by the runtime. */
#ifndef PE_PROFILER_REPORT_H
#define PE_PROFILER_REPORT_H

#include <stdio.h>

#include "profdb.h"

typedef enum { PE_BY_LINE, PE_BY_FUNCTION, PE_BY_KERNEL } pe_prof_group;

/* One row of an attribution table: a line (file:line), a function
 * (file:function) or a kernel (its ops and covered lines). */
typedef struct {
    char label[320];
    double compute_ns; /* weighted kernel shares (for a kernel: its time) */
    double direct_ns;  /* reads, writes, copies */
    double wait_ns;    /* the application waiting here for results (blocked in a read or pe_sync) */
    uint64_t calls;    /* requests (for a kernel: executions) */
    uint64_t waits;    /* times the application waited here */
    uint64_t stored_unread, stored_unread_bytes; /* values made here stored and never read (not for kernels) */
} pe_prof_row;

/* A row's total: compute + direct + waited.  The wait is the application's
 * time and the compute the runtime's, and they overlap (a line waiting for
 * its own kernel counts both), so totals rank lines by what they cost on
 * either side; they do not add up to the wall time. */
double pe_prof_row_total(const pe_prof_row *r);
/* The rows for a grouping, sorted by total, longest first; the count, or -1
 * when out of memory.  *rows is malloc'd. */
long pe_prof_rows(const pe_profile *p, pe_prof_group by, pe_prof_row **rows);
/* The label of kernel k: "ops @ file:line,line" (what diff matches on). */
void pe_prof_kernel_label(const pe_profile *p, const pe_prof_kernel *k, char *out, size_t n);

/* Pool utilisation, busy / capacity (at most 100% by construction from
 * format version 3 on), into out: "73.2%", or why there is none. */
void pe_prof_pool_utilisation(const pe_profile *p, char *out, size_t n);
/* The macro cache's figures (PE_MACRO sections) into out, or why there are none. */
void pe_prof_macro_cache(const pe_profile *p, char *out, size_t n);

void pe_prof_report_summary(const pe_profile *p, FILE *out);
void pe_prof_report_compute(const pe_profile *p, FILE *out);
void pe_prof_report_io(const pe_profile *p, FILE *out);
void pe_prof_report_runtime(const pe_profile *p, FILE *out);
/* The attribution table for a grouping, every row. */
void pe_prof_report_table(const pe_profile *p, pe_prof_group by, FILE *out);

#endif
