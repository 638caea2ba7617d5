/* bench_gpu.c — PE's CUDA executor against the GPU's own device-to-device
 * copy bandwidth, measured in the same run (cuMemcpyDtoD of 128 MB: the most
 * a bandwidth-bound kernel can reach).  Measurements, not tests.
 *
 *   1. Black-Scholes, 10M f32 options (call + put): options/s and % of its
 *      bandwidth floor (3 inputs + 2 outputs, 20 bytes per option, moved at
 *      the copy bandwidth)
 *   2. triad a = b + s*c and the 16-op chain on 32M f32: % of the copy bandwidth
 *   3. sum and dot of 64M f32
 *   4. compile: first use of a new kernel (NVRTC + module load + run)
 *   5. automatic placement: one-shot jobs on data the host gives (made and
 *      read back each run) on the CPU, on the GPU, and where the cost model
 *      (jit/sched/placement.c) puts them: auto / the better of the two
 *
 * Inputs are uploaded by the warm-up runs and stay on the GPU, results stay
 * there until read: "PE" = record + pe_sync (GPU done, result on the GPU);
 * "PE+read" adds pe_read of the results to host memory; "x8" = eight runs,
 * each a batch of its own, before one pe_sync, per run (what a loop of
 * requests gets where the host work of one run can overlap the GPU's work of
 * another), against eight copies in flight.  Median of RUNS runs after WARMUP.  Where no CUDA device
 * exists it says so and exits 0.
 *
 *   bench_gpu [scale]   scale 1 = 10M / 32M / 64M */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pe.h>

#include "workloads.h"
#include "exec/cuda/cuda_driver.h"

#define RUNS 9
#define WARMUP 3

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

static float *filled(int64_t n, float lo, float hi, unsigned seed)
{
    float *x = malloc((size_t)n * sizeof *x);
    srand(seed);
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)rand() / (float)RAND_MAX;
    return x;
}

#define IN_FLIGHT 8

/* Device-to-device copy bandwidth (read + write bytes per second), one copy
 * synchronised at a time, and (*in_flight) IN_FLIGHT copies per sync. */
static double copy_bandwidth(size_t bytes, double *in_flight)
{
    *in_flight = 0;
    const pe_cuda_api *cu = pe_cuda_load(NULL);
    const pe_cuda_device *d = pe_cuda_device_at(0);
    CUcontext ctx;
    CUdeviceptr a = 0, b = 0;
    if (!cu || cu->cuDevicePrimaryCtxRetain(&ctx, d->handle) || cu->cuCtxSetCurrent(ctx) ||
        cu->cuMemAlloc(&a, bytes) || cu->cuMemAlloc(&b, bytes))
        return 0;
    cu->cuMemsetD8Async(a, 1, bytes, NULL);
    double t[RUNS], f[RUNS];
    for (int i = 0; i < WARMUP + RUNS; i++) {
        cu->cuStreamSynchronize(NULL);
        double t0 = now();
        cu->cuMemcpyDtoDAsync(b, a, bytes, NULL);
        cu->cuStreamSynchronize(NULL);
        double t1 = now();
        for (int k = 0; k < IN_FLIGHT; k++) cu->cuMemcpyDtoDAsync(b, a, bytes, NULL);
        cu->cuStreamSynchronize(NULL);
        if (i >= WARMUP) t[i - WARMUP] = t1 - t0, f[i - WARMUP] = (now() - t1) / IN_FLIGHT;
    }
    cu->cuMemFree(a), cu->cuMemFree(b);
    cu->cuDevicePrimaryCtxRelease(d->handle);
    *in_flight = 2.0 * (double)bytes / median(f, RUNS);
    return 2.0 * (double)bytes / median(t, RUNS);
}

typedef struct {
    int64_t n;
    pe_array in[3];
    float *out1, *out2;
    int kind; /* 0 Black-Scholes, 1 triad, 2 chain, 3 sum, 4 dot */
    double value;
} work;

static const float R = 0.02f, V = 0.30f;

/* The workload's requests; b: Black-Scholes' second result. */
static pe_array record(work *w, pe_array *b)
{
    switch (w->kind) {
    case 0: return wl_blackscholes(w->in[0], w->in[1], w->in[2], R, V, b);
    case 1: return wl_triad(w->in[0], w->in[1], 2.5f);
    case 2: return wl_chain16(w->in[0], w->in[1]);
    case 3: return pe_sum(w->in[0]);
    default: return pe_dot(w->in[0], w->in[1]);
    }
}

/* IN_FLIGHT runs recorded, each its own batch (pe_flush: in one batch the
 * program generator would fuse them into one kernel reading the inputs
 * once), then one pe_sync; the time per run. */
static double run_in_flight(work *w)
{
    pe_array a[IN_FLIGHT], b[IN_FLIGHT] = {{0}};
    double t0 = now();
    for (int k = 0; k < IN_FLIGHT; k++) a[k] = record(w, &b[k]), pe_flush();
    pe_sync();
    double t = (now() - t0) / IN_FLIGHT;
    for (int k = 0; k < IN_FLIGHT; k++) {
        pe_release(a[k]);
        if (w->kind == 0) pe_release(b[k]);
    }
    return t;
}

/* One run; returns (time to pe_sync, time including the reads). */
static void run(work *w, double *t_gpu, double *t_read)
{
    double t0 = now();
    pe_array a, b = {0};
    a = record(w, &b);
    pe_sync();
    double t1 = now();
    if (w->kind >= 3) {
        pe_read_f64(a, &w->value);
    } else {
        pe_read(a, w->out1, (size_t)w->n * sizeof(float));
        if (w->kind == 0) pe_read(b, w->out2, (size_t)w->n * sizeof(float));
    }
    double t2 = now();
    pe_release(a);
    if (w->kind == 0) pe_release(b);
    *t_gpu = t1 - t0, *t_read = t2 - t0;
}

static void measure(work *w, double *gpu, double *read, double *in_flight)
{
    double g[RUNS], r[RUNS], f[RUNS], x, y;
    for (int i = 0; i < WARMUP; i++) run(w, &x, &y), run_in_flight(w);
    for (int i = 0; i < RUNS; i++) run(w, &g[i], &r[i]), f[i] = run_in_flight(w);
    *gpu = median(g, RUNS), *read = median(r, RUNS), *in_flight = median(f, RUNS);
}

static double cnd(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* One job from host data to host result on `device` (0 the CPU, 1 the
 * GPU, -1 automatic): 0 a light map (a + b), 1 a heavy one (four
 * transcendentals an element), 2 Black-Scholes' calls.  Its time; *on_gpu
 * whether a GPU ran it. */
static double one_shot(int device, int kind, float *const host[3], int64_t n, float *out, bool *on_gpu)
{
    pe_set_device(device);
    pe_stats s0, s1;
    pe_get_stats(&s0);
    double t0 = now();
    pe_array in[3], put = {0}, r;
    for (int k = 0; k < 3; k++) in[k] = pe_f32_1d(host[k], n);
    if (kind == 0) r = pe_add(in[0], in[1]);
    else if (kind == 1) r = pe_exp(pe_sin(pe_cos(pe_sin(in[0]))));
    else r = wl_blackscholes(in[0], in[1], in[2], R, V, &put);
    pe_read(r, out, (size_t)n * sizeof(float));
    double t = now() - t0;
    pe_get_stats(&s1);
    *on_gpu = s1.gpu_batches > s0.gpu_batches;
    for (int k = 0; k < 3; k++) pe_release(in[k]);
    pe_release(r);
    if (kind == 2) pe_release(put);
    return t;
}

static void placement(double scale)
{
    static const char *names[] = {"a + b (light)", "4 transcendentals", "Black-Scholes calls"};
    printf("\nautomatic placement, one-shot jobs on host data (inputs made and result read back each run), ms:\n");
    printf("%-22s %10s %10s %10s %8s %12s\n", "job", "CPU", "GPU", "auto", "auto on", "auto / best");
    for (int kind = 0; kind < 3; kind++) {
        int64_t n = (int64_t)((kind == 2 ? 10e6 : 4e6) * scale);
        float *host[3] = {filled(n, 5, 30, 11), filled(n, 1, 100, 12), filled(n, 0.25f, 10, 13)};
        float *out = malloc((size_t)n * sizeof *out);
        double t[3][RUNS];
        bool on_gpu = false, auto_gpu = false;
        for (int i = 0; i < WARMUP + RUNS; i++)
            for (int mode = 0; mode < 3; mode++) {
                double x = one_shot(mode == 2 ? -1 : mode, kind, host, n, out, &on_gpu);
                if (i >= WARMUP) t[mode][i - WARMUP] = x;
                if (mode == 2 && i >= WARMUP) auto_gpu |= on_gpu;
            }
        double cpu = median(t[0], RUNS), gpu = median(t[1], RUNS), aut = median(t[2], RUNS);
        printf("%-22s %10.3f %10.3f %10.3f %8s %12.2f\n", names[kind], cpu * 1e3, gpu * 1e3, aut * 1e3,
               auto_gpu ? "GPU" : "CPU", aut / fmin(cpu, gpu));
        for (int k = 0; k < 3; k++) free(host[k]);
        free(out);
    }
    pe_set_device(1);
}

/* First use of never-seen kernels: a 3-op chain whose ops differ each time. */
static void compile_latency(void)
{
    static const char *names[] = {"sin", "cos", "exp", "log", "sqrt", "tanh", "erf", "atan", "cbrt"};
    typedef pe_array (*f1)(const pe_site *, pe_array);
    f1 fns[] = {pe_sin_at, pe_cos_at, pe_exp_at, pe_log_at, pe_sqrt_at, pe_tanh_at, pe_erf_at, pe_atan_at, pe_cbrt_at};
    const int64_t n = 1 << 20;
    float *x = filled(n, 0.1f, 0.9f, 9);
    pe_array a = pe_f32_1d(x, n);
    pe_sync();
    double t[RUNS];
    int k = 0;
    for (int i = 0; i < 9 && k < RUNS; i++)
        for (int j = 0; j < 9 && k < RUNS; j++) {
            if (i == j) continue;
            pe_stats s0, s1;
            pe_get_stats(&s0);
            double t0 = now();
            pe_array u = fns[i](PE_HERE, a), v = fns[j](PE_HERE, u), r = pe_add(v, (float)k);
            pe_release(u), pe_release(v);
            pe_sync();
            t[k] = now() - t0;
            pe_get_stats(&s1);
            pe_release(r);
            if (s1.kernels_compiled == s0.kernels_compiled) fprintf(stderr, "%s.%s: no compile?\n", names[i], names[j]);
            k++;
        }
    printf("compile: first use of a new fused kernel (NVRTC + cuModuleLoadData + run on 1M): median %.1f ms of %d\n",
           median(t, k) * 1e3, k);
    pe_release(a);
    free(x);
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(scale > 0)) {
        fprintf(stderr, "usage: %s [scale > 0]\n", argv[0]);
        return 2;
    }
    if (pe_device_count() < 2) {
        printf("bench_gpu: no CUDA device here: nothing to measure\n");
        return 0;
    }
    /* a fresh kernel cache, so that first uses compile */
    static char cache[] = "/tmp/pe-bench-gpu-XXXXXX";
    if (!mkdtemp(cache)) return 1;
    if (pe_init(&(pe_config){.device = 2 /* CUDA device 0 */, .cache_dir = cache}) != PE_OK) return 1;
    pe_device_info info;
    pe_device_info(1, &info);
    double bw8, bw = copy_bandwidth((size_t)(32e6 * scale) * sizeof(float), &bw8);
    printf("PE %s on %s (%s, %d SMs, %.0f GiB); device-to-device copy %.0f GB/s, %d in flight %.0f GB/s (128 MB x scale)\n",
           pe_version(), info.name, info.arch, info.cores, (double)info.memory_bytes / (1 << 30), bw / 1e9, IN_FLIGHT,
           bw8 / 1e9);
    printf("median of %d runs after %d warm-ups; inputs resident on the GPU; PE = record + pe_sync (result on the GPU), "
           "PE+read = with pe_read to the host, x%d = %d runs per pe_sync (per run, %% of the copies in flight)\n\n",
           RUNS, WARMUP, IN_FLIGHT, IN_FLIGHT);
    printf("%-22s %9s %9s %12s %10s %9s %9s  %s\n", "workload", "PE ms", "PE+read", "GB/s (PE)", "% of copy", "x8 ms",
           "% (x8)", "note");

    /* 1. Black-Scholes */
    work w = {.n = (int64_t)(10e6 * scale), .kind = 0};
    float *S = filled(w.n, 5, 30, 1), *X = filled(w.n, 1, 100, 2), *T = filled(w.n, 0.25f, 10, 3);
    w.in[0] = pe_f32_1d(S, w.n), w.in[1] = pe_f32_1d(X, w.n), w.in[2] = pe_f32_1d(T, w.n);
    w.out1 = malloc((size_t)w.n * sizeof(float)), w.out2 = malloc((size_t)w.n * sizeof(float));
    double g, r, f;
    measure(&w, &g, &r, &f);
    double worst = 0;
    for (int64_t i = 0; i < w.n; i += 101) {
        double st = sqrt(T[i]), d1 = (log((double)S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (V * st), d2 = d1 - V * st;
        double disc = X[i] * exp(-R * (double)T[i]);
        double call = S[i] * cnd(d1) - disc * cnd(d2), put = disc * cnd(-d2) - S[i] * cnd(-d1);
        worst = fmax(worst, fabs(w.out1[i] - call) / fmax(fabs(call), 1e-3));
        worst = fmax(worst, fabs(w.out2[i] - put) / fmax(fabs(put), 1e-3));
    }
    double bytes = 20.0 * (double)w.n;
    printf("%-22s %9.3f %9.3f %12.0f %9.0f%% %9.3f %8.0f%%  %.2f G options/s; floor %.3f ms; max rel diff to double "
           "%.1e\n",
           "Black-Scholes", g * 1e3, r * 1e3, bytes / g / 1e9, 100 * (bytes / bw) / g, f * 1e3, 100 * (bytes / bw8) / f,
           (double)w.n / g / 1e9, bytes / bw * 1e3, worst);
    for (int k = 0; k < 3; k++) pe_release(w.in[k]);
    free(S), free(X), free(T), free(w.out1), free(w.out2);

    /* 2. triad and chain */
    work v = {.n = (int64_t)(32e6 * scale)};
    float *b = filled(v.n, 0.5f, 2, 4), *c = filled(v.n, 0.5f, 2, 5);
    v.in[0] = pe_f32_1d(b, v.n), v.in[1] = pe_f32_1d(c, v.n);
    v.out1 = malloc((size_t)v.n * sizeof(float));
    bytes = 12.0 * (double)v.n;
    for (int kind = 1; kind <= 2; kind++) {
        v.kind = kind;
        measure(&v, &g, &r, &f);
        double err = 0;
        for (int64_t i = 0; i < v.n && kind == 1; i += 97) err = fmax(err, fabs(v.out1[i] - (b[i] + 2.5f * c[i])) / fabs(v.out1[i]));
        printf("%-22s %9.3f %9.3f %12.0f %9.0f%% %9.3f %8.0f%%  %s\n", kind == 1 ? "triad" : "16-op chain", g * 1e3,
               r * 1e3, bytes / g / 1e9, 100 * bytes / g / bw, f * 1e3, 100 * bytes / f / bw8,
               kind == 1 ? (err < 1e-6 ? "values ok" : "VALUES WRONG") : "");
    }
    pe_release(v.in[0]), pe_release(v.in[1]);
    free(b), free(c), free(v.out1);

    /* 3. sum and dot */
    work s = {.n = (int64_t)(64e6 * scale)};
    float *x = filled(s.n, -1, 1, 6), *y = filled(s.n, -1, 1, 7);
    s.in[0] = pe_f32_1d(x, s.n), s.in[1] = pe_f32_1d(y, s.n);
    for (int kind = 3; kind <= 4; kind++) {
        s.kind = kind;
        measure(&s, &g, &r, &f);
        double want = 0;
        for (int64_t i = 0; i < s.n; i++) want += kind == 3 ? (double)x[i] : (double)x[i] * y[i];
        bytes = (kind == 3 ? 4.0 : 8.0) * (double)s.n;
        printf("%-22s %9.3f %9.3f %12.0f %9.0f%% %9.3f %8.0f%%  PE %.6f, double loop %.6f\n", kind == 3 ? "sum" : "dot",
               g * 1e3, r * 1e3, bytes / g / 1e9, 100 * bytes / g / bw, f * 1e3, 100 * bytes / f / bw8, s.value, want);
    }
    pe_release(s.in[0]), pe_release(s.in[1]);
    free(x), free(y);

    compile_latency();
    placement(scale);
    pe_stats st;
    pe_get_stats(&st);
    printf("GPU batches %llu, kernels compiled %llu, to the GPU %.0f MB, to the host %.0f MB\n",
           (unsigned long long)st.gpu_batches, (unsigned long long)st.kernels_compiled, st.bytes_to_device / 1e6,
           st.bytes_to_host / 1e6);
    pe_shutdown();

    /* a new runtime on the same cache: the kernel's cubin comes from disk */
    pe_init(&(pe_config){.device = 2, .cache_dir = cache});
    float *in = filled(1 << 20, 0.1f, 0.9f, 9);
    pe_array a = pe_f32_1d(in, 1 << 20);
    pe_sync();
    double t0 = now();
    pe_array sin_a = pe_sin(a), cos_sin = pe_cos(sin_a), res = pe_add(cos_sin, 0.0f);
    pe_release(sin_a), pe_release(cos_sin);
    pe_sync();
    double t1 = now();
    pe_get_stats(&st);
    printf("after pe_shutdown + pe_init: the same kernel from the disk cache in %.2f ms (compiled %llu, disk hits %llu)\n",
           (t1 - t0) * 1e3, (unsigned long long)st.kernels_compiled, (unsigned long long)st.disk_cache_hits);
    pe_release(res), pe_release(a);
    free(in);
    pe_shutdown();
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
    if (system(cmd) != 0) fprintf(stderr, "bench_gpu: could not remove %s\n", cache);
    return 0;
}
