/* pe_prof.c — the pe-prof tool: reads profile databases written by a run
 * with PE_PROFILE and reports on them (report), compares two runs (diff),
 * exports the timeline (trace) and a page (html).  Exit status: 0, 1 when
 * diff flagged something slower, 2 on a usage error or an unreadable file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "profdb.h"
#include "report.h"

static int usage(void)
{
    fprintf(stderr,
            "usage: pe-prof report FILE [--by line|function|kernel] [--only summary|compute|io|runtime]\n"
            "       pe-prof diff A B [--threshold PERCENT] [--min-ms MS]\n"
            "       pe-prof trace FILE -o OUT.json     (Chrome Trace Event format; open in Perfetto)\n"
            "       pe-prof html FILE -o OUT.html\n");
    return 2;
}

static bool load(pe_profile *p, const char *path)
{
    char err[600];
    if (pe_profile_load(p, path, err, sizeof err)) return true;
    fprintf(stderr, "pe-prof: %s\n", err);
    return false;
}

/* Opens -o's file (or stdout for "-"). */
static FILE *open_output(const char *path)
{
    if (strcmp(path, "-") == 0) return stdout;
    FILE *f = fopen(path, "w");
    if (!f) perror(path);
    return f;
}

static int close_output(FILE *f, const char *path)
{
    if (f == stdout) return fflush(f) == 0 ? 0 : 2;
    if (ferror(f) | (fclose(f) != 0)) {
        fprintf(stderr, "pe-prof: writing %s failed\n", path);
        return 2;
    }
    return 0;
}

static int cmd_report(int argc, char **argv)
{
    const char *file = NULL, *by = NULL, *only = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--by") == 0 && i + 1 < argc) by = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (!file && argv[i][0] != '-') file = argv[i];
        else return usage();
    }
    pe_prof_group group = PE_BY_LINE;
    if (by && strcmp(by, "function") == 0) group = PE_BY_FUNCTION;
    else if (by && strcmp(by, "kernel") == 0) group = PE_BY_KERNEL;
    else if (by && strcmp(by, "line") != 0) return usage();
    if (!file) return usage();
    pe_profile p;
    if (!load(&p, file)) return 2;
    int rc = 0;
    if (!only) {
        pe_prof_report_summary(&p, stdout);
        if (by) pe_prof_report_table(&p, group, stdout);
        pe_prof_report_compute(&p, stdout);
        pe_prof_report_io(&p, stdout);
        pe_prof_report_runtime(&p, stdout);
    } else if (strcmp(only, "summary") == 0) pe_prof_report_summary(&p, stdout);
    else if (strcmp(only, "compute") == 0) pe_prof_report_compute(&p, stdout);
    else if (strcmp(only, "io") == 0) pe_prof_report_io(&p, stdout);
    else if (strcmp(only, "runtime") == 0) pe_prof_report_runtime(&p, stdout);
    else rc = usage();
    if (only && by && rc == 0) pe_prof_report_table(&p, group, stdout);
    pe_profile_free(&p);
    return rc;
}

static int cmd_diff(int argc, char **argv)
{
    const char *a = NULL, *b = NULL;
    double threshold = 10, min_ms = 0.05;
    for (int i = 0; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--threshold") == 0 && i + 1 < argc) {
            threshold = strtod(argv[++i], &end);
            if (*end || threshold < 0) return usage();
        } else if (strcmp(argv[i], "--min-ms") == 0 && i + 1 < argc) {
            min_ms = strtod(argv[++i], &end);
            if (*end || min_ms < 0) return usage();
        } else if (!a) a = argv[i];
        else if (!b) b = argv[i];
        else return usage();
    }
    if (!a || !b) return usage();
    pe_profile pa, pb;
    if (!load(&pa, a)) return 2;
    if (!load(&pb, b)) return pe_profile_free(&pa), 2;
    int flagged = pe_prof_diff(&pa, &pb, stdout, threshold, min_ms);
    pe_profile_free(&pa), pe_profile_free(&pb);
    return flagged ? 1 : 0;
}

static int cmd_export(int argc, char **argv, void (*export)(const pe_profile *, FILE *))
{
    const char *file = NULL, *out = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
        else if (!file) file = argv[i];
        else return usage();
    }
    if (!file || !out) return usage();
    pe_profile p;
    if (!load(&p, file)) return 2;
    FILE *f = open_output(out);
    int rc = 2;
    if (f) {
        export(&p, f);
        rc = close_output(f, out);
    }
    pe_profile_free(&p);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage();
    if (strcmp(argv[1], "report") == 0) return cmd_report(argc - 2, argv + 2);
    if (strcmp(argv[1], "diff") == 0) return cmd_diff(argc - 2, argv + 2);
    if (strcmp(argv[1], "trace") == 0) return cmd_export(argc - 2, argv + 2, pe_prof_export_trace);
    if (strcmp(argv[1], "html") == 0) return cmd_export(argc - 2, argv + 2, pe_prof_export_html);
    return usage();
}
