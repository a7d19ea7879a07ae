#!/usr/bin/env bash
# Honest TMA code gets a verdict on its merits (issues #12, #14): candidates that encode their TMA
# descriptors with a direct cuTensorMapEncodeTiled call (linked against the driver's stub, allowed
# by the symbol check) build, load against the real libcuda.so.1 in the sandboxed worker, and
# pass; a driver launch beside the encoder is still refused. Steps, each a solution folder
# staged from the repository and checked with `d2k check` (correctness, no timing):
#   fa_copy      dataset/flash_attention_forward/expert.cu (+ fa_hopper.cuh, fa_layout.h) as a
#                cuda-track solution, on the small check workloads: must PASS (before the fix:
#                REWARD_HACK(dynamic_loading), cudaGetDriverEntryPointByVersion)
#   muon_copy    dataset/muon_optimizer_step/expert.cu (+ muon_args.h, muon_eager.cuh) as a
#                cutlass-track solution (CUTLASS SM90 TMA GEMMs; CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL
#                from the track): must PASS. Its compile is the long step (a CUTLASS GEMM: about
#                2 minutes of nvcc on a 2-core machine, not yet measured on the GPU machine).
#   fa_builtin   the built-in flash expert (now calling the encoder directly): must PASS
#   tma_control  tests/adversarial/honest_tma_descriptor on fused_add_rmsnorm: must PASS
#   tma_launch   tests/adversarial/tma_encoder_beside_driver_launch: REWARD_HACK(vendor_library)
# What it must show: every line PASS. Budget: TMA_BUDGET_S (default 240 s: the muon compile).
# Usage (repository root, build packed by scripts/gpu/pack.sh):
#   scripts/gpu/checks/tma-symbols.sh CARRY OUT
# Exit status: the number of FAIL lines.
set -uo pipefail
carry=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
source "$(dirname "$0")/../env.sh" "$carry" "$out"
d2k="$carry/d2k"
budget=${TMA_BUDGET_S:-240}
source "$(dirname "$0")/lib/steps.sh"
out=$(cd "$out" && pwd)

# stage NAME SOURCE_AS_SOLUTION FILES...: a solution folder $out/stage/NAME, readable by the
# sandbox's unprivileged uids.
stage() {
  local dir=$out/stage/$1 src=$2
  shift 2
  rm -rf "$dir"; mkdir -p "$dir"
  cp "$src" "$dir/solution.cu"
  for f in "$@"; do cp "$f" "$dir/"; done
  chmod -R o+rX "$out/stage"
  echo "$dir"
}
# verdict NAME: PASS when the step's log shows no failing status and the step exited 0.
verdict() {
  local name=$1 rc=$2 what=$3
  if [ "$rc" -eq 0 ] && ! grep -q "REWARD_HACK\|INVALID_SUBMISSION\|COMPILE_ERROR\|INCORRECT\|RUNTIME_ERROR\|FAILED\|TIMEOUT" "$out/$name.log"; then
    pass "$what"
  else
    fail "$what (rc=$rc, see $name.log)"; tail -5 "$out/$name.log"
  fi
}

task=flash_attention_forward
fa_small=$(workload_uuids check "1x1x1x1\|2x77\|3x129")
fa=$(stage fa_copy dataset/$task/expert.cu dataset/$task/fa_hopper.cuh dataset/$task/fa_layout.h)
step fa_copy 60 "$d2k" check --task $task --impl "$fa" --track cuda --workloads "$fa_small" --quiet
verdict fa_copy $? "fa_copy: a copy of the flash_attention_forward expert passes on the cuda track"
step fa_builtin 30 "$d2k" check --task $task --impl expert --workloads "$fa_small" --quiet
verdict fa_builtin $? "fa_builtin: the built-in flash_attention_forward expert passes"

task=muon_optimizer_step
mu_small=$(workload_uuids check "wide-odd\|tall-odd")
mu=$(stage muon_copy dataset/$task/expert.cu dataset/$task/muon_args.h dataset/$task/muon_eager.cuh)
step muon_copy 200 "$d2k" check --task $task --impl "$mu" --track cutlass --workloads "$mu_small" --quiet
verdict muon_copy $? "muon_copy: a copy of the muon_optimizer_step expert (CUTLASS TMA) passes on the cutlass track"

task=fused_add_rmsnorm
adv=tests/adversarial
ctl=$(stage tma_control $adv/honest_tma_descriptor/solution.cu $adv/common/rmsnorm_case.cuh $adv/common/forge_timer.cuh)
step tma_control 40 "$d2k" check --task $task --impl "$ctl" --track cuda --quiet
verdict tma_control $? "tma_control: encoder + prefetch + the shared kernel passes"
bad=$(stage tma_launch $adv/tma_encoder_beside_driver_launch/solution.cu $adv/common/rmsnorm_case.cuh $adv/common/forge_timer.cuh)
step tma_launch 40 "$d2k" check --task $task --impl "$bad" --track cuda --quiet
grep -q "REWARD_HACK(vendor_library)\|REWARD_HACK.*vendor_library" "$out/tma_launch.log" &&
  pass "tma_launch: a driver launch beside the encoder is REWARD_HACK(vendor_library)" ||
  { fail "tma_launch: expected REWARD_HACK(vendor_library) (see tma_launch.log)"; tail -5 "$out/tma_launch.log"; }
echo "tma-symbols: $fails failure(s)"
exit "$fails"
