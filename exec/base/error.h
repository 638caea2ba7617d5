/* error.h — error reporting and the log (error.c): messages that name the
 * user's call site, the handler stack, invalid-array messages raised later. */
#ifndef PE_BASE_ERROR_H
#define PE_BASE_ERROR_H

#include "runtime.h"

/* Formats "FILE:LINE: FUNC: api: text", runs the handler stack; returns `code`
 * if a handler continued.  Without a handler it prints and aborts. */
pe_status pe_raise(const pe_site *s, pe_status code, const char *api, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Formats the same text into a heap string, for errors raised later (at a read). */
char *pe_format_error(const pe_site *s, const char *api, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
pe_status pe_raise_message(const pe_site *s, pe_status code, const char *message);
/* How many errors the calling thread has raised (a code reuse section's
 * recording is not cached when its body raised one). */
uint64_t pe_errors_raised_here(void);
void pe_log_message(pe_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pe_format_shape(char *out, size_t n, int rank, const int64_t *shape);

#endif
