/* spmv_code.c — the code of pe_spmv on the CPU: the row loops the CPU code
 * generator makes (exec/cpu/cpu_spmv.c, through its target's spmv_compile
 * and spmv_link), provisioned like kernels but
 * once per run for every dtype together.  At the first call that needs
 * them: the disk cache's copy (one name per generator build and ISA tag),
 * else one compilation in the compiler's child process (as kernels are),
 * filed on disk; linked from memory (the target links the bytes: what runs is what
 * was read); lent to exec/intrinsics/sparse.c through
 * pe_intrinsics_use_spmv_code, since that stage cannot call up.  The first
 * call pays the compilation (70 ms measured, one gcc run) once; a later run
 * loads the file (0.1 ms).
 * A failure is one warning, and the interpreter's reference then computes
 * every spmv of the run (sparse.c). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "provision.h"
#include "../cache/diskcache.h"
#include "../kir/codegen.h"
#include "../../exec/backends.h"
#include "../../exec/base/error.h"
#include "../../exec/intrinsics/intrinsics.h"
#include "../../irformat/safefile.h"

#define MAX_CODE_BYTES ((size_t)64 << 20)

static struct {
    pthread_mutex_t lock; /* the calls come from the executors' threads, without the runtime lock */
    bool tried;           /* linked, or failed (warned once) */
    void *unit;           /* the dlopen handle */
    pe_range_fn rows[PE_DTYPE__COUNT];
    char disk_name[96];
} code = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The loops compiled now: the shared object's bytes (malloc'ed), or NULL with err. */
static void *compiled(size_t *size, char *err, size_t n_err)
{
    char path[4200];
    if (!pe_provision_private_path(path, sizeof path)) {
        snprintf(err, n_err, "no file in TMPDIR for the compiler to write");
        return NULL;
    }
    void *bytes = NULL;
    if (pe_host_backend.target->spmv_compile(path, err, n_err)) {
        struct stat st;
        int fd = pe_file_open_regular(AT_FDCWD, path, &st, err, n_err);
        if (fd >= 0) {
            bytes = pe_file_read_all(fd, &st, MAX_CODE_BYTES, size, err, n_err);
            close(fd);
        }
    }
    unlink(path);
    return bytes;
}

/* Every dtype's loop from the shared object's bytes; false with err. */
static bool link_loops(const void *bytes, size_t size, char *err, size_t n_err)
{
    void *rows[PE_DTYPE__COUNT];
    void *unit = pe_host_backend.target->spmv_link(bytes, size, rows, err, n_err);
    if (!unit) return false;
    for (int t = 0; t < PE_DTYPE__COUNT; t++) code.rows[t] = (pe_range_fn)rows[t];
    code.unit = unit;
    return true;
}

/* Under code.lock, once: from disk (a copy that does not link is removed
 * and compiled again), else compiled and filed. */
static void provide(uint8_t *got)
{
    char err[512] = "";
    size_t size = 0;
    bool disk = pe_diskcache_enabled();
    void *bytes = disk ? pe_diskcache_read(code.disk_name, &size) : NULL;
    if (bytes && link_loops(bytes, size, err, sizeof err)) {
        *got |= PE_GENERATED_LOADED;
    } else if (bytes) {
        pe_log_message(PE_LOG_WARN, "the disk cache's %s %s: compiled again", code.disk_name, err);
        pe_diskcache_remove(code.disk_name);
        free(bytes);
        bytes = NULL;
    }
    if (!code.unit && (bytes = compiled(&size, err, sizeof err)) && link_loops(bytes, size, err, sizeof err)) {
        *got |= PE_GENERATED_COMPILED;
        if (disk) pe_diskcache_write(code.disk_name, bytes, size);
    }
    free(bytes);
    if (!code.unit)
        pe_log_message(PE_LOG_WARN, "pe_spmv's CPU loop was not generated (%s): the interpreter computes spmv", err);
}

static pe_range_fn rows_of(pe_dtype t, uint8_t *got)
{
    if (!pe_dtype_valid(t)) return NULL;
    pthread_mutex_lock(&code.lock);
    if (!code.tried) {
        code.tried = true;
        provide(got);
    }
    pe_range_fn fn = code.rows[t];
    pthread_mutex_unlock(&code.lock);
    return fn;
}

void pe_provision_spmv_start(const char *disk_tag)
{
    if (!pe_host_backend.target->spmv_compile) return; /* the interpreter computes spmv */
    snprintf(code.disk_name, sizeof code.disk_name, "spmv-rows-%s-%08x.so", disk_tag, pe_codegen_build_stamp());
    pe_intrinsics_use_spmv_code(rows_of);
}

void pe_provision_spmv_stop(void)
{
    pe_intrinsics_use_spmv_code(NULL);
    pthread_mutex_lock(&code.lock);
    if (code.unit) dlclose(code.unit);
    code.unit = NULL;
    code.tried = false;
    for (int t = 0; t < PE_DTYPE__COUNT; t++) code.rows[t] = NULL;
    pthread_mutex_unlock(&code.lock);
}
