/* placement.c — the cost model of automatic placement (placement.h).
 *
 * A batch at a place takes
 *     batch overhead + per copied input (latency + bytes / link)
 *       + per GPU copied from (its work in flight drains first)
 *       + max(traffic / memory bandwidth, work / arithmetic rate)
 * (a roofline: a fused kernel is bound by its memory traffic or by its
 * arithmetic, whichever is slower).  The choice is greedy, batch by batch:
 * a result is charged for its copies when a later batch or a read needs it
 * elsewhere, not when it is made.
 *
 * Each place's figures (memory bandwidth, arithmetic rate, batch cost) come
 * from its executor (pe_executor.speed: exec/cpu/cpu.c, exec/cuda/cuda.c);
 * the link's and the drain's are here.
 *
 * The constants are estimates from measurements, not promises: what the
 * model must get right is the order of magnitude that separates the cases
 * (a light map over host data stays on a many-core CPU; arithmetic-heavy
 * work or work on data a GPU holds goes to the GPU).
 */
#include "placement.h"

#include <stdlib.h>

/* Host<->GPU copies of pageable memory through the pinned staging buffers:
 * ~8 GB/s measured on an H100 (bench/RESULTS.md: 80 MB of Black-Scholes
 * results read in ~9.5 ms); a copy's call, event and wait ~10 us.  Peer
 * copies are counted the same (PCIe; NVLink would be faster). */
#define LINK_BYTES_PER_S 8e9
#define COPY_S 10e-6

/* A copy from a GPU waits for the batches in flight there: one batch's
 * worth at least (a GPU batch ~20 us: launches, stream joins, its event),
 * which keeps small batches on the GPU holding their data rather than
 * bouncing them to the host and back. */
#define GPU_DRAIN_S 20e-6

/* Whether a place holds a value's current contents. */
static bool holds(const pe_port *q, int place)
{
    if (place == PE_PLACE_HOST) return q->buf && !q->host_stale;
    return q->dev_buf && q->dev_gpu == place - 1;
}

static int by_index(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

bool pe_place_needs(const pe_program_seq *seq, pe_batch_needs *out)
{
    *out = (pe_batch_needs){0};
    size_t most = 0;
    for (size_t i = 0; i < seq->n; i++)
        if (seq->progs[i].kind == PE_PROG_KERNEL) most += (size_t)seq->progs[i].kir->n_params;
    uint32_t *outside = malloc(sizeof *outside * (most ? most : 1));
    if (!outside) return false;
    size_t n_outside = 0;
    for (size_t i = 0; i < seq->n; i++) {
        const pe_program *p = &seq->progs[i];
        if (p->kind != PE_PROG_KERNEL) continue;
        int64_t read, written;
        pe_program_traffic(p, &read, &written);
        out->traffic += (double)(read + written);
        for (int m = 0; m < p->n_members; m++) { /* a reduction's iterations are its input's elements */
            const pe_port *q = pe_port_at(p->members[m]);
            double work = (double)p->numel * (pe_op_table[q->op].cost > 0 ? pe_op_table[q->op].cost : 1);
            if (q->ctype == PE_F64) out->work_f64 += work;
            else out->work += work;
        }
        for (int k = 0; k < p->kir->n_params; k++) {
            kir_param_kind kind = p->kir->params[k].kind;
            if ((kind == KIR_IN_CONTIG || kind == KIR_IN_STRIDED) && pe_port_at(p->bind[k])->state != PE_PORT_PENDING)
                outside[n_outside++] = p->bind[k];
        }
    }
    qsort(outside, n_outside, sizeof *outside, by_index);
    for (size_t i = 0; i < n_outside; i++) {
        if (i > 0 && outside[i] == outside[i - 1]) continue; /* an input of several kernels: copied once */
        const pe_port *q = pe_port_at(outside[i]);
        double bytes = (double)pe_port_bytes(q);
        bool from_host = holds(q, PE_PLACE_HOST);
        for (int place = 0; place < PE_PLACES; place++) {
            if (holds(q, place)) continue;
            out->missing[place] += bytes, out->copies[place]++;
            if (!from_host && q->dev_buf) out->drained[place] |= 1u << q->dev_gpu;
        }
    }
    free(outside);
    return true;
}

double pe_place_seconds(const pe_batch_needs *n, int place, const pe_place_speed *s)
{
    double copies = n->copies[place] * COPY_S + n->missing[place] / LINK_BYTES_PER_S +
                    __builtin_popcount(n->drained[place]) * GPU_DRAIN_S;
    double memory = n->traffic / s->bytes_per_s, arithmetic = (n->work + n->work_f64 * s->f64_ratio) / s->work_per_s;
    return s->batch_s + copies + (memory > arithmetic ? memory : arithmetic);
}

int pe_place_cheapest(const pe_batch_needs *n, const pe_place_speed *const speeds[PE_PLACES], double *seconds)
{
    int best = PE_PLACE_HOST;
    *seconds = pe_place_seconds(n, PE_PLACE_HOST, speeds[PE_PLACE_HOST]);
    for (int place = 1; place < PE_PLACES; place++) {
        if (!speeds[place]) continue;
        double t = pe_place_seconds(n, place, speeds[place]);
        if (t < *seconds) *seconds = t, best = place;
    }
    return best;
}
