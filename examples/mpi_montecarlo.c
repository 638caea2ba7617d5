/* mpi_montecarlo.c — montecarlo.c's European call across MPI ranks: each
 * rank draws its own Philox stream (key: the seed and the rank, so no two
 * ranks share counters), sums its payoffs and their squares in fused
 * kernels (the draws are never stored), and MPI_Reduce adds the partial
 * sums on rank 0, which prices the call with its standard error and checks
 * it against the Black-Scholes closed form within 4 standard errors.
 *
 *   mpirun -np P mpi_montecarlo [paths per rank]   (default 2000000, > 1) */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <pe.h>

#include "mpi_pe.h"

static double cnd(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int64_t n = argc > 1 ? atoll(argv[1]) : 2000000;
    if (argc > 2 || n <= 1) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np P %s [paths per rank > 1]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    const double s0 = 100, k = 105, r = 0.05, v = 0.2, t = 1;
    const double drift = (r - 0.5 * v * v) * t, vol = v * sqrt(t), discount = exp(-r * t);

    if (pe_init(NULL) != PE_OK) MPI_Abort(MPI_COMM_WORLD, 1);
    pe_push_error_handler(mpi_pe_abort_job, NULL); /* an error ends the job (mpi_pe.h) */
    pe_rng rng = pe_rng_create(PE_RNG_PHILOX, 20261126u | (uint64_t)rank << 32); /* (seed, rank) */
    pe_scope scope = pe_scope_begin();
    pe_array z = pe_rng_normal(rng, PE_F64, 1, &n);
    pe_array up = pe_mul(s0, pe_exp(pe_add(drift, pe_mul(vol, z))));
    pe_array down = pe_mul(s0, pe_exp(pe_sub(drift, pe_mul(vol, z))));
    pe_array call = pe_mul(0.5, pe_add(pe_max(pe_sub(up, k), 0.0), pe_max(pe_sub(down, k), 0.0)));
    double part[2] = {0, 0}, total[2] = {0, 0};
    pe_read_f64(pe_sum(call), &part[0]);
    pe_read_f64(pe_sum(pe_mul(call, call)), &part[1]);
    pe_scope_end(scope);
    pe_rng_destroy(rng);
    pe_shutdown();
    MPI_Reduce(part, total, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int rc = 0;
    if (rank == 0) {
        double paths = (double)n * ranks, mean = total[0] / paths, var = total[1] / paths - mean * mean;
        double price = discount * mean, se = discount * sqrt(var > 0 ? var : 0) / sqrt(paths);
        double d1 = (log(s0 / k) + (r + 0.5 * v * v) * t) / vol, d2 = d1 - vol;
        double bs = s0 * cnd(d1) - k * discount * cnd(d2);
        rc = fabs(price - bs) <= 4 * se ? 0 : 1;
        printf("call on %d ranks x %lld paths: Monte Carlo %.5f +- %.5f, Black-Scholes %.5f (%.1f standard errors) -> %s\n",
               ranks, (long long)n, price, se, bs, fabs(price - bs) / se, rc ? "MISMATCH" : "OK");
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
