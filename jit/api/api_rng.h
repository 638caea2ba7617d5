/* api_rng.h — the random generators' table (api_rng.c), for pe_shutdown. */
#ifndef PE_JIT_API_RNG_H
#define PE_JIT_API_RNG_H

#include <stdbool.h>
#include <stdint.h>

#include "../../exec/base/runtime.h"

/* Forgets every generator (pe_shutdown): their handles become stale. */
void pe_rng_forget_all(void);

/* For a sequence replayed without recording its requests (a macro): whether
 * port `q` is a draw's draw-number operand (a random port's operand 2); if
 * so, *draw gets the number its generator gives its next draw, and the
 * generator advances, as a recorded draw would.  False for other ports, and
 * (after raising at site s: PE_E_HANDLE, PE_E_ARG) when the generator was
 * destroyed or is exhausted.  The caller binds a new 0-d i32 constant of
 * that value (pe_make_constant, `unshared`) in q's place. */
bool pe_rng_redraw(const pe_site *s, const pe_port *q, uint32_t *draw);

#endif
