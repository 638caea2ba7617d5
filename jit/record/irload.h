/* irload.h — the static-IR loader: units registered by the constructors
 * pecc put into the program (and into shared libraries it loads), decoded
 * and kept for the process; what the runtime asks of them. */
#ifndef PE_JIT_IRLOAD_H
#define PE_JIT_IRLOAD_H

#include <stdbool.h>

#include "pe.h"
#include "../../irformat/ops.h"
#include "../../irformat/static_ir.h"

/* The column of the request at site s, when the static IR knows the line and
 * every request on it shares one column; 0 otherwise. */
int pe_ir_column_of(const pe_site *s);
/* Units registered so far (malformed ones are refused with a warning). */
int pe_ir_unit_count(void);
/* A shallow copy of unit i (its arrays stay the loader's, kept for the
 * process); false if there is no unit i. */
bool pe_ir_unit_at(int i, pe_ir_unit *out);
/* A hash of every unit registered (0 without any): what the program's
 * static IR is, for keys of caches that outlive the run. */
uint64_t pe_ir_fingerprint(void);
/* Calls fn whenever a unit is registered later (a shared library loaded
 * after pe_init): the compile ahead listens, so that the recorder's module
 * never calls up into it. */
void pe_ir_on_units_added(void (*fn)(void));
/* After a request to entry point `api` ("pe_add") at site s: releases each
 * operand the static IR marks as consumed there (a nested request's result,
 * a variable's last use), or whose producer said it is read once
 * (pe_ir_mark_read_once), where the handle agrees (live, one reference,
 * made in s's file).  For operations and reads, never for pe_release or
 * pe_map (the program still holds what those take). */
void pe_ir_release_operands(const pe_site *s, const char *api, const pe_array *ins, int n);
/* Whether request q of fn makes a value the IR shows read exactly once, by
 * an operation or a read that is its last use: a nested request's result,
 * or a variable's value whose one read before the variable is defined
 * again carries an uncontradicted last-use mark. */
bool pe_ir_read_once(const pe_ir_function *fn, uint32_t q);
/* After an operation request for `op` with n operands at site s that
 * returned `result`: where every IR request of the line making that op
 * makes a value read once, and the handle is the value's only one, the
 * request that reads it releases it (pe_ir_release_operands). */
void pe_ir_mark_read_once(const pe_site *s, pe_op op, int n, pe_array result);
/* Before an operation request to `api` at site s: marks each operand the
 * static IR says is a source literal, and that is a C-scalar constant of
 * that value, for specialisation into kernels. */
struct pe_port;
void pe_ir_mark_literals(const pe_site *s, const char *api, struct pe_port *const *in, int n);
/* Whether the static IR says pe_read(a, ...) at site s is the value's last
 * use (the read's mark, or a's producer's: read once), and the handle agrees
 * (live, one reference, made in s's file). */
bool pe_ir_read_is_last_use(const pe_site *s, pe_array a);
/* Before an operation request at site s: where the static IR says the
 * request begins a closed loop's iteration, or is the first after the loop,
 * and the queue is half way to its limit, the work recorded so far becomes a
 * batch (outside pe_block): batches are cut at iteration boundaries. */
void pe_ir_begin_request(const pe_site *s, pe_op op);

#endif
