/* lifecycle.c — pe_init / pe_shutdown, configuration (pe_config, then the
 * PE_* environment), devices, counters.  The runtime state and its lock
 * live in the ground layer (exec/base/runtime.c). */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api_rng.h"
#include "api_sparse.h"
#include "../aot/aot.h"
#include "../macro/macro.h"
#include "../kir/target.h"
#include "../provision/provision.h"
#include "../record/irload.h"
#include "../record/record.h"
#include "../record/tape.h"
#include "../sched/escheduler.h"
#include "../trace/trace.h"
#include "../../exec/base/error.h"
#include "../../exec/base/executor.h"
#include "../../exec/base/memory.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/site.h"
#include "../../exec/backends.h"
#include "../../exec/interp/interp.h"
#include "../../exec/interp/reference.h"
#include "../../profiler/collect.h"

/* A device needs its driver (the executor checks) and its target's
 * compiler (a GPU: NVRTC). */
static bool start_device(int device)
{
    const pe_backend *b = &pe_device_backend;
    const char *why = NULL;
    if (b->device_count() > 0 && !b->target->usable(&why)) {
        pe_log_message(PE_LOG_WARN, "a %s device is present but %s: the CPU computes", b->name, why);
        return false;
    }
    return b->start(device);
}

/* The executors that pe_init started, stopped, and the provisioning with
 * them (the reverse of the start). */
static void stop_executors(void)
{
    if (!(pe_rt.executor->caps & PE_EXEC_RUNS_KERNELS)) return;
    if (pe_rt.executor->caps & PE_EXEC_DEVICE_MEMORY) pe_device_backend.stop();
    pe_host_backend.stop();
    pe_provision_stop(pe_ir_fingerprint());
}

#define DEFAULT_QUEUE_LIMIT 4096
/* MB of stored values that only expressions may hold (values on demand:
 * exec/base/deferred.c) before those expressions are stored instead */
#define DEFAULT_RETAIN_LIMIT_MB 256
#define DEFAULT_TRACE_ENTRIES 256
#define DEFAULT_MACRO_ENTRIES 256 /* PE_MACRO_CACHE: code reuse sections' entries (jit/macro) */

const char *pe_version(void) { return PE_VERSION_STRING; }

/* Reads a positive integer variable; warns and keeps `fallback` when malformed. */
static int64_t env_int(const char *name, int64_t fallback, int64_t min)
{
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end || n < min) {
        pe_log_message(PE_LOG_WARN, "%s=%s is not an integer >= %lld; using %lld", name, v, (long long)min,
               (long long)fallback);
        return fallback;
    }
    return n;
}

static int env_log_level(int fallback)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    const char *v = getenv("PE_LOG");
    if (!v || !*v) return fallback;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(v, names[i]) == 0) return i;
    pe_log_message(PE_LOG_WARN, "PE_LOG=%s is not one of error|warn|info|debug; using warn", v);
    return fallback;
}

/* PE_DEVICE: auto | cpu | cuda | cuda:N (the device backend's name, any
 * case), as a device number (-1: automatic; 0: the CPU; 1 + N: device N).
 * Whether that device exists is checked once the executors are up. */
static int env_device(void)
{
    const char *v = getenv("PE_DEVICE"), *devices = pe_device_backend.name;
    size_t len = strlen(devices);
    if (!v || !*v || strcasecmp(v, "auto") == 0) return -1;
    if (strcasecmp(v, "cpu") == 0) return 0;
    if (strcasecmp(v, devices) == 0) return 1;
    if (strncasecmp(v, devices, len) == 0 && v[len] == ':') {
        char *end;
        long n = strtol(v + len + 1, &end, 10);
        if (!*end && end != v + len + 1 && n >= 0 && n < 64) return 1 + (int)n;
    }
    char lower[32];
    size_t i = 0;
    for (; devices[i] && i + 1 < sizeof lower; i++) lower[i] = (char)tolower((unsigned char)devices[i]);
    lower[i] = 0;
    pe_log_message(PE_LOG_WARN, "PE_DEVICE=%s is not one of auto|cpu|%s|%s:N; using auto", v, lower, lower);
    return -1;
}

/* PE_CHECK: off | copyout | all, and PE_CHECK_SCALE, the allowed relative
 * error of the floating dtypes (exec/interp/reference.c). */
static void configure_check(const pe_config *cfg)
{
    const char *v = cfg && cfg->check ? cfg->check : getenv("PE_CHECK");
    pe_check.mode = PE_CHECK_OFF;
    if (v && *v && strcasecmp(v, "copyout") == 0) pe_check.mode = PE_CHECK_COPYOUT;
    else if (v && *v && strcasecmp(v, "all") == 0) pe_check.mode = PE_CHECK_ALL;
    else if (v && *v && strcasecmp(v, "off") != 0)
        pe_log_message(PE_LOG_WARN, "PE_CHECK=%s is not one of off|copyout|all; using off", v);
    pe_check_default_scales(pe_check.scale);
    double scale = cfg && cfg->check_scale > 0 ? cfg->check_scale : 0;
    const char *sv = getenv("PE_CHECK_SCALE");
    if (scale == 0 && sv && *sv) {
        char *end;
        scale = strtod(sv, &end);
        if (*end || !(scale >= 0) || isinf(scale)) {
            pe_log_message(PE_LOG_WARN, "PE_CHECK_SCALE=%s is not a number >= 0; using the defaults", sv);
            scale = 0;
        } else if (scale == 0) { /* exactly */
            pe_check.scale[PE_F32] = pe_check.scale[PE_F64] = 0;
        }
    }
    if (scale > 0) pe_check.scale[PE_F32] = pe_check.scale[PE_F64] = scale;
    free(pe_check.message);
    pe_check.message = NULL;
    pe_check.site = NULL;
    pe_check.reported = false;
}

int pe_init(const pe_config *cfg)
{
    pe_api_install_fork_handlers();
    PE_API_GUARD;
    if (pe_rt.shutting_down) { /* it cannot wait: the shutdown waits for this call to leave */
        pe_log_message(PE_LOG_ERROR, "pe_init: another thread's pe_shutdown is running");
        return PE_E_INVALID;
    }
    if (pe_rt.initialised) return PE_OK;
    pe_rt.log_level = env_log_level(PE_LOG_WARN);
    if (cfg && cfg->log_level > 0 && cfg->log_level <= PE_LOG_DEBUG + 1) pe_rt.log_level = cfg->log_level - 1;
    pe_device_info cpu_info;
    pe_host_backend.device_info(0, &cpu_info);
    pe_rt.threads = (int)env_int("PE_THREADS", cpu_info.cores, 1);
    if (cfg && cfg->threads > 0) pe_rt.threads = cfg->threads;
    pe_rt.device = env_device();
    if (cfg && cfg->device > 0) pe_rt.device = cfg->device - 1;
    pe_rt.queue_limit = env_int("PE_QUEUE_LIMIT", DEFAULT_QUEUE_LIMIT, 1);
    configure_check(cfg);
    pe_retention.limit = env_int("PE_RETAIN_LIMIT", DEFAULT_RETAIN_LIMIT_MB, 0) << 20;
    if (cfg && cfg->queue_limit > 0) pe_rt.queue_limit = cfg->queue_limit;
    const char *executor = cfg && cfg->executor ? cfg->executor : getenv("PE_EXECUTOR");
    pe_rt.executor = pe_host_backend.executor;
    if (executor && *executor && strcasecmp(executor, "interp") == 0) pe_rt.executor = &pe_interp_executor;
    else if (executor && *executor && strcasecmp(executor, "jit") != 0)
        pe_log_message(PE_LOG_WARN, "PE_EXECUTOR=%s is not one of jit|interp; using jit", executor);
    const char *cache_dir = cfg && cfg->cache_dir ? cfg->cache_dir : getenv("PE_CACHE_DIR");
    int trace_entries = (int)env_int("PE_TRACE_CACHE", DEFAULT_TRACE_ENTRIES, 0);
    if (cfg && cfg->trace_cache_entries) trace_entries = cfg->trace_cache_entries < 0 ? 0 : cfg->trace_cache_entries;
    if (pe_rt.executor == pe_host_backend.executor && !pe_host_backend.start(pe_rt.threads)) {
        pe_log_message(PE_LOG_WARN, "cannot start the CPU executor's threads; using the interpreter");
        pe_rt.executor = &pe_interp_executor;
    }
    bool compiles = pe_rt.executor->caps & PE_EXEC_RUNS_KERNELS;
    if (compiles) pe_provision_start(cache_dir, trace_entries, pe_ir_fingerprint());
    /* the GPU named by PE_DEVICE (cuda:N), else the first one */
    if (compiles && pe_rt.device != 0 && start_device(pe_rt.device > 0 ? pe_rt.device - 1 : 0))
        pe_rt.executor = pe_device_backend.executor;
    if (pe_rt.device > 0 && !(pe_rt.executor->caps & PE_EXEC_DEVICE_MEMORY)) {
        if (compiles)
            pe_log_message(PE_LOG_WARN, "PE_DEVICE asks for %s device %d, which cannot be used: the CPU computes",
                           pe_device_backend.name, pe_rt.device - 1);
        pe_rt.device = 0;
    }
    pe_rt.free_head = pe_rt.free_tail = UINT32_MAX;
    pe_rt.n_free = 0;
    memset(&pe_counters, 0, sizeof pe_counters);
    pe_rec.batch_epoch++;
    if (!pe_esched_start()) {
        pe_log_message(PE_LOG_ERROR, "cannot start the E-scheduler thread");
        stop_executors();
        return PE_E_NOMEM;
    }
    /* draws in PE_MACRO bodies advance on every replay */
    pe_macro_start((int)env_int("PE_MACRO_CACHE", DEFAULT_MACRO_ENTRIES, 0), pe_rng_replay_operand);
    pe_rt.initialised = true;
    pe_rt.life++;
    pe_rt.shut_down = false;
    pe_aot_start(); /* after the executor: it compiles for it */
    char device[sizeof cpu_info.name + sizeof cpu_info.arch + 64];
    snprintf(device, sizeof device, "%s executor on %s (%s)", pe_rt.executor->name, cpu_info.name, cpu_info.arch);
    pe_prof_start(device, pe_version(), pe_rt.threads, cfg ? cfg->profile : NULL); /* NULL: PE_PROFILE */
    pe_log_message(PE_LOG_INFO, "PE %s on %s (%s, %d threads), executor %s", PE_VERSION_STRING, cpu_info.name,
           cpu_info.arch, pe_rt.threads, pe_rt.executor->name);
    return PE_OK;
}

/* Other threads may be inside the API meanwhile (docs/semantics.md): from
 * here on every call that comes in fails with PE_E_INVALID ("runtime shut
 * down"; once it is over, PE_E_ARG "not initialised", as before pe_init),
 * and calls already inside finish first — a reader waiting for a
 * value gets it (its batch runs, as all work recorded so far does), a batch
 * running on a reader's thread ends — before anything is freed.  A second
 * pe_shutdown meanwhile returns at once. */
void pe_shutdown(void)
{
    PE_API_GUARD;
    if (!pe_rt.initialised || pe_rt.shutting_down) return;
    pe_rt.shutting_down = true;
    for (;;) {
        pe_queue_flush();
        pe_queue_wait_idle();
        if (pe_api_others_inside() == 0) break;
        pe_api_wait_left(); /* they may submit more work before they leave: flushed and run again */
    }
    if (pe_check.mode) pe_check_raise_pending(); /* a difference no read raised */
    pe_esched_stop();
    pe_aot_stop();
    pe_prof_finish();
    if (pe_counters.live_arrays > 0)
        pe_log_message(PE_LOG_INFO, "pe_shutdown: %lld arrays still alive are freed", (long long)pe_counters.live_arrays);
    pe_macro_stop(); /* its entries hold constants: before the ports go */
    pe_scopes_free();
    pe_rng_forget_all();
    pe_csr_forget_all(); /* the ports go next, with the references its matrices held */
    pe_ports_free_all();
    pe_tape_free_all();
    stop_executors();
    pe_mem_trim();
    free(pe_rec.queue);
    free(pe_check.message);
    pe_check.message = NULL;
    free(pe_retention.expressions);
    pe_retention.expressions = NULL;
    pe_retention.n_expressions = pe_retention.cap_expressions = pe_retention.compact_at = 0;
    pe_retention.bytes = 0;
    pe_trace_key_free(&pe_rec.trace_key);
    pe_rec.queue = NULL;
    pe_rec.queue_len = pe_rec.queue_cap = 0;
    pe_rec.block_depth = 0;
    pe_rt.initialised = false;
    pe_rt.shutting_down = false;
    pe_rt.shut_down = true;
}

/* The CPU, then the devices their driver reports (whether or not their
 * executor uses them). */
int pe_device_count(void) { return 1 + pe_device_backend.device_count(); }

int pe_device_info_at(const pe_site *s, int dev, pe_device_info *out)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!out) return pe_raise(s, PE_E_ARG, "pe_device_info", "out is NULL");
    if (dev < 0 || dev >= pe_device_count())
        return pe_raise(s, PE_E_DEVICE, "pe_device_info", "no device %d (devices: 0 = CPU%s%s)", dev,
                        pe_device_count() > 1 ? ", 1.. = " : "", pe_device_count() > 1 ? pe_device_backend.name : "");
    if (dev == 0) pe_host_backend.device_info(0, out);
    else pe_device_backend.device_info(dev - 1, out);
    return PE_OK;
}

int pe_set_device_at(const pe_site *s, int dev)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!pe_require_init(s, "pe_set_device")) return PE_E_ARG;
    if (dev != -1 && (dev < 0 || dev >= pe_device_count()))
        return pe_raise(s, PE_E_DEVICE, "pe_set_device", "no device %d (devices: -1 = automatic, 0 = CPU%s%s)", dev,
                        pe_device_count() > 1 ? ", 1.. = " : "", pe_device_count() > 1 ? pe_device_backend.name : "");
    pe_queue_flush(); /* work recorded so far runs where it was meant to */
    /* a GPU not in use yet starts now (its context, streams, pool); the
     * interpreter (PE_EXECUTOR=interp) has no GPU */
    const pe_backend *b = &pe_device_backend;
    if (dev > 0 && !b->serves(dev - 1)) {
        if (!(pe_rt.executor->caps & PE_EXEC_RUNS_KERNELS))
            return pe_raise(s, PE_E_DEVICE, "pe_set_device", "%s device %d: the interpreter (PE_EXECUTOR=interp) runs "
                            "everything on the CPU", b->name, dev - 1);
        if (!start_device(dev - 1))
            return pe_raise(s, PE_E_DEVICE, "pe_set_device", "%s device %d cannot be used (the warning above says why)",
                            b->name, dev - 1);
        pe_rt.executor = b->executor;
    }
    pe_rt.device = dev;
    return PE_OK;
}

void pe_get_stats(pe_stats *out)
{
    PE_API_GUARD;
    if (!out) return;
    *out = pe_counters;
    out->queued = (int64_t)pe_rec.queue_len;
}
