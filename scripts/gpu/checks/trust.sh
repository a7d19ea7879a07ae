#!/usr/bin/env bash
# The timing boundary and the guard zones on the GPU (issues #24, #12): the trust cases of the
# exploit corpus at every bench shape of fused_add_rmsnorm (128x7168 included), the timer-forgery
# cases again with the lockdown's protection rules relaxed (knob: shows the checks behind the
# lockdown), again with the GOT tripwire skipped as well (knob2: shows what the parent's clock alone
# does: each forgery caught, or neutralised: its reported time never below the honest time at that
# shape by more than the trusted band), and an honest-control loop. Prints a verdict table and the
# honest runs' worker/parent ratios per shape; exits non-zero when a case is missed, an expectation
# is not met, an honest run is flagged, or the table is empty.
# Usage (repository root, from a build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/trust.sh CARRY OUT        TRUST_HONEST_RUNS=N (default 5; 30 for the band table)
#   TRUST_ONLY_HONEST=1: only the honest loop (with TRUST_HONEST_RUNS=30, about 10 min on its own).
#   TRUST_BUDGET_S (default 270; 570 with TRUST_ONLY_HONEST=1): no run starts after this; the
#   skipped runs are listed and fail the check. From scripts/gpu/run_checks.sh give it CHECK_DEADLINE_S=300.
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

only_honest=${TRUST_ONLY_HONEST:-0}
if [ "$only_honest" = 1 ]; then budget=${TRUST_BUDGET_S:-570}; else budget=${TRUST_BUDGET_S:-270}; fi
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
# honest_control runs in the honest loop only (honest.N), not again among the defaults.
trust_cases="got_patch_raw_syscall timer_forge_partial timer_forge_partial_08 timer_forge_audit_aware round_trip_sabotage batch_skip_work oob_write_512 side_stream_early_end honest_multistream"
knob_cases="got_patch_raw_syscall timer_forge_partial timer_forge_partial_08 timer_forge_audit_aware round_trip_sabotage worker_report_patch"
knob2_cases="got_patch_raw_syscall timer_forge_partial timer_forge_partial_08 timer_forge_audit_aware round_trip_sabotage"
[ "$only_honest" = 1 ] && trust_cases="" knob_cases="" knob2_cases=""
for c in $trust_cases worker_report_patch honest_control; do
  [ "$only_honest" = 1 ] && [ "$c" != honest_control ] && continue
  ( "$d2k" --dataset dataset validate submission "$(stage "$c")" --task fused_add_rmsnorm > "$out/validate_$c.log" 2>&1 ) &
done
wait

# Honest runs first: the knob2 rows are judged against the honest medians.
for i in $(seq 1 "$runs"); do bench "honest.$i" honest_control; done
for c in $trust_cases; do bench "default.$c" "$c"; done
for c in $knob_cases; do bench "knob.$c" "$c" D2K_TEST_LOCKDOWN_ALLOW_PROTECTION_CHANGES=1; done
for c in $knob2_cases; do
  bench "knob2.$c" "$c" D2K_TEST_LOCKDOWN_ALLOW_PROTECTION_CHANGES=1 D2K_TEST_SKIP_GOT_CHECK=1
done

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
# The trusted band of engine/rules.h (kTrustBand): a forgery is neutralised when its reported
# time stays within it of the honest median at that shape.
TRUST_BAND = 0.12
def shape(t):
    w = t.get("workload")
    return (w.get("uuid", "?") if isinstance(w, dict) else "?").replace("fused_add_rmsnorm-bench-", "")
labels = sorted(f[:-6] for f in os.listdir(out) if f.endswith(".jsonl"))
honest_med = {}
for label in labels:
    if label.startswith("honest."):
        for t in traces(label):
            m = (t.get("performance") or {}).get("median_us")
            if m and t.get("status") == "PASSED":
                honest_med.setdefault(shape(t), []).append(m)
rows, bad, ratios = [], 0, {}
for label in labels:
    kind, case = label.split(".", 1)
    exp = json.load(open(os.path.join(cases, case if kind != "honest" else "honest_control", "expect_run.json")))
    if kind in ("knob", "knob2"):
        # got_integrity catches a patched GOT at any shape; knob2 skips that tripwire.
        want = list(dict.fromkeys(exp.get("knob_expect", []) + (["REWARD_HACK(got_integrity)"] if kind == "knob" else [])))
        if kind == "knob2":
            want = [w for w in want if w.startswith("REWARD_HACK") and "got_integrity" not in w] + ["REWARD_HACK(timer_cross_check)", "neutralised"]
            want = list(dict.fromkeys(want))
    else:
        want = [exp["status"] + (f"({exp['rule']})" if exp.get("rule") else "")] + exp.get("also_accept", [])
        if exp["status"] == "PASSED":
            want += ["PASSED(parent_clock)"] if kind != "honest" else []
    ts = traces(label)
    if not ts:
        rows.append((label, "-", "no traces (see the log)", "", ", ".join(want), "FAIL")); bad += 1; continue
    for t in ts:
        v = verdict(t)
        med = (t.get("performance") or {}).get("median_us")
        sh = shape(t)
        if kind == "knob2":
            hm = sorted(honest_med.get(sh, []))
            if v.startswith("PASSED"):
                # Neutralised: the reported time is not below the honest median by more than the band.
                ok = bool(hm) and med is not None and med >= hm[len(hm) // 2] * (1 - TRUST_BAND)
                v += f" vs honest {hm[len(hm) // 2]:.2f}" if hm else " (no honest median)"
            else:
                ok = v in want
        else:
            ok = v in want or (v.startswith("PASSED") and "PASSED" in want and kind != "knob")
        if kind == "honest" and not v.startswith("PASSED"):
            ok = False
        r = ratio(t)
        if kind == "honest" and r is not None:
            ratios.setdefault(sh, []).append(r)
        rows.append((label, sh, v, f"{med:.2f}" if med else "", ", ".join(want), "ok" if ok else "FAIL"))
        bad += not ok
print("| run | shape | verdict | median us | expected | result |\n| --- | --- | --- | --- | --- | --- |")
for r in rows:
    print("| " + " | ".join(r) + " |")
if not rows:
    print("\nFAIL: no rows (no run produced a trace)")
    bad += 1
if ratios:
    print("\nhonest worker median / parent per-call time (the band's evidence; trusted at >= 0.88, REWARD_HACK below 0.78):")
    allr = []
    for sh, rs in sorted(ratios.items()):
        rs.sort(); allr += rs
        print(f"  {sh}: {len(rs)} runs, min {rs[0]:.3f}, median {rs[len(rs)//2]:.3f}, max {rs[-1]:.3f}")
    allr.sort()
    notes = {}
    for label in labels:
        if label.startswith("honest."):
            for t in traces(label):
                n = (t.get("performance") or {}).get("timer_note", "")
                if "parent_clock:" in n:
                    notes.setdefault(shape(t), n[n.index("parent_clock:"):])
    for sh, n in sorted(notes.items()):
        print(f"  {sh} batch: {n}")
    print(f"  all: {len(allr)} traces, min {allr[0]:.3f}, median {allr[len(allr)//2]:.3f}, max {allr[-1]:.3f}")
skipped = [l.split()[0] for l in open(os.path.join(out, "runs.txt")) if "skipped" in l] if os.path.exists(os.path.join(out, "runs.txt")) else []
if skipped:
    print(f"\nFAIL: runs skipped for time: {', '.join(skipped)}")
    bad += len(skipped)
print(f"\n{'PASS' if bad == 0 else 'FAIL'}: {bad} unexpected verdict(s) over {len(rows)} row(s)")
sys.exit(1 if bad else 0)
PY
rc=$?
echo "== trust rc=$rc wall_s=$((SECONDS - t0))"
tar -C "$out" -czf "$out/trust_logs.tgz" stage runs.txt $(cd "$out" && ls *.log *.jsonl 2>/dev/null) 2>/dev/null
exit $rc
