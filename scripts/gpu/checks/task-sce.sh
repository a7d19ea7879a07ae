#!/usr/bin/env bash
# softmax_cross_entropy on the H200 (issue #15): validation, the bench table of naive and expert,
# the starter's verdict, the golden cross-check against PyTorch float64 on dumped inputs, and
# PyTorch eager on the bench shapes (about 120 s). Extras named after OUT: `compile` adds
# torch.compile of the same program (about 60 s: compilation); `variants` builds and runs
# tools/devbench/softmax_cross_entropy/variants.cu (memcpy ceiling, two-pass, expert; about 45 s).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/task-sce.sh CARRY OUT [compile] [variants]
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=softmax_cross_entropy
step() {  # step NAME SECONDS CMD... : runs with a deadline, log in $out/NAME.log
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc wall_s=$((SECONDS - t0))"
  return $rc
}
step validate 20 "$d2k" tasks validate $task && echo "PASS validate" || echo "FAIL validate"
if step bench 90 "$d2k" bench --task $task --targets naive,expert,library --quiet --json "$out/bench_$task.jsonl" \
    --markdown "$out/bench_$task.md"; then echo "PASS bench (every built-in target PASSED; no library target for this task)"; else echo "FAIL bench"; fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -14
# The starter must fail correctness with INCORRECT_* and never crash.
step starter 30 "$d2k" bench --task $task --targets solution --solution-dir dataset/$task/starter/cuda --quiet
grep -q "INCORRECT_" "$out/starter.log" && echo "PASS starter fails with INCORRECT_*" || echo "FAIL starter verdict"
step dump 25 "$d2k" check --task $task --impl expert --quiet --rounds 1 --dump "$out/dump"
if python3 -c "import torch" 2>/dev/null; then
  step golden 20 python3 tools/devbench/$task/golden_check.py "$out/dump" --dataset dataset \
    && echo "PASS golden cross-check" || echo "FAIL golden cross-check"
  tail -12 "$out/golden.log"
  step torch 40 python3 tools/devbench/$task/torch_eager.py --samples 20 --csv "$out/torch.csv"
  grep -E "^\||kernels|torch " "$out/torch.log" | cut -c1-300
  if [[ " ${*:3} " == *" compile "* ]]; then
    step torch_compile 90 python3 tools/devbench/$task/torch_eager.py --samples 20 --compile --csv "$out/torch_compile.csv"
    grep -E "^\|.*torch_compile" "$out/torch_compile.log" | cut -c1-300
  fi
else
  echo "SKIP golden cross-check and PyTorch timings: no torch on this machine"
fi
if [[ " ${*:3} " == *" variants "* ]]; then
  step variants_build 60 "$D2K_NVCC" -O3 -arch=sm_90a -std=c++20 --expt-relaxed-constexpr -Iinclude \
    -I"$carry/dlpack-include" tools/devbench/$task/variants.cu -o "$out/sce_variants"
  step variants 60 "$out/sce_variants" 20
  grep -E "^\|" "$out/variants.log"
fi
rm -rf "$out/dump"  # large (.npy of every check workload); the golden log keeps the errors
# SASS of the expert: what design.json's "recognise" fields name (16-byte accesses, MUFU.EX2 fed by
# FFMA, shuffles, the cluster barrier, DSMEM loads).
if command -v cuobjdump > /dev/null || [ -x /usr/local/cuda/bin/cuobjdump ]; then
  PATH=$PATH:/usr/local/cuda/bin cuobjdump --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "(LDG|STG|LDS|STS)\.E?\.?[0-9A-Z.]*128[A-Z.]*|MUFU\.(EX2|LG2)|UCGABAR_[A-Z]+|SHFL\.BFLY|FFMA" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
fi
