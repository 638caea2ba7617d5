/* safefile.h — opening files that someone else may have put in PE's way (a
 * cache file, a profile, an IR file named on a command line): never through a
 * symlink in the last component, never blocking on a FIFO or a device, and
 * regular files only; and never replacing anything but a regular file. */
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

/* Whether a new regular file may be renamed over `path`: it is absent or a
 * regular file.  A symlink, device, FIFO, socket or directory is refused
 * (false with err set): replacing it would destroy the node (/dev/null as
 * root) or leave the symlink's target unwritten. */
bool pe_file_replaceable(const char *path, char *err, size_t err_len);

#endif
