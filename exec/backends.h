/* backends.h — the registry of backends.  A backend is a folder under exec/
 * (exec/cpu, exec/cuda: its code generator, compiler, target and executor);
 * backends.c is the one file outside those folders that names them.  The
 * rest of PE asks for the host's backend (the CPU, which also runs what no
 * device takes) and the devices' (the GPUs: present or not, it answers). */
#ifndef PE_EXEC_BACKENDS_H
#define PE_EXEC_BACKENDS_H

#include <stdbool.h>

#include "pe.h"
#include "base/executor.h"
#include "../jit/kir/target.h"

typedef struct {
    const char *name;        /* "CPU", "CUDA": in messages ("CUDA device 1") */
    const pe_target *target; /* compiles kernel IR for it (jit/kir/target.h) */
    pe_executor *executor;   /* links and runs that code */
    /* Devices present, started or not (the host: 1). */
    int (*device_count)(void);
    /* What pe_device_info reports of device `device` (< device_count()). */
    void (*device_info)(int device, pe_device_info *out);
    /* Starts the executor: the host's on `n` threads, a device backend's on
     * its device n (more devices: started one by one); false when it
     * cannot (a device backend: quietly, without a device). */
    bool (*start)(int n);
    /* Stops it, with every device it started. */
    void (*stop)(void);
    /* Whether device `device` is started and not given up (pe_set_device
     * starts one that is not); the host answers for its one device. */
    bool (*serves)(int device);
} pe_backend;

extern const pe_backend pe_host_backend;   /* the CPU */
extern const pe_backend pe_device_backend; /* the GPUs */

#endif
