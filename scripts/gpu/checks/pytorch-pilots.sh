#!/usr/bin/env bash
# The PyTorch table of the three pilots (issue #14), from a build packed by scripts/gpu/pack.sh.
# For fused_add_rmsnorm, hash_join and muon_optimizer_step, in that order (cheapest first):
#  1. `d2k bench` of naive, expert, library (where the task has one), torch_eager and torch_compile
#     on the task's bench workloads (one correctness round, 0.2 s of timing per target and
#     workload): traces in OUT/bench_TASK.jsonl;
#  2. pytorch-pilots/do_bench.py on the same workloads: the same pytorch.py timed by
#     triton.testing.do_bench, eager and torch.compile'd (OUT/do_bench_TASK.jsonl);
#  3. pytorch-pilots/table.py: the table (OUT/table_TASK.md, all three in OUT/tables.md) and one
#     PASS/FAIL line per PyTorch cell: d2k's median within 10 % of do_bench's.
# The machine's Python with torch and Triton (/opt/torch/.venv where there is one) runs both
# d2k's PyTorch targets and do_bench.py; the Python side of d2k comes from this checkout.
# Budget: 240 s in all (PYTORCH_PILOTS_BUDGET_S); each step gets at most its share below (scaled
# with the budget), or what is left. A bench step cut by its share keeps the records it finished
# (marked partial); run a task alone with D2K_CHECK_STEPS and a larger budget for the rest.
# torch_compile compiles once per shape in d2k and again in do_bench.py, so muon's 8192x8192 row
# (25 ms naive calls, the longest compile) is skipped by default:
# PYTORCH_PILOTS_SKIP is an extended regex of workload uuids to leave out ("" keeps every row).
# D2K_CHECK_STEPS=bench_TASK,do_bench_TASK,... runs only the named steps (lib/steps.sh).
# Usage (repository root): scripts/gpu/checks/pytorch-pilots.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
out=$(cd "$out" && pwd)
d2k="$carry/d2k"
budget=${PYTORCH_PILOTS_BUDGET_S:-240}
skip=${PYTORCH_PILOTS_SKIP-muon-8192x8192}
here=scripts/gpu/checks/pytorch-pilots
source "$(dirname "$0")/lib/steps.sh"
detect_torch venv
chmod -R o+rX "$PWD/src/tracks/python" "$PWD/dataset" 2>/dev/null
if [ "$have_torch" != 1 ] || ! "$py" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch",
    torch.__version__, "triton", triton.__version__, "cuda", torch.cuda.is_available())'; then
  fail "no torch and Triton for $py: the PyTorch targets and do_bench.py need both"
  echo "pytorch-pilots: $fails failure(s)"
  exit "$fails"
fi
: > "$out/tables.md"

# pilot TASK BENCH_S DO_BENCH_S: the three steps above for TASK.
pilot() {
  task=$1
  local bench_s=$2 db_s=$3 all wl="" u targets=naive,expert rc
  if ! selected "bench_$task" && ! selected "do_bench_$task"; then echo "== $task not selected (D2K_CHECK_STEPS)"; return; fi
  all=$(workload_uuids bench) || { fail "$task: no workloads.jsonl"; return; }
  for u in ${all//,/ }; do
    if [ -n "$skip" ] && grep -qxE "$skip" <<< "$u"; then
      echo "SKIP $task $u (PYTORCH_PILOTS_SKIP='$skip': not in the ${budget} s budget)"
    else
      wl+=${wl:+,}$u
    fi
  done
  [ -f "dataset/$task/library.cu" ] && targets+=,library
  targets+=,torch_eager,torch_compile
  bench_step --files "bench_$task" --show 0 "bench_$task" "$bench_s" "$targets" "$wl" \
    --bench-rounds 1 --max-time 0.2 --quiet
  selected "do_bench_$task" && rm -f "$out/do_bench_$task.jsonl"  # do_bench.py appends
  step "do_bench_$task" "$db_s" "$py" "$here/do_bench.py" --json "$out/do_bench_$task.jsonl" "$task=$wl"
  rc=$?
  case $rc in
    0) pass "do_bench $task: every workload timed eager and compiled" ;;
    125) ;;  # not selected
    *) fail "do_bench $task rc=$rc (see do_bench_$task.log)"; tail -3 "$out/do_bench_$task.log" 2> /dev/null ;;
  esac
  python3 "$here/table.py" --task "$task" "$out/bench_$task.jsonl" "$out/do_bench_$task.jsonl" > "$out/table_$task.md"
  tee -a "$out/tables.md" < "$out/table_$task.md"
  echo >> "$out/tables.md"
  fails=$((fails + $(grep -c '^FAIL' "$out/table_$task.md")))
}

# The shares are those of the default 240 s budget, scaled with PYTORCH_PILOTS_BUDGET_S (a larger
# budget is for benches that ran past their share).
share() { echo $(( $1 * budget / 240 )); }
pilot fused_add_rmsnorm "$(share 50)" "$(share 30)"
pilot hash_join "$(share 45)" "$(share 30)"
pilot muon_optimizer_step "$(share 55)" "$(share 30)"
echo "== total wall_s=$SECONDS (budget $budget)"
echo "pytorch-pilots: $fails failure(s)"
exit "$fails"
