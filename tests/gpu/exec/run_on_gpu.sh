#!/usr/bin/env bash
# Runs the exec GPU tests, and the sandbox tests as root, on a GPU machine from a build folder
# carried there (built elsewhere). Logs go to OUT_DIR.
# Usage (from the repository root): tests/gpu/exec/run_on_gpu.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR may hold runtime-libs/ (shared libraries the build machine has and the GPU machine
# may lack: libfmt, libseccomp, libcudart) and dlpack-include/ (dlpack/dlpack.h for compiling
# solutions where /usr/include/dlpack is missing); they are used only when needed.
set -uo pipefail
build=${1:-build/exec}
out=${2:-.}
export D2K_SOURCE_DIR=$PWD
{
  date -u
  echo "host $(hostname) kernel $(uname -r) $(id)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "nvcc: $(command -v nvcc || echo 'not on PATH')  gcc: $(command -v gcc || echo absent)  bwrap: $(command -v bwrap || echo absent)"
  ls -l /dev/nvidia*
  ls /usr/include/dlpack 2>&1
} 2>&1 | tee "$out/env.txt"
# The sandboxed worker runs as nobody (65534): every folder above the build must be searchable.
d=$PWD/$build
while [ "$d" != "/" ]; do
  if [ "$(( 0$(stat -c %a "$d") & 1 ))" = 0 ]; then chmod o+x "$d" && echo "chmod o+x $d" | tee -a "$out/env.txt"; fi
  d=$(dirname "$d")
done
if ldd "$build/tests/gpu/exec/exec_gpu_test" | grep -q "not found"; then
  export LD_LIBRARY_PATH=$PWD/$build/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "using carried runtime libraries: $LD_LIBRARY_PATH" | tee -a "$out/env.txt"
fi
[ -f /usr/include/dlpack/dlpack.h ] || export D2K_EXTRA_INCLUDE_DIRS=$PWD/$build/dlpack-include
command -v nvcc >/dev/null || { [ -x /usr/local/cuda/bin/nvcc ] && export D2K_NVCC=/usr/local/cuda/bin/nvcc; }

run() {  # run NAME SECONDS BINARY
  timeout "$2" "$3" 2>&1 | tee "$out/$1.log" > /dev/null
  echo "$1: exit ${PIPESTATUS[0]}; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$out/$1.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [A-Z]' "$out/$1.log" | sort -u
}
run exec_gpu_test 55 "$build/tests/gpu/exec/exec_gpu_test"
run exec_sandbox_test 25 "$build/tests/unit/exec/exec_sandbox_test"
run exec_basics_test 10 "$build/tests/unit/exec/exec_basics_test"
run exec_compile_test 22 "$build/tests/unit/exec/exec_compile_test"
grep -hE -A2 '^\[(compile|sandboxed|illegal|ipc|RLIMIT|deny)' "$out/exec_gpu_test.log" | cut -c1-400
grep -hE 'layers:|skipped:|^  [a-z_]+: ' "$out/exec_sandbox_test.log" | head -12
