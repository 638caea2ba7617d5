/* program.c — the program sequence (program.h): what the program generator
 * makes of a batch and the executors run, and the facts read off it. */
#include <stdlib.h>

#include "program.h"
#include "../../exec/base/shape.h"

void pe_program_seq_free(pe_program_seq *seq)
{
    for (size_t i = 0; i < seq->n; i++) {
        if (!seq->kir_borrowed) free(seq->progs[i].kir);
        free(seq->progs[i].bind);
        free(seq->progs[i].members);
        free(seq->progs[i].shares);
    }
    free(seq->progs);
    *seq = (pe_program_seq){0};
}

void pe_program_traffic(const pe_program *p, int64_t *read, int64_t *written)
{
    *read = *written = 0;
    for (int i = 0; i < p->kir->n_params; i++) {
        const pe_port *q = pe_port_at(p->bind[i]);
        int64_t bytes = (int64_t)pe_port_bytes(q);
        kir_param_kind kind = p->kir->params[i].kind;
        if (kind == KIR_IN_CONTIG || kind == KIR_IN_STRIDED) *read += bytes;
        else if (kind == KIR_IN_GATHERED) /* one element per iteration, wherever it lies */
            *read += (int64_t)pe_dtype_table[q->dtype].size * (p->kir->axis_reduction ? pe_shape_numel(p->kir->rank, p->kir->shape) : p->numel);
        else if (kind == KIR_OUT) *written += bytes;
    }
}
