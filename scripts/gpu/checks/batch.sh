#!/usr/bin/env bash
# One real batch on the GPU with the fake agent that copies each pilot's expert in (issue #20):
# fused_add_rmsnorm and hash_join on the cuda track, muon_optimizer_step on the cutlass track (its
# expert uses CUTLASS), levels baseline and design, the runner's own check timing each against
# naive. Must show: every attempt done, verdict PASSED, a speed-up vs naive, no failure; the
# status tables are in OUT/batch/status-*.txt. A run cut by the deadline resumes on a second call.
# Usage: scripts/gpu/checks/batch.sh CARRY OUT (repository root).
set -uo pipefail
source scripts/gpu/env.sh "$1" "$2"
log="$out/batch"; mkdir -p "$log"
d2k="$carry/d2k"
runs="$log/runs"
pass=0; fail=0
check() {  # check NAME COMMAND...: runs it, logs it, prints a pass/fail line
  local name=$1; shift
  if "$@" >"$log/$name.log" 2>&1; then echo "PASS $name"; pass=$((pass + 1));
  else echo "FAIL $name (log: $log/$name.log)"; tail -5 "$log/$name.log" | sed 's/^/    /'; fail=$((fail + 1)); fi
}
# A short timing per workload: this shows the path, not a measurement for the tables.
export D2K_CHECK_ARGS="${D2K_CHECK_ARGS:---max-time 1}"
fake="$PWD/tests/fixtures/fake_agent/copy_expert.sh"
setup() {  # setup NAME TASKS TRACK
  [ -f "$runs/$1/run.json" ] && return 0  # set up by an earlier call: resume
  "$d2k" batch setup --name "$1" --tasks "$2" --tracks "$3" --levels baseline,design --agent script \
    --var script="$fake" --runs-dir "$runs" --wall-s 60 --concurrency 1 --backoff-s 5
}
all_passed() {  # all_passed RUN: every attempt done, PASSED, with a speed-up, no failure
  "$d2k" batch status "$1" --runs-dir "$runs" --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
bad = [a["id"] + ": " + a["state"] + " " + a["verdict"] + " " + a["reason"] for a in s["attempts"]
       if a["state"] != "done" or a["verdict"] != "PASSED" or a["failure"] or not a["speedup_vs_naive"]]
print("\n".join(bad) or "all passed")
sys.exit(1 if bad else 0)'
}
# BATCH_RUNS: which of the two runs (a call with little time left takes one); BATCH_CUDA_S and
# BATCH_CUTLASS_S: their deadlines (each attempt's check takes about 30 s on the H200).
batch_runs=${BATCH_RUNS:-pilots-cuda pilots-cutlass}
for r in $batch_runs; do
  case $r in
    pilots-cuda) check setup_cuda setup pilots-cuda fused_add_rmsnorm,hash_join cuda
                 check run_cuda timeout "${BATCH_CUDA_S:-150}" "$d2k" batch run pilots-cuda --runs-dir "$runs" ;;
    pilots-cutlass) check setup_cutlass setup pilots-cutlass muon_optimizer_step cutlass
                    check run_cutlass timeout "${BATCH_CUTLASS_S:-90}" "$d2k" batch run pilots-cutlass --runs-dir "$runs" ;;
  esac
done
for r in $batch_runs; do
  "$d2k" batch status "$r" --runs-dir "$runs" > "$log/status-$r.txt" 2>&1
  cat "$log/status-$r.txt"
  check "passed_$r" all_passed "$r"
done
echo "batch: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
