/* port.c — the port table behind handles.  A handle is index + generation
 * ((gen << 32) | (index + 1)); a slot's generation changes each time it is
 * reused, so stale handles are detected (jit/handle.c), and the slot
 * remembers where its last application reference was released so that a
 * later use can say where.
 * Ports are counted twice: application references (handles) and runtime
 * references (pending consumers, queue entries); a port dies when both are
 * zero, no pe_map view is outstanding and no call that waits with the
 * runtime lock let go holds it (pe_port_hold: a read racing a release in
 * another thread).  Free slots are reused in FIFO
 * order, and only once PE_FREE_SLOT_RESERVE of them wait, so that a release
 * site stays around for diagnostics long after the release: with immediate
 * reuse, a program that releases an array and makes a new one would hand the
 * new one the old slot, and a later use of the old handle could only say
 * "stale" instead of naming where it was released. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "executor.h"
#include "memory.h"
#include "runtime.h"
#include "shape.h"

#define NO_SLOT UINT32_MAX
#define PE_FREE_SLOT_RESERVE 64


static bool add_page(void)
{
    pe_port **pages = realloc(pe_rt.pages, (pe_rt.n_pages + 1) * sizeof *pages);
    if (!pages) return false;
    pe_rt.pages = pages;
    pe_port *page = calloc(PE_PAGE_SIZE, sizeof *page);
    if (!page) return false;
    pe_rt.pages[pe_rt.n_pages++] = page;
    return true;
}

/* Generations continue across pe_init/pe_shutdown cycles, so a handle kept
 * from an earlier session never matches a port of a later one. */
static uint32_t session_generation;

uint32_t pe_port_new(void)
{
    assert(pe_api_held());
    uint32_t idx;
    /* a fresh slot while the free list is short (or a page cannot be had) */
    bool fresh = pe_rt.free_head == NO_SLOT || pe_rt.n_free < PE_FREE_SLOT_RESERVE;
    if (fresh && pe_rt.n_slots == pe_rt.n_pages * PE_PAGE_SIZE && (pe_rt.n_slots >= UINT32_MAX - PE_PAGE_SIZE || !add_page()))
        fresh = false;
    if (fresh) {
        idx = pe_rt.n_slots++;
    } else {
        if (pe_rt.free_head == NO_SLOT) return NO_SLOT;
        idx = pe_rt.free_head;
        pe_rt.free_head = pe_port_at(idx)->next_free;
        if (pe_rt.free_head == NO_SLOT) pe_rt.free_tail = NO_SLOT;
        pe_rt.n_free--;
    }
    pe_port *p = pe_port_at(idx);
    uint32_t gen = (p->gen > session_generation ? p->gen : session_generation) + 1, released_gen = p->released_gen;
    const pe_site *release_site = p->release_site, *release_scope = p->release_scope;
    bool released_by_ir = p->released_by_ir;
    memset(p, 0, sizeof *p);
    p->gen = gen ? gen : 1;
    p->released_gen = released_gen;
    p->release_site = release_site;
    p->release_scope = release_scope;
    p->released_by_ir = released_by_ir;
    p->state = PE_PORT_PENDING;
    p->next_free = NO_SLOT;
    pe_counters.live_arrays++;
    return idx;
}


pe_port *pe_port_peek(pe_array a, uint32_t *idx_out)
{
    uint64_t idx = (a.h & 0xffffffffu) - 1;
    if (a.h == 0 || idx >= pe_rt.n_slots) return NULL;
    pe_port *p = pe_port_at((uint32_t)idx);
    if (p->gen != (uint32_t)(a.h >> 32) || p->state == PE_PORT_FREE) return NULL;
    if (idx_out) *idx_out = (uint32_t)idx;
    return p;
}


void pe_port_ref(uint32_t idx) { pe_port_at(idx)->refs_int++; }

void pe_port_unref(uint32_t idx)
{
    pe_port *p = pe_port_at(idx);
    p->refs_int--;
    pe_port_maybe_free(idx);
}


void pe_port_hold(uint32_t idx) { pe_port_at(idx)->holds++; }

void pe_port_let_go(uint32_t idx)
{
    pe_port *p = pe_port_at(idx);
    assert(p->holds > 0);
    p->holds--;
    pe_port_maybe_free(idx);
}


void pe_port_drop_inputs(pe_port *p)
{
    pe_port_expression_done(p);
    int n = p->n_in;
    p->n_in = 0;
    for (int i = 0; i < n; i++) pe_port_unref(p->in[i]);
}

/* The profiler's hook for stored values that die unread (it sets the
 * flags, so without PE_PROFILE the test below is never true). */
static void (*unread_dies)(const pe_port *p);

void pe_port_unread_dies_to(void (*fn)(const pe_port *p)) { unread_dies = fn; }

/* The free function of a buffer another port stored (pe_port_share_value):
 * its owner is let go, and frees it when nobody else holds it.  Its bytes
 * are accounted for once, the owner's. */
static void shared_buffer_free(void *data, void *ctx)
{
    (void)data;
    pe_port_unref((uint32_t)(uintptr_t)ctx);
}

static void free_port(uint32_t idx)
{
    pe_port *p = pe_port_at(idx);
    if (p->prof_stored && !p->prof_read && unread_dies) unread_dies(p);
    pe_port_drop_inputs(p);
    if (p->retained) pe_retention.bytes -= (int64_t)pe_port_bytes(p);
    p->retained = false;
    if (p->buf) {
        if (p->free_fn) {
            p->free_fn(p->buf, p->free_ctx);
            if (p->free_fn != shared_buffer_free) pe_mem_account(-(long long)pe_port_bytes(p));
        } else
            pe_mem_free(p->buf, pe_port_bytes(p));
    }
    if (p->dev_buf) pe_rt.executor->free_device_copy(p);
    free(p->err_msg);
    free(p->ref);
    p->buf = NULL;
    p->err_msg = NULL;
    p->ref = NULL;
    p->state = PE_PORT_FREE;
    p->next_free = NO_SLOT;
    if (pe_rt.free_tail == NO_SLOT) pe_rt.free_head = idx;
    else pe_port_at(pe_rt.free_tail)->next_free = idx;
    pe_rt.free_tail = idx;
    pe_rt.n_free++;
    pe_counters.live_arrays--;
}

void pe_port_describe(pe_port *p, pe_op op, const uint32_t *in, int n, pe_dtype dtype, pe_dtype ctype, int rank,
                      const int64_t *shape, const int64_t *params, int n_params)
{
    p->op = (uint8_t)op;
    p->dtype = (uint8_t)dtype;
    p->ctype = (uint8_t)ctype;
    p->rank = (uint8_t)rank;
    for (int d = 0; d < rank; d++) p->shape[d] = shape[d];
    p->numel = pe_shape_numel(rank, shape);
    for (int i = 0; i < n_params; i++) p->param[i] = params[i];
    p->n_in = (uint8_t)n;
    for (int i = 0; i < n; i++) p->in[i] = in[i];
}

void pe_port_maybe_free(uint32_t idx)
{
    pe_port *p = pe_port_at(idx);
    if (p->state != PE_PORT_FREE && p->refs_app == 0 && p->refs_int == 0 && p->maps == 0 && p->holds == 0)
        free_port(idx);
}

void pe_ports_forget_since(uint32_t first)
{
    for (uint32_t i = first; i < pe_rt.n_slots; i++) {
        pe_port *p = pe_port_at(i);
        if (p->state == PE_PORT_FREE) continue;
        if (p->buf) pe_mem_free(p->buf, pe_port_bytes(p));
        if (p->retained) pe_retention.bytes -= (int64_t)pe_port_bytes(p);
        free(p->err_msg);
        free(p->ref);
        uint32_t gen = p->gen; /* the slot's next port gets a later generation: no handle of these ever matches */
        memset(p, 0, sizeof *p);
        p->gen = gen;
        p->state = PE_PORT_FREE;
        p->next_free = NO_SLOT;
        pe_counters.live_arrays--;
    }
    pe_rt.n_slots = first;
}

/* At shutdown every port dies, referenced or not. */
void pe_ports_free_all(void)
{
    for (uint32_t i = 0; i < pe_rt.n_slots; i++) {
        pe_port *p = pe_port_at(i);
        if (p->gen >= session_generation) session_generation = p->gen + 1;
        if (p->state == PE_PORT_FREE) continue;
        p->n_in = 0; /* inputs die in this same sweep */
        p->refs_app = p->refs_int = p->maps = p->holds = 0;
        free_port(i);
    }
    for (uint32_t i = 0; i < pe_rt.n_pages; i++) free(pe_rt.pages[i]);
    free(pe_rt.pages);
    pe_rt.pages = NULL;
    pe_rt.n_pages = pe_rt.n_slots = 0;
    pe_rt.free_head = pe_rt.free_tail = NO_SLOT;
    pe_rt.n_free = 0;
}

/* The free function of a lent buffer: it is the application's, PE gives
 * nothing back (the accounting is undone by free_port). */
static void lent_buffer_free(void *data, void *ctx)
{
    (void)data, (void)ctx;
}

void pe_port_lend_buffer(pe_port *p, void *dst, bool keeps_handle)
{
    p->buf = dst;
    p->free_fn = lent_buffer_free;
    p->free_ctx = NULL;
    p->lent_keeps_handle = keeps_handle;
    pe_mem_account((long long)pe_port_bytes(p));
}

bool pe_port_lent_for_reader(const pe_port *p)
{
    return p->buf && p->free_fn == lent_buffer_free && p->lent_keeps_handle;
}

void pe_port_give_back_lent(pe_port *p)
{
    assert(p->free_fn == lent_buffer_free);
    pe_mem_account(-(long long)pe_port_bytes(p));
    p->buf = NULL;
    p->free_fn = NULL;
    p->lent_keeps_handle = false;
    p->lent_fills++;
}

bool pe_port_copy_lent(pe_port *p)
{
    size_t bytes = pe_port_bytes(p);
    void *own = pe_mem_alloc(bytes);
    if (own) memcpy(own, p->buf, bytes);
    pe_port_give_back_lent(p);
    if (!own) {
        p->state = PE_PORT_INVALID; /* the read has its value; a later use reports this */
        p->err_code = PE_E_NOMEM;
        p->err_msg = pe_format_error(p->site, "pe_read", "out of memory keeping a value that was read");
        return false;
    }
    p->buf = own;
    return true;
}

bool pe_port_share_value(pe_port *p, uint32_t owner)
{
    pe_port *o = pe_port_at(owner);
    if (!o->buf || o->host_stale) return false; /* on a GPU */
    size_t bytes = pe_port_bytes(p);
    if (p->buf && p->free_fn == lent_buffer_free) { /* p's own read lent it the caller's buffer: filled now */
        memcpy(p->buf, o->buf, bytes);
        return true;
    }
    if (o->free_fn == lent_buffer_free) { /* the caller's buffer, theirs again after the read: a copy */
        if (!(p->buf = pe_mem_alloc(bytes))) return false;
        memcpy(p->buf, o->buf, bytes);
        return true;
    }
    pe_port_ref(owner);
    p->buf = o->buf;
    p->free_fn = shared_buffer_free;
    p->free_ctx = (void *)(uintptr_t)owner;
    return true;
}

bool pe_port_result_buffer(pe_port *p)
{
    if (p->buf && p->free_fn == lent_buffer_free) return true;
    p->buf = pe_mem_alloc(pe_port_bytes(p));
    return p->buf != NULL;
}

void pe_port_result_drop(pe_port *p)
{
    if (p->free_fn == lent_buffer_free) return; /* the application's buffer */
    if (p->buf) pe_mem_free(p->buf, pe_port_bytes(p));
    p->buf = NULL;
}

bool pe_port_host(pe_port *p)
{
    assert(pe_api_held());
    assert(!p->host_stale || p->state == PE_PORT_READY); /* only a computed value has a device copy to fetch */
    return !p->host_stale || pe_rt.executor->host_copy(p);
}
