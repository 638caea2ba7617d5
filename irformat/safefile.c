/* safefile.c — opening files that someone else may have put in PE's way
 * (safefile.h).  A plain fopen follows a symlink that names another file and
 * blocks forever on a FIFO before any type check can run; opening with
 * O_NOFOLLOW|O_NONBLOCK and checking the fd itself (fstat) leaves no window
 * between the check and the use. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

bool pe_file_replaceable(const char *path, char *err, size_t err_len)
{
    struct stat st;
    if (lstat(path, &st) != 0) return true; /* absent (or unreachable: the write says why) */
    if (S_ISREG(st.st_mode)) return true;
    snprintf(err, err_len, "%s is %s: not replaced (PE writes only regular files)", path, kind_of(st.st_mode));
    return false;
}
