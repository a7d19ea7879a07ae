#!/usr/bin/env bash
# GPU checks of the dedupe2 branch (issues #12/#14: the worker's thread baseline before any
# candidate code, bounded by the parent's own count of the worker's process group), from a build
# packed by scripts/gpu/pack.sh:
#  1. the Python corpus case thread_left_running is caught (REWARD_HACK(no_threads_after_call));
#     before this branch it was MISSED (docs/results/tracks-python-2026-12-02.md);
#  2. no honest target is flagged by the earlier baseline: the honest Triton control of the corpus,
#     the triton expert of fused_add_rmsnorm and both PyTorch targets (torch_eager, torch_compile:
#     their runtime's threads must all exist at the baseline, d2k_shim.warm_runtime) PASS, and the
#     CUDA expert too;
#  3. the golden cross-check of histogram through the shared lib/golden.py (PASS lines, exit 0).
# Usage (repository root): scripts/gpu/checks/dedupe2.sh CARRY OUT   (at most about 120 s)
set -uo pipefail
out=$2
budget=120
source "$(dirname "$0")/../env.sh" "$1" "$out"
out=$(cd "$out" && pwd)
carry=$(cd "$1" && pwd)
d2k="$carry/d2k"
source "$(dirname "$0")/lib/steps.sh"
detect_torch venv
chmod -R o+rX "$PWD/src/tracks/python" "$PWD/tests/adversarial/python" "$PWD/dataset" 2>/dev/null

# 1 and the corpus's controls: the table names each case's verdict.
step python_corpus 50 python3 tests/adversarial/python/run_python.py --d2k "$d2k" --case-timeout 30 \
  --only thread_left_running,honest_triton,os_fork --out "$out/python_corpus.md" --keep "$out/python_corpus"
rc=$?
cat "$out/python_corpus.md" 2>/dev/null || tail -20 "$out/python_corpus.log"
if grep -q "thread_left_running.*no_threads_after_call.*| caught" "$out/python_corpus.md" 2>/dev/null; then
  pass "thread_left_running caught as REWARD_HACK(no_threads_after_call)"
else
  fail "thread_left_running not caught (see python_corpus.md)"
fi
[ "$rc" -eq 0 ] && pass "python corpus subset: no case missed, no control flagged" ||
  fail "python corpus subset rc=$rc (see python_corpus.md)"

# 2. Honest Python and CUDA targets are not flagged by the baseline taken before their code runs.
task=fused_add_rmsnorm
targets=solution,expert
[ "$have_torch" = 1 ] && targets+=,torch_eager,torch_compile
bench_step honest_bench 45 "$targets" \
  fused_add_rmsnorm-check-7x264,fused_add_rmsnorm-bench-4096x4096 --track triton \
  --solution-dir dataset/fused_add_rmsnorm/expert_triton --max-time 0.3 --bench-rounds 1
grep -c no_threads_after_call "$out/honest_bench.jsonl" 2> /dev/null | grep -qx 0 &&
  pass "no honest target flagged no_threads_after_call" || fail "an honest target flagged no_threads_after_call"

# 3. A golden cross-check through lib/golden.py.
task=histogram
golden_step --pass "vs torch.bincount (lib/golden.py)" 20 "$(workload_uuids check 'n4099\|n12345')" \
  scripts/gpu/checks/t-hist/golden_check.py

echo "dedupe2: $fails failure(s)"
exit $((fails > 0))
