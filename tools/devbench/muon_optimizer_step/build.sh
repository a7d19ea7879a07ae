#!/usr/bin/env bash
# Builds the muon_optimizer_step implementations and the devbench driver with nvcc directly
# (sm_90a), into build/muon_optimizer_step/ under the repository root. Usage:
#   tools/devbench/muon_optimizer_step/build.sh [reference|naive|expert|expert_tri256|library|driver|calib|all]...
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
TASK=muon_optimizer_step
SRC="$ROOT/dataset/$TASK"
OUT="$ROOT/build/$TASK"
IMPL="$OUT/impl/$TASK"
mkdir -p "$IMPL"
CUTLASS="$ROOT/third_party/cutlass/whl/cutlass_library/source/include"
GENCODE="-gencode=arch=compute_90a,code=sm_90a"
NVFLAGS=(-std=c++20 -O3 -DNDEBUG $GENCODE --expt-relaxed-constexpr -lineinfo -Xcompiler=-fPIC,-fvisibility=hidden
         -shared -I"$ROOT/include" -I"$SRC" -isystem "$CUTLASS")
build_one() {
  local t0=$SECONDS
  case "$1" in
    reference) g++ -std=c++20 -O2 -fPIC -shared -fvisibility=hidden -Wall -Wextra -I"$ROOT/include" -I"$SRC" \
                 "$SRC/reference.cpp" -o "$IMPL/reference.so" ;;
    naive)     nvcc "${NVFLAGS[@]}" "$SRC/naive.cu" -o "$IMPL/naive.so" -lcublas ;;
    library)   nvcc "${NVFLAGS[@]}" "$SRC/library.cu" -o "$IMPL/library.so" -lcublasLt -lcublas ;;
    expert)    nvcc "${NVFLAGS[@]}" -Xptxas=-v "$SRC/expert.cu" -o "$IMPL/expert.so" > "$OUT/expert.ptxas.log" 2>&1 \
                 || { cat "$OUT/expert.ptxas.log"; return 1; } ;;
    expert_tri256) nvcc "${NVFLAGS[@]}" -Xptxas=-v -DMUON_TRI_TILE_N=256 "$SRC/expert.cu" -o "$IMPL/expert_tri256.so" \
                 > "$OUT/expert_tri256.ptxas.log" 2>&1 || { cat "$OUT/expert_tri256.ptxas.log"; return 1; } ;;
    expert_full) nvcc "${NVFLAGS[@]}" -Xptxas=-v -DMUON_TRI_FULL=1 "$SRC/expert.cu" -o "$IMPL/expert_full.so" \
                 > "$OUT/expert_full.ptxas.log" 2>&1 || { cat "$OUT/expert_full.ptxas.log"; return 1; } ;;
    driver)    nvcc -std=c++20 -O2 $GENCODE -I"$ROOT/include" -I"$SRC" "$ROOT/tools/devbench/$TASK/driver.cu" \
                 -o "$OUT/muon_devbench" -ldl ;;
    calib)     g++ -std=c++20 -O2 "$ROOT/tools/devbench/$TASK/calib.cpp" -o "$OUT/muon_calib" ;;
    *) echo "unknown target $1" >&2; return 2 ;;
  esac
  echo "built $1 in $((SECONDS - t0)) s"
}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(all)
for t in "${targets[@]}"; do
  if [ "$t" = all ]; then
    for u in reference naive library driver expert expert_tri256 expert_full; do build_one "$u"; done
  else
    build_one "$t"
  fi
done
