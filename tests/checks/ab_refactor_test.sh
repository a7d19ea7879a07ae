#!/usr/bin/env bash
# scripts/gpu/checks/ab-refactor.sh end to end on a machine without a GPU, with stand-in engines:
# a fake `d2k` for the old tarball and one for the new carry, each of which checks that it runs in
# its own engine's environment (the old one from its unpacked folder with its own dataset, impl/
# and cache; the new one from the repository root with the carry's impl/ and a cache of its own,
# not the session's), logs its call, and writes one PASSED bench record per target and workload it
# was asked for (median NEW_SLOWER x 100 us on the new engine's naive rows, 100 us elsewhere).
# Asserted:
#   1. same times: exit 0, PASS line, calibrate once per engine, then the calls in ABAB order
#      (per round, per task: old, then new), every bench uuid of the task and the library target
#      where both engines have one, a wall-time line per call, a complete table;
#   2. the new naive 5 % slower: exit 1, FAIL line, those rows "differs";
#   3. the old dataset's bench uuids differ from the new one's: FAIL naming the task, no call made;
#   4. run_checks.sh's form (CARRY OUT) without the tarball: SKIP, exit 0.
# Usage: ab_refactor_test.sh REPO_ROOT
set -uo pipefail
root=$(cd "$1" && pwd)
script=$root/scripts/gpu/checks/ab-refactor.sh
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
tasks=fused_add_rmsnorm,muon_optimizer_step

# The stand-in d2k. TAG beside it names its engine; EXPECT_DIR the folder it must run from.
cat > "$work/fake_d2k" <<'EOF'
#!/usr/bin/env bash
here=$(cd "$(dirname "$0")" && pwd); tag=$(cat "$here/TAG")
log() { echo "$tag $*" >> "$CALLS"; }
bad() { echo "fake d2k ($tag): $*" >&2; log "ENV-ERROR $*"; exit 9; }
[ "$PWD" = "$(cat "$here/EXPECT_DIR")" ] || bad "runs from $PWD"
[ "$D2K_IMPL_DIR" = "$here/impl" ] || bad "D2K_IMPL_DIR=$D2K_IMPL_DIR"
[ "$D2K_DATASET" = "$PWD/dataset" ] || bad "D2K_DATASET=$D2K_DATASET"
[ "$D2K_CACHE_DIR" = "$OUT_DIR/$tag/cache" ] || bad "D2K_CACHE_DIR=$D2K_CACHE_DIR"
cmd=$1; shift
[ "$cmd" = calibrate ] && { log calibrate; exit 0; }
task="" targets="" wls="" json=""
while [ $# -gt 0 ]; do
  case $1 in --task) task=$2 ;; --targets) targets=$2 ;; --workloads) wls=$2 ;; --json) json=$2 ;; esac
  shift
done
log "bench $task $targets"
: > "$json"
for t in ${targets//,/ }; do
  for w in ${wls//,/ }; do
    m=100
    [ "$tag" = new ] && [ "$t" = naive ] && m=$(python3 -c "print(100 * $NEW_SLOWER)")
    echo "{\"task\": \"$task\", \"target\": \"$t\", \"workload\": {\"uuid\": \"$w\", \"role\": \"bench\", \"axes\": {}}, \"status\": \"PASSED\", \"performance\": {\"median_us\": $m, \"rel_noise\": 0.003, \"timer\": \"events_corrected\"}}" >> "$json"
  done
done
EOF
chmod +x "$work/fake_d2k"

# make_old DIR: the stand-in old tarball's tree (its own env.sh, dataset, impl/, COMMIT).
make_old() {
  local d=$1
  mkdir -p "$d/scripts/gpu" "$d/impl/muon_optimizer_step" "$d/dataset"
  cp "$work/fake_d2k" "$d/d2k"; echo old > "$d/TAG"; echo 6b70af8fake > "$d/COMMIT"
  touch "$d/impl/muon_optimizer_step/library.so"
  for t in ${tasks//,/ }; do mkdir -p "$d/dataset/$t" && cp "$root/dataset/$t/workloads.jsonl" "$d/dataset/$t/"; done
  # The old env.sh's interface: source scripts/gpu/env.sh CARRY OUT (from the old folder).
  printf '%s\n' 'mkdir -p "$2"; carry=$(cd "$1" && pwd); out=$(cd "$2" && pwd)' \
    'export D2K_IMPL_DIR="$carry/impl" D2K_CACHE_DIR="$out/cache" D2K_DATASET="$PWD/dataset"' > "$d/scripts/gpu/env.sh"
}
carry=$work/carry
mkdir -p "$carry/impl/muon_optimizer_step"
cp "$work/fake_d2k" "$carry/d2k"; echo new > "$carry/TAG"; echo "$root" > "$carry/EXPECT_DIR"
touch "$carry/impl/muon_optimizer_step/library.so"

# run CASE [NEW_SLOWER]: the script on a fresh OUT; sets out, rc, log.
run() {
  local case=$1
  out=$work/out-$case
  mkdir -p "$out"
  # The old tree records the folder it is unpacked into (OUT/old-engine) before it is packed.
  echo "$out/old-engine" > "$work/old-$case/EXPECT_DIR"
  tar -C "$work/old-$case" -cJf "$work/old-$case.tar.xz" .
  (cd "$root" && CALLS=$out/calls.txt OUT_DIR=$out NEW_SLOWER=${2:-1} D2K_SESSION_CACHE=$work/session-cache \
     AB_TASKS=$tasks AB_ROUNDS=2 bash "$script" "$carry" "$work/old-$case.tar.xz" "$out") > "$work/$case.log" 2>&1
  rc=$?
  log=$work/$case.log
}

# 1. The same times on both engines.
make_old "$work/old-same"
run same
cat "$log"
[ "$rc" -eq 0 ] || fail "same times: exit $rc, expected 0"
grep -q "^PASS ab-refactor: every row within noise" "$log" || fail "same times: no PASS line"
grep -q "ENV-ERROR" "$out/calls.txt" && fail "an engine ran in the wrong environment: $(grep ENV-ERROR "$out/calls.txt")"
expect_calls="old calibrate
new calibrate"
for r in 1 2; do
  expect_calls+="
old bench fused_add_rmsnorm naive,expert
new bench fused_add_rmsnorm naive,expert
old bench muon_optimizer_step naive,expert,library
new bench muon_optimizer_step naive,expert,library"
done
[ "$(cat "$out/calls.txt")" = "$expect_calls" ] || fail "calls not in ABAB order:
$(cat "$out/calls.txt")"
for e in old new; do for r in 1 2; do for t in ${tasks//,/ }; do
  grep -qE "^== $e/r$r/$t rc=0 wall_s=[0-9]+$" "$log" || fail "no wall-time line for $e r$r $t"
done; done; done
n_bench=$(grep -c '"role": "bench"' "$root/dataset/fused_add_rmsnorm/workloads.jsonl")
n_muon=$(grep -c '"role": "bench"' "$root/dataset/muon_optimizer_step/workloads.jsonl")
rows=$((2 * n_bench + 3 * n_muon))
grep -q "rows=$rows within_noise=$rows differs=0 incomplete=0 not_passed=0" "$log" || fail "expected $rows complete rows"
[ -f "$out/ab-table.md" ] || fail "no ab-table.md"

# 2. The new engine's naive 5 % slower: those rows differ.
make_old "$work/old-slower"
run slower 1.05
[ "$rc" -eq 1 ] || { cat "$log"; fail "new naive 5% slower: exit $rc, expected 1"; }
grep -q "^FAIL ab-refactor: rows differ beyond noise" "$log" || fail "slower: no FAIL line"
grep -q "| fused_add_rmsnorm | naive | .* | 1.0500 | .* | differs |" "$log" || fail "slower: naive rows not 'differs'"
grep -q "| fused_add_rmsnorm | expert | .* | 1.0000 | .* | within noise |" "$log" || fail "slower: expert rows not within noise"

# 3. The old dataset names other bench workloads: no call, a FAIL naming the task.
make_old "$work/old-otherwl"
sed -i 's/"uuid": "fused_add_rmsnorm-bench-4096x4096"/"uuid": "fused_add_rmsnorm-bench-renamed"/' \
  "$work/old-otherwl/dataset/fused_add_rmsnorm/workloads.jsonl"
run otherwl
grep -q "^FAIL fused_add_rmsnorm: the engines' bench workloads differ" "$log" || { cat "$log"; fail "no FAIL for differing workloads"; }
grep -q "bench fused_add_rmsnorm" "$out/calls.txt" && fail "fused_add_rmsnorm was benched despite differing workloads"
[ "$rc" -ne 0 ] || fail "differing workloads: exit 0"

# 4. run_checks.sh's two-argument form without .carry/old/old-engine.tar.xz: SKIP.
skip_root=$work/skiproot
mkdir -p "$skip_root"
(cd "$skip_root" && bash "$script" "$carry" "$work/out-skip") > "$work/skip.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q "^SKIP ab-refactor: no .carry/old/old-engine.tar.xz" "$work/skip.log" ||
  { cat "$work/skip.log"; fail "two-argument form without the tarball: rc=$rc, expected a SKIP and 0"; }
echo "OK: ab-refactor.sh runs the engines apart, ABAB, and judges the table"
