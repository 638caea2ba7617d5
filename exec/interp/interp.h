/* interp.h — the reference interpreter (interp.c): an executor that runs
 * every port of a batch in double precision, and single ports for the
 * executors that leave them to it. */
#ifndef PE_INTERP_INTERP_H
#define PE_INTERP_INTERP_H

#include "../base/executor.h"

extern pe_executor pe_interp_executor;

/* Computes one pending port on the interpreter (or makes it invalid) and
 * drops its inputs; true if it computed a value. */
bool pe_interp_execute(pe_port *p);
/* Computes p's op from the ports `in` (p->n_in of them) into p->buf, which
 * the caller made (numel elements of p's dtype); p and in may be stand-ins,
 * copies of ports with other buffers (the reference, exec/interp/
 * reference.c).  False when the op fails: p is then INVALID, its err_msg
 * the caller's to free. */
bool pe_interp_compute_into(pe_port *p, pe_port *const *in);
/* Makes a port invalid because of input `from`, without a new error. */
void pe_port_inherit_invalid(pe_port *p, const pe_port *from);
/* Writes v, a value of dtype t, into n elements of dst. */
void pe_interp_fill(void *dst, pe_dtype t, double v, int64_t n);
/* Gives a uniform constant a buffer holding its value (for pe_map); false
 * when out of memory. */
bool pe_interp_materialise(pe_port *p);

#endif
