/* fuzz_cache_file.c — libFuzzer target for what the disk cache reads
 * (jit/cache/diskcache.c): each input is put in the cache directory as a
 * file and read back through pe_diskcache_read — the regular-file and owner
 * checks, the seal's trailer and its keyed MAC — which must refuse it
 * cleanly (with a warning, the file removed) unless it is sealed with this
 * directory's key.  Half of the inputs are first sealed by
 * pe_diskcache_write and then cut or flipped at an offset the input picks,
 * so that mutations reach the trailer's parse and the MAC's comparison with
 * a real seal, not only a missing one. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit/cache/diskcache.h"

static char dir[] = "/tmp/pe-fuzz-cache-XXXXXX";

static void put_file(const char *name, const uint8_t *data, size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    if (fd < 0) abort();
    if (size && write(fd, data, size) != (ssize_t)size) abort();
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int started;
    if (!started++ && (!mkdtemp(dir) || !pe_diskcache_open(dir, "fuzz"))) abort();
    size_t got = 0;
    put_file("raw.bin", data, size);
    void *back = pe_diskcache_read("raw.bin", &got);
    free(back);
    if (size >= 3) { /* a real seal, then damaged: byte 0 picks cut or flip, bytes 1-2 where */
        if (!pe_diskcache_write("sealed.bin", data + 3, size - 3)) abort();
        char path[128];
        snprintf(path, sizeof path, "%s/sealed.bin", dir);
        FILE *f = fopen(path, "r+b");
        if (!f) abort();
        fseek(f, 0, SEEK_END);
        long len = ftell(f), at = len ? (long)((data[1] | data[2] << 8) % (unsigned long)len) : 0;
        if (data[0] & 1) {
            if (ftruncate(fileno(f), at) != 0) abort();
        } else if (data[0] & 2) { /* flip one bit */
            fseek(f, at, SEEK_SET);
            int c = fgetc(f);
            fseek(f, at, SEEK_SET);
            fputc((c < 0 ? 0 : c) ^ (1 << (data[0] >> 5)), f);
        } /* else intact: must come back whole */
        fclose(f);
        back = pe_diskcache_read("sealed.bin", &got);
        if (!(data[0] & 3) && (!back || got != size - 3 || memcmp(back, data + 3, got) != 0)) abort();
        if ((data[0] & 1) && back) abort(); /* a cut seal is never accepted */
        free(back);
    }
    return 0;
}
