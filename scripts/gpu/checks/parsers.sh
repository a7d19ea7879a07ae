#!/usr/bin/env bash
# GPU checks of the `parsers` branch (one generator schema read by generation, one dtype codec):
# the device generators stay bit-identical to the host ones, and every pilot task still passes
# `tasks validate` (now a dry run of every workload) and a correctness check of its naive and
# expert implementations on the GPU.
# Usage (repository root, from a build packed by scripts/gpu/pack.sh): scripts/gpu/checks/parsers.sh CARRY OUT
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
fail=0
t0=$SECONDS
timeout 60 "$carry/gpu_tests/test_gpu_generators" > "$out/test_gpu_generators.log" 2>&1
rc=$?; [ $rc -eq 0 ] && echo "PASS test_gpu_generators (device bits == host bits)" || { echo "FAIL test_gpu_generators rc=$rc"; fail=1; }
timeout 30 "$carry/d2k" tasks validate > "$out/validate.log" 2>&1
rc=$?; [ $rc -eq 0 ] && echo "PASS tasks validate: $(tail -1 "$out/validate.log")" || { echo "FAIL tasks validate rc=$rc"; tail -5 "$out/validate.log"; fail=1; }
for task in $(ls -d dataset/*/ | xargs -n1 basename); do
  for impl in naive expert; do
    timeout 40 "$carry/d2k" check --task "$task" --impl "$impl" --rounds 1 --quiet > "$out/check_${task}_${impl}.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then echo "PASS check $task $impl"; else echo "FAIL check $task $impl rc=$rc"; tail -3 "$out/check_${task}_${impl}.log"; fail=1; fi
  done
done
echo "== parsers checks: $([ $fail -eq 0 ] && echo PASS || echo FAIL) wall_s=$((SECONDS - t0))"
exit $fail
