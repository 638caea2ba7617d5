/* pecc_extract.c — pecc's extractor, a program of its own: libclang parses
 * one C source with the command's preprocessor and language flags, and the
 * unit's static IR is written as a C file holding it (emit.c), which pecc
 * compiles.  A separate program because loading libclang and LLVM costs
 * ~20 ms per process: the launcher (pecc.c) stays light for the units that
 * never include pe.h, and only units that do pay for the parser.
 *
 *   pecc-extract [--print-ir] SOURCE OUT.c [FLAGS...]
 * Exit 0 with OUT.c written; otherwise 1 after a warning naming SOURCE
 * (pecc then compiles the unit without static IR). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "extract.h"

int main(int argc, char **argv)
{
    int first = 1;
    bool print = argc > 1 && strcmp(argv[1], "--print-ir") == 0;
    if (print) first = 2;
    if (argc < first + 2) {
        fprintf(stderr, "usage: pecc-extract [--print-ir] SOURCE OUT.c [FLAGS...]   (run by pecc)\n");
        return 2;
    }
    const char *source = argv[first], *out = argv[first + 1];
    const char *const *flags = (const char *const *)argv + first + 2;
    int n_flags = argc - first - 2;
    pe_ir_unit unit;
    pe_function_facts *facts;
    char err[600];
    if (!pe_extract(source, flags, n_flags, &unit, &facts, err, sizeof err)) {
        fprintf(stderr, "pecc: warning: %s: compiled without static IR: %s\n", source, err);
        return 1;
    }
    if (print) pe_ir_print_text(&unit, stdout);
    fflush(stdout);
    size_t len;
    uint8_t *blob = pe_ir_encode(&unit, &len);
    pe_facts_free(facts, unit.n_functions);
    pe_ir_free(&unit);
    if (!blob) {
        fprintf(stderr, "pecc: warning: %s: out of memory for its static IR\n", source);
        return 1;
    }
    bool ok = pe_emit_ir_source(out, blob, len, err, sizeof err);
    free(blob);
    if (!ok) {
        fprintf(stderr, "pecc: warning: %s: %s\n", source, err);
        return 1;
    }
    return 0;
}
