/* safefile.c — opening files that someone else may have put in PE's way
 * (safefile.h).  A plain fopen follows a symlink that names another file and
 * blocks forever on a FIFO before any type check can run; opening with
 * O_NOFOLLOW|O_NONBLOCK and checking the fd itself (fstat) leaves no window
 * between the check and the use.  A file is written in a directory opened
 * once (pe_file_write_target), a symlink to it resolved then, after owner
 * checks, so a link swapped later changes nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "safefile.h"

static const char *kind_of(mode_t m)
{
    return S_ISLNK(m) ? "a symlink" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) || S_ISBLK(m) ? "a device" :
           S_ISDIR(m) ? "a directory" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int pe_file_open_regular(int dirfd, const char *name, struct stat *st, char *err, size_t err_len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno; /* the caller may ask whether the file was just absent */
        snprintf(err, err_len, "%s: %s", name, e == ELOOP ? "a symlink (not followed)" : strerror(e));
        errno = e;
        return -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        snprintf(err, err_len, "%s: %s, not a regular file", name, kind_of(st->st_mode));
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

uint8_t *pe_file_read_all(int fd, const struct stat *st, size_t max_bytes, size_t *len, char *err, size_t err_len)
{
    if ((uint64_t)st->st_size > max_bytes) {
        snprintf(err, err_len, "%lld bytes, more than the %zu this reader accepts", (long long)st->st_size, max_bytes);
        return NULL;
    }
    size_t size = (size_t)st->st_size, got = 0;
    uint8_t *data = malloc(size ? size : 1);
    if (!data) return snprintf(err, err_len, "out of memory"), NULL;
    while (got < size) {
        ssize_t r = pread(fd, data + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            snprintf(err, err_len, "read error (%s)", r < 0 ? strerror(errno) : "shorter than its size");
            free(data);
            return NULL;
        }
        got += (size_t)r;
    }
    *len = size;
    return data;
}

/* Splits path into its directory and last component; false if there is no
 * last component to write (empty, ".", "..", ending in '/') or it is too long. */
static bool split(const char *path, char *dir, size_t dir_len, char *name, size_t name_len)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) return false;
    if ((size_t)snprintf(name, name_len, "%s", base) >= name_len) return false;
    int n = !slash ? snprintf(dir, dir_len, ".") : slash == path ? snprintf(dir, dir_len, "/")
                                                               : snprintf(dir, dir_len, "%.*s", (int)(slash - path), path);
    return n > 0 && (size_t)n < dir_len;
}

#define MAX_LINKS 8

int pe_file_write_target(const char *path, char *name, size_t name_len, char *err, size_t err_len)
{
    char cur[PATH_MAX], dir[PATH_MAX];
    const uid_t me = geteuid();
    if ((size_t)snprintf(cur, sizeof cur, "%s", path) >= sizeof cur)
        return snprintf(err, err_len, "%s: path too long", path), -1;
    for (int links = 0;; links++) {
        if (!split(cur, dir, sizeof dir, name, name_len))
            return snprintf(err, err_len, "%s: not a file name (or too long)", cur), -1;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat ds, st;
        if (dfd < 0 || fstat(dfd, &ds) != 0) {
            int e = errno;
            if (dfd >= 0) close(dfd);
            return snprintf(err, err_len, "%s: %s", dir, strerror(e)), -1;
        }
        bool exists = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
        const char *why = NULL;
        if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
            snprintf(err, err_len, "%s is %s: not replaced (PE writes only regular files)", cur, kind_of(st.st_mode));
            close(dfd);
            return -1;
        }
        if (exists && S_ISLNK(st.st_mode)) {
            /* followed only where nobody else can have made or changed it */
            if (links == MAX_LINKS) why = "more symlinks in a row than PE follows";
            else if (st.st_uid != me) why = "a symlink that is not this user's";
            else if ((ds.st_uid != me && ds.st_uid != 0) || ((ds.st_mode & 022) && !(ds.st_mode & S_ISVTX)))
                why = "a symlink in a directory others can change";
            char target[PATH_MAX];
            ssize_t r = why ? -1 : readlinkat(dfd, name, target, sizeof target - 1);
            close(dfd);
            if (!why && (r <= 0 || (size_t)r >= sizeof target - 1)) why = "a symlink that cannot be read";
            if (why) return snprintf(err, err_len, "%s is %s: not written through, nor replaced", cur, why), -1;
            target[r] = 0;
            int n = target[0] == '/' ? snprintf(cur, sizeof cur, "%s", target)
                                     : snprintf(cur, sizeof cur, "%s/%s", dir, target);
            if (n < 0 || (size_t)n >= sizeof cur) return snprintf(err, err_len, "%s: its symlink's target is too long", path), -1;
            continue;
        }
        if (links > 0) { /* a symlink's target: the user's, where only the user writes */
            if (ds.st_uid != me || (ds.st_mode & 022)) why = "in a directory not this user's or writable by group or others";
            else if (exists && st.st_uid != me) why = "a file that is not this user's";
            if (why) {
                snprintf(err, err_len, "%s is a symlink to %s, %s: not written through, nor replaced", path, cur, why);
                close(dfd);
                return -1;
            }
        }
        return dfd;
    }
}
