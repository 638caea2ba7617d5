/* diff.c — two runs of one program side by side: lines and kernels matched
 * by label (file:line; ops @ lines), with their times and the change, and a
 * flag on each that got slower by more than the threshold. */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "report.h"

static double total_ms(const pe_prof_row *r) { return pe_prof_row_total(r) / 1e6; } /* as the tables rank */

static const pe_prof_row *find(const pe_prof_row *rows, long n, const char *label)
{
    for (long i = 0; i < n; i++)
        if (strcmp(rows[i].label, label) == 0) return &rows[i];
    return NULL;
}

static int compare(const pe_profile *a, const pe_profile *b, pe_prof_group by, FILE *out, double threshold_pct,
                   double min_ms)
{
    pe_prof_row *ra, *rb;
    long na = pe_prof_rows(a, by, &ra);
    long nb = na < 0 ? -1 : pe_prof_rows(b, by, &rb);
    if (na < 0 || nb < 0) {
        if (na >= 0) free(ra);
        fprintf(out, "  (out of memory)\n");
        return 0;
    }
    int flagged = 0;
    fprintf(out, "== by %s: A ms, B ms, change\n", by == PE_BY_LINE ? "line" : "kernel");
    for (long i = 0; i < nb; i++) { /* B's order: what costs most now comes first */
        const pe_prof_row *x = find(ra, na, rb[i].label);
        double tb = total_ms(&rb[i]), ta = x ? total_ms(x) : 0;
        bool slower = tb - ta > min_ms && (!x || tb > ta * (1 + threshold_pct / 100));
        flagged += slower;
        if (x)
            fprintf(out, "  %10.3f %10.3f %+8.1f%%  %s%s\n", ta, tb, ta > 0 ? 100 * (tb - ta) / ta : 0, rb[i].label,
                    slower ? "  <-- SLOWER" : "");
        else
            fprintf(out, "  %10s %10.3f %9s  %s  (only in B)%s\n", "-", tb, "", rb[i].label, slower ? "  <-- SLOWER" : "");
    }
    for (long i = 0; i < na; i++)
        if (!find(rb, nb, ra[i].label)) fprintf(out, "  %10.3f %10s %9s  %s  (only in A)\n", total_ms(&ra[i]), "-", "", ra[i].label);
    free(ra), free(rb);
    return flagged;
}

int pe_prof_diff(const pe_profile *a, const pe_profile *b, FILE *out, double threshold_pct, double min_ms)
{
    if (strcmp(a->program, b->program) != 0)
        fprintf(out, "note: A is %s, B is %s: lines and kernels match by name only\n", a->program, b->program);
    fprintf(out, "A: %s pid %llu, wall %.3f ms; B: %s pid %llu, wall %.3f ms (%+.1f%%)\n", a->program,
            (unsigned long long)a->pid, a->wall_ns / 1e6, b->program, (unsigned long long)b->pid, b->wall_ns / 1e6,
            a->wall_ns ? 100.0 * ((double)b->wall_ns - (double)a->wall_ns) / (double)a->wall_ns : 0);
    int flagged = compare(a, b, PE_BY_LINE, out, threshold_pct, min_ms);
    flagged += compare(a, b, PE_BY_KERNEL, out, threshold_pct, min_ms);
    fprintf(out, "%d slower (threshold %.0f%% and %.3f ms)\n", flagged, threshold_pct, min_ms);
    return flagged;
}
