/* ref_fft.h — the reference interpreter's spectral intrinsics (ref_fft.c). */
#ifndef PE_INTERP_REF_FFT_H
#define PE_INTERP_REF_FFT_H

#include "../base/runtime.h"

/* fft, ifft (the direct DFT) or conv_fft (the direct "same" convolution)
 * in long double from the operands' values; false, with why and code, when
 * out of memory. */
bool pe_ref_spectral(pe_port *p, pe_port *const *in, char *why, size_t n_why, pe_status *code);
#endif
