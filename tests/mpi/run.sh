#!/usr/bin/env bash
# run.sh BIN_DIR — the MPI examples under mpirun: mpi_heat2d on 1, 2 and 4
# ranks (4 oversubscribed on this 2-core machine), PE_THREADS per rank so
# that ranks x threads = cores; the grid's hash and the residual must be
# bitwise the same for every rank count, and each run equal to the plain C
# loop; mpi_montecarlo on 1, 2, 4 ranks within 4 standard errors of
# Black-Scholes; then one rank given an invalid input: the job must end (no hang)
# with PE's message naming the line, and a non-zero status.
set -euo pipefail
bin=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cores=$(nproc)
fail() { echo "FAIL: $*"; exit 1; }
first=""
for np in 1 2 4; do
  threads=$((cores / np)); [ "$threads" -ge 1 ] || threads=1
  out=$(PE_THREADS=$threads timeout 300 mpirun -np "$np" "$bin/mpi_heat2d" 130 40 2>&1) || { echo "$out"; fail "np=$np failed"; }
  echo "$out"
  echo "$out" | grep -q -- "-> OK" || fail "np=$np differs from the C loop"
  line=$(echo "$out" | grep "grid hash")
  [ -z "$first" ] && first=$line
  [ "$line" = "$first" ] || fail "np=$np: '$line' differs from np=1's '$first'"
done
echo "mpi_heat2d: bitwise the same on 1, 2 and 4 ranks"
for np in 1 2 4; do # per-rank Philox streams, partial sums reduced on rank 0: within 4 standard errors
  threads=$((cores / np)); [ "$threads" -ge 1 ] || threads=1
  out=$(PE_THREADS=$threads timeout 300 mpirun -np "$np" "$bin/mpi_montecarlo" 300000 2>&1) || { echo "$out"; fail "mpi_montecarlo np=$np failed"; }
  echo "$out" | grep "Monte Carlo" || fail "mpi_montecarlo np=$np printed no price"
done
set +e
out=$(PE_THREADS=1 timeout 120 mpirun -np 2 "$bin/mpi_heat2d" 64 5 --fail-rank 1 2>&1); rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "a failing rank: status $rc (124: the job hung)"
echo "$out" | grep -q "mpi_heat2d.c:[0-9]*: main: pe_add: shapes" || { echo "$out"; fail "no PE message from the failing rank"; }
echo "a failing rank ends the job with PE's message"
