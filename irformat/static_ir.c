/* static_ir.c — the static IR's codec, validator and listings.  Records are
 * fixed-order msgpack arrays (docs/irformat.md); the decoder checks each
 * field's type, every kind against its enum, every index against what
 * exists (a region's parent comes before it, a nested request before the
 * request using it), so that a consumer can follow indices blindly. */
#define _GNU_SOURCE
#include "static_ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "msgblob.h"

#define REQUEST_FIELDS 8
#define REGION_FIELDS 10
#define ARG_FIELDS 5
#define FUNCTION_FIELDS 4

static const char *const region_names[] = {"function", "loop", "block", "macro"};
static const char *const loop_names[] = {"", "for", "while", "do"};
static const char *const arg_names[] = {"variable", "request", "literal", "other"};

const char *pe_ir_region_kind_name(uint32_t k) { return k < PE_REGION__COUNT ? region_names[k] : "?"; }
const char *pe_ir_loop_kind_name(uint32_t k) { return k < PE_LOOP__COUNT ? loop_names[k] : "?"; }
const char *pe_ir_arg_kind_name(uint32_t k) { return k < PE_ARG__COUNT ? arg_names[k] : "?"; }

/* ----------------------------------------------------------------- encode */

uint8_t *pe_ir_encode(const pe_ir_unit *u, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    pe_mp_pack_key_str(&pk, "file", u->file);
    pe_mp_pack_key_str(&pk, "producer", u->producer);
    pe_mp_pack_str(&pk, "functions");
    msgpack_pack_array(&pk, u->n_functions);
    for (uint32_t f = 0; f < u->n_functions; f++) {
        const pe_ir_function *fn = &u->functions[f];
        msgpack_pack_array(&pk, FUNCTION_FIELDS);
        pe_mp_pack_str(&pk, fn->name);
        msgpack_pack_int64(&pk, fn->line);
        msgpack_pack_array(&pk, fn->n_regions);
        for (uint32_t r = 0; r < fn->n_regions; r++) {
            const pe_ir_region *g = &fn->regions[r];
            msgpack_pack_array(&pk, REGION_FIELDS);
            msgpack_pack_uint32(&pk, g->kind);
            msgpack_pack_uint32(&pk, g->loop);
            msgpack_pack_int64(&pk, g->parent);
            msgpack_pack_int64(&pk, g->begin_line);
            msgpack_pack_int64(&pk, g->begin_column);
            msgpack_pack_int64(&pk, g->end_line);
            msgpack_pack_int64(&pk, g->end_column);
            if (g->closed) msgpack_pack_true(&pk);
            else msgpack_pack_false(&pk);
            msgpack_pack_array(&pk, g->n_carried);
            for (uint32_t c = 0; c < g->n_carried; c++) pe_mp_pack_str(&pk, g->carried[c]);
            msgpack_pack_nil(&pk); /* reserved */
        }
        msgpack_pack_array(&pk, fn->n_requests);
        for (uint32_t q = 0; q < fn->n_requests; q++) {
            const pe_ir_request *rq = &fn->requests[q];
            msgpack_pack_array(&pk, REQUEST_FIELDS);
            msgpack_pack_int64(&pk, rq->line);
            msgpack_pack_int64(&pk, rq->column);
            msgpack_pack_int64(&pk, rq->ordinal);
            pe_mp_pack_str(&pk, rq->api);
            pe_mp_pack_str(&pk, rq->op);
            msgpack_pack_int64(&pk, rq->region);
            pe_mp_pack_str(&pk, rq->result);
            msgpack_pack_array(&pk, rq->n_args);
            for (uint32_t a = 0; a < rq->n_args; a++) {
                const pe_ir_arg *arg = &rq->args[a];
                msgpack_pack_array(&pk, ARG_FIELDS);
                msgpack_pack_uint32(&pk, arg->kind);
                pe_mp_pack_str(&pk, arg->text);
                msgpack_pack_double(&pk, arg->value);
                msgpack_pack_int64(&pk, arg->request);
                if (arg->kill) msgpack_pack_true(&pk);
                else msgpack_pack_false(&pk);
            }
        }
    }
    uint8_t *blob = pe_blob_frame(PE_IR_MAGIC, PE_IR_VERSION, &sb, len);
    msgpack_sbuffer_destroy(&sb);
    return blob;
}

/* ----------------------------------------------------------------- decode */

static const msgpack_object *fields(pe_mp_reader *r, const msgpack_object *o, uint32_t n, const char *what)
{
    uint32_t got;
    const msgpack_object *f = pe_mp_array(r, o, what, &got);
    if (f && got != n) {
        pe_mp_fail(r, "%s has %u fields, expected %u", what, got, n);
        return NULL;
    }
    return f;
}

static bool get_bool(pe_mp_reader *r, const msgpack_object *o, const char *what)
{
    if (o->type == MSGPACK_OBJECT_BOOLEAN) return o->via.boolean;
    pe_mp_fail(r, "%s: expected a boolean", what);
    return false;
}

static void *items(pe_mp_reader *r, uint32_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) pe_mp_fail(r, "out of memory");
    return p;
}

static void decode_region(pe_mp_reader *r, const msgpack_object *o, pe_ir_region *g, uint32_t index)
{
    const msgpack_object *f = fields(r, o, REGION_FIELDS, "region");
    if (!f) return;
    uint64_t kind = pe_mp_uint(r, &f[0], "region kind"), loop = pe_mp_uint(r, &f[1], "loop kind");
    g->parent = pe_mp_int(r, &f[2], "region parent");
    g->begin_line = pe_mp_int(r, &f[3], "region line");
    g->begin_column = pe_mp_int(r, &f[4], "region column");
    g->end_line = pe_mp_int(r, &f[5], "region end line");
    g->end_column = pe_mp_int(r, &f[6], "region end column");
    g->closed = get_bool(r, &f[7], "region closed");
    if (kind >= PE_REGION__COUNT || loop >= PE_LOOP__COUNT) pe_mp_fail(r, "region %u: unknown kind", index);
    g->kind = (uint32_t)kind, g->loop = (uint32_t)loop;
    if (index == 0 ? g->parent != -1 || kind != PE_REGION_FUNCTION : g->parent < 0 || g->parent >= (int64_t)index)
        pe_mp_fail(r, "region %u: parent %lld (regions nest, the body first)", index, (long long)g->parent);
    uint32_t n;
    const msgpack_object *c = pe_mp_array(r, &f[8], "carried", &n);
    if (!r->ok || !(g->carried = items(r, n, sizeof *g->carried))) return;
    g->n_carried = n;
    for (uint32_t i = 0; i < n && r->ok; i++) g->carried[i] = pe_mp_strdup(r, &c[i], "carried variable");
}

static void decode_request(pe_mp_reader *r, const msgpack_object *o, pe_ir_request *q, uint32_t index,
                           uint32_t n_regions)
{
    const msgpack_object *f = fields(r, o, REQUEST_FIELDS, "request");
    if (!f) return;
    q->line = pe_mp_int(r, &f[0], "request line");
    q->column = pe_mp_int(r, &f[1], "request column");
    q->ordinal = pe_mp_int(r, &f[2], "request ordinal");
    q->api = pe_mp_strdup(r, &f[3], "request api");
    q->op = pe_mp_strdup(r, &f[4], "request op");
    q->region = pe_mp_int(r, &f[5], "request region");
    q->result = pe_mp_strdup(r, &f[6], "request result");
    if (q->line < 0 || q->column < 0 || q->ordinal < 0) pe_mp_fail(r, "request %u: negative location", index);
    if (q->region < 0 || q->region >= (int64_t)n_regions)
        pe_mp_fail(r, "request %u: region %lld of %u", index, (long long)q->region, n_regions);
    uint32_t n;
    const msgpack_object *a = pe_mp_array(r, &f[7], "request arguments", &n);
    if (!r->ok || !(q->args = items(r, n, sizeof *q->args))) return;
    q->n_args = n;
    for (uint32_t i = 0; i < n && r->ok; i++) {
        const msgpack_object *af = fields(r, &a[i], ARG_FIELDS, "argument");
        if (!af) return;
        pe_ir_arg *arg = &q->args[i];
        uint64_t kind = pe_mp_uint(r, &af[0], "argument kind");
        arg->text = pe_mp_strdup(r, &af[1], "argument text");
        arg->value = pe_mp_double(r, &af[2], "argument value");
        arg->request = pe_mp_int(r, &af[3], "argument request");
        arg->kill = get_bool(r, &af[4], "argument kill");
        if (kind >= PE_ARG__COUNT) pe_mp_fail(r, "request %u argument %u: unknown kind", index, i);
        arg->kind = (uint32_t)kind;
        if (kind == PE_ARG_REQUEST ? arg->request < 0 || arg->request >= (int64_t)index : arg->request != -1)
            pe_mp_fail(r, "request %u argument %u: nested request %lld (must be an earlier one)", index, i,
                       (long long)arg->request);
        if (arg->kill && kind != PE_ARG_VARIABLE) pe_mp_fail(r, "request %u argument %u: a kill on a non-variable", index, i);
    }
}

bool pe_ir_decode(pe_ir_unit *u, const void *data, size_t len, char *err, size_t err_len)
{
    memset(u, 0, sizeof *u);
    pe_blob blob;
    char why[256];
    if (!pe_blob_open(&blob, data, len, PE_IR_MAGIC, PE_IR_VERSION, NULL, why, sizeof why)) {
        snprintf(err, err_len, "not a readable PE static IR: %s", why);
        return false;
    }
    pe_mp_reader r = {.ok = true};
    const msgpack_object *root = &blob.root;
    u->file = pe_mp_strdup(&r, pe_mp_get(&r, root, "file"), "file");
    u->producer = pe_mp_strdup(&r, pe_mp_get(&r, root, "producer"), "producer");
    uint32_t n;
    const msgpack_object *fns = pe_mp_array(&r, pe_mp_get(&r, root, "functions"), "functions", &n);
    if (r.ok && (u->functions = items(&r, n, sizeof *u->functions))) u->n_functions = n;
    for (uint32_t i = 0; i < u->n_functions && r.ok; i++) {
        const msgpack_object *f = fields(&r, &fns[i], FUNCTION_FIELDS, "function");
        if (!f) break;
        pe_ir_function *fn = &u->functions[i];
        fn->name = pe_mp_strdup(&r, &f[0], "function name");
        fn->line = pe_mp_int(&r, &f[1], "function line");
        uint32_t nr, nq;
        const msgpack_object *regions = pe_mp_array(&r, &f[2], "regions", &nr);
        const msgpack_object *requests = pe_mp_array(&r, &f[3], "requests", &nq);
        if (r.ok && nr == 0) pe_mp_fail(&r, "function %s has no body region", fn->name);
        if (!r.ok || !(fn->regions = items(&r, nr, sizeof *fn->regions))) break;
        fn->n_regions = nr;
        for (uint32_t g = 0; g < nr && r.ok; g++) decode_region(&r, &regions[g], &fn->regions[g], g);
        if (!r.ok || !(fn->requests = items(&r, nq, sizeof *fn->requests))) break;
        fn->n_requests = nq;
        for (uint32_t q = 0; q < nq && r.ok; q++) decode_request(&r, &requests[q], &fn->requests[q], q, nr);
    }
    pe_blob_close(&blob);
    if (!r.ok) {
        snprintf(err, err_len, "malformed PE static IR: %s", r.err);
        pe_ir_free(u);
        return false;
    }
    return true;
}

void pe_ir_free(pe_ir_unit *u)
{
    for (uint32_t i = 0; i < u->n_functions; i++) {
        pe_ir_function *fn = &u->functions[i];
        for (uint32_t g = 0; g < fn->n_regions; g++) {
            for (uint32_t c = 0; c < fn->regions[g].n_carried; c++) free(fn->regions[g].carried[c]);
            free(fn->regions[g].carried);
        }
        for (uint32_t q = 0; q < fn->n_requests; q++) {
            pe_ir_request *rq = &fn->requests[q];
            for (uint32_t a = 0; a < rq->n_args; a++) free(rq->args[a].text);
            free(rq->args), free(rq->api), free(rq->op), free(rq->result);
        }
        free(fn->name), free(fn->regions), free(fn->requests);
    }
    free(u->file), free(u->producer), free(u->functions);
    memset(u, 0, sizeof *u);
}

/* --------------------------------------------------------------- listings */

void pe_ir_print_text(const pe_ir_unit *u, FILE *out)
{
    fprintf(out, "unit %s (%s)\n", u->file, u->producer);
    for (uint32_t i = 0; i < u->n_functions; i++) {
        const pe_ir_function *fn = &u->functions[i];
        fprintf(out, "  function %s, line %lld\n", fn->name, (long long)fn->line);
        for (uint32_t g = 0; g < fn->n_regions; g++) {
            const pe_ir_region *r = &fn->regions[g];
            fprintf(out, "    region %u: %s%s%s, parent %lld, %lld:%lld-%lld:%lld%s", g, pe_ir_region_kind_name(r->kind),
                    r->loop ? " " : "", pe_ir_loop_kind_name(r->loop), (long long)r->parent, (long long)r->begin_line,
                    (long long)r->begin_column, (long long)r->end_line, (long long)r->end_column,
                    r->closed ? ", closed" : ", open");
            for (uint32_t c = 0; c < r->n_carried; c++) fprintf(out, "%s%s", c ? " " : ", carries ", r->carried[c]);
            fputc('\n', out);
        }
        for (uint32_t q = 0; q < fn->n_requests; q++) {
            const pe_ir_request *rq = &fn->requests[q];
            fprintf(out, "    request %u: %lld:%lld#%lld region %lld %s%s%s%s%s(", q, (long long)rq->line,
                    (long long)rq->column, (long long)rq->ordinal, (long long)rq->region, *rq->result ? rq->result : "",
                    *rq->result ? " = " : "", rq->api, *rq->op ? " op " : "", rq->op);
            for (uint32_t a = 0; a < rq->n_args; a++) {
                const pe_ir_arg *arg = &rq->args[a];
                fprintf(out, "%s", a ? ", " : "");
                if (arg->kind == PE_ARG_REQUEST) fprintf(out, "request %lld", (long long)arg->request);
                else if (arg->kind == PE_ARG_LITERAL) fprintf(out, "literal %s = %.17g", arg->text, arg->value);
                else fprintf(out, "%s %s%s", pe_ir_arg_kind_name(arg->kind), arg->text, arg->kill ? " (last use)" : "");
            }
            fprintf(out, ")\n");
        }
    }
}

void pe_ir_print_json(const pe_ir_unit *u, FILE *out)
{
    fprintf(out, "{\"file\":");
    pe_json_string(out, u->file);
    fprintf(out, ",\"producer\":");
    pe_json_string(out, u->producer);
    fprintf(out, ",\"functions\":[");
    for (uint32_t i = 0; i < u->n_functions; i++) {
        const pe_ir_function *fn = &u->functions[i];
        fprintf(out, "%s\n {\"name\":", i ? "," : "");
        pe_json_string(out, fn->name);
        fprintf(out, ",\"line\":%lld,\"regions\":[", (long long)fn->line);
        for (uint32_t g = 0; g < fn->n_regions; g++) {
            const pe_ir_region *r = &fn->regions[g];
            fprintf(out, "%s\n  {\"kind\":\"%s\",\"loop\":\"%s\",\"parent\":%lld,\"begin\":[%lld,%lld],\"end\":[%lld,%lld],"
                         "\"closed\":%s,\"carried\":[",
                    g ? "," : "", pe_ir_region_kind_name(r->kind), pe_ir_loop_kind_name(r->loop), (long long)r->parent,
                    (long long)r->begin_line, (long long)r->begin_column, (long long)r->end_line,
                    (long long)r->end_column, r->closed ? "true" : "false");
            for (uint32_t c = 0; c < r->n_carried; c++) {
                if (c) fputc(',', out);
                pe_json_string(out, r->carried[c]);
            }
            fprintf(out, "]}");
        }
        fprintf(out, "],\"requests\":[");
        for (uint32_t q = 0; q < fn->n_requests; q++) {
            const pe_ir_request *rq = &fn->requests[q];
            fprintf(out, "%s\n  {\"line\":%lld,\"column\":%lld,\"ordinal\":%lld,\"api\":", q ? "," : "", (long long)rq->line,
                    (long long)rq->column, (long long)rq->ordinal);
            pe_json_string(out, rq->api);
            fprintf(out, ",\"op\":");
            pe_json_string(out, rq->op);
            fprintf(out, ",\"region\":%lld,\"result\":", (long long)rq->region);
            pe_json_string(out, rq->result);
            fprintf(out, ",\"args\":[");
            for (uint32_t a = 0; a < rq->n_args; a++) {
                const pe_ir_arg *arg = &rq->args[a];
                fprintf(out, "%s{\"kind\":\"%s\",\"text\":", a ? "," : "", pe_ir_arg_kind_name(arg->kind));
                pe_json_string(out, arg->text);
                if (arg->kind == PE_ARG_LITERAL && isfinite(arg->value)) fprintf(out, ",\"value\":%.17g", arg->value);
                if (arg->kind == PE_ARG_REQUEST) fprintf(out, ",\"request\":%lld", (long long)arg->request);
                fprintf(out, ",\"last_use\":%s}", arg->kill ? "true" : "false");
            }
            fprintf(out, "]}");
        }
        fprintf(out, "]}");
    }
    fprintf(out, "\n]}\n");
}
