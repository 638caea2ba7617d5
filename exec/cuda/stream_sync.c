/* stream_sync.c — plans streams and events for a sequence of GPU
 * operations (seed 001's three steps):
 *
 * 1. Streams and virtual events.  An op continues the stream of a
 *    predecessor that is that stream's last op (a chain stays in order for
 *    free); other ops go to the least recently used stream, so independent
 *    work spreads.  Each dependency that crosses streams is a candidate wait
 *    on a virtual event recorded after the producer.
 * 2. Redundant waits removed by the partial order.  Every op carries a vector
 *    clock: for each stream, the last position on it that the op is known to
 *    follow (program order on its own stream, plus everything its waits made
 *    it follow, transitively).  A candidate whose producer the clock already
 *    covers needs no wait; of several producers on one stream only the
 *    latest can matter.
 * 3. Virtual events onto a bounded pool.  Each stream owns events/streams
 *    slots, recorded round-robin.  cuStreamWaitEvent waits for the record
 *    that is current when the wait is enqueued, so a slot may be re-recorded
 *    at any time; a wait whose producer's record was overwritten waits on the
 *    newest record of that stream instead, which comes later in the same
 *    stream and so implies it (more waiting, never too little).  Hence
 *    streams_used = min(streams, events): one slot per stream is enough.
 *
 * Memory is O(n * streams) for the clocks. */
#include <stdlib.h>
#include <string.h>

#include "stream_sync.h"

void pe_sync_plan_free(pe_sync_plan *plan)
{
    free(plan->ops);
    free(plan->waits);
    memset(plan, 0, sizeof *plan);
}

bool pe_sync_plan_make(const pe_sync_dag *dag, int streams, int events, pe_sync_plan *out)
{
    memset(out, 0, sizeof *out);
    const int n = dag->n_ops;
    const int S = streams < events ? streams : events;
    if (S < 1) return false;
    out->streams_used = S;
    int n_edges = dag->pred_start[n];
    int *vc = calloc((size_t)(n ? n : 1) * (size_t)S, sizeof *vc);  /* clocks, per op */
    int *last = malloc((size_t)S * sizeof *last);                    /* last op per stream */
    int *pos = calloc((size_t)S, sizeof *pos);                       /* ops issued per stream */
    int *wait_ops = malloc((size_t)(n_edges ? n_edges : 1) * sizeof *wait_ops); /* virtual waits: producers */
    int *cand = malloc((size_t)S * sizeof *cand);                    /* latest producer per stream */
    char *needs_record = calloc((size_t)(n ? n : 1), 1);
    out->ops = calloc((size_t)(n ? n : 1), sizeof *out->ops);
    out->waits = malloc((size_t)(n_edges ? n_edges : 1) * sizeof *out->waits);
    bool ok = vc && last && pos && wait_ops && cand && needs_record && out->ops && out->waits;
    if (!ok) goto done;
    for (int s = 0; s < S; s++) last[s] = -1;

    /* passes 1 and 2: streams, then the waits the partial order does not imply */
    int used = 0;
    for (int i = 0; i < n; i++) {
        const int *p = dag->preds + dag->pred_start[i];
        int np = dag->pred_start[i + 1] - dag->pred_start[i], s = -1;
        for (int k = 0; k < np && s < 0; k++)
            if (last[out->ops[p[k]].stream] == p[k]) s = out->ops[p[k]].stream;
        if (s < 0) { /* least recently used: the stream whose last op is oldest (or none) */
            s = 0;
            for (int t = 1; t < S; t++)
                if (last[t] < last[s]) s = t;
        }
        int *clock = vc + (size_t)i * S;
        if (last[s] >= 0) memcpy(clock, vc + (size_t)last[s] * S, (size_t)S * sizeof *clock);
        for (int t = 0; t < S; t++) cand[t] = -1;
        for (int k = 0; k < np; k++) {
            int j = p[k], t = out->ops[j].stream;
            bool repeated = false; /* x * x names its producer twice */
            for (int m = 0; m < k && !repeated; m++) repeated = p[m] == j;
            if (t == s || repeated) continue;
            out->naive_waits++;
            if (cand[t] < 0 || j > cand[t]) cand[t] = j;
        }
        out->ops[i].wait_begin = used;
        /* latest producers first: what they knew may cover the others */
        for (;;) {
            int best = -1;
            for (int t = 0; t < S; t++)
                if (cand[t] >= 0 && clock[t] >= vc[(size_t)cand[t] * S + t]) cand[t] = -1; /* implied */
                else if (cand[t] >= 0 && (best < 0 || cand[t] > cand[best])) best = t;
            if (best < 0) break;
            int j = cand[best];
            cand[best] = -1;
            wait_ops[used++] = j;
            needs_record[j] = 1;
            const int *known = vc + (size_t)j * S;
            for (int t = 0; t < S; t++)
                if (known[t] > clock[t]) clock[t] = known[t];
        }
        out->ops[i].n_waits = used - out->ops[i].wait_begin;
        out->ops[i].stream = s;
        clock[s] = ++pos[s];
        last[s] = i;
    }

    /* pass 3: virtual events onto slots, per stream round-robin */
    {
        const int per = events / S;
        int *slot_of = malloc((size_t)(n ? n : 1) * sizeof *slot_of);  /* where op's record went */
        int *holder = malloc((size_t)events * sizeof *holder);          /* op whose record a slot holds */
        int *newest = malloc((size_t)S * sizeof *newest);               /* the newest record's slot, per stream */
        int *ring = calloc((size_t)S, sizeof *ring);
        ok = slot_of && holder && newest && ring;
        if (ok) {
            for (int e = 0; e < events; e++) holder[e] = -1;
            out->n_waits = 0;
            for (int i = 0; i < n; i++) {
                pe_sync_op *op = &out->ops[i];
                int begin = out->n_waits;
                for (int w = op->wait_begin; w < op->wait_begin + op->n_waits; w++) {
                    int j = wait_ops[w];
                    int slot = holder[slot_of[j]] == j ? slot_of[j] : newest[out->ops[j].stream];
                    bool dup = false;
                    for (int m = begin; m < out->n_waits && !dup; m++) dup = out->waits[m] == slot;
                    if (!dup) out->waits[out->n_waits++] = slot;
                }
                op->wait_begin = begin;
                op->n_waits = out->n_waits - begin;
                op->record_event = -1;
                if (needs_record[i]) {
                    int s = op->stream, slot = s * per + ring[s]++ % per;
                    holder[slot] = i;
                    slot_of[i] = slot;
                    newest[s] = slot;
                    op->record_event = slot;
                    out->n_records++;
                }
            }
        }
        free(slot_of), free(holder), free(newest), free(ring);
    }

done:
    free(vc), free(last), free(pos), free(wait_ops), free(cand), free(needs_record);
    if (!ok) pe_sync_plan_free(out);
    return ok;
}
