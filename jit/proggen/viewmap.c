/* viewmap.c — views as index maps: where each element of a view lies in the
 * buffer of the array it views (its root), composed through views of
 * views, and stretched to a kernel's iteration shape by broadcasting.  The
 * program generator reads a view through its map (a KIR_IN_STRIDED
 * parameter bound to the root) instead of computing it.
 *
 * A map is kept in a kir_param's STRIDED fields, over the view's own axes:
 * element c is at offset + sum stride[d] * m_d(c[d]) (kir.h).  Slices (with
 * steps, negative ones too), permutations, spreads and periodic tiling
 * compose into such a map; a reshape composes only over a contiguous map
 * (elements in row-major order), and a step or a period over an axis that
 * already wraps does not compose (the view below is then computed and
 * stored: pe_view_composes says no). */
#include <string.h>

#include "proggen.h"

static void contiguous(kir_param *m, int rank, const int64_t *shape)
{
    memset(m, 0, sizeof *m);
    m->kind = KIR_IN_STRIDED;
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        m->stride[d] = shape[d] == 1 ? 0 : s;
        s *= shape[d];
    }
}

bool pe_map_is_contiguous(const kir_param *m, int rank, const int64_t *shape)
{
    kir_param c;
    contiguous(&c, rank, shape);
    if (m->offset != 0) return false;
    for (int d = 0; d < rank; d++)
        if ((shape[d] != 1 && m->stride[d] != c.stride[d]) || m->wrap[d] || m->hi[d]) return false;
    return true;
}

/* Axis d of map m reads as axis k of map src does. */
static void take_axis(kir_param *m, int d, const kir_param *src, int k)
{
    m->stride[d] = src->stride[k], m->wrap[d] = src->wrap[k], m->shift[d] = src->shift[k];
    m->lo[d] = src->lo[k], m->hi[d] = src->hi[k];
}

bool pe_is_lazy_view(const pe_port *p, uint32_t epoch)
{
    return p->state == PE_PORT_PENDING && p->batch == epoch && p->lazy_view;
}

/* The map of view v's elements given its source's map `src` (over the
 * source's axes); false where it does not compose. */
static bool compose(const pe_port *v, const pe_port *x, const kir_param *src, kir_param *m)
{
    memset(m, 0, sizeof *m);
    m->kind = KIR_IN_STRIDED;
    m->offset = src->offset;
    switch ((pe_op)v->op) {
    case PE_OP_reshape: /* the same elements in row-major order: over a contiguous map only */
        if (!pe_map_is_contiguous(src, x->rank, x->shape)) return false;
        contiguous(m, v->rank, v->shape);
        m->offset = src->offset;
        return true;
    case PE_OP_transpose: /* axis d is the source's axis param[d] */
        for (int d = 0; d < v->rank; d++) take_axis(m, d, src, (int)v->param[d]);
        return true;
    case PE_OP_slice: /* element start + c * step */
        for (int d = 0; d < v->rank; d++) {
            int64_t start = v->param[d], step = v->param[v->rank + d];
            if (src->hi[d]) return false;
            m->stride[d] = src->stride[d], m->wrap[d] = src->wrap[d], m->shift[d] = src->shift[d];
            if (src->wrap[d]) {
                if (step != 1) return false;
                m->shift[d] = (src->shift[d] + start) % src->wrap[d];
            } else {
                m->offset += start * src->stride[d];
                m->stride[d] = src->stride[d] * step;
            }
        }
        return true;
    case PE_OP_spread: {
        int axis = (int)v->param[0];
        for (int d = 0, k = 0; d < v->rank; d++) {
            if (d == axis) { /* a size-1 axis replicated, or a new axis: the same element along it */
                if (v->param[1] == 0) k++;
                continue;
            }
            take_axis(m, d, src, k++);
        }
        return true;
    }
    case PE_OP_periodic: { /* the source's axes are the last ones, each taken modulo its extent */
        int off = v->rank - x->rank;
        for (int d = 0; d < x->rank; d++) {
            if (src->wrap[d] || src->hi[d]) return false;
            m->stride[d + off] = x->shape[d] == 1 ? 0 : src->stride[d];
            m->wrap[d + off] = x->shape[d] > 1 && v->shape[d + off] > x->shape[d] ? x->shape[d] : 0;
        }
        return true;
    }
    default:
        return false;
    }
}

bool pe_view_map_through(uint32_t v, uint32_t epoch, kir_param *m, uint32_t *root)
{
    const pe_port *p = pe_port_at(v);
    kir_param src;
    return pe_view_map(p->in[0], epoch, &src, root) && compose(p, pe_port_at(p->in[0]), &src, m);
}

bool pe_view_map(uint32_t port, uint32_t epoch, kir_param *m, uint32_t *root)
{
    const pe_port *p = pe_port_at(port);
    if (pe_is_lazy_view(p, epoch) && p->op != PE_OP_concat) /* a lazy concat: its reader selects from its parts */
        return pe_view_map_through(port, epoch, m, root);
    contiguous(m, p->rank, p->shape);
    *root = port;
    return true;
}

void pe_map_broadcast(const kir_param *m, int m_rank, const int64_t *m_shape, int rank, const int64_t *shape,
                      kir_param *out)
{
    *out = (kir_param){.kind = KIR_IN_STRIDED, .dtype = m->dtype, .offset = m->offset};
    int off = rank - m_rank;
    for (int d = off; d < rank; d++) {
        int k = d - off;
        if (m_shape[k] == 1 && shape[d] != 1) continue; /* stretched: the same element along d */
        take_axis(out, d, m, k);
    }
}

bool pe_map_concat_part(const kir_param *m, int axis, int64_t start, int64_t count, kir_param *out)
{
    *out = *m;
    out->kind = KIR_IN_STRIDED;
    if (m->hi[axis] > 0 || count <= 0) return false; /* clamped already: concat's operands are never lazy concats */
    /* coordinate y of the concat reads the part's x = y - start, with y
     * clamped into [start, start + count) so that the load stays inside
     * the part whichever operand the select keeps */
    out->lo[axis] = start;
    out->hi[axis] = start + count;
    if (m->wrap[axis] > 0) { /* (x + shift) mod wrap == (y + shift - start) mod wrap */
        int64_t w = m->wrap[axis];
        out->shift[axis] = ((m->shift[axis] - start) % w + w) % w;
    } else {
        out->offset -= start * m->stride[axis];
    }
    return true;
}
