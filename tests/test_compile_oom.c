/* test_compile_oom.c — libgccjit out of memory (issue 22, item 4): a
 * program whose address space is capped (RLIMIT_AS, as `ulimit -v`) just
 * above what it uses, so that compiling a kernel cannot get the memory,
 * still computes the values of a plain C loop (the interpreter computes the
 * kernel) and says why in a warning; it is not ended by libgccjit's
 * exit(1).  The read is computed into the caller's buffer, the handle
 * kept: the interpreter, which keeps every value, keeps a copy, so a second
 * read gives the same values.  The program runs in a child process of the test (the cap is
 * for good), with the CPU JIT whatever executor ctest names and a fresh
 * disk cache, so that the kernel has to be compiled. */
#include "test_util.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 8192 /* 32 KB: read straight into the caller's buffer (api_read.c) */
/* above the address space in use: room for the program's own needs, not for
 * a compiler's (gcc 12 needs more than 8 MB for this kernel) */
#define HEADROOM (4L << 20)

static long address_space_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

/* The capped program; its exit status: 0 values right and the compile
 * failed, 2 a wrong value, 3 the compile did not fail (the cap missed),
 * 4 no runtime. */
static int capped_program(const char *cache_dir)
{
    setenv("PE_EXECUTOR", "jit", 1);
    setenv("PE_LOG", "warn", 1);
    setenv("PE_CACHE_DIR", cache_dir, 1);
    setenv("PE_AOT", "0", 1);
    if (pe_init(NULL) != PE_OK) return 4;
    static float x[N], y[N], again[N];
    for (int i = 0; i < N; i++) x[i] = (float)i / N - 0.5f;
    struct rlimit cap = {(rlim_t)(address_space_bytes() + HEADROOM), (rlim_t)(address_space_bytes() + HEADROOM)};
    if (setrlimit(RLIMIT_AS, &cap) != 0) return 4;
    pe_array a = pe_f32_1d(x, N);
    pe_array r = pe_add(pe_mul(pe_sin(a), 2.0f), pe_exp(pe_neg(a)));
    if (pe_read(r, y, sizeof y) != PE_OK) return 2;
    for (int i = 0; i < N; i++) {
        double want = sin((double)x[i]) * 2.0 + exp(-(double)x[i]); /* the oracle */
        if (fabs(y[i] - want) > 1e-6 * fabs(want) + 1e-7) return 2;
    }
    memset(y + N / 2, 0, sizeof y / 2); /* the caller reuses its buffer */
    if (pe_read(r, again, sizeof again) != PE_OK) return 2;
    for (int i = 0; i < N; i++) {
        double want = sin((double)x[i]) * 2.0 + exp(-(double)x[i]);
        if (fabs(again[i] - want) > 1e-6 * fabs(want) + 1e-7) return 2;
    }
    pe_stats st;
    pe_get_stats(&st);
    if (st.reads_in_place != 1) return 2;
    pe_release(a), pe_release(r);
    pe_shutdown();
    return st.compile_failures > 0 ? 0 : 3;
}

static void test_compile_out_of_memory_falls_back(void **state)
{
    (void)state;
    char dir[] = "/tmp/pe_compile_oom_XXXXXX", log[4200];
    assert_non_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/stderr.txt", dir);
    char cache[4200];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(log, "w", stderr)) _exit(5);
        int rc = capped_program(cache);
        fflush(stderr);
        _exit(rc);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    char text[8192] = "";
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    tu_remove_dir(dir);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the capped program ended with %s %d; its stderr:\n%s", WIFEXITED(status) ? "status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), text);
    /* the warning says that the compile failed, why, and who computes */
    if (!strstr(text, "compiling") || !strstr(text, "the interpreter computes") || !strstr(text, "out of memory"))
        fail_msg("no warning about the failed compile; stderr:\n%s", text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compile_out_of_memory_falls_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
