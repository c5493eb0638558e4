#!/usr/bin/env bash
# check_fault.sh NP FAULT WAIT PROGRAM: runs the fault test under mpirun with
# ACCEL_COMM_TIMEOUT=3, ACCEL_COMM_MPI_WAIT=WAIT (block: the engine's watchdog reports and
# aborts; poll: accel_comm_get_error reports and the program aborts) and an outer timeout;
# passes when the job ended (not by the outer timeout) with a failure status, within the limit,
# and every surviving rank reported that a collective did not complete.
set -u
# A fifth argument "persist": the steps are graph replays with ACCEL_COMM_MPI_PERSISTENT=1.
np=$1 fault=$2 wait=$3 prog=$4 persist=${5:-}
graph=0
[[ $persist == persist ]] && graph=1
here=$(dirname "$0")
limit=${ACCEL_FAULT_LIMIT:-60}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
# Open MPI would kill the survivors as soon as one rank exits non-zero; turning that off makes
# the survivors find the dead rank themselves (the ACCEL_COMM_TIMEOUT path under test).
ACCEL_COMM_MPI_PERSISTENT=$graph ACCEL_COMM_TIMEOUT=3 ACCEL_COMM_MPI_WAIT=$wait OMPI_MCA_orte_abort_on_non_zero_status=0 ACCEL_TEST_OUTER_TIMEOUT=$limit \
  "$here/run_mpi.sh" "$np" "$prog" --fault "$fault" --graph "$graph" >"$out" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
[[ $rc -eq 77 ]] && exit 77
if [[ $rc -eq 0 || $rc -eq 124 || $rc -eq 137 ]]; then
  echo "FAIL: job status $rc after ${elapsed}s (0: fault unnoticed; 124/137: hung until the outer timeout)"
  exit 1
fi
for ((r = 0; r < np - 1; ++r)); do
  if ! grep -Eq "rank $r(: comm error at step 3)?: .*did not complete within" "$out"; then
    echo "FAIL: rank $r did not report the communicator error"
    exit 1
  fi
done
echo "PASS: job ended with status $rc after ${elapsed}s; ranks 0..$((np - 2)) reported the error"
