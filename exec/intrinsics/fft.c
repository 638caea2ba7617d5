/* fft.c — the spectral library calls on FFTW3 (fftw3 for f64/c128, fftw3f
 * for f32/c64): pe_fft / pe_ifft along the last one or two axes, batched
 * over the leading ones, and the FFT path of pe_conv / pe_correlate.
 *
 * Plans: made once per (transform, precision, lengths, batch, alignment,
 * threads) with FFTW_MEASURE (PE_FFTW_PLAN=estimate|measure|patient) on
 * scratch input (planning overwrites its arrays), kept in memory for the
 * process (never destroyed: a plan may be executing on another thread) and
 * executed on each call's own buffers through FFTW's new-array execute.
 * Every size goes through the guru64 interface (64-bit lengths, strides).
 *
 * Wisdom: FFTW's record of the fastest algorithms, per precision, kept in
 * the cache directory as one sealed file each (the disk cache's files,
 * handed in by pe_intrinsics_use_files: this stage cannot call the cache
 * itself), imported before the first plan and exported after a new one.  A
 * file the cache finds corrupt is removed by it with a warning; one whose
 * content FFTW refuses is removed here with a warning: the plans are
 * measured again.
 *
 * Threads: FFTW's own, as many as PE_THREADS (pe_rt.threads): PE's pool
 * waits while a library call runs.
 *
 * Values: NumPy's conventions: fft is sum x_j e^(-2 pi i jk/n), ifft the
 * same with +i, scaled by 1/n (the product of the lengths for two axes).  A
 * real input goes through r2c: half the spectrum, the rest its conjugate
 * mirror (X[n-k] = conj X[k]).  conv_fft pads a and the kernel to fast
 * lengths (2^a 3^b 5^c 7^d at least n + k - 1 along each axis), multiplies
 * their r2c spectra and crops the c2r of the product to "same" (from
 * (k - 1) / 2 on); complex arrays the same through c2c, whole spectra; a
 * correlation convolves with the kernel reversed (and conjugated, as
 * scipy's, a complex kernel). */
#include <complex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intrinsics.h"
#include "../base/error.h"
#include "libs.h"

/* ------------------------------------------------------------ precisions */

/* Each precision's dtypes, wisdom file and library (libs.c: loaded at its
 * first transform; without it the call fails at the user's line, naming
 * the package). */
typedef struct {
    pe_dtype real, cplx;
    const char *name; /* of the wisdom file */
} precision;

static const precision precisions[2] = {
    [PE_FFTW_F32] = {PE_F32, PE_C64, "fftw-wisdom-f32"},
    [PE_FFTW_F64] = {PE_F64, PE_C128, "fftw-wisdom-f64"},
};

static const precision *precision_of(pe_dtype t)
{
    return t == PE_F32 || t == PE_C64 ? &precisions[0] : t == PE_F64 || t == PE_C128 ? &precisions[1] : NULL;
}

/* ------------------------------------------------------- plans and wisdom */

typedef enum { PLAN_C2C_FORWARD, PLAN_C2C_BACKWARD, PLAN_R2C, PLAN_C2R } plan_kind;

typedef struct {
    plan_kind kind;
    int prec, rank, threads;
    bool unaligned;
    int64_t n[2], batch, out_row; /* out_row: a complex row's stored length (r2c into a full spectrum: n[rank-1]) */
} plan_key;

typedef struct {
    plan_key key;
    void *plan;
} cached_plan;

static pthread_mutex_t planner = PTHREAD_MUTEX_INITIALIZER; /* FFTW's planner is not thread-safe */
static cached_plan *plans;
static size_t n_plans;
static bool threads_ready[2], wisdom_loaded[2];
static pe_intrinsic_files files; /* the cache directory's files, or none */

void pe_intrinsics_use_files(const pe_intrinsic_files *f)
{
    pthread_mutex_lock(&planner);
    files = f ? *f : (pe_intrinsic_files){0};
    wisdom_loaded[0] = wisdom_loaded[1] = false; /* another directory: import its wisdom at the next plan */
    pthread_mutex_unlock(&planner);
}

static unsigned rigor(void)
{
    const char *e = getenv("PE_FFTW_PLAN");
    if (e && strcmp(e, "estimate") == 0) return FFTW_ESTIMATE;
    if (e && strcmp(e, "patient") == 0) return FFTW_PATIENT;
    return FFTW_MEASURE;
}

/* The wisdom file (text, NUL-terminated by us): imported once per directory. */
static void load_wisdom(const pe_fftw_api *F, int prec)
{
    wisdom_loaded[prec] = true;
    if (!files.read) return;
    size_t size = 0;
    char *data = files.read(precisions[prec].name, &size);
    if (!data) return; /* none yet, or the cache removed a corrupt one (with its warning) */
    char *text = realloc(data, size + 1);
    if (!text) {
        free(data);
        return;
    }
    text[size] = 0;
    if (!F->import_wisdom_from_string(text)) {
        pe_log_message(PE_LOG_WARN, "FFTW wisdom file %s is not FFTW's wisdom: removed, the plans are measured again",
                       precisions[prec].name);
        if (files.remove) files.remove(precisions[prec].name);
    }
    free(text);
}

static void save_wisdom(const pe_fftw_api *F, int prec)
{
    if (!files.write) return;
    char *text = F->export_wisdom_to_string();
    if (!text) return;
    if (!files.write(precisions[prec].name, text, strlen(text)))
        pe_log_message(PE_LOG_DEBUG, "FFTW wisdom %s could not be written", precisions[prec].name);
    free(text);
}

/* The guru dims of the transformed axes and of the batch, from the key
 * (in: a real or complex row of n[rank-1]; out: of key->out_row, or the
 * half spectrum's). */
static void guru_dims(const plan_key *k, fftw_iodim64 *dims, fftw_iodim64 *batch)
{
    int64_t last = k->n[k->rank - 1], in_row = last, out_row = last;
    if (k->kind == PLAN_R2C) out_row = k->out_row; /* the spectrum's stored row */
    if (k->kind == PLAN_C2R) in_row = k->out_row;
    int64_t in_size = in_row, out_size = out_row;
    dims[k->rank - 1] = (fftw_iodim64){last, 1, 1};
    if (k->rank == 2) {
        dims[0] = (fftw_iodim64){k->n[0], in_row, out_row};
        in_size *= k->n[0], out_size *= k->n[0];
    }
    *batch = (fftw_iodim64){k->batch, in_size, out_size};
}

static size_t elements_in(const plan_key *k, bool input)
{
    fftw_iodim64 dims[2], batch;
    guru_dims(k, dims, &batch);
    return (size_t)(batch.n * (input ? batch.is : batch.os));
}

static bool same_key(const plan_key *a, const plan_key *b)
{
    return a->kind == b->kind && a->prec == b->prec && a->rank == b->rank && a->threads == b->threads &&
           a->unaligned == b->unaligned && a->n[0] == b->n[0] && a->n[1] == b->n[1] && a->batch == b->batch &&
           a->out_row == b->out_row;
}

/* The plan for key, made (on scratch input) if new; NULL when FFTW has none. */
static void *plan_for(const pe_fftw_api *F, const plan_key *key, void *out)
{
    pthread_mutex_lock(&planner);
    for (size_t i = 0; i < n_plans; i++)
        if (same_key(&plans[i].key, key)) {
            void *p = plans[i].plan;
            pthread_mutex_unlock(&planner);
            return p;
        }
    const precision *pr = &precisions[key->prec];
    if (!threads_ready[key->prec]) threads_ready[key->prec] = F->init_threads() != 0;
    if (threads_ready[key->prec]) F->plan_with_nthreads(key->threads);
    if (!wisdom_loaded[key->prec]) load_wisdom(F, key->prec);
    bool complex_in = key->kind != PLAN_R2C;
    size_t scratch_bytes = elements_in(key, true) * pe_dtype_size(complex_in ? pr->cplx : pr->real);
    void *scratch = F->malloc(scratch_bytes ? scratch_bytes : 1);
    void *plan = NULL;
    unsigned flags = rigor() | (key->unaligned ? FFTW_UNALIGNED : 0) | (key->kind == PLAN_C2R ? FFTW_DESTROY_INPUT : 0);
    fftw_iodim64 dims[2], batch;
    guru_dims(key, dims, &batch);
    if (scratch) {
        switch (key->kind) {
        case PLAN_C2C_FORWARD: plan = F->plan_guru64_dft(key->rank, dims, 1, &batch, scratch, out, FFTW_FORWARD, flags); break;
        case PLAN_C2C_BACKWARD: plan = F->plan_guru64_dft(key->rank, dims, 1, &batch, scratch, out, FFTW_BACKWARD, flags); break;
        case PLAN_R2C: plan = F->plan_guru64_dft_r2c(key->rank, dims, 1, &batch, scratch, out, flags); break;
        case PLAN_C2R: plan = F->plan_guru64_dft_c2r(key->rank, dims, 1, &batch, scratch, out, flags); break;
        }
        F->free(scratch);
    }
    cached_plan *grown = plan ? realloc(plans, sizeof *plans * (n_plans + 1)) : NULL;
    if (grown) {
        plans = grown;
        plans[n_plans++] = (cached_plan){*key, plan};
        save_wisdom(F, key->prec);
    }
    pthread_mutex_unlock(&planner);
    return grown ? plan : NULL; /* a plan that could not be kept is leaked rather than destroyed under a caller */
}

/* The precision's FFTW, loaded; or NULL with the call's error (the library and its package). */
static const pe_fftw_api *fftw_of(const precision *pr, pe_intrinsic_args *a)
{
    const pe_fftw_api *F = pe_fftw((int)(pr - precisions), a->why, sizeof a->why);
    if (!F) a->code = PE_E_DEVICE;
    return F;
}

static bool no_plan(pe_intrinsic_args *a, const char *what)
{
    snprintf(a->why, sizeof a->why, "FFTW made no plan for %s (out of memory?)", what);
    a->code = PE_E_NOMEM;
    return false;
}

/* ------------------------------------------------------------ fft, ifft */

/* The transformed lengths (n[0..dims-1]) and the batch of port p's last `dims` axes. */
static int64_t batch_of(const pe_port *p, int dims, int64_t *n)
{
    int64_t line = 1;
    for (int d = 0; d < dims; d++) n[d] = p->shape[p->rank - dims + d], line *= n[d];
    return line ? p->numel / line : 0;
}

bool pe_fft_fits(pe_intrinsic_args *a)
{
    const pe_port *r = a->members[0], *x = a->n_in == 1 ? a->in[0] : NULL;
    int dims = (int)r->param[0];
    if (a->n_members != 1 || !x || (dims != 1 && dims != 2) || x->rank < dims || x->rank != r->rank ||
        x->numel != r->numel || !precision_of((pe_dtype)x->dtype) || r->dtype != pe_dtype_complex_of((pe_dtype)x->dtype))
        return false;
    for (int d = 0; d < r->rank; d++)
        if (x->shape[d] != r->shape[d]) return false;
    return true;
}

bool pe_fft_run(pe_intrinsic_args *a)
{
    const pe_port *r = a->members[0], *x = a->in[0];
    void *out = a->out[0];
    const precision *pr = precision_of((pe_dtype)x->dtype);
    const pe_fftw_api *F = fftw_of(pr, a);
    if (!F) return false;
    if (!out || r->numel == 0) return true;
    bool inverse = r->op == PE_OP_ifft, real = !pe_dtype_is_complex((pe_dtype)x->dtype);
    plan_key key = {.prec = (int)(pr - precisions), .rank = (int)r->param[0], .threads = pe_rt.threads};
    key.batch = batch_of(r, key.rank, key.n);
    key.kind = real ? PLAN_R2C : inverse ? PLAN_C2C_BACKWARD : PLAN_C2C_FORWARD;
    key.out_row = key.n[key.rank - 1];
    key.unaligned = F->alignment_of(x->buf) != 0 || F->alignment_of(out) != 0;
    void *plan = plan_for(F, &key, out);
    if (!plan) return no_plan(a, inverse ? "ifft" : "fft");
    if (real) F->execute_dft_r2c(plan, x->buf, out);
    else F->execute_dft(plan, x->buf, out);
    int64_t rows = key.rank == 2 ? key.n[0] : 1, cols = key.n[key.rank - 1], line = rows * cols;
    double scale = inverse ? 1.0 / (double)line : 1.0;
    bool f32 = pr->real == PE_F32;
    /* a real input: the half spectrum's mirror (X[(R-r)%R][C-c] conjugated), and ifft = conj(fft) / n */
    for (int64_t b = 0; real && b < key.batch; b++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t c = cols / 2 + 1; c < cols; c++) {
                int64_t to = b * line + i * cols + c, from = b * line + ((rows - i) % rows) * cols + (cols - c);
                if (f32) ((float complex *)out)[to] = conjf(((float complex *)out)[from]);
                else ((double complex *)out)[to] = conj(((double complex *)out)[from]);
            }
    if (!inverse) return true;
    for (int64_t i = 0; i < r->numel; i++) {
        if (f32) {
            float complex *v = &((float complex *)out)[i];
            *v = (real ? conjf(*v) : *v) * (float)scale;
        } else {
            double complex *v = &((double complex *)out)[i];
            *v = (real ? conj(*v) : *v) * scale;
        }
    }
    return true;
}

/* --------------------------------------------------------------- conv_fft */

int64_t pe_fft_fast_length(int64_t n)
{
    for (int64_t m = n < 1 ? 1 : n;; m++) {
        int64_t r = m;
        for (int64_t f = 2; f <= 7; f++)
            while (r % f == 0) r /= f;
        if (r == 1) return m;
    }
}

bool pe_conv_fft_fits(pe_intrinsic_args *a)
{
    const pe_port *r = a->members[0];
    if (a->n_members != 1 || a->n_in != 2) return false;
    const pe_port *x = a->in[0], *k = a->in[1];
    int dims = (int)r->param[0];
    if ((dims != 1 && dims != 2) || k->rank != dims || x->rank < dims || x->rank != r->rank || k->numel < 1 ||
        !precision_of((pe_dtype)r->dtype) || x->dtype != r->dtype || k->dtype != r->dtype)
        return false;
    for (int d = 0; d < r->rank; d++)
        if (x->shape[d] != r->shape[d]) return false;
    return true;
}

bool pe_conv_fft_run(pe_intrinsic_args *a)
{
    const pe_port *r = a->members[0], *x = a->in[0], *k = a->in[1];
    void *out = a->out[0];
    const precision *pr = precision_of((pe_dtype)r->dtype);
    const pe_fftw_api *F = fftw_of(pr, a);
    if (!F) return false;
    if (!out || r->numel == 0) return true;
    bool f32 = pr->real == PE_F32, correlate = r->param[1] != 0, cplx = pe_dtype_is_complex((pe_dtype)r->dtype);
    int rank = (int)r->param[0];
    int64_t n[2] = {1, 1}, kn[2] = {1, 1}, len[2] = {1, 1}, off[2] = {0, 0};
    int64_t batch = batch_of(r, rank, n + 2 - rank);
    for (int d = 0; d < rank; d++) kn[2 - rank + d] = k->shape[d];
    for (int d = 2 - rank; d < 2; d++) len[d] = pe_fft_fast_length(n[d] + kn[d] - 1), off[d] = (kn[d] - 1) / 2;
    /* a real array's spectrum is the half r2c keeps; a complex one's all of it (c2c) */
    int64_t half = cplx ? len[1] : len[1] / 2 + 1, padded = len[0] * len[1], spectrum = len[0] * half;
    size_t esz = pe_dtype_size((pe_dtype)r->dtype), csz = pe_dtype_size(pr->cplx);
    /* the spectra of a's rows (batch of them) and of the kernel; a's padded rows, then the product's inverse */
    void *xs = F->malloc(csz * (size_t)(batch * spectrum)), *ks = F->malloc(csz * (size_t)spectrum);
    void *xp = F->malloc(esz * (size_t)(batch * padded)), *kp = F->malloc(esz * (size_t)padded);
    bool ok = xs && ks && xp && kp;
    plan_key fwd = {.kind = cplx ? PLAN_C2C_FORWARD : PLAN_R2C, .prec = (int)(pr - precisions), .rank = rank,
                    .threads = pe_rt.threads, .n = {len[2 - rank], len[1]}, .batch = batch, .out_row = half};
    plan_key kern = fwd, back = fwd;
    kern.batch = 1;
    back.kind = cplx ? PLAN_C2C_BACKWARD : PLAN_C2R;
    void *p_fwd = ok ? plan_for(F, &fwd, xs) : NULL, *p_kern = ok ? plan_for(F, &kern, ks) : NULL;
    void *p_back = ok ? plan_for(F, &back, xp) : NULL; /* planned before the buffers are filled: planning writes them */
    if (!ok || !p_fwd || !p_kern || !p_back) {
        F->free(xs), F->free(ks), F->free(xp), F->free(kp);
        if (ok) return no_plan(a, "a convolution");
        snprintf(a->why, sizeof a->why, "out of memory for a convolution's spectra");
        a->code = PE_E_NOMEM;
        return false;
    }
    memset(xp, 0, esz * (size_t)(batch * padded));
    memset(kp, 0, esz * (size_t)padded);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < n[0]; i++) {
            const char *from = (const char *)x->buf + esz * (size_t)((b * n[0] + i) * n[1]);
            memcpy((char *)xp + esz * (size_t)(b * padded + i * len[1]), from, esz * (size_t)n[1]);
        }
    /* the kernel as convolved: reversed for a correlation (and conjugated, a complex one's) */
    for (int64_t i = 0; i < kn[0]; i++)
        for (int64_t j = 0; j < kn[1]; j++) {
            int64_t src = correlate ? (kn[0] - 1 - i) * kn[1] + (kn[1] - 1 - j) : i * kn[1] + j, dst = i * len[1] + j;
            switch ((pe_dtype)r->dtype) {
            case PE_F32: ((float *)kp)[dst] = ((const float *)k->buf)[src]; break;
            case PE_F64: ((double *)kp)[dst] = ((const double *)k->buf)[src]; break;
            case PE_C64: {
                float complex v = ((const float complex *)k->buf)[src];
                ((float complex *)kp)[dst] = correlate ? conjf(v) : v;
                break;
            }
            default: {
                double complex v = ((const double complex *)k->buf)[src];
                ((double complex *)kp)[dst] = correlate ? conj(v) : v;
                break;
            }
            }
        }
    if (cplx) {
        F->execute_dft(p_kern, kp, ks);
        F->execute_dft(p_fwd, xp, xs);
    } else {
        F->execute_dft_r2c(p_kern, kp, ks);
        F->execute_dft_r2c(p_fwd, xp, xs);
    }
    double scale = 1.0 / (double)padded;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < spectrum; i++) {
            if (f32) ((float complex *)xs)[b * spectrum + i] *= ((float complex *)ks)[i] * (float)scale;
            else ((double complex *)xs)[b * spectrum + i] *= ((double complex *)ks)[i] * scale;
        }
    if (cplx) F->execute_dft(p_back, xs, xp);
    else F->execute_dft_c2r(p_back, xs, xp);
    for (int64_t b = 0; b < batch; b++) /* "same": rows off[0].., columns off[1].. of the full convolution */
        for (int64_t i = 0; i < n[0]; i++) {
            const char *from = (const char *)xp + esz * (size_t)(b * padded + (i + off[0]) * len[1] + off[1]);
            memcpy((char *)out + esz * (size_t)((b * n[0] + i) * n[1]), from, esz * (size_t)n[1]);
        }
    F->free(xs), F->free(ks), F->free(xp), F->free(kp);
    return true;
}
