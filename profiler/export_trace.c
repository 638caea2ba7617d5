/* export_trace.c — the timeline as Chrome Trace Event JSON: metadata events
 * name the process and one thread per track (application threads, the
 * E-scheduler, CUDA streams); every span is a complete ("X") event with
 * microsecond timestamps and its kernel, site and bytes as arguments. */
#include <inttypes.h>

#include "export.h"
#include "report.h"
#include "../irformat/json.h"

static void event_name(const pe_profile *p, const pe_prof_event *e, char *out, size_t n)
{
    if (e->kind == PE_EV_kernel && e->ref >= 0)
        snprintf(out, n, "%s", p->kernels[e->ref].name);
    else if (e->ref >= 0)
        snprintf(out, n, "%s %s:%lld", pe_prof_event_name((int)e->kind), p->sites[e->ref].file,
                 (long long)p->sites[e->ref].line);
    else
        snprintf(out, n, "%s", pe_prof_event_name((int)e->kind));
}

void pe_prof_export_trace(const pe_profile *p, FILE *out)
{
    char name[400];
    fprintf(out, "{\"traceEvents\":[\n");
    fprintf(out, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRIu64 ",\"tid\":0,\"args\":{\"name\":", p->pid);
    snprintf(name, sizeof name, "%s (PE %s, %s)", p->program, p->pe_version, p->device);
    pe_json_string(out, name);
    fprintf(out, "}}");
    for (uint32_t t = 0; t < p->n_tracks; t++) {
        fprintf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRIu64 ",\"tid\":%u,\"args\":{\"name\":", p->pid,
                t + 1);
        pe_json_string(out, p->tracks[t]);
        fprintf(out, "}}");
        fprintf(out, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%" PRIu64 ",\"tid\":%u,\"args\":{\"sort_index\":%u}}",
                p->pid, t + 1, t);
    }
    for (uint32_t i = 0; i < p->n_events; i++) {
        const pe_prof_event *e = &p->events[i];
        event_name(p, e, name, sizeof name);
        fprintf(out, ",\n{\"name\":");
        pe_json_string(out, name);
        fprintf(out, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%" PRIu64 ",\"tid\":%u,\"args\":{",
                pe_prof_event_name((int)e->kind), (double)e->start_ns / 1e3, (double)e->dur_ns / 1e3, p->pid,
                e->track + 1);
        fprintf(out, "\"bytes\":%" PRIu64, e->bytes);
        if (e->kind == PE_EV_kernel && e->ref >= 0) {
            const pe_prof_kernel *k = &p->kernels[e->ref];
            pe_prof_kernel_label(p, k, name, sizeof name);
            fprintf(out, ",\"kernel\":");
            pe_json_string(out, name);
            fprintf(out, ",\"device\":");
            pe_json_string(out, k->device);
        }
        fprintf(out, "}}");
    }
    fprintf(out, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"program\":");
    pe_json_string(out, p->program);
    fprintf(out, ",\"host\":");
    pe_json_string(out, p->host);
    fprintf(out, ",\"pe_version\":");
    pe_json_string(out, p->pe_version);
    fprintf(out, ",\"events_dropped\":%" PRIu64 "}}\n", p->events_dropped);
}
