/* device.h — discovery of the processing elements at start-up. */
#ifndef PE_EXEC_DEVICE_H
#define PE_EXEC_DEVICE_H
#include "pe.h"

/* Fills the CPU's description: name, ISA level, memory, hardware threads. */
void pe_detect_cpu(pe_device_info *out);

#endif
