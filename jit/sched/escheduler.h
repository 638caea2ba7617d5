/* escheduler.h — the E-scheduler: the thread that runs submitted batches on
 * the executor, so that the application thread only waits to read. */
#ifndef PE_EXEC_ESCHEDULER_H
#define PE_EXEC_ESCHEDULER_H

#include "../../exec/base/runtime.h"

bool pe_esched_start(void);
/* Waits for the submitted work, then ends the thread (runtime lock held). */
void pe_esched_stop(void);
/* Takes over a batch (entries and key are moved into it): it enters the
 * pending table at once, then the caller waits while more than
 * MAX_OUTSTANDING batches are outstanding (flow control).  Runtime lock
 * held. */
void pe_esched_submit(pe_entry *entries, size_t n, pe_trace_key key, uint32_t epoch, int device);
/* Runs a batch on the calling thread, when nothing else is outstanding and
 * the caller would only wait for it: no thread hand-off for a read right
 * after recording. */
void pe_esched_run_here(pe_entry *entries, size_t n, pe_trace_key key, uint32_t epoch, int device);
/* Waits until a batch finished (runtime lock held, released while waiting). */
void pe_esched_wait(void);
/* An application thread waits for a port of batch `epoch`: it runs next, or
 * after the batches it depends on, ahead of older independent ones. */
void pe_esched_want(uint32_t epoch);
/* For tests: while held, only batches someone waits for (and what they
 * depend on) run, so that running ahead can be observed. */
void pe_esched_hold(bool hold);
int pe_esched_outstanding(void);

#endif
