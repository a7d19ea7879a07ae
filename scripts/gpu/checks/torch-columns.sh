#!/usr/bin/env bash
# The PyTorch columns of the suite's results tables (TASK-STANDARD: the expert beats PyTorch eager
# and torch.compile on every bench workload), from a build packed by scripts/gpu/pack.sh.
# For each task: one `d2k bench` of expert, torch_eager and torch_compile on the task's bench
# workloads (one correctness round, 0.3 s of timing per target and workload), so that the expert's
# ratios to both PyTorch columns come from one call; naive runs untimed as the bench rows'
# reference (the carry must hold naive.so and reference.so of every task). Traces in
# OUT/torch_TASK.jsonl; OUT/torch-columns.md has one table of every task's rows (torch-columns.py),
# and one PASS/FAIL line per task: every target PASSED and the expert at least as fast as
# torch_compile and torch_eager on every row (a row short of either is a FAIL naming the ratio).
# torch.compile compiles each bench shape once (Inductor, one compile thread: python_track.cpp),
# tens of seconds per task, so the suite does not fit one call: TORCH_COLUMNS_TASKS picks the tasks
# (comma-separated; default every task with a pytorch.py), TORCH_COLUMNS_BUDGET_S (default 540)
# bounds the whole run and TORCH_COLUMNS_TASK_S (default 150) each task; a task not started for
# the budget is listed and counted as a FAIL (a shortened table is never the full one).
# Usage (repository root): scripts/gpu/checks/torch-columns.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
out=$(cd "$out" && pwd)
d2k="$carry/d2k"
budget=${TORCH_COLUMNS_BUDGET_S:-540}
task_s=${TORCH_COLUMNS_TASK_S:-150}
source "$(dirname "$0")/lib/steps.sh"
detect_torch venv
chmod -R o+rX "$PWD/src/tracks/python" "$PWD/dataset" 2>/dev/null
all_tasks=$(for d in dataset/*/; do [ -f "$d/pytorch.py" ] && basename "$d"; done | paste -sd,)
tasks=${TORCH_COLUMNS_TASKS:-$all_tasks}
if [ "$have_torch" != 1 ]; then
  fail "no torch for $py: the PyTorch targets need it"
  echo "torch-columns: $fails failure(s)"
  exit "$fails"
fi

for task in ${tasks//,/ }; do
  if [ ! -f "dataset/$task/pytorch.py" ]; then fail "$task: no dataset/$task/pytorch.py"; continue; fi
  if [ ! -f "$carry/impl/$task/naive.so" ] || [ ! -f "$carry/impl/$task/expert.so" ]; then
    fail "$task: the carry lacks impl/$task/naive.so or expert.so (bench rows are judged against naive)"
    continue
  fi
  # step() gives each task at most what is left of the budget; below 5 s it skips (a FAIL here).
  bench_step --files "torch_$task" --show 0 --pass "$task: every target PASSED (expert,torch_eager,torch_compile)" \
    "torch_$task" "$task_s" expert,torch_eager,torch_compile "$(workload_uuids bench)" \
    --bench-rounds 1 --max-time 0.3 --quiet
done

python3 "$(dirname "$0")/torch-columns.py" --tasks "$tasks" "$out" > "$out/torch-columns.md"
cat "$out/torch-columns.md"
fails=$((fails + $(grep -c '^FAIL' "$out/torch-columns.md")))
echo "== total wall_s=$SECONDS (budget $budget)"
echo "torch-columns: $fails failure(s)"
exit "$fails"
