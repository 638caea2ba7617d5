/* emit.h — pecc's back half: turn a unit's encoded static IR into an object
 * file that carries it (ELF section pe_ir) and registers it with the runtime
 * from a constructor. */
#ifndef PE_FRONTEND_EMIT_H
#define PE_FRONTEND_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes C source for the object into `c_path`; false with err set. */
bool pe_emit_ir_source(const char *c_path, const uint8_t *blob, size_t len, char *err, size_t err_len);

#endif
