#!/usr/bin/env bash
# The capability scorer's machine-code evidence on the H200 (issue #21): after a bench of the
# pilots' experts, `d2k design evidence --check` must find each signature item built AND in a
# kernel the audit saw run (CUPTI's kernel names matched to cuobjdump's), and muon's naive must
# lack HGMMA. No judge is involved (no network there).
# Usage: scripts/gpu/checks/scorer.sh CARRY OUT   (about 90 s; SCORER_BUDGET_S)
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
budget=${SCORER_BUDGET_S:-110}
source "$(dirname "$0")/lib/steps.sh"

first_bench() { python3 -c "import json,sys
for l in open(sys.argv[1]):
    w=json.loads(l)
    if w.get('role')=='bench': print(w['uuid']); break" "dataset/$1/workloads.jsonl"; }

for spec in "muon_optimizer_step L3.wgmma_tma_warp_specialised" "fused_add_rmsnorm L3.vector_16B_access" \
            "topk_topp_mask L3.shared_histogram_atomics"; do
  set -- $spec; task=$1 item=$2
  step "bench_$task" 40 "$d2k" bench --task "$task" --targets expert --workloads "$(first_bench "$task")" \
    --json "$out/$task.jsonl" || { fail "$task: bench of the expert (see bench_$task.log)"; continue; }
  step "evidence_$task" 20 "$d2k" design evidence --task "$task" --impl expert --check "$out/$task.jsonl"
  if grep -Eq "^  $item +built +ran: yes" "$out/evidence_$task.log"; then pass "$task: $item built and ran"
  else fail "$task: $item not 'built, ran: yes' (see evidence_$task.log)"; fi
done
step evidence_muon_naive 20 "$d2k" design evidence --task muon_optimizer_step --impl naive
grep -Eq "^  L3.wgmma_tma_warp_specialised +not_built" "$out/evidence_muon_naive.log" \
  && pass "muon naive: no HGMMA" || fail "muon naive: HGMMA item not 'not_built' (see evidence_muon_naive.log)"
echo "scorer: $fails failure(s)"
exit "$fails"
