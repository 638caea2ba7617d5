/* diskcache.c — the program cache on disk.  Each compilation's shared object
 * (from gcc_jit_context_compile_to_file) is sealed with a trailer — magic,
 * the object's size and its FNV-1a hash — written to a temporary file and
 * renamed into place, then hard-linked under the name of every kernel it
 * holds: <kernel hash>-<PE version>-<ISA>-<code generator build>.so.  A load reads the file, checks
 * the trailer (a truncated or corrupt file is removed with a warning and the
 * kernel recompiled) and touches it for LRU eviction; the CPU executor then
 * loads it (links it), and a file that does not load is discarded too.  The
 * directory is created 0700 and refused if another user could write to it:
 * loading code from it would run whatever they put there. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskcache.h"
#include "../codegen/cpu_gccjit.h"
#include "../../exec/base/error.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/runtime.h"
#include "../../irformat/fnv.h"
#define TRAILER_MAGIC "PEKCACHE"
#define DEFAULT_CAP (512ll << 20)

typedef struct {
    char magic[8];
    uint64_t size; /* bytes of the shared object before the trailer */
    uint64_t hash; /* FNV-1a of those bytes */
} trailer;

static struct {
    bool enabled;
    char dir[4096];
    char isa[32];
    long long cap;
    unsigned temp_counter;
} cache;

bool pe_diskcache_enabled(void) { return cache.enabled; }

static uint64_t fnv1a(const unsigned char *p, size_t n) { return pe_fnv_bytes(PE_FNV_OFFSET, p, n); }

static bool make_dirs(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(tmp, 0700) == 0 || errno == EEXIST;
}

bool pe_diskcache_open(const char *dir, const char *isa)
{
    cache.enabled = false;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (dir && *dir) snprintf(cache.dir, sizeof cache.dir, "%s", dir);
    else if (xdg && *xdg) snprintf(cache.dir, sizeof cache.dir, "%s/pe", xdg);
    else if (home && *home) snprintf(cache.dir, sizeof cache.dir, "%s/.cache/pe", home);
    else {
        pe_log_message(PE_LOG_WARN, "no PE_CACHE_DIR, XDG_CACHE_HOME or HOME: compiled kernels are not kept on disk");
        return false;
    }
    if (!make_dirs(cache.dir)) {
        pe_log_message(PE_LOG_WARN, "cannot create the kernel cache %s (%s): compiled kernels are not kept on disk",
                       cache.dir, strerror(errno));
        return false;
    }
    struct stat st;
    if (stat(cache.dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
        pe_log_message(PE_LOG_WARN,
                       "the kernel cache %s is not a directory owned by this user and closed to others (mode 0700): "
                       "compiled kernels are not kept on disk",
                       cache.dir);
        return false;
    }
    snprintf(cache.isa, sizeof cache.isa, "%s", isa);
    const char *cap = getenv("PE_CACHE_MAX");
    cache.cap = cap && *cap ? atoll(cap) : DEFAULT_CAP;
    if (cache.cap <= 0) cache.cap = DEFAULT_CAP;
    cache.enabled = true;
    return true;
}

void pe_diskcache_close(void) { cache.enabled = false; }

static void blob_path(const kir_kernel *k, const char *tag, const char *ext, char *out, size_t n)
{
    snprintf(out, n, "%s/%016llx-%s-%s-%08x.%s", cache.dir, (unsigned long long)kir_hash(k), PE_VERSION_STRING, tag,
             pe_gccjit_build_stamp(), ext);
}

static void kernel_path(const kir_kernel *k, char *out, size_t n) { blob_path(k, cache.isa, "so", out, n); }

/* Reads a whole file; NULL if it cannot. */
static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long len = ftell(f);
        if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1))) {
            if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
                free(buf);
                buf = NULL;
            } else {
                *size = (size_t)len;
            }
        }
    }
    fclose(f);
    return buf;
}

static bool sealed_ok(const unsigned char *buf, size_t size)
{
    if (size < sizeof(trailer)) return false;
    trailer t;
    memcpy(&t, buf + size - sizeof t, sizeof t);
    return memcmp(t.magic, TRAILER_MAGIC, 8) == 0 && t.size == size - sizeof t && t.hash == fnv1a(buf, t.size);
}

bool pe_diskcache_find(const kir_kernel *k, char *path, size_t n)
{
    if (!cache.enabled) return false;
    kernel_path(k, path, n);
    size_t size = 0;
    unsigned char *buf = read_file(path, &size);
    if (!buf) return false;
    bool ok = sealed_ok(buf, size);
    free(buf);
    if (!ok) {
        pe_diskcache_discard(path, "is truncated or corrupt");
        return false;
    }
    utimensat(AT_FDCWD, path, NULL, 0); /* most recently used */
    return true;
}

void pe_diskcache_discard(const char *path, const char *why)
{
    pe_log_message(PE_LOG_WARN, "kernel cache file %s %s: removed, the kernel is recompiled", path, why);
    unlink(path);
}

bool pe_diskcache_has(const kir_kernel *k)
{
    if (!cache.enabled) return false;
    char path[4200];
    kernel_path(k, path, sizeof path);
    return access(path, R_OK) == 0;
}

bool pe_diskcache_has_blob(const kir_kernel *k, const char *tag)
{
    if (!cache.enabled) return false;
    char path[4200];
    blob_path(k, tag, "bin", path, sizeof path);
    return access(path, R_OK) == 0;
}

bool pe_diskcache_temp_path(char *out, size_t n)
{
    if (!cache.enabled) return false;
    snprintf(out, n, "%s/.tmp-%d-%u.so", cache.dir, (int)getpid(), cache.temp_counter++);
    return true;
}

/* Removes the least recently used files until the directory fits the cap. */
static void evict(void)
{
    DIR *d = opendir(cache.dir);
    if (!d) return;
    struct file { char name[256]; long long size; struct timespec used; } *files = NULL;
    size_t n = 0, cap = 0;
    long long total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", cache.dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (!PE_GROW(files, cap, n + 1)) break;
        snprintf(files[n].name, sizeof files[n].name, "%s", e->d_name);
        files[n].size = st.st_nlink > 1 ? 0 : (long long)st.st_size; /* shared links free nothing alone */
        files[n].used = st.st_mtim;
        total += (long long)st.st_size / (st.st_nlink ? (long long)st.st_nlink : 1);
        n++;
    }
    closedir(d);
    while (total > cache.cap && n > 0) {
        size_t oldest = 0;
        for (size_t i = 1; i < n; i++)
            if (files[i].used.tv_sec < files[oldest].used.tv_sec ||
                (files[i].used.tv_sec == files[oldest].used.tv_sec && files[i].used.tv_nsec < files[oldest].used.tv_nsec))
                oldest = i;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", cache.dir, files[oldest].name);
        struct stat st;
        if (stat(path, &st) == 0) total -= (long long)st.st_size / (st.st_nlink ? (long long)st.st_nlink : 1);
        unlink(path);
        files[oldest] = files[--n];
    }
    free(files);
}

/* Files the sealed file at `path` under each kernel's name (tag, ext). */
static void link_under_names(const char *path, const kir_kernel *const *kernels, size_t n, const char *tag, const char *ext)
{
    for (size_t i = 0; i < n; i++) {
        char final[4200], tmp[4300];
        blob_path(kernels[i], tag, ext, final, sizeof final);
        /* link to a private name, then rename: readers see a whole file or none */
        snprintf(tmp, sizeof tmp, "%s.%d.link", final, (int)getpid());
        unlink(tmp);
        if (link(path, tmp) == 0 && rename(tmp, final) != 0) unlink(tmp);
    }
}

static trailer seal(const void *data, size_t size)
{
    trailer t;
    memcpy(t.magic, TRAILER_MAGIC, 8);
    t.size = size;
    t.hash = fnv1a(data, size);
    return t;
}

void pe_diskcache_store(const char *path, const kir_kernel *const *kernels, size_t n)
{
    size_t size = 0;
    unsigned char *buf = read_file(path, &size);
    if (!buf) {
        unlink(path);
        return;
    }
    trailer t = seal(buf, size);
    free(buf);
    FILE *f = fopen(path, "ab");
    bool sealed = f && fwrite(&t, sizeof t, 1, f) == 1;
    if (f && fclose(f) != 0) sealed = false;
    if (sealed) link_under_names(path, kernels, n, cache.isa, "so");
    unlink(path);
    evict();
}

void *pe_diskcache_load_blob(const kir_kernel *k, const char *tag, size_t *size)
{
    if (!cache.enabled) return NULL;
    char path[4200];
    blob_path(k, tag, "bin", path, sizeof path);
    size_t n = 0;
    unsigned char *buf = read_file(path, &n);
    if (!buf) return NULL;
    if (!sealed_ok(buf, n)) {
        pe_diskcache_discard(path, "is truncated or corrupt");
        free(buf);
        return NULL;
    }
    *size = n - sizeof(trailer);
    utimensat(AT_FDCWD, path, NULL, 0); /* most recently used */
    return buf;
}

void pe_diskcache_store_blob(const kir_kernel *const *kernels, size_t n, const char *tag, const void *data, size_t size)
{
    char path[4200];
    if (!pe_diskcache_temp_path(path, sizeof path)) return;
    trailer t = seal(data, size);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, size, f) == size && fwrite(&t, sizeof t, 1, f) == 1;
    if (f && fclose(f) != 0) ok = false;
    if (ok) link_under_names(path, kernels, n, tag, "bin");
    unlink(path);
    evict();
}

bool pe_diskcache_path(const char *name, char *out, size_t n)
{
    if (!pe_diskcache_enabled()) return false;
    return (size_t)snprintf(out, n, "%s/%s", cache.dir, name) < n;
}
