/* numpy_order_driver.c — the PE half of the NumPy differential of the
 * order ops (tests/numpy_order.py writes the cases and compares): reads a
 * case list, computes each case with PE and writes its result as raw
 * little-endian elements.
 *
 *   numpy_order_driver DIR   DIR/cases.txt, one case per line:
 *     cumsum|cumprod DT RANK D0.. IN OUT AXIS
 *     sort|argsort   DT RANK D0.. IN OUT AXIS DESCENDING
 *     histogram      DT RANK D0.. IN OUT BINS LO HI
 *     bincount       DT RANK D0.. IN OUT LENGTH WDT WEIGHTS     (WDT -: counts; DT is i32)
 *     scatter_add    DT RANK D0.. IN OUT TARGET_N TARGET VALUES (IN: the i32 indices; DT: the target's)
 *   files are relative to DIR; DT is f32, f64, i32 or bool.
 * Exits 0 when every case was computed, 1 at the first failure (named). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pe.h>

static char dir[4096];

static pe_dtype dtype_of(const char *s)
{
    return !strcmp(s, "f32") ? PE_F32 : !strcmp(s, "f64") ? PE_F64 : !strcmp(s, "i32") ? PE_I32 : PE_BOOL;
}

static size_t size_of(pe_dtype t) { return t == PE_F64 ? 8 : t == PE_BOOL ? 1 : 4; }

static void *load(const char *name, size_t bytes)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    void *p = malloc(bytes ? bytes : 1);
    if (!f || !p || fread(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "numpy_order_driver: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    return p;
}

/* An array of the file's elements (pe_from_host copies them). */
static pe_array from_file(pe_dtype t, int rank, const int64_t *shape, const char *name)
{
    int64_t numel = 1;
    for (int d = 0; d < rank; d++) numel *= shape[d];
    void *p = load(name, (size_t)numel * size_of(t));
    pe_array a = pe_from_host(t, rank, shape, p);
    free(p);
    return a;
}

static void save(const char *name, pe_array a)
{
    size_t bytes = (size_t)pe_numel(a) * size_of(pe_dtype_of(a));
    void *p = malloc(bytes ? bytes : 1);
    if (pe_read(a, p, bytes) != PE_OK) {
        fprintf(stderr, "numpy_order_driver: %s: %s\n", name, pe_last_error() ? pe_last_error()->message : "read failed");
        exit(1);
    }
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f) != 0) {
        fprintf(stderr, "numpy_order_driver: cannot write %s\n", path);
        exit(1);
    }
    free(p);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    char path[8192], line[1024];
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *cases = fopen(path, "r");
    if (!cases || pe_init(NULL) != PE_OK) return 1;
    int done = 0;
    while (fgets(line, sizeof line, cases)) {
        char *tok[32];
        int n = 0;
        for (char *t = strtok(line, " \n"); t && n < 32; t = strtok(NULL, " \n")) tok[n++] = t;
        if (n < 6) continue;
        pe_dtype t = dtype_of(tok[1]);
        int rank = atoi(tok[2]), at = 3 + rank;
        int64_t shape[8];
        for (int d = 0; d < rank && d < 8; d++) shape[d] = atoll(tok[3 + d]);
        const char *in = tok[at], *out = tok[at + 1];
        char **arg = tok + at + 2;
        pe_scope sc = pe_scope_begin();
        const char *op = tok[0];
        bool scatter = !strcmp(op, "scatter_add"); /* IN holds the indices (i32); DT is the target's */
        pe_array x = from_file(scatter ? PE_I32 : t, rank, shape, in), r = {0};
        if (!strcmp(op, "cumsum")) r = pe_cumsum(x, atoi(arg[0]));
        else if (!strcmp(op, "cumprod")) r = pe_cumprod(x, atoi(arg[0]));
        else if (!strcmp(op, "sort")) r = pe_sort(x, atoi(arg[0]), atoi(arg[1]) != 0);
        else if (!strcmp(op, "argsort")) r = pe_argsort(x, atoi(arg[0]), atoi(arg[1]) != 0);
        else if (!strcmp(op, "histogram")) r = pe_histogram(x, atoll(arg[0]), atof(arg[1]), atof(arg[2]));
        else if (!strcmp(op, "bincount")) {
            pe_array w = {0};
            if (strcmp(arg[1], "-") != 0) {
                pe_dtype wt = dtype_of(arg[1]);
                w = from_file(wt, rank, shape, arg[2]);
            }
            r = pe_bincount(x, w, atoll(arg[0]));
        } else if (scatter) {
            int64_t tn = atoll(arg[0]);
            pe_array target = from_file(t, 1, &tn, arg[1]);
            pe_array values = from_file(t, rank, shape, arg[2]);
            r = pe_scatter_add(target, x, values);
        } else {
            fprintf(stderr, "numpy_order_driver: unknown op %s\n", op);
            return 1;
        }
        save(out, r);
        pe_scope_end(sc);
        done++;
    }
    fclose(cases);
    pe_shutdown();
    printf("numpy_order_driver: %d cases computed\n", done);
    return 0;
}
