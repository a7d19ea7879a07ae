#!/usr/bin/env bash
# sass-evidence.sh BUILD [OUT.md]: the machine-code evidence of the pilots' design items in their
# built experts, variants and naive baselines (cuobjdump -sass; no GPU needed), as Markdown.
# BUILD is a build folder (build/ci): its d2k and impl/. Default OUT: stdout.
set -euo pipefail
build=${1:?usage: sass-evidence.sh BUILD [OUT.md]}
out=${2:-/dev/stdout}
here="$(cd "$(dirname "$0")/.." && pwd)"
d2k="$build/src/cli/d2k"
[ -x "$d2k" ] || d2k="$build/bin/d2k"
export D2K_IMPL_DIR="$build/impl"
{
  echo "# SASS evidence of the pilots' design items"
  echo
  echo "Command: \`scripts/sass-evidence.sh build/ci\` ($(date -u +%Y-%m-%d), sm_90a libraries built by the ci preset;"
  echo "cuobjdump $("$here"/third_party/cuda-tools/bin/cuobjdump --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || echo '(not found)')). No GPU is needed: the"
  echo "libraries are read, not run. Each design item with an \`evidence\` signature (design.json) is"
  echo "**built** when one \`sass\` prefix appears and no \`sass_absent\` one does. 'ran' needs the"
  echo "audit's kernel set from a GPU run (\`--check traces.jsonl\`): n/a here."
  for task in fused_add_rmsnorm muon_optimizer_step topk_topp_mask; do
    impls=naive,expert
    for v in $(sed -n 's|^//[ ]*%VARIANT%[ ]*\([A-Za-z0-9_]*\).*|\1|p' "$here/dataset/$task/expert.cu"); do impls="$impls,expert:$v"; done
    echo
    echo "## $task"
    "$d2k" --dataset "$here/dataset" design evidence --task "$task" --impl "$impls" --markdown
  done
} > "$out"
