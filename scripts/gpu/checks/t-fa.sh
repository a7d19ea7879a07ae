#!/usr/bin/env bash
# flash_attention_forward on the H200 (issue #16): validation; d2k bench of naive (cuBLAS S = QK^T,
# mask+softmax kernel, cuBLAS PV), expert and PyTorch eager (aten's flash SDPA op, o and lse) on the
# check workloads and the three Llama 3 8B bench workloads, with the table (%SOL against the
# calibrated bf16 tensor rate); the expert (the wgmma kernel, step 2) beside its variants (`//
# %VARIANT%` lines of expert.cu: mma_sync = step 1, q_smem, bn32) on the check workloads and the
# 8192-token row; the starter's verdict (must be INCORRECT_*); the golden cross-check against
# PyTorch float64 on `d2k check --dump` inputs (t-fa/golden_check.py); the expert and
# expert:mma_sync under compute-sanitizer memcheck on three small check workloads; the SASS
# (design.json's "recognise" fields): the expert must hold HGMMA, UTMALDG and SYNCS (wgmma, TMA,
# mbarriers), expert_mma_sync HMMA, LDSM and LDGSTS. Each step gets what is left of a 140 s
# budget (FA_BUDGET_S).
# What it must show: every line PASS, among them "PASS memcheck: expert:mma_sync clean on 3 check
# workload(s)", "PASS expert SASS has HGMMA, UTMALDG, SYNCS" and "PASS expert_mma_sync SASS has
# HMMA, LDSM, LDGSTS"; the SASS lines of q_smem and bn32 are counts only.
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/t-fa.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
task=flash_attention_forward
helpers=scripts/gpu/checks/t-fa
budget=${FA_BUDGET_S:-140}
source "$(dirname "$0")/lib/steps.sh"
checks=$(workload_uuids check)
bench=$(workload_uuids bench)
long=$(workload_uuids bench "1x8192")
small_checks=$(workload_uuids check "1x1x1x1\|2x77\|3x129")
detect_torch

validate_step
bench_step --files bench --pass "bench: every target PASSED (check workloads and the three Llama 3 8B bench workloads)" \
  bench 55 "naive,expert$torch" "$checks,$bench"
variants_step --show 6 30 "$checks,$long"
starter_verdict 8 --workloads "$small_checks"
golden_step --dump-s 8 --pass "vs PyTorch float64" 20 "$checks" $helpers/golden_check.py

sanitize memcheck 12 "$small_checks"
# The FlashAttention-2 kernel (mma.sync, ldmatrix, cp.async) is a variant now: still memchecked.
sanitize --impl expert:mma_sync memcheck 12 "$small_checks"

insns="HMMA\.[A-Z0-9.]*|HGMMA[A-Z0-9.]*|UTMALDG[A-Z0-9.]*|SYNCS[A-Z0-9.]*|LDSM\.[A-Z0-9.]*|LDGSTS[A-Z0-9.]*|MUFU\.EX2|LDL|STL"
sass_counts "$insns" "HGMMA UTMALDG SYNCS"
sass_counts --so expert_mma_sync "$insns" "HMMA LDSM LDGSTS"
for v in q_smem bn32; do sass_counts --so "expert_$v" "$insns"; done
echo "t-fa: $fails failure(s)"
exit "$fails"
