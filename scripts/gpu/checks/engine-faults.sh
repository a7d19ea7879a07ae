#!/usr/bin/env bash
# The engine's open faults on the H200 (issues #12, #14, #17), one run:
#  - timer: the measure GPU tests, TimerGpu.FlushMakesSmallReReadCold among them (graph replays
#    whose offset varies are timed as events less the smallest audited offset);
#  - SOL: fused_add_rmsnorm naive + expert at every bench shape (%SOL must stay <= 100 with the
#    ceilings taken from the fastest calibration repetition);
#  - torch_compile: fused_add_rmsnorm's pytorch.py as torch_eager and torch_compile (the failure's
#    first line now names the exception);
#  - memory: tpch_q1 at SF100 (23 GB of lineitem: the parent sizes its sets to free memory);
#  - tpch_q6's cost model: q6_sectors (task-tpch/q6_sectors.cu) times a predicate-ordered scan
#    against a full one, and under ncu reads the DRAM bytes each fetches.
# Usage: scripts/gpu/checks/engine-faults.sh CARRY OUT   (about 4 minutes; ENGINE_BUDGET_S)
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
budget=${ENGINE_BUDGET_S:-280}
source "$(dirname "$0")/lib/steps.sh"

step timer 60 "$carry/gpu_tests/measure_gpu_tests" --gtest_filter='TimerGpu.*' \
  && pass "measure GPU tests (TimerGpu.*)" || fail "measure GPU tests (see timer.log)"
grep -E "^\[  (FAILED|PASSED) |FAILED  \]|graph, not flushed|graph, flushed" "$out/timer.log" | head -12

step rmsnorm 60 "$d2k" bench --task fused_add_rmsnorm --targets naive,expert --quiet --json "$out/rmsnorm.jsonl" \
  && pass "rmsnorm bench" || fail "rmsnorm bench (see rmsnorm.log)"
python3 - "$out/rmsnorm.jsonl" <<'PY'
import json, sys
worst = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    r = t.get("roofline") or {}
    if t.get("performance") and r:
        worst = max(worst, r.get("pct_sol", 0))
        print(f"  {t['target']:8s} {t['workload']['uuid']:40s} {t['performance']['median_us']:9.2f} us "
              f"{r.get('pct_sol', 0):6.1f} %SOL noise {t['performance'].get('rel_noise', 0) * 100:.2f} %")
print(("PASS" if 0 < worst <= 100 else "FAIL") + f" highest %SOL {worst:.1f} (must be <= 100)")
PY
[ $? -eq 0 ] || fails=$((fails + 1))

step torch 90 "$d2k" bench --task fused_add_rmsnorm --targets torch_eager,torch_compile --workloads \
  fused_add_rmsnorm-bench-4096x4096 --json "$out/torch.jsonl" \
  && pass "torch_eager + torch_compile" || fail "torch targets (see torch.log)"
grep -E "torch_|PASSED|ERROR|failed" "$out/torch.log" | cut -c1-300 | head -12
python3 -c "
import json,sys
for l in open('$out/torch.jsonl'):
    t=json.loads(l); print(' ', t['target'], t['status'], (t.get('message') or '')[:1500].replace('\n',' | '))
" 2>&1 | head -8

step q1 120 "$d2k" bench --task tpch_q1 --targets naive,expert --workloads tpch_q1-bench-sf100 --quiet \
  --json "$out/q1.jsonl" && pass "tpch_q1 SF100 (memory sized to the device)" || fail "tpch_q1 SF100 (see q1.log)"
tail -6 "$out/q1.log" | cut -c1-240

step q6_build 40 "$D2K_NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
  scripts/gpu/checks/task-tpch/q6_sectors.cu -o "$out/q6_sectors"
step q6 30 "$out/q6_sectors" 600000000 20 && cat "$out/q6.log"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2> /dev/null)
if [ -n "$ncu" ]; then
  step q6_ncu 60 "$ncu" --metrics dram__bytes_read.sum,dram__sectors_read.sum -k regex:q6 "$out/q6_sectors" 60000000 1
  grep -E "q6<|dram__" "$out/q6_ncu.log" | head -12
fi
echo "engine-faults: $fails failure(s)"
exit "$fails"
