/* compile_process.c — the CPU's compilations run in a child process.
 * libgccjit ends the process it runs in when it cannot allocate (gcc's
 * xmalloc_failed: "out of memory", exit(1)), and a compiler bug may crash
 * it; in a child that costs one compilation: the parent sees the child end
 * without finishing, warns, and the provisioning's failure policy applies
 * (the interpreter computes the kernel).  The artifact is a file (the
 * shared object the CPU executor links), so nothing but a status and the
 * compiler's messages has to come back.
 *
 * Why fork and not a compile server started at pe_init: the child needs
 * the kernel IR and libgccjit, both already in this process; a server
 * would need the kernel IR serialised and a protocol, for a saving that is
 * small next to a compilation (measured: bench/RESULTS.md, "compile in a
 * child").  fork copies page tables, not memory, and the child writes to
 * little of what it shares.  vfork is no option: the child runs a whole
 * compiler in the parent's memory.
 *
 * A fork from a threaded process: the child holds only the forking thread,
 * so it must not need a lock another thread held.  glibc makes malloc and
 * stdio usable in the child; libgccjit's own lock is free because every
 * compilation of ours goes through here one at a time; the runtime lock
 * is not taken around this fork (pe_api_fork_bare): the child never calls
 * PE.  What the application registered must not run in the child: fatal
 * signals are reset to their defaults, and an exit() from inside the
 * compiler runs our atexit handler first, which ends the child at once
 * (the application's atexit handlers and stdio buffers are the parent's).
 *
 * Not under a sanitizer's runtime (ASan, TSan, MSan in the process, whether
 * PE or the application was built with it): their allocators are not
 * fork-safe (clang 14's ASan: a child forked while another thread held the
 * allocator's lock waits for it for ever, seen as a hang of
 * test_random_programs), so there the compile runs in the process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compile_process.h"
#include "../../exec/base/runtime.h"

#define KEPT_OUTPUT 2048   /* the end of the child's messages (its stderr, the compiler's errors) */
#define DEADLINE_S 600     /* a compilation that takes longer is stopped: a hang costs a kernel, not the program */
#define EXIT_FAILED 1      /* fn returned false: its message follows */
#define EXIT_ENDED 70      /* the compiler called exit() (libgccjit's out of memory) */

/* Written last by a child whose compilation succeeded: a status that an
 * application ignoring SIGCHLD (no exit status to wait for) cannot lose. */
static const char done_mark[] = "\n\001pe: compiled\n";

static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w, n -= (size_t)w;
    }
}

static void end_child_now(void)
{
    fflush(stderr); /* the compiler's last words, into the pipe */
    _exit(EXIT_ENDED);
}

static _Noreturn void run_child(int fd, pe_compile_fn fn, void *arg)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGPIPE, SIGTERM, SIGINT};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
    atexit(end_child_now); /* registered last, so it runs first */
    if (fd != STDERR_FILENO && dup2(fd, STDERR_FILENO) < 0) _exit(EXIT_FAILED);
    /* stderr now goes to the parent; what the application had buffered in
     * it is the parent's to write, and the compiler's messages must not
     * wait in a buffer (an application's stderr may be a buffered file) */
    __fpurge(stderr);
    setvbuf(stderr, NULL, _IONBF, 0);
    char err[1024] = "";
    bool ok = fn(arg, err, sizeof err);
    if (ok) write_all(fd, done_mark, sizeof done_mark - 1);
    else write_all(fd, err, strlen(err));
    _exit(ok ? 0 : EXIT_FAILED);
}

/* Reads the child's output until it closes its end (it and the assembler
 * and linker it runs have ended) or the deadline; keeps the last
 * KEPT_OUTPUT - 1 bytes in out.  False on the deadline. */
static bool collect(int fd, char *out, size_t *len)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    *len = 0;
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left_ms = DEADLINE_S * 1000L - ((now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L);
        if (left_ms <= 0) return false;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(left_ms > 60000 ? 60000 : left_ms));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return true; /* cannot wait on it: the exit status decides */
        if (r == 0) continue;
        char buf[512];
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return true;
        size_t g = (size_t)got, cap = KEPT_OUTPUT - 1; /* g < cap: keep the end (the mark, the last message) */
        if (*len + g > cap) {
            size_t drop = *len + g - cap;
            memmove(out, out + drop, *len - drop);
            *len -= drop;
        }
        memcpy(out + *len, buf, g);
        *len += g;
    }
}

/* The child's messages on one line: "a; b" (trailing blank lines dropped). */
static void one_line(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = 0;
    for (char *c = s; *c; c++)
        if (*c == '\n') *c = ';';
}

/* A sanitizer's runtime is in the process (its allocator would not survive
 * the fork). */
static bool sanitizer_runtime(void)
{
    static const char *const inits[] = {"__asan_init", "__tsan_init", "__msan_init", "__hwasan_init"};
    for (size_t i = 0; i < sizeof inits / sizeof inits[0]; i++)
        if (dlsym(RTLD_DEFAULT, inits[i])) return true;
    return false;
}

/* Decided once: PE_JIT_ISOLATE=0, or a sanitizer's runtime. */
static pthread_once_t decided = PTHREAD_ONCE_INIT;
static bool in_process;
static void decide(void)
{
    const char *isolate = getenv("PE_JIT_ISOLATE");
    in_process = (isolate && strcmp(isolate, "0") == 0) || sanitizer_runtime();
}

bool pe_compile_in_child(pe_compile_fn fn, void *arg, char *err, size_t n_err)
{
    pthread_once(&decided, decide);
    if (in_process) return fn(arg, err, n_err);
    pthread_mutex_lock(&one_at_a_time);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        pthread_mutex_unlock(&one_at_a_time);
        snprintf(err, n_err, "cannot start a compiler process: %s", strerror(errno));
        return false;
    }
    pe_api_fork_bare(true);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        run_child(fds[1], fn, arg);
    }
    int fork_errno = errno;
    pe_api_fork_bare(false);
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        pthread_mutex_unlock(&one_at_a_time);
        snprintf(err, n_err, "cannot start a compiler process: %s", strerror(fork_errno));
        return false;
    }
    char out[KEPT_OUTPUT];
    size_t len;
    bool in_time = collect(fds[0], out, &len);
    out[len] = 0;
    close(fds[0]);
    if (!in_time) kill(pid, SIGKILL);
    int status = 0;
    pid_t waited;
    while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
    pthread_mutex_unlock(&one_at_a_time);
    size_t mark = sizeof done_mark - 1;
    bool marked = len >= mark && memcmp(out + len - mark, done_mark, mark) == 0;
    bool exited_ok = waited == pid ? WIFEXITED(status) && WEXITSTATUS(status) == 0 : marked;
    if (marked && exited_ok) return true;
    if (marked) out[len - mark] = 0;
    one_line(out);
    if (!in_time)
        snprintf(err, n_err, "the compiler took more than %d s and was stopped", DEADLINE_S);
    else if (waited == pid && WIFSIGNALED(status))
        snprintf(err, n_err, "the compiler process died of signal %d (%s)%s%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), *out ? ": " : "", out);
    else if (waited == pid && WIFEXITED(status) && WEXITSTATUS(status) == EXIT_ENDED)
        /* gcc says "out of memory allocating N bytes" or "virtual memory exhausted" */
        snprintf(err, n_err, "%sthe compiler ended its process%s%s",
                 strstr(out, "out of memory") || strstr(out, "memory exhausted") ? "out of memory: " : "",
                 *out ? ": " : "", out);
    else
        snprintf(err, n_err, "%s", *out ? out : "the compiler process failed");
    return false;
}
