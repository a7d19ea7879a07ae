#!/usr/bin/env bash
# gemm_bias_gelu on the H200 (issue #16): validation; d2k bench of every built-in target (naive =
# cuBLAS + bias/GELU kernel, library = cuBLASLt GELU_BIAS epilogue, expert = CUTLASS sm90 fused
# epilogue) and PyTorch eager on the check and the three bench workloads, with the table (the
# targets: expert >= library on every bench workload, >= 75% of SOL on the first two); the
# expert's variants (`// %VARIANT%` lines of expert.cu: skinny_dp, streamk_all, noswizzle) beside
# the expert on the bench workloads; the starter's verdict (must be INCORRECT_*); the golden
# cross-check against PyTorch float64 on `d2k check --dump` inputs (t-gemm/golden_check.py, which
# also prints the expert's measured rel_l2); the expert under compute-sanitizer memcheck on four
# check workloads (both kernels: stream-K for M <= 128, the clustered tiled kernel above); the
# expert's SASS counts (design.json's "recognise" fields). Fits the 150 s deadline of
# scripts/gpu/run_checks.sh: each step gets what is left of a 140 s budget (GEMM_BUDGET_S).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-gemm.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=gemm_bias_gelu
helpers=scripts/gpu/checks/t-gemm
budget=${GEMM_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
uuids() {  # uuids ROLE SUBSTRING : comma-separated workload uuids of workloads.jsonl
  grep "\"role\": \"$1\"" dataset/$task/workloads.jsonl | grep -- "$2" | sed 's/.*"uuid": "\([^"]*\)".*/\1/' | paste -sd,
}
checks=$(uuids check "")
bench=$(uuids bench "")
sanitized=$(uuids check "1x8x8\|131x200x72\|257x392x1032\|37x520x4096")
torch=""
python3 -c "import torch" 2> /dev/null && torch=",torch_eager"

step validate 10 "$d2k" tasks validate $task && pass validate || fail validate
if step bench 60 "$d2k" bench --task $task --targets naive,expert,library$torch --workloads "$checks,$bench" \
    --json "$out/bench_$task.jsonl" --markdown "$out/bench_$task.md"; then
  pass "bench: every target PASSED (check and bench workloads)"
else
  fail "bench (see bench.log)"
fi
grep -v " check \|hidden:" "$out/bench.log" | cut -c1-200 | tail -12
[ -z "$torch" ] && echo "SKIP torch_eager: no torch on this machine"

variants=$(cd "$carry/impl/$task" && ls expert_*.so 2> /dev/null | sed 's/^expert_//; s/\.so$//')
if [ -n "$variants" ]; then
  targets=$(for v in $variants; do printf 'expert:%s,' "$v"; done)
  step variants 30 "$d2k" bench --task $task --targets "expert,${targets%,}" --workloads "$bench" \
    --json "$out/variants.jsonl" --markdown "$out/variants.md" && pass "variants: every variant PASSED" ||
    fail "variants (see variants.log)"
  grep -v " check \|hidden:" "$out/variants.log" | cut -c1-200 | tail -14
else
  fail "no expert variants built under $carry/impl/$task"
fi

starter_verdict 8 --workloads "$checks"

if [ -n "$torch" ]; then
  step dump 10 "$d2k" check --task $task --impl expert --workloads "$checks" --quiet --rounds 1 --dump "$out/dump"
  step golden 10 python3 $helpers/golden_check.py "$out/dump" \
    && pass "golden cross-check vs PyTorch float64" || fail "golden cross-check (see golden.log)"
  tail -8 "$out/golden.log"
  rm -rf "$out/dump"  # .npy of every check workload; golden.log keeps the verdicts
else
  echo "SKIP golden cross-check: no torch on this machine"
fi

sanitize memcheck 25 "$sanitized"

objdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$objdump" ]; then
  "$objdump" --dump-sass "$carry/impl/$task/expert.so" > "$out/expert.sass" 2>&1
  echo "expert SASS:" $(grep -oE "HGMMA\.64x256x16\.F32\.BF16|UTMALDG[A-Z0-9.]*|UTMASTG[A-Z0-9.]*|MUFU\.(EX2|RCP|TANH)|USETMAXREG|CALL\.[A-Z.]*" \
    "$out/expert.sass" | sort | uniq -c | awk '{print $2"x"$1}')
  grep -q "HGMMA" "$out/expert.sass" && pass "expert SASS has HGMMA (wgmma)" || fail "expert SASS: no HGMMA"
  rm -f "$out/expert.sass"
fi
echo "t-gemm: $fails failure(s)"
exit "$fails"
