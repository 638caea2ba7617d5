/* safefile.h — opening files that someone else may have put in PE's way (a
 * cache file, a profile, an IR file named on a command line): never through a
 * symlink in the last component, never blocking on a FIFO or a device, and
 * regular files only; and never replacing anything but a regular file (a
 * symlink to one written through only after its owner checks). */
#ifndef PE_IRFORMAT_SAFEFILE_H
#define PE_IRFORMAT_SAFEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Opens `name` (relative to the directory `dirfd`, or AT_FDCWD) for reading:
 * O_NOFOLLOW, O_NONBLOCK (opening a FIFO returns at once), O_CLOEXEC, then
 * fstat: anything but a regular file is closed again.  The fd with its
 * stat in *st, or -1 with the reason in err. */
int pe_file_open_regular(int dirfd, const char *name, struct stat *st, char *err, size_t err_len);

/* Reads the whole of an open regular file of st_size bytes (at most
 * max_bytes) into a malloc'd buffer; NULL with err set. */
uint8_t *pe_file_read_all(int fd, const struct stat *st, size_t max_bytes, size_t *len, char *err, size_t err_len);

/* Where a new regular file for `path` goes, resolved once: the directory,
 * opened (the returned fd: openat and renameat in it), and the file's name
 * in it (`name`).  What `path` names must be absent or a regular file; a
 * device, FIFO, socket or directory is refused (replacing it would destroy
 * the node: /dev/null as root).  A symlink (up to 8 in a row) is written
 * through, to its target, when each link is this user's in a directory
 * others cannot change (closed to them, or sticky and owned by this user or
 * root), and the target's directory is this user's and not writable by group
 * or others, the target absent or a regular file of this user's; anything
 * else is refused (a link planted in /tmp naming a file of the user's).
 * -1 with err set when refused. */
int pe_file_write_target(const char *path, char *name, size_t name_len, char *err, size_t err_len);

#endif
