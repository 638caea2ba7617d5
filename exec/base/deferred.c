/* deferred.c — what a kernel's members are once it has run: values, or
 * expressions again.
 *
 * The program generator stores a member only when something demands it (a
 * read, map or hint), when nothing in the batch consumes it (a result the
 * program made for later), or when a program outside its kernel reads it.
 * A member the application still holds that is none of these was computed
 * for its consumers in the kernel only: it is DEFERRED — it keeps its
 * inputs, and a later use computes it again from them (jit/record/demand.c).
 * A member such an expression reads keeps its own expression too, even when
 * the application released it.  So is a member computed into the buffer a
 * pe_read lent it when the reader keeps its handle (jit/api/api_read.c):
 * the value went where it was demanded, the buffer goes back to the reader,
 * and PE keeps the expression, not a copy.  A member whose value another
 * member stored (equal values, one store: pe_program.shares) takes that
 * buffer (port.c); where that value is on a GPU (a sequence not made for
 * one: the GPU's fusion rules store each) it stays an expression instead.
 * A value of a site whose values were computed again before (a Jacobi
 * step's grid, kept and read by the next step through shifted views: the
 * kernel reducing its change would leave it an expression, and the next
 * step computes it in a kernel of its own) is stored by the kernel that
 * computes it (pe_port.store_when_held, set at recording from the site's
 * record, which jit/record/demand.c marks): no value computed twice.
 * Everything else is a value (READY: a buffer, or a scalar for a
 * reduction) or nobody's, and its inputs are let go.  A view the kernels
 * read through its index map (jit/proggen/viewmap.c) was never computed:
 * once its readers ran it is an expression if the application or an
 * expression still sees it, else nobody's (pe_views_settle).  What a
 * kernel's run makes of each member is read from its program, in the
 * kernel IR's layer (jit/kir/settle.c); this file keeps the ports' side.
 *
 * What expressions hold costs memory: a stored value the application
 * released stays while an expression reads it.  Those bytes are counted
 * (pe_retention.bytes); past PE_RETAIN_LIMIT the expressions holding them
 * are computed and stored (jit/record/demand.c), and the values go. */
#include "grow.h"
#include "runtime.h"

bool pe_port_deferrable(const pe_port *p, uint32_t outside_uses)
{
    return !p->released_in_batch && !p->demanded_in_batch && outside_uses == 0 && p->live_consumers > 0 &&
           pe_op_table[p->op].kind != PE_KIND_REDUCE && !p->store_when_held;
}

void pe_port_update_retained(pe_port *p)
{
    bool retained = p->state == PE_PORT_READY && p->buf && p->refs_app == 0 && p->maps == 0 && p->expr_readers > 0;
    if (retained == p->retained) return;
    p->retained = retained;
    pe_retention.bytes += retained ? (int64_t)pe_port_bytes(p) : -(int64_t)pe_port_bytes(p);
}

void pe_expressions_compact(void)
{
    size_t kept = 0;
    for (size_t i = 0; i < pe_retention.n_expressions; i++)
        if (pe_port_at(pe_retention.expressions[i])->holds_as_expression) pe_retention.expressions[kept++] = pe_retention.expressions[i];
    pe_retention.n_expressions = kept;
    pe_retention.compact_at = kept * 2 > 1024 ? kept * 2 : 1024;
}

/* Port idx keeps its inputs as an expression: they count it as a reader,
 * and the list of expressions has it (for the retain limit's search; out of
 * memory it is left out, which only spares it from that search). */
void pe_port_become_expression(uint32_t idx)
{
    pe_port *p = pe_port_at(idx);
    p->holds_as_expression = true;
    for (int k = 0; k < p->n_in; k++) {
        pe_port *q = pe_port_at(p->in[k]);
        q->expr_readers++;
        pe_port_update_retained(q);
    }
    if (pe_retention.n_expressions >= pe_retention.compact_at) pe_expressions_compact(); /* amortised O(1) */
    if (PE_GROW(pe_retention.expressions, pe_retention.cap_expressions, pe_retention.n_expressions + 1))
        pe_retention.expressions[pe_retention.n_expressions++] = idx;
}

void pe_port_defer(uint32_t idx)
{
    pe_port *p = pe_port_at(idx);
    p->state = PE_PORT_DEFERRED;
    pe_counters.values_deferred++;
    if (!p->holds_as_expression) pe_port_become_expression(idx);
}

void pe_port_expression_done(pe_port *p)
{
    if (!p->holds_as_expression) return;
    p->holds_as_expression = false;
    for (int k = 0; k < p->n_in; k++) {
        pe_port *q = pe_port_at(p->in[k]);
        q->expr_readers--;
        pe_port_update_retained(q);
    }
}
