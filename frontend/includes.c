/* includes.c — whether a translation unit can reach pe.h, decided from its
 * #include lines before libclang parses it (includes.h).
 *
 * A launcher users leave on for a whole tree (CC="pecc gcc") must cost
 * little where there is nothing to extract: parsing every unit with
 * libclang made zlib and Lua build 1.4-1.5x slower than plain gcc.  A unit
 * that never includes pe.h (or pe.hpp) cannot call PE, so pecc compiles it
 * as the compiler alone would: same command, same object.
 *
 * The scan reads the source and, transitively, every header it includes
 * that is found in the source's directory, the including header's
 * directory or the command's -I / -iquote / -isystem / -idirafter
 * directories (system headers outside those are never PE's), plus -include
 * files.  It answers "reaches" when an #include names pe.h or pe.hpp, when
 * an #include is computed by a macro (it cannot tell), or when the scan
 * grows past its bounds; otherwise "does not".  Conditional compilation is
 * ignored (an #include inside #if 0 counts): the answer errs only towards
 * parsing. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "includes.h"

#define MAX_FILES 4096      /* headers scanned before answering "reaches" */
#define MAX_FILE_BYTES (8u << 20)

typedef struct {
    const char *const *dirs; /* -I, -iquote, -isystem, -idirafter directories, in order */
    int n_dirs;
    char **seen; /* files scanned (paths as opened) */
    int n_seen;
    bool reaches;
} scan;

static bool is_pe_header(const char *name, size_t len)
{
    const char *base = name;
    for (size_t k = 0; k < len; k++)
        if (name[k] == '/') base = name + k + 1;
    size_t b = len - (size_t)(base - name);
    return (b == 4 && memcmp(base, "pe.h", 4) == 0) || (b == 6 && memcmp(base, "pe.hpp", 6) == 0);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void scan_file(scan *s, const char *path);

/* The header `name` (len bytes) included from the file at `from`: looked up
 * in from's directory (quoted form) and the command's directories. */
static void follow(scan *s, const char *from, const char *name, size_t len, bool quoted)
{
    char path[4096];
    if (len >= 2048) return;
    if (quoted) {
        const char *slash = strrchr(from, '/');
        int dir = slash ? (int)(slash - from) : 0;
        if (slash) snprintf(path, sizeof path, "%.*s/%.*s", dir, from, (int)len, name);
        else snprintf(path, sizeof path, "%.*s", (int)len, name);
        if (exists(path)) {
            scan_file(s, path);
            return;
        }
    }
    for (int d = 0; d < s->n_dirs; d++) {
        snprintf(path, sizeof path, "%s/%.*s", s->dirs[d], (int)len, name);
        if (exists(path)) {
            scan_file(s, path);
            return;
        }
    }
    /* not found here: a system header, which is not PE's */
}

/* The #include lines of text (n bytes) read from `path`. */
static void scan_text(scan *s, const char *path, const char *text, size_t n)
{
    const char *p = text, *end = text + n;
    while (p < end && !s->reaches) {
        const char *line_end = memchr(p, '\n', (size_t)(end - p));
        if (!line_end) line_end = end;
        const char *q = p;
        while (q < line_end && (*q == ' ' || *q == '\t')) q++;
        if (q < line_end && *q == '#') {
            q++;
            while (q < line_end && (*q == ' ' || *q == '\t')) q++;
            size_t left = (size_t)(line_end - q);
            bool include = left >= 7 && memcmp(q, "include", 7) == 0;
            bool next = left >= 12 && memcmp(q, "include_next", 12) == 0;
            bool import = left >= 6 && memcmp(q, "import", 6) == 0;
            if (include || import) {
                q += next ? 12 : include ? 7 : 6;
                while (q < line_end && (*q == ' ' || *q == '\t')) q++;
                char close = q < line_end && *q == '"' ? '"' : q < line_end && *q == '<' ? '>' : 0;
                const char *name = q + 1, *stop = close ? memchr(name, close, (size_t)(line_end - name)) : NULL;
                if (!stop) { /* #include MACRO: cannot tell */
                    s->reaches = true;
                    return;
                }
                if (is_pe_header(name, (size_t)(stop - name))) {
                    s->reaches = true;
                    return;
                }
                follow(s, path, name, (size_t)(stop - name), close == '"');
            }
        }
        p = line_end + 1;
    }
}

static void scan_file(scan *s, const char *path)
{
    if (s->reaches) return;
    for (int k = 0; k < s->n_seen; k++)
        if (strcmp(s->seen[k], path) == 0) return;
    if (s->n_seen == MAX_FILES) {
        s->reaches = true;
        return;
    }
    s->seen[s->n_seen] = strdup(path);
    if (!s->seen[s->n_seen]) {
        s->reaches = true;
        return;
    }
    s->n_seen++;
    FILE *f = fopen(path, "rb");
    if (!f) {
        s->reaches = true; /* unreadable: let the parser decide */
        return;
    }
    char *text = malloc(MAX_FILE_BYTES);
    size_t n = text ? fread(text, 1, MAX_FILE_BYTES, f) : 0;
    bool whole = text && feof(f);
    fclose(f);
    if (!whole) s->reaches = true;
    else scan_text(s, path, text, n);
    free(text);
}

bool pe_unit_reaches_pe(const char *source, const char *const *flags, int n_flags)
{
    const char **dirs = calloc((size_t)n_flags + 1, sizeof *dirs);
    char **seen = calloc(MAX_FILES, sizeof *seen);
    if (!dirs || !seen) {
        free(dirs), free(seen);
        return true;
    }
    scan s = {.dirs = dirs, .seen = seen};
    static const char *const dir_flags[] = {"-I", "-iquote", "-isystem", "-idirafter", NULL};
    for (int i = 0; i < n_flags; i++)
        for (int d = 0; dir_flags[d]; d++) {
            size_t len = strlen(dir_flags[d]);
            if (strncmp(flags[i], dir_flags[d], len) != 0) continue;
            if (flags[i][len]) dirs[s.n_dirs++] = flags[i] + len;
            else if (i + 1 < n_flags) dirs[s.n_dirs++] = flags[++i];
            break;
        }
    for (int i = 0; i + 1 < n_flags && !s.reaches; i++) /* -include FILE: as if included first */
        if (strcmp(flags[i], "-include") == 0 || strcmp(flags[i], "-imacros") == 0) {
            const char *name = flags[++i];
            if (is_pe_header(name, strlen(name))) s.reaches = true;
            else if (exists(name)) scan_file(&s, name);
            else follow(&s, source, name, strlen(name), true);
        }
    if (!s.reaches) scan_file(&s, source);
    for (int k = 0; k < s.n_seen; k++) free(s.seen[k]);
    free(seen), free(dirs);
    return s.reaches;
}
