/* dynlib.c — dlopen and dlsym for the API tables of the libraries PE loads
 * on first use (dynlib.h). */
#include <dlfcn.h>
#include <string.h>

#include "dynlib.h"

void *pe_dynlib_open(const char *const *paths, bool global, const char **path, const char **error)
{
    *path = NULL;
    *error = NULL;
    for (int i = 0; paths[i]; i++) {
        dlerror(); /* a stale message must not be taken for this call's */
        void *lib = dlopen(paths[i], RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
        *path = paths[i];
        if (lib) return lib;
        *error = dlerror();
    }
    return NULL;
}

const char *pe_dynlib_bind(void *lib, const pe_dynlib_slot *slots, size_t n_slots, void *api)
{
    for (size_t i = 0; i < n_slots; i++) {
        void *fn = dlsym(lib, slots[i].symbol);
        if (!fn) return slots[i].symbol;
        memcpy((char *)api + slots[i].offset, &fn, sizeof fn); /* a data pointer into a function pointer's slot */
    }
    return NULL;
}
