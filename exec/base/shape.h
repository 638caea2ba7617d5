/* shape.h — broadcasting and type rules (shape.c): shapes, promotion with
 * weak C-scalar operands, result and compute types; used by the recorder,
 * the program generator and the interpreter. */
#ifndef PE_BASE_SHAPE_H
#define PE_BASE_SHAPE_H

#include "runtime.h"

pe_dtype pe_promote(pe_dtype a, pe_dtype b);
/* Promotion with weak (C-scalar) operands; see pe.h. */
pe_dtype pe_promote_operands(pe_port *const *in, int n);
pe_dtype pe_result_dtype(pe_result_rule rule, pe_dtype promoted);
pe_dtype pe_compute_dtype(pe_result_rule rule, pe_dtype promoted);
/* The result and compute types of an element-wise op with a derived type
 * (not cast) or a reduction, over its operands: the recorder's rule, which
 * the compile ahead's speculation follows too. */
void pe_op_types(pe_op op, pe_port *const *in, int n, pe_dtype *dtype, pe_dtype *ctype);
/* Broadcasts the operand shapes; false if they do not. */
bool pe_broadcast_shapes(pe_port *const *in, int n, int *rank, int64_t *shape);
/* Element strides of an operand of shape in_shape read through a broadcast to
 * an iteration space of `rank` axes: 0 on stretched and missing axes. */
void pe_broadcast_strides(int in_rank, const int64_t *in_shape, int rank, int64_t *stride);
/* Normalises a possibly negative axis; false if out of range. */
bool pe_normalise_axis(int *axis, int rank);
/* The most elements an array may have: its byte size, at the widest
 * element (16 bytes, c128), still fits in int64_t and size_t. */
#define PE_MAX_NUMEL (INT64_MAX / 16)
/* The number of elements of a shape into *numel; false when an extent is
 * negative, a product overflows or the count passes PE_MAX_NUMEL.  Every
 * shape that comes from the application, or is derived from one
 * (broadcast, spread, concat, reshape), is checked with it before a port
 * gets it. */
bool pe_shape_numel_checked(int rank, const int64_t *shape, int64_t *numel);
/* The number of elements of a shape already checked. */
int64_t pe_shape_numel(int rank, const int64_t *shape);

#endif
