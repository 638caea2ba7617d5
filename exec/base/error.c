/* error.c — error reporting: messages that name the user's call site, the
 * handler stack, the default handler (print and abort), pe_last_error, and
 * the runtime's log. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "runtime.h"
#include "site.h"
#define MAX_HANDLERS 64
#define MESSAGE_MAX 1024

static struct {
    pe_error_handler fn;
    void *user;
} handlers[MAX_HANDLERS];
static int n_handlers;

static _Thread_local pe_error last_error;
static _Thread_local char last_message[MESSAGE_MAX];
static _Thread_local bool have_last_error;
static _Thread_local uint64_t raised_here; /* errors raised on this thread (a section's recording asks) */

void pe_push_error_handler(pe_error_handler h, void *user)
{
    PE_API_GUARD;
    if (n_handlers == MAX_HANDLERS) {
        pe_log_message(PE_LOG_ERROR, "error handler stack full (%d): pe_push_error_handler ignored", MAX_HANDLERS);
        return;
    }
    handlers[n_handlers].fn = h;
    handlers[n_handlers].user = user;
    n_handlers++;
}

void pe_pop_error_handler(void)
{
    PE_API_GUARD;
    if (n_handlers > 0) n_handlers--;
    else pe_log_message(PE_LOG_WARN, "pe_pop_error_handler: no handler to pop");
}

const pe_error *pe_last_error(void) { return have_last_error ? &last_error : NULL; }

uint64_t pe_errors_raised_here(void) { return raised_here; }

const char *pe_status_name(pe_status code)
{
    switch (code) {
    case PE_OK: return "PE_OK";
    case PE_E_ARG: return "PE_E_ARG";
    case PE_E_SHAPE: return "PE_E_SHAPE";
    case PE_E_TYPE: return "PE_E_TYPE";
    case PE_E_HANDLE: return "PE_E_HANDLE";
    case PE_E_NOMEM: return "PE_E_NOMEM";
    case PE_E_DEVICE: return "PE_E_DEVICE";
    case PE_E_COMPILE: return "PE_E_COMPILE";
    case PE_E_INVALID: return "PE_E_INVALID";
    case PE_E_MACRO: return "PE_E_MACRO";
    case PE_E_CHECK: return "PE_E_CHECK";
    case PE_E_IO: return "PE_E_IO";
    }
    return "PE_E_UNKNOWN";
}

/* Where columns come from: the static IR's registry (jit/record/irload.c) tells
 * this ground module when it has units, so that reporting never calls up. */
static int (*column_source)(const pe_site *s);

void pe_error_columns_from(int (*fn)(const pe_site *s)) { __atomic_store_n(&column_source, fn, __ATOMIC_RELEASE); }

static void format_into(char *out, size_t n, const pe_site *s, const char *api, const char *fmt, va_list ap)
{
    /* a column where the static IR (pecc) knows it */
    int column = pe_site_column(s);
    char col[16] = "";
    if (column > 0) snprintf(col, sizeof col, ":%d", column);
    int used = snprintf(out, n, "%s:%d%s: %s: %s: ", s && s->file ? s->file : "?", s ? s->line : 0, col,
                        s && s->func ? s->func : "?", api);
    if (used < 0) used = 0;
    if ((size_t)used < n) vsnprintf(out + used, n - (size_t)used, fmt, ap);
}

char *pe_format_error(const pe_site *s, const char *api, const char *fmt, ...)
{
    char buf[MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    format_into(buf, sizeof buf, s, api, fmt, ap);
    va_end(ap);
    return strdup(buf); /* NULL when out of memory: the reader falls back to a generic text */
}

pe_status pe_raise_message(const pe_site *s, pe_status code, const char *message)
{
    snprintf(last_message, sizeof last_message, "%s", message);
    last_error = (pe_error){code, last_message, s && s->file ? s->file : "?", s ? s->line : 0,
                            s && s->func ? s->func : "?"};
    have_last_error = true;
    raised_here++;
    for (int i = n_handlers - 1; i >= 0; i--)
        if (handlers[i].fn(&last_error, handlers[i].user)) return code;
    fprintf(stderr, "pe: %s\n", last_message);
    fflush(stderr);
    abort();
}

pe_status pe_raise(const pe_site *s, pe_status code, const char *api, const char *fmt, ...)
{
    char buf[MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    format_into(buf, sizeof buf, s, api, fmt, ap);
    va_end(ap);
    return pe_raise_message(s, code, buf);
}

void pe_log_message(pe_log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    if ((int)level > pe_rt.log_level) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pe: %s: ", names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void pe_format_shape(char *out, size_t n, int rank, const int64_t *shape)
{
    size_t used = (size_t)snprintf(out, n, "[");
    for (int d = 0; d < rank && used < n; d++)
        used += (size_t)snprintf(out + used, n - used, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (used < n) snprintf(out + used, n - used, "]");
}
