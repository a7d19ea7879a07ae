"""Whether the built-in implementations of the engine before the refactor (6b70af8) and of this
build run the same device code: per library (OLD_IMPL/TASK/IMPL.so against NEW_IMPL/TASK/IMPL.so),
each kernel's SASS instructions (cuobjdump -sass, addresses and encodings left out) compared by
kernel name. Names are normalised for what the refactor renamed without changing code: the hash
nvcc puts in anonymous-namespace names, and fused_add_rmsnorm's `rmsnorm_rows_in_registers`
template, which lost its last argument (kHint, 0 on every path left) when the cache-hint variants
were deleted. A row "identical" means every kernel of both libraries matches instruction for
instruction: a time that differs between the engines is then not the kernels' doing.

Usage: python3 sass_compare.py OLD_IMPL NEW_IMPL [CUOBJDUMP]
  (CUOBJDUMP default: third_party/cuda-tools/bin/cuobjdump, else cuobjdump on PATH)
Exit status: the number of libraries whose kernels differ or are missing.
"""
import os
import re
import shutil
import subprocess
import sys

LIBS = [("fused_add_rmsnorm", "naive"), ("fused_add_rmsnorm", "expert"), ("hash_join", "naive"),
        ("hash_join", "expert"), ("muon_optimizer_step", "naive"), ("muon_optimizer_step", "expert"),
        ("muon_optimizer_step", "library")]


def normalise(name):
    name = re.sub(r"_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]{8}", "ANON", name)
    return re.sub(r"(rmsnorm_rows_in_registersI(?:Li\d+E){4})Li0EE", r"\1E", name)


def kernels(cuobjdump, so):
    """{normalised kernel name: [instruction text]} of one library's SASS."""
    out = subprocess.run([cuobjdump, "-sass", so], capture_output=True, text=True, check=True).stdout
    found, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            cur = found.setdefault(normalise(m.group(1)), [])
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if m and cur is not None:
            cur.append(m.group(1))
    return found


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    old_dir, new_dir = sys.argv[1], sys.argv[2]
    cuobjdump = sys.argv[3] if len(sys.argv) == 4 else (
        "third_party/cuda-tools/bin/cuobjdump" if os.access("third_party/cuda-tools/bin/cuobjdump", os.X_OK)
        else shutil.which("cuobjdump"))
    if not cuobjdump:
        sys.exit("sass_compare: no cuobjdump (pass its path)")
    bad = 0
    print("| task | impl | kernels old / new | identical | verdict |")
    print("| --- | --- | ---: | ---: | --- |")
    for task, impl in LIBS:
        paths = [os.path.join(d, task, impl + ".so") for d in (old_dir, new_dir)]
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            print(f"| {task} | {impl} | - | - | missing: {', '.join(missing)} |")
            bad += 1
            continue
        old, new = kernels(cuobjdump, paths[0]), kernels(cuobjdump, paths[1])
        same = sum(1 for k in old if new.get(k) == old[k])
        ok = same == len(old) == len(new) and len(old) > 0
        bad += not ok
        names = "" if ok else "; differ or unmatched: " + ", ".join(
            sorted({k[:60] for k in set(old) ^ set(new)} | {k[:60] for k in old if k in new and new[k] != old[k]})[:4])
        print(f"| {task} | {impl} | {len(old)} / {len(new)} | {same} | {'identical' if ok else 'differs' + names} |")
    return bad


if __name__ == "__main__":
    sys.exit(main())
