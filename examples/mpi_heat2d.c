/* mpi_heat2d.c — heat2d.c decomposed by rows across MPI ranks, one PE
 * runtime per rank (PE itself knows nothing of MPI).
 *
 * Each rank holds rows [r0, r0 + m) of the n x n grid.  A time step:
 *   1. halo exchange without copies: the rank's first and last rows are sent
 *      straight from the grid's host buffer (pe_map), and the neighbours'
 *      rows are received into buffers that PE then adopts (pe_adopt: the
 *      buffer becomes the array, no copy);
 *   2. the five-point update as one kernel: the north and south neighbours
 *      are concats of a halo row and a slice of the block (selects by
 *      coordinate inside the kernel), east and west shifted views, the
 *      global boundary kept by a select.
 * The residual sum((u_new - u)^2) is made identical for every number of
 * ranks: each rank sums each of its rows (in f64, a deterministic reduction
 * along an axis), MPI_Allgatherv gathers the row sums in row order, and
 * every rank adds them in that order.  So the grid and the residual are
 * bitwise the same for np = 1, 2, 4 (tests/mpi/run.sh compares them);
 * rank 0 also checks the grid against heat2d's plain C loop on the whole
 * grid.
 *
 *   mpirun -np P mpi_heat2d [n] [steps] [--fail-rank R]
 *       n >= 3 with n >= P (default 256), steps >= 1 (default 50);
 *       --fail-rank R: rank R passes PE an invalid shape (the error test):
 *       the job ends with PE's message, not a hang
 * Prints the grid's hash and the residual (hexadecimal float) per run. */
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pe.h>

#include "heat2d_c.h"
#include "mpi_pe.h"


static void free_halo(void *data, void *ctx)
{
    (void)ctx;
    free(data);
}

/* A received row (n floats, malloc'd) adopted as a 1 x n array: PE frees it. */
static pe_array adopt_row(float *row, int64_t n) { return pe_adopt(PE_F32, 2, ((int64_t[]){1, n}), row, free_halo, NULL); }

/* One step of the block u (m x n, global rows [r0, r0 + m)) with the halo
 * rows above and below it (1 x n; copies of the boundary where there is no
 * neighbour: never read then, the select keeps the boundary). */
static pe_array step(pe_array u, pe_array above, pe_array below, pe_array inside, int64_t m, int64_t n)
{
    pe_array north = m > 1 ? pe_concat(above, pe_slice(u, ((int64_t[]){0, 0}), ((int64_t[]){m - 1, n})), 0) : above;
    pe_array south = m > 1 ? pe_concat(pe_slice(u, ((int64_t[]){1, 0}), ((int64_t[]){m - 1, n})), below, 0) : below;
    pe_array tiled = pe_periodic(u, 2, ((int64_t[]){m, 2 * n}));
    pe_array west = pe_slice(tiled, ((int64_t[]){0, n - 1}), ((int64_t[]){m, n}));
    pe_array east = pe_slice(tiled, ((int64_t[]){0, 1}), ((int64_t[]){m, n}));
    pe_array around = pe_add(pe_add(pe_add(north, south), west), east);
    return pe_cond(inside, pe_add(u, pe_mul(ALPHA, pe_sub(around, pe_mul(4.0f, u)))), u);
}

static uint64_t fnv1a(const void *data, size_t bytes)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < bytes; k++) h = (h ^ ((const unsigned char *)data)[k]) * 1099511628211ull;
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int64_t n = 256;
    long steps = 50;
    int fail_rank = -1, positional = 0;
    bool bad = false;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--fail-rank") == 0 && a + 1 < argc) fail_rank = atoi(argv[++a]);
        else if (positional == 0) n = atoll(argv[a]), positional++;
        else if (positional == 1) steps = atol(argv[a]), positional++;
        else bad = true;
    }
    if (bad || n < 3 || n < ranks || n > 65536 || steps < 1) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np P %s [n >= 3, n >= P] [steps >= 1] [--fail-rank R]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    /* rows [r0, r0 + m): the first n % ranks ranks take one more */
    int64_t base = n / ranks, extra = n % ranks;
    int64_t m = base + (rank < extra), r0 = rank * base + (rank < extra ? rank : extra);
    float *block = calloc((size_t)(m * n), sizeof *block);
    unsigned char *inside = malloc((size_t)(m * n));
    if (!block || !inside) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t g = r0 + i;
            if (g == 0) block[i * n + j] = 1.0f; /* the hot edge */
            inside[i * n + j] = g > 0 && g < n - 1 && j > 0 && j < n - 1;
        }
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < ranks - 1 ? rank + 1 : MPI_PROC_NULL;

    if (pe_init(NULL) != PE_OK) MPI_Abort(MPI_COMM_WORLD, 1);
    pe_push_error_handler(mpi_pe_abort_job, NULL); /* an error ends the job (mpi_pe.h) */
    pe_array u = pe_f32_2d(block, m, n), in = pe_from_host(PE_BOOL, 2, ((int64_t[]){m, n}), inside);
    if (rank == fail_rank) pe_add(u, pe_fill(PE_F32, 1, ((int64_t[]){n + 1}), 0.0)); /* shapes that do not broadcast */
    double *row_sums = malloc((size_t)n * sizeof *row_sums), residual = 0;
    int *counts = malloc((size_t)ranks * sizeof *counts), *starts = malloc((size_t)ranks * sizeof *starts);
    for (int r = 0; r < ranks; r++) counts[r] = (int)(base + (r < extra)), starts[r] = (int)(r * base + (r < extra ? r : extra));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long s = 0; s < steps; s++) {
        /* 1. halos: rows sent from the grid's own buffer, received rows adopted */
        const float *grid = pe_map(u);
        float *above = malloc((size_t)n * sizeof *above), *below = malloc((size_t)n * sizeof *below);
        if (!grid || !above || !below) MPI_Abort(MPI_COMM_WORLD, 1);
        memcpy(above, grid, (size_t)n * sizeof *above); /* no neighbour: never read (the select keeps row 0) */
        memcpy(below, grid + (m - 1) * n, (size_t)n * sizeof *below);
        MPI_Sendrecv(grid, (int)n, MPI_FLOAT, up, 0, below, (int)n, MPI_FLOAT, down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(grid + (m - 1) * n, (int)n, MPI_FLOAT, down, 1, above, (int)n, MPI_FLOAT, up, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        pe_unmap(u);
        /* 2. the update, and the residual's row sums on the last step */
        pe_scope scope = pe_scope_begin();
        pe_array next = pe_keep(step(u, adopt_row(above, n), adopt_row(below, n), in, m, n));
        if (s == steps - 1) {
            pe_array d = pe_sub(pe_cast(next, PE_F64), pe_cast(u, PE_F64));
            if (pe_read(pe_sum_axis(pe_mul(d, d), 1), row_sums + r0, (size_t)m * sizeof *row_sums) != PE_OK)
                MPI_Abort(MPI_COMM_WORLD, 1);
        }
        pe_scope_end(scope);
        pe_release(u);
        u = next;
    }
    double elapsed = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, row_sums, counts, starts, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int64_t i = 0; i < n; i++) residual += row_sums[i]; /* in row order, whatever the ranks */
    float *whole = rank == 0 ? malloc((size_t)(n * n) * sizeof *whole) : NULL;
    int *elem_counts = malloc((size_t)ranks * sizeof *elem_counts), *elem_starts = malloc((size_t)ranks * sizeof *elem_starts);
    for (int r = 0; r < ranks; r++) elem_counts[r] = counts[r] * (int)n, elem_starts[r] = starts[r] * (int)n;
    const float *grid = pe_map(u);
    MPI_Gatherv(grid, (int)(m * n), MPI_FLOAT, whole, elem_counts, elem_starts, MPI_FLOAT, 0, MPI_COMM_WORLD);
    pe_unmap(u);
    pe_release(u), pe_release(in);
    pe_shutdown();
    int rc = 0;
    if (rank == 0) { /* the plain C loop over the whole grid */
        float *a = c_heat(n, steps);
        if (!a) MPI_Abort(MPI_COMM_WORLD, 1);
        double worst = 0;
        for (int64_t k = 0; k < n * n; k++) worst = fmax(worst, fabs((double)whole[k] - a[k]));
        printf("heat equation on %d ranks, %lld x %lld grid, %ld steps (PE %s)\n", ranks, (long long)n, (long long)n, steps,
               pe_version());
        printf("grid hash %016llx residual %a\n", (unsigned long long)fnv1a(whole, (size_t)(n * n) * sizeof *whole), residual);
        printf("time stepping: %.3f s (the slowest rank)\n", slowest);
        printf("largest difference from the plain C loop: %.3g -> %s\n", worst, worst == 0 ? "OK" : "MISMATCH");
        rc = worst == 0 ? 0 : 1;
        free(a), free(whole);
    }
    free(block), free(inside), free(row_sums), free(counts), free(starts), free(elem_counts), free(elem_starts);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
