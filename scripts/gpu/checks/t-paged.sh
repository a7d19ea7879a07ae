#!/usr/bin/env bash
# paged_attention_decode on the H200 (issue #16): validation; d2k bench of naive (gather + cuBLAS
# GEMVs + softmax), expert (split-KV flash-decoding) and PyTorch eager (gather + SDPA) on the check
# workloads and the three Llama-3-8B bench workloads, with the table (%SOL target: expert >= 80%,
# >= 2.5x torch_eager); the expert's variants (`// %VARIANT%` lines of expert.cu: cuda_cores,
# merge_fused, cp_async, mma_prefetch) beside the expert (the tensor-core form) on the bench workloads, one round of at most
# 0.3 s per target and workload (step `variants`, 110 s: run it alone with
# D2K_CHECK_STEPS=variants); the starter's verdict (must be INCORRECT_*); the golden cross-check
# against PyTorch float64 on `d2k check --dump` inputs, with pytorch.py judged too
# (t-paged/golden_check.py); the expert under compute-sanitizer memcheck on the small check
# workloads (two of them take the multi-split merge, one is ragged: 3 splits, partial pages), and
# the prefetching and CUDA-core variants on the ragged one (steps memcheck_mma_prefetch,
# memcheck_cuda_cores); the expert's SASS counts (design.json evidence: HMMA.16816.F32.BF16,
# LDG.E.EF.128; no LDL/STL spills) and the variants' where built.
# Fits the 150 s deadline of scripts/gpu/run_checks.sh: each step gets what is left of a 140 s
# budget (PAGED_BUDGET_S); the variants step alone needs most of it.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-paged.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=paged_attention_decode
helpers=scripts/gpu/checks/t-paged
budget=${PAGED_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
checks=$(workload_uuids check)
small_checks=$(echo "$checks" | tr ',' '\n' | grep -v -- "-16k" | paste -sd,)
benches=$(workload_uuids bench)
detect_torch

validate_step
bench_step --files "bench_$task" --pass "bench: every target PASSED (check and bench workloads)" \
  bench 60 "naive,expert$torch" "$checks,$benches"
variants_step --show 8 110 "$benches" --bench-rounds 1 --max-time 0.3
starter_verdict 8 --workloads "$small_checks"
# The dump holds 270 MB for the 16k check workload: golden_step removes it after.
golden_step --dump-s 10 --pass "vs PyTorch float64 (and pytorch.py)" 12 "$checks" $helpers/golden_check.py --pytorch
sanitize memcheck 20 "$small_checks"
ragged=$(workload_uuids check 5x33-ragged)
for v in mma_prefetch cuda_cores; do sanitize --impl "expert:$v" memcheck 15 "$ragged"; done
# The expert (tensor cores): bf16 mma.sync, 16-byte streaming loads, no local-memory spills.
sass_counts "HMMA[A-Z0-9.]*|LDG\.E\.EF\.128|LDG\.E\.128[A-Z.]*|MUFU\.EX2|LDL[A-Z0-9.]*|STL[A-Z0-9.]*" \
  "HMMA\.16816\.F32\.BF16 LDG\.E\.EF\.128" "\bLDL|\bSTL"
# The variants where built (else a SKIP line): mma_prefetch as the expert, cuda_cores without HMMA.
variant_sass() {
  [ -f "$carry/impl/$task/expert_$1.so" ] || { echo "SKIP expert_$1 SASS: not built"; return 0; }
  sass_counts --so "expert_$1" "${@:2}"
}
variant_sass mma_prefetch "HMMA[A-Z0-9.]*|LDG\.E\.EF\.128|LDL[A-Z0-9.]*|STL[A-Z0-9.]*" \
  "HMMA\.16816\.F32\.BF16 LDG\.E\.EF\.128" "\bLDL|\bSTL"
variant_sass cuda_cores "LDG\.E\.EF\.128|LDG\.E\.128[A-Z.]*|MUFU\.EX2|LDL[A-Z0-9.]*|STL[A-Z0-9.]*" \
  "LDG\.E\.EF\.128" "\bLDL|\bSTL"

echo "t-paged: $fails failure(s)"
exit "$fails"
