/* libs.h — the host's math libraries (OpenBLAS, LAPACKE, FFTW3), loaded on
 * first use by dlopen of their Debian sonames, not linked: a program that
 * never calls them never loads them (nor starts OpenBLAS's threads).  Each
 * table holds the functions PE calls, typed from the libraries' own headers
 * (which blas.c, lapack.c and fft.c include for types only).  A getter
 * returns the loaded table, or NULL with the reason in `why` — the library
 * and the Debian package to install — for the call's error at the user's
 * line (PE_E_DEVICE).  Thread-safe; a library is tried once per process and
 * never unloaded.  PE_BLAS_LIBRARY, PE_LAPACKE_LIBRARY, PE_FFTW_LIBRARY,
 * PE_FFTWF_LIBRARY, PE_FFTW_THREADS_LIBRARY and PE_FFTWF_THREADS_LIBRARY
 * name another file to load (tests). */
#ifndef PE_EXEC_INTRINSICS_LIBS_H
#define PE_EXEC_INTRINSICS_LIBS_H

#include <cblas.h>
#include <complex.h>
#include <fftw3.h>
#include <lapacke.h>
#include <stdbool.h>
#include <stddef.h>

#define PE_LIB_FN(name) __typeof__(name) *name

/* OpenBLAS (libopenblas.so.0), loaded RTLD_GLOBAL: LAPACKE's LAPACK then
 * binds to OpenBLAS's, as when PE linked both. */
typedef struct {
    PE_LIB_FN(cblas_sgemm);
    PE_LIB_FN(cblas_dgemm);
    PE_LIB_FN(cblas_cgemm);
    PE_LIB_FN(cblas_zgemm);
    PE_LIB_FN(cblas_sgemv);
    PE_LIB_FN(cblas_dgemv);
    PE_LIB_FN(cblas_cgemv);
    PE_LIB_FN(cblas_zgemv);
    PE_LIB_FN(cblas_strmm);
    PE_LIB_FN(cblas_dtrmm);
    PE_LIB_FN(cblas_ctrmm);
    PE_LIB_FN(cblas_ztrmm);
    PE_LIB_FN(openblas_set_num_threads);
} pe_blas_api;

/* LAPACKE (liblapacke.so.3), loaded after OpenBLAS. */
typedef struct {
    PE_LIB_FN(LAPACKE_sgetrf);
    PE_LIB_FN(LAPACKE_dgetrf);
    PE_LIB_FN(LAPACKE_cgetrf);
    PE_LIB_FN(LAPACKE_zgetrf);
    PE_LIB_FN(LAPACKE_sgetrs);
    PE_LIB_FN(LAPACKE_dgetrs);
    PE_LIB_FN(LAPACKE_cgetrs);
    PE_LIB_FN(LAPACKE_zgetrs);
    PE_LIB_FN(LAPACKE_slange);
    PE_LIB_FN(LAPACKE_dlange);
    PE_LIB_FN(LAPACKE_clange);
    PE_LIB_FN(LAPACKE_zlange);
    PE_LIB_FN(LAPACKE_sgecon);
    PE_LIB_FN(LAPACKE_dgecon);
    PE_LIB_FN(LAPACKE_cgecon);
    PE_LIB_FN(LAPACKE_zgecon);
} pe_lapacke_api;

/* One FFTW precision: libfftw3f.so.3 (f32, c64) or libfftw3.so.3 (f64,
 * c128) with its threads library.  One table type for both: plans as void *
 * and the double precision's fftw_iodim64 (fftwf_iodim64 is the same
 * struct, {n, is, os} in ptrdiff_t), arrays as void *: the functions of
 * either precision are called through these types (pointer arguments: the
 * same ABI). */
typedef struct {
    void *(*plan_guru64_dft)(int rank, const fftw_iodim64 *dims, int howmany_rank, const fftw_iodim64 *howmany,
                                 void *in, void *out, int sign, unsigned flags);
    void *(*plan_guru64_dft_r2c)(int rank, const fftw_iodim64 *dims, int howmany_rank,
                                     const fftw_iodim64 *howmany, void *in, void *out, unsigned flags);
    void *(*plan_guru64_dft_c2r)(int rank, const fftw_iodim64 *dims, int howmany_rank,
                                     const fftw_iodim64 *howmany, void *in, void *out, unsigned flags);
    void (*execute_dft)(void *plan, void *in, void *out);
    void (*execute_dft_r2c)(void *plan, void *in, void *out);
    void (*execute_dft_c2r)(void *plan, void *in, void *out);
    char *(*export_wisdom_to_string)(void);
    int (*import_wisdom_from_string)(const char *text);
    int (*alignment_of)(void *p);
    void *(*malloc)(size_t n);
    void (*free)(void *p);
    int (*init_threads)(void);
    void (*plan_with_nthreads)(int n);
} pe_fftw_api;

/* Loaded (NULL: why holds the reason, NUL-terminated within n_why). */
const pe_blas_api *pe_blas(char *why, size_t n_why);
const pe_lapacke_api *pe_lapacke(char *why, size_t n_why); /* loads OpenBLAS first */
enum { PE_FFTW_F32, PE_FFTW_F64 };
const pe_fftw_api *pe_fftw(int precision, char *why, size_t n_why);

/* OpenBLAS's thread count: applied now if it is loaded, else when it is. */
void pe_blas_set_threads(int threads);
#endif
