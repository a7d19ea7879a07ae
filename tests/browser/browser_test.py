#!/usr/bin/env python3
"""Loads `d2k report`'s HTML in headless Chromium and checks what a reader would see.

1. Console: Chromium's log (--enable-logging=stderr --v=0) has no console message for the page.
   A control page that logs an error and loads a missing image must show up in that log, or the
   check could never fail (it would pass vacuously).
2. Plots: in the DOM Chromium built (--dump-dom), each roofline <svg> holds one circle.point per
   timed trace of its task, counted here from the trace files, and the fast_p plot one curve per
   (run, target) with speed-ups over naive.
3. Screenshot (--screenshot): a PNG of the window's size, neither blank nor a single colour.
Exit 0 when all hold; prints one line per check.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser

WIDTH, HEIGHT = 1280, 2000


def chromium_binary():
    for name in [os.environ.get("D2K_CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"]:
        if name and shutil.which(name):
            return shutil.which(name)
    sys.exit("browser_report: no Chromium found (install the 'chromium' package: scripts/setup.sh, or set D2K_CHROMIUM)")


def chromium(binary, args, profile):
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start; the page is ours.
    cmd = [binary, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def console_lines(stderr):
    return [l for l in stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]


def expected_points(trace_files):
    """Per task: PASSED traces with a time and a cost (report/roofline_plot.h, plottable())."""
    points, curves = {}, set()
    for path in trace_files:
        run = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                t = json.loads(line)
                r, p = t.get("roofline") or {}, t.get("performance") or {}
                ok = t["status"] == "PASSED" and p.get("median_us", 0) > 0 and r.get("bytes", 0) > 0
                points[t["task"]] = points.get(t["task"], 0) + (1 if ok else 0)
                if t["target"] != "naive" and r.get("speedup_vs_naive") is not None:
                    curves.add((run, t["target"]))
    return points, len(curves)


class PlotCounter(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svgs, self.current = {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.current = a.get("id", "")
            self.svgs[self.current] = {"points": 0, "curves": 0, "data_points": int(a.get("data-points", -1))}
        elif self.current is not None and tag == "circle" and a.get("class") == "point":
            self.svgs[self.current]["points"] += 1
        elif self.current is not None and tag == "polyline" and a.get("class") == "curve":
            self.svgs[self.current]["curves"] += 1

    def handle_endtag(self, tag):
        if tag == "svg":
            self.current = None


def png_pixels(path):
    """(width, height, rows of bytes, bytes per pixel) of an 8-bit, non-interlaced RGB/RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"PNG layout not handled: depth {depth} colour {colour} interlace {interlace}")
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d2k", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    browser, profile = chromium_binary(), os.path.join(a.out, "profile")
    traces = [os.path.join(a.fixtures, "run_a.jsonl"), os.path.join(a.fixtures, "run_b.jsonl")]
    page = os.path.join(a.out, "report.html")
    subprocess.run([a.d2k, "report", *traces, "--compare", "--no-dataset", "--html", page], check=True,
                   stdout=subprocess.DEVNULL)
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    # 1. The console, with a control page that must be seen failing.
    control = os.path.join(a.out, "control.html")
    with open(control, "w") as f:
        f.write('<!DOCTYPE html><html><body><script>console.error("d2k-control-error")</script>'
                '<img src="missing-d2k-control.png"></body></html>')
    seen = console_lines(chromium(browser, ["--dump-dom", "file://" + control], profile).stderr)
    check(any("d2k-control-error" in l for l in seen), "the console check sees a control page's console error")
    dom_run = chromium(browser, ["--dump-dom", "file://" + page], profile)
    bad = console_lines(dom_run.stderr)
    check(dom_run.returncode == 0 and "</html>" in dom_run.stdout, "Chromium loaded the report")
    check(not bad, "no console messages from the report" + ("" if not bad else ": " + " | ".join(bad[:3])))

    # 2. Plots as Chromium parsed them.
    counter = PlotCounter()
    counter.feed(dom_run.stdout)
    points, curves = expected_points(traces)
    for task, n in sorted(points.items()):
        svg = counter.svgs.get("roofline-" + task)
        check(svg is not None and svg["points"] == n and svg["data_points"] == n,
              f"roofline-{task}: {svg['points'] if svg else 'no plot'} point(s), expected {n}")
    fp = counter.svgs.get("fast-p")
    check(fp is not None and fp["curves"] == curves, f"fast-p: {fp['curves'] if fp else 'no plot'} curve(s), expected {curves}")

    # 3. The screenshot.
    shot = os.path.join(a.out, "report.png")
    if os.path.exists(shot):
        os.remove(shot)
    chromium(browser, [f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars",
                       "file://" + page], profile)
    if not os.path.exists(shot):
        check(False, "screenshot written")
    else:
        w, h, rows, bpp = png_pixels(shot)
        check((w, h) == (WIDTH, HEIGHT), f"screenshot {w}x{h}, expected {WIDTH}x{HEIGHT}")
        colours, ink = set(), 0
        for row in rows[::4]:
            for x in range(0, w * bpp, 4 * bpp):
                px = row[x:x + 3]
                colours.add(px)
                ink += px != b"\xff\xff\xff"
        total = len(rows[::4]) * len(range(0, w * bpp, 4 * bpp))
        check(len(colours) >= 8, f"screenshot has {len(colours)} colours (not blank)")
        check(0.01 <= ink / total <= 0.9, f"screenshot ink {100 * ink / total:.1f}% of pixels (between 1% and 90%)")
    print("browser_report: " + ("PASS" if not failures else f"FAIL ({len(failures)} check(s))"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
