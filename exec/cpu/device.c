/* device.c — discovery of the processing elements at start-up.  Device 0 is
 * the host CPU: its model name, the x86-64 micro-architecture level the code
 * generators may target (x86-64-v2/v3/v4, detected with
 * __builtin_cpu_supports), memory and hardware threads, and the size of
 * the last-level cache a core sees.  PE_CPU_ISA caps the level
 * (pe_cpu_isa_capped).  CUDA devices come with the CUDA executor. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "../base/error.h"

static void cpu_model_name(char *out, size_t n)
{
    snprintf(out, n, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = 0;
        snprintf(out, n, "%s", colon);
        break;
    }
    fclose(f);
}

/* sysfs's last cache level of cpu0 is the cache one core shares with its
 * neighbours (one CCX's L3: 32 MiB on an EPYC, where sysconf's
 * _SC_LEVEL3_CACHE_SIZE, from cpuid through a VM, said 320 MiB); sysconf
 * where sysfs says nothing; 0 when neither knows. */
int64_t pe_cpu_last_level_cache_bytes(void)
{
    int64_t best = 0;
    int best_level = 0;
    for (int index = 0; index < 8; index++) {
        char path[96], text[32];
        int level = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
        FILE *f = fopen(path, "r");
        if (!f) break;
        bool ok = fscanf(f, "%d", &level) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        if (!ok || !(f = fopen(path, "r"))) continue;
        long long size = 0;
        char unit = 0;
        ok = fgets(text, sizeof text, f) != NULL && sscanf(text, "%lld%c", &size, &unit) >= 1;
        fclose(f);
        if (!ok || level < best_level) continue;
        best_level = level;
        best = size * (unit == 'K' ? 1024 : unit == 'M' ? 1048576 : 1);
    }
    if (best > 0) return best;
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return llc > 0 ? llc : 0;
}

/* The x86-64 micro-architecture levels, lowest first. */
static const char *const levels[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
enum { N_LEVELS = sizeof levels / sizeof levels[0] };

static const char *isa_level(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    bool v2 = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt") &&
              __builtin_cpu_supports("ssse3");
    bool v3 = v2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
              __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("avx");
    bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
              __builtin_cpu_supports("avx512vl");
    return levels[v4 ? 3 : v3 ? 2 : v2 ? 1 : 0];
#else
    return "generic";
#endif
}

static int level_index(const char *name)
{
    for (int i = 0; i < N_LEVELS; i++)
        if (name && strcmp(name, levels[i]) == 0) return i;
    return -1;
}

/* PE_CPU_ISA=x86-64-v2|x86-64-v3|x86-64-v4 makes the CPU generator target
 * that level instead of the machine's: one disk cache (keyed by the level)
 * then serves a cluster of node types, and every benchmark runs as AVX2 on
 * an AVX-512 machine.  Never above the machine's level: code for a level the
 * machine lacks would fault at its first instruction. */
const char *pe_cpu_isa_capped(const char *detected, bool warn)
{
    const char *want = getenv("PE_CPU_ISA");
    if (!want || !*want) return detected;
    int have = level_index(detected), asked = level_index(want);
    if (have < 0) {
        if (warn) pe_log_message(PE_LOG_WARN, "PE_CPU_ISA=%s: this machine is not x86-64 (%s); ignored", want, detected);
        return detected;
    }
    if (asked < 0) {
        if (warn)
            pe_log_message(PE_LOG_WARN, "PE_CPU_ISA=%s: not one of x86-64, x86-64-v2, x86-64-v3, x86-64-v4; "
                           "targeting the machine's %s", want, detected);
        return detected;
    }
    if (asked > have) {
        if (warn)
            pe_log_message(PE_LOG_WARN, "PE_CPU_ISA=%s is above this machine's level (%s): targeting %s", want,
                           detected, detected);
        return detected;
    }
    return levels[asked];
}

void pe_detect_cpu(pe_device_info *out)
{
    memset(out, 0, sizeof *out);
    out->kind = PE_DEVICE_CPU;
    cpu_model_name(out->name, sizeof out->name);
    snprintf(out->arch, sizeof out->arch, "%s", isa_level());
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out->memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->cores = cores > 0 ? (int)cores : 1;
}
