/* dynlib.h — a shared library loaded by dlopen and its functions bound by
 * name into the slots of an API table: the one loader behind the host's
 * math libraries (exec/intrinsics/libs.c) and a device's (CUDA's BLAS,
 * solver, FFT and sparse libraries).  Each caller keeps its own table of
 * libraries, its policy (once per process, never unloaded) and its
 * messages; this file only opens and binds, so that both say the same
 * thing the same way when a library or one of its functions is missing. */
#ifndef PE_EXEC_BASE_DYNLIB_H
#define PE_EXEC_BASE_DYNLIB_H

#include <stdbool.h>
#include <stddef.h>

/* A function's name in the library and its slot (offsetof) in the table. */
typedef struct {
    const char *symbol;
    size_t offset;
} pe_dynlib_slot;

/* Opens the first of `paths` (NULL-ended) that loads, RTLD_NOW, and
 * RTLD_GLOBAL if `global` (its symbols then bind the libraries loaded
 * after it).  The handle, with the path that loaded in *path; NULL with
 * the loader's reason for the last path in *error (NULL if it gave none)
 * and that path in *path. */
void *pe_dynlib_open(const char *const *paths, bool global, const char **path, const char **error);

/* Binds each slot's function of `lib` into `api`.  NULL when all are
 * there, else the first missing symbol (the table is then partly filled:
 * the caller must not use it; the library stays loaded, since a library
 * may not be unloadable once loaded). */
const char *pe_dynlib_bind(void *lib, const pe_dynlib_slot *slots, size_t n_slots, void *api);

#endif
