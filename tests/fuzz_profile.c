/* fuzz_profile.c — libFuzzer target for the profile database (.pep,
 * profiler/profdb.c) and everything pe-prof does with one it accepted: each
 * input is decoded as a whole file and, framed with a correct header and
 * checksum, as a payload of every format version the decoder reads (so that
 * mutations reach the msgpack walk, not only the checksum; seeds 0 and 1 are
 * version 1 payloads, seed 2 a version 2 one).  What decodes is reported (the four reports, every
 * attribution table, the trace and HTML exports, a diff with itself) into
 * /dev/null, and must re-encode and decode again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "irformat/msgblob.h"
#include "profiler/export.h"
#include "profiler/profdb.h"
#include "profiler/report.h"

static FILE *sink;

static void use(const pe_profile *p)
{
    pe_prof_report_summary(p, sink);
    pe_prof_report_compute(p, sink);
    pe_prof_report_io(p, sink);
    pe_prof_report_runtime(p, sink);
    for (int by = PE_BY_LINE; by <= PE_BY_KERNEL; by++) pe_prof_report_table(p, (pe_prof_group)by, sink);
    pe_prof_export_trace(p, sink);
    pe_prof_export_html(p, sink);
    pe_prof_diff(p, p, sink, 5.0, 0.0);
}

static void decode_use_reencode(const uint8_t *data, size_t size)
{
    pe_profile p, again;
    char err[300];
    if (!pe_profile_decode(&p, data, size, err, sizeof err)) return;
    use(&p);
    size_t len;
    uint8_t *blob = pe_profile_encode(&p, &len);
    if (blob) {
        if (!pe_profile_decode(&again, blob, len, err, sizeof err)) abort(); /* what PE writes, PE reads */
        pe_profile_free(&again);
        free(blob);
    }
    pe_profile_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!sink && !(sink = fopen("/dev/null", "w"))) abort();
    decode_use_reencode(data, size);
    msgpack_sbuffer sb = {.size = size, .data = (char *)data, .alloc = size};
    for (uint16_t version = 1; version <= PE_PROF_VERSION; version++) {
        size_t len;
        uint8_t *framed = pe_blob_frame(PE_PROF_MAGIC, version, &sb, &len);
        if (framed) decode_use_reencode(framed, len);
        free(framed);
    }
    return 0;
}
