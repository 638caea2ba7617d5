/* cuda_libs.c — loads the CUDA libraries PE calls (cuda_libs.h): for each,
 * the sonames to try (the environment's path first), and the functions by
 * name into the slots of its API table; a library is usable only with all
 * of them.  Loaded on first use and never unloaded (the libraries keep
 * threads and handlers); a missing one is one warning, the CPU computing
 * what it would. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_libs.h"
#include "../base/dynlib.h"
#include "../base/error.h"
#include "../base/runtime.h"

int pe_cuda_lib_kind(pe_dtype t)
{
    switch (t) {
    case PE_F32: return 0;
    case PE_F64: return 1;
    case PE_C64: return 2;
    case PE_C128: return 3;
    default: return -1;
    }
}

typedef pe_dynlib_slot entry; /* a function's name and its slot in the API table */

typedef struct {
    const char *what;       /* "cuBLAS" */
    const char *env;        /* PE_CUBLAS_LIBRARY */
    const char *sonames[4]; /* tried in order, NULL-ended */
    const char *computes;   /* what the CPU does instead, for the warning */
    const entry *entries;
    size_t n_entries;
    void *api; /* the table filled */
    int state; /* 0: not tried, 1: loaded, -1: missing */
} library;

#define SLOT(type, field, sym) {sym, offsetof(type, field)}
#define KINDS(type, field, s, d, c, z) \
    SLOT(type, field[0], s), SLOT(type, field[1], d), SLOT(type, field[2], c), SLOT(type, field[3], z)

static pe_cublas_api cublas;
static const entry cublas_entries[] = {
    SLOT(pe_cublas_api, create, "cublasCreate_v2"),
    SLOT(pe_cublas_api, destroy, "cublasDestroy_v2"),
    SLOT(pe_cublas_api, set_stream, "cublasSetStream_v2"),
    KINDS(pe_cublas_api, gemm, "cublasSgemm_v2", "cublasDgemm_v2", "cublasCgemm_v2", "cublasZgemm_v2"),
    KINDS(pe_cublas_api, gemv, "cublasSgemv_v2", "cublasDgemv_v2", "cublasCgemv_v2", "cublasZgemv_v2"),
    KINDS(pe_cublas_api, geam, "cublasSgeam", "cublasDgeam", "cublasCgeam", "cublasZgeam"),
    SLOT(pe_cublas_api, scal[0], "cublasSscal_v2"),
    SLOT(pe_cublas_api, scal[1], "cublasDscal_v2"),
    SLOT(pe_cublas_api, copy[0], "cublasScopy_v2"),
    SLOT(pe_cublas_api, copy[1], "cublasDcopy_v2"),
    SLOT(pe_cublas_api, dgmm[0], "cublasCdgmm"),
    SLOT(pe_cublas_api, dgmm[1], "cublasZdgmm"),
};

static pe_cusolver_api cusolver;
static const entry cusolver_entries[] = {
    SLOT(pe_cusolver_api, create, "cusolverDnCreate"),
    SLOT(pe_cusolver_api, destroy, "cusolverDnDestroy"),
    SLOT(pe_cusolver_api, set_stream, "cusolverDnSetStream"),
    KINDS(pe_cusolver_api, getrf_buffer_size, "cusolverDnSgetrf_bufferSize", "cusolverDnDgetrf_bufferSize",
          "cusolverDnCgetrf_bufferSize", "cusolverDnZgetrf_bufferSize"),
    KINDS(pe_cusolver_api, getrf, "cusolverDnSgetrf", "cusolverDnDgetrf", "cusolverDnCgetrf", "cusolverDnZgetrf"),
    KINDS(pe_cusolver_api, getrs, "cusolverDnSgetrs", "cusolverDnDgetrs", "cusolverDnCgetrs", "cusolverDnZgetrs"),
};

/* pe_fft, pe_ifft and conv_fft: plans of rank 1 or 2 and any batch, executed on a stream */
static pe_cufft_api cufft;
static const entry cufft_entries[] = {
    SLOT(pe_cufft_api, plan_many, "cufftPlanMany"), SLOT(pe_cufft_api, set_stream, "cufftSetStream"),
    SLOT(pe_cufft_api, destroy, "cufftDestroy"),    SLOT(pe_cufft_api, exec_c2c, "cufftExecC2C"),
    SLOT(pe_cufft_api, exec_z2z, "cufftExecZ2Z"),   SLOT(pe_cufft_api, exec_r2c, "cufftExecR2C"),
    SLOT(pe_cufft_api, exec_d2z, "cufftExecD2Z"),   SLOT(pe_cufft_api, exec_c2r, "cufftExecC2R"),
    SLOT(pe_cufft_api, exec_z2d, "cufftExecZ2D"),
};

/* pe_spmv on a GPU (cuda_intrinsics.c): the generic SpMV on a CSR matrix and dense vectors */
static pe_cusparse_api cusparse;
static const entry cusparse_entries[] = {
    SLOT(pe_cusparse_api, create, "cusparseCreate"),
    SLOT(pe_cusparse_api, destroy, "cusparseDestroy"),
    SLOT(pe_cusparse_api, set_stream, "cusparseSetStream"),
    SLOT(pe_cusparse_api, create_csr, "cusparseCreateCsr"),
    SLOT(pe_cusparse_api, destroy_sp_mat, "cusparseDestroySpMat"),
    SLOT(pe_cusparse_api, create_dn_vec, "cusparseCreateDnVec"),
    SLOT(pe_cusparse_api, destroy_dn_vec, "cusparseDestroyDnVec"),
    SLOT(pe_cusparse_api, spmv_buffer_size, "cusparseSpMV_bufferSize"),
    SLOT(pe_cusparse_api, spmv, "cusparseSpMV"),
};

#define N_OF(a) (sizeof a / sizeof a[0])
static library libraries[] = {
    {"cuBLAS", "PE_CUBLAS_LIBRARY", {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL},
     "matmul runs on the CPU (OpenBLAS)", cublas_entries, N_OF(cublas_entries), &cublas, 0},
    {"cuSOLVER", "PE_CUSOLVER_LIBRARY", {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so", NULL},
     "the LU family runs on the CPU (LAPACKE)", cusolver_entries, N_OF(cusolver_entries), &cusolver, 0},
    {"cuFFT", "PE_CUFFT_LIBRARY", {"libcufft.so.12", "libcufft.so.11", "libcufft.so", NULL},
     "FFTs run on the CPU", cufft_entries, N_OF(cufft_entries), &cufft, 0},
    {"cuSPARSE", "PE_CUSPARSE_LIBRARY", {"libcusparse.so.12", "libcusparse.so.11", "libcusparse.so", NULL},
     "sparse products run on the CPU", cusparse_entries, N_OF(cusparse_entries), &cusparse, 0},
};

/* Loads it, or says why not in `why`. */
static bool load(library *l, char *why, size_t n_why)
{
    const char *chosen = getenv(l->env);
    const char *given[] = {chosen, NULL}, *path, *e;
    void *lib = pe_dynlib_open(chosen && *chosen ? given : l->sonames, false, &path, &e);
    if (!lib) {
        snprintf(why, n_why, "%s", e ? e : "cannot load it");
        return false;
    }
    const char *missing = pe_dynlib_bind(lib, l->entries, l->n_entries, l->api);
    if (missing) {
        snprintf(why, n_why, "%s has no %s", path, missing);
        return false; /* not closed: a library may not be unloadable once loaded */
    }
    return true;
}

static pthread_mutex_t loading = PTHREAD_MUTEX_INITIALIZER;

static const void *loaded(library *l)
{
    pthread_mutex_lock(&loading); /* the runtime lock is held, but for a benchmark calling directly */
    if (l->state == 0) {
        char why[300];
        l->state = load(l, why, sizeof why) ? 1 : -1;
        if (l->state < 0)
            pe_log_message(PE_LOG_WARN, "%s is not loaded (%s): %s, whatever device the batch was meant for", l->what,
                           why, l->computes);
    }
    pthread_mutex_unlock(&loading);
    return l->state > 0 ? l->api : NULL;
}

const pe_cublas_api *pe_cublas(void) { return loaded(&libraries[0]); }
const pe_cusolver_api *pe_cusolver(void) { return loaded(&libraries[1]); }
const pe_cufft_api *pe_cufft(void) { return loaded(&libraries[2]); }
const pe_cusparse_api *pe_cusparse(void) { return loaded(&libraries[3]); }
