# Sourced by the GPU scripts: library path, implementation and cache folders, and the
# permissions sandboxed workers need. Usage: source scripts/gpu/env.sh CARRY OUT
# Absolute paths: the permission walk below climbs to / (a relative path would never reach it).
mkdir -p "$2"
carry=$(cd "$1" && pwd); out=$(cd "$2" && pwd)
# CUDA libraries from the machine's toolkit; Debian ones (libfmt, libseccomp) from the carry.
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do
  [ -d "$d" ] && LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export LD_LIBRARY_PATH="$carry/lib:${LD_LIBRARY_PATH:-}"
# Libraries d2k needs that this machine lacks come from the carry's fallback copies (pack.sh).
if [ -d "$carry/lib/fallback" ] && [ -x "$carry/d2k" ]; then
  # A library found now may need others (ldd lists those only once it is found): repeat until a
  # pass links nothing new (libpq -> libldap -> liblber is three deep).
  for pass in 1 2 3 4 5 6 7 8; do
    linked=0
    for name in $(ldd "$carry/d2k" 2>/dev/null | awk '/=> not found/{print $1}'); do
      [ -f "$carry/lib/fallback/$name" ] && [ ! -e "$carry/lib/$name" ] && ln -sf "fallback/$name" "$carry/lib/$name" && linked=1
    done
    [ "$linked" = 0 ] && break
  done
  missing=$(ldd "$carry/d2k" 2>/dev/null | awk '/=> not found/{print $1}' | tr '\n' ' ')
  [ -n "$missing" ] && echo "env.sh: d2k still lacks: $missing" >&2
fi
# D2K_SESSION_CACHE: one cache (calibration, compiled solutions) shared by every script of a
# session, so that one `d2k calibrate` serves them all; else a cache per output folder.
export D2K_IMPL_DIR="$carry/impl" D2K_CACHE_DIR="${D2K_SESSION_CACHE:-$out/cache}" D2K_DATASET="$PWD/dataset"
# Candidates compile against the carried include/ (solution.h, and dlpack.h, which is not installed
# there); GPU tests read their fixtures from the carry (CARRY/tests/fixtures, CARRY/include).
export D2K_INCLUDE_DIR="$carry/include" D2K_EXTRA_INCLUDE_DIRS="$carry/include" D2K_SOURCE_DIR="$carry"
export D2K_NVCC=/usr/local/cuda/bin/nvcc
# Sandboxed workers run as unprivileged uids: every folder above the carry, the dataset and
# the cache must be searchable, and what is in them readable.
mkdir -p "$D2K_CACHE_DIR"
for p in "$carry" "$D2K_CACHE_DIR" "$PWD"; do
  d=$(cd "$p" && pwd); while [ "$d" != / ] && [ "$d" != . ]; do chmod o+x "$d"; d=$(dirname "$d"); done
done
chmod -R o+rX "$carry" "$D2K_CACHE_DIR" 2>/dev/null
