/* includes.h — whether a translation unit can reach pe.h (includes.c). */
#ifndef PE_FRONTEND_INCLUDES_H
#define PE_FRONTEND_INCLUDES_H

#include <stdbool.h>

/* False only when neither `source` nor any header it includes (found
 * beside it or in the directories of `flags`: -I, -iquote, -isystem,
 * -idirafter; -include files too) includes pe.h or pe.hpp; true when one
 * does, when an #include is computed by a macro, or when it cannot tell. */
bool pe_unit_reaches_pe(const char *source, const char *const *flags, int n_flags);

#endif
