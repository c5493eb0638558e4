#!/usr/bin/env bash
# The device check's own logic (scripts/device-check), without a GPU: a fake nvidia-smi and
# plans (DEVICE_CHECK_PLAN) with a step that hangs, one that fails, "device absent" (77) on a
# gpu step and on an ordinary one, a failing gate, a spent budget, a signal mid-run; and the
# real plan's shape (--print-plan: at most 7 logs, every accel-bench call names a scenario).
#   test_device_check.sh SOURCE_ROOT
set -u
src=$1
dc=$src/scripts/device-check
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# A fake nvidia-smi: the compute capability comes from FAKE_CAP ('' : says nothing, exit 9).
mkdir -p "$tmp/bin"
cat >"$tmp/bin/nvidia-smi" <<'EOF'
#!/bin/sh
[ -n "${FAKE_CAP:-}" ] || { echo "NVIDIA-SMI has failed" >&2; exit 9; }
case "$*" in
  *--query-gpu=compute_cap*) echo "$FAKE_CAP" ;;
  *--query-gpu=*) echo "NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB" ;;
  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-fake)" ;;
esac
EOF
chmod +x "$tmp/bin/nvidia-smi"
export PATH=$tmp/bin:$PATH DEVICE_CHECK_BUILD=$tmp/build

line_of() { grep -E "^$1 " "$2/summary.txt"; }
expect_result() { # STEP RESULT OUTDIR
  local l
  l=$(line_of "$1" "$3")
  case "$l" in
    "$1 "*" $2 "*) ok "$1: $2" ;;
    *) fail "$1: expected $2, summary has '${l:-no line}'" ;;
  esac
}

# 1. hang, fail, 77 on gpu/ordinary steps; arch from nvidia-smi; the run goes on after a hang.
cat >"$tmp/plan1" <<'EOF'
# name|limit|expected|log|flags|requires|command
first|10|1|a.log|-|-|echo "arch=$DC_ARCH out=$DC_OUT"; test "$DC_ARCH" = 90
hang|2|1|a.log|-|-|echo $$ >"$DC_OUT/../hang.pid"; echo started; sleep 300; echo never
fails|10|1|b.log|-|-|echo boom; exit 3
gpu-absent|10|1|b.log|gpu|-|echo "device absent"; exit 77
optional|10|1|b.log|-|-|echo "nothing to do"; exit 77
after|10|1|b.log|-|-|echo still running | tr a-z A-Z
EOF
t0=$(date +%s)
FAKE_CAP=9.0 DEVICE_CHECK_PLAN=$tmp/plan1 "$dc" --out "$tmp/out1" --budget 120 >"$tmp/run1.txt" 2>&1
rc=$?
t=$(( $(date +%s) - t0 ))
[ "$rc" = 1 ] && ok "exit 1 when a step failed" || fail "exit $rc, expected 1"
[ "$t" -lt 40 ] && ok "the hanging step was stopped (${t} s in all)" || fail "took ${t} s"
head -n1 "$tmp/out1/summary.txt" | grep -q '^# accel device-check' && ok "summary header" ||
  fail "summary.txt does not start with its header"
grep -q 'compute capability 9.0 -> sm_90' "$tmp/out1/summary.txt" && ok "arch 90" ||
  fail "no 'sm_90' in the summary"
expect_result first PASS "$tmp/out1"
expect_result hang TIMEOUT "$tmp/out1"
expect_result fails FAIL "$tmp/out1"
expect_result gpu-absent FAIL "$tmp/out1"
expect_result optional SKIP "$tmp/out1"
expect_result after PASS "$tmp/out1"
line_of after "$tmp/out1" | grep -q 'STILL RUNNING' && ok "note = last output line" ||
  fail "the note of 'after' is not its last output line"
grep -q 'arch=90' "$tmp/out1/a.log" && ok "DC_ARCH reaches the steps" || fail "a.log lacks arch=90"
grep -q '^never' "$tmp/out1/a.log" && fail "the hanging step ran to its end"
pid=$(cat "$tmp/hang.pid" 2>/dev/null)
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
  fail "the hanging step's shell ($pid) is still alive"; kill -KILL "$pid"
else
  ok "the hanging step's processes are gone"
fi
n=$(find "$tmp/out1" -type f | wc -l)
[ "$n" -le 8 ] && [ "$n" = 3 ] && ok "$n files out" || fail "$n files in the output folder"
grep -q '# total .*2 passed, 2 failed, 1 timed out, 1 skipped' "$tmp/out1/summary.txt" &&
  ok "totals" || fail "totals: $(tail -n1 "$tmp/out1/summary.txt")"

# 2. a failed gate skips the rest; the budget caps a step and skips what no longer fits.
cat >"$tmp/plan2" <<'EOF'
build|10|1|a.log|gate|-|exit 1
cts|10|1|a.log|gpu|-|echo must not run
EOF
FAKE_CAP=10.0 DEVICE_CHECK_PLAN=$tmp/plan2 "$dc" --out "$tmp/out2" >/dev/null 2>&1
expect_result build FAIL "$tmp/out2"
expect_result cts SKIP "$tmp/out2"
grep -q 'must not run' "$tmp/out2/a.log" && fail "a step ran after its gate failed"
grep -q -- '-> sm_100' "$tmp/out2/summary.txt" && ok "compute capability 10.0 -> sm_100" ||
  fail "10.0 was not read as sm_100"
cat >"$tmp/plan3" <<'EOF'
slow|60|1|a.log|-|-|sleep 60
next|60|1|a.log|-|-|echo next
EOF
t0=$(date +%s)
FAKE_CAP=9.0 DEVICE_CHECK_PLAN=$tmp/plan3 "$dc" --out "$tmp/out3" --budget 6 >/dev/null 2>&1
t=$(( $(date +%s) - t0 ))
expect_result slow TIMEOUT "$tmp/out3"
expect_result next SKIP "$tmp/out3"
[ "$t" -lt 20 ] && ok "--budget 6 ended the run in ${t} s" || fail "--budget 6 took ${t} s"

# 3. no GPU: exit 77 and a summary that says so; a bad compute capability is an error.
FAKE_CAP='' "$dc" --out "$tmp/out4" >/dev/null 2>&1
rc=$?
[ "$rc" = 77 ] && ok "no GPU: exit 77" || fail "no GPU: exit $rc"
grep -q 'no NVIDIA GPU' "$tmp/out4/summary.txt" && ok "no GPU: said in the summary" ||
  fail "no GPU: summary lacks the reason"
FAKE_CAP='N/A' DEVICE_CHECK_PLAN=$tmp/plan2 "$dc" --out "$tmp/out5" >/dev/null 2>&1
rc=$?
[ "$rc" = 1 ] && ok "unreadable compute capability: exit 1" || fail "N/A: exit $rc"

# 4. a signal mid-step: the summary is still finished.
cat >"$tmp/plan6" <<'EOF'
long|100|1|a.log|-|-|sleep 100
EOF
FAKE_CAP=9.0 DEVICE_CHECK_PLAN=$tmp/plan6 "$dc" --out "$tmp/out6" >/dev/null 2>&1 &
bg=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do
  grep -q '^=== long' "$tmp/out6/a.log" 2>/dev/null && break
  sleep 0.5
done
kill -TERM "$bg"
wait "$bg"
grep -q "interrupted (signal) during step 'long'" "$tmp/out6/summary.txt" &&
  grep -q '^# total' "$tmp/out6/summary.txt" && ok "a signal still ends the summary" ||
  fail "after a signal: $(cat "$tmp/out6/summary.txt")"

# 5. a plan with more logs than come back is refused before anything runs.
for i in 1 2 3 4 5 6 7 8; do echo "s$i|5|1|l$i.log|-|-|true"; done >"$tmp/plan7"
FAKE_CAP=9.0 DEVICE_CHECK_PLAN=$tmp/plan7 "$dc" --out "$tmp/out7" >"$tmp/run7.txt" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q 'at most 7' "$tmp/out7/summary.txt" && ok "8 logs refused" ||
  fail "a plan of 8 logs: exit $rc"

# 6. the real plan: 7 fields a line, numbers where numbers go, every step in the budget's
# order, every accel-bench call with a scenario (accel-bench without one exits 2).
plan=$("$dc" --print-plan) || fail "--print-plan failed"
bad=$(printf '%s\n' "$plan" | awk -F'|' 'NF < 7 || $2 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ {print $1}')
[ -z "$bad" ] && ok "plan lines well formed" || fail "malformed plan lines: $bad"
for step in cts-eager cts-graph cts-lazy memcheck kernel-digest bench-overhead bench-graph \
            bench-kernels bench-optstep torch-parity torch-cuda nccl amp-step; do
  printf '%s\n' "$plan" | grep -q "^$step|" || fail "the plan has no step $step"
done
nobench=$(printf '%s\n' "$plan" | awk -F'|' '$7 ~ /accel-bench/' |
          grep -Ev 'accel-bench"? (overhead|graph|graph-cond|graph-update|kernels|optstep) ' | cut -d'|' -f1)
[ -z "$nobench" ] && ok "every accel-bench call names a scenario" ||
  fail "accel-bench without a scenario in: $nobench"
printf '%s\n' "$plan" | grep -q 'nvidia_archs\|sm_' && fail "the plan names an arch itself"
exp=$(printf '%s\n' "$plan" | awk -F'|' '{s += $3} END {print s}')
[ "$exp" -le 480 ] && ok "expected duration ${exp} s <= 480 s" || fail "expected ${exp} s"

echo "$((fails == 0 ? 1 : 0)) passed, $((fails == 0 ? 0 : 1)) failed"
[ "$fails" = 0 ]
