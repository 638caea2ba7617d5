/* diskcache.c — the program cache on disk.  Each compilation's shared object
 * (from gcc_jit_context_compile_to_file) is sealed with a trailer — magic,
 * the object's size and its MAC (keyed BLAKE2s, blake2s.c) — written to a
 * temporary file and renamed into place, then hard-linked under the name of
 * every kernel it holds: <kernel hash>-<PE version>-<ISA>-<code generator
 * build>.so.  A load reads the file, checks the trailer (a truncated, corrupt
 * or forged file is removed with a warning and the kernel recompiled) and
 * touches it for LRU eviction; the CPU executor then links the verified bytes
 * (never the file again), and code that does not link is discarded too.
 *
 * The directory is created 0700 and opened once (O_DIRECTORY): a symlink in
 * the path, the last component included (~/.cache on another disk), is
 * resolved then, and what is checked is the directory it reached (fstat on
 * the fd: ours, not writable by group or others; else refused with a
 * warning).  Every file is then reached through that fd (openat, linkat,
 * renameat, unlinkat, fstatat), so a path or a link swapped after pe_init (to
 * another user's cache, or another directory of ours) changes nothing; names
 * inside the directory are never followed (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW).  The MAC key is 32 random bytes in .key (0600) inside the
 * directory: only this user can read it, so only this user's PE can seal a
 * file that a load accepts.  Files are opened without following symlinks or
 * blocking (a FIFO in a file's place), and must be regular files we own. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskcache.h"
#include "blake2s.h"
#include "../codegen/cpu_gccjit.h"
#include "../../exec/base/error.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/runtime.h"
#include "../../irformat/safefile.h"
#define TRAILER_MAGIC "PEKCACH2" /* 2: a MAC, no longer FNV-1a */
#define DEFAULT_CAP (512ll << 20)
#define KEY_NAME ".key"
#define MAX_FILE ((size_t)1 << 30)

typedef struct {
    char magic[8];
    uint64_t size;                    /* bytes before the trailer */
    uint8_t mac[PE_BLAKE2S_BYTES];    /* keyed BLAKE2s of those bytes */
} trailer;

static struct {
    bool enabled;
    int dirfd;        /* the verified directory, kept open from open to close */
    char dir[PATH_MAX]; /* its path as given (a symlink's target when resolved), for messages only */
    char isa[32];
    uint8_t key[32];
    long long cap;
    _Atomic unsigned temp_counter; /* writers on several threads (kernels, FFTW's wisdom, spmv's loops): each its own name */
} cache = {.dirfd = -1};

bool pe_diskcache_enabled(void) { return cache.enabled; }

static bool make_dirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(tmp, 0700) == 0 || errno == EEXIST;
}

/* A file in the directory that only this user can have written. */
static bool ours(const struct stat *st) { return st->st_uid == geteuid() && !(st->st_mode & 022); }

/* The MAC key: .key if there is one (ours, 0600, 32 bytes), else 32 bytes
 * from getrandom filed there.  A new key is written to a private name and
 * linked into place, so two processes starting at once agree on one. */
static bool load_key(char *err, size_t n_err)
{
    struct stat st;
    int fd = pe_file_open_regular(cache.dirfd, KEY_NAME, &st, err, n_err);
    if (fd < 0 && errno == ENOENT) {
        char tmp[64];
        snprintf(tmp, sizeof tmp, ".key-%d", (int)getpid());
        unlinkat(cache.dirfd, tmp, 0);
        uint8_t key[32];
        int w = openat(cache.dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        bool made = w >= 0 && getrandom(key, sizeof key, 0) == (ssize_t)sizeof key &&
                    write(w, key, sizeof key) == (ssize_t)sizeof key;
        if (w >= 0 && close(w) != 0) made = false;
        if (made && linkat(cache.dirfd, tmp, cache.dirfd, KEY_NAME, 0) != 0 && errno != EEXIST) made = false;
        unlinkat(cache.dirfd, tmp, 0);
        if (!made) return snprintf(err, n_err, "cannot create its key (%s)", strerror(errno)), false;
        fd = pe_file_open_regular(cache.dirfd, KEY_NAME, &st, err, n_err);
    }
    if (fd < 0) return false;
    size_t len = 0;
    uint8_t *key = NULL;
    if (st.st_uid != geteuid() || (st.st_mode & 077) || st.st_size != (off_t)sizeof cache.key)
        snprintf(err, n_err, "its key %s is not 32 bytes of this user's, mode 0600", KEY_NAME);
    else
        key = pe_file_read_all(fd, &st, sizeof cache.key, &len, err, n_err);
    close(fd);
    if (!key) return false;
    memcpy(cache.key, key, sizeof cache.key);
    free(key);
    return true;
}

bool pe_diskcache_open(const char *dir, const char *isa)
{
    pe_diskcache_close();
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int len;
    if (dir && *dir) len = snprintf(cache.dir, sizeof cache.dir, "%s", dir);
    else if (xdg && *xdg) len = snprintf(cache.dir, sizeof cache.dir, "%s/pe", xdg);
    else if (home && *home) len = snprintf(cache.dir, sizeof cache.dir, "%s/.cache/pe", home);
    else {
        pe_log_message(PE_LOG_WARN, "no PE_CACHE_DIR, XDG_CACHE_HOME or HOME: compiled kernels are not kept on disk");
        return false;
    }
    /* a truncated path would be another directory (and the kernels' names
     * would not fit after it): refused whole */
    if (len < 0 || (size_t)len + 128 >= sizeof cache.dir) {
        pe_log_message(PE_LOG_WARN, "the kernel cache path (%d bytes) is too long (at most %zu): compiled kernels are not "
                       "kept on disk", len, sizeof cache.dir - 129);
        cache.dir[0] = 0;
        return false;
    }
    if (!make_dirs(cache.dir)) {
        pe_log_message(PE_LOG_WARN, "cannot create the kernel cache %s (%s): compiled kernels are not kept on disk",
                       cache.dir, strerror(errno));
        return false;
    }
    /* resolved here, once: a symlink (the last component's too) is followed
     * now, and the directory it reached is the one checked and kept */
    struct stat st, lst;
    bool link = lstat(cache.dir, &lst) == 0 && S_ISLNK(lst.st_mode);
    cache.dirfd = open(cache.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cache.dirfd < 0 || fstat(cache.dirfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        pe_log_message(PE_LOG_WARN,
                       "the kernel cache %s%s is not a directory owned by this user and closed to others (mode "
                       "0700): compiled kernels are not kept on disk",
                       cache.dir, link ? " (through a symlink)" : "");
        pe_diskcache_close();
        return false;
    }
    if (link) { /* messages name the directory in use, not the link that may change */
        char proc[64], real[PATH_MAX];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", cache.dirfd);
        ssize_t r = readlink(proc, real, sizeof real - 1);
        if (r > 0 && (size_t)r + 128 < sizeof cache.dir) real[r] = 0, snprintf(cache.dir, sizeof cache.dir, "%s", real);
    }
    char err[256];
    if (!load_key(err, sizeof err)) {
        pe_log_message(PE_LOG_WARN, "the kernel cache %s: %s: compiled kernels are not kept on disk", cache.dir, err);
        pe_diskcache_close();
        return false;
    }
    snprintf(cache.isa, sizeof cache.isa, "%s", isa);
    const char *cap = getenv("PE_CACHE_MAX");
    cache.cap = cap && *cap ? atoll(cap) : DEFAULT_CAP;
    if (cache.cap <= 0) cache.cap = DEFAULT_CAP;
    cache.enabled = true;
    return true;
}

void pe_diskcache_close(void)
{
    cache.enabled = false;
    if (cache.dirfd >= 0) close(cache.dirfd);
    cache.dirfd = -1;
    memset(cache.key, 0, sizeof cache.key);
}

static void blob_name(const kir_kernel *k, const char *tag, const char *ext, char *out, size_t n)
{
    snprintf(out, n, "%016llx-%s-%s-%08x.%s", (unsigned long long)kir_hash(k), PE_VERSION_STRING, tag,
             pe_gccjit_build_stamp(), ext);
}

static trailer seal(const void *data, size_t size)
{
    trailer t;
    memcpy(t.magic, TRAILER_MAGIC, 8);
    t.size = size;
    pe_blake2s(t.mac, cache.key, sizeof cache.key, data, size);
    return t;
}

static bool sealed_ok(const unsigned char *buf, size_t size)
{
    if (size < sizeof(trailer)) return false;
    trailer t, want;
    memcpy(&t, buf + size - sizeof t, sizeof t);
    if (memcmp(t.magic, TRAILER_MAGIC, 8) != 0 || t.size != size - sizeof t) return false;
    want = seal(buf, t.size);
    unsigned char diff = 0; /* no early exit: the time says nothing of the MAC */
    for (size_t i = 0; i < sizeof t.mac; i++) diff |= (unsigned char)(t.mac[i] ^ want.mac[i]);
    return diff == 0;
}

static void discard(const char *name, const char *why)
{
    pe_log_message(PE_LOG_WARN, "kernel cache file %s/%s %s: removed, it is rebuilt", cache.dir, name, why);
    unlinkat(cache.dirfd, name, 0);
}

void *pe_diskcache_read(const char *name, size_t *size)
{
    if (!cache.enabled) return NULL;
    struct stat st;
    char err[300];
    int fd = pe_file_open_regular(cache.dirfd, name, &st, err, sizeof err);
    if (fd < 0) {
        if (errno != ENOENT) discard(name, strchr(err, ':') ? strchr(err, ':') + 2 : err);
        return NULL;
    }
    size_t n = 0;
    unsigned char *buf = ours(&st) ? pe_file_read_all(fd, &st, MAX_FILE, &n, err, sizeof err) : NULL;
    if (buf && sealed_ok(buf, n)) {
        futimens(fd, NULL); /* most recently used */
        close(fd);
        *size = n - sizeof(trailer);
        return buf;
    }
    close(fd);
    free(buf);
    discard(name, !ours(&st) ? "is not this user's" : "is truncated, corrupt or not sealed with this user's key");
    return NULL;
}

/* Writes data, sealed, to a fresh private name in the directory; false if
 * it could not (nothing left behind). */
static bool write_sealed(const void *data, size_t size, char *tmp, size_t n)
{
    snprintf(tmp, n, ".tmp-%d-%u", (int)getpid(), atomic_fetch_add(&cache.temp_counter, 1));
    unlinkat(cache.dirfd, tmp, 0);
    int fd = openat(cache.dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    trailer t = seal(data, size);
    bool ok = write(fd, data, size) == (ssize_t)size && write(fd, &t, sizeof t) == (ssize_t)sizeof t;
    ok = close(fd) == 0 && ok;
    if (!ok) unlinkat(cache.dirfd, tmp, 0);
    return ok;
}

bool pe_diskcache_write(const char *name, const void *data, size_t size)
{
    char tmp[64];
    if (!cache.enabled || !write_sealed(data, size, tmp, sizeof tmp)) return false;
    bool ok = renameat(cache.dirfd, tmp, cache.dirfd, name) == 0;
    if (!ok) unlinkat(cache.dirfd, tmp, 0);
    return ok;
}

void pe_diskcache_remove(const char *name)
{
    if (cache.enabled) unlinkat(cache.dirfd, name, 0);
}

void *pe_diskcache_load_so(const kir_kernel *k, size_t *size)
{
    char name[256];
    blob_name(k, cache.isa, "so", name, sizeof name);
    return pe_diskcache_read(name, size);
}

void pe_diskcache_discard_so(const kir_kernel *k, const char *why)
{
    if (!cache.enabled) return;
    char name[256];
    blob_name(k, cache.isa, "so", name, sizeof name);
    discard(name, why);
}

static bool has_file(const char *name)
{
    struct stat st;
    return fstatat(cache.dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

bool pe_diskcache_has(const kir_kernel *k)
{
    if (!cache.enabled) return false;
    char name[256];
    blob_name(k, cache.isa, "so", name, sizeof name);
    return has_file(name);
}

bool pe_diskcache_has_blob(const kir_kernel *k, const char *tag)
{
    if (!cache.enabled) return false;
    char name[256];
    blob_name(k, tag, "bin", name, sizeof name);
    return has_file(name);
}

/* Removes the least recently used files until the directory fits the cap. */
static void evict(void)
{
    int fd = dup(cache.dirfd); /* fdopendir takes it over */
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return;
    }
    struct file { char name[256]; long long size; struct timespec used; } *files = NULL;
    size_t n = 0, cap = 0;
    long long total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        struct stat st;
        if (fstatat(cache.dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
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
        struct stat st;
        if (fstatat(cache.dirfd, files[oldest].name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            total -= (long long)st.st_size / (st.st_nlink ? (long long)st.st_nlink : 1);
        unlinkat(cache.dirfd, files[oldest].name, 0);
        files[oldest] = files[--n];
    }
    free(files);
}

/* Files data, sealed, under each kernel's name (tag, ext). */
static void store_under_names(const void *data, size_t size, const kir_kernel *const *kernels, size_t n, const char *tag,
                              const char *ext)
{
    char tmp[64];
    if (!cache.enabled || !write_sealed(data, size, tmp, sizeof tmp)) return;
    for (size_t i = 0; i < n; i++) {
        char final[256], link_tmp[300];
        blob_name(kernels[i], tag, ext, final, sizeof final);
        /* link to a private name, then rename: readers see a whole file or none */
        snprintf(link_tmp, sizeof link_tmp, ".%s.%d.link", final, (int)getpid());
        unlinkat(cache.dirfd, link_tmp, 0);
        if (linkat(cache.dirfd, tmp, cache.dirfd, link_tmp, 0) == 0 &&
            renameat(cache.dirfd, link_tmp, cache.dirfd, final) != 0)
            unlinkat(cache.dirfd, link_tmp, 0);
    }
    unlinkat(cache.dirfd, tmp, 0);
    evict();
}

void pe_diskcache_store(const char *path, const kir_kernel *const *kernels, size_t n)
{
    if (!cache.enabled) return;
    struct stat st;
    char err[300];
    size_t size = 0;
    int fd = pe_file_open_regular(AT_FDCWD, path, &st, err, sizeof err);
    unsigned char *buf = fd >= 0 ? pe_file_read_all(fd, &st, MAX_FILE, &size, err, sizeof err) : NULL;
    if (fd >= 0) close(fd);
    if (buf) store_under_names(buf, size, kernels, n, cache.isa, "so");
    free(buf);
}

void *pe_diskcache_load_blob(const kir_kernel *k, const char *tag, size_t *size)
{
    char name[256];
    blob_name(k, tag, "bin", name, sizeof name);
    return pe_diskcache_read(name, size);
}

void pe_diskcache_store_blob(const kir_kernel *const *kernels, size_t n, const char *tag, const void *data, size_t size)
{
    store_under_names(data, size, kernels, n, tag, "bin");
}
