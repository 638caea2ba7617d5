/* api_read.c — where the application waits for values: pe_read, pe_map,
 * pe_unmap, and the hints and synchronisation calls that start work early
 * (pe_hint_read, pe_flush, pe_sync, pe_block_begin/end); also the shape
 * queries, which never wait.
 * A read waits with the runtime lock let go, and another thread may release
 * the handle meanwhile (the application may share one): every read holds
 * its port from the lookup to the end of its copy (pe_port_hold), so it
 * gets the value it asked for, or an error where the release came first;
 * never a freed port's missing buffer or a reused slot's other value
 * (issue 36). */
#include <string.h>

#include "../record/irload.h"
#include "../macro/macro.h"
#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/executor.h"
#include "../../exec/base/memory.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"
#include "../../exec/pool/threadpool.h"
#include "../../exec/interp/interp.h"
#include "../../exec/interp/reference.h"
#include "../../profiler/collect.h"
/* Makes a's value available (on the host, if `host`: a GPU result is copied
 * down on first use); raises PE_E_INVALID for an invalid array. */
/* A read of an invalid array.  An error raised when its call was made was
 * reported then: the read says PE_E_INVALID (the contract).  One found while
 * computing (a gather index out of range, a device failure) was not: the
 * read is its first report and carries its own code (pe.h). */
static pe_status raise_invalid(const pe_site *s, const pe_port *p, const char *api)
{
    pe_status code = p->err_raised || p->err_code == PE_OK ? PE_E_INVALID : p->err_code;
    if (p->err_msg) return pe_raise(s, code, api, "the array is invalid: %s", p->err_msg);
    return pe_raise(s, code, api, "the array is invalid: an operation it depends on failed");
}

/* The profile's wait at a read: from before the read's pe_demand (which may
 * itself wait for a batch in flight) to the value computed, when the value
 * was not there yet (0: no wait, or no profile). */
static uint64_t wait_start(const pe_port *p)
{
    return pe_prof_on && p->state != PE_PORT_READY && p->state != PE_PORT_INVALID ? pe_prof_now() : 0;
}

/* Waits for port p (idx), which pe_demand has made computable; false after
 * raising an error.  `filled`: the port's lent_fills when the caller lent it
 * its buffer (read_into), else NULL.  `wait_t0`: wait_start's, before the
 * demand; the time from it to the value computed is the application's wait
 * at s (the profile's direct counters, as a GPU result coming down is). */
static bool wait_until_computed(const pe_site *s, pe_port *p, uint32_t idx, const char *api, bool host,
                                const uint32_t *filled, uint64_t wait_t0)
{
    pe_queue_wait_port(p);
    /* an expression again: another thread's read had it computed into its
     * own buffer meanwhile (not ours: then we are done) */
    while (p->state == PE_PORT_DEFERRED && !(filled && p->lent_fills != *filled)) {
        if (!pe_demand(s, idx, true, api)) return false;
        pe_queue_wait_port(p);
    }
    if (wait_t0) pe_prof_io_at(s, PE_PROF_WAIT, 0, wait_t0, pe_prof_now());
    bool copy_down = host && p->state == PE_PORT_READY && p->host_stale;
    uint64_t copy_t0 = pe_prof_on && copy_down ? pe_prof_now() : 0;
    if (host && p->state == PE_PORT_READY) pe_port_host(p);
    if (copy_t0) pe_prof_io_at(s, PE_PROF_COPY, pe_port_bytes(p), copy_t0, pe_prof_now());
    if (p->state == PE_PORT_INVALID) {
        raise_invalid(s, p, api);
        return false;
    }
    return true;
}

/* Port p (idx), held by the caller, stored and computed; false after
 * raising an error. */
static bool wait_for(const pe_site *s, pe_port *p, uint32_t idx, const char *api, bool host)
{
    uint64_t wait_t0 = wait_start(p);
    /* stored, even where its batch consumes it too */
    return pe_demand(s, idx, true, api) && wait_until_computed(s, p, idx, api, host, NULL, wait_t0);
}

static pe_status status_of_failure(void)
{
    const pe_error *e = pe_last_error();
    return e ? e->code : PE_E_ARG;
}

/* Below this a copy costs less than the bookkeeping. */
#define MIN_IN_PLACE_BYTES 16384

/* Lends dst to p as its result buffer when p is an element-wise result or
 * a library call's (exec/intrinsics/dispatch.c: one member) the batch being
 * recorded will compute, with no consumer in that batch (dst is
 * the caller's once the read returns) and no other view of its buffer: the
 * kernel writes straight into the caller's memory, with no copy.  When the
 * read is the value's last use the buffer stays the port's until it dies;
 * otherwise the handle stays an expression over its inputs once its value
 * is in dst (exec/base/deferred.c), and a later use computes it again or
 * stores it (jit/record/demand.c's cost model).  Otherwise nothing changes
 * and the read copies. */
static bool lend_dst(pe_port *p, void *dst, size_t dst_bytes, bool last_use)
{
    if (!dst || dst_bytes < MIN_IN_PLACE_BYTES) return false;
    const pe_executor *ex = pe_rt.executor;
    if (ex->caps & PE_EXEC_DEVICE_MEMORY) return false; /* a GPU result is copied straight into dst already */
    pe_op_kind kind = pe_op_table[p->op].kind;
    if (p->state != PE_PORT_PENDING || p->batch != pe_rec.batch_epoch || p->refs_int > 1 || p->maps || p->buf ||
        p->temp || (kind != PE_KIND_MAP && kind != PE_KIND_INTRINSIC) || pe_port_bytes(p) != dst_bytes)
        return false;
    bool keeps_handle = !last_use || p->refs_app != 1;
    if (keeps_handle && !(ex->caps & PE_EXEC_RUNS_KERNELS)) return false; /* the interpreter stores every value */
    pe_port_lend_buffer(p, dst, keeps_handle);
    pe_counters.reads_in_place++;
    return true;
}

/* Port p (idx), held by the caller, into dst. */
static int read_held(const pe_site *s, pe_port *p, uint32_t idx, void *dst, size_t dst_bytes, bool last_use,
                     const char *api)
{
    uint64_t wait_t0 = wait_start(p);
    if (!pe_demand(s, idx, true, api)) return status_of_failure(); /* a deferred value: queued again */
    bool lent = lend_dst(p, dst, dst_bytes, last_use);
    uint32_t fills = p->lent_fills;
    bool computed = wait_until_computed(s, p, idx, api, false, lent ? &fills : NULL, wait_t0);
    if (lent && p->state == PE_PORT_INVALID && pe_port_lent_for_reader(p))
        pe_port_give_back_lent(p); /* dst is the caller's again */
    if (!computed) return status_of_failure();
    size_t bytes = pe_port_bytes(p);
    if (!dst) return pe_raise(s, PE_E_ARG, api, "dst is NULL");
    if (dst_bytes != bytes)
        return pe_raise(s, PE_E_ARG, api, "dst_bytes is %zu but the %s array of %lld elements needs %zu",
                        dst_bytes, pe_dtype_name((pe_dtype)p->dtype), (long long)p->numel, bytes);
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    if (lent && (p->buf == dst || p->lent_fills != fills)) {
        /* computed in place (and, for a handle kept, given back: an expression again) */
    } else if (p->state == PE_PORT_READY && p->host_stale) {
        if (!pe_rt.executor->copy_out(p, dst)) /* p is invalid now, with the reason */
            return raise_invalid(s, p, api);
    } else if (p->buf) {
        pe_mem_copy(dst, p->buf, bytes);
    } else {
        pe_interp_fill(dst, (pe_dtype)p->dtype, p->value, p->numel);
    }
    if (pe_prof_on) pe_prof_io_at(s, PE_PROF_READ, bytes, t0, pe_prof_now()), pe_prof_value_read(p);
    return __builtin_expect(pe_check.mode == PE_CHECK_OFF, 1) ? PE_OK : pe_check_copyout(s, api, p, dst);
}

static int read_into(const pe_site *s, pe_array a, void *dst, size_t dst_bytes, bool last_use, const char *api)
{
    uint32_t idx;
    if (!pe_port_lookup(s, a, api, &idx)) return status_of_failure();
    pe_port_hold(idx); /* the wait lets go of the lock: another thread may release a meanwhile */
    int rc = read_held(s, pe_port_at(idx), idx, dst, dst_bytes, last_use, api);
    pe_port_let_go(idx);
    return rc;
}

int pe_read_at(const pe_site *s, pe_array a, void *dst, size_t dst_bytes)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (pe_macro_refuse_host(s, "pe_read")) return PE_E_MACRO;
    /* a result on the GPU goes straight into dst (pe_executor.copy_out); on the
     * CPU a result still to be computed is computed into dst itself */
    int rc = read_into(s, a, dst, dst_bytes, pe_ir_read_is_last_use(s, a), "pe_read");
    if (rc == PE_OK) pe_ir_release_operands(s, "pe_read", &a, 1); /* pe_read(pe_sum(x), ...): the sum is done with */
    return rc;
}

int pe_read_release_at(const pe_site *s, pe_array a, void *dst, size_t dst_bytes)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (pe_macro_refuse_host(s, "pe_read_release")) return PE_E_MACRO;
    uint32_t idx;
    if (!pe_port_lookup(s, a, "pe_read_release", &idx)) return status_of_failure();
    int rc = read_into(s, a, dst, dst_bytes, true, "pe_read_release");
    /* in every case the handle is done with; looked up again, since another
     * thread may have released it while the read waited (releasing twice) */
    if (!pe_port_lookup(s, a, "pe_read_release", &idx)) return status_of_failure();
    pe_port_release_app(idx, s);
    return rc;
}

/* Reads a 1-element array of any dtype into a float or a double. */
static int read_one_held(const pe_site *s, pe_port *p, uint32_t idx, void *dst, bool as_f32, const char *api)
{
    if (!wait_for(s, p, idx, api, true)) return status_of_failure();
    if (!dst) return pe_raise(s, PE_E_ARG, api, "the destination is NULL");
    if (p->numel != 1)
        return pe_raise(s, PE_E_ARG, api, "the array has %lld elements, not 1", (long long)p->numel);
    if (pe_dtype_is_complex((pe_dtype)p->dtype))
        return pe_raise(s, PE_E_TYPE, api, "the array is %s: pe_read it into a %s complex (or take pe_real first)",
                        pe_dtype_name((pe_dtype)p->dtype), p->dtype == PE_C64 ? "float" : "double");
    double v;
    if (!p->buf) v = p->value;
    else switch ((pe_dtype)p->dtype) {
        case PE_F32: v = *(const float *)p->buf; break;
        case PE_F64: v = *(const double *)p->buf; break;
        case PE_I32: v = *(const int32_t *)p->buf; break;
        default: v = *(const uint8_t *)p->buf; break;
        }
    if (as_f32) *(float *)dst = (float)v;
    else *(double *)dst = v;
    if (pe_prof_on) {
        uint64_t now = pe_prof_now();
        pe_prof_io_at(s, PE_PROF_READ, as_f32 ? sizeof(float) : sizeof(double), now, now);
        pe_prof_value_read(p);
    }
    return __builtin_expect(pe_check.mode == PE_CHECK_OFF, 1) ? PE_OK : pe_check_copyout(s, api, p, p->buf);
}

static int read_one(const pe_site *s, pe_array a, void *dst, bool as_f32, const char *api)
{
    uint32_t idx;
    if (!pe_port_lookup(s, a, api, &idx)) return status_of_failure();
    pe_port_hold(idx); /* as read_into */
    int rc = read_one_held(s, pe_port_at(idx), idx, dst, as_f32, api);
    pe_port_let_go(idx);
    return rc;
}

int pe_read_f32_at(const pe_site *s, pe_array a, float *v)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (pe_macro_refuse_host(s, "pe_read_f32")) return PE_E_MACRO;
    int rc = read_one(s, a, v, true, "pe_read_f32");
    if (rc == PE_OK) pe_ir_release_operands(s, "pe_read_f32", &a, 1);
    return rc;
}

int pe_read_f64_at(const pe_site *s, pe_array a, double *v)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (pe_macro_refuse_host(s, "pe_read_f64")) return PE_E_MACRO;
    int rc = read_one(s, a, v, false, "pe_read_f64");
    if (rc == PE_OK) pe_ir_release_operands(s, "pe_read_f64", &a, 1);
    return rc;
}

const void *pe_map_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (pe_macro_refuse_host(s, "pe_map")) return NULL;
    uint32_t idx;
    pe_port *p = pe_port_lookup(s, a, "pe_map", &idx);
    if (!p) return NULL;
    pe_port_hold(idx); /* as read_into; once mapped, the view holds it */
    bool computed = wait_for(s, p, idx, "pe_map", true);
    if (computed && !p->buf && !pe_interp_materialise(p)) {
        pe_raise(s, PE_E_NOMEM, "pe_map", "out of memory for a host copy");
        computed = false;
    }
    if (computed) p->maps++;
    pe_port_let_go(idx);
    if (!computed) return NULL;
    if (__builtin_expect(pe_check.mode != PE_CHECK_OFF, 0)) pe_check_copyout(s, "pe_map", p, p->buf); /* the view stays */
    if (pe_prof_on) { /* a view, not a copy: a read of no time */
        uint64_t now = pe_prof_now();
        pe_prof_io_at(s, PE_PROF_READ, pe_port_bytes(p), now, now);
        pe_prof_value_read(p);
    }
    return p->buf;
}

/* A mapped array may have been released meanwhile: its view stays valid until
 * this unmap, which then frees it. */
void pe_unmap_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (pe_macro_refuse_host(s, "pe_unmap")) return;
    if (!pe_require_init(s, "pe_unmap")) return;
    uint32_t idx;
    pe_port *p = pe_port_peek(a, &idx);
    if (p && p->maps > 0) {
        p->maps--;
        pe_port_update_retained(p);
        pe_port_maybe_free(idx);
        return;
    }
    if (pe_port_lookup(s, a, "pe_unmap", &idx)) pe_raise(s, PE_E_ARG, "pe_unmap", "the array is not mapped");
}

/* ------------------------------------------------------------- queries */

static pe_port *query(const pe_site *s, pe_array a, const char *api)
{
    uint32_t idx;
    return pe_port_lookup(s, a, api, &idx);
}

pe_dtype pe_dtype_of_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    pe_port *p = query(PE_SITE_OR_CALLER(s), a, "pe_dtype_of");
    return p ? (pe_dtype)p->dtype : PE_F32;
}

int pe_rank_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    pe_port *p = query(PE_SITE_OR_CALLER(s), a, "pe_rank");
    return p ? p->rank : -1;
}

int pe_shape_at(const pe_site *s, pe_array a, int64_t dims[PE_MAX_RANK])
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!dims) return pe_raise(s, PE_E_ARG, "pe_shape", "dims is NULL"), -1;
    pe_port *p = query(s, a, "pe_shape");
    if (!p) return -1;
    for (int d = 0; d < p->rank; d++) dims[d] = p->shape[d];
    return p->rank;
}

int64_t pe_dim_at(const pe_site *s, pe_array a, int axis)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    pe_port *p = query(s, a, "pe_dim");
    if (!p) return -1;
    if (!pe_normalise_axis(&axis, p->rank)) {
        pe_raise(s, PE_E_ARG, "pe_dim", "axis %d out of range for rank %d", axis, p->rank);
        return -1;
    }
    return p->shape[axis];
}

int64_t pe_numel_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    pe_port *p = query(PE_SITE_OR_CALLER(s), a, "pe_numel");
    return p ? p->numel : -1;
}

int pe_is_valid(pe_array a)
{
    PE_API_GUARD;
    uint64_t i = (a.h & 0xffffffffu) - 1;
    if (!pe_rt.initialised || a.h == 0 || i >= pe_rt.n_slots) return 0;
    pe_port *p = pe_port_at((uint32_t)i);
    return p->gen == (uint32_t)(a.h >> 32) && p->refs_app > 0 && p->state != PE_PORT_FREE &&
           p->state != PE_PORT_INVALID;
}

/* ----------------------------------------------- hints and synchronisation */

void pe_hint_read_at(const pe_site *s, pe_array a)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    uint32_t idx;
    pe_port *p = pe_port_lookup(s, a, "pe_hint_read", &idx);
    if (!p) return;
    pe_port_hold(idx); /* pe_demand may wait for a batch in flight */
    /* stored when its batch runs (a deferred value: computed again) */
    bool flush = pe_demand(s, idx, true, "pe_hint_read") && p->state == PE_PORT_PENDING;
    pe_port_let_go(idx);
    if (flush) pe_queue_flush();
}

void pe_block_begin_at(const pe_site *s)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!pe_require_init(s, "pe_block_begin")) return;
    pe_rec.block_depth++;
}

void pe_block_end_at(const pe_site *s)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!pe_require_init(s, "pe_block_end")) return;
    if (pe_rec.block_depth == 0) {
        pe_raise(s, PE_E_ARG, "pe_block_end", "pe_block_end without a matching pe_block_begin");
        return;
    }
    if (--pe_rec.block_depth == 0) pe_queue_flush();
}

void pe_flush_at(const pe_site *s)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!pe_require_init(s, "pe_flush")) return;
    pe_queue_flush();
}

void pe_sync_at(const pe_site *s)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    if (!pe_require_init(s, "pe_sync")) return;
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    pe_queue_wait_idle();
    if (pe_rt.executor->wait) pe_rt.executor->wait(pe_rt.executor); /* GPU batches end without waiting for the GPU */
    if (t0) pe_prof_io_at(s, PE_PROF_WAIT, 0, t0, pe_prof_now()); /* the application waited here for everything */
    if (__builtin_expect(pe_check.mode != PE_CHECK_OFF, 0)) pe_check_raise_pending();
}
