/* queue.c — the work queue and the C-scheduler's triggers.  Requests append
 * COMPUTE entries, releases RELEASE entries, hints HINT entries; nothing runs
 * until a result is needed (a read or map), a hint, pe_flush/pe_sync, the end
 * of the outermost pe_block, or the queue passing its limit outside a block.
 * Then the whole queue goes to the executor in order, and the entries' own
 * references on their ports are dropped. */
#include <stdlib.h>

#include "runtime.h"
#include "trace.h"
#include "../exec/executor.h"

/* Inside a block the queue may grow past its limit, but not without bound. */
#define BLOCK_LIMIT_FACTOR 64

bool pe_queue_push(pe_entry_kind kind, uint32_t port)
{
    if (pe_rt.queue_len == pe_rt.queue_cap) {
        size_t cap = pe_rt.queue_cap ? pe_rt.queue_cap * 2 : 256;
        pe_entry *q = realloc(pe_rt.queue, cap * sizeof *q);
        if (!q) return false;
        pe_rt.queue = q;
        pe_rt.queue_cap = cap;
    }
    pe_rt.queue[pe_rt.queue_len] = (pe_entry){(uint8_t)kind, port};
    pe_trace_append(&pe_rt.trace_key, &pe_rt.queue[pe_rt.queue_len], pe_rt.queue_len);
    pe_rt.queue_len++;
    if (kind == PE_ENTRY_COMPUTE) pe_port_ref(port);
    pe_rt.stats.queued = (int64_t)pe_rt.queue_len;
    return true;
}

void pe_queue_flush(void)
{
    if (pe_rt.flushing || pe_rt.queue_len == 0) return;
    pe_rt.flushing = true;
    pe_rt.stats.flushes++;
    /* Take the batch: work recorded while it runs (none today; error handlers
     * could) goes to a fresh queue. */
    pe_entry *entries = pe_rt.queue;
    size_t n = pe_rt.queue_len;
    pe_trace_key key = pe_rt.trace_key;
    pe_rt.queue = NULL;
    pe_rt.queue_len = pe_rt.queue_cap = 0;
    pe_rt.trace_key = (pe_trace_key){0};
    pe_rt.stats.queued = 0;

    pe_batch batch = {entries, n, &key};
    pe_rt.stats.ops_executed += pe_rt.executor->run(pe_rt.executor, &batch);

    for (size_t i = 0; i < n; i++)
        if (entries[i].kind == PE_ENTRY_COMPUTE) pe_port_unref(entries[i].port);
    free(entries);
    pe_trace_key_free(&key);
    pe_rt.flushing = false;
}

void pe_queue_maybe_flush(void)
{
    int64_t limit = pe_rt.queue_limit;
    if (pe_rt.block_depth > 0) limit *= BLOCK_LIMIT_FACTOR;
    if ((int64_t)pe_rt.queue_len >= limit) pe_queue_flush();
}
