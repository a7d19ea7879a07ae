#!/usr/bin/env bash
# GPU checks of the build plumbing (run by scripts/gpu/run_checks.sh from session.sh, or alone):
#   1. the carry is self-contained: include/d2k/solution.h and include/dlpack/dlpack.h beside d2k,
#      tests/fixtures, and the expert variant libraries built from `// %VARIANT%` lines;
#   2. every built-in implementation of the three pilots still passes `d2k check` after the move
#      of their argument checks and workspace carving into solution.h's helpers;
#   3. an expert variant is timed by name (`--targets expert:generic`; needs the `seams` branch's
#      target resolution).
# Usage (repository root): scripts/gpu/checks/plumbing.sh CARRY OUT   (about 100 s)
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
pass=0; fail=0
result() {  # result NAME RC
  if [ "$2" -eq 0 ]; then echo "PASS $1"; pass=$((pass + 1)); else echo "FAIL $1 (rc=$2)"; fail=$((fail + 1)); fi
}
for f in include/d2k/solution.h include/dlpack/dlpack.h tests/fixtures/solutions/vector_add \
         impl/fused_add_rmsnorm/expert_generic.so impl/hash_join/expert_rows8_1cta.so; do
  [ -e "$carry/$f" ]; result "carry has $f" $?
done
for task in fused_add_rmsnorm hash_join muon_optimizer_step; do
  for impl in naive expert library; do
    [ -f "$carry/impl/$task/$impl.so" ] || continue
    timeout 60 "$d2k" check --task "$task" --impl "$impl" --rounds 1 --quiet > "$out/check_${task}_$impl.log" 2>&1
    rc=$?
    grep -q "FAILED\|INCORRECT\|RUNTIME_ERROR\|INVALID" "$out/check_${task}_$impl.log" && rc=1
    result "check $task $impl" $rc
    [ $rc -eq 0 ] || tail -5 "$out/check_${task}_$impl.log"
  done
done
timeout 60 "$d2k" bench --task fused_add_rmsnorm --targets expert,expert:generic --quiet \
  --json "$out/bench_variant.jsonl" > "$out/bench_variant.log" 2>&1
rc=$?; result "bench --targets expert,expert:generic" $rc
[ $rc -eq 0 ] || tail -5 "$out/bench_variant.log"
grep -E "expert" "$out/bench_variant.log" | grep -v " check " | head -8
echo "plumbing checks: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
