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
#include "msgfields.h"

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

/* ------------------------------------------------------------------ fields
 * Each record's fields in the format's order (docs/irformat.md), for the
 * encoder and the decoder both; the arrays a record ends with (a function's
 * regions and requests, a request's arguments) are packed and read here. */

static const pe_mp_field unit_fields[] = {
    PE_MP_FIELD(pe_ir_unit, STR, file, "file"),
    PE_MP_FIELD(pe_ir_unit, STR, producer, "producer"),
}; /* then "functions" */

static const pe_mp_field function_fields[] = {
    PE_MP_FIELD(pe_ir_function, STR, name, "function name"),
    PE_MP_FIELD(pe_ir_function, I64, line, "function line"),
}; /* then regions, requests */

enum { REGION_KIND, REGION_LOOP, REGION_CARRIED = 8 };
static const pe_mp_field region_fields[REGION_FIELDS] = {
    PE_MP_FIELD(pe_ir_region, U32, kind, "region kind"),
    PE_MP_FIELD(pe_ir_region, U32, loop, "loop kind"),
    PE_MP_FIELD(pe_ir_region, I64, parent, "region parent"),
    PE_MP_FIELD(pe_ir_region, I64, begin_line, "region line"),
    PE_MP_FIELD(pe_ir_region, I64, begin_column, "region column"),
    PE_MP_FIELD(pe_ir_region, I64, end_line, "region end line"),
    PE_MP_FIELD(pe_ir_region, I64, end_column, "region end column"),
    PE_MP_FIELD(pe_ir_region, BOOL, closed, "region closed"),
    PE_MP_STRS_FIELD(pe_ir_region, carried, n_carried, "carried", "carried variable"),
    PE_MP_NIL_FIELD,
};

static const pe_mp_field request_fields[REQUEST_FIELDS - 1] = {
    PE_MP_FIELD(pe_ir_request, I64, line, "request line"),
    PE_MP_FIELD(pe_ir_request, I64, column, "request column"),
    PE_MP_FIELD(pe_ir_request, I64, ordinal, "request ordinal"),
    PE_MP_FIELD(pe_ir_request, STR, api, "request api"),
    PE_MP_FIELD(pe_ir_request, STR, op, "request op"),
    PE_MP_FIELD(pe_ir_request, I64, region, "request region"),
    PE_MP_FIELD(pe_ir_request, STR, result, "request result"),
}; /* then the arguments */

static const pe_mp_field arg_fields[ARG_FIELDS] = {
    PE_MP_FIELD(pe_ir_arg, U32, kind, "argument kind"),
    PE_MP_FIELD(pe_ir_arg, STR, text, "argument text"),
    PE_MP_FIELD(pe_ir_arg, F64, value, "argument value"),
    PE_MP_FIELD(pe_ir_arg, I64, request, "argument request"),
    PE_MP_FIELD(pe_ir_arg, BOOL, kill, "argument kill"),
};

/* ----------------------------------------------------------------- encode */

uint8_t *pe_ir_encode(const pe_ir_unit *u, size_t *len)
{
    pe_mp_writer w;
    msgpack_packer *pk = pe_mp_writer_start(&w);
    msgpack_pack_map(pk, 3);
    pe_mp_pack_keyed(pk, u, unit_fields, PE_MP_N_FIELDS(unit_fields));
    pe_mp_pack_str(pk, "functions");
    msgpack_pack_array(pk, u->n_functions);
    for (uint32_t f = 0; f < u->n_functions; f++) {
        const pe_ir_function *fn = &u->functions[f];
        msgpack_pack_array(pk, FUNCTION_FIELDS);
        pe_mp_pack_fields(pk, fn, function_fields, PE_MP_N_FIELDS(function_fields));
        msgpack_pack_array(pk, fn->n_regions);
        for (uint32_t r = 0; r < fn->n_regions; r++) {
            msgpack_pack_array(pk, REGION_FIELDS);
            pe_mp_pack_fields(pk, &fn->regions[r], region_fields, REGION_FIELDS);
        }
        msgpack_pack_array(pk, fn->n_requests);
        for (uint32_t q = 0; q < fn->n_requests; q++) {
            const pe_ir_request *rq = &fn->requests[q];
            msgpack_pack_array(pk, REQUEST_FIELDS);
            pe_mp_pack_fields(pk, rq, request_fields, PE_MP_N_FIELDS(request_fields));
            msgpack_pack_array(pk, rq->n_args);
            for (uint32_t a = 0; a < rq->n_args; a++) {
                msgpack_pack_array(pk, ARG_FIELDS);
                pe_mp_pack_fields(pk, &rq->args[a], arg_fields, ARG_FIELDS);
            }
        }
    }
    return pe_mp_writer_frame(&w, PE_IR_MAGIC, PE_IR_VERSION, len);
}

/* ----------------------------------------------------------------- decode */

static void decode_region(pe_mp_reader *r, const msgpack_object *o, pe_ir_region *g, uint32_t index)
{
    const msgpack_object *f = pe_mp_record(r, o, REGION_FIELDS, "region", PE_MP_NO_INDEX);
    if (!f) return;
    uint64_t raw[REGION_CARRIED];
    pe_mp_read_fields(r, f, g, region_fields, REGION_CARRIED, raw);
    uint64_t kind = raw[REGION_KIND], loop = raw[REGION_LOOP];
    if (kind >= PE_REGION__COUNT || loop >= PE_LOOP__COUNT) pe_mp_fail(r, "region %u: unknown kind", index);
    if (index == 0 ? g->parent != -1 || kind != PE_REGION_FUNCTION : g->parent < 0 || g->parent >= (int64_t)index)
        pe_mp_fail(r, "region %u: parent %lld (regions nest, the body first)", index, (long long)g->parent);
    /* the carried variables once the rest is known good (the reserved nil after them is not read) */
    pe_mp_read_fields(r, f + REGION_CARRIED, g, region_fields + REGION_CARRIED, 1, NULL);
}

static void decode_request(pe_mp_reader *r, const msgpack_object *o, pe_ir_request *q, uint32_t index,
                           uint32_t n_regions)
{
    const msgpack_object *f = pe_mp_record(r, o, REQUEST_FIELDS, "request", PE_MP_NO_INDEX);
    if (!f) return;
    pe_mp_read_fields(r, f, q, request_fields, PE_MP_N_FIELDS(request_fields), NULL);
    if (q->line < 0 || q->column < 0 || q->ordinal < 0) pe_mp_fail(r, "request %u: negative location", index);
    if (q->region < 0 || q->region >= (int64_t)n_regions)
        pe_mp_fail(r, "request %u: region %lld of %u", index, (long long)q->region, n_regions);
    const msgpack_object *a;
    if (!(q->args = pe_mp_items(r, &f[7], "request arguments", sizeof *q->args, &a, &q->n_args))) return;
    for (uint32_t i = 0; i < q->n_args && r->ok; i++) {
        const msgpack_object *af = pe_mp_record(r, &a[i], ARG_FIELDS, "argument", PE_MP_NO_INDEX);
        if (!af) return;
        pe_ir_arg *arg = &q->args[i];
        uint64_t raw[ARG_FIELDS];
        pe_mp_read_fields(r, af, arg, arg_fields, ARG_FIELDS, raw);
        uint64_t kind = raw[0];
        if (kind >= PE_ARG__COUNT) pe_mp_fail(r, "request %u argument %u: unknown kind", index, i);
        if (kind == PE_ARG_REQUEST ? arg->request < 0 || arg->request >= (int64_t)index : arg->request != -1)
            pe_mp_fail(r, "request %u argument %u: nested request %lld (must be an earlier one)", index, i,
                       (long long)arg->request);
        if (arg->kill && kind != PE_ARG_VARIABLE) pe_mp_fail(r, "request %u argument %u: a kill on a non-variable", index, i);
    }
}

bool pe_ir_decode(pe_ir_unit *u, const void *data, size_t len, char *err, size_t err_len)
{
    memset(u, 0, sizeof *u);
    pe_mp_doc d;
    if (!pe_mp_doc_open(&d, data, len, PE_IR_MAGIC, PE_IR_VERSION, "PE static IR", err, err_len)) return false;
    pe_mp_reader *r = &d.r;
    const msgpack_object *root = &d.blob.root, *fns;
    pe_mp_read_keyed(r, root, u, unit_fields, PE_MP_N_FIELDS(unit_fields));
    u->functions = pe_mp_items(r, pe_mp_get(r, root, "functions"), "functions", sizeof *u->functions, &fns,
                               &u->n_functions);
    for (uint32_t i = 0; i < u->n_functions && r->ok; i++) {
        const msgpack_object *f = pe_mp_record(r, &fns[i], FUNCTION_FIELDS, "function", PE_MP_NO_INDEX);
        if (!f) break;
        pe_ir_function *fn = &u->functions[i];
        pe_mp_read_fields(r, f, fn, function_fields, PE_MP_N_FIELDS(function_fields), NULL);
        uint32_t nr, nq;
        const msgpack_object *regions = pe_mp_array(r, &f[2], "regions", &nr);
        const msgpack_object *requests = pe_mp_array(r, &f[3], "requests", &nq);
        if (r->ok && nr == 0) pe_mp_fail(r, "function %s has no body region", fn->name);
        if (!r->ok || !(fn->regions = pe_mp_alloc(r, nr, sizeof *fn->regions))) break;
        fn->n_regions = nr;
        for (uint32_t g = 0; g < nr && r->ok; g++) decode_region(r, &regions[g], &fn->regions[g], g);
        if (!r->ok || !(fn->requests = pe_mp_alloc(r, nq, sizeof *fn->requests))) break;
        fn->n_requests = nq;
        for (uint32_t q = 0; q < nq && r->ok; q++) decode_request(r, &requests[q], &fn->requests[q], q, nr);
    }
    if (pe_mp_doc_close(&d, "PE static IR", err, err_len)) return true;
    pe_ir_free(u);
    return false;
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
