/* report.c — the analyser: attribution tables by line, function or kernel,
 * and the four text reports (summary, compute, I/O, runtime).  A line's
 * compute is the weighted share of every kernel covering it, its direct time
 * its reads, writes and copies, its wait the time the application blocked
 * there; the tables rank by their sum (pe_prof_row_total) with a column for
 * each, so a line that only waits ranks with the lines that compute.
 * Beside them, the bytes of the values it made that were stored and never
 * read (the summary gives their total and the lines with the most). */
#define _GNU_SOURCE
#include "report.h"

#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static double ms(double ns) { return ns / 1e6; }

/* A kernel's shares merged by source line (two requests of one line are two
 * sites), in the order the kernel first covers them; returns the count. */
static uint32_t shares_by_line(const pe_profile *p, const pe_prof_kernel *k, const pe_prof_site **site, double *weight)
{
    uint32_t n = 0;
    for (uint32_t j = 0; j < k->n_shares; j++) {
        const pe_prof_site *s = &p->sites[k->shares[j].site];
        uint32_t i = 0;
        while (i < n && !(site[i]->line == s->line && strcmp(site[i]->file, s->file) == 0)) i++;
        if (i == n) site[n] = s, weight[n++] = 0;
        weight[i] += k->shares[j].weight;
    }
    return n;
}

void pe_prof_kernel_label(const pe_profile *p, const pe_prof_kernel *k, char *out, size_t n)
{
    size_t len = (size_t)snprintf(out, n, "%s", k->name);
    const pe_prof_site **sites = malloc(sizeof *sites * (k->n_shares + 1));
    double *weights = malloc(sizeof *weights * (k->n_shares + 1));
    uint32_t lines = sites && weights ? shares_by_line(p, k, sites, weights) : 0;
    const char *last_file = NULL;
    for (uint32_t j = 0; j < lines && len < n; j++) {
        if (last_file && strcmp(last_file, sites[j]->file) == 0)
            len += (size_t)snprintf(out + len, n - len, ",%lld", (long long)sites[j]->line);
        else
            len += (size_t)snprintf(out + len, n - len, "%s%s:%lld", j ? " " : " @ ", base_name(sites[j]->file),
                                    (long long)sites[j]->line);
        last_file = sites[j]->file;
    }
    free(sites), free(weights);
}

double pe_prof_row_total(const pe_prof_row *r) { return r->compute_ns + r->direct_ns + r->wait_ns; }

static int by_total(const void *a, const void *b)
{
    const pe_prof_row *x = a, *y = b;
    double tx = pe_prof_row_total(x), ty = pe_prof_row_total(y);
    if (tx != ty) return tx < ty ? 1 : -1;
    return strcmp(x->label, y->label);
}

long pe_prof_rows(const pe_profile *p, pe_prof_group by, pe_prof_row **rows_out)
{
    size_t cap = (by == PE_BY_KERNEL ? p->n_kernels : p->n_sites) + 1;
    pe_prof_row *rows = calloc(cap, sizeof *rows);
    double *compute = malloc(sizeof *compute * (p->n_sites + 1)), *direct = malloc(sizeof *direct * (p->n_sites + 1));
    if (!rows || !compute || !direct) {
        free(rows), free(compute), free(direct);
        return -1;
    }
    long n = 0;
    if (by == PE_BY_KERNEL) {
        for (uint32_t k = 0; k < p->n_kernels; k++, n++) {
            pe_prof_kernel_label(p, &p->kernels[k], rows[n].label, sizeof rows[n].label);
            rows[n].compute_ns = (double)p->kernels[k].time_ns;
            rows[n].calls = p->kernels[k].executions;
        }
    } else {
        pe_profile_attribute(p, compute, direct);
        for (uint32_t i = 0; i < p->n_sites; i++) {
            const pe_prof_site *s = &p->sites[i];
            char label[320];
            if (by == PE_BY_LINE) snprintf(label, sizeof label, "%s:%lld", s->file, (long long)s->line);
            else snprintf(label, sizeof label, "%s:%s", s->file, s->function);
            long r = 0; /* two sites of one line (a macro) are one row; a linear scan: tables are small */
            while (r < n && strcmp(rows[r].label, label) != 0) r++;
            if (r == n) memcpy(rows[n++].label, label, sizeof label);
            rows[r].compute_ns += compute[i];
            rows[r].direct_ns += direct[i];
            rows[r].wait_ns += (double)s->wait_ns;
            rows[r].waits += s->waits;
            rows[r].calls += s->calls;
            rows[r].stored_unread += s->stored_unread;
            rows[r].stored_unread_bytes += s->stored_unread_bytes;
        }
    }
    free(compute), free(direct);
    qsort(rows, (size_t)n, sizeof *rows, by_total);
    *rows_out = rows;
    return n;
}

static double kernel_total_ns(const pe_profile *p)
{
    double t = 0;
    for (uint32_t k = 0; k < p->n_kernels; k++) t += (double)p->kernels[k].time_ns;
    return t;
}

static void print_rows(const pe_profile *p, pe_prof_group by, FILE *out, long limit)
{
    pe_prof_row *rows;
    long n = pe_prof_rows(p, by, &rows);
    if (n < 0) {
        fprintf(out, "  (out of memory)\n");
        return;
    }
    double all = 0;
    for (long i = 0; i < n; i++) all += pe_prof_row_total(&rows[i]);
    const char *what = by == PE_BY_LINE ? "line" : by == PE_BY_FUNCTION ? "function" : "kernel @ lines";
    fprintf(out, "  %10s %6s %10s %10s %10s %8s %11s  %s\n", "total ms", "%", "compute ms", "direct ms", "waited ms",
            by == PE_BY_KERNEL ? "runs" : "calls", by == PE_BY_KERNEL ? "" : "unread MB", what);
    for (long i = 0; i < n && (limit < 0 || i < limit); i++) {
        double t = pe_prof_row_total(&rows[i]);
        char unread[24] = ""; /* stored, never read: a line's figure, not a kernel's */
        if (by != PE_BY_KERNEL) snprintf(unread, sizeof unread, "%.3f", (double)rows[i].stored_unread_bytes / 1e6);
        fprintf(out, "  %10.3f %5.1f%% %10.3f %10.3f %10.3f %8llu %11s  %s\n", ms(t), all > 0 ? 100 * t / all : 0,
                ms(rows[i].compute_ns), ms(rows[i].direct_ns), ms(rows[i].wait_ns), (unsigned long long)rows[i].calls,
                unread, rows[i].label);
    }
    if (limit >= 0 && n > limit) fprintf(out, "  ... %ld more (pe-prof report FILE --by %s)\n", n - limit,
                                         by == PE_BY_LINE ? "line" : by == PE_BY_FUNCTION ? "function" : "kernel");
    free(rows);
}

void pe_prof_report_table(const pe_profile *p, pe_prof_group by, FILE *out)
{
    fprintf(out, "== time by %s\n", by == PE_BY_LINE ? "line" : by == PE_BY_FUNCTION ? "function" : "kernel");
    print_rows(p, by, out, -1);
}

static double ratio(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0; }

static int by_unread(const void *a, const void *b)
{
    const pe_prof_row *x = a, *y = b;
    if (x->stored_unread_bytes != y->stored_unread_bytes) return x->stored_unread_bytes < y->stored_unread_bytes ? 1 : -1;
    return strcmp(x->label, y->label);
}

/* Bytes kernels stored that nothing read: the total, and the lines that
 * asked for the most (where demand, a hint or a result kept, outran use). */
#define UNREAD_LINES_SHOWN 3
static void print_unread(const pe_profile *p, FILE *out)
{
    pe_prof_row *rows;
    long n = pe_prof_rows(p, PE_BY_LINE, &rows);
    if (n < 0) {
        fprintf(out, "  stored, never read: (out of memory)\n");
        return;
    }
    qsort(rows, (size_t)n, sizeof *rows, by_unread);
    uint64_t bytes = 0, values = 0;
    long lines = 0;
    for (long i = 0; i < n && rows[i].stored_unread_bytes; i++, lines++)
        bytes += rows[i].stored_unread_bytes, values += rows[i].stored_unread;
    if (!lines) {
        fprintf(out, "  stored, never read: none\n");
    } else {
        fprintf(out, "  stored, never read: %.3f MB (%llu value%s) at %ld line%s:", (double)bytes / 1e6,
                (unsigned long long)values, values == 1 ? "" : "s", lines, lines == 1 ? "" : "s");
        for (long i = 0; i < lines && i < UNREAD_LINES_SHOWN; i++)
            fprintf(out, "%s %s (%.3f MB)", i ? "," : "", base_name(rows[i].label),
                    (double)rows[i].stored_unread_bytes / 1e6);
        fprintf(out, "%s\n", lines > UNREAD_LINES_SHOWN ? ", ... (pe-prof report FILE --by line)" : "");
    }
    free(rows);
}

void pe_prof_pool_utilisation(const pe_profile *p, char *out, size_t n)
{
    uint64_t busy = pe_profile_counter(p, "pool_busy_ns"), capacity = pe_profile_counter(p, "pool_capacity_ns");
    if (!capacity) snprintf(out, n, "none (no launch on the pool)");
    else if (busy > capacity) /* a version 2 file counted busy time its capacity did not cover */
        snprintf(out, n, "unknown (a format version %u profile: busy %.3f ms over a capacity of %.3f ms)",
                 p->format_version, ms((double)busy), ms((double)capacity));
    else snprintf(out, n, "%.1f%%", ratio(busy, capacity));
}

void pe_prof_macro_cache(const pe_profile *p, char *out, size_t n)
{
    if (!pe_profile_has_counter(p, "macro_hits")) {
        snprintf(out, n, "not recorded (a format version %u profile)", p->format_version);
        return;
    }
    uint64_t hits = pe_profile_counter(p, "macro_hits"), records = pe_profile_counter(p, "macro_records");
    if (!hits && !records) {
        snprintf(out, n, "unused (no PE_MACRO section ran)");
        return;
    }
    snprintf(out, n, "%llu/%llu hits (%.1f%%), %llu ops replayed, %llu evictions",
             (unsigned long long)hits, (unsigned long long)(hits + records), ratio(hits, hits + records),
             (unsigned long long)pe_profile_counter(p, "macro_ops_replayed"),
             (unsigned long long)pe_profile_counter(p, "macro_evictions"));
}

void pe_prof_report_summary(const pe_profile *p, FILE *out)
{
    uint64_t reads = 0, writes = 0, copies = 0, waits = 0;
    for (uint32_t i = 0; i < p->n_sites; i++)
        reads += p->sites[i].read_ns, writes += p->sites[i].write_ns, copies += p->sites[i].copy_ns,
            waits += p->sites[i].wait_ns;
    double kernels = kernel_total_ns(p);
    uint64_t runs = 0;
    for (uint32_t k = 0; k < p->n_kernels; k++) runs += p->kernels[k].executions;
    fprintf(out, "== PE profile summary: %s (pid %llu) on %s, PE %s, %s, %llu threads\n", p->program,
            (unsigned long long)p->pid, p->host, p->pe_version, p->device, (unsigned long long)p->threads);
    fprintf(out, "  wall %.3f ms; kernels %.3f ms (%.1f%%) in %u kernels, %llu runs; reads %.3f ms, writes %.3f ms, "
                 "copies %.3f ms; the application waited %.3f ms\n",
            ms((double)p->wall_ns), ms(kernels), p->wall_ns ? 100 * kernels / (double)p->wall_ns : 0, p->n_kernels,
            (unsigned long long)runs, ms((double)reads), ms((double)writes), ms((double)copies), ms((double)waits));
    uint64_t lookups = pe_profile_counter(p, "trace_lookups");
    char pool[160], macro[160];
    pe_prof_pool_utilisation(p, pool, sizeof pool);
    pe_prof_macro_cache(p, macro, sizeof macro);
    fprintf(out, "  trace cache %llu/%llu hits (%.0f%%); program generator %llu runs, %.3f ms; kernels compiled %llu "
                 "(%.3f ms), from memory %llu, from disk %llu; pool utilisation %s; macro cache %s\n",
            (unsigned long long)pe_profile_counter(p, "trace_hits"), (unsigned long long)lookups,
            ratio(pe_profile_counter(p, "trace_hits"), lookups), (unsigned long long)pe_profile_counter(p, "proggen_runs"),
            ms((double)pe_profile_counter(p, "proggen_ns")), (unsigned long long)pe_profile_counter(p, "kernels_compiled"),
            ms((double)pe_profile_counter(p, "compile_ns")), (unsigned long long)pe_profile_counter(p, "program_memory_hits"),
            (unsigned long long)pe_profile_counter(p, "program_disk_hits"), pool, macro);
    print_unread(p, out);
    fprintf(out, "  top lines (ranked by compute + direct + waited):\n");
    print_rows(p, PE_BY_LINE, out, 8);
}

void pe_prof_report_compute(const pe_profile *p, FILE *out)
{
    fprintf(out, "== compute: kernels, longest first\n");
    fprintf(out, "  %10s %6s %7s %12s %9s %-7s %-9s %10s  %s\n", "time ms", "%", "runs", "elements", "GB/s", "device",
            "code from", "compile ms", "kernel @ lines (weight)");
    uint32_t *order = malloc(sizeof *order * (p->n_kernels + 1));
    if (!order) return;
    for (uint32_t k = 0; k < p->n_kernels; k++) order[k] = k;
    for (uint32_t i = 1; i < p->n_kernels; i++) /* insertion sort by time: kernels are few */
        for (uint32_t j = i; j > 0 && p->kernels[order[j]].time_ns > p->kernels[order[j - 1]].time_ns; j--) {
            uint32_t t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    double all = kernel_total_ns(p);
    for (uint32_t i = 0; i < p->n_kernels; i++) {
        const pe_prof_kernel *k = &p->kernels[order[i]];
        double bytes = (double)(k->bytes_read + k->bytes_written);
        fprintf(out, "  %10.3f %5.1f%% %7llu %12llu %9.2f %-7s %-9s %10.3f  %s @", ms((double)k->time_ns),
                all > 0 ? 100 * (double)k->time_ns / all : 0, (unsigned long long)k->executions,
                (unsigned long long)k->elements, k->time_ns ? bytes / (double)k->time_ns : 0, k->device,
                pe_prof_served_name((int)k->served), ms((double)k->compile_ns), k->name);
        const pe_prof_site **sites = malloc(sizeof *sites * (k->n_shares + 1));
        double *weights = malloc(sizeof *weights * (k->n_shares + 1));
        uint32_t lines = sites && weights ? shares_by_line(p, k, sites, weights) : 0;
        for (uint32_t j = 0; j < lines; j++)
            fprintf(out, " %s:%lld (%.0f%%)", base_name(sites[j]->file), (long long)sites[j]->line, 100 * weights[j]);
        free(sites), free(weights);
        fputc('\n', out);
    }
    free(order);
}

void pe_prof_report_io(const pe_profile *p, FILE *out)
{
    fprintf(out, "== I/O: data between the application and PE, by site\n");
    fprintf(out, "  %7s %10s %9s %7s %10s %9s %7s %10s %9s %7s %9s  %s\n", "reads", "MB", "ms", "writes", "MB", "ms",
            "copies", "MB", "ms", "waits", "ms", "site");
    for (uint32_t i = 0; i < p->n_sites; i++) {
        const pe_prof_site *s = &p->sites[i];
        if (!s->reads && !s->writes && !s->copies && !s->waits) continue;
        char column[24] = ""; /* known from pecc's static IR */
        if (s->column > 0) snprintf(column, sizeof column, ":%lld", (long long)s->column);
        fprintf(out, "  %7llu %10.3f %9.3f %7llu %10.3f %9.3f %7llu %10.3f %9.3f %7llu %9.3f  %s:%lld%s %s\n",
                (unsigned long long)s->reads, (double)s->read_bytes / 1e6, ms((double)s->read_ns),
                (unsigned long long)s->writes, (double)s->write_bytes / 1e6, ms((double)s->write_ns),
                (unsigned long long)s->copies, (double)s->copy_bytes / 1e6, ms((double)s->copy_ns),
                (unsigned long long)s->waits, ms((double)s->wait_ns), s->file, (long long)s->line, column, s->function);
    }
    fprintf(out, "  transfers: to device %.3f MB in %.3f ms, to host %.3f MB in %.3f ms\n",
            (double)pe_profile_counter(p, "bytes_to_device") / 1e6, ms((double)pe_profile_counter(p, "to_device_ns")),
            (double)pe_profile_counter(p, "bytes_to_host") / 1e6, ms((double)pe_profile_counter(p, "to_host_ns")));
}

void pe_prof_report_runtime(const pe_profile *p, FILE *out)
{
    fprintf(out, "== runtime counters\n");
    for (uint32_t i = 0; i < p->n_counters; i++) {
        const pe_prof_counter *c = &p->counters[i];
        size_t len = strlen(c->name);
        if (len > 3 && strcmp(c->name + len - 3, "_ns") == 0)
            fprintf(out, "  %-22s %14.3f ms\n", c->name, ms((double)c->value));
        else
            fprintf(out, "  %-22s %14llu\n", c->name, (unsigned long long)c->value);
    }
    uint64_t lookups = pe_profile_counter(p, "trace_lookups");
    fprintf(out, "  trace cache hit rate   %13.1f %%\n", ratio(pe_profile_counter(p, "trace_hits"), lookups));
    char pool[160], macro[160];
    pe_prof_pool_utilisation(p, pool, sizeof pool);
    pe_prof_macro_cache(p, macro, sizeof macro);
    fprintf(out, "  pool utilisation       %s (busy / threads x wall time of the pool's launches)\n", pool);
    fprintf(out, "  timeline events        %14u (%llu dropped)\n", p->n_events, (unsigned long long)p->events_dropped);
    fprintf(out, "  macro cache            %s\n", macro);
}
