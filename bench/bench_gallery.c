/* bench_gallery.c — the gallery programs (examples/) timed against OpenMP C
 * loops (baseline.c: -O3 -march=native -ffast-math -fopenmp, all cores) in
 * the same process.  The PE side is the examples' own code: each example is
 * included here with its main renamed, and its functions are called as its
 * main calls them.
 *
 *   1. heat2d: STEPS steps on an n x n grid (n = 2048), one pe_block each
 *   1b. jacobi: 100 sweeps on a 1024 x 1024 grid, the largest change read
 *      after each (the solver loop: a scope per sweep, the grid kept)
 *   2. nbody: one all-pairs acceleration of 4096 bodies, read back
 *   3. mandelbrot: 1024 x 768, 100 iterations; the C loop stops each point
 *      when it escapes (as C is written), PE iterates every point (frozen
 *      by a select once escaped: the array formulation)
 *   4. kmeans: 10 Lloyd iterations, 200000 2-d points, 16 clusters
 *   5. logreg: logistic regression, 200000 samples x 32 features (f64), 50
 *      gradient steps, the loss read after each (a scope per step, the
 *      weights kept)
 *
 * Each: one warm-up, then RUNS rounds of one C run and one PE run
 * (alternating), medians; the row prints C time / PE time and checks PE's
 * last result against the C loop's: -ffast-math contracts and reorders the
 * C loops' arithmetic (the examples' own C checks, built without it, are
 * exact), so heat2d within 1e-6, nbody and kmeans 1e-4 relative, and
 * mandelbrot's iteration counts may differ at 0.1% of the points (those on
 * the set's edge).
 *
 * With BENCH_TSV=file in the environment, rows "workload<TAB>impl<TAB>ms<TAB>ms"
 * are appended to it under the names bench/peers.py gives its NumPy
 * versions (scripts/bench's summary puts them side by side); with
 * BENCH_GALLERY_RESULTS=dir, the C loops' last results are written there as
 * raw arrays (heat2d.f32, jacobi.f64, nbody.f32, mandelbrot.i32, kmeans.f32, logreg.f64) for
 * peers.py to check NumPy's results against.
 *
 *   bench_gallery [runs]   runs: 1..100, default 5 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pe.h>

#include "baseline.h"
#include "bench_util.h"

#define main heat2d_main
#include "../examples/heat2d.c"
#undef main
#undef ALPHA
#define main jacobi_main
#include "../examples/jacobi.c"
#undef main
#define main nbody_main
#include "../examples/nbody.c"
#undef main
#define main mandelbrot_main
#include "../examples/mandelbrot.c"
#undef main
#define main kmeans_main
#include "../examples/kmeans.c"
#undef main
#define main logreg_main
#include "../examples/logreg.c"
#undef main

#define MAX_RUNS 100
#define HEAT_N 2048
#define HEAT_STEPS 10
#define JACOBI_N 1024
#define JACOBI_SWEEPS 100
#define BODIES 4096
#define MANDEL_W 1024
#define MANDEL_H 768
#define MANDEL_ITERATIONS 100
#define POINTS 200000
#define CLUSTERS 16
#define LLOYD_ITERATIONS 10

static int runs = 5, wrong = 0;

typedef struct {
    const char *name, *short_name; /* short_name: the TSV's, peers.py's */
    void (*c)(void);
    void (*pe)(void);
    double (*check)(void); /* the largest difference of PE's last result from the C loop's */
    double tolerance;
    const char *result_file; /* BENCH_GALLERY_RESULTS: the C loop's last result */
    const void *c_result;
    size_t result_bytes;
} workload;

static FILE *tsv;
static const char *results_dir;

/* ---------------------------------------------------------------- heat2d */
static float *heat0, *heat_c, *heat_tmp, *heat_pe;
static unsigned char *heat_inside;
static void heat_c_run(void)
{
    memcpy(heat_c, heat0, sizeof(float) * HEAT_N * HEAT_N);
    c_heat_steps(heat_c, heat_tmp, HEAT_N, HEAT_STEPS, 0.2f);
}
static void heat_pe_run(void)
{
    const int64_t n = HEAT_N;
    pe_array in = pe_from_host(PE_BOOL, 2, ((int64_t[]){n, n}), heat_inside);
    pe_array u = simulate(pe_f32_2d(heat0, n, n), in, n, HEAT_STEPS);
    pe_read(u, heat_pe, sizeof(float) * n * n);
    pe_release(u), pe_release(in);
}
static double heat_check(void) { return rel_diff(heat_pe, heat_c, (int64_t)HEAT_N * HEAT_N); }

/* ---------------------------------------------------------------- jacobi */
static double *jac0, *jac_c, *jac_tmp, *jac_pe, jac_change_c, jac_change_pe;
static unsigned char *jac_inside;
static void jacobi_c_run(void)
{
    memcpy(jac_c, jac0, sizeof(double) * JACOBI_N * JACOBI_N);
    jac_change_c = c_jacobi_sweeps(jac_c, jac_tmp, JACOBI_N, JACOBI_SWEEPS);
}
static void jacobi_pe_run(void)
{
    const int64_t n = JACOBI_N;
    long sweeps;
    pe_array in = pe_from_host(PE_BOOL, 2, (int64_t[]){n, n}, jac_inside);
    pe_array u = solve(pe_f64_2d(jac0, n, n), in, n, 1e-300, JACOBI_SWEEPS, &sweeps); /* the tolerance never met */
    pe_read(u, jac_pe, sizeof(double) * n * n);
    pe_release(u), pe_release(in);
    jac_change_pe = sweeps == JACOBI_SWEEPS ? 0 : INFINITY;
}
static double jacobi_check(void)
{
    double worst = jac_change_pe;
    for (int64_t k = 0; k < (int64_t)JACOBI_N * JACOBI_N; k++) worst = fmax(worst, fabs(jac_pe[k] - jac_c[k]));
    return worst;
}

/* ----------------------------------------------------------------- nbody */
static float *body_x, *body_m, *acc_c, *acc_pe;
static void nbody_c_run(void) { c_nbody_accelerations(body_x, body_m, acc_c, BODIES, SOFTENING); }
static void nbody_pe_run(void)
{
    const int64_t n = BODIES;
    pe_scope scope = pe_scope_begin();
    bodies b;
    for (int k = 0; k < 3; k++) b.x[k] = pe_f32_1d(body_x + k * n, n);
    b.m = pe_f32_1d(body_m, n);
    pe_array a[3];
    accelerations(&b, n, a);
    for (int k = 0; k < 3; k++) pe_read(a[k], acc_pe + k * n, sizeof(float) * n);
    pe_scope_end(scope);
}
static double nbody_check(void) { return rel_diff_above(acc_pe, acc_c, 3 * BODIES, 1e-3); }

/* ------------------------------------------------------------ mandelbrot */
static float *mandel_re, *mandel_im;
static int32_t *count_c, *count_pe;
static void mandel_c_run(void) { c_mandelbrot(mandel_re, mandel_im, count_c, MANDEL_W * MANDEL_H, MANDEL_ITERATIONS); }
static void mandel_pe_run(void) { counts_of(mandel_re, mandel_im, ((int64_t[]){MANDEL_H, MANDEL_W}), MANDEL_ITERATIONS, count_pe); }
static double mandel_check(void)
{
    double differ = 0;
    for (int64_t p = 0; p < MANDEL_W * MANDEL_H; p++) differ += count_pe[p] != count_c[p];
    return differ;
}

/* ---------------------------------------------------------------- kmeans */
static float *points, *cent0, *cent_c, *cent_pe;
static int32_t *assign_c;
static void kmeans_c_run(void)
{
    memcpy(cent_c, cent0, sizeof(float) * CLUSTERS * D);
    c_kmeans(points, cent_c, assign_c, POINTS, CLUSTERS, LLOYD_ITERATIONS);
}
static void kmeans_pe_run(void)
{
    const int64_t n = POINTS, k = CLUSTERS;
    pe_array p = pe_from_host(PE_F32, 2, ((int64_t[]){n, D}), points), c = pe_from_host(PE_F32, 2, ((int64_t[]){k, D}), cent0);
    for (int it = 0; it < LLOYD_ITERATIONS; it++) {
        pe_scope scope = pe_scope_begin();
        pe_array assignment;
        pe_array next = pe_keep(lloyd(p, c, n, k, &assignment));
        pe_scope_end(scope);
        pe_release(c);
        c = next;
    }
    pe_read(c, cent_pe, sizeof(float) * CLUSTERS * D);
    pe_release(p), pe_release(c);
}
static double kmeans_check(void) { return rel_diff(cent_pe, cent_c, CLUSTERS * D); }

/* ---------------------------------------------------------------- logreg */
enum { LOGREG_N = 200000, LOGREG_D = 32, LOGREG_STEPS = 50 };
static double *lr_x, *lr_y, *lr_z, *lr_w_c, *lr_w_pe, lr_loss_c[LOGREG_STEPS], lr_loss_pe[LOGREG_STEPS];
static void logreg_c_run(void)
{
    c_logreg_steps(lr_x, lr_y, lr_w_c, lr_z, LOGREG_N, LOGREG_D, LOGREG_STEPS, LEARNING_RATE, lr_loss_c);
}
static void logreg_pe_run(void) { logreg_train(lr_x, lr_y, LOGREG_N, LOGREG_D, LOGREG_STEPS, lr_w_pe, lr_loss_pe); }
static double logreg_check(void)
{
    double worst = 0;
    for (int j = 0; j < LOGREG_D; j++) worst = fmax(worst, logreg_rel_error(lr_w_pe[j], lr_w_c[j]));
    for (int s = 0; s < LOGREG_STEPS; s++) worst = fmax(worst, logreg_rel_error(lr_loss_pe[s], lr_loss_c[s]));
    return worst;
}

static void setup(void)
{
    heat0 = buffer((int64_t)HEAT_N * HEAT_N), heat_c = buffer((int64_t)HEAT_N * HEAT_N);
    heat_tmp = buffer((int64_t)HEAT_N * HEAT_N), heat_pe = buffer((int64_t)HEAT_N * HEAT_N);
    heat_inside = bench_alloc_or_exit(malloc((size_t)HEAT_N * HEAT_N));
    for (int64_t i = 0; i < HEAT_N; i++)
        for (int64_t j = 0; j < HEAT_N; j++) {
            heat0[i * HEAT_N + j] = i == 0 ? 1.0f : 0.0f;
            heat_inside[i * HEAT_N + j] = i > 0 && j > 0 && i < HEAT_N - 1 && j < HEAT_N - 1;
        }
    jac0 = bench_alloc_or_exit(calloc((size_t)JACOBI_N * JACOBI_N, sizeof *jac0));
    jac_c = bench_alloc_or_exit(malloc(sizeof(double) * JACOBI_N * JACOBI_N));
    jac_tmp = bench_alloc_or_exit(malloc(sizeof(double) * JACOBI_N * JACOBI_N));
    jac_pe = bench_alloc_or_exit(malloc(sizeof(double) * JACOBI_N * JACOBI_N));
    jac_inside = bench_alloc_or_exit(malloc((size_t)JACOBI_N * JACOBI_N));
    for (int64_t i = 0; i < JACOBI_N; i++)
        for (int64_t j = 0; j < JACOBI_N; j++) {
            jac0[i * JACOBI_N + j] = i == 0 ? 1.0 : 0.0;
            jac_inside[i * JACOBI_N + j] = i > 0 && j > 0 && i < JACOBI_N - 1 && j < JACOBI_N - 1;
        }
    body_x = filled(3 * BODIES, -1, 1, 21), body_m = filled(BODIES, 0.5f / BODIES, 1.5f / BODIES, 22);
    acc_c = buffer(3 * BODIES), acc_pe = buffer(3 * BODIES);
    mandel_re = buffer(MANDEL_W * MANDEL_H), mandel_im = buffer(MANDEL_W * MANDEL_H);
    for (int64_t y = 0; y < MANDEL_H; y++)
        for (int64_t x = 0; x < MANDEL_W; x++)
            mandel_re[y * MANDEL_W + x] = coordinate(X0, X1, x, MANDEL_W), mandel_im[y * MANDEL_W + x] = coordinate(Y1, Y0, y, MANDEL_H);
    count_c = bench_alloc_or_exit(calloc(MANDEL_W * MANDEL_H, sizeof *count_c));
    count_pe = bench_alloc_or_exit(calloc(MANDEL_W * MANDEL_H, sizeof *count_pe));
    points = bench_alloc_or_exit(malloc(sizeof(float) * POINTS * D));
    srand(31);
    for (int64_t i = 0; i < POINTS; i++) {
        double angle = 6.2831853 * (double)(i % CLUSTERS) / CLUSTERS;
        points[i * D] = (float)(4 * cos(angle)) + 1.5f * ((float)rand() / (float)RAND_MAX - 0.5f);
        points[i * D + 1] = (float)(4 * sin(angle)) + 1.5f * ((float)rand() / (float)RAND_MAX - 0.5f);
    }
    cent0 = buffer(CLUSTERS * D), cent_c = buffer(CLUSTERS * D), cent_pe = buffer(CLUSTERS * D);
    for (int64_t j = 0; j < CLUSTERS * D; j++) cent0[j] = points[(j / D) * 7 * D + j % D];
    assign_c = bench_alloc_or_exit(calloc(POINTS, sizeof *assign_c));
    lr_x = bench_alloc_or_exit(malloc(sizeof(double) * LOGREG_N * LOGREG_D));
    lr_y = bench_alloc_or_exit(malloc(sizeof(double) * LOGREG_N));
    lr_z = bench_alloc_or_exit(malloc(sizeof(double) * LOGREG_N));
    lr_w_c = bench_alloc_or_exit(malloc(sizeof(double) * LOGREG_D));
    lr_w_pe = bench_alloc_or_exit(malloc(sizeof(double) * LOGREG_D));
    logreg_samples(lr_x, lr_y, LOGREG_N, LOGREG_D, 7);
}

/* bytes into BENCH_GALLERY_RESULTS/name, for bench/peers.py. */
static void write_result(const char *name, const void *bytes, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", results_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, n, f) != n) fprintf(stderr, "bench_gallery: cannot write %s\n", path);
    if (f) fclose(f);
}

static void measure(const workload *w)
{
    double t_c[MAX_RUNS], t_pe[MAX_RUNS];
    w->c(), w->pe(); /* warm-up: compiles, pages */
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        w->c();
        double t1 = now();
        w->pe();
        double t2 = now();
        t_c[r] = t1 - t0, t_pe[r] = t2 - t1;
    }
    double c_ms = median(t_c, runs) * 1e3, pe_ms = median(t_pe, runs) * 1e3, d = w->check();
    bool ok = d <= w->tolerance;
    wrong += !ok;
    printf("%-34s %10.2f %10.2f %8.2fx  PE at %6.1f%% of the C loop  %s %.2g\n", w->name, c_ms, pe_ms, pe_ms / c_ms, 100 * c_ms / pe_ms,
           ok ? "ok" : "WRONG", d);
    if (tsv) fprintf(tsv, "%s\tC\t%.6g\tms\n%s\tPE\t%.6g\tms\n", w->short_name, c_ms, w->short_name, pe_ms);
    if (results_dir) write_result(w->result_file, w->c_result, w->result_bytes);
}

int main(int argc, char **argv)
{
    runs = argc > 1 ? atoi(argv[1]) : 5;
    if (argc > 2 || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "usage: %s [runs 1..%d]\n", argv[0], MAX_RUNS);
        return 2;
    }
    if (!getenv("OMP_WAIT_POLICY")) { /* spinning OpenMP threads would take the PE run's cores */
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    if (pe_init(&(pe_config){.device = 1}) != PE_OK) return 1;
    pe_device_info info;
    pe_device_info(0, &info);
    printf("PE %s on %s (ISA %s, %d hardware threads); C: " PE_BENCH_C_FLAGS ", %d OpenMP threads\n",
           pe_version(), info.name, info.arch, info.cores, c_threads());
    printf("median of %d rounds (one C run, one PE run) after a warm-up\n\n", runs);
    printf("%-34s %10s %10s %9s\n", "gallery workload (ms)", "C loop", "PE", "PE/C");
    setup();
    const workload all[] = {
        {"heat2d 2048x2048, 10 steps", "heat2d 2048^2 x10", heat_c_run, heat_pe_run, heat_check, 1e-6, "heat2d.f32", heat_c,
         sizeof(float) * HEAT_N * HEAT_N},
        {"jacobi 1024x1024, 100 sweeps + reads", "jacobi 1024^2 x100", jacobi_c_run, jacobi_pe_run, jacobi_check, 1e-12,
         "jacobi.f64", jac_c, sizeof(double) * JACOBI_N * JACOBI_N},
        {"nbody 4096 bodies, accelerations", "nbody 4096", nbody_c_run, nbody_pe_run, nbody_check, 1e-4, "nbody.f32", acc_c,
         sizeof(float) * 3 * BODIES},
        {"mandelbrot 1024x768, 100 iterations", "mandelbrot 1024x768", mandel_c_run, mandel_pe_run, mandel_check,
         1e-3 * MANDEL_W * MANDEL_H, "mandelbrot.i32", count_c, sizeof(int32_t) * MANDEL_W * MANDEL_H},
        {"kmeans 200000 x 16, 10 iterations", "kmeans 200000x16", kmeans_c_run, kmeans_pe_run, kmeans_check, 1e-4, "kmeans.f32", cent_c,
         sizeof(float) * CLUSTERS * D},
        {"logreg 200000 x 32, 50 steps + reads", "logreg 200000x32 x50", logreg_c_run, logreg_pe_run, logreg_check, 1e-9,
         "logreg.f64", lr_w_c, sizeof(double) * LOGREG_D},
    };
    const char *tsv_path = getenv("BENCH_TSV");
    if (tsv_path && *tsv_path) tsv = fopen(tsv_path, "a");
    results_dir = getenv("BENCH_GALLERY_RESULTS");
    if (results_dir && !*results_dir) results_dir = NULL;
    if (results_dir) { /* logreg's samples, for NumPy's run on the same data */
        write_result("logreg_x.f64", lr_x, sizeof(double) * LOGREG_N * LOGREG_D);
        write_result("logreg_y.f64", lr_y, sizeof(double) * LOGREG_N);
    }
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) measure(&all[k]);
    if (tsv) fclose(tsv);
    pe_shutdown();
    return wrong ? 1 : 0;
}
