#!/usr/bin/env bash
# The built-in targets' times before and after the engine refactor, in ONE call (issue #10): the
# engine of commit 6b70af8 (the last of 2026-11-29, packed by ab-refactor/pack_old.sh into OLDTAR)
# and this build (CARRY, packed by scripts/gpu/pack.sh), each `d2k calibrate`d in its own cache,
# then ROUNDS rounds, each running every pilot task's bench on the old engine then on the new one
# (ABAB: drift between rounds shows as the spread of an engine's rounds):
#   d2k bench --task T --targets naive,expert[,library] --workloads <T's bench uuids>
#             --bench-rounds 1 --max-time 0.2 --quiet --json OUT/{old,new}/rR/T.jsonl
# every call under `timeout`, with its wall time printed. ab-refactor/ab_table.py then prints the
# markdown table (each round's median per engine, new/old, the noises, the verdict per row) into
# OUT/ab-table.md. The two engines run from their own folders with their own environment and cache
# (ab-refactor/engine.sh); the old one reads its own dataset/ (the same bench uuids: checked before
# any GPU work).
#
# Usage (repository root of main, on the GPU machine):
#   scripts/gpu/checks/ab-refactor.sh CARRY OLDTAR OUT
#   scripts/gpu/checks/ab-refactor.sh CARRY OUT     (run_checks.sh: OLDTAR = .carry/old/old-engine.tar.xz;
#                                                    without that file the script says SKIP and passes)
# Knobs:
#   AB_ROUNDS=2       rounds (each: every task on old, then on new)
#   AB_SKIP_BIG=1     leave out hash_join's and muon's biggest rows (r64m-s256m, 8192x8192)
#   AB_TASKS=a,b      only these of the three pilots
#   AB_BUDGET_S=175   the whole script's wall budget; a call gets what is left, at most AB_CALL_S=60
#   AB_MAX_TIME=0.2   --max-time of every bench call
# Exit status: the number of FAIL lines (a row that differs is a FAIL: the issue asks "unchanged").
set -uo pipefail
if [ $# -eq 2 ]; then
  carry=$1 oldtar=.carry/old/old-engine.tar.xz out=$2
  if [ ! -f "$oldtar" ]; then echo "SKIP ab-refactor: no $oldtar (scripts/gpu/checks/ab-refactor/pack_old.sh makes it)"; exit 0; fi
elif [ $# -eq 3 ]; then
  carry=$1 oldtar=$2 out=$3
else
  echo "usage: ab-refactor.sh CARRY [OLDTAR] OUT" >&2; exit 2
fi
[ -x "$carry/d2k" ] || { echo "ab-refactor: no d2k in CARRY $carry (scripts/gpu/pack.sh BUILD CARRY)" >&2; exit 2; }
[ -f "$oldtar" ] || { echo "ab-refactor: OLDTAR $oldtar not found" >&2; exit 2; }
mkdir -p "$out"
carry=$(cd "$carry" && pwd); out=$(cd "$out" && pwd); oldtar=$(cd "$(dirname "$oldtar")" && pwd)/$(basename "$oldtar")
root=$PWD here=$(cd "$(dirname "$0")" && pwd)
rounds=${AB_ROUNDS:-2} budget=${AB_BUDGET_S:-175} call_cap=${AB_CALL_S:-60} max_time=${AB_MAX_TIME:-0.2}
tasks=${AB_TASKS:-fused_add_rmsnorm,muon_optimizer_step,hash_join}
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# ---- phase: unpack the old engine beside the logs ----
old=$out/old-engine
rm -rf "$old"; mkdir -p "$old"
tar -xJf "$oldtar" -C "$old" || { fail "untar $oldtar"; exit "$fails"; }
echo "old engine: commit $(cat "$old/COMMIT" 2> /dev/null || echo '?'), from $oldtar"
# gpu_state FILE: the GPU, its SM clock, temperature and power now (the table's conditions).
gpu_state() {
  { if command -v nvidia-smi > /dev/null; then
      nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv 2>&1
    else echo "no nvidia-smi on this machine"; fi
    date -u; } > "$1"
  cat "$1"
}
gpu_state "$out/gpu-before.txt"

# timed NAME SECONDS ENGINE ARGS...: `d2k ARGS` of ENGINE under timeout (at most what is left of the
# budget), output in $out/NAME.log, one line with its exit status and wall time.
timed() {
  local name=$1 secs=$2 which=$3; shift 3
  local left=$((budget - SECONDS))
  [ "$left" -lt "$secs" ] && secs=$left
  if [ "$secs" -lt 5 ]; then echo "== $name skipped: budget spent ($budget s)"; return 124; fi
  mkdir -p "$(dirname "$out/$name.log")"
  local t0=$SECONDS
  timeout --kill-after=5 "$secs" "$here/ab-refactor/engine.sh" "$which" "$old" "$carry" "$root" "$out" "$@" \
    > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc wall_s=$((SECONDS - t0))"
  return $rc
}

# ---- phase: both engines resolve the same bench workloads of each task ----
# bench_uuids DATASET TASK [SKIP_BIG]: the comma-separated bench uuids of DATASET/TASK/workloads.jsonl.
bench_uuids() {
  local file=$1/$2/workloads.jsonl
  [ -f "$file" ] || { echo "ab-refactor: no $file" >&2; return 1; }
  grep '"role": "bench"' "$file" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' |
    { if [ "${3:-0}" = 1 ]; then grep -vE '^(hash_join-bench-r64m-s256m-range4x|muon-8192x8192)$'; else cat; fi; } | paste -sd,
}
declare -A wl targets
for t in ${tasks//,/ }; do
  new_wl=$(bench_uuids "$root/dataset" "$t" "${AB_SKIP_BIG:-0}") || { fail "$t: no bench workloads in dataset/"; continue; }
  old_wl=$(bench_uuids "$old/dataset" "$t" "${AB_SKIP_BIG:-0}") || { fail "$t: no bench workloads in the old dataset/"; continue; }
  if [ -z "$new_wl" ] || [ "$new_wl" != "$old_wl" ]; then
    fail "$t: the engines' bench workloads differ (new: $new_wl; old: $old_wl)"; continue
  fi
  wl[$t]=$new_wl
  targets[$t]=naive,expert
  [ -f "$old/impl/$t/library.so" ] && [ -f "$carry/impl/$t/library.so" ] && targets[$t]+=,library
  echo "$t: targets ${targets[$t]}; workloads $new_wl"
done
[ ${#wl[@]} -gt 0 ] || { echo "ab-refactor: no task to compare"; exit "$fails"; }

# ---- phase: calibrate each engine (its own cache: the ceilings behind % of SOL and the floor) ----
timed old/calibrate 60 old calibrate || fail "old calibrate (see old/calibrate.log)"
timed new/calibrate 60 new calibrate || fail "new calibrate (see new/calibrate.log)"

# ---- phase: ROUNDS rounds, each task on the old engine, then on the new one ----
for r in $(seq 1 "$rounds"); do
  for t in ${tasks//,/ }; do
    [ -n "${wl[$t]:-}" ] || continue
    for e in old new; do
      mkdir -p "$out/$e/r$r"
      timed "$e/r$r/$t" "$call_cap" "$e" bench --task "$t" --targets "${targets[$t]}" --workloads "${wl[$t]}" \
        --bench-rounds 1 --max-time "$max_time" --quiet --json "$out/$e/r$r/$t.jsonl" ||
        fail "$e round $r $t (see $e/r$r/$t.log)"
    done
  done
done
gpu_state "$out/gpu-after.txt"

# ---- phase: the table ----
done_tasks=$(for t in ${tasks//,/ }; do [ -n "${wl[$t]:-}" ] && echo "$t"; done | paste -sd,)
python3 "$here/ab-refactor/ab_table.py" --out "$out" --tasks "$done_tasks" --rounds "$rounds" --markdown "$out/ab-table.md"
case $? in
  0) pass "ab-refactor: every row within noise (old $(cat "$old/COMMIT" 2> /dev/null | cut -c1-7) vs this build; ab-table.md)" ;;
  1) fail "ab-refactor: rows differ beyond noise (ab-table.md)" ;;
  *) fail "ab-refactor: rows incomplete or records not PASSED (ab-table.md)" ;;
esac
echo "== ab-refactor total wall_s=$SECONDS"
exit "$fails"
