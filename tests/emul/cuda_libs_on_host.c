/* cuda_libs_on_host.c — the cuBLAS, cuSOLVER, cuFFT and cuSPARSE functions
 * PE calls (exec/cuda/cuda_libs.c), emulated on the host over OpenBLAS,
 * LAPACKE and FFTW (cuSPARSE's SpMV: a plain CSR loop), so that the CUDA
 * executor's library calls run and are tested without a GPU:
 * PE_CUBLAS_LIBRARY, PE_CUSOLVER_LIBRARY, PE_CUFFT_LIBRARY and
 * PE_CUSPARSE_LIBRARY=<this library>, with the emulated driver
 * (cuda_driver_on_host.cpp, which this library links).
 *
 * As the real libraries: column-major arrays in device memory (the
 * emulated driver's: host addresses it allocated), each call queued on the
 * handle's stream (it runs there, after the stream's earlier work, with
 * the driver's random pauses), alpha and beta read at the call (host
 * pointer mode), getrf's pivots 1-based and its info in device memory.
 * Each array an argument names is checked to be memory of the stream's
 * device (the driver counts a misuse otherwise, and the call fails).
 * SpMV sums each row in the element type, in column order, as a GPU thread
 * would; like the real library it is given indices PE has checked, and an
 * index outside the arrays (a read the real one would make out of bounds)
 * aborts the process.
 * pe_emul_cuda_library_calls(): calls queued so far (tests assert that the
 * GPU path ran); pe_emul_cuda_libs_refused(): calls refused for their
 * arguments (tests assert none); pe_emul_cuda_libs_fail_next(): the next call returns
 * CUBLAS_STATUS_EXECUTION_FAILED (the executor's fallback to the host). */
#include <cblas.h>
#include <complex.h>
#include <fftw3.h>
#include <pthread.h>
#include <lapacke.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pe_emul_cuda_enqueue(void *stream, void (*fn)(void *), void *arg);
int pe_emul_cuda_check(void *stream, const void *p, size_t bytes);

enum { OK = 0, NOT_INITIALIZED = 1, ALLOC_FAILED = 3, INVALID_VALUE = 7, EXECUTION_FAILED = 13 };

static atomic_long library_calls, refused;
static atomic_bool fail_next;
long pe_emul_cuda_library_calls(void) { return atomic_load(&library_calls); }
/* calls refused for their arguments so far: the executor should make none
 * (a refusal sends the call to the host with a warning, hiding the fault) */
long pe_emul_cuda_libs_refused(void) { return atomic_load(&refused); }
static int refuse(int status)
{
    atomic_fetch_add(&refused, 1);
    return status;
}
void pe_emul_cuda_libs_fail_next(void) { atomic_store(&fail_next, true); }

typedef struct {
    void *stream;
} handle;

static int create(void **h)
{
    handle *x = calloc(1, sizeof *x);
    *h = x;
    return x ? OK : ALLOC_FAILED;
}
static int destroy(void *h) { return free(h), OK; }
static int set_stream(void *h, void *s) { return ((handle *)h)->stream = s, OK; }

int cublasCreate_v2(void **h) { return create(h); }
int cublasDestroy_v2(void *h) { return destroy(h); }
int cublasSetStream_v2(void *h, void *s) { return set_stream(h, s); }
int cusolverDnCreate(void **h) { return create(h); }
int cusolverDnDestroy(void *h) { return destroy(h); }
int cusolverDnSetStream(void *h, void *s) { return set_stream(h, s); }
int cusparseCreate(void **h) { return create(h); }
int cusparseDestroy(void *h) { return destroy(h); }
int cusparseSetStream(void *h, void *s) { return set_stream(h, s); }

/* [p, p + the column-major rows x cols array with leading dimension ld) on the stream's device */
static bool on_device(const handle *h, const void *p, int rows, int cols, int ld, size_t elem)
{
    if (rows <= 0 || cols <= 0) return true;
    return pe_emul_cuda_check(h->stream, p, ((size_t)ld * (size_t)(cols - 1) + (size_t)rows) * elem) == 0;
}

/* One queued call: its arguments copied, run on the stream, then freed. */
typedef struct {
    void (*run)(void *self);
    int kind; /* 0 s, 1 d, 2 c, 3 z */
    int ta, tb, m, n, k, lda, ldb, ldc, incx, incy;
    double complex alpha, beta;
    const void *a, *b;
    void *c, *work;
    int *ipiv, *info;
    int64_t rows, cols, nnz; /* SpMV: the CSR matrix (a its values, b x, c y) */
    const int32_t *row_ptr, *col;
} call;

static void run_and_free(void *self)
{
    call *c = self;
    c->run(c);
    free(c);
}

static int queue(const handle *h, call *c)
{
    if (atomic_exchange(&fail_next, false)) return EXECUTION_FAILED;
    call *q = malloc(sizeof *q);
    if (!q) return ALLOC_FAILED;
    *q = *c;
    if (pe_emul_cuda_enqueue(h->stream, run_and_free, q) != 0) {
        free(q);
        return EXECUTION_FAILED;
    }
    atomic_fetch_add(&library_calls, 1);
    return OK;
}

static size_t elem_of(int kind) { return kind == 0 ? 4 : kind == 3 ? 16 : 8; }
static double complex scalar(int kind, const void *p)
{
    switch (kind) {
    case 0: return *(const float *)p;
    case 1: return *(const double *)p;
    case 2: return *(const float complex *)p;
    default: return *(const double complex *)p;
    }
}
static CBLAS_TRANSPOSE trans(int op) { return op ? CblasTrans : CblasNoTrans; }

static void run_gemm(void *self)
{
    call *c = self;
    float complex fa = (float complex)c->alpha, fb = (float complex)c->beta;
    switch (c->kind) {
    case 0: cblas_sgemm(CblasColMajor, trans(c->ta), trans(c->tb), c->m, c->n, c->k, crealf(fa), c->a, c->lda, c->b, c->ldb, crealf(fb), c->c, c->ldc); break;
    case 1: cblas_dgemm(CblasColMajor, trans(c->ta), trans(c->tb), c->m, c->n, c->k, creal(c->alpha), c->a, c->lda, c->b, c->ldb, creal(c->beta), c->c, c->ldc); break;
    case 2: cblas_cgemm(CblasColMajor, trans(c->ta), trans(c->tb), c->m, c->n, c->k, &fa, c->a, c->lda, c->b, c->ldb, &fb, c->c, c->ldc); break;
    default: cblas_zgemm(CblasColMajor, trans(c->ta), trans(c->tb), c->m, c->n, c->k, &c->alpha, c->a, c->lda, c->b, c->ldb, &c->beta, c->c, c->ldc); break;
    }
}

static int gemm(int kind, void *hv, int ta, int tb, int m, int n, int k, const void *alpha, const void *a, int lda,
                const void *b, int ldb, const void *beta, void *cm, int ldc)
{
    handle *h = hv;
    size_t e = elem_of(kind);
    if (m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1) || lda < ((ta ? k : m) > 1 ? (ta ? k : m) : 1) ||
        ldb < ((tb ? n : k) > 1 ? (tb ? n : k) : 1))
        return refuse(INVALID_VALUE);
    if (!on_device(h, a, ta ? k : m, ta ? m : k, lda, e) || !on_device(h, b, tb ? n : k, tb ? k : n, ldb, e) ||
        !on_device(h, cm, m, n, ldc, e))
        return refuse(INVALID_VALUE);
    call c = {.run = run_gemm, .kind = kind, .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb,
              .ldc = ldc, .alpha = scalar(kind, alpha), .beta = scalar(kind, beta), .a = a, .b = b, .c = cm};
    return queue(h, &c);
}

static void run_gemv(void *self)
{
    call *c = self;
    float complex fa = (float complex)c->alpha, fb = (float complex)c->beta;
    switch (c->kind) {
    case 0: cblas_sgemv(CblasColMajor, trans(c->ta), c->m, c->n, crealf(fa), c->a, c->lda, c->b, c->incx, crealf(fb), c->c, c->incy); break;
    case 1: cblas_dgemv(CblasColMajor, trans(c->ta), c->m, c->n, creal(c->alpha), c->a, c->lda, c->b, c->incx, creal(c->beta), c->c, c->incy); break;
    case 2: cblas_cgemv(CblasColMajor, trans(c->ta), c->m, c->n, &fa, c->a, c->lda, c->b, c->incx, &fb, c->c, c->incy); break;
    default: cblas_zgemv(CblasColMajor, trans(c->ta), c->m, c->n, &c->alpha, c->a, c->lda, c->b, c->incx, &c->beta, c->c, c->incy); break;
    }
}

static int gemv(int kind, void *hv, int t, int m, int n, const void *alpha, const void *a, int lda, const void *x,
                int incx, const void *beta, void *y, int incy)
{
    handle *h = hv;
    size_t e = elem_of(kind);
    int lx = t ? m : n, ly = t ? n : m;
    if (m < 0 || n < 0 || lda < (m > 1 ? m : 1) || incx != 1 || incy != 1) return refuse(INVALID_VALUE); /* PE's unit strides */
    if (!on_device(h, a, m, n, lda, e) || !on_device(h, x, lx, 1, lx, e) || !on_device(h, y, ly, 1, ly, e))
        return refuse(INVALID_VALUE);
    call c = {.run = run_gemv, .kind = kind, .ta = t, .m = m, .n = n, .lda = lda, .incx = incx, .incy = incy,
              .alpha = scalar(kind, alpha), .beta = scalar(kind, beta), .a = a, .b = x, .c = y};
    return queue(h, &c);
}

/* C = alpha op(A) + beta op(B), m x n column-major; B not read where beta is 0 */
#define GEAM_LOOP(T)                                                                                 \
    {                                                                                                \
        const T *A = c->a, *B = c->b;                                                                \
        T *C = c->c, al = (T)c->alpha, be = (T)c->beta;                                              \
        for (int j = 0; j < c->n; j++)                                                               \
            for (int i = 0; i < c->m; i++) {                                                         \
                T x = c->ta ? A[j + (size_t)i * c->lda] : A[i + (size_t)j * c->lda];                 \
                T y = c->beta == 0 ? 0 : c->tb ? B[j + (size_t)i * c->ldb] : B[i + (size_t)j * c->ldb]; \
                C[i + (size_t)j * c->ldc] = al * x + be * y;                                         \
            }                                                                                        \
    }
static void run_geam(void *self)
{
    call *c = self;
    switch (c->kind) {
    case 0: GEAM_LOOP(float) break;
    case 1: GEAM_LOOP(double) break;
    case 2: GEAM_LOOP(float complex) break;
    default: GEAM_LOOP(double complex) break;
    }
}

static int geam(int kind, void *hv, int ta, int tb, int m, int n, const void *alpha, const void *a, int lda,
                const void *beta, const void *b, int ldb, void *cm, int ldc)
{
    handle *h = hv;
    size_t e = elem_of(kind);
    double complex be = scalar(kind, beta);
    if (m < 0 || n < 0 || ldc < (m > 1 ? m : 1) || (cm == a && ta)) return refuse(INVALID_VALUE); /* in place: only untransposed */
    if (!on_device(h, a, ta ? n : m, ta ? m : n, lda, e) || !on_device(h, cm, m, n, ldc, e) ||
        (be != 0 && !on_device(h, b, tb ? n : m, tb ? m : n, ldb, e)))
        return refuse(INVALID_VALUE);
    call c = {.run = run_geam, .kind = kind, .ta = ta, .tb = tb, .m = m, .n = n, .lda = lda, .ldb = ldb, .ldc = ldc,
              .alpha = scalar(kind, alpha), .beta = be, .a = a, .b = b, .c = cm};
    return queue(h, &c);
}

static void run_getrf(void *self)
{
    call *c = self;
    void *a = c->c;
    switch (c->kind) {
    case 0: *c->info = LAPACKE_sgetrf(LAPACK_COL_MAJOR, c->m, c->n, a, c->lda, c->ipiv); break;
    case 1: *c->info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, c->m, c->n, a, c->lda, c->ipiv); break;
    case 2: *c->info = LAPACKE_cgetrf(LAPACK_COL_MAJOR, c->m, c->n, a, c->lda, c->ipiv); break;
    default: *c->info = LAPACKE_zgetrf(LAPACK_COL_MAJOR, c->m, c->n, a, c->lda, c->ipiv); break;
    }
}

static int getrf_buffer_size(int kind, void *hv, int m, int n, void *a, int lda, int *lwork)
{
    (void)kind, (void)hv, (void)a, (void)lda;
    *lwork = m > n ? m : n; /* LAPACK takes none; a workspace PE must allocate and pass */
    return OK;
}

static int getrf(int kind, void *hv, int m, int n, void *a, int lda, void *work, int *ipiv, int *info)
{
    handle *h = hv;
    size_t e = elem_of(kind);
    int lw = m > n ? m : n;
    if (m < 0 || n < 0 || lda < (m > 1 ? m : 1)) return refuse(INVALID_VALUE);
    if (!on_device(h, a, m, n, lda, e) || !on_device(h, work, lw, 1, lw, e) ||
        !on_device(h, ipiv, m < n ? m : n, 1, m, sizeof(int)) || !on_device(h, info, 1, 1, 1, sizeof(int)))
        return refuse(INVALID_VALUE);
    call c = {.run = run_getrf, .kind = kind, .m = m, .n = n, .lda = lda, .c = a, .work = work, .ipiv = ipiv, .info = info};
    return queue(h, &c);
}

static void run_getrs(void *self)
{
    call *c = self;
    char t = c->ta ? 'T' : 'N';
    switch (c->kind) {
    case 0: *c->info = LAPACKE_sgetrs(LAPACK_COL_MAJOR, t, c->n, c->k, c->a, c->lda, c->ipiv, c->c, c->ldb); break;
    case 1: *c->info = LAPACKE_dgetrs(LAPACK_COL_MAJOR, t, c->n, c->k, c->a, c->lda, c->ipiv, c->c, c->ldb); break;
    case 2: *c->info = LAPACKE_cgetrs(LAPACK_COL_MAJOR, t, c->n, c->k, c->a, c->lda, c->ipiv, c->c, c->ldb); break;
    default: *c->info = LAPACKE_zgetrs(LAPACK_COL_MAJOR, t, c->n, c->k, c->a, c->lda, c->ipiv, c->c, c->ldb); break;
    }
}

static int getrs(int kind, void *hv, int t, int n, int nrhs, const void *a, int lda, const int *ipiv, void *b, int ldb,
                 int *info)
{
    handle *h = hv;
    size_t e = elem_of(kind);
    if (n < 0 || nrhs < 0 || lda < (n > 1 ? n : 1) || ldb < (n > 1 ? n : 1) || t > 1) return refuse(INVALID_VALUE);
    if (!on_device(h, a, n, n, lda, e) || !on_device(h, b, n, nrhs, ldb, e) || !on_device(h, ipiv, n, 1, n, sizeof(int)) ||
        !on_device(h, info, 1, 1, 1, sizeof(int)))
        return refuse(INVALID_VALUE);
    call c = {.run = run_getrs, .kind = kind, .ta = t, .n = n, .k = nrhs, .lda = lda, .ldb = ldb, .a = a,
              .ipiv = (int *)ipiv, .c = b, .info = info};
    return queue(h, &c);
}

/* x *= alpha (real rows); y = x (real rows; a negative increment walks
 * from the end, as BLAS defines it); C = diag(x) A (complex rows, the left
 * side: row i of A times x[i]). */
static void run_scal(void *self)
{
    call *c = self;
    for (int i = 0; i < c->n; i++) {
        if (c->kind == 0) ((float *)c->c)[(size_t)i * c->incx] *= (float)creal(c->alpha);
        else ((double *)c->c)[(size_t)i * c->incx] *= creal(c->alpha);
    }
}
static int scal(int kind, void *hv, int n, const void *alpha, void *x, int incx)
{
    handle *h = hv;
    if (n < 0 || incx < 1 || !on_device(h, x, 1, n, incx, elem_of(kind))) return refuse(INVALID_VALUE);
    call c = {.run = run_scal, .kind = kind, .n = n, .incx = incx, .alpha = scalar(kind, alpha), .c = x};
    return queue(h, &c);
}
int cublasSscal_v2(void *h, int n, const void *alpha, void *x, int incx) { return scal(0, h, n, alpha, x, incx); }
int cublasDscal_v2(void *h, int n, const void *alpha, void *x, int incx) { return scal(1, h, n, alpha, x, incx); }

static void run_copy(void *self)
{
    call *c = self;
    size_t e = elem_of(c->kind);
    int64_t from = c->incx < 0 ? (int64_t)(c->n - 1) * -c->incx : 0, to = c->incy < 0 ? (int64_t)(c->n - 1) * -c->incy : 0;
    for (int i = 0; i < c->n; i++, from += c->incx, to += c->incy)
        memcpy((char *)c->c + (size_t)to * e, (const char *)c->a + (size_t)from * e, e);
}
static int copy(int kind, void *hv, int n, const void *x, int incx, void *y, int incy)
{
    handle *h = hv;
    int ax = incx < 0 ? -incx : incx, ay = incy < 0 ? -incy : incy;
    if (n < 0 || !ax || !ay || !on_device(h, x, 1, n, ax, elem_of(kind)) || !on_device(h, y, 1, n, ay, elem_of(kind)))
        return refuse(INVALID_VALUE);
    call c = {.run = run_copy, .kind = kind, .n = n, .incx = incx, .incy = incy, .a = x, .c = y};
    return queue(h, &c);
}
int cublasScopy_v2(void *h, int n, const void *x, int incx, void *y, int incy) { return copy(0, h, n, x, incx, y, incy); }
int cublasDcopy_v2(void *h, int n, const void *x, int incx, void *y, int incy) { return copy(1, h, n, x, incx, y, incy); }

#define DGMM_LOOP(T)                                                                                   \
    {                                                                                                  \
        const T *A = c->a, *X = c->b;                                                                  \
        T *C = c->c;                                                                                   \
        for (int j = 0; j < c->n; j++)                                                                 \
            for (int i = 0; i < c->m; i++)                                                             \
                C[i + (size_t)j * c->ldc] = A[i + (size_t)j * c->lda] * X[(size_t)i * c->incx];      \
    }
static void run_dgmm(void *self)
{
    call *c = self;
    if (c->kind == 2) DGMM_LOOP(float complex)
    else DGMM_LOOP(double complex)
}
static int dgmm(int kind, void *hv, int mode, int m, int n, const void *a, int lda, const void *x, int incx, void *cm,
                int ldc)
{
    handle *h = hv;
    size_t e = elem_of(kind);
    if (mode != 0 || m < 0 || n < 0 || lda < (m > 1 ? m : 1) || ldc < (m > 1 ? m : 1) || incx < 1) /* PE's: the left side */
        return refuse(INVALID_VALUE);
    if (!on_device(h, a, m, n, lda, e) || !on_device(h, x, 1, m, incx, e) || !on_device(h, cm, m, n, ldc, e))
        return refuse(INVALID_VALUE);
    call c = {.run = run_dgmm, .kind = kind, .m = m, .n = n, .lda = lda, .ldc = ldc, .incx = incx, .a = a, .b = x, .c = cm};
    return queue(h, &c);
}
int cublasCdgmm(void *h, int mode, int m, int n, const void *a, int lda, const void *x, int incx, void *c, int ldc)
{
    return dgmm(2, h, mode, m, n, a, lda, x, incx, c, ldc);
}
int cublasZdgmm(void *h, int mode, int m, int n, const void *a, int lda, const void *x, int incx, void *c, int ldc)
{
    return dgmm(3, h, mode, m, n, a, lda, x, incx, c, ldc);
}

/* cuFFT: plans on the basic (packed) layout, as PE makes them, run on the
 * plan's stream by FFTW (its planner made thread-safe: PE's host FFTs plan
 * in the same process); a C2R transform leaves its input scribbled over, as
 * the real one may. */
enum { FFT_R2C = 0x2a, FFT_C2R = 0x2c, FFT_C2C = 0x29, FFT_D2Z = 0x6a, FFT_Z2D = 0x6c, FFT_Z2Z = 0x69 };
typedef struct {
    int type, rank, n[2], batch;
    void *stream;
    bool live;
} fft_plan;
static fft_plan *fft_plans;
static int n_fft_plans;
static pthread_mutex_t fft_lock = PTHREAD_MUTEX_INITIALIZER;

static bool fft_type_known(int t)
{
    return t == FFT_R2C || t == FFT_C2R || t == FFT_C2C || t == FFT_D2Z || t == FFT_Z2D || t == FFT_Z2Z;
}

int cufftPlanMany(int *plan, int rank, int *n, int *inembed, int istride, int idist, int *onembed, int ostride,
                  int odist, int type, int batch)
{
    (void)istride, (void)idist, (void)ostride, (void)odist; /* ignored with no embedding, as cuFFT does */
    if ((rank != 1 && rank != 2) || inembed || onembed || !fft_type_known(type) || batch < 1 || n[0] < 1 ||
        (rank == 2 && n[1] < 1))
        return refuse(4); /* CUFFT_INVALID_VALUE */
    static bool thread_safe;
    pthread_mutex_lock(&fft_lock);
    if (!thread_safe) fftw_make_planner_thread_safe(), fftwf_make_planner_thread_safe(), thread_safe = true;
    fft_plan *grown = realloc(fft_plans, sizeof *fft_plans * (size_t)(n_fft_plans + 1));
    if (grown) {
        fft_plans = grown;
        fft_plans[n_fft_plans] = (fft_plan){type, rank, {n[0], rank == 2 ? n[1] : 1}, batch, NULL, true};
        *plan = n_fft_plans++;
    }
    pthread_mutex_unlock(&fft_lock);
    return grown ? OK : 2; /* CUFFT_ALLOC_FAILED */
}

static fft_plan *fft_plan_of(int plan)
{
    pthread_mutex_lock(&fft_lock);
    fft_plan *p = plan >= 0 && plan < n_fft_plans && fft_plans[plan].live ? &fft_plans[plan] : NULL;
    pthread_mutex_unlock(&fft_lock);
    return p;
}
int cufftSetStream(int plan, void *stream)
{
    fft_plan *p = fft_plan_of(plan);
    return p ? (p->stream = stream, OK) : 1; /* CUFFT_INVALID_PLAN */
}
int cufftDestroy(int plan)
{
    fft_plan *p = fft_plan_of(plan);
    return p ? (p->live = false, OK) : 1;
}

typedef struct {
    void (*run)(void *self);
    fft_plan plan;
    void *in, *out;
    int direction;
} fft_call;

static void run_fft(void *self)
{
    fft_call *f = self;
    const fft_plan *p = &f->plan;
    int line = p->n[0] * p->n[1], half = p->n[p->rank - 1] / 2 + 1, cline = (p->rank == 2 ? p->n[0] : 1) * half;
    bool dbl = p->type == FFT_D2Z || p->type == FFT_Z2D || p->type == FFT_Z2Z;
    int in_dist = p->type == FFT_R2C || p->type == FFT_D2Z ? line : p->type == FFT_C2R || p->type == FFT_Z2D ? cline : line;
    int out_dist = p->type == FFT_R2C || p->type == FFT_D2Z ? cline : line;
    unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
    if (dbl) {
        fftw_plan q = p->type == FFT_Z2Z ? fftw_plan_many_dft(p->rank, p->n, p->batch, f->in, NULL, 1, in_dist, f->out, NULL, 1, out_dist, f->direction, flags)
                      : p->type == FFT_D2Z ? fftw_plan_many_dft_r2c(p->rank, p->n, p->batch, f->in, NULL, 1, in_dist, f->out, NULL, 1, out_dist, flags)
                                           : fftw_plan_many_dft_c2r(p->rank, p->n, p->batch, f->in, NULL, 1, in_dist, f->out, NULL, 1, out_dist, flags);
        if (!q) abort();
        fftw_execute(q);
        fftw_destroy_plan(q);
    } else {
        fftwf_plan q = p->type == FFT_C2C ? fftwf_plan_many_dft(p->rank, p->n, p->batch, f->in, NULL, 1, in_dist, f->out, NULL, 1, out_dist, f->direction, flags)
                       : p->type == FFT_R2C ? fftwf_plan_many_dft_r2c(p->rank, p->n, p->batch, f->in, NULL, 1, in_dist, f->out, NULL, 1, out_dist, flags)
                                            : fftwf_plan_many_dft_c2r(p->rank, p->n, p->batch, f->in, NULL, 1, in_dist, f->out, NULL, 1, out_dist, flags);
        if (!q) abort();
        fftwf_execute(q);
        fftwf_destroy_plan(q);
    }
    free(f);
}

static int fft_exec(int plan, int type, void *in, void *out, int direction)
{
    fft_plan *p = fft_plan_of(plan);
    if (!p) return 1;
    if (p->type != type || (direction != -1 && direction != 1)) return refuse(4);
    handle h = {p->stream}; /* the stream's device: where the arrays must be */
    size_t line = (size_t)p->n[0] * (size_t)p->n[1], half = (size_t)(p->n[p->rank - 1] / 2 + 1);
    size_t cline = (p->rank == 2 ? (size_t)p->n[0] : 1) * half, real = type == FFT_D2Z || type == FFT_Z2D ? 8 : 4;
    size_t in_bytes = (type == FFT_R2C || type == FFT_D2Z ? line * real : type == FFT_C2R || type == FFT_Z2D ? cline * 2 * real : line * 2 * real) * (size_t)p->batch;
    size_t out_bytes = (type == FFT_R2C || type == FFT_D2Z ? cline * 2 * real : type == FFT_C2R || type == FFT_Z2D ? line * real : line * 2 * real) * (size_t)p->batch;
    if (pe_emul_cuda_check(h.stream, in, in_bytes) != 0 || pe_emul_cuda_check(h.stream, out, out_bytes) != 0) return refuse(4);
    if (atomic_exchange(&fail_next, false)) return 5; /* CUFFT_INTERNAL_ERROR */
    fft_call *f = malloc(sizeof *f);
    if (!f) return 2;
    *f = (fft_call){run_fft, *p, in, out, direction};
    if (pe_emul_cuda_enqueue(p->stream, run_fft, f) != 0) {
        free(f);
        return 6; /* CUFFT_EXEC_FAILED */
    }
    atomic_fetch_add(&library_calls, 1);
    return OK;
}
int cufftExecC2C(int plan, void *in, void *out, int direction) { return fft_exec(plan, FFT_C2C, in, out, direction); }
int cufftExecZ2Z(int plan, void *in, void *out, int direction) { return fft_exec(plan, FFT_Z2Z, in, out, direction); }
int cufftExecR2C(int plan, void *in, void *out) { return fft_exec(plan, FFT_R2C, in, out, -1); }
int cufftExecD2Z(int plan, void *in, void *out) { return fft_exec(plan, FFT_D2Z, in, out, -1); }
int cufftExecC2R(int plan, void *in, void *out) { return fft_exec(plan, FFT_C2R, in, out, 1); }
int cufftExecZ2D(int plan, void *in, void *out) { return fft_exec(plan, FFT_Z2D, in, out, 1); }

/* The libraries' names, one per dtype. */
#define ROW(K, k)                                                                                                  \
    int cublas##K##gemm_v2(void *h, int ta, int tb, int m, int n, int kk, const void *al, const void *a, int lda,  \
                           const void *b, int ldb, const void *be, void *c, int ldc)                               \
    {                                                                                                              \
        return gemm(k, h, ta, tb, m, n, kk, al, a, lda, b, ldb, be, c, ldc);                                       \
    }                                                                                                              \
    int cublas##K##gemv_v2(void *h, int t, int m, int n, const void *al, const void *a, int lda, const void *x,    \
                           int incx, const void *be, void *y, int incy)                                            \
    {                                                                                                              \
        return gemv(k, h, t, m, n, al, a, lda, x, incx, be, y, incy);                                              \
    }                                                                                                              \
    int cublas##K##geam(void *h, int ta, int tb, int m, int n, const void *al, const void *a, int lda,             \
                        const void *be, const void *b, int ldb, void *c, int ldc)                                  \
    {                                                                                                              \
        return geam(k, h, ta, tb, m, n, al, a, lda, be, b, ldb, c, ldc);                                           \
    }                                                                                                              \
    int cusolverDn##K##getrf_bufferSize(void *h, int m, int n, void *a, int lda, int *lwork)                       \
    {                                                                                                              \
        return getrf_buffer_size(k, h, m, n, a, lda, lwork);                                                       \
    }                                                                                                              \
    int cusolverDn##K##getrf(void *h, int m, int n, void *a, int lda, void *work, int *ipiv, int *info)            \
    {                                                                                                              \
        return getrf(k, h, m, n, a, lda, work, ipiv, info);                                                        \
    }                                                                                                              \
    int cusolverDn##K##getrs(void *h, int t, int n, int nrhs, const void *a, int lda, const int *ipiv, void *b,    \
                             int ldb, int *info)                                                                   \
    {                                                                                                              \
        return getrs(k, h, t, n, nrhs, a, lda, ipiv, b, ldb, info);                                                \
    }
ROW(S, 0)
ROW(D, 1)
ROW(C, 2)
ROW(Z, 3)

/* cuSPARSE's generic SpMV on a CSR matrix: descriptors are host objects
 * holding device pointers (read at the call: the call copies what it needs,
 * so a descriptor may go once the call is queued). */
enum { INDEX_32I = 2, INDEX_BASE_ZERO = 0, R_32F = 0, R_64F = 1, SPMV_ALG_DEFAULT = 0, SPMV_CSR_ALG1 = 2,
       SPMV_CSR_ALG2 = 3 };
enum { SPMV_WORKSPACE = 256 }; /* bytes of workspace PE must allocate and pass */

typedef struct {
    int64_t rows, cols, nnz;
    const int32_t *row_ptr, *col;
    const void *values;
    int type;
} sp_mat;
typedef struct {
    int64_t size;
    void *values;
    int type;
} dn_vec;

/* [p, p + n elements) on the stream's device */
static bool vector_on_device(const handle *h, const void *p, int64_t n, size_t elem)
{
    return n <= 0 || pe_emul_cuda_check(h->stream, p, (size_t)n * elem) == 0;
}
static bool aligned(const void *p, size_t to) { return (uintptr_t)p % to == 0; }
static size_t real_size(int type) { return type == R_32F ? 4 : 8; }

int cusparseCreateCsr(void **mat, int64_t rows, int64_t cols, int64_t nnz, void *row_ptr, void *col, void *values,
                      int offsets_type, int ind_type, int base, int value_type)
{
    /* what PE passes: 32-bit indices from 0, real values */
    if (rows < 0 || cols < 0 || nnz < 0 || nnz > rows * cols /* the real one's "dimension mismatch" */ || offsets_type != INDEX_32I || ind_type != INDEX_32I ||
        base != INDEX_BASE_ZERO || (value_type != R_32F && value_type != R_64F) || !aligned(row_ptr, 4) ||
        !aligned(col, 4) || !aligned(values, real_size(value_type)))
        return refuse(INVALID_VALUE);
    sp_mat *m = malloc(sizeof *m);
    if (!m) return ALLOC_FAILED;
    *m = (sp_mat){rows, cols, nnz, row_ptr, col, values, value_type};
    *mat = m;
    return OK;
}
int cusparseDestroySpMat(void *mat) { return free(mat), OK; }

int cusparseCreateDnVec(void **vec, int64_t size, void *values, int type)
{
    if (size < 0 || (type != R_32F && type != R_64F) || !aligned(values, real_size(type))) return refuse(INVALID_VALUE);
    dn_vec *v = malloc(sizeof *v);
    if (!v) return ALLOC_FAILED;
    *v = (dn_vec){size, values, type};
    *vec = v;
    return OK;
}
int cusparseDestroyDnVec(void *vec) { return free(vec), OK; }

/* The arguments agree: y = A x with no transpose, one type throughout, sizes that fit. */
static bool spmv_args(int op, const sp_mat *a, const dn_vec *x, const dn_vec *y, int compute_type, int alg)
{
    return a && x && y && op == 0 && (alg == SPMV_ALG_DEFAULT || alg == SPMV_CSR_ALG1 || alg == SPMV_CSR_ALG2) &&
           compute_type == a->type && x->type == a->type && y->type == a->type && x->size == a->cols &&
           y->size == a->rows && a->rows <= INT32_MAX && a->nnz <= INT32_MAX;
}

int cusparseSpMV_bufferSize(void *hv, int op, const void *alpha, void *mat, void *x, const void *beta, void *y,
                            int compute_type, int alg, size_t *bytes)
{
    (void)hv, (void)alpha, (void)beta;
    if (!spmv_args(op, mat, x, y, compute_type, alg) || !bytes) return refuse(INVALID_VALUE);
    *bytes = SPMV_WORKSPACE;
    return OK;
}

/* Each row in the element type, in column order; an index the real
 * library would follow out of its arrays aborts (PE checks them first). */
#define SPMV_LOOP(T)                                                                                             \
    {                                                                                                            \
        const T *v = c->a, *x = c->b;                                                                            \
        T *y = c->c, al = (T)creal(c->alpha), be = (T)creal(c->beta);                                            \
        for (int64_t i = 0; i < c->rows; i++) {                                                                  \
            int32_t lo = c->row_ptr[i], hi = c->row_ptr[i + 1];                                                  \
            if (lo < 0 || lo > hi || hi > c->nnz) bad_index("row_ptr", i + 1, hi);                              \
            T s = 0;                                                                                             \
            for (int32_t k = lo; k < hi; k++) {                                                                  \
                if (c->col[k] < 0 || c->col[k] >= c->cols) bad_index("col_idx", k, c->col[k]);                   \
                s += v[k] * x[c->col[k]];                                                                        \
            }                                                                                                    \
            y[i] = c->beta == 0 ? al * s : al * s + be * y[i]; /* y not read where beta is 0 */                 \
        }                                                                                                        \
    }
static void bad_index(const char *array, int64_t at, int64_t value)
{
    fprintf(stderr, "emulated cuSPARSE: %s[%lld] = %lld reads outside the matrix's arrays (unchecked indices)\n",
            array, (long long)at, (long long)value);
    abort();
}
static void run_spmv(void *self)
{
    call *c = self;
    if (c->row_ptr[0] != 0) bad_index("row_ptr", 0, c->row_ptr[0]);
    if (c->kind == 0) SPMV_LOOP(float)
    else SPMV_LOOP(double)
}

int cusparseSpMV(void *hv, int op, const void *alpha, void *mat, void *xv, const void *beta, void *yv,
                 int compute_type, int alg, void *buffer)
{
    handle *h = hv;
    const sp_mat *a = mat;
    const dn_vec *x = xv, *y = yv;
    if (!spmv_args(op, a, x, y, compute_type, alg)) return refuse(INVALID_VALUE);
    int kind = a->type == R_32F ? 0 : 1;
    size_t e = elem_of(kind);
    if (!vector_on_device(h, a->row_ptr, a->rows + 1, 4) || !vector_on_device(h, a->col, a->nnz, 4) ||
        !vector_on_device(h, a->values, a->nnz, e) || !vector_on_device(h, x->values, x->size, e) ||
        !vector_on_device(h, y->values, y->size, e) || !vector_on_device(h, buffer, SPMV_WORKSPACE, 1))
        return refuse(INVALID_VALUE);
    call c = {.run = run_spmv, .kind = kind, .alpha = scalar(kind, alpha), .beta = scalar(kind, beta), .a = a->values,
              .b = x->values, .c = y->values, .rows = a->rows, .cols = a->cols, .nnz = a->nnz, .row_ptr = a->row_ptr,
              .col = a->col};
    return queue(h, &c);
}
