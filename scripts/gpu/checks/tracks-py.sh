#!/usr/bin/env bash
# GPU checks of the tracks-py branch (issue #14), from a build packed by scripts/gpu/pack.sh:
#  1. the triton expert of fused_add_rmsnorm through bench --track triton, with the CUDA expert
#     and the PyTorch targets torch_eager and torch_compile: every record PASSED, and the table
#     shows vs_eager / vs_compile;
#  2. the triton starters fail correctness (INCORRECT_*), not a crash;
#  3. the pytorch.py of muon_optimizer_step and hash_join pass as torch_eager (and muon as
#     torch_compile);
#  4. the Python exploit corpus (tests/adversarial/python): a verdict table, none missed.
# Usage (repository root): scripts/gpu/checks/tracks-py.sh CARRY OUT   (at most about 240 s)
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
out=$(cd "$out" && pwd)
d2k="$carry/d2k"
# The machine's Python (torch, Triton); the Python side of d2k from this checkout.
[ -x /opt/torch/.venv/bin/python3 ] && export D2K_PYTHON=/opt/torch/.venv/bin/python3
export D2K_PYTHON_SHIM_DIR="$PWD/src/tracks/python"
chmod -R o+rX "$PWD/src/tracks/python" "$PWD/tests/adversarial/python" "$PWD/dataset" 2>/dev/null
py=${D2K_PYTHON:-python3}
"$py" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
fails=0
verdict() {  # verdict NAME OK(0/1) DETAIL
  if [ "$2" -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi
}
run() {  # run NAME SECONDS CMD...: log in $out/NAME.log, exit code in $rc
  local name=$1 secs=$2; shift 2
  timeout "$secs" "$@" > "$out/$name.log" 2>&1; rc=$?
}
count() { grep -c "$1" "$2" 2>/dev/null || echo 0; }

# 1. The triton track end to end, beside the CUDA expert and both PyTorch targets.
wl=fused_add_rmsnorm-check-7x264,fused_add_rmsnorm-check-3x65528,fused_add_rmsnorm-bench-4096x4096,fused_add_rmsnorm-bench-16384x8192
run triton_bench 80 "$d2k" bench --task fused_add_rmsnorm --track triton \
  --targets solution,expert,torch_eager,torch_compile --solution-dir dataset/fused_add_rmsnorm/expert_triton \
  --workloads "$wl" --max-time 0.5 --bench-rounds 1 --quiet --json "$out/triton_bench.jsonl"
n=$(count '"status":"PASSED"' "$out/triton_bench.jsonl"); all=$(wc -l < "$out/triton_bench.jsonl" 2>/dev/null || echo 0)
verdict "triton bench: solution, expert, torch_eager, torch_compile all PASSED ($n/$all, rc=$rc)" \
  $([ "$rc" -eq 0 ] && [ "$n" -gt 0 ] && [ "$n" -eq "$all" ]; echo $?) "see $out/triton_bench.log"
grep -E "bench-|^task" "$out/triton_bench.log" | cut -c1-190 | head -12

# 2. Every triton starter imports and fails correctness.
for t in fused_add_rmsnorm muon_optimizer_step hash_join softmax_cross_entropy; do
  run "starter_$t" 35 "$d2k" check --task "$t" --track triton --impl "dataset/$t/starter/triton" --rounds 1 --quiet \
    --json "$out/starter_$t.jsonl"
  ninc=$(count '"status":"INCORRECT_' "$out/starter_$t.jsonl")
  nbad=$(grep -c -E '"status":"(RUNTIME_ERROR|COMPILE_ERROR|INVALID_SUBMISSION|TIMEOUT)"' "$out/starter_$t.jsonl" 2>/dev/null || echo 0)
  verdict "$t triton starter: INCORRECT_* ($ninc), no crash ($nbad)" $([ "$ninc" -gt 0 ] && [ "$nbad" -eq 0 ]; echo $?) \
    "see $out/starter_$t.log"
done

# 3. The other pilots' pytorch.py.
run muon_torch 40 "$d2k" bench --task muon_optimizer_step --targets torch_eager,torch_compile \
  --workloads muon-check-tall-odd,muon-4096x4096 --max-time 0.5 --bench-rounds 1 --quiet --json "$out/muon_torch.jsonl"
n=$(count '"status":"PASSED"' "$out/muon_torch.jsonl"); all=$(wc -l < "$out/muon_torch.jsonl" 2>/dev/null || echo 0)
verdict "muon torch_eager/torch_compile PASSED ($n/$all, rc=$rc)" $([ "$rc" -eq 0 ] && [ "$n" -eq "$all" ] && [ "$n" -gt 0 ]; echo $?) \
  "see $out/muon_torch.log"
run hash_torch 30 "$d2k" bench --task hash_join --targets torch_eager \
  --workloads hash_join-check-r1000-s4097-wide,hash_join-bench-r1m-s100m-wide --max-time 0.5 --bench-rounds 1 --quiet \
  --json "$out/hash_torch.jsonl"
n=$(count '"status":"PASSED"' "$out/hash_torch.jsonl"); all=$(wc -l < "$out/hash_torch.jsonl" 2>/dev/null || echo 0)
verdict "hash_join torch_eager PASSED ($n/$all, rc=$rc)" $([ "$rc" -eq 0 ] && [ "$n" -eq "$all" ] && [ "$n" -gt 0 ]; echo $?) \
  "see $out/hash_torch.log"

# 4. The Python exploit corpus.
timeout 150 python3 tests/adversarial/python/run_python.py --d2k "$d2k" --case-timeout 30 \
  --out "$out/python_corpus.md" --keep "$out/python_corpus" > "$out/python_corpus.log" 2>&1; rc=$?
cat "$out/python_corpus.md" 2>/dev/null || tail -20 "$out/python_corpus.log"
verdict "python corpus: no case missed, no control flagged (rc=$rc)" "$rc" "see $out/python_corpus.md"

echo "tracks-py: $fails failure(s)"
exit $((fails > 0))
