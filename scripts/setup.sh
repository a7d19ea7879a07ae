#!/usr/bin/env bash
# Installs everything D2K-Bench needs to build and test on a Debian 12 machine, except the CUDA 13
# toolkit (nvcc, CUDA runtime, CUPTI, cuBLAS), which must already be installed.
# Idempotent: packages already present are left alone. postgresql, slurm* and munge are for the
# service's tests only (each starts its own server in a temp folder; no system service is used).
# Usage: scripts/setup.sh [THIRD_PARTY_DIR]
#   Header-only dependencies go to THIRD_PARTY_DIR, else $D2K_THIRD_PARTY, else <checkout>/third_party.
#   For a read-only checkout: scripts/setup.sh /elsewhere, then cmake -DD2K_THIRD_PARTY=/elsewhere.
set -euo pipefail

apt_packages=(
  build-essential cmake ninja-build pkg-config
  libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libgmock-dev
  libdlpack-dev libseccomp-dev bubblewrap libcap2-bin
  libsqlite3-dev libcurl4-openssl-dev libcpp-httplib-dev libssl-dev prometheus-cpp-dev libpqxx-dev
  libtomlplusplus-dev  # d2k proxy's config file and price table (TOML)
  git  # d2k audit release reads the checkout and its history through git
  python3 python3-pip
  python3-jsonschema  # the JSON Schema tests (tests/unit/schema, Draft 2020-12)
  chromium  # the browser test of the HTML report (tests/browser, headless)
  postgresql slurmctld slurmd slurm-client munge
)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Header-only pieces from PyPI, unpacked into the third-party folder (ignored by git):
#   nvidia-cutlass  CUTLASS/CuTe headers for expert kernels
#   nvidia-nvml-dev nvml.h for clock and throttle sampling
#   duckdb          the independent SQL engine of the TPC-H tasks' golden check (a binary wheel for
#                   this machine's Python, used through PYTHONPATH=<third-party>/duckdb)
#   nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm
#                   the SASS disassembler of the capability scorer's machine-code evidence (d2k
#                   score; docs/scorer.md): the CUDA toolkit package installed here lacks them;
#                   unpacked to <third-party>/cuda-tools/bin (the newest reads every older cubin)
here="$(cd "$(dirname "$0")/.." && pwd)"
tp="${1:-${D2K_THIRD_PARTY:-$here/third_party}}"
mkdir -p "$tp"
tp="$(cd "$tp" && pwd)"
py_pkgs=("nvidia-cutlass==4.2.0.0" "nvidia-nvml-dev==13.0.87" "duckdb==2.0.1"
         "nvidia-cuda-cuobjdump==13.5.37" "nvidia-cuda-nvdisasm==13.5.37")
if [ ! -f "$tp/.py-done" ] || [ "$(cat "$tp/.py-done")" != "${py_pkgs[*]}" ]; then
  rm -rf "$tp/wheels" && mkdir -p "$tp/wheels"
  python3 -m pip download -q --no-deps -d "$tp/wheels" "${py_pkgs[@]}"
  rm -rf "$tp/cutlass" "$tp/nvml" "$tp/duckdb" "$tp/cuda-tools"
  mkdir -p "$tp/cutlass" "$tp/nvml" "$tp/duckdb" "$tp/cuda-tools/bin"
  for w in "$tp"/wheels/*.whl; do
    case "$(basename "$w")" in
      nvidia_cutlass-*) python3 -m zipfile -e "$w" "$tp/cutlass/whl" ;;
      nvidia_nvml_dev-*) python3 -m zipfile -e "$w" "$tp/nvml/whl" ;;
      duckdb-*) python3 -m zipfile -e "$w" "$tp/duckdb" ;;
      nvidia_cuda_cuobjdump-*|nvidia_cuda_nvdisasm-*) python3 -m zipfile -e "$w" "$tp/cuda-tools/whl" ;;
    esac
  done
  # zipfile keeps no modes: the binaries are found wherever the wheel's layout puts them.
  find "$tp/cuda-tools/whl" -type f \( -name cuobjdump -o -name nvdisasm \) -exec chmod +x {} + \
    -exec ln -sfr {} "$tp/cuda-tools/bin/" \;
  echo "${py_pkgs[*]}" > "$tp/.py-done"
fi
# Python packages installed into this Python (not unpacked): pyarrow writes the Parquet task
# tables of `d2k pack` (scripts/pack_parquet.py); pandas reads them back in its test.
pip_pkgs=("pyarrow==26.0.1" "pandas==3.1.1")
if ! python3 - "${pip_pkgs[@]}" <<'PY'
import sys
from importlib.metadata import version, PackageNotFoundError
try:
    sys.exit(0 if all(version(p.split("==")[0]) == p.split("==")[1] for p in sys.argv[1:]) else 1)
except PackageNotFoundError:
    sys.exit(1)
PY
then
  # Debian's own python3 refuses pip installs (PEP 668) unless told; other Pythons ignore this.
  PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q "${pip_pkgs[@]}"
fi
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] ||
  echo "setup: nvcc not found: install the CUDA 13 toolkit (setup does not install it)" >&2
echo "setup: dependencies present (third-party headers in $tp)"
