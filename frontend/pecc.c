/* pecc.c — the compiler launcher: `pecc gcc -O2 -c app.c -o app.o`,
 * `CC="pecc gcc"`, CMAKE_C_COMPILER_LAUNCHER=pecc.  It runs the real
 * compiler with the command line unchanged and adds, per C source, one object
 * holding the unit's static IR: compile-only commands get it merged into the
 * object they produce (`ld -r`), compile-and-link commands get it linked in.
 * libclang parses each source with the command's preprocessor and language
 * flags; a source it cannot parse still compiles, with a warning and no IR.
 * A source that never includes pe.h (includes.c decides from its #include
 * lines) is left to the compiler alone: same command, same object.
 *
 *   pecc [--print-ir] COMPILER ARGS...   --print-ir: the IR as text on stdout
 *   pecc --version */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "includes.h"

static const char *tmp_dir;
static const char *lto_flag; /* -flto...: the IR object is LTO too, merged by the compiler's incremental link */

/* Runs argv; its exit status (127: could not start it). */
static int run(char *const *argv)
{
    pid_t pid = fork();
    if (pid < 0) return 127;
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "pecc: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 127;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Flags that take the next argument as their operand. */
static bool takes_operand(const char *a)
{
    static const char *const with[] = {"-o", "-MF", "-MT", "-MQ", "-include", "-isystem", "-iquote", "-idirafter",
                                       "-imacros", "-x", "-I", "-D", "-U", "-L", "-l", "-Xlinker", "-T", NULL};
    for (int i = 0; with[i]; i++)
        if (strcmp(a, with[i]) == 0) return true;
    return false;
}

/* Whether libclang should see this flag (preprocessor, language, target). */
static bool parse_flag(const char *a)
{
    static const char *const prefixes[] = {"-I", "-D", "-U", "-std=", "-include", "-isystem", "-iquote", "-idirafter",
                                           "-imacros", "-O", "-m32", "-m64", "-fsigned-char", "-funsigned-char",
                                           "-fopenmp", NULL};
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(a, prefixes[i], strlen(prefixes[i])) == 0) return true;
    return false;
}

/* The extractor (pecc_extract.c), beside this program. */
static char extractor[4096];
static bool find_extractor(void)
{
    ssize_t n = readlink("/proc/self/exe", extractor, sizeof extractor - 32);
    if (n <= 0) return false;
    extractor[n] = 0;
    char *slash = strrchr(extractor, '/');
    if (!slash) return false;
    strcpy(slash + 1, "pecc-extract");
    return access(extractor, X_OK) == 0;
}

/* Extracts a source's IR (pecc-extract, which warns when it cannot) and
 * compiles the object carrying it into `obj_path`; false when there is
 * none. */
static bool ir_object(const char *cc, const char *source, const char *const *flags, int n_flags, const char *obj_path,
                      bool print)
{
    char c_path[4200];
    snprintf(c_path, sizeof c_path, "%s/ir.c", tmp_dir);
    if (!extractor[0] && !find_extractor()) {
        fprintf(stderr, "pecc: warning: %s: compiled without static IR: no pecc-extract beside pecc\n", source);
        extractor[0] = '-'; /* warned: do not look again */
        return false;
    }
    if (extractor[0] == '-') return false;
    const char **argv = calloc((size_t)n_flags + 6, sizeof *argv);
    if (!argv) return false;
    int a = 0;
    argv[a++] = extractor;
    if (print) argv[a++] = "--print-ir";
    argv[a++] = source;
    argv[a++] = c_path;
    for (int i = 0; i < n_flags; i++) argv[a++] = flags[i];
    argv[a] = NULL;
    fflush(stdout);
    int rc = run((char *const *)argv);
    free(argv);
    if (rc != 0) return false; /* it warned */
    char *cc_argv[] = {(char *)cc, "-c", "-O0", "-fPIC", "-w", "-o", (char *)obj_path, c_path, (char *)lto_flag, NULL};
    if (run(cc_argv) != 0) {
        fprintf(stderr, "pecc: warning: %s: the object holding its static IR did not compile\n", source);
        return false;
    }
    return true;
}

/* Merges the IR object into the compiler's output object: `ld -r`, or for
 * LTO objects (whose plain sections the linker plugin would drop) the
 * compiler's own incremental link, which keeps them LTO. */
static bool merge(const char *cc, const char *obj, const char *ir_obj)
{
    char merged[4200];
    snprintf(merged, sizeof merged, "%s/merged.o", tmp_dir);
    char *ld[] = {"ld", "-r", "-o", merged, (char *)obj, (char *)ir_obj, NULL};
    char *incremental[] = {(char *)cc, (char *)lto_flag, "-r", "-nostdlib", "-o", merged, (char *)obj, (char *)ir_obj, NULL};
    if (run(lto_flag ? incremental : ld) != 0) return false;
    char *mv[] = {"cp", merged, (char *)obj, NULL}; /* keeps the object's own permissions and directory */
    return run(mv) == 0;
}

static void remove_tmp(void)
{
    if (!tmp_dir) return;
    char *argv[] = {"rm", "-rf", (char *)tmp_dir, NULL};
    run(argv);
}

int main(int argc, char **argv)
{
    int first = 1;
    bool print = false;
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("pecc %s\n", PE_VERSION_STRING);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--print-ir") == 0) print = true, first = 2;
    if (argc <= first) {
        fprintf(stderr, "usage: pecc [--print-ir] COMPILER ARGS...   (e.g. pecc gcc -O2 -c app.c -o app.o)\n");
        return 2;
    }
    char **cmd = argv + first;
    int n = argc - first;
    const char *cc = cmd[0];
    bool compile_only = false, other_mode = false;
    const char *output = NULL;
    const char **sources = calloc((size_t)n, sizeof *sources);
    const char **flags = calloc((size_t)n + 2, sizeof *flags);
    int n_sources = 0, n_flags = 0;
    if (!sources || !flags) return 1;
    for (int i = 1; i < n; i++) {
        const char *a = cmd[i];
        if (strcmp(a, "-c") == 0) compile_only = true;
        else if (strcmp(a, "-E") == 0 || strcmp(a, "-S") == 0 || strcmp(a, "-M") == 0 || strcmp(a, "-MM") == 0)
            other_mode = true;
        else if (strcmp(a, "-o") == 0 && i + 1 < n) output = cmd[i + 1];
        else if (strncmp(a, "-flto", 5) == 0 && strcmp(a, "-flto=none") != 0 && strncmp(a, "-flto-", 6) != 0) lto_flag = a;
        else if (strcmp(a, "-fno-lto") == 0) lto_flag = NULL;
        if (a[0] != '-' && ends_with(a, ".c")) {
            sources[n_sources++] = a;
            continue;
        }
        if (parse_flag(a)) {
            flags[n_flags++] = a;
            if (takes_operand(a) && i + 1 < n) flags[n_flags++] = cmd[++i];
            continue;
        }
        if (takes_operand(a) && i + 1 < n) i++;
    }
    /* units that never include pe.h have nothing to extract: the compiler
     * alone compiles them (includes.c), the same object as without pecc */
    int n_pe = 0;
    for (int s = 0; s < n_sources; s++) {
        if (pe_unit_reaches_pe(sources[s], flags, n_flags)) sources[n_pe++] = sources[s];
        else if (print) fprintf(stderr, "pecc: %s does not include pe.h: no static IR\n", sources[s]);
    }
    bool one_object = compile_only && output && n_sources == 1; /* -o names the one object */
    n_sources = n_pe;
    if (n_sources == 0 || other_mode) { /* nothing for pecc to add */
        free(sources), free(flags);
        execvp(cc, cmd);
        fprintf(stderr, "pecc: cannot run %s: %s\n", cc, strerror(errno));
        return 127;
    }
    char tmpl[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/pecc.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    tmp_dir = mkdtemp(tmpl);
    if (!tmp_dir) fprintf(stderr, "pecc: warning: no temporary directory (%s): compiling without static IR\n", tmpl);
    int rc;
    if (compile_only) {
        rc = run(cmd);
        for (int s = 0; rc == 0 && tmp_dir && s < n_sources; s++) {
            char obj[4200], ir_obj[4200];
            if (one_object) {
                snprintf(obj, sizeof obj, "%s", output);
            } else { /* the compiler's own name for it: the source's base name with .o, here */
                char *copy = strdup(sources[s]);
                char *base = basename(copy);
                snprintf(obj, sizeof obj, "%.*s.o", (int)strlen(base) - 2, base);
                free(copy);
            }
            snprintf(ir_obj, sizeof ir_obj, "%s/ir%d.o", tmp_dir, s);
            if (ir_object(cc, sources[s], flags, n_flags, ir_obj, print) && !merge(cc, obj, ir_obj))
                fprintf(stderr, "pecc: warning: %s: could not add the static IR to %s\n", sources[s], obj);
        }
    } else {
        /* compile and link: the IR objects join the link */
        char **full = calloc((size_t)(n + n_sources + 1), sizeof *full);
        if (!full) return 1;
        int m = 0;
        for (int i = 0; i < n; i++) full[m++] = cmd[i];
        for (int s = 0; tmp_dir && s < n_sources; s++) {
            char ir_obj[4200];
            snprintf(ir_obj, sizeof ir_obj, "%s/ir%d.o", tmp_dir, s);
            if (ir_object(cc, sources[s], flags, n_flags, ir_obj, print)) full[m++] = strdup(ir_obj);
        }
        full[m] = NULL;
        rc = run(full);
        free(full);
    }
    remove_tmp();
    free(sources), free(flags);
    return rc;
}
