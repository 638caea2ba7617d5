/* api_rng.h — the random generators' table (api_rng.c), for pe_shutdown. */
#ifndef PE_JIT_API_RNG_H
#define PE_JIT_API_RNG_H

/* Forgets every generator (pe_shutdown): their handles become stale. */
void pe_rng_forget_all(void);

#endif
