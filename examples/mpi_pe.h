/* mpi_pe.h — what the MPI examples share: a PE error handler that ends the
 * whole job with PE's message.  Without it a rank's error would abort that
 * rank only (or, with a handler that continues, leave it computing invalid
 * arrays) while the others wait forever in their next exchange. */
#ifndef PE_EXAMPLES_MPI_PE_H
#define PE_EXAMPLES_MPI_PE_H

#include <mpi.h>
#include <stdio.h>

#include <pe.h>

static int mpi_pe_abort_job(const pe_error *e, void *user)
{
    (void)user;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "rank %d: %s\n", rank, e->message);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    return 0;
}

#endif
