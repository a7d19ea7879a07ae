#!/usr/bin/env bash
# Builds the hash_join implementations as d2k shared libraries plus the devbench driver, with the
# same flags as dataset/CMakeLists.txt, into build/hash_join/ (carry that folder to the GPU).
#   tools/devbench/hash_join/build.sh [variant ...]
# A variant NAME=FLAGS builds expert.cu again as expert_NAME.so with extra -D flags, e.g.
#   items4="-DHJ_ITEMS=4"
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
task="$root/dataset/hash_join"
out="$root/build/hash_join"
impl="$out/impl"
mkdir -p "$impl"
arch="-gencode=arch=compute_90a,code=sm_90a"
cuflags=(-std=c++20 -O3 --expt-relaxed-constexpr -lineinfo "$arch" -Xcompiler=-fPIC,-fvisibility=hidden
         -shared -I"$root/include" -I"$task" -Xptxas=-v)
g++ -std=c++20 -O2 -fPIC -fvisibility=hidden -shared -Wall -Wextra -I"$root/include" \
    "$task/reference.cpp" -o "$impl/reference.so"
nvcc "${cuflags[@]}" "$task/naive.cu" -o "$impl/naive.so" 2> "$out/naive.ptxas.txt" || { cat "$out/naive.ptxas.txt"; exit 1; }
nvcc "${cuflags[@]}" "$task/expert.cu" -o "$impl/expert.so" 2> "$out/expert.ptxas.txt" || { cat "$out/expert.ptxas.txt"; exit 1; }
rm -f "$impl"/expert_*.so
for v in "$@"; do
  name="${v%%=*}"; flags="${v#*=}"
  # shellcheck disable=SC2086
  nvcc "${cuflags[@]}" $flags "$task/expert.cu" -o "$impl/expert_$name.so" 2> "$out/expert_$name.ptxas.txt" \
    || { cat "$out/expert_$name.ptxas.txt"; exit 1; }
done
if [ -f "$task/library.cu" ]; then
  nvcc "${cuflags[@]}" "$task/library.cu" -o "$impl/library.so"
fi
nvcc -std=c++20 -O2 "$arch" -I"$root/include" "$root/tools/devbench/hash_join/driver.cu" \
     -o "$out/hj_devbench" -ldl
echo "built into $out"
