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
 * files.  It answers "reaches" when an #include names pe.h or pe.hpp, or
 * when the scan grows past its bounds; otherwise "does not".  Conditional
 * compilation is ignored (an #include inside #if 0 counts): the answer errs
 * only towards parsing.
 *
 * An #include computed by a macro (Lua's `#include LUA_USER_H`) is
 * followed through the macro's definitions: those of the command (-D) and
 * the `#define`s of every scanned file, chased through macros naming
 * macros; each definition that is a header name is followed like a written
 * #include.  A definition the scan cannot read as a header name or a macro
 * (a function-like macro, an expression) answers "reaches".  A macro
 * defined nowhere it can see does not: a computed #include of an
 * undefined macro is an error, so such a line is compiled out (Lua's sits
 * under `#if defined(LUA_USER_H)`), and were the definition in a system
 * header, missing it only costs the unit its static IR (PE records the
 * calls at run time either way). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "includes.h"

#define MAX_FILES 4096      /* headers scanned before answering "reaches" */
#define MAX_FILE_BYTES (8u << 20)
#define MAX_MACROS 65536    /* definitions and computed #includes kept before answering "reaches" */
#define MAX_MACRO_CHAIN 16  /* macros naming macros, before answering "reaches" */

/* A macro definition (value NULL: not a header name or an identifier), or
 * a computed #include (name: its macro; value: the including file). */
typedef struct {
    char *name, *value;
} macro;

typedef struct {
    const char *const *dirs; /* -I, -iquote, -isystem, -idirafter directories, in order */
    int n_dirs;
    char **seen; /* files scanned (paths as opened) */
    int n_seen;
    macro *defines, *computed; /* MAX_MACROS each */
    int n_defines, n_computed;
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

static bool is_ident(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

/* Keeps (name, value) in list (name_len, value_len bytes; value NULL:
 * unreadable); too many, or out of memory: "reaches". */
static void keep(scan *s, macro *list, int *n, const char *name, size_t name_len, const char *value, size_t value_len)
{
    if (*n == MAX_MACROS) {
        s->reaches = true;
        return;
    }
    char *nm = strndup(name, name_len), *val = value ? strndup(value, value_len) : NULL;
    if (!nm || (value && !val)) {
        free(nm), free(val);
        s->reaches = true;
        return;
    }
    list[(*n)++] = (macro){nm, val};
}

/* The definition text [p, end) of a macro as a header name ("x.h" or <x.h>)
 * or an identifier, with only blanks and a comment after it; *len 0 and
 * NULL when it is something else. */
static const char *definition_of(const char *p, const char *end, size_t *len)
{
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    const char *stop = p;
    if (p < end && (*p == '"' || *p == '<')) {
        const char *close = memchr(p + 1, *p == '"' ? '"' : '>', (size_t)(end - p - 1));
        if (!close) return *len = 0, NULL;
        stop = close + 1;
    } else
        while (stop < end && is_ident(*stop)) stop++;
    const char *rest = stop;
    while (rest < end && (*rest == ' ' || *rest == '\t' || *rest == '\r')) rest++;
    if (stop == p || (rest < end && !(rest + 1 < end && rest[0] == '/' && (rest[1] == '*' || rest[1] == '/')))) return *len = 0, NULL;
    *len = (size_t)(stop - p);
    return p;
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
            if (left >= 7 && memcmp(q, "define", 6) == 0 && (q[6] == ' ' || q[6] == '\t')) {
                const char *name = q + 7;
                while (name < line_end && (*name == ' ' || *name == '\t')) name++;
                const char *name_end = name;
                while (name_end < line_end && is_ident(*name_end)) name_end++;
                size_t len = 0;
                const char *value = name_end < line_end && *name_end == '(' ? NULL : definition_of(name_end, line_end, &len);
                if (name_end > name) keep(s, s->defines, &s->n_defines, name, (size_t)(name_end - name), value, len);
            } else if (include || import) {
                q += next ? 12 : include ? 7 : 6;
                while (q < line_end && (*q == ' ' || *q == '\t')) q++;
                char close = q < line_end && *q == '"' ? '"' : q < line_end && *q == '<' ? '>' : 0;
                const char *name = q + 1, *stop = close ? memchr(name, close, (size_t)(line_end - name)) : NULL;
                if (!stop) { /* #include MACRO: followed through MACRO's definitions once the files are scanned */
                    size_t len = 0;
                    const char *macro_name = definition_of(q, line_end, &len);
                    if (!macro_name || *macro_name == '"' || *macro_name == '<') s->reaches = true; /* MACRO(args), or worse */
                    else keep(s, s->computed, &s->n_computed, macro_name, len, path, strlen(path));
                    if (s->reaches) return;
                    p = line_end + 1;
                    continue;
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

/* Follows the macro `name` included from `from` through its definitions
 * (depth: macros chased so far). */
static void follow_macro(scan *s, const char *from, const char *name, int depth)
{
    if (depth == MAX_MACRO_CHAIN) {
        s->reaches = true;
        return;
    }
    for (int d = 0; d < s->n_defines && !s->reaches; d++) {
        const macro *m = &s->defines[d];
        if (strcmp(m->name, name) != 0) continue;
        if (!m->value) s->reaches = true; /* a definition that is not a header name or a macro */
        else if (m->value[0] == '"' || m->value[0] == '<') {
            size_t len = strlen(m->value) - 2;
            if (is_pe_header(m->value + 1, len)) s->reaches = true;
            else follow(s, from, m->value + 1, len, m->value[0] == '"');
        } else if (strcmp(m->value, name) != 0)
            follow_macro(s, from, m->value, depth + 1);
    }
}

/* The computed #includes, until following them scans no new file and
 * finds no new definition (a header they reach may define the macro of
 * one seen before). */
static void follow_computed(scan *s)
{
    int before;
    do {
        before = s->n_seen + s->n_defines + s->n_computed;
        for (int k = 0; k < s->n_computed && !s->reaches; k++) follow_macro(s, s->computed[k].value, s->computed[k].name, 0);
    } while (!s->reaches && s->n_seen + s->n_defines + s->n_computed != before);
}

/* The command's -DNAME[=VALUE] (and -D NAME[=VALUE]) definitions. */
static void command_defines(scan *s, const char *const *flags, int n_flags)
{
    for (int i = 0; i < n_flags && !s->reaches; i++) {
        if (strncmp(flags[i], "-D", 2) != 0) continue;
        const char *def = flags[i][2] ? flags[i] + 2 : i + 1 < n_flags ? flags[++i] : "";
        const char *eq = strchr(def, '=');
        size_t len = 0;
        const char *value = eq ? definition_of(eq + 1, eq + 1 + strlen(eq + 1), &len) : NULL; /* -DNAME is 1: no header */
        keep(s, s->defines, &s->n_defines, def, eq ? (size_t)(eq - def) : strlen(def), value, len);
    }
}

bool pe_unit_reaches_pe(const char *source, const char *const *flags, int n_flags)
{
    const char **dirs = calloc((size_t)n_flags + 1, sizeof *dirs);
    char **seen = calloc(MAX_FILES, sizeof *seen);
    macro *defines = calloc(MAX_MACROS, sizeof *defines), *computed = calloc(MAX_MACROS, sizeof *computed);
    if (!dirs || !seen || !defines || !computed) {
        free(dirs), free(seen), free(defines), free(computed);
        return true;
    }
    scan s = {.dirs = dirs, .seen = seen, .defines = defines, .computed = computed};
    command_defines(&s, flags, n_flags);
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
    if (!s.reaches) follow_computed(&s);
    for (int k = 0; k < s.n_seen; k++) free(s.seen[k]);
    for (int k = 0; k < s.n_defines; k++) free(s.defines[k].name), free(s.defines[k].value);
    for (int k = 0; k < s.n_computed; k++) free(s.computed[k].name), free(s.computed[k].value);
    free(seen), free(dirs), free(defines), free(computed);
    return s.reaches;
}
