/* fuzz_trace_file.c — libFuzzer target for the trace cache's file
 * (traces-*.petc, jit/trace/trace_persist.c): each input is decoded as a
 * whole file and, framed with a correct header and checksum, as a payload
 * (so that mutations reach the msgpack walk, the kernel check kir_valid and
 * pe_trace_adopt's translation, not only the checksum).  What is accepted
 * goes into the live trace cache of a runtime started once (the CPU JIT, a
 * disk cache in a fresh directory), as at pe_init. */
#define _GNU_SOURCE
#include <pe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "irformat/msgblob.h"
#include "jit/trace/trace.h"

static void start_runtime(void)
{
    static char dir[] = "/tmp/pe-fuzz-trace-XXXXXX";
    if (!mkdtemp(dir)) abort();
    pe_config cfg = {.device = 1, .executor = "jit", .cache_dir = dir, .log_level = 1};
    if (pe_init(&cfg) != PE_OK) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int started;
    if (!started++) start_runtime();
    char err[600];
    bool stale;
    pe_trace_persist_decode(data, size, &stale, err, sizeof err);
    msgpack_sbuffer sb = {.size = size, .data = (char *)data, .alloc = size};
    size_t len;
    uint8_t *framed = pe_blob_frame(PE_TRACE_FILE_MAGIC, PE_TRACE_FILE_VERSION, &sb, &len);
    if (framed) pe_trace_persist_decode(framed, len, &stale, err, sizeof err);
    free(framed);
    return 0;
}
