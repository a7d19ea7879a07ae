"""A check cut by SIGTERM keeps the records it finished in its --json file (docs/report.md, "Trace
files"). Runs the golden reference on the host (no GPU), waits for the first record to reach the
file while the run is still going, sends SIGTERM, and reads the file back: every line whole, each
a finished record. Before --json was written as records finished, the file stayed empty until the
run ended, and a cut run left nothing.
Usage: cut_run_json_test.py D2K DATASET WORKDIR"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

d2k, dataset, workdir = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
workdir.mkdir(parents=True, exist_ok=True)
out = workdir / "cut.jsonl"
out.unlink(missing_ok=True)

# Enough rounds that every workload takes a while: the kill lands between two records.
cmd = [d2k, "--dataset", dataset, "check", "--task", "fused_add_rmsnorm", "--impl", "reference", "--quiet",
       "--seed", "3", "--rounds", "40", "--json", str(out)]
proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def whole_lines():
    text = out.read_text() if out.exists() else ""
    return [l for l in text.split("\n")[:-1] if l.strip()]


deadline = time.monotonic() + 240
while not whole_lines() and proc.poll() is None and time.monotonic() < deadline:
    time.sleep(0.05)
if proc.poll() is not None:
    sys.exit(f"FAIL: the run ended (exit {proc.returncode}) before a record reached {out}: "
             f"records are not written as they finish\n{proc.stderr.read()[-2000:]}")
if not whole_lines():
    proc.kill()
    sys.exit(f"FAIL: no record in {out} after 240 s of the run")
proc.send_signal(signal.SIGTERM)
proc.wait(timeout=60)
if proc.returncode != -signal.SIGTERM:
    sys.exit(f"FAIL: expected the run to end by SIGTERM, it exited {proc.returncode}")

lines = whole_lines()
records = [json.loads(l) for l in lines]  # a line that does not parse fails the test here
text = out.read_text()
if text and not text.endswith("\n"):
    sys.exit("FAIL: the last line is torn (a record must be written whole)")
checks = sum('"role": "check"' in l for l in (pathlib.Path(dataset) / "fused_add_rmsnorm/workloads.jsonl").open())
if not 0 < len(records) < checks:
    sys.exit(f"FAIL: {len(records)} record(s) of {checks} workloads on disk: the kill did not cut the run between two "
             "records (records written only at the end?)")
for r in records:
    if r["task"] != "fused_add_rmsnorm" or r["target"] != "reference" or r["status"] != "PASSED":
        sys.exit(f"FAIL: unexpected record {json.dumps(r)[:300]}")
print(f"PASS: SIGTERM left {len(records)} finished record(s) in the --json file, every line whole")
