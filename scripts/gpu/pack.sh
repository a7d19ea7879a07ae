#!/usr/bin/env bash
# Collects what a GPU session needs from a build tree into one small folder, CARRY (the build tree
# itself is too large to send). Everything the scripts in scripts/gpu/ use comes from here:
#   d2k                     the binary
#   impl/<task>/*.so        every built-in implementation and expert variant
#   cutlass-include/        the CUTLASS/CuTe headers (the cutlass track)
#   cuda-tools/cuobjdump    the SASS disassembler of `d2k score`'s evidence (d2k looks beside itself)
#   include/                solution.h and dlpack/dlpack.h: what candidate solutions compile
#                           against (d2k looks for include/ beside itself; $D2K_INCLUDE_DIR wins)
#   tests/fixtures/         the fixture tasks and solutions the GPU tests read (D2K_SOURCE_DIR=CARRY)
#   gpu_tests/              the gtest binaries labelled `gpu` that run on their own
#   d2k_measure_probe       calibrate() alone, printing the ceilings as JSON
#   exec/                   exec's GPU test and sandbox test with the helper programs they start
#   d2k_fidelity            the timing-fidelity tool, when the build has it (-DD2K_BUILD_TOOLS=ON)
#   lib/                    the Debian libraries the GPU machine's image lacks (libfmt, libseccomp);
#                           lib/fallback/ the rest of d2k's, linked in by env.sh only where missing
# Usage (repository root): scripts/gpu/pack.sh BUILD_DIR CARRY
set -euo pipefail
build=$1; dest=$2
[ -x "$build/src/cli/d2k" ] || { echo "pack: no d2k in $build (build it first)" >&2; exit 1; }
rm -rf "$dest"; mkdir -p "$dest/gpu_tests" "$dest/exec" "$dest/lib" "$dest/tests"
cp "$build/src/cli/d2k" "$dest/"
cp -r "$build/impl" "$dest/impl"
ls "$dest"/impl/*/expert_*.so > /dev/null 2>&1 ||
  echo "pack: $build has no expert variants (configure it with -DD2K_EXPERT_VARIANTS=ON to time them)" >&2
cp -r include "$dest/include"
mkdir -p "$dest/include/dlpack"
cp /usr/include/dlpack/dlpack.h "$dest/include/dlpack/"
# The CUTLASS/CuTe headers of the cutlass track (d2k looks for cutlass-include/ beside itself;
# $D2K_CUTLASS_INCLUDE_DIR wins): the folder this build was configured with.
third_party=$(sed -n 's/^D2K_THIRD_PARTY:[A-Z]*=//p' "$build/CMakeCache.txt")
cutlass_inc="${third_party:-third_party}/cutlass/whl/cutlass_library/source/include"
[ -f "$cutlass_inc/cutlass/version.h" ] && cp -rL "$cutlass_inc" "$dest/cutlass-include"
if [ -x "${third_party:-third_party}/cuda-tools/bin/cuobjdump" ]; then
  mkdir -p "$dest/cuda-tools" && cp -L "${third_party:-third_party}/cuda-tools/bin/cuobjdump" "$dest/cuda-tools/"
fi
cp -r tests/fixtures "$dest/tests/fixtures"

copy_if_built() {  # copy_if_built DEST_SUBDIR BUILD_RELATIVE_PATH...
  local sub=$1; shift
  for t in "$@"; do
    if [ -x "$build/$t" ]; then cp "$build/$t" "$dest/$sub/"; else echo "pack: $t not built (skipped)"; fi
  done
}
copy_if_built gpu_tests tests/gpu/data_check/test_gpu_generators tests/gpu/data_check/test_gpu_compare \
  tests/gpu/measure/measure_gpu_tests
copy_if_built . tests/gpu/measure/d2k_measure_probe
copy_if_built exec tests/gpu/exec/exec_gpu_test tests/gpu/exec/exec_gpu_worker \
  tests/unit/exec/exec_sandbox_test tests/unit/exec/sandbox_probe
[ -x "$build/tools/fidelity/d2k_fidelity" ] && cp "$build/tools/fidelity/d2k_fidelity" "$dest/"

for lib in $(ldd "$dest/d2k" "$dest"/gpu_tests/* "$dest"/exec/* $(ls "$dest/d2k_fidelity" 2>/dev/null) |
             awk '/=> \//{print $3}' | grep -E 'libfmt|libseccomp' | sort -u); do
  cp -L "$lib" "$dest/lib/"
done
# Every other library d2k links that is not the C/C++ runtime or CUDA (the service's httplib,
# SQLite, PostgreSQL client, prometheus-cpp and what they pull in) goes to lib/fallback/: env.sh
# links in only those the GPU machine lacks, so none shadows a library of its own.
mkdir -p "$dest/lib/fallback"
for lib in $(ldd "$dest/d2k" | awk '/=> \//{print $3}' |
             grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libgcc_s|libstdc\+\+|libcuda|libcudart|libcupti|libcublas[^/]*|libnvidia[^/]*)\.so' |
             grep -vE 'libfmt|libseccomp' | sort -u); do
  cp -L "$lib" "$dest/lib/fallback/"
done
du -sh "$dest"
