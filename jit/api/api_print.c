/* api_print.c — pe_print: an array's values as NumPy prints them (str of
 * an ndarray): nested brackets, elements right-aligned to one width, rows
 * on lines of their own, a blank line between blocks of three axes or more;
 * past PRINT_THRESHOLD elements each axis longer than 2 * EDGE_ITEMS shows
 * its first and last EDGE_ITEMS with "..." between.  Numbers: f32 with 8
 * significant digits, f64 with 17 (enough to read the value back), i32 as
 * integers, bool as True / False, complex as a+bj.  The values come from a
 * pe_read (the handle stays the program's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/site.h"

#define PRINT_THRESHOLD 1000 /* NumPy's threshold */
#define EDGE_ITEMS 3         /* NumPy's edgeitems */
#define ELEMENT_CHARS 64

typedef struct {
    FILE *f;
    pe_dtype t;
    int rank;
    const int64_t *shape;
    int64_t stride[PE_MAX_RANK]; /* elements */
    const unsigned char *values;
    bool summarise;
    int width; /* the widest element (measured first) */
    bool measuring;
} printer;

static void format_real(char *out, size_t n, double v, bool f32)
{
    snprintf(out, n, f32 ? "%.8g" : "%.17g", v);
}

static void format_element(const printer *p, int64_t at, char *out)
{
    const unsigned char *v = p->values + at * (int64_t)pe_dtype_size(p->t);
    switch (p->t) {
    case PE_F32: { float x; memcpy(&x, v, sizeof x); format_real(out, ELEMENT_CHARS, x, true); return; }
    case PE_F64: { double x; memcpy(&x, v, sizeof x); format_real(out, ELEMENT_CHARS, x, false); return; }
    case PE_I32: { int32_t x; memcpy(&x, v, sizeof x); snprintf(out, ELEMENT_CHARS, "%d", x); return; }
    case PE_BOOL: snprintf(out, ELEMENT_CHARS, "%s", *v ? "True" : "False"); return;
    default: { /* complex: a+bj, the sign of b's own */
        bool f32 = p->t == PE_C64;
        double re, im;
        if (f32) {
            float parts[2];
            memcpy(parts, v, sizeof parts);
            re = parts[0], im = parts[1];
        } else {
            double parts[2];
            memcpy(parts, v, sizeof parts);
            re = parts[0], im = parts[1];
        }
        char a[ELEMENT_CHARS / 2 - 2], b[ELEMENT_CHARS / 2 - 2];
        format_real(a, sizeof a, re, f32), format_real(b, sizeof b, im, f32);
        snprintf(out, ELEMENT_CHARS, "%s%s%sj", a, b[0] == '-' || b[0] == '+' ? "" : "+", b);
        return;
    }
    }
}

static void put(printer *p, const char *text)
{
    if (!p->measuring) fputs(text, p->f);
}

/* Between two items of axis `axis`: a space along the last axis; else
 * the next item on a line of its own (a blank line more per axis below
 * the last two), under the bracket opened at column `indent`. */
static void separator(printer *p, int axis, int indent)
{
    if (axis == p->rank - 1) {
        put(p, " ");
        return;
    }
    for (int line = 0; line < p->rank - axis - 1; line++) put(p, "\n");
    for (int c = 0; c <= indent; c++) put(p, " ");
}

/* The block of axis `axis` at element offset `at`, its bracket at column
 * `indent`: every item, or the first and last EDGE_ITEMS around "...". */
static void walk(printer *p, int axis, int64_t at, int indent)
{
    if (axis == p->rank) {
        char text[ELEMENT_CHARS];
        format_element(p, at, text);
        int len = (int)strlen(text);
        if (p->measuring) p->width = len > p->width ? len : p->width;
        else fprintf(p->f, "%*s", p->width, text);
        return;
    }
    int64_t n = p->shape[axis];
    bool cut = p->summarise && n > 2 * EDGE_ITEMS;
    int64_t shown = cut ? 2 * EDGE_ITEMS + 1 : n;
    put(p, "[");
    for (int64_t k = 0; k < shown; k++) {
        if (k > 0) separator(p, axis, indent);
        if (cut && k == EDGE_ITEMS) {
            put(p, "...");
            continue;
        }
        int64_t i = cut && k > EDGE_ITEMS ? n - (shown - k) : k;
        walk(p, axis + 1, at + i * p->stride[axis], indent + 1);
    }
    put(p, "]");
}

int pe_print_at(const pe_site *s, FILE *f, pe_array a)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_print";
    if (!f) return pe_raise(s, PE_E_ARG, api, "the stream is NULL");
    uint32_t idx;
    pe_port *port = pe_port_lookup(s, a, api, &idx);
    if (!port) return pe_last_error() ? pe_last_error()->code : PE_E_ARG;
    int rank = port->rank;
    int64_t shape[PE_MAX_RANK], numel = port->numel;
    memcpy(shape, port->shape, sizeof shape[0] * (size_t)rank);
    pe_dtype t = (pe_dtype)port->dtype;
    size_t bytes = (size_t)numel * pe_dtype_size(t);
    unsigned char *values = malloc(bytes ? bytes : 1);
    if (!values) return pe_raise(s, PE_E_NOMEM, api, "out of memory for %zu bytes of values", bytes);
    int rc = pe_read_at(s, a, values, bytes); /* port may move: not used after this */
    if (rc != PE_OK) {
        free(values);
        return rc;
    }
    printer p = {.f = f, .t = t, .rank = rank, .shape = shape, .values = values, .summarise = numel > PRINT_THRESHOLD};
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) p.stride[d] = stride, stride *= shape[d];
    if (numel == 0) {
        for (int d = 0; d < rank; d++) fputc('[', f);
        for (int d = 0; d < rank; d++) fputc(']', f);
    } else {
        p.measuring = true;
        walk(&p, 0, 0, 0);
        p.measuring = false;
        walk(&p, 0, 0, 0);
    }
    fputc('\n', f);
    free(values);
    return ferror(f) ? pe_raise(s, PE_E_ARG, api, "the stream reports a write error") : PE_OK;
}
