#!/usr/bin/env bash
# Packs the pre-refactor engine (commit 6b70af8, the last of 2026-11-29) into one tarball for
# scripts/gpu/checks/ab-refactor.sh, in the layout that commit's scripts/gpu/pack.sh gives a carry
# (d2k beside impl/, lib/ with the Debian libraries the GPU machine lacks, dlpack-include/), plus
# what that d2k reads at run time from its own checkout:
#   dataset/                 its three tasks (it finds ./dataset from the current folder, or
#                            $D2K_DATASET), with design_levels.json
#   scripts/gpu/env.sh       its environment (library path, impl and cache folders, the
#                            permissions its sandboxed workers need): `source scripts/gpu/env.sh . OUT`
#   COMMIT                   the commit the build is of
# The GPU tests and exec's test programs of that pack.sh are left out: the comparison runs `d2k bench` only.
# The entries sit at the tarball's root: `mkdir OLD && tar -xJf TARBALL -C OLD && cd OLD`.
#
# Usage (from anywhere): pack_old.sh OLD_CHECKOUT OLD_BUILD TARBALL
#   OLD_CHECKOUT  a checkout of 6b70af8 (git worktree add --detach DIR 6b70af8)
#   OLD_BUILD     its build folder, with d2k and impl/{fused_add_rmsnorm,muon_optimizer_step,hash_join}
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: pack_old.sh OLD_CHECKOUT OLD_BUILD TARBALL" >&2; exit 2; }
src=$(cd "$1" && pwd); build=$(cd "$2" && pwd); tarball=$3
tasks="fused_add_rmsnorm muon_optimizer_step hash_join"
[ -x "$build/src/cli/d2k" ] || { echo "pack_old: no d2k in $build/src/cli (build target d2k)" >&2; exit 1; }
for t in $tasks; do
  for impl in naive expert reference; do
    [ -f "$build/impl/$t/$impl.so" ] || { echo "pack_old: $build/impl/$t/$impl.so missing (build impl_${t}_$impl)" >&2; exit 1; }
  done
  [ -f "$src/dataset/$t/definition.json" ] || { echo "pack_old: $src/dataset/$t/definition.json missing" >&2; exit 1; }
done
[ -f "$build/impl/muon_optimizer_step/library.so" ] ||
  { echo "pack_old: $build/impl/muon_optimizer_step/library.so missing (build impl_muon_optimizer_step_library)" >&2; exit 1; }

stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/dlpack-include/dlpack" "$stage/dataset" "$stage/scripts/gpu" "$stage/impl"
cp "$build/src/cli/d2k" "$stage/"
for t in $tasks; do cp -r "$build/impl/$t" "$stage/impl/$t"; done
cp /usr/include/dlpack/dlpack.h "$stage/dlpack-include/dlpack/"
for lib in $(ldd "$stage/d2k" | awk '/=> \//{print $3}' | grep -E 'libfmt|libseccomp' | sort -u); do
  cp -L "$lib" "$stage/lib/"
done
cp "$src/dataset/design_levels.json" "$stage/dataset/"
for t in $tasks; do cp -r "$src/dataset/$t" "$stage/dataset/$t"; done
cp "$src/scripts/gpu/env.sh" "$stage/scripts/gpu/env.sh"
git -C "$src" rev-parse HEAD > "$stage/COMMIT"
mkdir -p "$(dirname "$tarball")"
tar -C "$stage" -cJf "$tarball" .
echo "pack_old: $tarball ($(du -h "$tarball" | cut -f1)), commit $(cat "$stage/COMMIT")"
