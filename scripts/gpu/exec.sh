#!/usr/bin/env bash
# exec's GPU test (a compiled solution called through the ABI, sandboxed CUDA workers with every
# isolation layer) and the sandbox test, as the GPU machine's user (root there), from a carry made
# by scripts/gpu/pack.sh; the machine's facts and each test's detail lines go to OUT.
# Usage (repository root): scripts/gpu/exec.sh CARRY OUT
set -uo pipefail
source "$(dirname "$0")/env.sh" "$1" "$2"
{
  date -u
  echo "host $(hostname) kernel $(uname -r) $(id)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "nvcc: $D2K_NVCC  gcc: $(command -v gcc || echo absent)  bwrap: $(command -v bwrap || echo absent)"
  ls -l /dev/nvidia*
} 2>&1 | tee "$out/env.txt"

run() {  # run NAME SECONDS BINARY
  timeout "$2" "$3" > "$out/$1.log" 2>&1
  echo "$1: exit $?; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$out/$1.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [A-Z]' "$out/$1.log" | sort -u
}
run exec_gpu_test 55 "$carry/exec/exec_gpu_test"
[ -x "$carry/exec/exec_sandbox_test" ] && run exec_sandbox_test 25 "$carry/exec/exec_sandbox_test"
grep -hE -A2 '^\[(compile|sandboxed|illegal|ipc|RLIMIT|deny)' "$out/exec_gpu_test.log" | cut -c1-400
grep -hE 'layers:|skipped:|^  [a-z_]+: ' "$out/exec_sandbox_test.log" 2>/dev/null | head -12
