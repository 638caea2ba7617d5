/* bench_startup.c — what every PE program pays before its first op (issue
 * 36): a trivial program (pe_init, pe_shutdown) started `runs` times as a
 * process of its own, linked against libpe as users link it.  Reports the
 * median of the whole process's wall time (exec, the dynamic loader and the
 * libraries' constructors, pe_init, pe_shutdown, exit), the median of
 * pe_init + pe_shutdown inside it, the threads after pe_init
 * (/proc/self/status Threads:) and the address space then (VmSize).
 *
 *   bench_startup [runs] [matmul]   (default 20; matmul: the program also
 *                                   reads one 2 x 2 f64 product, so it
 *                                   loads OpenBLAS: threads and VmSize after it)
 *   bench_startup child [matmul]    one program: prints its numbers */
#include <pe.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

extern char **environ;

static long status_field(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    if (f) fclose(f);
    return v;
}

static int child(bool matmul)
{
    double t0 = now();
    if (pe_init(NULL) != PE_OK) return 1;
    if (matmul) {
        double a[4] = {1, 2, 3, 4}, out[4];
        int64_t s[2] = {2, 2};
        pe_array x = pe_from_host(PE_F64, 2, s, a), y = pe_matmul(x, x);
        if (pe_read(y, out, sizeof out) != PE_OK || out[0] != 7) return 1;
        pe_release(x), pe_release(y);
    }
    long threads = status_field("Threads"), vm_kb = status_field("VmSize");
    pe_shutdown();
    double t1 = now();
    printf("%ld %ld %.6f\n", threads, vm_kb, t1 - t0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0) return child(argc > 2 && strcmp(argv[2], "matmul") == 0);
    int runs = argc > 1 ? atoi(argv[1]) : 20;
    bool matmul = argc > 2 && strcmp(argv[2], "matmul") == 0;
    if (runs < 1) runs = 20;
    double *wall = bench_alloc_or_exit(calloc((size_t)runs, sizeof *wall));
    double *inside = bench_alloc_or_exit(calloc((size_t)runs, sizeof *inside));
    long threads = -1, vm_kb = -1;
    for (int r = 0; r < runs; r++) {
        int fds[2];
        if (pipe(fds) != 0) return 1;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        char *args[] = {argv[0], "child", matmul ? "matmul" : NULL, NULL};
        pid_t pid;
        double t0 = now();
        if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ) != 0) return 1;
        close(fds[1]);
        int status = 0;
        waitpid(pid, &status, 0);
        wall[r] = now() - t0;
        posix_spawn_file_actions_destroy(&fa);
        char out[256] = {0};
        ssize_t got = read(fds[0], out, sizeof out - 1);
        close(fds[0]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got <= 0 ||
            sscanf(out, "%ld %ld %lf", &threads, &vm_kb, &inside[r]) != 3) {
            fprintf(stderr, "bench_startup: run %d failed\n", r);
            return 1;
        }
    }
    printf("runs %d%s: process %.2f ms, pe_init+%spe_shutdown %.2f ms (medians); threads after pe_init%s %ld; VmSize %ld kB\n",
           runs, matmul ? " (matmul)" : "", median(wall, runs) * 1e3, matmul ? "matmul+" : "", median(inside, runs) * 1e3,
           matmul ? " and the matmul" : "", threads, vm_kb);
    free(wall), free(inside);
    return 0;
}
