/** @file pe.h
 * pe.h — the public C API of PE, the progressive-evaluation array runtime.
 *
 * This header implements the contract in docs/api.md; docs/guide.md teaches it, and the
 * HTML reference is generated from these comments (cmake --build build --target docs).
 * Every operation is a macro that records its call site (PE_HERE) and calls a
 * real function pe_<name>_at(const pe_site *site, ...); bindings for other
 * languages call the _at functions with site == NULL.  The macros of calls
 * that take a shape, a start, axes or a buffer are variadic, so that a
 * compound literal passes through whole: pe_fill(PE_F32, 2, (int64_t[]){4, 4},
 * 1.0); a wrong count of arguments is the compiler's error about the _at
 * function.  Nothing is computed
 * when an operation is called: PE records the request and computes it when a
 * result is needed (a read, a map, a hint, pe_flush/pe_sync or a queue limit).
 *
 * Not yet in this version (later work, not declared here so that nothing
 * unfinished links): spmv of complex arrays and with element-wise consumers
 * fused into its loop, a batched (3-d) matmul.
 * Here: matmul, the LU family, fft/ifft, conv/correlate and spmv on the
 * CPU; on a GPU matmul and the LU family (real and complex) on cuBLAS and
 * cuSOLVER, fft/ifft and the FFT path of conv/correlate on cuFFT, spmv on
 * cuSPARSE.
 *
 * Complex dtypes: an element of PE_C64 / PE_C128 is C99's float complex /
 * double complex (real part, then imaginary part) in every host buffer
 * (pe_from_host, pe_adopt, pe_read, pe_map).  Element-wise ops, casts and
 * views of complex values are fused into generated kernels (CPU and CUDA)
 * as pairs of reals, to the interpreter's values (docs/architecture.md);
 * complex sum, mean, dot and vdot are two real reductions there (the
 * part sums, each compensated as the interpreter's double complex sum is
 * part by part); a complex prod is two real reductions too, in polar form
 * (the product of |z| and the sum of arg z, in double), with its own
 * rounding and non-finite values (docs/semantics.md, "Complex numbers").
 *
 * Threading: any number of application threads may call the API at once; a
 * scope belongs to the thread that opened it.
 */
#ifndef PE_H
#define PE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif
/* libpe is built with hidden visibility; what this header declares is its ABI. */
#pragma GCC visibility push(default)

/** The version of this header, "MAJOR.MINOR.PATCH" (pe_version() gives the library's). */
#define PE_VERSION_STRING "0.1.0"
/** The largest rank an array may have; shapes are int64_t, row-major. */
#define PE_MAX_RANK 4

/** @name Types */
///@{

/** Element types: 32- and 64-bit IEEE floats, 32-bit integers, booleans (one byte, 0 or 1, in host
 * buffers), and complex numbers of two f32 (PE_C64) or two f64 (PE_C128), laid out as C99
 * float complex / double complex. */
typedef enum { PE_F32, PE_F64, PE_I32, PE_BOOL, PE_C64, PE_C128 } pe_dtype;

/** An array: an opaque handle; (pe_array){0} is "no array".  Copying the struct copies the handle,
 * not the array (see pe_retain, pe_release, scopes). */
typedef struct { uint64_t h; /**< the handle (opaque) */ } pe_array;
/** A random number generator (pe_rng_create). */
typedef struct { uint64_t h; /**< the handle (opaque) */ } pe_rng;
/** A sparse matrix (pe_csr_create); (pe_csr){0} is "none". */
typedef struct { uint64_t h; /**< the handle (opaque) */ } pe_csr;
/** A scope (pe_scope_begin), for pe_scope_end. */
typedef struct { uint32_t depth; /**< its nesting depth on the thread that opened it */ } pe_scope;

/** A call site.  PE_HERE makes one static object per call site, so each site
 * has one stable address; `rt` belongs to the runtime (it caches the site id). */
typedef struct pe_site {
    const char *file; /**< __FILE__ */
    int line;         /**< __LINE__ */
    const char *func; /**< __func__ */
    void *rt;         /**< the runtime's (zero in a new site) */
} pe_site;

/** The call site of the line it is written on: one static pe_site per site (a GNU statement expression). */
#define PE_HERE                                                                  \
    __extension__({                                                              \
        static pe_site pe__here_site = {__FILE__, __LINE__, __func__, 0};        \
        &pe__here_site;                                                          \
    })

///@}
/** @name Errors */
///@{

/** Status codes: every call that returns an int returns PE_OK or one of these (negative). */
typedef enum {
    PE_OK = 0,         /**< success */
    PE_E_ARG = -1,     /**< bad argument, API misuse (also: call before pe_init) */
    PE_E_SHAPE = -2,   /**< shapes do not broadcast / do not fit */
    PE_E_TYPE = -3,    /**< dtype not allowed here */
    PE_E_HANDLE = -4,  /**< null, stale, released or foreign handle; double release */
    PE_E_NOMEM = -5,   /**< out of memory */
    PE_E_DEVICE = -6,  /**< no such device / device failure */
    PE_E_COMPILE = -7, /**< kernel compilation failed */
    PE_E_INVALID = -8, /**< read of an invalid array: an earlier call failed, its error raised then (an
                          error found only while computing is reported by the read with its own code) */
    PE_E_MACRO = -9,   /**< misuse of a code reuse section (PE_MACRO) */
    PE_E_CHECK = -10,  /**< a value differs from its reference (PE_CHECK) */
    PE_E_IO = -11      /**< a file could not be read or written */
} pe_status;

/** An error, as the handlers see it.  `message` is the whole diagnostic, "FILE:LINE: FUNC: text", where FILE, LINE
 * and FUNC are the user's call site (the same values as the fields).  The
 * default handler prints "pe: " followed by the message and aborts. */
typedef struct {
    pe_status code;      /**< what went wrong */
    const char *message; /**< "FILE:LINE: FUNC: text" */
    const char *file;    /**< the user's call site: file */
    int line;            /**< the user's call site: line */
    const char *func;    /**< the user's call site: function */
} pe_error;

/** An error handler (pe_push_error_handler): returns nonzero when it handled the error and the program
 * continues (the failed call's result is then an invalid array), 0 to pass it to the next handler. */
typedef int (*pe_error_handler)(const pe_error *e, void *user);
/** Pushes h on the handler stack; the newest handler runs first, with `user`.  When
 * no handler handles an error the default one prints "pe: " and the message and aborts. */
void pe_push_error_handler(pe_error_handler h, void *user);
/** Pops the handler pushed last. */
void pe_pop_error_handler(void);
/** The last error raised (NULL before any error). */
const pe_error *pe_last_error(void);
/** The name of a status code ("PE_E_SHAPE", ...). */
const char *pe_status_name(pe_status code);

///@}
/** @name Lifecycle, configuration */
///@{

/** How much PE writes to stderr (PE_LOG): errors, warnings (the default), information, debugging. */
typedef enum { PE_LOG_ERROR, PE_LOG_WARN, PE_LOG_INFO, PE_LOG_DEBUG } pe_log_level;

/** Configuration for pe_init.  Zero fields mean "default, or the PE_* environment variable"
 * (docs/environment.md). */
typedef struct pe_config {
    int device;               /**< 0: auto; otherwise PE_DEVICE numbering + 1 (1 = CPU) */
    int threads;              /**< PE_THREADS */
    const char *cache_dir;    /**< PE_CACHE_DIR */
    int trace_cache_entries;  /**< PE_TRACE_CACHE: program sequences remembered (default 256; negative: off) */
    const char *profile;      /**< PE_PROFILE */
    int log_level;            /**< PE_LOG, as pe_log_level + 1 (0: default warn) */
    int64_t queue_limit;      /**< work-queue entries before an automatic flush (PE_QUEUE_LIMIT) */
    const char *executor;     /**< "jit" (default) or "interp": the reference interpreter (PE_EXECUTOR) */
    const char *check;        /**< "off" (default), "copyout" or "all": values compared with the reference (PE_CHECK) */
    double check_scale;       /**< allowed relative error of f32 and f64 results (PE_CHECK_SCALE; 0: the defaults) */
} pe_config;

/** Starts the runtime.  cfg NULL: defaults, then the PE_* environment; fields of cfg override the
 * environment field by field.  PE_OK or a pe_status. */
int pe_init(const pe_config *cfg);
/** Flushes, waits, frees everything (and writes the profile under PE_PROFILE).  Other threads may be inside the API:
 * calls already inside finish first (a waiting read gets its value); calls
 * that begin while it runs fail with PE_E_INVALID "runtime shut down", and
 * after it, like calls before pe_init, with PE_E_ARG; pe_init starts the
 * runtime again.  A second pe_shutdown meanwhile returns at once. */
void pe_shutdown(void);
/** The library's version, "MAJOR.MINOR.PATCH". */
const char *pe_version(void);

/** The kind of a device. */
typedef enum { PE_DEVICE_CPU = 0, PE_DEVICE_CUDA = 1 } pe_device_kind;
/** A device, as pe_device_info describes it. */
typedef struct {
    pe_device_kind kind;   /**< CPU or CUDA GPU */
    char name[128];        /**< the processor's or the GPU's name */
    char arch[32];         /**< "x86-64-v3", "sm_90", ... */
    uint64_t memory_bytes; /**< host memory (CPU) or device memory (GPU) */
    int cores;             /**< CPU: hardware threads; CUDA: SMs */
} pe_device_info;

/** The number of devices: the CPU is device 0, CUDA devices follow. */
int pe_device_count(void);
int pe_device_info_at(const pe_site *s, int dev, pe_device_info *out);
int pe_set_device_at(const pe_site *s, int dev); /* preferred device for following work; -1 = automatic */
/** pe_device_info(dev, out): fills *out for device dev (0: the CPU; 1..: GPUs).  0 or a pe_status. */
#define pe_device_info(...) pe_device_info_at(PE_HERE, __VA_ARGS__)
/** pe_set_device(dev): the preferred device for the work recorded after it (as pe_device_info numbers it; -1: automatic placement).  0 or a pe_status. */
#define pe_set_device(...) pe_set_device_at(PE_HERE, __VA_ARGS__)

/** Counters of the runtime, for tests and tools (pe_get_stats). */
typedef struct {
    uint64_t ops_recorded;   /**< operation requests made */
    uint64_t ops_folded;     /**< requests answered at record time (constant folding, strength reduction) */
    uint64_t ops_executed;   /**< ports computed by an executor */
    uint64_t ops_interpreted; /**< of those, ports the reference interpreter computed, for any reason (PE_EXECUTOR=interp,
                                 an op no generator emits, a compile failure, out of memory) */
    uint64_t flushes;        /**< times the work queue was processed */
    int64_t queued;          /**< work-queue entries waiting now */
    int64_t live_arrays;     /**< ports alive (referenced by the application or by pending work) */
    int64_t live_bytes;      /**< host bytes held by array buffers */
    uint64_t kernels_compiled;   /**< fused kernels compiled (CPU JIT and NVRTC); spmv's generated CPU loops
                                    count once (one compilation for every dtype, at a run's first spmv) */
    uint64_t kernels_launched;   /**< fused kernel launches (CPU and GPU) */
    uint64_t program_cache_hits; /**< kernels found compiled in memory */
    uint64_t disk_cache_hits;    /**< kernels loaded from the disk cache (PE_CACHE_DIR), spmv's loops as one */
    /* per batch and executor: a batch that automatic placement sends to the
     * CPU is looked up (or generated) for the GPU, then for the CPU */
    uint64_t trace_lookups;      /**< batches looked up in the trace cache */
    uint64_t trace_hits;         /**< batches whose program sequence the trace cache had */
    uint64_t proggen_runs;       /**< batches the program generator turned into program sequences */
    uint64_t gpu_batches;        /**< batches the CUDA executor ran on a GPU */
    uint64_t bytes_to_device;    /**< host-to-GPU copies of array values */
    uint64_t bytes_to_host;      /**< GPU-to-host copies (a GPU result used on the host) */
    uint64_t ir_releases;        /**< operands released at their last use, as pecc's static IR said */
    uint64_t compile_failures;   /**< kernels the compiler rejected (the interpreter computed them) */
    uint64_t reads_in_place;     /**< read results computed straight into the caller's buffer (a value still to be computed) */
    uint64_t batches_run_ahead;  /**< batches the E-scheduler ran before an older one they did not depend on */
    uint64_t aot_kernels_compiled; /**< kernels compiled ahead, on the background thread, from pecc's static IR (PE_AOT) */
    uint64_t aot_kernels_used;     /**< of those, kernels a batch took from the program cache */
    uint64_t bytes_between_devices; /**< copies of array values from one GPU to another */
    uint64_t values_deferred;    /**< values computed in a kernel for its consumers only and not stored
                                    (held, but nothing demanded them): expressions again */
    uint64_t values_recomputed;  /**< deferred values a later batch computed again */
    uint64_t kernel_outputs;     /**< arrays fused kernels wrote, over every launch (a reduction's partials not counted) */
    uint64_t stores_shared;      /**< values a kernel computed twice (equal expressions) and stored once: the
                                    second array shares the first's buffer (a copy where that is the caller's) */
    uint64_t macro_hits;         /**< PE_MACRO executions replayed from the macro cache (the body skipped) */
    uint64_t macro_records;      /**< PE_MACRO executions that ran their body (a miss: recorded, cached unless it failed) */
    uint64_t macro_evictions;    /**< macro cache entries dropped, least recently used first (PE_MACRO_CACHE) */
    uint64_t macro_ops_replayed; /**< operations (and constants) replays made without their body */
    uint64_t library_calls;      /**< intrinsics run as one library call each (matmul with its fused epilogue, LU, spmv) */
    uint64_t generated_library_calls; /**< of those, calls run as code PE generated instead of a library's
                                         (spmv's row loop on the CPU, compiled through libgccjit) */
    uint64_t streaming_launches; /**< CPU kernel launches that stored past the caches (non-temporal stores: outputs
                                    of at least the last-level cache's size, PE_STREAM_BYTES) */
    uint64_t trace_misfits;      /**< trace-cache hits whose program sequence, made in this run for an equal key, did
                                    not fit the batch (every hit is checked): generated again, never run; a defect
                                    in PE (the key missed a fact).  A sequence from disk that does not fit is only
                                    warned about (another build, a changed file) */
} pe_stats;
/** Copies the runtime's counters to *out. */
void pe_get_stats(pe_stats *out);

///@}
/** @name Creation and data movement */
///@{

pe_array pe_from_host_at(const pe_site *s, pe_dtype t, int rank, const int64_t *shape, const void *data);
pe_array pe_adopt_at(const pe_site *s, pe_dtype t, int rank, const int64_t *shape, void *data,
                     void (*free_fn)(void *data, void *ctx), void *ctx);
pe_array pe_f32_1d_at(const pe_site *s, const float *data, int64_t n);
pe_array pe_f64_1d_at(const pe_site *s, const double *data, int64_t n);
pe_array pe_f32_2d_at(const pe_site *s, const float *data, int64_t rows, int64_t cols);
pe_array pe_f64_2d_at(const pe_site *s, const double *data, int64_t rows, int64_t cols);
pe_array pe_scalar_at(const pe_site *s, pe_dtype t, double v);
pe_array pe_fill_at(const pe_site *s, pe_dtype t, int rank, const int64_t *shape, double v);
pe_array pe_index_at(const pe_site *s, pe_dtype t, int rank, const int64_t *shape, int axis);
pe_array pe_identity_at(const pe_site *s, pe_dtype t, int64_t n);

/** pe_from_host(t, rank, shape, data): a new array of dtype t and shape, a copy of the numel elements at data (row-major). */
#define pe_from_host(...) pe_from_host_at(PE_HERE, __VA_ARGS__)
/** pe_adopt(t, rank, shape, data, free_fn, ctx): a new array that takes the buffer data over, no copy; PE calls free_fn(data, ctx) when it no longer needs it. */
#define pe_adopt(...) pe_adopt_at(PE_HERE, __VA_ARGS__)
/** pe_f32_1d(data, n): a copy of n floats, shape [n]. */
#define pe_f32_1d(...) pe_f32_1d_at(PE_HERE, __VA_ARGS__)
/** pe_f64_1d(data, n): a copy of n doubles, shape [n]. */
#define pe_f64_1d(...) pe_f64_1d_at(PE_HERE, __VA_ARGS__)
/** pe_f32_2d(data, rows, cols): a copy of rows x cols floats, row-major. */
#define pe_f32_2d(...) pe_f32_2d_at(PE_HERE, __VA_ARGS__)
/** pe_f64_2d(data, rows, cols): a copy of rows x cols doubles, row-major. */
#define pe_f64_2d(...) pe_f64_2d_at(PE_HERE, __VA_ARGS__)
/** pe_scalar(t, v): a 0-d constant of dtype t (a complex t: v + 0i). */
#define pe_scalar(...) pe_scalar_at(PE_HERE, __VA_ARGS__)
/** pe_fill(t, rank, shape, v): an array of the shape with every element v (a uniform constant: nothing is stored unless read). */
#define pe_fill(...) pe_fill_at(PE_HERE, __VA_ARGS__)
/** pe_index(t, rank, shape, axis): an array of the shape whose elements are their coordinate along axis. */
#define pe_index(...) pe_index_at(PE_HERE, __VA_ARGS__)
/** pe_identity(t, n): the n x n identity matrix. */
#define pe_identity(...) pe_identity_at(PE_HERE, __VA_ARGS__)
/* Complex constants (t: PE_C64 or PE_C128, else PE_E_TYPE); pe_scalar and
 * pe_fill of a complex t give re + 0i.  One with an imaginary part is
 * stored as an array (numel elements): in a PE_MACRO body it is host data
 * (PE_E_MACRO), pass it in as an input. */
pe_array pe_scalar_c_at(const pe_site *s, pe_dtype t, double re, double im);
pe_array pe_fill_c_at(const pe_site *s, pe_dtype t, int rank, const int64_t *shape, double re, double im);
/** pe_scalar_c(t, re, im): a complex 0-d constant re + im i (t: PE_C64 or PE_C128, else PE_E_TYPE). */
#define pe_scalar_c(...) pe_scalar_c_at(PE_HERE, __VA_ARGS__)
/** pe_fill_c(t, rank, shape, re, im): a complex array of the shape, every element re + im i. */
#define pe_fill_c(...) pe_fill_c_at(PE_HERE, __VA_ARGS__)

///@}
/** @name Random numbers
 *
 * Counter-based generators: element i of a generator's k-th draw is a pure
 * function of (kind, seed, k, i) — Philox4x32 on key (seed mod 2^32,
 * seed >> 32) and counter (i mod 2^32, i >> 32, k, 0), i the element's
 * row-major flat index — so a draw is generated inside the kernels that
 * consume it (never stored unless read) and is bitwise the same on the CPU
 * JIT, the interpreter and any thread count (normal draws on a GPU: within
 * an ulp or two of the CPU's, CUDA's log and cos being its own).  Each draw
 * advances the generator by one whatever its shape; 2^32 draws a generator.
 *   PE_RNG_PHILOX  Philox4x32-10 (Random123's, cuRAND's Philox4_32_10 block
 *                  for seed, subsequence k, offset 4i)
 *   PE_RNG_FAST    Philox4x32-7: the same counters, 7 rounds (passes
 *                  BigCrush per Salmon et al. 2011), 30% less work
 * pe_rng_uniform: PE_F32 (w0 >> 8) * 2^-24 and PE_F64 53 bits of (w0, w1)
 * * 2^-53, both in [0, 1); PE_I32: the word w0 as an i32 (every value
 * equally likely: an integer draw).  pe_rng_normal (PE_F32, PE_F64):
 * Box-Muller in double, sqrt(-2 log(1 - u(w0, w1))) * cos(2 pi u(w2, w3)),
 * rounded once to the dtype.  irformat/philox.h holds the definition. */
///@{
/** Generator kinds (above). */
typedef enum { PE_RNG_PHILOX = 1, PE_RNG_FAST = 2 } pe_rng_kind;
pe_rng pe_rng_create_at(const pe_site *s, int kind, uint64_t seed);
void pe_rng_destroy_at(const pe_site *s, pe_rng r);
pe_array pe_rng_uniform_at(const pe_site *s, pe_rng r, pe_dtype t, int rank, const int64_t *shape);
pe_array pe_rng_normal_at(const pe_site *s, pe_rng r, pe_dtype t, int rank, const int64_t *shape);

/** pe_rng_create(kind, seed): a counter-based generator (PE_RNG_PHILOX or PE_RNG_FAST). */
#define pe_rng_create(...) pe_rng_create_at(PE_HERE, __VA_ARGS__)
/** pe_rng_destroy(r): ends the generator; draws already made are not touched, a later use of r is PE_E_HANDLE. */
#define pe_rng_destroy(...) pe_rng_destroy_at(PE_HERE, __VA_ARGS__)
/** pe_rng_uniform(r, t, rank, shape): the next draw of r, uniform in [0, 1) for PE_F32 / PE_F64, a raw 32-bit word for PE_I32. */
#define pe_rng_uniform(...) pe_rng_uniform_at(PE_HERE, __VA_ARGS__)
/** pe_rng_normal(r, t, rank, shape): the next draw of r, standard normal (PE_F32, PE_F64; Box-Muller). */
#define pe_rng_normal(...) pe_rng_normal_at(PE_HERE, __VA_ARGS__)

///@}
/** @name Reading values, queries */
///@{
/* Reads wait for the value.  pe_read copies numel * element-size bytes and
 * needs dst_bytes to be exactly that; PE_BOOL elements are one byte (0 or 1). */
int pe_read_at(const pe_site *s, pe_array a, void *dst, size_t dst_bytes);
/* pe_read, then pe_release (the reference is dropped whatever the read
 * returns, unless the handle itself is bad): the read is a's last use, so
 * a result still to be computed is computed straight into dst, no copy
 * (what pecc's last-use marks give a plain pe_read; NumPy's out=). */
int pe_read_release_at(const pe_site *s, pe_array a, void *dst, size_t dst_bytes);
int pe_read_f32_at(const pe_site *s, pe_array a, float *v);   /* 1-element arrays, any real dtype */
int pe_read_f64_at(const pe_site *s, pe_array a, double *v);
const void *pe_map_at(const pe_site *s, pe_array a);          /* read-only host view until pe_unmap */
void pe_unmap_at(const pe_site *s, pe_array a);
/** pe_read(a, dst, dst_bytes): waits for a's value and copies it to dst; dst_bytes must be numel times the element size (PE_BOOL: one byte).  0 or a negative pe_status. */
#define pe_read(...) pe_read_at(PE_HERE, __VA_ARGS__)
/** pe_read_release(a, dst, dst_bytes): pe_read, then pe_release: a value still to be computed is computed straight into dst, no copy (the reference is dropped whatever the read returns, unless the handle is bad). */
#define pe_read_release(...) pe_read_release_at(PE_HERE, __VA_ARGS__)
/** pe_read_f32(a, &v): the value of a 1-element array of any real dtype, as a float.  0 or a pe_status. */
#define pe_read_f32(...) pe_read_f32_at(PE_HERE, __VA_ARGS__)
/** pe_read_f64(a, &v): the value of a 1-element array of any real dtype, as a double.  0 or a pe_status. */
#define pe_read_f64(...) pe_read_f64_at(PE_HERE, __VA_ARGS__)
/** pe_map(a): waits for a's value and returns a read-only host view of it (no copy), valid until pe_unmap(a); NULL on an error. */
#define pe_map(...) pe_map_at(PE_HERE, __VA_ARGS__)
/** pe_unmap(a): ends the view pe_map gave. */
#define pe_unmap(...) pe_unmap_at(PE_HERE, __VA_ARGS__)

/* Queries answer at once (shapes are known when an operation is recorded). */
pe_dtype pe_dtype_of_at(const pe_site *s, pe_array a);
int pe_rank_at(const pe_site *s, pe_array a);
int64_t pe_dim_at(const pe_site *s, pe_array a, int axis);
int64_t pe_numel_at(const pe_site *s, pe_array a);
/** pe_dtype_of(a): a's dtype, at once (shapes and dtypes are known when an operation is recorded). */
#define pe_dtype_of(...) pe_dtype_of_at(PE_HERE, __VA_ARGS__)
/** pe_rank(a): a's rank, at once. */
#define pe_rank(...) pe_rank_at(PE_HERE, __VA_ARGS__)
/** pe_dim(a, axis): a's extent along axis, at once. */
#define pe_dim(...) pe_dim_at(PE_HERE, __VA_ARGS__)
/** pe_numel(a): a's number of elements, at once. */
#define pe_numel(...) pe_numel_at(PE_HERE, __VA_ARGS__)
/* The whole shape: dims[0..rank) set; returns the rank, -1 if a is invalid. */
int pe_shape_at(const pe_site *s, pe_array a, int64_t dims[PE_MAX_RANK]);
/** pe_shape(a, dims): sets dims[0 .. rank) to a's shape; returns the rank, -1 if a is invalid. */
#define pe_shape(...) pe_shape_at(PE_HERE, __VA_ARGS__)
/* The values as NumPy prints them (nested brackets, one width, rows on lines
 * of their own), summarised past 1000 elements (the first and last 3 of each
 * long axis); f32 with 8 significant digits, f64 with 17, complex as a+bj;
 * a newline after.  Computes what a is (a read). 0 or an error code. */
int pe_print_at(const pe_site *s, FILE *f, pe_array a);
/** pe_print(f, a): writes a's values to f as NumPy prints them (summarised past 1000 elements; f32 with 8 significant digits, f64 with 17, complex as a+bj), a newline after.  Computes a (a read).  0 or a pe_status. */
#define pe_print(...) pe_print_at(PE_HERE, __VA_ARGS__)
/** 1: a is a live, valid array; 0 otherwise (no error raised). */
int pe_is_valid(pe_array a);

///@}
/** @name Lifetime */
///@{

pe_array pe_retain_at(const pe_site *s, pe_array a);   /* another reference (the same handle value) */
void pe_release_at(const pe_site *s, pe_array a);
pe_scope pe_scope_begin_at(const pe_site *s);
void pe_scope_end_at(const pe_site *s, pe_scope sc);    /* releases arrays created in the scope, not kept */
pe_array pe_keep_at(const pe_site *s, pe_array a);     /* moves a to the enclosing scope */
/** pe_retain(a): another reference to a; returns the same handle value. */
#define pe_retain(...) pe_retain_at(PE_HERE, __VA_ARGS__)
/** pe_release(a): drops one reference; the array goes when none is left and no pending work reads it.  Releasing twice is PE_E_HANDLE, never a crash. */
#define pe_release(...) pe_release_at(PE_HERE, __VA_ARGS__)
/** pe_scope_begin(): opens a scope on this thread; the arrays created until its pe_scope_end belong to it. */
#define pe_scope_begin() pe_scope_begin_at(PE_HERE)
/** pe_scope_end(sc): releases every array created in the scope sc and not kept. */
#define pe_scope_end(...) pe_scope_end_at(PE_HERE, __VA_ARGS__)
/** pe_keep(a): moves a's creation reference to the enclosing scope (so pe_scope_end does not release it); returns a. */
#define pe_keep(...) pe_keep_at(PE_HERE, __VA_ARGS__)

///@}
/** @name Element-wise operations
 *
 * Operands may be pe_array or a C scalar (float, double, an integer type,
 * or in C float/double complex), which _Generic wraps as a "weak" 0-d
 * constant: it takes the type of the array operand of the same kind (a
 * double with an f32 array stays f32), a floating scalar with an i32/bool
 * array gives f32, a complex scalar with a real array the complex type of
 * its precision (f64: c128; f32, i32, bool: c64).  Otherwise shapes
 * broadcast as in NumPy and types promote bool < i32 < f32 < f64 < c64 <
 * c128, except that c64 with f64 gives c128 (NumPy's rule).
 * Complex operands (irformat/ops_complex.def): add sub mul div pow neg exp
 * log sqrt conj give the complex type; abs (hypot), arg (atan2(im, re)),
 * real and imag the type of its parts (c64: f32, c128: f64); eq and ne
 * bool (both parts equal); pe_cond selects complex values by a real
 * condition; views take any dtype.  Every other op is PE_E_TYPE at the
 * call.  mul is (ac - bd) + (ad + bc)i, div Smith's algorithm on the
 * divisor scaled by a power of two (C99 Annex G's scaling), both without
 * Annex G's recovery of infinities from NaN parts (but x / 0 is Annex G's
 * infinity): (inf + 0i) * 1 is inf + NaN i, as in NumPy;
 * exp, log, sqrt, pow are C99's cexp, clog, csqrt, cpow (principal
 * branches, the cut of log, sqrt and pow along the negative real axis).
 * Of a real x: conj(x) = real(x) = x, imag(x) = 0, arg(x) = atan2(0, x).
 * A C integer outside i32's range is converted as C converts it where the
 * operation computes in f32/f64, and is PE_E_ARG at the call where it
 * computes in i32 (as a condition, only its truth counts).
 * Result types: arithmetic gives the promoted type, at least i32; functions
 * that are real-valued by nature (exp, log, sin, sqrt, pow, erf, ...) give the
 * promoted type, at least f32; comparisons, logic and tests give PE_BOOL.
 * Integer (i32) arithmetic wraps; division truncates toward zero; x / 0 and
 * x % 0 give 0.  pe_mod is C's fmod (the sign of the dividend).  pe_round
 * rounds half away from zero.  pe_min/pe_max propagate NaN.  pe_cast from a
 * floating type to i32 truncates and saturates (NaN gives 0).
 */
///@{
pe_array pe__weak_f32(float v);
pe_array pe__weak_f64(double v);
pe_array pe__weak_int(long long v);
static inline pe_array pe__as_array(pe_array a) { return a; }
#ifndef __cplusplus
pe_array pe__weak_c64(float _Complex v);
pe_array pe__weak_c128(double _Complex v);
#define PE__ARG_COMPLEX                                                          \
        float _Complex: pe__weak_c64,                                            \
        double _Complex: pe__weak_c128,                                          \
        long double _Complex: pe__weak_c128,
#else
#define PE__ARG_COMPLEX
#endif
/* Called by the constructors pecc adds to a program: the static IR of one
 * translation unit (docs/irformat.md).  Not for direct use. */
void pe__register_ir(const void *blob, unsigned long len);
/** Wraps an operand: a pe_array passes through, a C scalar becomes a weak 0-d constant (see Element-wise operations). */
#define PE_ARG(x)                                                                \
    _Generic((x),                                                                \
        pe_array: pe__as_array,                                                  \
        float: pe__weak_f32,                                                     \
        double: pe__weak_f64,                                                    \
        long double: pe__weak_f64,                                               \
        PE__ARG_COMPLEX                                                          \
        default: pe__weak_int)(x)

#define PE__DECL1(name) pe_array pe_##name##_at(const pe_site *s, pe_array a);
#define PE__DECL2(name) pe_array pe_##name##_at(const pe_site *s, pe_array a, pe_array b);
#define PE__DECL3(name) pe_array pe_##name##_at(const pe_site *s, pe_array a, pe_array b, pe_array c);
#define PE__OP1(name, a) pe_##name##_at(PE_HERE, PE_ARG(a))
#define PE__OP2(name, a, b) pe_##name##_at(PE_HERE, PE_ARG(a), PE_ARG(b))
#define PE__OP3(name, a, b, c) pe_##name##_at(PE_HERE, PE_ARG(a), PE_ARG(b), PE_ARG(c))

/* arithmetic */
PE__DECL2(add) PE__DECL2(sub) PE__DECL2(mul) PE__DECL2(div) PE__DECL2(pow) PE__DECL2(mod)
PE__DECL1(neg) PE__DECL1(abs) PE__DECL1(sign) PE__DECL3(fma) PE__DECL2(min) PE__DECL2(max)
PE__DECL3(clamp)
/** pe_add(a, b): a + b, element-wise. */
#define pe_add(a, b) PE__OP2(add, a, b)
/** pe_sub(a, b): a - b, element-wise. */
#define pe_sub(a, b) PE__OP2(sub, a, b)
/** pe_mul(a, b): a * b, element-wise. */
#define pe_mul(a, b) PE__OP2(mul, a, b)
/** pe_div(a, b): a / b (i32: truncated toward zero; x / 0 gives 0), element-wise. */
#define pe_div(a, b) PE__OP2(div, a, b)
/** pe_pow(a, b): a raised to the power b, element-wise. */
#define pe_pow(a, b) PE__OP2(pow, a, b)
/** pe_mod(a, b): C's fmod(a, b): the sign of the dividend (i32: x % 0 gives 0), element-wise. */
#define pe_mod(a, b) PE__OP2(mod, a, b)
/** pe_neg(a): -a, element-wise. */
#define pe_neg(a) PE__OP1(neg, a)
/** pe_abs(a): |a| (of a complex a: its modulus, real), element-wise. */
#define pe_abs(a) PE__OP1(abs, a)
/** pe_sign(a): -1, 0 or 1 by the sign of a, element-wise. */
#define pe_sign(a) PE__OP1(sign, a)
/** pe_fma(a, b, c): a * b + c with one rounding, element-wise. */
#define pe_fma(a, b, c) PE__OP3(fma, a, b, c)
/** pe_min(a): the smallest element (a 0-d array); pe_min(a, b): the smaller of a and b element-wise.  NaN propagates. */
#define pe_min(...) PE__BY_ARITY(__VA_ARGS__, pe__min_elementwise, pe__min_reduce, _)(__VA_ARGS__)
/** pe_max(a): the largest element (a 0-d array); pe_max(a, b): the larger of a and b element-wise.  NaN propagates. */
#define pe_max(...) PE__BY_ARITY(__VA_ARGS__, pe__max_elementwise, pe__max_reduce, _)(__VA_ARGS__)
/** pe_clamp(x, lo, hi): min(max(x, lo), hi), element-wise. */
#define pe_clamp(x, lo, hi) PE__OP3(clamp, x, lo, hi)

/* exponential and roots */
PE__DECL1(exp) PE__DECL1(exp2) PE__DECL1(exp10) PE__DECL1(expm1) PE__DECL1(log) PE__DECL1(log2)
PE__DECL1(log10) PE__DECL1(log1p) PE__DECL2(logb) PE__DECL1(sqrt) PE__DECL1(rsqrt) PE__DECL1(cbrt)
PE__DECL2(root) PE__DECL1(rcp)
/** pe_exp(a): e^a, element-wise. */
#define pe_exp(a) PE__OP1(exp, a)
/** pe_exp2(a): 2^a, element-wise. */
#define pe_exp2(a) PE__OP1(exp2, a)
/** pe_exp10(a): 10^a, element-wise. */
#define pe_exp10(a) PE__OP1(exp10, a)
/** pe_expm1(a): e^a - 1, accurate near 0, element-wise. */
#define pe_expm1(a) PE__OP1(expm1, a)
/** pe_log(a): natural logarithm, element-wise. */
#define pe_log(a) PE__OP1(log, a)
/** pe_log2(a): base-2 logarithm, element-wise. */
#define pe_log2(a) PE__OP1(log2, a)
/** pe_log10(a): base-10 logarithm, element-wise. */
#define pe_log10(a) PE__OP1(log10, a)
/** pe_log1p(a): log(1 + a), accurate near 0, element-wise. */
#define pe_log1p(a) PE__OP1(log1p, a)
/** pe_logb(x, base): log(x) / log(base), element-wise. */
#define pe_logb(x, base) PE__OP2(logb, x, base)
/** pe_sqrt(a): square root, element-wise. */
#define pe_sqrt(a) PE__OP1(sqrt, a)
/** pe_rsqrt(a): 1 / sqrt(a), element-wise. */
#define pe_rsqrt(a) PE__OP1(rsqrt, a)
/** pe_cbrt(a): cube root, element-wise. */
#define pe_cbrt(a) PE__OP1(cbrt, a)
/** pe_root(x, n): x^(1/n) with 1/n taken exactly (not rounded to the dtype),
 * within 0.501 ulp (f64: 0.001 before the one rounding, so a root that is a
 * double comes out exact, root(64, -3) = 0.25; f32 is computed in double and
 * rounded once); run by the interpreter on every executor (neither code
 * generator emits it).  Values
 * (docs/accuracy.md, "root"): C99 pow(x, 1/n) at the exact exponent, so
 * n = ±inf gives 1 for every x (NaN too), n = ±0 gives pow(x, ±inf) (|x| > 1:
 * +inf / +0; |x| < 1: +0 / +inf; |x| = 1: 1; x = ±0: +0 / +inf; ±inf: +inf /
 * +0), x = 1 gives 1 for every n (NaN too), x = ±0 gives +0 for n > 0 and
 * +inf for n < 0, x = +inf gives +inf / +0; except that
 *   - an odd integer n takes the real root of a negative x: -root(-x, n)
 *     (root(-8, 3) = -2; of -0: -0 for n > 0, -inf for n < 0, as IEEE rootn;
 *     of -inf: -inf / -0);
 *   - a negative x (-inf too) with any other n is NaN, unless 1/n is an
 *     integer (n = ±2^-k, k >= 1: an even power, root(-3, 0.5) = 9) or n is
 *     ±0 or ±inf (above): root(-8, 2), root(-inf, 2), root(-8, 1/3.0) are NaN.
 * A NaN operand gives NaN but for root(1, NaN) = root(NaN, ±inf) = 1. */
#define pe_root(x, n) PE__OP2(root, x, n)
/** pe_rcp(a): 1 / a, element-wise. */
#define pe_rcp(a) PE__OP1(rcp, a)

/* trigonometric */
PE__DECL1(sin) PE__DECL1(cos) PE__DECL1(tan) PE__DECL1(sec) PE__DECL1(csc) PE__DECL1(cot)
PE__DECL1(asin) PE__DECL1(acos) PE__DECL1(atan) PE__DECL1(asec) PE__DECL1(acsc) PE__DECL1(acot)
PE__DECL2(atan2)
/** pe_sin(a): sine, element-wise. */
#define pe_sin(a) PE__OP1(sin, a)
/** pe_cos(a): cosine, element-wise. */
#define pe_cos(a) PE__OP1(cos, a)
/** pe_tan(a): tangent, element-wise. */
#define pe_tan(a) PE__OP1(tan, a)
/** pe_sec(a): secant, 1 / cos(a), element-wise. */
#define pe_sec(a) PE__OP1(sec, a)
/** pe_csc(a): cosecant, 1 / sin(a), element-wise. */
#define pe_csc(a) PE__OP1(csc, a)
/** pe_cot(a): cotangent, 1 / tan(a), element-wise. */
#define pe_cot(a) PE__OP1(cot, a)
/** pe_asin(a): arcsine, element-wise. */
#define pe_asin(a) PE__OP1(asin, a)
/** pe_acos(a): arccosine, element-wise. */
#define pe_acos(a) PE__OP1(acos, a)
/** pe_atan(a): arctangent, element-wise. */
#define pe_atan(a) PE__OP1(atan, a)
/** pe_asec(a): arcsecant, acos(1 / a), element-wise. */
#define pe_asec(a) PE__OP1(asec, a)
/** pe_acsc(a): arccosecant, asin(1 / a), element-wise. */
#define pe_acsc(a) PE__OP1(acsc, a)
/** pe_acot(a): arccotangent, atan(1 / a), element-wise. */
#define pe_acot(a) PE__OP1(acot, a)
/** pe_atan2(y, x): the angle of the point (x, y), C's atan2(y, x), element-wise. */
#define pe_atan2(y, x) PE__OP2(atan2, y, x)

/* hyperbolic */
PE__DECL1(sinh) PE__DECL1(cosh) PE__DECL1(tanh) PE__DECL1(sech) PE__DECL1(csch) PE__DECL1(coth)
PE__DECL1(asinh) PE__DECL1(acosh) PE__DECL1(atanh)
/** pe_sinh(a): hyperbolic sine, element-wise. */
#define pe_sinh(a) PE__OP1(sinh, a)
/** pe_cosh(a): hyperbolic cosine, element-wise. */
#define pe_cosh(a) PE__OP1(cosh, a)
/** pe_tanh(a): hyperbolic tangent, element-wise. */
#define pe_tanh(a) PE__OP1(tanh, a)
/** pe_sech(a): hyperbolic secant, 1 / cosh(a), element-wise. */
#define pe_sech(a) PE__OP1(sech, a)
/** pe_csch(a): hyperbolic cosecant, 1 / sinh(a), element-wise. */
#define pe_csch(a) PE__OP1(csch, a)
/** pe_coth(a): hyperbolic cotangent, 1 / tanh(a), element-wise. */
#define pe_coth(a) PE__OP1(coth, a)
/** pe_asinh(a): inverse hyperbolic sine, element-wise. */
#define pe_asinh(a) PE__OP1(asinh, a)
/** pe_acosh(a): inverse hyperbolic cosine, element-wise. */
#define pe_acosh(a) PE__OP1(acosh, a)
/** pe_atanh(a): inverse hyperbolic tangent, element-wise. */
#define pe_atanh(a) PE__OP1(atanh, a)

/* special */
PE__DECL1(erf) PE__DECL1(erfc) PE__DECL1(cdf_norm)
/** pe_erf(a): the error function, element-wise. */
#define pe_erf(a) PE__OP1(erf, a)
/** pe_erfc(a): the complementary error function, 1 - erf(a), element-wise. */
#define pe_erfc(a) PE__OP1(erfc, a)
/** pe_cdf_norm(a): the standard normal CDF, element-wise. */
#define pe_cdf_norm(a) PE__OP1(cdf_norm, a)

/* rounding and tests */
PE__DECL1(floor) PE__DECL1(ceil) PE__DECL1(trunc) PE__DECL1(round) PE__DECL1(isnan)
PE__DECL1(isinf) PE__DECL1(isfinite)
/** pe_floor(a): rounded toward -inf, element-wise. */
#define pe_floor(a) PE__OP1(floor, a)
/** pe_ceil(a): rounded toward +inf, element-wise. */
#define pe_ceil(a) PE__OP1(ceil, a)
/** pe_trunc(a): rounded toward 0, element-wise. */
#define pe_trunc(a) PE__OP1(trunc, a)
/** pe_round(a): rounded to nearest, half away from zero, element-wise. */
#define pe_round(a) PE__OP1(round, a)
/** pe_isnan(a): a is NaN (PE_BOOL), element-wise. */
#define pe_isnan(a) PE__OP1(isnan, a)
/** pe_isinf(a): a is an infinity (PE_BOOL), element-wise. */
#define pe_isinf(a) PE__OP1(isinf, a)
/** pe_isfinite(a): a is finite (PE_BOOL), element-wise. */
#define pe_isfinite(a) PE__OP1(isfinite, a)

/* logic (operands are true when nonzero) */
PE__DECL2(and) PE__DECL2(or) PE__DECL1(not) PE__DECL2(nand) PE__DECL2(nor) PE__DECL2(xor)
/** pe_and(a, b): a and b (nonzero is true; PE_BOOL), element-wise. */
#define pe_and(a, b) PE__OP2(and, a, b)
/** pe_or(a, b): a or b (PE_BOOL), element-wise. */
#define pe_or(a, b) PE__OP2(or, a, b)
/** pe_not(a): not a (PE_BOOL), element-wise. */
#define pe_not(a) PE__OP1(not, a)
/** pe_nand(a, b): not (a and b) (PE_BOOL), element-wise. */
#define pe_nand(a, b) PE__OP2(nand, a, b)
/** pe_nor(a, b): not (a or b) (PE_BOOL), element-wise. */
#define pe_nor(a, b) PE__OP2(nor, a, b)
/** pe_xor(a, b): a xor b (PE_BOOL), element-wise. */
#define pe_xor(a, b) PE__OP2(xor, a, b)

/* comparison (NaN compares unequal to everything) */
PE__DECL2(lt) PE__DECL2(le) PE__DECL2(gt) PE__DECL2(ge) PE__DECL2(eq) PE__DECL2(ne)
/** pe_lt(a, b): a is less than b (PE_BOOL; NaN compares unequal to everything), element-wise. */
#define pe_lt(a, b) PE__OP2(lt, a, b)
/** pe_le(a, b): a is at most b (PE_BOOL), element-wise. */
#define pe_le(a, b) PE__OP2(le, a, b)
/** pe_gt(a, b): a is greater than b (PE_BOOL), element-wise. */
#define pe_gt(a, b) PE__OP2(gt, a, b)
/** pe_ge(a, b): a is at least b (PE_BOOL), element-wise. */
#define pe_ge(a, b) PE__OP2(ge, a, b)
/** pe_eq(a, b): a equals b (PE_BOOL; complex: both parts), element-wise. */
#define pe_eq(a, b) PE__OP2(eq, a, b)
/** pe_ne(a, b): a differs from b (PE_BOOL), element-wise. */
#define pe_ne(a, b) PE__OP2(ne, a, b)

/* selection and conversion */
PE__DECL3(cond)
pe_array pe_cast_at(const pe_site *s, pe_array a, pe_dtype t);
/** pe_cond(c, a, b): c ? a : b element-wise; the type of a and b promoted, element-wise. */
#define pe_cond(c, a, b) PE__OP3(cond, c, a, b)
/** casts: real to complex gives re + 0i, complex to complex rounds each part;
 * complex to real is PE_E_TYPE (take pe_real or pe_abs: NumPy drops the
 * imaginary part with a warning, PE does not drop it silently) */
#define pe_cast(a, t) pe_cast_at(PE_HERE, PE_ARG(a), (t))

/* complex numbers */
PE__DECL1(conj) PE__DECL1(real) PE__DECL1(imag) PE__DECL1(arg) PE__DECL2(complex)
/** pe_conj(a): the complex conjugate (of a real a: a), element-wise. */
#define pe_conj(a) PE__OP1(conj, a)
/** pe_real(a): the real part (of a real a: a), element-wise. */
#define pe_real(a) PE__OP1(real, a)
/** pe_imag(a): the imaginary part (of a real a: 0), element-wise. */
#define pe_imag(a) PE__OP1(imag, a)
/** pe_arg(a): the argument, atan2(im, re), element-wise. */
#define pe_arg(a) PE__OP1(arg, a)
/** re + im i from real operands (broadcast): c128 from f64, else c64 */
#define pe_complex(re, im) PE__OP2(complex, re, im)

///@}
/** @name Reductions
 *
 * pe_X(a) reduces all elements to a 0-d array; pe_X_axis(a, axis) removes the
 * axis (negative axes count from the end).  Results are deterministic: the
 * same input gives bitwise the same result, whatever the thread count.
 * sum/prod: promoted type, at least i32.  max/min: the input type (NaN
 * propagates).  Of complex arrays: sum, prod, mean, pe_dot and pe_vdot
 * (complex results; sums compensated part by part, prod in polar form:
 * prod |z| times cis(sum arg z), in double); the others are
 * PE_E_TYPE.  mean/var/stddev (population, ddof = 0) and the norms: at least
 * f32.  any/all: PE_BOOL.  argmax/argmin: PE_I32 — the flat row-major index
 * for the full reduction, the index along the axis for _axis; the first
 * occurrence wins and a NaN counts as the extreme.  max/min/argmax/argmin of
 * an empty extent is a PE_E_SHAPE error; the sum of nothing is 0, the product
 * 1, the mean NaN.
 */
///@{
#define PE__DECLR(name)                                             \
    pe_array pe_##name##_at(const pe_site *s, pe_array a);          \
    pe_array pe_##name##_axis_at(const pe_site *s, pe_array a, int axis);
PE__DECLR(sum) PE__DECLR(prod) PE__DECLR(mean) PE__DECLR(var)
PE__DECLR(stddev) PE__DECLR(any) PE__DECLR(all) PE__DECLR(argmax) PE__DECLR(argmin)
PE__DECLR(norm1) PE__DECLR(norm2) PE__DECLR(norminf)
/** pe_sum(a): the sum of all elements, a 0-d array (promoted type, at least i32). */
#define pe_sum(...) pe_sum_at(PE_HERE, __VA_ARGS__)
/** pe_sum_axis(a, axis): the sums along axis, the axis removed. */
#define pe_sum_axis(...) pe_sum_axis_at(PE_HERE, __VA_ARGS__)
/* pe_max(a) / pe_min(a) reduce; pe_max(a, b) / pe_min(a, b) are element-wise. */
pe_array pe_max_reduce_at(const pe_site *s, pe_array a);
pe_array pe_min_reduce_at(const pe_site *s, pe_array a);
pe_array pe_max_reduce_axis_at(const pe_site *s, pe_array a, int axis);
pe_array pe_min_reduce_axis_at(const pe_site *s, pe_array a, int axis);
#define PE__BY_ARITY(_1, _2, NAME, ...) NAME
#define pe__max_reduce(...) pe_max_reduce_at(PE_HERE, __VA_ARGS__)
#define pe__min_reduce(...) pe_min_reduce_at(PE_HERE, __VA_ARGS__)
#define pe__max_elementwise(a, b) PE__OP2(max, a, b)
#define pe__min_elementwise(a, b) PE__OP2(min, a, b)
/** pe_max_axis(a, axis): the largest element along axis (NaN propagates). */
#define pe_max_axis(...) pe_max_reduce_axis_at(PE_HERE, __VA_ARGS__)
/** pe_min_axis(a, axis): the smallest element along axis (NaN propagates). */
#define pe_min_axis(...) pe_min_reduce_axis_at(PE_HERE, __VA_ARGS__)
/** pe_prod(a): the product of all elements (complex: in polar form). */
#define pe_prod(...) pe_prod_at(PE_HERE, __VA_ARGS__)
/** pe_prod_axis(a, axis): the products along axis. */
#define pe_prod_axis(...) pe_prod_axis_at(PE_HERE, __VA_ARGS__)
/** pe_mean(a): the mean of all elements (at least f32; of nothing NaN). */
#define pe_mean(...) pe_mean_at(PE_HERE, __VA_ARGS__)
/** pe_mean_axis(a, axis): the means along axis. */
#define pe_mean_axis(...) pe_mean_axis_at(PE_HERE, __VA_ARGS__)
/** pe_var(a): the population variance (ddof = 0) of all elements. */
#define pe_var(...) pe_var_at(PE_HERE, __VA_ARGS__)
/** pe_var_axis(a, axis): the population variances along axis. */
#define pe_var_axis(...) pe_var_axis_at(PE_HERE, __VA_ARGS__)
/** pe_stddev(a): the population standard deviation of all elements. */
#define pe_stddev(...) pe_stddev_at(PE_HERE, __VA_ARGS__)
/** pe_stddev_axis(a, axis): the population standard deviations along axis. */
#define pe_stddev_axis(...) pe_stddev_axis_at(PE_HERE, __VA_ARGS__)
/** pe_any(a): whether any element is nonzero (PE_BOOL). */
#define pe_any(...) pe_any_at(PE_HERE, __VA_ARGS__)
/** pe_any_axis(a, axis): any along axis. */
#define pe_any_axis(...) pe_any_axis_at(PE_HERE, __VA_ARGS__)
/** pe_all(a): whether every element is nonzero (PE_BOOL). */
#define pe_all(...) pe_all_at(PE_HERE, __VA_ARGS__)
/** pe_all_axis(a, axis): all along axis. */
#define pe_all_axis(...) pe_all_axis_at(PE_HERE, __VA_ARGS__)
/** pe_argmax(a): the flat row-major index of the largest element (PE_I32; the first wins, NaN counts as the largest). */
#define pe_argmax(...) pe_argmax_at(PE_HERE, __VA_ARGS__)
/** pe_argmax_axis(a, axis): the index along axis of the largest element. */
#define pe_argmax_axis(...) pe_argmax_axis_at(PE_HERE, __VA_ARGS__)
/** pe_argmin(a): the flat row-major index of the smallest element (PE_I32; the first wins, NaN counts as the smallest). */
#define pe_argmin(...) pe_argmin_at(PE_HERE, __VA_ARGS__)
/** pe_argmin_axis(a, axis): the index along axis of the smallest element. */
#define pe_argmin_axis(...) pe_argmin_axis_at(PE_HERE, __VA_ARGS__)
/** pe_norm1(a): the sum of |a|. */
#define pe_norm1(...) pe_norm1_at(PE_HERE, __VA_ARGS__)
/** pe_norm1_axis(a, axis): norm1 along axis. */
#define pe_norm1_axis(...) pe_norm1_axis_at(PE_HERE, __VA_ARGS__)
/** pe_norm2(a): the Euclidean norm, sqrt of the sum of a^2. */
#define pe_norm2(...) pe_norm2_at(PE_HERE, __VA_ARGS__)
/** pe_norm2_axis(a, axis): norm2 along axis. */
#define pe_norm2_axis(...) pe_norm2_axis_at(PE_HERE, __VA_ARGS__)
/** pe_norminf(a): the largest |a|. */
#define pe_norminf(...) pe_norminf_at(PE_HERE, __VA_ARGS__)
/** pe_norminf_axis(a, axis): norminf along axis. */
#define pe_norminf_axis(...) pe_norminf_axis_at(PE_HERE, __VA_ARGS__)
/* pe_dot: the sum of a * b over all elements (shapes broadcast); 1-d · 1-d is the dot product.
 * Complex operands are not conjugated (NumPy's dot); pe_vdot is the sum of conj(a) * b (NumPy's
 * vdot, the inner product of C^n; of real operands the same as pe_dot). */
pe_array pe_dot_at(const pe_site *s, pe_array a, pe_array b);
pe_array pe_vdot_at(const pe_site *s, pe_array a, pe_array b);
/** pe_dot(a, b): the sum of a * b over all elements (shapes broadcast); complex operands not conjugated (NumPy's dot). */
#define pe_dot(a, b) pe_dot_at(PE_HERE, PE_ARG(a), PE_ARG(b))
/** pe_vdot(a, b): the sum of conj(a) * b (NumPy's vdot); of real operands pe_dot. */
#define pe_vdot(a, b) pe_vdot_at(PE_HERE, PE_ARG(a), PE_ARG(b))

/* Composed functions, recorded as the operations they are made of
 * (jit/api/api_compose.c), of real arrays (i32 and bool as f64; complex:
 * PE_E_TYPE):
 * pe_sigmoid: 1 / (1 + exp(-a)), 0 and 1 at the far ends, never NaN for a number.
 * pe_softmax: exp(a - max) / its sum along `axis` (SciPy's: no overflow).
 * pe_logsumexp: log(sum(exp(a))) along `axis`, the axis removed, computed as
 *   m + log(sum(exp(a - m))) with m the largest element where finite (else
 *   0): logsumexp of [1000, 1000] is 1000 + log 2; of all -inf, -inf. */
pe_array pe_sigmoid_at(const pe_site *s, pe_array a);
pe_array pe_softmax_at(const pe_site *s, pe_array a, int axis);
pe_array pe_logsumexp_at(const pe_site *s, pe_array a, int axis);
/** pe_sigmoid(a): 1 / (1 + exp(-a)), 0 and 1 at the far ends, never NaN for a number. */
#define pe_sigmoid(a) pe_sigmoid_at(PE_HERE, PE_ARG(a))
/** pe_softmax(a, axis): exp(a - max) / its sum along axis (no overflow). */
#define pe_softmax(...) pe_softmax_at(PE_HERE, __VA_ARGS__)
/** pe_logsumexp(a, axis): log(sum(exp(a))) along axis, the axis removed, max-subtracted (of [1000, 1000]: 1000 + log 2). */
#define pe_logsumexp(...) pe_logsumexp_at(PE_HERE, __VA_ARGS__)

///@}
/** @name Views and data movement
 * Views are copies in value semantics: the source array is never modified. */
///@{
pe_array pe_reshape_at(const pe_site *s, pe_array a, int rank, const int64_t *shape); /* one -1 is inferred */
pe_array pe_transpose_at(const pe_site *s, pe_array a);                            /* 2-d (0-d, 1-d: unchanged) */
pe_array pe_slice_at(const pe_site *s, pe_array a, const int64_t *start, const int64_t *count);
pe_array pe_periodic_at(const pe_site *s, pe_array a, int rank, const int64_t *shape);
pe_array pe_spread_at(const pe_site *s, pe_array a, int axis, int64_t n);
pe_array pe_gather_at(const pe_site *s, pe_array a, pe_array index);
pe_array pe_concat_at(const pe_site *s, pe_array a, pe_array b, int axis);
/* elements start[d] + k * step[d] for k < count[d]; a step may be negative (start is then the last
 * element's index along the axis, walked backwards); every element named must exist */
pe_array pe_slice_step_at(const pe_site *s, pe_array a, const int64_t *start, const int64_t *count, const int64_t *step);
/* any rank: axis d of the result is axis axes[d] of a (axes: a permutation of 0..rank-1) */
pe_array pe_permute_at(const pe_site *s, pe_array a, const int *axes);
/** pe_reshape(a, rank, shape): a's elements in row-major order under a new shape (one -1 extent is inferred). */
#define pe_reshape(...) pe_reshape_at(PE_HERE, __VA_ARGS__)
/** pe_transpose(a): a 2-d array transposed (0-d and 1-d: unchanged). */
#define pe_transpose(...) pe_transpose_at(PE_HERE, __VA_ARGS__)
/** pe_slice(a, start, count): the block of count[d] elements from start[d] along each axis d. */
#define pe_slice(...) pe_slice_at(PE_HERE, __VA_ARGS__)
/** pe_periodic(a, rank, shape): a tiled periodically to the shape. */
#define pe_periodic(...) pe_periodic_at(PE_HERE, __VA_ARGS__)
/** pe_spread: if a's axis `axis` has size 1 it is replicated n times; otherwise
 * (or when axis == rank) a new axis of size n is inserted at `axis`. */
#define pe_spread(...) pe_spread_at(PE_HERE, __VA_ARGS__)
/** pe_gather: result[i] = a.flat[index[i]]; shape of index, dtype of a.  An
 * index out of range makes the result invalid, with a PE_E_ARG error at read. */
#define pe_gather(...) pe_gather_at(PE_HERE, __VA_ARGS__)
/** pe_concat(a, b, axis): a then b along axis. */
#define pe_concat(...) pe_concat_at(PE_HERE, __VA_ARGS__)
/** pe_slice_step(a, start, count, step): elements start[d] + k * step[d] for k below count[d]; a negative step walks backwards from start (the last element's index); every element named must exist. */
#define pe_slice_step(...) pe_slice_step_at(PE_HERE, __VA_ARGS__)
/** pe_permute(a, axes): axis d of the result is axis axes[d] of a (axes: a permutation of 0 .. rank-1). */
#define pe_permute(...) pe_permute_at(PE_HERE, __VA_ARGS__)

/* Shape helpers (views, fused where read) and generators, recorded as the
 * operations they are made of (jit/api/api_compose.c).
 * pe_expand_dims: a size-1 axis inserted at `axis` (-rank-1 .. rank): keepdims.
 * pe_roll: NumPy's roll along one axis, result[i] = a[(i - shift) mod n].
 * pe_arange: NumPy's arange, start + i * step (in double) for
 *   i < ceil((stop - start) / step), as t (f32, f64, i32).
 * pe_linspace: n values from lo to hi, both included (the last exactly hi).
 * pe_pad: `before` and `after` elements added along `axis` by NumPy's mode:
 *   CONSTANT (value), EDGE (the end element repeated), WRAP (the other end's),
 *   REFLECT (mirrored at the end element, which is not repeated: at most the
 *   axis length less one on each side).
 * pe_slice_update: a copy of a whose block at start (of v's shape) is v (as
 *   a's dtype): a select between a and v padded to a's shape, fused where read. */
/** pe_pad's modes (NumPy's): constant, edge, wrap, reflect. */
typedef enum { PE_PAD_CONSTANT, PE_PAD_EDGE, PE_PAD_WRAP, PE_PAD_REFLECT } pe_pad_mode;
pe_array pe_expand_dims_at(const pe_site *s, pe_array a, int axis);
pe_array pe_roll_at(const pe_site *s, pe_array a, int64_t shift, int axis);
pe_array pe_arange_at(const pe_site *s, pe_dtype t, double start, double stop, double step);
pe_array pe_linspace_at(const pe_site *s, pe_dtype t, double lo, double hi, int64_t n);
pe_array pe_pad_at(const pe_site *s, pe_array a, int axis, int64_t before, int64_t after, pe_pad_mode mode, double value);
pe_array pe_slice_update_at(const pe_site *s, pe_array a, pe_array v, const int64_t *start);
/** pe_pad(a, axis, before, after, mode, value): before and after elements added along axis by the pe_pad_mode (value: PE_PAD_CONSTANT's). */
#define pe_pad(...) pe_pad_at(PE_HERE, __VA_ARGS__)
/** pe_slice_update(a, v, start): a copy of a whose block at start (of v's shape) is v, as a's dtype; fused where read. */
#define pe_slice_update(...) pe_slice_update_at(PE_HERE, __VA_ARGS__)
/** pe_expand_dims(a, axis): a with a size-1 axis inserted at axis (-rank-1 .. rank): keepdims. */
#define pe_expand_dims(...) pe_expand_dims_at(PE_HERE, __VA_ARGS__)
/** pe_roll(a, shift, axis): NumPy's roll along one axis, result[i] = a[(i - shift) mod n]; a view. */
#define pe_roll(...) pe_roll_at(PE_HERE, __VA_ARGS__)
/** pe_arange(t, start, stop, step): start + i * step (in double) for i below ceil((stop - start) / step), as t (f32, f64, i32). */
#define pe_arange(...) pe_arange_at(PE_HERE, __VA_ARGS__)
/** pe_linspace(t, lo, hi, n): n values from lo to hi, both included (the last exactly hi). */
#define pe_linspace(...) pe_linspace_at(PE_HERE, __VA_ARGS__)

///@}
/** @name Scans, sorts, bins
 * Loops of PE's own on all cores (jit/api/api_order.c), each call one step
 * between the kernels around it; the same bits for any thread count.
 * pe_cumsum, pe_cumprod: inclusive scans along `axis` (bool and i32 in i32,
 *   wrapping; floats and complex in their dtype).
 * pe_sort, pe_argsort: stable along `axis`, NaN last (descending too: the
 *   numbers reversed, equal elements in their order, NaN still last); of
 *   f32, f64, i32; argsort gives the i32 indices along the axis.
 * pe_histogram: i32 [bins], bin i counting lo + i*w <= x < lo + (i+1)*w,
 *   w = (hi - lo) / bins, x == hi in the last bin (NumPy's); NaN and values
 *   outside [lo, hi] not counted.  Of f32, f64, i32.
 * pe_bincount: [length], how often each value occurs in idx (i32, any shape)
 *   or, weights (f32, f64, i32, idx's shape) given, the sum of their
 *   weights; weights (pe_array){0}: counts.
 * pe_scatter_add: a copy of target with values[k] (idx's shape, or a
 *   scalar) added at target.flat[idx[k]], repeated indices accumulating.
 * Float sums are accumulated in double in groups of fixed size, added in
 * group order.  An index outside its range makes the result invalid, with
 * PE_E_ARG at the call's line naming the element. */
///@{
pe_array pe_cumsum_at(const pe_site *s, pe_array a, int axis);
pe_array pe_cumprod_at(const pe_site *s, pe_array a, int axis);
pe_array pe_sort_at(const pe_site *s, pe_array a, int axis, bool descending);
pe_array pe_argsort_at(const pe_site *s, pe_array a, int axis, bool descending);
pe_array pe_histogram_at(const pe_site *s, pe_array a, int64_t bins, double lo, double hi);
pe_array pe_bincount_at(const pe_site *s, pe_array idx, pe_array weights, int64_t length);
pe_array pe_scatter_add_at(const pe_site *s, pe_array target, pe_array idx, pe_array values);
/** pe_cumsum(a, axis): inclusive running sums along axis (bool and i32 in i32, wrapping). */
#define pe_cumsum(...) pe_cumsum_at(PE_HERE, __VA_ARGS__)
/** pe_cumprod(a, axis): inclusive running products along axis. */
#define pe_cumprod(...) pe_cumprod_at(PE_HERE, __VA_ARGS__)
/** pe_sort(a, axis, descending): a sorted along axis, stable, NaN last (f32, f64, i32). */
#define pe_sort(...) pe_sort_at(PE_HERE, __VA_ARGS__)
/** pe_argsort(a, axis, descending): the PE_I32 indices along axis that sort a (stable, NaN last). */
#define pe_argsort(...) pe_argsort_at(PE_HERE, __VA_ARGS__)
/** pe_histogram(a, bins, lo, hi): PE_I32 [bins] counts of the values in [lo, hi] (NumPy's bins). */
#define pe_histogram(...) pe_histogram_at(PE_HERE, __VA_ARGS__)
/** pe_bincount(idx, weights, length): [length]: how often each value occurs in idx, or the sums of weights (weights (pe_array){0}: counts). */
#define pe_bincount(...) pe_bincount_at(PE_HERE, __VA_ARGS__)
/** pe_scatter_add(target, idx, values): a copy of target with values[k] added at target.flat[idx[k]], repeated indices accumulating. */
#define pe_scatter_add(target, idx, values) pe_scatter_add_at(PE_HERE, PE_ARG(target), PE_ARG(idx), PE_ARG(values))

///@}
/** @name Intrinsics
 * Library calls, never fused: the element-wise work before and after them
 * is fused into the kernels around them.  On the CPU OpenBLAS's cblas and
 * LAPACKE; on a GPU cuBLAS and cuSOLVER, loaded at run time (a machine
 * without them: the CPU makes the calls, one warning per library;
 * pe_lu_cond and P of pe_lu_unpack are computed on the host either way).
 * f32, f64, c64 and c128 (elements as C99 complex), operands of one dtype;
 * a bad shape or dtype is an error at the caller's line.
 *
 * pe_matmul: a (m x k) times b (k x n, or a vector of k): m x n, or m.  An
 * operand that is pe_transpose of a computed 2-d array is read in place
 * (CblasTrans); alpha * (a @ b) + beta * c (alpha, beta scalars, either left
 * out, the intermediates used nowhere else) is one gemm.
 *
 * pe_lu: P a = L U with partial pivoting (getrf) of a square a.  *lu holds L
 * (unit lower, below the diagonal) and U packed, *pivots (i32, n) the row
 * interchanges: row i was swapped with row pivots[i], for i = 0 .. n-1 in
 * turn.  Returns PE_OK once recorded, or the error code of a bad argument
 * (raised as for any call; *lu and *pivots are then invalid).  Nothing is
 * computed before the factors are needed: a singular matrix (an exact zero
 * pivot) makes lu and pivots invalid with PE_E_ARG naming pe_lu's line,
 * raised when they are read or used.
 * pe_lu_solve: x with a x = b, b of n or n x k (getrs).
 * pe_lu_cond: the 1-norm condition number ||a||_1 ||a^-1||_1 as LAPACK's
 * gecon estimates it (within a factor of 3, usually exact); ||a||_1 is
 * recomputed from the factors (one trmm, half a factorisation's work).  Of
 * a complex matrix: real, its parts' dtype (c64: f32, c128: f64).
 * pe_lu_unpack: returns P (n x n, dtype of lu) with P a = L U; sets *l and
 * *u (either may be NULL) to L (unit lower) and U. */
///@{
pe_array pe_matmul_at(const pe_site *s, pe_array a, pe_array b);
int pe_lu_at(const pe_site *s, pe_array a, pe_array *lu, pe_array *pivots);
pe_array pe_lu_solve_at(const pe_site *s, pe_array lu, pe_array pivots, pe_array b);
pe_array pe_lu_cond_at(const pe_site *s, pe_array lu, pe_array pivots);
pe_array pe_lu_unpack_at(const pe_site *s, pe_array lu, pe_array pivots, pe_array *l, pe_array *u);
/** pe_matmul(a, b): the matrix product, m x k times k x n (or a vector of k); one BLAS call (cuBLAS on a GPU). */
#define pe_matmul(...) pe_matmul_at(PE_HERE, __VA_ARGS__)
/** pe_lu(a, &lu, &pivots): P a = L U with partial pivoting of a square a; PE_OK once recorded, or the error code of a bad argument. */
#define pe_lu(...) pe_lu_at(PE_HERE, __VA_ARGS__)
/** pe_lu_solve(lu, pivots, b): x with a x = b, b of n or n x k. */
#define pe_lu_solve(...) pe_lu_solve_at(PE_HERE, __VA_ARGS__)
/** pe_lu_cond(lu, pivots): the 1-norm condition number of a, as LAPACK's gecon estimates it. */
#define pe_lu_cond(...) pe_lu_cond_at(PE_HERE, __VA_ARGS__)
/** pe_lu_unpack(lu, pivots, &l, &u): returns P with P a = L U and sets *l, *u (either may be NULL) to L and U. */
#define pe_lu_unpack(...) pe_lu_unpack_at(PE_HERE, __VA_ARGS__)

/* Sparse matrices in CSR form.  pe_csr_create: an n_rows x n_cols matrix
 * from row_ptr (i32, n_rows + 1: row i's entries are [row_ptr[i],
 * row_ptr[i+1])), col_idx (i32, nnz: each entry's column) and values (f32 or
 * f64, nnz).  The matrix holds its own references (the caller may release
 * the three arrays) until pe_csr_destroy.  Shapes and dtypes are checked at
 * the call; the indices when the data is read: row_ptr[0] = 0, row_ptr
 * non-decreasing up to row_ptr[n_rows] = nnz, every column in [0, n_cols),
 * else pe_spmv's result is invalid with PE_E_ARG at pe_spmv's line, the
 * first fault named (no index is ever used unchecked).
 * pe_spmv: m @ x, x of n_cols and m's dtype: n_rows values, each row's sum in
 * column order (f32 accumulated in f64, rounded once).  Never fused: a
 * program of its own, on the CPU a row loop generated through libgccjit
 * (once per run, kept in the disk cache) on PE's thread pool (parallel over
 * rows), the interpreter's where the CPU JIT is off, element-wise
 * producers of x and consumers of the result fused into kernels around it.
 * On a GPU: cuSPARSE's SpMV (an f32 row summed in f32, within the sum's
 * usual bound; the same bits from run to run), the indices checked on the
 * host first, once per matrix (the same error as on the CPU); without
 * cuSPARSE the CPU computes it. 
 * Not inside a PE_MACRO section yet: a matrix's arrays are no section input
 * (PE_E_MACRO at the line, as for any operand made outside it). */
pe_csr pe_csr_create_at(const pe_site *s, pe_array row_ptr, pe_array col_idx, pe_array values, int64_t n_cols);
void pe_csr_destroy_at(const pe_site *s, pe_csr m);
pe_array pe_spmv_at(const pe_site *s, pe_csr m, pe_array x);
/** pe_csr_create(row_ptr, col_idx, values, n_cols): a sparse n_rows x n_cols matrix in CSR form; it holds its own references until pe_csr_destroy. */
#define pe_csr_create(...) pe_csr_create_at(PE_HERE, __VA_ARGS__)
/** pe_csr_destroy(m): drops the matrix's references to its arrays. */
#define pe_csr_destroy(...) pe_csr_destroy_at(PE_HERE, __VA_ARGS__)
/** pe_spmv(m, x): the sparse product m @ x (n_rows values, each row's sum in column order). */
#define pe_spmv(...) pe_spmv_at(PE_HERE, __VA_ARGS__)

/* Spectra (FFTW3 on the CPU; plans cached per shape, FFTW's wisdom kept in
 * the cache directory, FFTW on PE_THREADS threads).
 * pe_fft: the DFT along a's last axis (dims = 1) or its last two (dims = 2),
 * each line (plane) of the leading axes on its own: X[k] = sum_j x[j]
 * e^(-2 pi i jk/n), as NumPy's fft / fft2.  f32 or c64 gives c64, f64 or
 * c128 gives c128.  pe_ifft: the inverse, e^(+2 pi i jk/n) scaled by 1/n
 * (1/(rows cols) for two axes), as NumPy's ifft: pe_ifft(pe_fft(a)) is a.
 * pe_conv: the convolution of a with kernel over a's last kernel-rank axes
 * (a 1-d or 2-d kernel; the leading axes of a are batched), "same" size as
 * a, as scipy.signal.convolve(a, kernel, mode='same'): the part of the full
 * convolution that starts at (k - 1) / 2 along each axis (k the kernel's
 * length there), so out[i] = sum_j a[i + (k - 1) / 2 - j] kernel[j], a
 * zero outside a.  pe_correlate: as scipy.signal.correlate(mode='same'),
 * the convolution with the kernel reversed (and conjugated, as scipy's, for
 * complex arrays): out[i] = sum_j a[i + j - k / 2] conj(kernel[j]).  f32,
 * f64, c64 or c128, a and kernel of one dtype.  A kernel of up to 64
 * elements (16 complex) is summed directly in generated kernels (one per at
 * most 16 taps: a kernel's parameters; complex one per 6, the size a kernel
 * may take once complex ops are pairs of reals),
 * with the element-wise work after it fused (a producer before it is stored
 * first: the shifted reads need its elements); a larger one goes through FFTs (one library
 * call; bench/RESULTS.md). */
pe_array pe_fft_at(const pe_site *s, pe_array a, int dims);
pe_array pe_ifft_at(const pe_site *s, pe_array a, int dims);
pe_array pe_conv_at(const pe_site *s, pe_array a, pe_array kernel);
pe_array pe_correlate_at(const pe_site *s, pe_array a, pe_array kernel);
/** pe_fft(a, dims): the DFT along a's last axis (dims 1) or last two (dims 2), as NumPy's fft / fft2; complex result. */
#define pe_fft(...) pe_fft_at(PE_HERE, __VA_ARGS__)
/** pe_ifft(a, dims): the inverse DFT scaled by 1/n, as NumPy's ifft: pe_ifft(pe_fft(a)) is a. */
#define pe_ifft(...) pe_ifft_at(PE_HERE, __VA_ARGS__)
/** pe_conv(a, kernel): the convolution over a's last kernel-rank axes, the size of a (scipy.signal.convolve, mode='same'). */
#define pe_conv(...) pe_conv_at(PE_HERE, __VA_ARGS__)
/** pe_correlate(a, kernel): the correlation, the size of a (scipy.signal.correlate, mode='same'; the kernel conjugated for complex). */
#define pe_correlate(...) pe_correlate_at(PE_HERE, __VA_ARGS__)

///@}
/** @name Automatic differentiation
 * Derivatives of recorded programs (jit/grad).  pe_grad_enable marks an
 * f32, f64, c64 or c128 array as a variable; from then on every operation on
 * it, and on what depends on it, is remembered with its operands (the
 * derivative tape: the values a derivative needs stay reachable, stored or
 * computed again on demand, for as long as the result is held).  pe_grad
 * records the reverse sweep, pe_jvp the forward one, as ordinary operations
 * at the caller's line: fused, cached, replayed (PE_MACRO), placed and
 * checked (PE_CHECK) like the rest of the program.  Each operation's
 * derivative is a row of irformat/ops_grad.def; comparisons, rounding,
 * indices and counts pass no derivative (zero), as in JAX; min/max ties
 * split it equally.  A complex variable z = x + iy gets dL/dx + i dL/dy
 * (the direction a descent steps against); a complex y is differentiated as
 * the real part of its sum.  A path through an integer or boolean value
 * gives zero; one through lu_cond (an estimate) is a PE_E_TYPE error naming
 * it.  The answers are not themselves differentiated (no second
 * derivatives).  In a loop, mark the carried value again each step
 * (w = pe_grad_enable(w_next)): that cuts its history, and memory stays
 * flat. */
///@{
pe_array pe_grad_enable_at(const pe_site *s, pe_array x);
int pe_grad_at(const pe_site *s, pe_array y, int n, const pe_array *wrt, pe_array *out);
pe_array pe_jvp_at(const pe_site *s, pe_array y, int n, const pe_array *wrt, const pe_array *tangents);
/** pe_grad_enable(x): a new reference to x marked as a variable to differentiate against (a leaf: history before
 * it is cut); f32, f64, c64 or c128, else PE_E_TYPE. */
#define pe_grad_enable(...) pe_grad_enable_at(PE_HERE, __VA_ARGS__)
/** pe_grad(y, n, wrt, out): reverse mode: out[i] = d(sum of y's elements)/d wrt[i], of wrt[i]'s shape and dtype
 * (zeros where y does not depend on it); each wrt[i] marked by pe_grad_enable, else PE_E_ARG.  Returns PE_OK or an
 * error code. */
#define pe_grad(...) pe_grad_at(PE_HERE, __VA_ARGS__)
/** pe_jvp(y, n, wrt, tangents): forward mode: the derivative of y along the tangents (each of its variable's
 * shape), of y's shape. */
#define pe_jvp(...) pe_jvp_at(PE_HERE, __VA_ARGS__)
///@}

/** @name Hints and synchronisation */
///@{
void pe_hint_read_at(const pe_site *s, pe_array a); /* the application will read a soon: start now */
void pe_block_begin_at(const pe_site *s);           /* defer processing until the matching end */
void pe_block_end_at(const pe_site *s);
void pe_flush_at(const pe_site *s);                 /* process the queue now, do not wait */
void pe_sync_at(const pe_site *s);                  /* wait until all queued work is done */
/** pe_hint_read(a): the application will read a soon: start computing it now. */
#define pe_hint_read(...) pe_hint_read_at(PE_HERE, __VA_ARGS__)
/** pe_block_begin(): defers processing until the matching pe_block_end (a loop body recorded as one batch). */
#define pe_block_begin() pe_block_begin_at(PE_HERE)
/** pe_block_end(): ends the block pe_block_begin opened. */
#define pe_block_end() pe_block_end_at(PE_HERE)
/** pe_flush(): processes the queued work now, without waiting for it. */
#define pe_flush() pe_flush_at(PE_HERE)
/** pe_sync(): waits until all queued work is done. */
#define pe_sync() pe_sync_at(PE_HERE)

///@}
/** @name Debugging
 * PE_CHECK=copyout compares every value copied out (pe_read*, pe_map) with
 * the reference interpreter's (double precision, each op rounded to its
 * dtype, as PE_EXECUTOR=interp computes); PE_CHECK=all also every value a
 * batch stores, once it ran.  The first difference beyond the allowed error
 * (PE_CHECK_SCALE, docs/environment.md) raises PE_E_CHECK at the line of the op that
 * computed the value, naming the element and both values: a read raises it
 * itself (and returns PE_E_CHECK, the value copied all the same), a batch's
 * is raised by the next read, map, pe_sync or pe_shutdown. */
///@{
/* a's value computed on the interpreter from a clone of its pending
 * expression (values already computed are taken as they are): the work
 * queue, its batches and fusion are as without the call.  dst_bytes as for
 * pe_read. */
int pe_peek_at(const pe_site *s, pe_array a, void *dst, size_t dst_bytes);
/* The reference result of a, as a new array of a's dtype and shape: with
 * PE_CHECK, the reference of the whole program (from the references of
 * a's inputs); without, a's pending expression computed on the interpreter
 * from the values it reads (a value computed already is its own reference). */
pe_array pe_reference_at(const pe_site *s, pe_array a);
/** pe_peek(a, dst, dst_bytes): a's value computed on the interpreter from a clone of its pending expression (values computed already are taken as they are): the work queue, its batches and fusion are as without the call.  dst_bytes as for pe_read. */
#define pe_peek(...) pe_peek_at(PE_HERE, __VA_ARGS__)
/** pe_reference(a): the reference result of a as a new array of its dtype and shape: with PE_CHECK the whole program's reference; without, a's pending expression computed on the interpreter. */
#define pe_reference(...) pe_reference_at(PE_HERE, __VA_ARGS__)

///@}
/** @name Code reuse sections */
///@{
/** @def PE_MACRO
 * A code reuse section (below: its name, inputs, outputs and control bytes; the body follows it).
 *
 *   pe_array ins[2] = {acc, y}, outs[1]; int mode = 0;
 *   PE_MACRO(step, ins, 2, outs, 1, &mode, sizeof mode) { outs[0] = body(ins[0], ins[1]); }
 *
 * The first execution with a given key — each input's dtype, shape and
 * whether it is a uniform constant (pe_scalar, pe_fill, folds: then its value
 * too, since record-time folds specialise on it), and the `ctl_bytes` bytes at
 * `ctl`, compared byte for byte — runs the body and records what it asks for;
 * later executions with that key replay the recording in one call and skip
 * the body: each output is a new array computed as the body computed it
 * from the new inputs (the trace cache then hands back the compiled kernels).
 * `name` is an identifier (for messages); a section is the place it is
 * written.  The body assigns every outs[j] (an array it made, or an input);
 * the other arrays it made are released at its end (a section is a scope).
 * C scalars and constants made in the body are recorded with their values:
 * a value that changes between executions must be an input or in `ctl`.
 * Errors (PE_E_MACRO, at the line): reading or writing host data in the body
 * (pe_read*, pe_map, pe_unmap, pe_from_host, pe_adopt, pe_f32_1d, ...: the
 * section is abandoned), an operand made outside the section that is not an
 * input, releasing or reassigning an input, an output not assigned, the same
 * section beginning inside its own body (recursion), and a body left by
 * break, return or goto (found when the section begins again in the same
 * function, at the end of a section around it, or at the next host access).
 * Then nothing is cached and the outputs are invalid arrays — but after a
 * host access, which abandons the thread's open sections: they go on as
 * plain code.  `continue` ends the body.  A section inside a recording body
 * is part of that recording.  The cache holds
 * PE_MACRO_CACHE entries over all sections (default 256, least recently used
 * evicted; 0: every execution runs its body).  Counters: pe_stats.macro_*. */
/** The state of one execution of a code reuse section (PE_MACRO's loop variable; not for direct use). */
typedef struct {
    int run_body;  /**< the for-loop runs the body: a recording */
    uint64_t serial;  /**< the runtime's */
    pe_array *ins;    /**< the section's inputs */
    int n_ins;        /**< their number */
    pe_array *outs;   /**< the section's outputs */
    int n_outs;       /**< their number */
} pe_macro_state;
/* `self`: the address of a variable the statement declares (the same section begun again with the
 * same address while its last execution is open was left by break, return or goto; with another it is
 * a recursion).  Not the frame's address: a compiler that inlines a recursive function into itself
 * gives both executions one frame, while their variables, both alive, never share an address. */
pe_macro_state pe_macro_begin_at(const pe_site *s, const void *self, const char *name, pe_array *ins,
                                 int n_ins, pe_array *outs, int n_outs, const void *ctl, size_t ctl_bytes);
int pe_macro_end_at(const pe_site *s, pe_macro_state *st); /* 0: the body ran once */
#define PE_MACRO(name, ins, n_ins, outs, n_outs, ctl, ctl_bytes)                                              \
    for (pe_macro_state pe__anchor_##name = {0, 0, 0, 0, 0, 0}, pe__macro_##name =                          \
             pe_macro_begin_at(PE_HERE, &pe__anchor_##name, #name, (ins), (n_ins), (outs), (n_outs), (ctl), (ctl_bytes));        \
         pe__macro_##name.run_body; pe__macro_##name.run_body = pe_macro_end_at(PE_HERE, &pe__macro_##name))

///@}
#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* PE_H */
