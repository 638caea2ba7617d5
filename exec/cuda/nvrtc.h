/* nvrtc.h — NVRTC, the CUDA run-time compiler, loaded with dlopen (never
 * linked), so that libpe builds and runs where CUDA is absent.  Compiles
 * CUDA C to a cubin for one architecture or to PTX. */
#ifndef PE_CUDA_NVRTC_H
#define PE_CUDA_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

/* Loads libnvrtc once per process (thread-safe).  False when it cannot;
 * *reason (if given) then says why. */
bool pe_nvrtc_available(const char **reason);
/* NVRTC's version as major * 1000 + minor * 10 (13000 for 13.0), 0 if absent. */
int pe_nvrtc_version(void);

/* Compiles `source` for compute capability `sm` (75, 80, 90, ...): a cubin
 * (ptx false) or PTX text (ptx true).  On success *image (malloc'ed, the
 * caller frees) and *size hold the result; on failure `log` holds NVRTC's
 * message and the compiler log. */
bool pe_nvrtc_compile(const char *source, const char *name, int sm, bool ptx, void **image, size_t *size, char *log,
                      size_t log_size);

#endif
