#!/usr/bin/env bash
# The TPC-H tasks on the H200 (issue #17): validation; d2k bench of every built-in target (naive,
# expert, library, the expert's scalar-load variant) with the table; the starter's verdict (must be
# INCORRECT_*); the PyTorch program (dataset/<task>/pytorch.py) as the torch_eager target; the expert's SASS (what design.json's "recognise" fields name).
# The goldens' independent check is the CPU tests task_tpch_q{6,1}_duckdb_test (DuckDB), not run here.
# Fits the 150 s deadline of scripts/gpu/run_checks.sh: each step gets what is left of a 145 s budget
# (TPCH_BUDGET_S); run alone with TPCH_BUDGET_S=300 for the full PyTorch timings if they are cut.
# Usage (repository root, build packed by scripts/gpu/pack.sh): scripts/gpu/checks/task-tpch.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
aux_dir=scripts/gpu/checks/task-tpch
budget=${TPCH_BUDGET_S:-145}
source "$(dirname "$0")/lib/steps.sh"

for task in tpch_q6 tpch_q1; do
  [ -d "dataset/$task" ] || continue
  step "validate_$task" 5 "$d2k" tasks validate $task && pass "validate $task" || fail "validate $task"
  targets=naive,expert
  [ -f "$carry/impl/$task/library.so" ] && targets+=,library
  for v in $(cd "$carry/impl/$task" 2> /dev/null && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//'); do
    targets+=,expert:$v
  done
  # The task's pytorch.py (masks, index_add_), checked and timed like every target.
  python3 -c "import torch" 2> /dev/null && [ -f "dataset/$task/pytorch.py" ] && targets+=,torch_eager
  if step "bench_$task" 60 "$d2k" bench --task $task --targets $targets --quiet --json "$out/bench_$task.jsonl" \
      --markdown "$out/bench_$task.md"; then
    pass "bench $task: every built-in target PASSED"
  else
    fail "bench $task (see bench_$task.log)"
  fi
  grep -v " check \|hidden:" "$out/bench_$task.log" | cut -c1-200 | tail -14
  step "starter_$task" 10 "$d2k" bench --task $task --targets solution --solution-dir dataset/$task/starter/cuda --quiet
  grep -q "INCORRECT_" "$out/starter_$task.log" && pass "starter $task fails with INCORRECT_*" ||
    fail "starter $task verdict (see starter_$task.log)"
  objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  if [ -x "$objdump" ]; then
    "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert_$task.sass" 2>&1
    echo "$task expert SASS:" $(grep -oE "LDG\.E\.(128|64)[A-Z.]*|LDG\.E\.CONSTANT|RED\.E\.ADD[A-Z0-9.]*|ATOMG\.E\.ADD[A-Z0-9.]*|SHFL\.DOWN|LDL[A-Z0-9.]*|STL[A-Z0-9.]*|BRA" \
      "$out/expert_$task.sass" | sort | uniq -c | awk '{print $2"x"$1}')
  fi
done
echo "task-tpch: $fails failure(s)"
exit "$fails"
