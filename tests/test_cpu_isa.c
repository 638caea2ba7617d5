/* test_cpu_isa.c — PE_CPU_ISA caps the level the CPU generator targets
 * (issue 41): with x86-64-v2 the kernels hold no AVX register, with
 * x86-64-v3 no AVX-512 one (objdump reads the disk cache's objects, which are
 * named by level), the device reports the capped level, a level above the
 * machine's or a misspelt one leaves the machine's, and every level's values
 * agree with a C loop in double (within the f32 primitives' ulp: the levels
 * differ in FMA, so not bitwise). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

enum { N = 1 << 16 };
static char cache_dir[] = "/tmp/pe-test-cpu-isa-XXXXXX";
static float x[N];

/* The level the machine has: the device's level without a cap. */
static int level_of(const char *name)
{
    static const char *const levels[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
    for (int i = 0; i < 4; i++)
        if (strcmp(name, levels[i]) == 0) return i;
    return -1;
}

/* Runs one program under PE_CPU_ISA=isa (NULL: unset): its values in out,
 * the device's level in arch. */
static void run_at(const char *isa, float *out, char arch[32])
{
    if (isa) setenv("PE_CPU_ISA", isa, 1);
    else unsetenv("PE_CPU_ISA");
    pe_config cfg = {.cache_dir = cache_dir, .log_level = PE_LOG_ERROR + 1};
    assert_int_equal(pe_init(&cfg), PE_OK);
    pe_device_info info;
    assert_int_equal(pe_device_info(0, &info), PE_OK);
    snprintf(arch, 32, "%s", info.arch);
    pe_scope sc = pe_scope_begin();
    pe_array a = pe_f32_1d(x, N);
    pe_array y = pe_add(pe_mul(pe_exp(a), 2.0f), pe_div(pe_sqrt(a), pe_add(a, 1.0f)));
    assert_int_equal(pe_read(y, out, sizeof(float) * N), PE_OK);
    pe_scope_end(sc);
    pe_stats st;
    pe_get_stats(&st);
    assert_int_equal(st.compile_failures, 0);
    pe_shutdown();
    unsetenv("PE_CPU_ISA");
}

/* Whether any kernel object of the cache compiled for level isa names a
 * register of the given prefix ("%ymm", "%zmm") in its disassembly; how many
 * such objects there are in *objects. */
static bool objects_use(const char *isa, const char *reg, int *objects)
{
    DIR *d = opendir(cache_dir);
    assert_non_null(d);
    char tag[48];
    snprintf(tag, sizeof tag, "-%s-", isa);
    bool found = false;
    *objects = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, tag) || !strstr(e->d_name, ".so")) continue;
        ++*objects;
        char cmd[512];
        snprintf(cmd, sizeof cmd, "objdump -d '%s/%s' 2>/dev/null | grep -c '%s' 2>/dev/null", cache_dir, e->d_name, reg);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        long count = 0;
        if (fscanf(p, "%ld", &count) != 1) count = 0;
        pclose(p);
        found |= count > 0;
    }
    closedir(d);
    return found;
}

/* The C loop in double: each f32 primitive is within 1 ulp, each f32
 * operation rounds once; 4 ulp of the result bound them together. */
static void check_against_c(const float *got, const char *arch)
{
    for (int i = 0; i < N; i++) {
        double want = 2.0 * exp((double)x[i]) + sqrt((double)x[i]) / ((double)x[i] + 1.0);
        if (fabs(got[i] - want) > 4 * 0x1p-23 * fabs(want))
            fail_msg("%s: x[%d] = %g: %.9g, the C loop %.9g", arch, i, x[i], got[i], want);
    }
}

static void test_levels(void **state)
{
    (void)state;
    if (!mkdtemp(cache_dir)) fail_msg("mkdtemp");
    for (int i = 0; i < N; i++) x[i] = (float)i / 997.0f;
    static float machine[N], v2[N], v3[N], other[N];
    char arch[32], machine_arch[32];
    run_at(NULL, machine, machine_arch);
    int have = level_of(machine_arch);
    if (have < 1) {
        printf("machine level %s: below x86-64-v2, nothing to cap\n", machine_arch);
        return;
    }
    check_against_c(machine, machine_arch);

    run_at("x86-64-v2", v2, arch);
    assert_string_equal(arch, "x86-64-v2");
    int objects;
    assert_false(objects_use("x86-64-v2", "%ymm", &objects));
    assert_false(objects_use("x86-64-v2", "%zmm", &objects));
    assert_true(objects > 0);
    check_against_c(v2, arch);

    if (have >= 2) {
        run_at("x86-64-v3", v3, arch);
        assert_string_equal(arch, "x86-64-v3");
        assert_true(objects_use("x86-64-v3", "%ymm", &objects)); /* AVX2 is used ... */
        assert_false(objects_use("x86-64-v3", "%zmm", &objects)); /* ... and nothing above it */
        check_against_c(v3, arch);
    }
    /* a level above the machine's, or none, leaves the machine's level */
    if (have < 3) {
        run_at("x86-64-v4", other, arch);
        assert_string_equal(arch, machine_arch);
    }
    run_at("avx2", other, arch);
    assert_string_equal(arch, machine_arch);
    check_against_c(other, arch);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_levels)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
