"""scripts/gpu/checks/lib/bench_records.py on the files a cut run leaves (docs/report.md, "Trace
files"): whole records are kept, partial ones counted, a torn last line is skipped and said, a
damaged line inside the file is an error. Usage: bench_records_test.py REPO_ROOT"""
import json
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(sys.argv[1]) / "scripts/gpu/checks/lib"))
import bench_records  # noqa: E402

failed = 0


def case(name, ok, detail=""):
    global failed
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    failed += not ok


def rec(target, uuid, median_us, partial=False, status="PASSED"):
    r = {"task": "t", "target": target, "impl_path": "", "message": "", "status": status,
         "workload": {"uuid": uuid, "role": "bench", "hidden": False, "axes": {"T": 8}},
         "performance": {"median_us": median_us}, "roofline": {"pct_sol": 50.0}}
    if partial:
        r["partial"] = True
    return json.dumps(r)


def load(text):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write(text)
    return f.name, bench_records.load([f.name], lambda wl, r: r["performance"]["median_us"])


# A run cut while writing its third line: the two whole records stay, the torn one is said.
torn = rec("expert", "w3", 3.0)[:40]
path, (rows, order, bad) = load(rec("naive", "w1", 1.0) + "\n" + rec("expert", "w2", 2.0, partial=True) + "\n" + torn)
case("whole records before a torn last line are kept", rows == {"w1": {"naive": 1.0}, "w2": {"expert": 2.0}}, rows)
case("the torn last line is said", any("last line torn" in b for b in bad), bad)
case("partial records are counted", any("1 record(s) partial" in b for b in bad), bad)

# A finished file: no notes at all.
path, (rows, order, bad) = load(rec("naive", "w1", 1.0) + "\n" + rec("expert", "w1", 0.5) + "\n")
case("a finished file reads as before", rows == {"w1": {"naive": 1.0, "expert": 0.5}} and bad == [], (rows, bad))

# A damaged line with records after it is not a cut run: an error naming the line.
try:
    load(rec("naive", "w1", 1.0) + "\n{broken\n" + rec("expert", "w1", 0.5) + "\n")
    case("a damaged inner line is an error", False, "accepted")
except ValueError as e:
    case("a damaged inner line is an error", ":2:" in str(e), e)

print(f"bench_records_test: {'FAILED' if failed else 'all passed'}")
sys.exit(1 if failed else 0)
