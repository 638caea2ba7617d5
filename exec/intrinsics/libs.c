/* libs.c — loads the host's math libraries on first use (libs.h): for
 * each, its Debian soname (never the unversioned .so, which only the -dev
 * packages install) or the file its environment variable names, then the
 * functions PE calls by name into the slots of its table; a library is
 * usable only with all of them.  Tried once per process under one mutex
 * (the calls run without the runtime lock), never unloaded (OpenBLAS keeps
 * threads, FFTW plans).  A failure is kept as its reason, which names the
 * Debian package that installs the library. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libs.h"
#include "../base/dynlib.h"

typedef pe_dynlib_slot entry;

typedef struct {
    const char *what;    /* "OpenBLAS" */
    const char *env;     /* PE_BLAS_LIBRARY */
    const char *soname;  /* libopenblas.so.0 */
    const char *package; /* the Debian package that installs it */
    bool global;         /* RTLD_GLOBAL: its symbols bind the libraries loaded after it */
    const entry *entries;
    size_t n_entries;
    void *api;           /* the table filled */
    int state;           /* 0: not tried, 1: loaded, -1: missing */
    char why[320];
} library;

#define SLOT(type, field) {#field, offsetof(type, field)}
#define N_OF(a) (sizeof a / sizeof a[0])

static pe_blas_api blas;
static const entry blas_entries[] = {
    SLOT(pe_blas_api, cblas_sgemm), SLOT(pe_blas_api, cblas_dgemm), SLOT(pe_blas_api, cblas_cgemm),
    SLOT(pe_blas_api, cblas_zgemm), SLOT(pe_blas_api, cblas_sgemv), SLOT(pe_blas_api, cblas_dgemv),
    SLOT(pe_blas_api, cblas_cgemv), SLOT(pe_blas_api, cblas_zgemv), SLOT(pe_blas_api, cblas_strmm),
    SLOT(pe_blas_api, cblas_dtrmm), SLOT(pe_blas_api, cblas_ctrmm), SLOT(pe_blas_api, cblas_ztrmm),
    SLOT(pe_blas_api, openblas_set_num_threads),
};

static pe_lapacke_api lapacke;
static const entry lapacke_entries[] = {
    SLOT(pe_lapacke_api, LAPACKE_sgetrf), SLOT(pe_lapacke_api, LAPACKE_dgetrf), SLOT(pe_lapacke_api, LAPACKE_cgetrf),
    SLOT(pe_lapacke_api, LAPACKE_zgetrf), SLOT(pe_lapacke_api, LAPACKE_sgetrs), SLOT(pe_lapacke_api, LAPACKE_dgetrs),
    SLOT(pe_lapacke_api, LAPACKE_cgetrs), SLOT(pe_lapacke_api, LAPACKE_zgetrs), SLOT(pe_lapacke_api, LAPACKE_slange),
    SLOT(pe_lapacke_api, LAPACKE_dlange), SLOT(pe_lapacke_api, LAPACKE_clange), SLOT(pe_lapacke_api, LAPACKE_zlange),
    SLOT(pe_lapacke_api, LAPACKE_sgecon), SLOT(pe_lapacke_api, LAPACKE_dgecon), SLOT(pe_lapacke_api, LAPACKE_cgecon),
    SLOT(pe_lapacke_api, LAPACKE_zgecon),
};

/* An FFTW function's slot: fftw_<name> or fftwf_<name>. */
#define FFTW_SLOT(P, field) {#P "_" #field, offsetof(pe_fftw_api, field)}
#define FFTW_ENTRIES(P)                                                                                          \
    FFTW_SLOT(P, plan_guru64_dft), FFTW_SLOT(P, plan_guru64_dft_r2c), FFTW_SLOT(P, plan_guru64_dft_c2r),           \
        FFTW_SLOT(P, execute_dft), FFTW_SLOT(P, execute_dft_r2c), FFTW_SLOT(P, execute_dft_c2r),                   \
        FFTW_SLOT(P, export_wisdom_to_string), FFTW_SLOT(P, import_wisdom_from_string), FFTW_SLOT(P, alignment_of), \
        FFTW_SLOT(P, malloc), FFTW_SLOT(P, free)
static pe_fftw_api fftw[2]; /* PE_FFTW_F32, PE_FFTW_F64 */
static const entry fftwf_entries[] = {FFTW_ENTRIES(fftwf)};
static const entry fftw_entries[] = {FFTW_ENTRIES(fftw)};
static const entry fftwf_threads_entries[] = {FFTW_SLOT(fftwf, init_threads), FFTW_SLOT(fftwf, plan_with_nthreads)};
static const entry fftw_threads_entries[] = {FFTW_SLOT(fftw, init_threads), FFTW_SLOT(fftw, plan_with_nthreads)};

enum { LIB_BLAS, LIB_LAPACKE, LIB_FFTWF, LIB_FFTW, LIB_FFTWF_THREADS, LIB_FFTW_THREADS };
static library libraries[] = {
    [LIB_BLAS] = {"OpenBLAS", "PE_BLAS_LIBRARY", "libopenblas.so.0", "libopenblas0", true, blas_entries,
                  N_OF(blas_entries), &blas, 0, ""},
    [LIB_LAPACKE] = {"LAPACKE", "PE_LAPACKE_LIBRARY", "liblapacke.so.3", "liblapacke", false, lapacke_entries,
                     N_OF(lapacke_entries), &lapacke, 0, ""},
    [LIB_FFTWF] = {"FFTW (single precision)", "PE_FFTWF_LIBRARY", "libfftw3f.so.3", "libfftw3-single3", false,
                   fftwf_entries, N_OF(fftwf_entries), &fftw[PE_FFTW_F32], 0, ""},
    [LIB_FFTW] = {"FFTW (double precision)", "PE_FFTW_LIBRARY", "libfftw3.so.3", "libfftw3-double3", false,
                  fftw_entries, N_OF(fftw_entries), &fftw[PE_FFTW_F64], 0, ""},
    [LIB_FFTWF_THREADS] = {"FFTW's threads (single precision)", "PE_FFTWF_THREADS_LIBRARY", "libfftw3f_threads.so.3",
                           "libfftw3-single3", false, fftwf_threads_entries, N_OF(fftwf_threads_entries),
                           &fftw[PE_FFTW_F32], 0, ""},
    [LIB_FFTW_THREADS] = {"FFTW's threads (double precision)", "PE_FFTW_THREADS_LIBRARY", "libfftw3_threads.so.3",
                          "libfftw3-double3", false, fftw_threads_entries, N_OF(fftw_threads_entries),
                          &fftw[PE_FFTW_F64], 0, ""},
};

static pthread_mutex_t loading = PTHREAD_MUTEX_INITIALIZER;
static int blas_threads = 1; /* OpenBLAS's thread count, applied at its load */

/* Loads l (the mutex held); its state says how it went, why the reason. */
static bool load(library *l)
{
    if (l->state) return l->state > 0;
    l->state = -1;
    const char *chosen = getenv(l->env);
    const char *paths[] = {chosen && *chosen ? chosen : l->soname, NULL}, *path, *e;
    void *lib = pe_dynlib_open(paths, l->global, &path, &e);
    if (!lib) {
        snprintf(l->why, sizeof l->why, "%s is not available (%s); install Debian's %s", l->what,
                 e ? e : path, l->package);
        return false;
    }
    const char *missing = pe_dynlib_bind(lib, l->entries, l->n_entries, l->api);
    if (missing) {
        snprintf(l->why, sizeof l->why, "%s (%s) has no %s; install Debian's %s", l->what, path, missing,
                 l->package);
        return false;
    }
    l->state = 1;
    if (l == &libraries[LIB_BLAS]) blas.openblas_set_num_threads(blas_threads);
    return true;
}

/* The table of the libraries `ids` (loaded in order), or NULL with the first failure's reason. */
static const void *loaded(const int *ids, int n, char *why, size_t n_why)
{
    pthread_mutex_lock(&loading);
    const library *failed = NULL;
    for (int i = 0; i < n && !failed; i++)
        if (!load(&libraries[ids[i]])) failed = &libraries[ids[i]];
    if (failed && n_why) snprintf(why, n_why, "%s", failed->why);
    pthread_mutex_unlock(&loading);
    return failed ? NULL : libraries[ids[n - 1]].api;
}

const pe_blas_api *pe_blas(char *why, size_t n_why)
{
    static const int ids[] = {LIB_BLAS};
    return loaded(ids, 1, why, n_why);
}

const pe_lapacke_api *pe_lapacke(char *why, size_t n_why)
{
    static const int ids[] = {LIB_BLAS, LIB_LAPACKE}; /* OpenBLAS first: LAPACKE's LAPACK binds to it */
    return loaded(ids, 2, why, n_why);
}

const pe_fftw_api *pe_fftw(int precision, char *why, size_t n_why)
{
    static const int ids[2][2] = {{LIB_FFTWF, LIB_FFTWF_THREADS}, {LIB_FFTW, LIB_FFTW_THREADS}};
    return precision == PE_FFTW_F32 || precision == PE_FFTW_F64 ? loaded(ids[precision], 2, why, n_why) : NULL;
}

void pe_blas_set_threads(int threads)
{
    pthread_mutex_lock(&loading);
    blas_threads = threads > 0 ? threads : 1;
    if (libraries[LIB_BLAS].state > 0) blas.openblas_set_num_threads(blas_threads);
    pthread_mutex_unlock(&loading);
}
