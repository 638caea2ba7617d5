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
/* Makes a port invalid because of input `from`, without a new error. */
void pe_port_inherit_invalid(pe_port *p, const pe_port *from);
/* Gives a uniform constant a buffer holding its value (for pe_map); false
 * when out of memory. */
bool pe_interp_materialise(pe_port *p);

#endif
