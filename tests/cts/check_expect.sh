#!/bin/sh
# accel-cts expectation files (--expect): an xfail case that passes fails the run with XPASS; an
# unsupported case is SKIPped with the file's reason; a line that matches no case and a
# malformed line are usage errors (exit 2).
# usage: check_expect.sh ACCEL_CTS
set -u
cts=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/accel-cts-expect.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

# run EXPECTED_STATUS FILE_CONTENT -> output in $tmp/out
run() {
  want=$1
  printf '%s\n' "$2" >"$tmp/expect"
  "$cts" --device cpu --mode eager --filter device_ --expect "$tmp/expect" >"$tmp/out" 2>&1
  got=$?
  cat "$tmp/out"
  [ "$got" = "$want" ] || fail "exit status $got, want $want for: $2"
}

echo "== xfail on a passing case: XPASS fails the run"
run 1 "# a comment line
device_info_sane  xfail  pretend this is broken"
grep -q '^XPASS  device_info_sane: passed, but expected to fail (pretend this is broken)' \
  "$tmp/out" || fail "no XPASS line"
grep -q ', 0 xfail, 1 xpass$' "$tmp/out" || fail "summary does not count the xpass"

echo "== unsupported (glob, one mode): SKIP with the reason, run passes"
run 0 "device_open_*@eager unsupported this device opens only once"
grep -q '^SKIP  device_open_twice_same_handle: unsupported on cpu: this device opens only once$' \
  "$tmp/out" || fail "no SKIP line with the reason"

echo "== a line of another mode does not apply"
run 0 "device_info_sane@graph xfail graph only"
grep -q '^PASS  device_info_sane$' "$tmp/out" || fail "a graph-mode line applied in eager mode"

echo "== a line matching no case"
run 2 "no_such_case xfail stale"
grep -q 'matches no case' "$tmp/out" || fail "no message about the stale line"

echo "== malformed lines"
run 2 "device_info_sane maybe why"
grep -q 'unknown expectation' "$tmp/out" || fail "no message about the unknown kind"
run 2 "device_info_sane xfail"
grep -q "expected 'CASE" "$tmp/out" || fail "a line without a reason was accepted"

[ "$failures" = 0 ] || exit 1
echo "expectation files: all checks passed"
