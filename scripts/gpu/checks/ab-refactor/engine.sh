#!/usr/bin/env bash
# Runs `d2k ARGS...` of one engine in that engine's own environment, for ab-refactor.sh (which runs
# it under `timeout`): nothing carries over from the caller's or the other engine's environment.
#   old: from OLD (the unpacked 6b70af8 tarball): its ./dataset, its impl/ beside its d2k, its own
#        scripts/gpu/env.sh (libraries, caches, the sandbox permissions), cache under OUT/old
#   new: from ROOT (the repository root of main) with this checkout's scripts/gpu/env.sh and the
#        build in CARRY, cache under OUT/new
# Usage: engine.sh old|new OLD CARRY ROOT OUT ARGS...
set -uo pipefail
which=$1 old=$2 carry=$3 root=$4 out=$5
shift 5
# The session's shared cache and folders are the new engine's: each engine gets its own here.
unset D2K_SESSION_CACHE D2K_IMPL_DIR D2K_CACHE_DIR D2K_DATASET D2K_INCLUDE_DIR D2K_EXTRA_INCLUDE_DIRS D2K_SOURCE_DIR
export LD_LIBRARY_PATH=""
case $which in
  old) cd "$old" && source scripts/gpu/env.sh . "$out/old" > /dev/null && exec "$old/d2k" "$@" ;;
  new) cd "$root" && source scripts/gpu/env.sh "$carry" "$out/new" > /dev/null && exec "$carry/d2k" "$@" ;;
  *) echo "engine.sh: ENGINE must be old or new, not '$which'" >&2; exit 2 ;;
esac
