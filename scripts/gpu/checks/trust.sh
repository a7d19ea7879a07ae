#!/usr/bin/env bash
# The timing boundary and the guard zones on the GPU (issues #24, #12): the trust cases of the
# exploit corpus at every bench shape of fused_add_rmsnorm (128x7168 included), the timer-forgery
# cases again with the lockdown's protection rules relaxed (the test knob: shows the checks behind
# the lockdown), and an honest-control loop. Prints a verdict table; exits non-zero when a case
# is missed, an expectation is not met, or an honest run is flagged.
# Usage (repository root, from a build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/trust.sh CARRY OUT        TRUST_HONEST_RUNS=N (default 5; 30 for the band table)
#   TRUST_BUDGET_S (default 270): no run starts after this; the skipped runs are listed and fail the
#   check. From scripts/gpu/run_checks.sh give it CHECK_DEADLINE_S=300.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
out=$(cd "$out" && pwd)
d2k="$carry/d2k"
runs=${TRUST_HONEST_RUNS:-5}
shapes="fused_add_rmsnorm-bench-128x7168,fused_add_rmsnorm-bench-4096x4096,fused_add_rmsnorm-bench-16384x8192,fused_add_rmsnorm-bench-32768x5120"
cases_dir=tests/adversarial
t0=$SECONDS

stage() {  # stage CASE -> folder with solution.cu and the shared headers
  local dir="$out/stage/$1"
  mkdir -p "$dir" && cp "$cases_dir/$1/solution.cu" "$cases_dir"/common/*.cuh "$dir/"
  echo "$dir"
}

budget=${TRUST_BUDGET_S:-270}
bench() {  # bench LABEL CASE [ENV...]: one d2k bench over every bench shape, traces in OUT/LABEL.jsonl
  local label=$1 case=$2; shift 2
  if [ $((SECONDS - t0)) -gt "$budget" ]; then echo "$label skipped (budget)" >> "$out/runs.txt"; return; fi
  local dir; dir=$(stage "$case")
  env "$@" timeout 240 "$d2k" --dataset dataset bench --task fused_add_rmsnorm --targets solution \
    --solution-dir "$dir" --json "$out/$label.jsonl" --workloads "$shapes" --max-time 0.2 --bench-rounds 1 --quiet \
    > "$out/$label.log" 2>&1
  echo "$label rc=$? t=$((SECONDS - t0))s" >> "$out/runs.txt"
}

# Compile every case first (offline stage, parallel), so the timed runs below do not wait on nvcc.
trust_cases="got_patch_raw_syscall timer_forge_partial timer_forge_partial_08 timer_forge_audit_aware round_trip_sabotage batch_skip_work oob_write_512 side_stream_early_end honest_control honest_multistream"
for c in $trust_cases; do
  ( "$d2k" --dataset dataset validate submission "$(stage "$c")" --task fused_add_rmsnorm > "$out/validate_$c.log" 2>&1 ) &
done
wait

for c in $trust_cases; do bench "default.$c" "$c"; done
for c in got_patch_raw_syscall timer_forge_partial timer_forge_partial_08 timer_forge_audit_aware round_trip_sabotage worker_report_patch; do
  bench "knob.$c" "$c" D2K_TEST_LOCKDOWN_ALLOW_PROTECTION_CHANGES=1
done
for i in $(seq 1 "$runs"); do bench "honest.$i" honest_control; done

python3 - "$out" "$cases_dir" <<'PY'
import json, os, re, sys
out, cases = sys.argv[1], sys.argv[2]
def traces(label):
    p = os.path.join(out, label + ".jsonl")
    ts = []
    if os.path.exists(p):
        for line in open(p):
            try:
                t = json.loads(line)
            except ValueError:
                continue
            if t.get("target") == "solution":
                ts.append(t)
    return ts
def verdict(t):
    s, r = t.get("status", "?"), t.get("rule", "")
    perf = t.get("performance") or {}
    if s == "PASSED" and perf.get("timer") == "parent_clock":
        return "PASSED(parent_clock)"
    return f"{s}({r})" if r else s
def ratio(t):
    m = re.search(r"([0-9.]+) us per call, worker median ([0-9.]+) us", (t.get("performance") or {}).get("timer_note", ""))
    return (float(m.group(2)) / float(m.group(1))) if m and float(m.group(1)) > 0 else None
rows, bad, ratios = [], 0, []
for label in sorted(f[:-6] for f in os.listdir(out) if f.endswith(".jsonl")):
    kind, case = label.split(".", 1)
    exp = json.load(open(os.path.join(cases, case if kind != "honest" else "honest_control", "expect_run.json")))
    if kind == "knob":
        want = exp.get("knob_expect", [])
    else:
        want = [exp["status"] + (f"({exp['rule']})" if exp.get("rule") else "")] + exp.get("also_accept", [])
        if exp["status"] == "PASSED":
            want += ["PASSED(parent_clock)"] if kind != "honest" else []
    ts = traces(label)
    if not ts:
        rows.append((label, "-", "no traces (see the log)", "", ", ".join(want), "FAIL")); bad += 1; continue
    for t in ts:
        v = verdict(t)
        ok = v in want or (v.startswith("PASSED") and "PASSED" in want and kind != "knob")
        if kind == "honest" and not v.startswith("PASSED"):
            ok = False
        r = ratio(t)
        if kind == "honest" and r is not None:
            ratios.append(r)
        med = (t.get("performance") or {}).get("median_us")
        uuid = (t.get("workload") or {}).get("uuid", "?") if isinstance(t.get("workload"), dict) else "?"
        rows.append((label, uuid.replace("fused_add_rmsnorm-bench-", ""), v,
                     f"{med:.2f}" if med else "", ", ".join(want), "ok" if ok else "FAIL"))
        bad += not ok
print("| run | shape | verdict | median us | expected | result |\n| --- | --- | --- | --- | --- | --- |")
for r in rows:
    print("| " + " | ".join(r) + " |")
if ratios:
    ratios.sort()
    print(f"\nhonest worker median / parent per-call time over {len(ratios)} traces: min {ratios[0]:.3f}, "
          f"median {ratios[len(ratios)//2]:.3f}, max {ratios[-1]:.3f} (trusted within 0.95, REWARD_HACK below 0.85)")
skipped = [l.split()[0] for l in open(os.path.join(out, "runs.txt")) if "skipped" in l] if os.path.exists(os.path.join(out, "runs.txt")) else []
if skipped:
    print(f"\nFAIL: runs skipped for time: {', '.join(skipped)}")
    bad += len(skipped)
print(f"\n{'PASS' if bad == 0 else 'FAIL'}: {bad} unexpected verdict(s)")
sys.exit(1 if bad else 0)
PY
rc=$?
echo "== trust rc=$rc wall_s=$((SECONDS - t0))"
tar -C "$out" -czf "$out/trust_logs.tgz" stage runs.txt $(cd "$out" && ls *.log *.jsonl 2>/dev/null) 2>/dev/null
exit $rc
