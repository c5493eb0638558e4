#!/usr/bin/env bash
# Runs a test program under mpirun: run_mpi.sh NP PROGRAM ARGS...
# Exit 77 (meson: SKIP) when mpirun is absent. An outer timeout (ACCEL_TEST_OUTER_TIMEOUT
# seconds, default 240) guarantees that no test hangs, whatever the ranks do.
set -u
np=$1
shift
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (scripts/install-deps --tests installs Open MPI)" >&2
  exit 77
fi
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Shared memory + self only (no network probing in containers). Containers without ptrace
# rights for CMA need ACCEL_TEST_MPI_ARGS="--mca btl_vader_single_copy_mechanism none" (large
# messages then cost ~8x more here).
# shellcheck disable=SC2086
exec timeout --kill-after=10 "${ACCEL_TEST_OUTER_TIMEOUT:-240}" \
  mpirun --oversubscribe -np "$np" --mca btl self,vader ${ACCEL_TEST_MPI_ARGS:-} "$@"
