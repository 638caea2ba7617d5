/* fuzz_static_ir.c — libFuzzer target for the static IR decoder: each input
 * is decoded as a whole blob and, framed with a correct header and checksum,
 * as a payload (so that mutations reach the msgpack walk and the validator,
 * not only the checksum).  What decodes must re-encode and decode again. */
#include <stdint.h>
#include <stdlib.h>

#include "irformat/msgblob.h"
#include "irformat/static_ir.h"

static void decode_and_reencode(const uint8_t *data, size_t size)
{
    pe_ir_unit u, again;
    char err[300];
    if (!pe_ir_decode(&u, data, size, err, sizeof err)) return;
    size_t len;
    uint8_t *blob = pe_ir_encode(&u, &len);
    if (blob) {
        if (!pe_ir_decode(&again, blob, len, err, sizeof err)) abort(); /* what PE writes, PE reads */
        pe_ir_free(&again);
        free(blob);
    }
    pe_ir_free(&u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decode_and_reencode(data, size);
    msgpack_sbuffer sb = {.size = size, .data = (char *)data, .alloc = size};
    size_t len;
    uint8_t *framed = pe_blob_frame(PE_IR_MAGIC, PE_IR_VERSION, &sb, &len);
    if (framed) decode_and_reencode(framed, len);
    free(framed);
    return 0;
}
