/* aot_speculate.c — speculative batches from the static IR.  For each closed
 * region (a loop body, then a closed function body) the requests it makes
 * are replayed as the recorder would queue them, over stand-ins:
 *   operands from outside the region (variables it does not define, array
 *     expressions) are READY ports of a guessed dtype and a 1-D shape; the
 *     dtype follows the creation call that defines the variable (pe_f32_1d,
 *     pe_f64_1d, ...) through the ops on the way, f32 when nothing says;
 *   C scalars are weak 0-d temporaries (as pe.h's _Generic makes them), of
 *     the type their text suggests (2.0f: f32, 2.0: f64, 2: i32), else of
 *     the array operands' type; source literals are marked literal where the
 *     recorder would mark them (every request of the line agrees);
 *   requests are PENDING ports with COMPUTE entries, folded as fold.c would;
 *   a nested request's result and a variable's last use get RELEASE entries
 *     where irload.c's automatic releases would put them (the same
 *     line-wide agreement, of the consumer's line or, for a value read
 *     once, of the producer's), and pe_release does what it says;
 *   a read, pe_flush, pe_sync or the end of a pe_block ends the batch;
 *   nested requests in several operands are made in the order the compiler
 *   that built PE evaluates arguments (gcc: right to left).
 * The program generator then makes the same fusion and scalar-replacement
 * decisions as for the real batch, so the kernel IR is the one the real run
 * will ask for, if the guess was right; a wrong guess only makes kernels
 * nobody uses.  A region with a request the guess cannot follow (views,
 * reductions along an axis, generators, casts) is skipped.  Stand-ins live
 * in the port table for the duration of the call, under the runtime lock,
 * and their slots are given back as if never handed out. */
#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "aot.h"
#include "../proggen/proggen.h"
#include "../record/irload.h"
#include "../record/record.h"
#include "../../exec/base/grow.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/shape.h"
#include "../../exec/base/site.h"
#include "../../exec/interp/refmath.h"
#define NO_SLOT UINT32_MAX
/* The batch number of speculative ports: real batches count up from 1 and
 * never get here. */
#define SPEC_EPOCH (UINT32_MAX - 1)
/* Stand-ins' extent: not part of an element-wise kernel's IR (unshaped
 * kernels iterate over whatever numel they are launched with). */
#define STAND_IN_LENGTH 4096
/* A scalar whose value the IR does not know: one that no strength reduction
 * (x*1, x+0, pow(x, 2), ...) would fold. */
#define UNKNOWN_SCALAR 3.0
#define MAX_DTYPE_DEPTH 16

typedef struct {
    const char *name;
    uint32_t port;
} var_binding;

typedef struct {
    const pe_ir_function *fn;
    uint32_t *ports; /* every port made, for the teardown */
    size_t n_ports, ports_cap;
    pe_entry *entries; /* the batch being built */
    size_t n_entries, entries_cap;
    var_binding *vars; /* newest last */
    size_t n_vars, vars_cap;
    uint32_t *result_of; /* per request of fn: its port, or NO_SLOT */
    uint32_t *order;     /* the region's requests in the order the program makes them */
    int64_t first_request; /* the region's first request (variables defined before it are outside) */
    bool failed; /* out of memory, or a request the guess cannot follow */
    pe_aot_kernel_sink sink;
    const pe_fusion_rules *rules; /* the executor's, as its batches use them */
    void *ctx;
} spec;

static uint32_t keep_port(spec *sp, uint32_t idx)
{
    if (idx == NO_SLOT || !PE_GROW(sp->ports, sp->ports_cap, sp->n_ports + 1)) {
        if (idx != NO_SLOT) { /* not tracked: free it at once */
            pe_port_at(idx)->refs_app = 0;
            pe_port_maybe_free(idx);
        }
        sp->failed = true;
        return NO_SLOT;
    }
    sp->ports[sp->n_ports++] = idx;
    return idx;
}

static void push_entry(spec *sp, pe_entry_kind kind, uint32_t port)
{
    if (!PE_GROW(sp->entries, sp->entries_cap, sp->n_entries + 1)) {
        sp->failed = true;
        return;
    }
    sp->entries[sp->n_entries++] = (pe_entry){(uint8_t)kind, port};
    if (kind == PE_ENTRY_COMPUTE) {
        pe_port_at(port)->batch = SPEC_EPOCH;
        pe_port_at(port)->released_in_batch = false;
    } else {
        pe_port_at(port)->released_in_batch = true;
    }
}

static bool pending_in_batch(const pe_port *p) { return p->state == PE_PORT_PENDING && p->batch == SPEC_EPOCH; }

/* An array made outside the region (or the batch): READY, held by the
 * application, not a constant. */
static uint32_t stand_in(spec *sp, pe_dtype t)
{
    uint32_t idx = keep_port(sp, pe_port_new());
    if (idx == NO_SLOT) return NO_SLOT;
    pe_port *p = pe_port_at(idx);
    p->op = PE_OP_data;
    p->dtype = p->ctype = (uint8_t)t;
    p->rank = 1;
    p->shape[0] = p->numel = STAND_IN_LENGTH;
    p->state = PE_PORT_READY;
    p->refs_app = 1;
    return idx;
}

static uint32_t constant(spec *sp, pe_dtype t, int rank, const int64_t *shape, double v, bool weak)
{
    uint32_t idx = keep_port(sp, pe_make_constant(t, rank, shape, v, weak, NULL));
    if (idx != NO_SLOT) pe_port_at(idx)->refs_app = 1;
    return idx;
}

/* A C scalar operand: what PE_ARG makes of it. */
static uint32_t c_scalar(spec *sp, pe_dtype t, double v, bool literal)
{
    uint32_t idx = constant(sp, t, 0, NULL, v, true);
    if (idx == NO_SLOT) return NO_SLOT;
    pe_port_at(idx)->temp = true;
    pe_port_at(idx)->literal = literal;
    return idx;
}

static uint32_t pending_op(spec *sp, pe_op op, const uint32_t *in, int n, pe_dtype dtype, pe_dtype ctype, int rank,
                           const int64_t *shape, int64_t param)
{
    uint32_t idx = keep_port(sp, pe_port_new());
    if (idx == NO_SLOT) return NO_SLOT;
    pe_port *p = pe_port_at(idx);
    pe_port_describe(p, op, in, n, dtype, ctype, rank, shape, &param, 1);
    p->refs_app = 1;
    push_entry(sp, PE_ENTRY_COMPUTE, idx);
    return idx;
}

static void bind(spec *sp, const char *name, uint32_t port)
{
    if (!name || !*name || port == NO_SLOT) return;
    if (!PE_GROW(sp->vars, sp->vars_cap, sp->n_vars + 1)) {
        sp->failed = true;
        return;
    }
    sp->vars[sp->n_vars++] = (var_binding){name, port};
}

static uint32_t bound(const spec *sp, const char *name)
{
    for (size_t i = sp->n_vars; i-- > 0;)
        if (strcmp(sp->vars[i].name, name) == 0) return sp->vars[i].port;
    return NO_SLOT;
}

/* ------------------------------------------------------- dtype guesses */

/* The type C gives an expression's numbers: a float constant with an f
 * suffix or a (float) cast: f32; any other float constant or (double): f64;
 * integers only: i32; no number at all: `otherwise`. */
static pe_dtype type_of_text(const char *text, pe_dtype otherwise)
{
    if (!text) return otherwise;
    if (strstr(text, "(double)")) return PE_F64;
    if (strstr(text, "(float)")) return PE_F32;
    bool f32 = false, f64 = false, integer = false;
    for (const char *c = text; *c;) {
        bool starts_number = isdigit((unsigned char)*c) || (*c == '.' && isdigit((unsigned char)c[1]));
        if (!starts_number || (c > text && (isalnum((unsigned char)c[-1]) || c[-1] == '_'))) {
            c++;
            continue;
        }
        bool hex = c[0] == '0' && (c[1] == 'x' || c[1] == 'X'), is_float = false;
        const char *e = c + (hex ? 2 : 0);
        for (; isalnum((unsigned char)*e) || *e == '.' || ((*e == '+' || *e == '-') && strchr(hex ? "pP" : "eE", e[-1])); e++)
            if (*e == '.' || (!hex && (*e == 'e' || *e == 'E')) || (hex && (*e == 'p' || *e == 'P'))) is_float = true;
        char last = e[-1];
        if (!is_float) integer = true;
        else if (last == 'f' || last == 'F') f32 = true;
        else f64 = true;
        c = e;
    }
    if (f64) return PE_F64;
    if (f32) return PE_F32;
    return integer ? PE_I32 : otherwise;
}

static pe_dtype request_dtype(const pe_ir_function *fn, int64_t q, int depth);

/* The dtype of variable `name` as defined by the newest request before
 * `before` that assigns it (any request, if none does before). */
static pe_dtype variable_dtype(const pe_ir_function *fn, const char *name, int64_t before, int depth)
{
    int64_t def = -1;
    for (int64_t q = 0; q < (int64_t)fn->n_requests; q++)
        if (strcmp(fn->requests[q].result, name) == 0 && (q < before || def < 0 || def >= before)) def = q;
    return def >= 0 && depth < MAX_DTYPE_DEPTH ? request_dtype(fn, def, depth + 1) : PE_F32;
}

static pe_dtype request_dtype(const pe_ir_function *fn, int64_t q, int depth)
{
    const pe_ir_request *rq = &fn->requests[q];
    if (strncmp(rq->api, "pe_f64_", 7) == 0) return PE_F64;
    if (!*rq->op || depth >= MAX_DTYPE_DEPTH) return PE_F32; /* pe_f32_*, pe_from_host (dtype unknown), ... */
    pe_dtype strong = PE_BOOL, weak = PE_BOOL;
    bool any_strong = false;
    for (uint32_t a = 0; a < rq->n_args; a++) {
        const pe_ir_arg *arg = &rq->args[a];
        if (arg->kind == PE_ARG_VARIABLE || arg->kind == PE_ARG_REQUEST) {
            pe_dtype t = arg->kind == PE_ARG_VARIABLE ? variable_dtype(fn, arg->text, q, depth + 1)
                                                      : request_dtype(fn, arg->request, depth + 1);
            strong = pe_promote(strong, t);
            any_strong = true;
        } else {
            weak = pe_promote(weak, type_of_text(arg->text, PE_F32));
        }
    }
    pe_dtype promoted = any_strong ? (pe_dtype_is_float(weak) && !pe_dtype_is_float(strong) ? PE_F32 : strong) : weak;
    for (int op = 0; op < PE_OP__COUNT; op++)
        if (strcmp(pe_op_table[op].name, rq->op) == 0) return pe_result_dtype(pe_op_table[op].result, promoted);
    return PE_F32;
}

/* Whether an OTHER argument's text reads as an array expression (an
 * element of an array of handles, a member, a call) rather than a C scalar. */
static bool looks_like_array(const char *text)
{
    if (!text) return false;
    if (strchr(text, '[') || strstr(text, "->")) return true;
    for (const char *c = text; *c; c++) {
        if (*c == '.' && c > text && (isalpha((unsigned char)c[-1]) || c[-1] == '_' || c[-1] == ')') &&
            (isalpha((unsigned char)c[1]) || c[1] == '_'))
            return true;
        if (*c == '(' && c > text && (isalnum((unsigned char)c[-1]) || c[-1] == '_')) return true; /* a call */
    }
    return false;
}

/* --------------------------------------------- the recorder's site facts */

/* The operand masks irload.c folds over every request of the line to the
 * same entry point with the same arity: released operands, and literals
 * of one value. */
typedef struct {
    uint32_t release, literal;
} site_masks;

static site_masks masks_of(const pe_ir_function *fn, const pe_ir_request *rq)
{
    site_masks m = {0, 0};
    bool any = false;
    for (uint32_t q = 0; q < fn->n_requests; q++) {
        const pe_ir_request *o = &fn->requests[q];
        if (o->line != rq->line || strcmp(o->api, rq->api) != 0 || o->n_args != rq->n_args) continue;
        uint32_t release = 0, literal = 0;
        for (uint32_t a = 0; a < o->n_args && a < 32; a++) {
            const pe_ir_arg *arg = &o->args[a];
            if (arg->kind == PE_ARG_REQUEST || arg->kill) release |= 1u << a;
            if (arg->kind == PE_ARG_LITERAL && a < PE_SITE_MAX_LITERALS && rq->args[a].kind == PE_ARG_LITERAL &&
                memcmp(&arg->value, &rq->args[a].value, sizeof arg->value) == 0)
                literal |= 1u << a;
        }
        m.release = any ? m.release & release : release;
        m.literal = any ? m.literal & literal : literal;
        any = true;
    }
    return m;
}

/* ---------------------------------------------------- the batch's course */

/* The program generator over the batch; its kernels go to the sink.  The
 * batch's ports then count as computed: operands of later batches. */
static void end_batch(spec *sp)
{
    if (sp->n_entries == 0 || sp->failed) {
        sp->n_entries = 0;
        return;
    }
    pe_program_seq seq;
    if (pe_proggen(sp->entries, sp->n_entries, SPEC_EPOCH, sp->rules, &seq)) {
        for (size_t i = 0; i < seq.n; i++)
            /* a shaped kernel (broadcast, generator) has the guessed extent in its IR: it cannot match */
            if (seq.progs[i].kind == PE_PROG_KERNEL && seq.progs[i].kir->rank == 0) sp->sink(seq.progs[i].kir, sp->ctx);
        pe_program_seq_free(&seq);
    }
    for (size_t i = 0; i < sp->n_entries; i++) {
        pe_port *p = pe_port_at(sp->entries[i].port);
        if (pending_in_batch(p)) p->state = PE_PORT_READY;
    }
    sp->n_entries = 0;
}

/* What pe_release / irload's release does to a port the speculation made. */
static void release(spec *sp, uint32_t idx)
{
    if (idx == NO_SLOT) return;
    pe_port *p = pe_port_at(idx);
    if (p->refs_app <= 0) return;
    if (--p->refs_app == 0 && pending_in_batch(p)) push_entry(sp, PE_ENTRY_RELEASE, idx);
}

/* irload.c's automatic release after a request: operands in the mask, or
 * read once, whose handle agrees (one application reference, not a
 * C-scalar temporary). */
static void release_operands(spec *sp, const pe_ir_request *rq, const uint32_t *in, int n)
{
    site_masks m = masks_of(sp->fn, rq);
    for (int a = 0; a < n; a++) {
        if (in[a] == NO_SLOT) continue;
        pe_port *p = pe_port_at(in[a]);
        bool once = p->read_once;
        if (!(m.release & (1u << a)) && !once) continue;
        if (p->refs_app == 1 && !p->temp) release(sp, in[a]);
        else p->read_once = false;
    }
}

/* irload.c's pe_ir_mark_read_once: every request of the line making the op
 * with that arity makes a value read once, and the handle is its only one. */
static void mark_read_once(spec *sp, const pe_ir_request *rq, uint32_t result)
{
    if (result == NO_SLOT) return;
    bool once = true;
    for (uint32_t q = 0; q < sp->fn->n_requests && once; q++) {
        const pe_ir_request *o = &sp->fn->requests[q];
        if (o->line == rq->line && strcmp(o->op, rq->op) == 0 && o->n_args == rq->n_args)
            once = pe_ir_read_once(sp->fn, q);
    }
    pe_port *p = pe_port_at(result);
    if (once && p->refs_app == 1 && !p->temp) p->read_once = true;
}

static uint32_t variable_port(spec *sp, const char *name)
{
    uint32_t idx = bound(sp, name);
    if (idx != NO_SLOT) return idx;
    idx = stand_in(sp, variable_dtype(sp->fn, name, sp->first_request, 0));
    bind(sp, name, idx);
    return idx;
}

static pe_op op_named(const char *name)
{
    for (int op = 0; op < PE_OP__COUNT; op++)
        if (strcmp(pe_op_table[op].name, name) == 0) return (pe_op)op;
    return PE_OP__COUNT;
}

/* An operation request: its port (or the port it folds to), as
 * pe_record_map / pe_record_reduce would make it. */
static uint32_t operation(spec *sp, const pe_ir_request *rq, uint32_t *in)
{
    pe_op op = op_named(rq->op);
    if (op == PE_OP__COUNT) return sp->failed = true, NO_SLOT;
    const pe_op_info *info = &pe_op_table[op];
    char expected[64];
    snprintf(expected, sizeof expected, "pe_%s_at", info->name);
    /* element-wise ops with a derived type, and full reductions: what the CPU generator fuses */
    bool map = info->kind == PE_KIND_MAP && info->result != PE_RESULT_EXPLICIT;
    bool full_reduction = info->kind == PE_KIND_REDUCE;
    int n = (int)rq->n_args;
    if ((!map && !full_reduction) || n != info->arity || n > PE_PORT_MAX_INPUTS ||
        (strcmp(rq->api, expected) != 0 && !(map && (op == PE_OP_min || op == PE_OP_max))))
        return sp->failed = true, NO_SLOT;

    /* array operands first: a C scalar without a typed number takes their type */
    pe_dtype arrays = PE_BOOL;
    bool any_array = false;
    for (int a = 0; a < n; a++) {
        const pe_ir_arg *arg = &rq->args[a];
        in[a] = NO_SLOT;
        if (arg->kind == PE_ARG_VARIABLE) in[a] = variable_port(sp, arg->text);
        else if (arg->kind == PE_ARG_REQUEST && arg->request >= 0 && arg->request < (int64_t)sp->fn->n_requests)
            in[a] = sp->result_of[arg->request];
        else if (arg->kind == PE_ARG_OTHER && looks_like_array(arg->text))
            in[a] = stand_in(sp, PE_F32);
        else
            continue;
        if (in[a] == NO_SLOT) return sp->failed = true, NO_SLOT;
        arrays = pe_promote(arrays, (pe_dtype)pe_port_at(in[a])->dtype);
        any_array = true;
    }
    site_masks m = masks_of(sp->fn, rq);
    pe_dtype scalar_type = any_array && pe_dtype_is_float(arrays) ? arrays : PE_F32;
    for (int a = 0; a < n; a++) {
        const pe_ir_arg *arg = &rq->args[a];
        if (in[a] != NO_SLOT) continue;
        if (arg->kind == PE_ARG_LITERAL) {
            pe_dtype t = type_of_text(arg->text, scalar_type);
            in[a] = c_scalar(sp, t, arg->value, map && (m.literal & (1u << a)));
        } else if (arg->kind == PE_ARG_OTHER) {
            in[a] = c_scalar(sp, type_of_text(arg->text, scalar_type), UNKNOWN_SCALAR, false);
        }
        if (in[a] == NO_SLOT) return sp->failed = true, NO_SLOT;
    }

    pe_port *ports[PE_PORT_MAX_INPUTS];
    for (int a = 0; a < n; a++) ports[a] = pe_port_at(in[a]);
    int rank;
    int64_t shape[PE_MAX_RANK];
    if (!pe_broadcast_shapes(ports, n, &rank, shape)) return sp->failed = true, NO_SLOT;
    pe_dtype dtype, ctype;
    pe_op_types(op, ports, n, &dtype, &ctype);
    if (full_reduction) return pending_op(sp, op, in, n, dtype, ctype, 0, NULL, -1);
    pe_fold_plan plan = pe_fold_decide(op, ports, n, dtype, ctype, rank, shape);
    switch (plan.kind) {
    case PE_FOLD_CONSTANT: return constant(sp, dtype, rank, shape, plan.value, plan.weak);
    case PE_FOLD_OPERAND: pe_port_at(in[plan.operand])->refs_app++; return in[plan.operand];
    case PE_FOLD_REWRITE: {
        uint32_t x[2] = {in[0], in[0]};
        return pending_op(sp, plan.op, x, pe_op_table[plan.op].arity, dtype, ctype, rank, shape, 0);
    }
    case PE_FOLD_NONE: break;
    }
    return pending_op(sp, op, in, n, dtype, ctype, rank, shape, 0);
}

/* A request that is not an operation: creations bind stand-ins, reads and
 * flushes end the batch, lifetime calls change references. */
static void other_request(spec *sp, const pe_ir_request *rq)
{
    const char *api = rq->api;
    uint32_t arg0 = NO_SLOT;
    if (rq->n_args > 0 && rq->args[0].kind == PE_ARG_VARIABLE) arg0 = bound(sp, rq->args[0].text);
    else if (rq->n_args > 0 && rq->args[0].kind == PE_ARG_REQUEST && rq->args[0].request >= 0 &&
             rq->args[0].request < (int64_t)sp->fn->n_requests)
        arg0 = sp->result_of[rq->args[0].request];
    if (strncmp(api, "pe_f32_", 7) == 0 || strncmp(api, "pe_f64_", 7) == 0 || strcmp(api, "pe_from_host_at") == 0 ||
        strcmp(api, "pe_adopt_at") == 0) {
        bind(sp, rq->result, stand_in(sp, api[4] == '6' ? PE_F64 : PE_F32));
    } else if (strcmp(api, "pe_scalar_at") == 0 || strcmp(api, "pe_fill_at") == 0) {
        int64_t extent = STAND_IN_LENGTH;
        bind(sp, rq->result, constant(sp, PE_F32, api[3] == 'f', &extent, UNKNOWN_SCALAR, false));
    } else if (strncmp(api, "pe_read", 7) == 0 || strcmp(api, "pe_map_at") == 0 || strcmp(api, "pe_hint_read_at") == 0) {
        if (arg0 != NO_SLOT && pending_in_batch(pe_port_at(arg0))) end_batch(sp);
        release_operands(sp, rq, &arg0, 1);
    } else if (strcmp(api, "pe_flush_at") == 0 || strcmp(api, "pe_sync_at") == 0 || strcmp(api, "pe_block_end_at") == 0) {
        end_batch(sp);
    } else if (strcmp(api, "pe_release_at") == 0) {
        release(sp, arg0);
    } else if (strcmp(api, "pe_retain_at") == 0 && arg0 != NO_SLOT) {
        pe_port_at(arg0)->refs_app++;
    }
}

/* The region a request belongs to for speculation: its innermost loop
 * (0: none, the function body). */
static int64_t owning_loop(const pe_ir_function *fn, int64_t r)
{
    for (; r > 0; r = fn->regions[r].parent)
        if (fn->regions[r].kind == PE_REGION_LOOP) return r;
    return 0;
}

/* Gives every stand-in back.  At pe_init the slots were fresh ones: they
 * are handed back as if never handed out, so that the application's
 * handles (and release diagnostics) are the ones a run without the
 * speculation gets. */
static void teardown(spec *sp, uint32_t first_fresh)
{
    bool all_fresh = true;
    for (size_t i = 0; i < sp->n_ports; i++) all_fresh = all_fresh && sp->ports[i] >= first_fresh;
    for (size_t i = 0; i < sp->n_ports; i++) {
        pe_port *p = pe_port_at(sp->ports[i]);
        p->n_in = 0; /* inputs are among these ports */
        p->refs_app = p->refs_int = p->maps = 0;
    }
    if (all_fresh) {
        pe_ports_forget_since(first_fresh);
    } else {
        for (size_t i = 0; i < sp->n_ports; i++) pe_port_maybe_free(sp->ports[i]);
    }
    sp->n_ports = 0;
}

static bool is_nested(const pe_ir_request *rq, uint32_t a, uint32_t n_requests)
{
    return rq->args[a].kind == PE_ARG_REQUEST && rq->args[a].request >= 0 && rq->args[a].request < (int64_t)n_requests;
}

/* Request q after its nested requests, those of the last operand first. */
static void right_to_left(const pe_ir_function *fn, uint32_t q, uint32_t *order, size_t *n)
{
    const pe_ir_request *rq = &fn->requests[q];
    for (uint32_t a = rq->n_args; a-- > 0;)
        if (is_nested(rq, a, fn->n_requests)) right_to_left(fn, (uint32_t)rq->args[a].request, order, n);
    order[(*n)++] = q;
}

/* Which way this library's compiler evaluates a call's arguments: the
 * application is most likely built by the same one.  (noinline and a
 * volatile counter: the calls happen, in the compiler's own order.) */
static volatile int probe_count;
__attribute__((noinline)) static int probe_mark(void) { return ++probe_count; }
__attribute__((noinline)) static bool later_first(int first_arg, int second_arg) { return first_arg > second_arg; }
static bool arguments_right_to_left(void)
{
    probe_count = 0;
    return later_first(probe_mark(), probe_mark());
}

/* The order in which the compiled program makes the region's requests.  C
 * leaves the order of a call's arguments open: the IR lists them left to
 * right (clang's order); gcc evaluates them right to left, so nested
 * requests in two operands reach the queue the other way round, and the
 * kernel IR follows the queue.  Compiling both orders would double the
 * compile (a Black-Scholes kernel alone takes ~250 ms): the order of the
 * compiler that built PE is taken. */
static size_t region_order(const pe_ir_function *fn, int64_t region, bool reversed, uint32_t *order)
{
    size_t n = 0;
    if (!reversed) {
        for (uint32_t q = 0; q < fn->n_requests; q++)
            if (owning_loop(fn, fn->requests[q].region) == region) order[n++] = q;
        return n;
    }
    /* operands of a later request are not outermost */
    bool *inner = calloc(fn->n_requests, sizeof *inner);
    if (!inner) return 0;
    for (uint32_t q = 0; q < fn->n_requests; q++)
        for (uint32_t a = 0; a < fn->requests[q].n_args; a++)
            if (is_nested(&fn->requests[q], a, fn->n_requests)) inner[fn->requests[q].args[a].request] = true;
    for (uint32_t q = 0; q < fn->n_requests; q++)
        if (!inner[q] && owning_loop(fn, fn->requests[q].region) == region) right_to_left(fn, q, order, &n);
    free(inner);
    return n;
}

static void speculate_region(spec *sp, int64_t region, bool reversed)
{
    const pe_ir_function *fn = sp->fn;
    size_t n_order = region_order(fn, region, reversed, sp->order);
    if (n_order == 0) return;
    sp->first_request = sp->order[0];
    for (size_t i = 0; i < n_order; i++)
        if (sp->order[i] < sp->first_request) sp->first_request = sp->order[i];
    uint32_t first_fresh = pe_rt.n_slots;
    sp->failed = false;
    sp->n_vars = sp->n_entries = 0;
    for (uint32_t q = 0; q < fn->n_requests; q++) sp->result_of[q] = NO_SLOT;
    for (size_t i = 0; i < n_order && !sp->failed; i++) {
        uint32_t q = sp->order[i];
        const pe_ir_request *rq = &fn->requests[q];
        if (!*rq->op) {
            other_request(sp, rq);
            continue;
        }
        uint32_t in[PE_PORT_MAX_INPUTS];
        uint32_t result = operation(sp, rq, in);
        if (sp->failed) break;
        sp->result_of[q] = result;
        release_operands(sp, rq, in, (int)rq->n_args);
        mark_read_once(sp, rq, result);
        bind(sp, rq->result, result);
    }
    end_batch(sp);
    teardown(sp, first_fresh);
}

void pe_aot_speculate_unit(const pe_ir_unit *u, const pe_fusion_rules *rules, pe_aot_kernel_sink sink, void *ctx)
{
    assert(pe_api_held());
    for (uint32_t f = 0; f < u->n_functions; f++) {
        const pe_ir_function *fn = &u->functions[f];
        if (fn->n_requests == 0) continue;
        spec sp = {.fn = fn, .sink = sink, .rules = rules, .ctx = ctx};
        sp.result_of = malloc(sizeof *sp.result_of * fn->n_requests);
        sp.order = malloc(sizeof *sp.order * fn->n_requests);
        bool reversed = arguments_right_to_left();
        if (sp.result_of && sp.order) {
            /* loop bodies first (their kernels run most often), then the body */
            for (uint32_t r = 1; r < fn->n_regions; r++)
                if (fn->regions[r].kind == PE_REGION_LOOP && fn->regions[r].closed) speculate_region(&sp, r, reversed);
            if (fn->n_regions > 0 && fn->regions[0].closed) speculate_region(&sp, 0, reversed);
        }
        free(sp.result_of), free(sp.order), free(sp.ports), free(sp.entries), free(sp.vars);
    }
}
