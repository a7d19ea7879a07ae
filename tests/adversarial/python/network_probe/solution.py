"""Opens a socket to exfiltrate or fetch answers; computes wrongly if it got one."""
import socket

from rmsnorm_triton import run as honest


def run(x, residual, weight, out, residual_out, eps):
    ok = False
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(0.2)
        s.connect(("10.0.0.1", 80))
        ok = True
    except OSError:
        pass
    honest(x, residual, weight, out, residual_out, eps)
    if ok:
        out.zero_()
