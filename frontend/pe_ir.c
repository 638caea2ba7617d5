/* pe_ir.c — `pe-ir FILE [--json]`: prints the static IR embedded in an
 * executable, shared library or object (ELF section pe_ir) without running
 * it.  The section holds the blobs of every unit built with pecc back to
 * back; each is framed with its length (irformat/msgblob.h).  The ELF file
 * is untrusted input like the blobs: every offset is checked against the
 * file's size. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../irformat/msgblob.h"
#include "../irformat/static_ir.h"

#define MAX_FILE ((size_t)1 << 31)

/* The pe_ir section's bytes within the file; false with err set. */
static bool find_section(const uint8_t *f, size_t size, size_t *off, size_t *len, char *err, size_t err_len)
{
    if (size < sizeof(Elf64_Ehdr) || memcmp(f, ELFMAG, SELFMAG) != 0 || f[EI_CLASS] != ELFCLASS64 ||
        f[EI_DATA] != ELFDATA2LSB) {
        snprintf(err, err_len, "not a 64-bit little-endian ELF file");
        return false;
    }
    Elf64_Ehdr eh;
    memcpy(&eh, f, sizeof eh);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size || eh.e_shnum > (size - eh.e_shoff) / sizeof(Elf64_Shdr) ||
        eh.e_shstrndx >= eh.e_shnum) {
        snprintf(err, err_len, "malformed ELF section table");
        return false;
    }
    Elf64_Shdr names;
    memcpy(&names, f + eh.e_shoff + (size_t)eh.e_shstrndx * sizeof names, sizeof names);
    if (names.sh_offset > size || names.sh_size > size - names.sh_offset) {
        snprintf(err, err_len, "malformed ELF section names");
        return false;
    }
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, f + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
        if (sh.sh_name >= names.sh_size) continue;
        const char *name = (const char *)f + names.sh_offset + sh.sh_name;
        size_t room = names.sh_size - sh.sh_name;
        if (strnlen(name, room) == room || strcmp(name, "pe_ir") != 0) continue;
        if (sh.sh_type == SHT_NOBITS || sh.sh_offset > size || sh.sh_size > size - sh.sh_offset) {
            snprintf(err, err_len, "malformed pe_ir section");
            return false;
        }
        *off = sh.sh_offset;
        *len = sh.sh_size;
        return true;
    }
    snprintf(err, err_len, "no pe_ir section: built without pecc?");
    return false;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) json = true;
        else if (!path) path = argv[i];
        else path = NULL, i = argc;
    }
    if (!path) {
        fprintf(stderr, "usage: pe-ir FILE [--json]   (FILE: an executable, shared library or object built with pecc)\n");
        return 2;
    }
    char err[600];
    size_t size;
    uint8_t *f = pe_blob_read_file(path, MAX_FILE, &size, err, sizeof err);
    if (!f) {
        fprintf(stderr, "pe-ir: %s\n", err);
        return 2;
    }
    size_t off, len;
    if (!find_section(f, size, &off, &len, err, sizeof err)) {
        fprintf(stderr, "pe-ir: %s: %s\n", path, err);
        free(f);
        return 2;
    }
    int rc = 0, units = 0;
    if (json) printf("[");
    for (size_t at = off, end = off + len; at < end;) {
        if (f[at] == 0) { /* padding between units */
            at++;
            continue;
        }
        if (end - at < PE_BLOB_HEADER_SIZE) {
            fprintf(stderr, "pe-ir: %s: %zu stray bytes at the end of pe_ir\n", path, end - at);
            rc = 2;
            break;
        }
        uint32_t plen = (uint32_t)f[at + 8] | (uint32_t)f[at + 9] << 8 | (uint32_t)f[at + 10] << 16 | (uint32_t)f[at + 11] << 24;
        size_t blob_len = PE_BLOB_HEADER_SIZE + (size_t)plen;
        if (blob_len > end - at) blob_len = end - at; /* the decoder names the truncation */
        pe_ir_unit u;
        if (!pe_ir_decode(&u, f + at, blob_len, err, sizeof err)) {
            fprintf(stderr, "pe-ir: %s: unit at byte %zu of pe_ir: %s\n", path, at - off, err);
            rc = 2;
            break;
        }
        if (json) {
            if (units) printf(",\n");
            pe_ir_print_json(&u, stdout);
        } else {
            pe_ir_print_text(&u, stdout);
        }
        units++;
        pe_ir_free(&u);
        at += blob_len;
    }
    if (json) printf("]\n");
    free(f);
    return rc;
}
