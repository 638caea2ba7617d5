/* diskcache.h — the program cache on disk: compiled kernels as shared
 * objects under PE_CACHE_DIR, one name per kernel IR hash, checked on load. */
#ifndef PE_JIT_DISKCACHE_H
#define PE_JIT_DISKCACHE_H

#include <stddef.h>

#include "../kir/kir.h"

/* Opens (creating it 0700) the cache directory: `dir` if given, else
 * $XDG_CACHE_HOME/pe, else ~/.cache/pe.  False, with a warning, when it is
 * unusable (not creatable, not ours, writable by others): no disk cache then. */
bool pe_diskcache_open(const char *dir, const char *isa);
void pe_diskcache_close(void);
bool pe_diskcache_enabled(void);
/* The cache directory's path for a file named `name`; false when the disk
 * cache is off. */
bool pe_diskcache_path(const char *name, char *out, size_t n);
/* The path of kernel k's shared object in the cache, checked (sealed,
 * whole) and marked most recently used; false if there is none.  A corrupt
 * or truncated file is removed with a warning. */
bool pe_diskcache_find(const kir_kernel *k, char *path, size_t n);
/* Removes a cached file that turned out unusable (`why`: "does not load
 * (...)"), with a warning: its kernels are compiled again. */
void pe_diskcache_discard(const char *path, const char *why);
/* Whether a file for kernel k is in the cache (not checked: a load does). */
bool pe_diskcache_has(const kir_kernel *k);
/* A fresh path in the cache directory for the compiler to write to. */
bool pe_diskcache_temp_path(char *out, size_t n);
/* Seals the shared object at `path` (written by the compiler, holding these
 * kernels) and files it under each kernel's name; evicts the least recently
 * used files beyond the size cap.  Removes `path`. */
void pe_diskcache_store(const char *path, const kir_kernel *const *kernels, size_t n);

/* Code for another device, kept the same way (sealed, checked, LRU) as a
 * blob under <kernel hash>-<PE version>-<tag>-<generator build>.<ext>: the
 * tag names the target ("sm_90-nvrtc13000").  Load returns the verified
 * bytes (malloc'ed) or NULL; a corrupt or truncated file is removed with a
 * warning.  Store files one blob (holding all these kernels) under each
 * kernel's name. */
void *pe_diskcache_load_blob(const kir_kernel *k, const char *tag, size_t *size);
bool pe_diskcache_has_blob(const kir_kernel *k, const char *tag);
void pe_diskcache_store_blob(const kir_kernel *const *kernels, size_t n, const char *tag, const void *data, size_t size);

#endif
