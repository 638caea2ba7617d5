/* export.h — what pe-prof makes of a profile besides the text reports: a
 * Chrome Trace Event file (export_trace.c), a self-contained HTML page
 * (export_html.c), and the comparison of two runs (diff.c). */
#ifndef PE_PROFILER_EXPORT_H
#define PE_PROFILER_EXPORT_H

#include <stdio.h>

#include "profdb.h"

/* Chrome Trace Event JSON (opens in Perfetto and chrome://tracing): one
 * track per executor thread and CUDA stream. */
void pe_prof_export_trace(const pe_profile *p, FILE *out);
/* One HTML page, no outside resources: timeline and per-line bar chart. */
void pe_prof_export_html(const pe_profile *p, FILE *out);

/* Compares run b with run a by line and by kernel; flags what got slower by
 * more than threshold_pct percent and min_ms milliseconds.  Returns the
 * number flagged. */
int pe_prof_diff(const pe_profile *a, const pe_profile *b, FILE *out, double threshold_pct, double min_ms);

#endif
