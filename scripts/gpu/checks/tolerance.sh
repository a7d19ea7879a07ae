#!/usr/bin/env bash
# Tolerances checked both ways on the H200, fused_add_rmsnorm: cheaper kernels (bf16-only and
# fp16 arithmetic, fp16 storage of out, truncated residual_out, a reduction without its last 8
# columns) must be INCORRECT_NUMERICAL on every check workload under the ulp rule, and the honest
# control, naive and expert must pass every check workload (and the bench workload 128x7168, which
# is judged against naive on the device: the device comparator under the same rule).
# Runs from prebuilt binaries in CARRY (scripts/gpu/pack.sh); logs under OUT.
# Usage (repository root): scripts/gpu/checks/tolerance.sh CARRY OUT
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
out=$(cd "$out" && pwd)
t0=$SECONDS
cases=honest_control,fp16_downgrade,precision_bf16_only,precision_fp16_storage,precision_truncated_residual,precision_drop_last8
timeout 100 python3 tests/adversarial/run_runtime.py --d2k "$carry/d2k" --jobs 6 --case-timeout 90 --only "$cases" \
  --out "$out/tolerance_table.md" > "$out/tolerance_variants.log" 2>&1
rc_variants=$?
echo "== variants rc=$rc_variants wall_s=$((SECONDS - t0))"
cat "$out/tolerance_table.md" 2>/dev/null || tail -20 "$out/tolerance_variants.log"
# The honest baselines under the new rule, every check workload (hidden ones included) and one bench.
t1=$SECONDS
timeout 100 "$carry/d2k" bench --task fused_add_rmsnorm --targets naive,expert \
  --workloads fused_add_rmsnorm-check-7x264,fused_add_rmsnorm-check-33x4104,fused_add_rmsnorm-check-130x7168,fused_add_rmsnorm-check-3x65528,fused_add_rmsnorm-bench-128x7168 \
  --json "$out/tolerance_baselines.json" > "$out/tolerance_baselines.log" 2>&1
rc_base=$?
echo "== baselines rc=$rc_base wall_s=$((SECONDS - t1))"
python3 - "$out/tolerance_baselines.json" <<'PY'
import json, sys
try:
    traces = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
except (OSError, ValueError) as e:
    print(f"FAIL baselines: no traces ({e})"); sys.exit(0)
for t in traces:
    w = t.get("workload") or {}
    uuid = w.get("uuid", "") if isinstance(w, dict) else str(w)
    ok = t.get("status") == "PASSED"
    print(f"{'PASS' if ok else 'FAIL'} {t.get('target')} {uuid} {t.get('status')} {t.get('message', '')[:160]}")
PY
# The device comparators give the host's verdict, counts and largest ulp error under the ulp rule.
t2=$SECONDS
timeout 60 "$carry/gpu_tests/test_gpu_compare" --gtest_filter='GpuCompare.*' > "$out/tolerance_gpu_compare.log" 2>&1
rc_cmp=$?
echo "== gpu compare rc=$rc_cmp wall_s=$((SECONDS - t2))"
grep -E "^\[ +(OK|FAILED) +\]" "$out/tolerance_gpu_compare.log" | sed 's/^/  /'
[ $rc_variants -eq 0 ] && [ $rc_base -eq 0 ] && [ $rc_cmp -eq 0 ] && echo "PASS tolerance" || echo "FAIL tolerance"
