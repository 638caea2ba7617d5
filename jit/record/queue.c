/* queue.c — the work queue and the C-scheduler's triggers.  Requests append
 * COMPUTE entries, releases RELEASE entries, hints HINT entries (and a
 * handle the static IR released wrongly, used again, a REVIVE entry); nothing runs
 * until a result is needed (a read or map), a hint, pe_flush/pe_sync, the end
 * of the outermost pe_block, or the queue passing its limit outside a block.
 * Then the whole queue goes, as one batch, to the E-scheduler's thread
 * (jit/sched/escheduler.c), which runs it on the executor and drops the entries'
 * own references on their ports. */
#include <assert.h>
#include <stdlib.h>

#include "record.h"
#include "../sched/escheduler.h"
#include "../trace/trace.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/runtime.h"

/* Inside a block the queue may grow past its limit, but not without bound. */
#define BLOCK_LIMIT_FACTOR 64

/* A new queue starts as long as the last batch (programs repeat their
 * batches: a loop's queue then never grows entry by entry), at least 256. */
static size_t queue_first_cap = 256;

bool pe_queue_grow(void)
{
    assert(pe_api_held());
    /* the queue goes with each batch: a new one starts where batches end */
    return PE_GROW_FROM(pe_rec.queue, pe_rec.queue_cap, pe_rec.queue_len + 1, queue_first_cap);
}

bool pe_queue_push(pe_entry_kind kind, uint32_t port)
{
    assert(pe_api_held());
    if (!pe_queue_push_unkeyed(kind, port)) return false;
    pe_trace_append(&pe_rec.trace_key, &pe_rec.queue[pe_rec.queue_len - 1], pe_rec.queue_len - 1);
    return true;
}

/* Takes the queue as a batch and hands it to the E-scheduler, or runs it
 * here when `here` and nothing is outstanding. */
static void take_batch(bool here)
{
    if (pe_rec.queue_len == 0) return;
    pe_counters.flushes++;
    /* the batch goes to the E-scheduler; recording goes on in a fresh queue
     * and a fresh batch number */
    pe_entry *entries = pe_rec.queue;
    size_t n = pe_rec.queue_len;
    pe_trace_key key = pe_rec.trace_key;
    uint32_t epoch = pe_rec.batch_epoch++;
    pe_rec.queue = NULL;
    pe_rec.queue_len = pe_rec.queue_cap = 0;
    pe_rec.trace_key = (pe_trace_key){0};
    pe_counters.queued = 0;
    queue_first_cap = n > 256 ? n : 256; /* the next batch's queue and key start as long as this one's */
    pe_trace_key_reserve(&pe_rec.trace_key, key.len);
    if (here && pe_esched_outstanding() == 0) pe_esched_run_here(entries, n, key, epoch, pe_rt.device);
    else pe_esched_submit(entries, n, key, epoch, pe_rt.device);
}

void pe_queue_flush(void) { take_batch(false); }

void pe_queue_wait_port(pe_port *p)
{
    if (p->state == PE_PORT_PENDING && p->batch == pe_rec.batch_epoch) take_batch(true);
    if (p->state == PE_PORT_PENDING) pe_esched_want(p->batch);
    while (p->state == PE_PORT_PENDING) pe_esched_wait();
}

void pe_queue_wait_idle(void)
{
    take_batch(true);
    while (pe_esched_outstanding() > 0) pe_esched_wait();
}

void pe_queue_maybe_flush(void)
{
    int64_t limit = pe_rt.queue_limit;
    if (pe_rec.block_depth > 0) limit *= BLOCK_LIMIT_FACTOR;
    if ((int64_t)pe_rec.queue_len >= limit) pe_queue_flush();
}
