/* extract.h — pecc's front half: parse a C source with libclang (the flags of
 * the compiler's command line) and extract its static IR: regions, the PE
 * requests in them, their arguments classified, and — from the variable
 * occurrences collected alongside (lastuse.c) — last-use marks. */
#ifndef PE_FRONTEND_EXTRACT_H
#define PE_FRONTEND_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>

#include "../irformat/static_ir.h"

/* Where an array variable appears in a function, for the last-use analysis.
 * Offsets are file offsets of expansion locations in the unit's file. */
typedef enum {
    PE_OCC_USE,    /* a direct array operand of a PE request */
    PE_OCC_DEF,    /* assigned (or initialised) from a PE request, or from {0} */
    PE_OCC_ESCAPE  /* anything else: address taken, copied, passed elsewhere, returned */
} pe_occ_kind;

typedef struct {
    unsigned begin, end;
} pe_span;

typedef struct {
    int var;             /* index into the function's variables */
    pe_occ_kind kind;
    unsigned offset;     /* a use: the end of its request's call (a request reads its operands when
                            it runs, after its nested requests); a def: the end of the assignment */
    int order;           /* at one offset: a use's argument index; a def 255 (after the uses) */
    int request, arg;    /* a use: the request and argument index */
    pe_span construct;   /* nearest enclosing branch of an if or ?: (in the condition: the whole if or ?:),
                            switch, right operand of && or ||, loop body, or the function body */
    bool construct_is_switch;
    int loop;            /* innermost loop region (index into the function's regions), 0: none */
} pe_occurrence;

typedef struct {
    char *name;
    bool killable;       /* a local array variable only ever defined from PE requests and used as an operand */
} pe_variable;

typedef struct {
    pe_span *region_body;   /* per region: the body's extent (loops: the statement after the header) */
    pe_occurrence *occ;
    size_t n_occ, occ_cap;
    pe_variable *vars;
    size_t n_vars, vars_cap;
    bool has_goto;          /* control flow the analysis does not follow: no last-use marks */
} pe_function_facts;

/* Parses `source` with `args` (compiler flags, no output or mode options)
 * and fills *unit (and, per function, *facts: n_functions entries, to free
 * with pe_facts_free).  False with a message when libclang cannot parse it. */
bool pe_extract(const char *source, const char *const *args, int n_args, pe_ir_unit *unit, pe_function_facts **facts,
                char *err, size_t err_len);
void pe_facts_free(pe_function_facts *facts, size_t n);

/* lastuse.c: sets `kill` on every variable operand that is the last use of
 * the value it holds (see the rules there). */
void pe_mark_last_uses(pe_ir_function *fn, const pe_function_facts *facts);

#endif
