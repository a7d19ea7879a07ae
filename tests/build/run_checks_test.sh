#!/usr/bin/env bash
# scripts/gpu/run_checks.sh against three stand-in check scripts: one passes, one fails, one
# outlives its deadline. Each must get its own summary line, the slow one must be cut off at the
# deadline (not run to its end), and the exit status must count the two that did not pass.
set -uo pipefail
runner=$(cd "$(dirname "$0")/../.." && pwd)/scripts/gpu/run_checks.sh
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/checks" "$work/carry"
printf 'echo "ok: carry=$1"\n[ -d "$2" ] && echo "PASS a"\n' > "$work/checks/a_pass.sh"
printf 'echo "FAIL b: expected 3 got 4"\nexit 3\n' > "$work/checks/b_fail.sh"
printf 'echo started\nsleep 30\necho "should not be reached"\n' > "$work/checks/c_slow.sh"
t0=$SECONDS
CHECK_DEADLINE_S=2 "$runner" "$work/carry" "$work/out" "$work/checks" > "$work/summary.txt" 2>&1
rc=$?
cat "$work/summary.txt"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" -eq 2 ] || fail "exit status $rc, expected 2 (two checks did not pass)"
grep -qx "check a_pass: PASS wall_s=[0-9]*" "$work/summary.txt" || fail "no PASS line for a_pass"
grep -qx "check b_fail: FAIL rc=3 wall_s=[0-9]*: FAIL b: expected 3 got 4" "$work/summary.txt" || fail "no FAIL line for b_fail"
grep -qx "check c_slow: TIMEOUT after 2s (log checks/c_slow.log)" "$work/summary.txt" || fail "no TIMEOUT line for c_slow"
grep -q "should not be reached" "$work/out/checks/c_slow.log" && fail "c_slow ran past its deadline"
[ $((SECONDS - t0)) -lt 25 ] || fail "the deadline did not stop c_slow"
grep -q "PASS a" "$work/out/checks/a_pass.log" || fail "a_pass did not get its OUT folder"
echo "OK: run_checks.sh summarises pass, fail and timeout"
