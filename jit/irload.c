/* irload.c — the static-IR loader.  pecc's constructors call
 * pe__register_ir before main (or when a shared library is loaded), perhaps
 * before pe_init: units are decoded at once — an IR from another build or a
 * damaged one is refused with a warning and the program runs without it —
 * and kept until exit.  Lookups are by the site's file and line: the file
 * is __FILE__ as the compiler saw it, which is the name pecc recorded. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irload.h"
#include "../irformat/static_ir.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pe_ir_unit *units;
static int n_units;

void pe__register_ir(const void *blob, unsigned long len)
{
    pe_ir_unit u;
    char err[400];
    if (!pe_ir_decode(&u, blob, len, err, sizeof err)) {
        fprintf(stderr, "pe: warning: a static IR embedded by pecc is unusable (%s); running without it\n", err);
        return;
    }
    pthread_mutex_lock(&lock);
    pe_ir_unit *grown = realloc(units, sizeof *units * (size_t)(n_units + 1));
    if (grown) {
        units = grown;
        units[n_units++] = u;
    } else {
        pe_ir_free(&u);
    }
    pthread_mutex_unlock(&lock);
}

int pe_ir_unit_count(void)
{
    pthread_mutex_lock(&lock);
    int n = n_units;
    pthread_mutex_unlock(&lock);
    return n;
}

int pe_ir_column_of(const pe_site *s)
{
    if (!s || !s->file) return 0;
    int column = 0;
    bool ambiguous = false;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_units && !ambiguous; i++) {
        if (strcmp(units[i].file, s->file) != 0) continue;
        for (uint32_t f = 0; f < units[i].n_functions; f++) {
            const pe_ir_function *fn = &units[i].functions[f];
            for (uint32_t q = 0; q < fn->n_requests; q++) {
                if (fn->requests[q].line != s->line) continue;
                if (column && column != fn->requests[q].column) ambiguous = true;
                column = (int)fn->requests[q].column;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return ambiguous ? 0 : column;
}
