/* runtime.c — the ground of the runtime: its global state (`pe_rt`) and
 * the runtime lock every entry point holds.  Everything above uses it; it
 * calls nothing above it. */
#include <pthread.h>
#include <stdbool.h>

#include "runtime.h"

pe_runtime pe_rt = {.log_level = PE_LOG_WARN, .free_head = UINT32_MAX, .free_tail = UINT32_MAX};

/* The runtime lock: a plain mutex with a per-thread depth, so that entry
 * points calling entry points (and error handlers calling the API) nest, and
 * a wait can release it whatever the depth. */
static pthread_mutex_t api_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int api_depth;

int pe_api_lock(void)
{
    if (api_depth++ == 0) pthread_mutex_lock(&api_mutex);
    return 0;
}

void pe_api_unlock(int *guard)
{
    (void)guard;
    if (--api_depth == 0) pthread_mutex_unlock(&api_mutex);
}

bool pe_api_held(void) { return api_depth > 0; }

void pe_api_wait(void *cond) { pthread_cond_wait((pthread_cond_t *)cond, &api_mutex); }

/* fork() while the E-scheduler held the runtime lock left the child with a
 * lock nobody would release (a child that then called PE hung): the lock is
 * taken around fork, so the child gets it free.  The child has none of the
 * parent's threads: it can record requests and report errors, not compute. */
static _Thread_local bool locked_for_fork;
static void fork_prepare(void)
{
    if (api_depth == 0) {
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
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;
static void install_fork_handlers(void) { pthread_atfork(fork_prepare, fork_done, fork_done); }
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
