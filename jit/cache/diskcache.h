/* diskcache.h — the program cache on disk: compiled kernels as shared
 * objects under PE_CACHE_DIR, one name per kernel IR hash, authenticated on
 * load; and the cache's other files (the trace cache), sealed the same way. */
#ifndef PE_JIT_DISKCACHE_H
#define PE_JIT_DISKCACHE_H

#include <stddef.h>

#include "../kir/kir.h"

/* Opens (creating it 0700) the cache directory: `dir` if given, else
 * $XDG_CACHE_HOME/pe, else ~/.cache/pe, and keeps it open: a symlink is
 * resolved once, here, and the directory reached is the one used until
 * close.  False, with a warning, when it is unusable (a path too long, not
 * creatable, not ours, writable by group or others, no key): no disk cache
 * then. */
bool pe_diskcache_open(const char *dir, const char *isa);
void pe_diskcache_close(void);
bool pe_diskcache_enabled(void);

/* A file of the cache directory by name: its verified content (malloc'ed,
 * the seal removed; *size bytes) or NULL.  A file that is not a regular
 * file of ours, is truncated or does not carry this user's MAC is removed
 * with a warning. */
void *pe_diskcache_read(const char *name, size_t *size);
/* Writes data, sealed, under `name` (atomically: a reader sees the old file
 * or the new one); false when it could not. */
bool pe_diskcache_write(const char *name, const void *data, size_t size);
void pe_diskcache_remove(const char *name);

/* Kernel k's shared object from the cache, verified as pe_diskcache_read
 * does (the executor links these bytes, never the file); NULL if none. */
void *pe_diskcache_load_so(const kir_kernel *k, size_t *size);
/* Removes k's shared object that turned out unusable (`why`: "does not load
 * (...)"), with a warning: its kernels are compiled again. */
void pe_diskcache_discard_so(const kir_kernel *k, const char *why);
/* Whether a file for kernel k is in the cache (not checked: a load does). */
bool pe_diskcache_has(const kir_kernel *k);
/* Seals the shared object the compiler wrote at `path` (holding these
 * kernels; outside the cache, left in place) and files it under each
 * kernel's name; evicts the least recently used files beyond the size cap. */
void pe_diskcache_store(const char *path, const kir_kernel *const *kernels, size_t n);

/* Code for another device, kept the same way (sealed, checked, LRU) as a
 * blob under <kernel hash>-<PE version>-<tag>-<generator build>.<ext>: the
 * tag names the target ("sm_90-nvrtc13000").  Load returns the verified
 * bytes (malloc'ed) or NULL; a corrupt, truncated or forged file is removed
 * with a warning.  Store files one blob (holding all these kernels) under
 * each kernel's name. */
void *pe_diskcache_load_blob(const kir_kernel *k, const char *tag, size_t *size);
bool pe_diskcache_has_blob(const kir_kernel *k, const char *tag);
void pe_diskcache_store_blob(const kir_kernel *const *kernels, size_t n, const char *tag, const void *data, size_t size);

#endif
