"""Starts a Python thread that keeps running after run() returns (work outside the timed window)."""
import threading
import time

from rmsnorm_triton import run as honest

_started = []


def _spin():
    while True:
        time.sleep(0.001)


def run(x, residual, weight, out, residual_out, eps):
    if not _started:
        t = threading.Thread(target=_spin, daemon=True)
        t.start()
        _started.append(t)
    honest(x, residual, weight, out, residual_out, eps)
