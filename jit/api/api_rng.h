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
 * destroyed or is exhausted. */
bool pe_rng_redraw(const pe_site *s, const pe_port *q, uint32_t *draw);

/* The operand a replay binds in place of port qi: qi itself unless it is a
 * draw number; for a draw number, a new 0-d i32 constant (no references
 * yet, as pe_make_constant's) holding its generator's next draw number
 * (pe_rng_redraw); UINT32_MAX after raising. */
uint32_t pe_rng_replay_operand(const pe_site *s, uint32_t qi);

#endif
