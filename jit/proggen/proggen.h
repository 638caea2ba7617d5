/* proggen.h — the program generator: turns a batch of work-queue entries into
 * a program sequence (fused kernels in kernel IR, and ports left to the
 * interpreter), in an order that respects every dependency. */
#ifndef PE_JIT_PROGGEN_H
#define PE_JIT_PROGGEN_H

#include "../kir/kir.h"
#include "../kir/program.h"
#include "../kir/target.h" /* pe_fusion_rules */
#include "../../exec/base/runtime.h"

/* Reductions one kernel's rows may hold (passes over a row: one more). */
#define PE_MAX_ROW_REDUCTIONS 3

/* Builds the sequence for a batch; false when out of memory (nothing is
 * then changed: the caller runs the batch on the interpreter). */
bool pe_proggen(const pe_entry *entries, size_t n, uint32_t epoch, const pe_fusion_rules *rules,
                pe_program_seq *out);

/* Views as index maps (viewmap.c).  A lazy view (pe_port.lazy_view, set by
 * the program generator for its batch) is read through its map, never
 * computed. */
bool pe_is_lazy_view(const pe_port *p, uint32_t epoch);
/* The map of port's elements onto the buffer of *root: through the lazy
 * views it is made of, else the identity on itself.  False where a view
 * does not compose over the map below it. */
bool pe_view_map(uint32_t port, uint32_t epoch, kir_param *m, uint32_t *root);
/* The map of view v's elements whether it is lazy or not (its source's map
 * composed with v's own); false where that does not compose. */
bool pe_view_map_through(uint32_t v, uint32_t epoch, kir_param *m, uint32_t *root);
/* Map m over m_shape stretched to the iteration shape (rank, shape). */
void pe_map_broadcast(const kir_param *m, int m_rank, const int64_t *m_shape, int rank, const int64_t *shape,
                      kir_param *out);
/* Whether m reads a buffer of `shape` in row-major order from its start. */
bool pe_map_is_contiguous(const kir_param *m, int rank, const int64_t *shape);
/* The map of a concat's part (map m over the part's own axes) over the
 * concat's axes: the part covers coordinates [start, start + count) along
 * `axis`, and a coordinate outside is clamped into them (the kernel
 * selects the other part there).  False where m is clamped along axis or
 * the part is empty. */
bool pe_map_concat_part(const kir_param *m, int axis, int64_t start, int64_t count, kir_param *out);
#endif
