#!/usr/bin/env bash
# GPU checks of the measurement branch (issues 12, 24): calibrate (the stream rates of the memory
# floor), the measure GPU tests, the fused_add_rmsnorm bench with the graph column and %SOL, and
# N honest runs of naive + expert of every pilot (N = $D2K_HONEST_RUNS, default 3) counting
# REWARD_HACK statuses and timer fallbacks from the --json traces.
# Usage (repository root, a build packed by scripts/gpu/pack.sh): scripts/gpu/checks/measure.sh CARRY OUT
# (about 200-240 s at N = 3: run_checks.sh needs CHECK_DEADLINE_S=260 for it). Exit status: the
# number of failed steps and checks.
# Knobs for the 30-run table (issue #12), which does not fit one call at the default timing:
#   D2K_MEASURE_STEPS  steps to run, comma-separated, of calibrate,gpu_tests,graph,honest (default all)
#   D2K_HONEST_ARGS    extra `d2k bench` arguments of the honest runs (e.g. "--max-time 0.1 --bench-rounds 1")
#   D2K_HONEST_BUDGET_S no honest run starts after this many seconds; the runs not made are counted
#                      and fail the check (a shortened table is never reported as the full one)
#   D2K_HONEST_TASKS   the pilots of the honest runs, comma-separated (default all three): a call
#                      can then make up one pilot's missing runs without repeating the others'
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
out=$(cd "$out" && pwd)
d2k="$carry/d2k"
runs=${D2K_HONEST_RUNS:-3}
steps=",${D2K_MEASURE_STEPS:-calibrate,gpu_tests,graph,honest},"
honest_args=${D2K_HONEST_ARGS:-}
honest_budget=${D2K_HONEST_BUDGET_S:-100000}
D2K_HONEST_TASKS=${D2K_HONEST_TASKS:-fused_add_rmsnorm,hash_join,muon_optimizer_step}
ntasks=$(echo "$D2K_HONEST_TASKS" | tr ',' '\n' | grep -c .)
fails=0
selected() { [[ $steps == *",$1,"* ]]; }
{ nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv; date -u; } | tee "$out/gpu.txt"

step() {  # step NAME SECONDS CMD... : runs with a deadline, log in $out/NAME.log
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc wall_s=$((SECONDS - t0))"
  [ $rc -eq 0 ] || fails=$((fails + 1))
  return $rc
}

# 1. Calibrate: read, write, copy and in-stream write rates, deferred write-back per size.
if selected calibrate; then
step calibrate 90 "$d2k" calibrate
python3 - "$out/calibrate.log" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
c = json.loads(text[text.index("{"):])
tb = lambda k: c.get(k, 0) / 1e12
print(f"rates TB/s: copy {tb('copy_bw_Bps'):.3f} read {tb('read_bw_Bps'):.3f} write {tb('write_bw_Bps'):.3f} "
      f"stream_write {tb('stream_write_bw_Bps'):.3f}; L2 {c.get('l2_bytes', 0) / 2**20:.0f} MiB")
for row in c.get("details", {}).get("stream", {}).get("sizes", []):
    print(f"  copy {row['bytes_each_way'] / 2**20:6.0f} MiB each way: min {row['min_s'] * 1e6:9.2f} us "
          f"(timer {row['timer']}), deferred {row['deferred_bytes'] / 2**20:6.2f} MiB, "
          f"copy-model %SOL {row['copy_model_pct_of_sol']:.1f}")
ok = c.get("stream_write_bw_Bps", 0) > 0 and c.get("read_bw_Bps", 0) > 0
print("PASS calibrate: stream rates present" if ok else "FAIL calibrate: no stream rates")
sys.exit(0 if ok else 1)
PY
[ $? -eq 0 ] || fails=$((fails + 1))
fi

# 2. The measure GPU tests (timer, audit sampling, graph replays audited, kernel sets).
if selected gpu_tests; then
  step measure_gpu_tests 100 env D2K_TEST_OUT="$out/gpu_tests" "$carry/gpu_tests/measure_gpu_tests" --gtest_brief=1
  grep -E "^\[  (PASSED|FAILED) |^\[(graph|many blocks|three kernels)" "$out/measure_gpu_tests.log" | head -20
fi

# 3. fused_add_rmsnorm, naive + expert, with the graph column: %SOL (<= 100 %) and graph vs eager.
selected graph && step bench_rmsnorm_graph 120 "$d2k" bench --task fused_add_rmsnorm --targets naive,expert --graph \
  --quiet --no-sample-checks --json "$out/bench_rmsnorm_graph.jsonl"

# 4. N honest runs of naive + expert of each pilot.
skipped_runs=0
t_honest=$SECONDS
selected honest || runs=0
for i in $(seq 1 "$runs"); do
  for task in ${D2K_HONEST_TASKS//,/ }; do
    if [ $((SECONDS - t_honest)) -ge "$honest_budget" ]; then skipped_runs=$((skipped_runs + 1)); continue; fi
    # The whole verdict path, the parent's clock included: runs with --no-sample-checks never
    # met the parent's batch, and missed the false timer_cross_check it gave hash_join's expert
    # at r64m-s256m (docs/results/honest-pilots-2026-12-02.md).
    # shellcheck disable=SC2086  # honest_args is a list of arguments
    step "honest_${task}_$i" 120 "$d2k" bench --task "$task" --targets naive,expert --quiet \
      $honest_args --json "$out/honest_${task}_$i.jsonl"
  done
done
if [ "$skipped_runs" -gt 0 ]; then
  echo "FAIL honest runs: $skipped_runs of $((runs * ntasks)) task runs not started (D2K_HONEST_BUDGET_S=$honest_budget)"
  fails=$((fails + 1))
fi

python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
def traces(path):
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.strip()]
ok = True
rows = 0
print("\n%SOL and graph vs eager (fused_add_rmsnorm, bench rows):")
print(f"{'target':8} {'workload':34} {'eager us':>10} {'graph us':>10} {'graph/eager':>11} {'%SOL':>7} model  timer")
for t in traces(f"{out}/bench_rmsnorm_graph.jsonl"):
    if (t.get("role") or (t.get("workload") or {}).get("role")) != "bench" or t.get("status") != "PASSED":
        if (t.get("role") or (t.get("workload") or {}).get("role")) == "bench":
            print(f"{t['target']:8} {t.get('workload_uuid', '')[:34]:34} {t.get('status')} {t.get('rule', '')}")
            ok = False
        continue
    rows += 1
    p, r = t["performance"], t.get("roofline") or {}
    g = p.get("graph_median_us")
    ratio = g / p["median_us"] if g else float("nan")
    axes = ",".join(f"{k}={v}" for k, v in sorted(t.get("axes", {}).items()))
    print(f"{t['target']:8} {axes[:34]:34} {p['median_us']:10.2f} {g or 0:10.2f} {ratio:11.3f} "
          f"{r.get('pct_sol', 0):7.1f} {r.get('memory_model', '?'):6} {p['timer']}")
    if r.get("memory_model") != "stream":
        print(f"FAIL memory model {r.get('memory_model')!r} (not the calibrated stream model) for {t['target']} {axes}"); ok = False
    if r.get("pct_sol", 0) > 100.0:
        print(f"FAIL %SOL above 100 for {t['target']} {axes}"); ok = False
    if g and ratio > 1.02:
        print(f"FAIL graph slower than eager beyond noise for {t['target']} {axes}"); ok = False
if os.path.exists(f"{out}/bench_rmsnorm_graph.jsonl"):  # the graph step ran (D2K_MEASURE_STEPS)
    ok = ok and rows > 0  # no row read: nothing shown
    print("PASS rmsnorm %SOL <= 100 and graph <= eager" if ok else "FAIL rmsnorm %SOL or graph column")
honest_ok = True

hacks, fallbacks, lost, timed, viol = 0, 0, 0, 0, 0
per_target = {}  # (task, target) -> [runs, bench rows timed, rows PASSED]
checks = [0, 0]  # check-workload traces, of which PASSED
for path in sorted(glob.glob(f"{out}/honest_*.jsonl")):
    task = os.path.basename(path)[len("honest_"):].rsplit("_", 1)[0]
    seen = set()
    for t in traces(path):
        if (t.get("role") or (t.get("workload") or {}).get("role")) != "bench":
            # Check workloads (public, hidden) carry no time, but a false verdict there counts too.
            checks[0] += 1
            checks[1] += t.get("status") == "PASSED"
            if t.get("status") != "PASSED":
                print(f"  {t.get('status')}({t.get('rule')}) {os.path.basename(path)} {t['target']} check "
                      f"{t.get('axes')}: {t.get('message', '')[:160]}")
            continue
        row = per_target.setdefault((task, t["target"]), [0, 0, 0])
        if t["target"] not in seen:
            seen.add(t["target"]); row[0] += 1
        row[1] += 1
        row[2] += t.get("status") == "PASSED"
        if t.get("status") == "REWARD_HACK":
            hacks += 1
            print(f"  REWARD_HACK({t.get('rule')}) {os.path.basename(path)} {t['target']} {t.get('axes')}: {t.get('message', '')[:160]}")
        p = t.get("performance")
        if not p:
            continue
        timed += 1
        if p.get("timer") != "events_corrected":
            # The lost-record signature: the events - span difference spreads between samples.
            lost_sig = "varies between samples" in p.get("timer_note", "")
            fallbacks += lost_sig
            print(f"  fallback{' (lost-record signature)' if lost_sig else ''} {os.path.basename(path)} {t['target']} "
                  f"{t.get('axes')}: {p.get('timer')}: {p.get('timer_note', '')[:160]}")
        lost += p.get("audit_incomplete", 0)
        viol += len(p.get("violations", {}))
print("\nhonest runs per pilot and target: runs, bench rows, rows PASSED")
for (task, target), (n, rows_, passed) in sorted(per_target.items()):
    print(f"  {task:22} {target:8} {n:4} {rows_:5} {passed:5}")
print(f"\ncheck traces: {checks[1]} of {checks[0]} PASSED")
print(f"honest runs: {timed} timed rows, {hacks} REWARD_HACK, {fallbacks} timer fallbacks with the lost-record signature, "
      f"{viol} tripwire violations, {lost} audit samples with a lost record (missing data)")
# No timed row means the traces were not read: that proves nothing.
honest_ok = timed > 0 and hacks == 0 and fallbacks == 0 and viol == 0 and checks[0] == checks[1]
print("PASS honest runs" if honest_ok else "FAIL honest runs")
sys.exit((0 if ok else 1) + (0 if honest_ok else 1))
PY
fails=$((fails + $?))
echo "measure checks: $fails failed"
exit "$fails"
