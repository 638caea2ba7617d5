/* stream_sync.h — automatic synchronisation of work spread over several GPU
 * streams (seed 001): given operations in issue order and their data
 * dependencies, choose each operation's stream and the event record/wait
 * pairs that make every dependency hold, with as few waits as the partial
 * order allows and a bounded pool of events.  Pure planning: no CUDA here;
 * tests/test_stream_sync.c checks plans against a model of CUDA's stream and
 * event semantics. */
#ifndef PE_EXEC_STREAM_SYNC_H
#define PE_EXEC_STREAM_SYNC_H

#include <stdbool.h>

/* The dependencies: predecessors of op i are preds[pred_start[i] ..
 * pred_start[i + 1]), each an op index < i. */
typedef struct {
    int n_ops;
    const int *pred_start; /* n_ops + 1 entries */
    const int *preds;
} pe_sync_dag;

typedef struct {
    int stream;         /* the stream the op goes to */
    int wait_begin;     /* its waits: events[wait_begin .. wait_begin + n_waits), before the op */
    int n_waits;
    int record_event;   /* the event recorded right after the op, or -1 */
} pe_sync_op;

typedef struct {
    pe_sync_op *ops;
    int *waits;         /* physical event slots, per op (see pe_sync_op) */
    int n_waits;        /* waits in the plan */
    int n_records;
    int naive_waits;    /* one wait per dependency that crosses streams: what naive insertion does */
    int streams_used;   /* min(streams, events): a stream needs an event slot of its own */
} pe_sync_plan;

/* Plans `dag` on `streams` streams with `events` event slots (both >= 1).
 * False when out of memory. */
bool pe_sync_plan_make(const pe_sync_dag *dag, int streams, int events, pe_sync_plan *out);
void pe_sync_plan_free(pe_sync_plan *plan);

#endif
