/* device.h — discovery of the processing elements at start-up. */
#ifndef PE_EXEC_DEVICE_H
#define PE_EXEC_DEVICE_H
#include <stdbool.h>

#include "pe.h"

/* Fills the CPU's description: name, ISA level, memory, hardware threads. */
void pe_detect_cpu(pe_device_info *out);
/* The level the CPU generator targets: the detected one, or PE_CPU_ISA's
 * where that names a level the machine has (warn: log why it does not). */
const char *pe_cpu_isa_capped(const char *detected, bool warn);
/* Bytes of the last-level cache one core sees (0: unknown). */
int64_t pe_cpu_last_level_cache_bytes(void);

#endif
