/* static_ir.h — the static IR of one translation unit, as pecc extracts it
 * from the C source and the runtime reads it back: functions, their regions
 * (function body, loops, blocks, PE_MACRO sections) and the operation
 * requests in them, with argument classes, last-use marks and literal
 * values.  The encoding is a framed msgpack blob (msgblob.h, magic "PEIR");
 * docs/irformat.md is the schema.  The decoder treats its input as
 * untrusted: every count, index and string is checked. */
#ifndef PE_IRFORMAT_STATIC_IR_H
#define PE_IRFORMAT_STATIC_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PE_IR_MAGIC "PEIR"
#define PE_IR_VERSION 1

typedef enum { PE_REGION_FUNCTION, PE_REGION_LOOP, PE_REGION_BLOCK, PE_REGION_MACRO, PE_REGION__COUNT } pe_ir_region_kind;
typedef enum { PE_LOOP_NONE, PE_LOOP_FOR, PE_LOOP_WHILE, PE_LOOP_DO, PE_LOOP__COUNT } pe_ir_loop_kind;
typedef enum { PE_ARG_VARIABLE, PE_ARG_REQUEST, PE_ARG_LITERAL, PE_ARG_OTHER, PE_ARG__COUNT } pe_ir_arg_kind;

typedef struct {
    uint32_t kind;      /* pe_ir_arg_kind */
    char *text;         /* VARIABLE: its name; OTHER, LITERAL: the source text */
    double value;       /* LITERAL: its value */
    int64_t request;    /* REQUEST: index of the nested request in the function (an earlier one); else -1 */
    bool kill;          /* VARIABLE: this is the value's last use (no escape): release after the call */
} pe_ir_arg;

typedef struct {
    int64_t line, column;   /* the call's expansion location in the unit's file */
    int64_t ordinal;        /* requests sharing a location (one macro expansion): 0, 1, ... */
    char *api;              /* the function called, e.g. "pe_add_at" */
    char *op;               /* its catalog op (irformat/ops.def) or "" (reads, lifetime, ...) */
    int64_t region;         /* innermost region */
    char *result;           /* the variable the result is assigned to, or "" */
    pe_ir_arg *args;        /* array operands in call order (the site argument is not listed) */
    uint32_t n_args;
} pe_ir_request;

typedef struct {
    uint32_t kind;          /* pe_ir_region_kind */
    uint32_t loop;          /* pe_ir_loop_kind (LOOP regions) */
    int64_t parent;         /* index of the enclosing region, -1 for the function body */
    int64_t begin_line, begin_column, end_line, end_column;
    bool closed;            /* single entry and exit, no escapes, no unknown calls taking arrays */
    char **carried;         /* LOOP: array variables live around the back edge */
    uint32_t n_carried;
} pe_ir_region;

typedef struct {
    char *name;
    int64_t line;
    pe_ir_region *regions;  /* regions[0] is the body; parents come before children */
    uint32_t n_regions;
    pe_ir_request *requests; /* in evaluation order: nested requests before the ones using them */
    uint32_t n_requests;
} pe_ir_function;

typedef struct {
    char *file;             /* the source as the compiler saw it */
    char *producer;         /* "pecc <version> (libclang <version>)" */
    pe_ir_function *functions;
    uint32_t n_functions;
} pe_ir_unit;

/* Serialises (framed); malloc'd, NULL when out of memory. */
uint8_t *pe_ir_encode(const pe_ir_unit *u, size_t *len);
/* Parses and validates; false with a message in err (nothing to free then). */
bool pe_ir_decode(pe_ir_unit *u, const void *data, size_t len, char *err, size_t err_len);
void pe_ir_free(pe_ir_unit *u);

/* Readable listings (pe-ir). */
void pe_ir_print_text(const pe_ir_unit *u, FILE *out);
void pe_ir_print_json(const pe_ir_unit *u, FILE *out);

const char *pe_ir_region_kind_name(uint32_t k);
const char *pe_ir_loop_kind_name(uint32_t k);
const char *pe_ir_arg_kind_name(uint32_t k);

#endif
