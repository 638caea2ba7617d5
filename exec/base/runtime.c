/* runtime.c — the ground of the runtime: its global state (`pe_rt`, `pe_rec`,
 * `pe_retention`, `pe_counters`: runtime.h says who owns each) and
 * the runtime lock every entry point holds.  Everything above uses it; it
 * calls nothing above it. */
#include <pthread.h>
#include <stdbool.h>

#include "runtime.h"

pe_runtime pe_rt = {.log_level = PE_LOG_WARN, .free_head = UINT32_MAX, .free_tail = UINT32_MAX};
pe_recording pe_rec;
pe_retention_state pe_retention;
pe_stats pe_counters;

/* The runtime lock: a plain mutex with a per-thread depth, so that entry
 * points calling entry points (and error handlers calling the API) nest, and
 * a wait can release it whatever the depth. */
static pthread_mutex_t api_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int api_depth;

/* Application threads inside an entry point (holding the lock, or waiting
 * with it released), so that pe_shutdown frees nothing while a reader that
 * came in before it still waits for a value or runs a batch (issue 22: such
 * a reader crashed in run_kernel or waited forever).  The runtime's own
 * threads (E-scheduler, compile ahead) hold the lock too but are not
 * counted: pe_shutdown stops them itself. */
static int inside;
static _Thread_local bool internal_thread;
static pthread_cond_t left = PTHREAD_COND_INITIALIZER;

int pe_api_lock(void)
{
    if (api_depth++ == 0) {
        pthread_mutex_lock(&api_mutex);
        if (!internal_thread) inside++;
    }
    return 0;
}

void pe_api_unlock(int *guard)
{
    (void)guard;
    if (--api_depth == 0) {
        if (!internal_thread) {
            inside--;
            if (pe_rt.shutting_down) pthread_cond_broadcast(&left);
        }
        pthread_mutex_unlock(&api_mutex);
    }
}

void pe_api_internal_thread(void) { internal_thread = true; }

int pe_api_others_inside(void) { return inside - (api_depth > 0 && !internal_thread); }

void pe_api_wait_left(void) { pthread_cond_wait(&left, &api_mutex); }

bool pe_api_held(void) { return api_depth > 0; }

void pe_api_wait(void *cond) { pthread_cond_wait((pthread_cond_t *)cond, &api_mutex); }

/* fork() while the E-scheduler held the runtime lock left the child with a
 * lock nobody would release (a child that then called PE hung): the lock is
 * taken around fork, so the child gets it free.  The child has none of the
 * parent's threads: it can record requests and report errors, not compute. */
static _Thread_local bool locked_for_fork, fork_bare;
static void fork_prepare(void)
{
    if (api_depth == 0 && !fork_bare) {
        pthread_mutex_lock(&api_mutex);
        locked_for_fork = true;
    }
}
static void fork_done(void)
{
    if (locked_for_fork) {
        locked_for_fork = false;
        pthread_mutex_unlock(&api_mutex);
    }
}
/* The child has only the forking thread: only it can be inside. */
static void fork_child(void)
{
    fork_done();
    inside = api_depth > 0 && !internal_thread;
}
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;
static void install_fork_handlers(void) { pthread_atfork(fork_prepare, fork_done, fork_child); }
void pe_api_fork_bare(bool bare) { fork_bare = bare; }
void pe_api_install_fork_handlers(void) { pthread_once(&fork_handlers_once, install_fork_handlers); }

int pe_api_suspend(void)
{
    int depth = api_depth;
    api_depth = 0;
    pthread_mutex_unlock(&api_mutex);
    return depth;
}

void pe_api_resume(int depth)
{
    pthread_mutex_lock(&api_mutex);
    api_depth = depth;
}
