/* dispatch.c — runs a library call (a PE_PROG_INTRINSIC program) on the
 * host through its op's host slot, expanded from irformat/ops_intrinsic.def
 * (functions that call OpenBLAS, blas.c; LAPACKE, lapack.c; FFTW, fft.c;
 * or loop, sparse.c): operands brought to host
 * buffers, result buffers for the members someone sees (a member a later
 * member of the same call reads — the product inside a fused epilogue — has
 * none), the call made without the runtime lock as a kernel is (holding it
 * in a GPU's batch: pe_intrinsic_run_locked), its failure
 * (a singular matrix) made the members' error at their caller's line, its
 * time charged to the intrinsic's line.  A call whose operands do not fit
 * its members (a trace file's sequence that lies) is left to the
 * interpreter, member by member. */
#include <stdio.h>
#include <string.h>

#include "intrinsics.h"
#include "../base/error.h"
#include "../interp/interp.h"
#include "../../profiler/collect.h"

typedef struct {
    bool (*fits)(pe_intrinsic_args *a);
    bool (*run)(pe_intrinsic_args *a);
} host_slot;

/* The host's slot of each op, indexed by a call's first member's op: every
 * intrinsic has one (irformat/ops.c checks the rows), other ops none. */
static const host_slot host_slots[PE_OP__COUNT] = {
#define PE_OP_INTRINSIC(name, fits, host, reference) [PE_OP_##name] = {fits, host},
#include "../../irformat/ops_intrinsic.def"
};

bool pe_intrinsic_fits(pe_intrinsic_args *a)
{
    const host_slot *s = &host_slots[a->members[0]->op];
    return s->fits && s->fits(a);
}

bool pe_intrinsic_read_by_later_member(const pe_program *p, int m)
{
    for (int later = m + 1; later < p->n_members; later++) {
        const pe_port *q = pe_port_at(p->members[later]);
        for (int k = 0; k < q->n_in; k++)
            if (q->in[k] == p->members[m]) return true;
    }
    return false;
}

/* Members let go of their inputs, the last first (a later member holds an earlier one). */
void pe_intrinsic_finish(const pe_program *p)
{
    for (int m = p->n_members; m-- > 0;) pe_port_drop_inputs(pe_port_at(p->members[m]));
}

void pe_intrinsic_fail(const pe_program *p, pe_status code, const char *why)
{
    char api[48];
    snprintf(api, sizeof api, "pe_%s", pe_op_table[pe_port_at(p->members[0])->op].name);
    for (int m = 0; m < p->n_members; m++) {
        pe_port *q = pe_port_at(p->members[m]);
        pe_port_result_drop(q);
        q->state = PE_PORT_INVALID;
        q->err_code = code;
        q->err_msg = pe_format_error(q->site, api, "%s", why);
    }
}

static size_t on_interpreter(const pe_program *p)
{
    size_t computed = 0;
    for (int m = 0; m < p->n_members; m++) computed += pe_interp_execute(pe_port_at(p->members[m]));
    return computed;
}

void pe_intrinsic_account(const pe_program *p, const pe_intrinsic_args *a, uint64_t t0)
{
    pe_counters.library_calls++;
    pe_counters.generated_library_calls += (a->generated & PE_GENERATED_RAN) != 0;
    pe_counters.kernels_compiled += (a->generated & PE_GENERATED_COMPILED) != 0;
    pe_counters.disk_cache_hits += (a->generated & PE_GENERATED_LOADED) != 0;
    if (!pe_prof_on) return;
    for (int k = 0; k < p->n_bind; k++) a->in[k]->prof_read = true;
    for (int m = 0; m < p->n_members; m++) a->members[m]->prof_stored |= a->out[m] != NULL;
    pe_prof_library_call(a->members[0], t0, pe_prof_now());
}

/* unlock: the call made without the runtime lock (the CPU executor's) */
static size_t run(const pe_program *p, bool unlock)
{
    pe_port *members[4];
    pe_intrinsic_args a = {.members = members, .n_members = p->n_members, .n_in = p->n_bind, .flags = p->flags};
    if (p->n_members < 1 || p->n_members > 4 || p->n_bind > 5) return 0; /* trace_check refuses these */
    for (int m = 0; m < p->n_members; m++) members[m] = pe_port_at(p->members[m]);
    for (int k = 0; k < p->n_bind; k++) {
        pe_port *q = a.in[k] = pe_port_at(p->bind[k]);
        if (q->state == PE_PORT_READY) pe_port_host(q); /* a GPU's value: its host copy */
        if (q->state == PE_PORT_INVALID) {
            for (int m = 0; m < p->n_members; m++) pe_port_inherit_invalid(members[m], q);
            pe_intrinsic_finish(p);
            return 0;
        }
        if (!q->buf && !pe_port_is_uniform(q)) return on_interpreter(p); /* no value here */
        if (!q->buf && !pe_interp_materialise(q)) { /* a uniform constant as an array operand */
            pe_intrinsic_fail(p, PE_E_NOMEM, "out of memory for an operand");
            pe_intrinsic_finish(p);
            return 0;
        }
    }
    if (!pe_intrinsic_fits(&a)) return on_interpreter(p);
    for (int m = 0; m < p->n_members; m++) {
        if (pe_intrinsic_read_by_later_member(p, m)) continue;
        if (!pe_port_result_buffer(members[m])) {
            pe_intrinsic_fail(p, PE_E_NOMEM, "out of memory for the result");
            pe_intrinsic_finish(p);
            return 0;
        }
        a.out[m] = members[m]->buf;
    }
    /* the call touches only buffers this batch keeps alive: the application records meanwhile */
    uint64_t t0 = pe_prof_on ? pe_prof_now() : 0;
    int depth = unlock ? pe_api_suspend() : 0;
    bool ok = host_slots[members[0]->op].run(&a);
    if (unlock) pe_api_resume(depth);
    pe_intrinsic_account(p, &a, t0);
    size_t computed = 0;
    if (!ok) {
        pe_intrinsic_fail(p, a.code, a.why);
    } else if (p->n_members == 1 && a.out[0] && pe_port_lent_for_reader(members[0]) && !members[0]->released_in_batch) {
        /* computed into the buffer of a reader who keeps the handle: the buffer goes back to the reader
         * and the handle stays an expression (exec/base/deferred.c), as a kernel's member does — no copy */
        pe_port_give_back_lent(members[0]);
        pe_port_defer(p->members[0]);
        return 1;
    } else {
        for (int m = 0; m < p->n_members; m++) {
            members[m]->state = PE_PORT_READY;
            if (a.out[m] && pe_port_lent_for_reader(members[m]) && !pe_port_copy_lent(members[m])) continue;
            computed++;
        }
    }
    pe_intrinsic_finish(p);
    return computed;
}

size_t pe_intrinsic_run(const pe_program *p) { return run(p, true); }
size_t pe_intrinsic_run_locked(const pe_program *p) { return run(p, false); }
