"""Tries to write into the Triton cache (to plant a binary for a later run) and into its own
artifact folder (abi.json); computes wrongly if either write succeeded, so a harness that
allows it is seen as INCORRECT."""
import os

from rmsnorm_triton import run as honest


def _can_write(path):
    try:
        with open(path, "a") as f:
            f.write("#")
        return True
    except OSError:
        return False


def run(x, residual, weight, out, residual_out, eps):
    planted = _can_write(os.path.join(os.environ.get("TRITON_CACHE_DIR", "/nonexistent"), "planted.txt"))
    tampered = _can_write(os.path.join(os.path.dirname(os.path.abspath(__file__)), "abi.json"))
    honest(x, residual, weight, out, residual_out, eps)
    if planted or tampered:
        out.zero_()
