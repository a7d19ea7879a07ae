#!/usr/bin/env python3
"""Tests of the JSON Schemas in docs/schema/ against the C++ loader they describe.

  schema_test.py dataset    every file of every task (and design_levels.json) validates
  schema_test.py tasks      a mutation corpus of task files: the schema and `d2k tasks validate` both reject each
  schema_test.py documents  requests `d2k run` accepts and traces `d2k check`/`d2k run` write validate; bad
                            requests are refused by both
  schema_test.py drift      `d2k schema check` passes on docs/schema and names each fact a changed copy breaks
  schema_test.py levels     `d2k validate design-levels` on broken copies of the levels and a task's guidance
  schema_test.py traces F.. every line of the given trace files validates (scripts/gpu/checks/schemas.sh)

Needs Python's jsonschema (Draft 2020-12; scripts/setup.sh installs it). Prints one PASS/FAIL line per
case and exits non-zero on any failure.
"""
import argparse
import copy
import json
import pathlib
import shutil
import subprocess
import sys

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:  # pragma: no cover - reported as a test failure
    sys.exit("schema_test: Python's jsonschema (>= 4.0, Draft 2020-12) is missing: run scripts/setup.sh")

SCHEMA_FILES = {
    "definition": "definition.schema.json",
    "workload": "workload.schema.json",
    "design": "design.schema.json",
    "rubric": "rubric.schema.json",
    "design_levels": "design_levels.schema.json",
    "trace": "trace.schema.json",
    "request": "request.schema.json",
}
TASK_FILE_SCHEMA = {"definition.json": "definition", "workloads.jsonl": "workload", "design.json": "design",
                    "rubric.json": "rubric"}


class Schemas:
    """The schema files with their cross-file references ($ref to urn:d2k:schema:...) resolved."""

    def __init__(self, folder):
        self.docs = {k: json.loads((pathlib.Path(folder) / f).read_text()) for k, f in SCHEMA_FILES.items()}
        for doc in self.docs.values():
            Draft202012Validator.check_schema(doc)
        self.validators = {k: self._validator(doc) for k, doc in self.docs.items()}

    def _validator(self, schema):
        try:  # jsonschema >= 4.18
            from referencing import Registry, Resource
            registry = Registry().with_resources(
                [(d["$id"], Resource.from_contents(d)) for d in self.docs.values()])
            return Draft202012Validator(schema, registry=registry)
        except ImportError:  # Debian 12's jsonschema 4.10
            # Its RefResolver joins references with urllib, which resolves "#/$defs/x" against a
            # urn: base only when the scheme is listed as one that takes relative references.
            import urllib.parse
            if "urn" not in urllib.parse.uses_relative:
                urllib.parse.uses_relative.append("urn")
            store = {d["$id"]: d for d in self.docs.values()}
            resolver = jsonschema.RefResolver.from_schema(schema, store=store)
            return Draft202012Validator(schema, resolver=resolver)

    def errors(self, kind, doc):
        """One line per error: the JSON path and the message."""
        return ["{}: {}".format("/".join(str(p) for p in e.absolute_path) or "(root)", e.message[:300])
                for e in self.validators[kind].iter_errors(doc)]


class Report:
    def __init__(self):
        self.passed = self.failed = 0

    def case(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed or not self.passed else 0


def read_task_file(path):
    """A task file as JSON: workloads.jsonl as the list of its non-blank lines."""
    if path.name.endswith(".jsonl"):
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return json.loads(path.read_text())


def write_task_file(path, doc):
    if path.name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(line) + "\n" for line in doc))
    else:
        path.write_text(json.dumps(doc, indent=1))


def run_d2k(d2k, *args, cwd=None):
    p = subprocess.run([d2k, *args], capture_output=True, text=True, cwd=cwd, timeout=300)
    return p.returncode, p.stdout + p.stderr


# ---------------------------------------------------------------- dataset


def test_dataset(a, schemas, report):
    dataset = pathlib.Path(a.dataset)
    levels = json.loads((dataset / "design_levels.json").read_text())
    errs = schemas.errors("design_levels", levels)
    report.case("design_levels.json", not errs, "; ".join(errs))
    tasks = sorted(p for p in dataset.iterdir() if (p / "definition.json").is_file())
    for task in tasks:
        for fname, kind in TASK_FILE_SCHEMA.items():
            path = task / fname
            if not path.is_file():
                report.case(f"{task.name}/{fname}", False, "file is missing")
                continue
            doc = read_task_file(path)
            lines = doc if fname.endswith(".jsonl") else [doc]
            errs = [f"line {i + 1}: {e}" if len(lines) > 1 else e for i, line in enumerate(lines)
                    for e in schemas.errors(kind, line)]
            report.case(f"{task.name}/{fname}", not errs, "; ".join(errs[:5]))
    report.case("dataset has tasks", len(tasks) > 0, "no task found")


# ---------------------------------------------------------------- task mutations


def apply(doc, case):
    doc = copy.deepcopy(doc)
    *parents, last = case["path"]
    node = doc
    for k in parents:
        node = node[k]
    if case["op"] == "delete":
        del node[last]
    else:
        node[last] = case["value"]
    return doc


def test_tasks(a, schemas, report):
    corpus = json.loads(pathlib.Path(a.corpus).read_text())
    work = pathlib.Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    src = pathlib.Path(a.dataset)
    task = corpus["task"]
    for case in corpus["cases"]:
        ds = work / case["name"]
        shutil.copytree(src / task, ds / task)
        shutil.copy(src / "design_levels.json", ds / "design_levels.json")
        path = ds / task / case["file"]
        mutated = apply(read_task_file(path), case)
        write_task_file(path, mutated)
        kind = TASK_FILE_SCHEMA[case["file"]]
        lines = mutated if case["file"].endswith(".jsonl") else [mutated]
        schema_errs = [e for line in lines for e in schemas.errors(kind, line)]
        rc, out = run_d2k(a.d2k, "--dataset", str(ds), "tasks", "validate", task)
        problems = []
        if not schema_errs:
            problems.append("the schema accepts it")
        if case.get("warning"):
            if rc != 0:
                problems.append(f"d2k was expected to warn only, exit {rc}")
        elif rc != 1:
            problems.append(f"d2k tasks validate exit {rc}, expected 1")
        if case["d2k"] not in out:
            problems.append(f"d2k did not print '{case['d2k']}': {out.strip()[:400]}")
        report.case(f"{case['name']} (schema: {schema_errs[0] if schema_errs else '-'})", not problems,
                    "; ".join(problems))
    shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- requests and traces

REQUEST_MUTATIONS = [
    # (name, change to a valid request, substring d2k run prints)
    ("request_missing_task", lambda r: r.pop("task"), "task: missing"),
    ("request_no_targets", lambda r: r.update(targets=[]), "targets: expected a non-empty array"),
    ("request_unknown_field", lambda r: r.update(priority=1), "priority: unknown field"),
    ("request_unknown_target", lambda r: r.update(targets=[{"name": "fastest"}]), "targets[0].name: unknown target"),
    ("request_unknown_track", lambda r: r.update(targets=[{"name": "solution", "track": "opencl", "dir": "s"}]),
     "targets[0].track: unknown track 'opencl'"),
    ("request_solution_without_dir", lambda r: r.update(targets=[{"name": "solution"}]), "targets[0].dir"),
    ("request_builtin_with_dir", lambda r: r.update(targets=[{"name": "naive", "dir": "x"}]),
     "targets[0].dir: only a solution target has a folder"),
    ("request_rounds_zero", lambda r: r["options"].update(rounds=0), "options.rounds: expected at least 1"),
    ("request_bad_isolation", lambda r: r["options"].update(isolation="vm"), "options.isolation: expected worker or none"),
    ("request_negative_seed", lambda r: r["options"].update(seed=-1), "options.seed: expected a non-negative integer"),
    ("request_time_string", lambda r: r["options"].update(time="yes"), "options.time: expected true or false"),
    ("request_negative_device", lambda r: r.update(device=-1), "device: expected a device index"),
    ("request_workloads_not_strings", lambda r: r.update(workloads=[1]), "workloads[0]: expected a string"),
]


def validate_lines(schemas, kind, path):
    lines = [json.loads(line) for line in pathlib.Path(path).read_text().splitlines() if line.strip()]
    errs = [f"line {i + 1}: {e}" for i, line in enumerate(lines) for e in schemas.errors(kind, line)]
    return lines, errs


def test_documents(a, schemas, report):
    work = pathlib.Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ds = ["--dataset", a.dataset]
    # Examples the C++ writes with every optional part filled (a timed GPU trace, a full request).
    rc, out = run_d2k(a.d2k, "schema", "dump")
    dumped = json.loads(out) if rc == 0 else {}
    for kind in ("request", "trace"):
        doc = dumped.get("examples", {}).get(kind)
        errs = schemas.errors(kind, doc) if doc is not None else [f"d2k schema dump failed: {out[:300]}"]
        report.case(f"schema dump example {kind} validates", not errs, "; ".join(errs))
    # d2k check on the host path (no GPU needed): the reference's traces; the naive target's SKIPPED ones.
    traces = work / "check.jsonl"
    rc, out = run_d2k(a.d2k, *ds, "check", "--task", "fused_add_rmsnorm", "--impl", "reference", "--seed", "3",
                      "--rounds", "1", "--quiet", "--json", str(traces))
    lines, errs = validate_lines(schemas, "trace", traces) if traces.exists() else ([], [f"no traces: {out[:300]}"])
    report.case(f"d2k check --impl reference: {len(lines)} trace(s) validate", lines and not errs, "; ".join(errs[:5]))
    traces = work / "naive.jsonl"
    rc, out = run_d2k(a.d2k, *ds, "check", "--task", "fused_add_rmsnorm", "--impl", "naive", "--seed", "3",
                      "--rounds", "1", "--quiet", "--json", str(traces))
    lines, errs = validate_lines(schemas, "trace", traces) if traces.exists() else ([], [f"no traces: {out[:300]}"])
    report.case(f"d2k check --impl naive: {len(lines)} trace(s) validate", lines and not errs, "; ".join(errs[:5]))
    # d2k run: the request it accepts validates, and so do the traces it writes.
    req_path = pathlib.Path(a.requests) / "reference_host.json"
    request = json.loads(req_path.read_text())
    errs = schemas.errors("request", request)
    report.case("request reference_host.json validates", not errs, "; ".join(errs))
    traces = work / "run.jsonl"
    rc, out = run_d2k(a.d2k, *ds, "run", str(req_path), "--out", str(traces), "--quiet")
    lines, errs = validate_lines(schemas, "trace", traces) if traces.exists() else ([], [f"no traces: {out[:300]}"])
    report.case(f"d2k run (exit {rc}): {len(lines)} trace(s) validate", rc == 0 and lines and not errs,
                "; ".join(errs[:5]) or out[:300])
    # Requests d2k run refuses: the schema refuses each too.
    bad = json.loads((pathlib.Path(a.requests) / "bad_track.json").read_text())
    cases = [("request bad_track.json", bad, "targets[0].track")]
    for name, change, expect in REQUEST_MUTATIONS:
        r = copy.deepcopy(request)
        change(r)
        cases.append((name, r, expect))
    for name, r, expect in cases:
        path = work / f"{name.replace(' ', '_')}.json"
        path.write_text(json.dumps(r))
        rc, out = run_d2k(a.d2k, *ds, "run", str(path), "--out", str(work / "never.jsonl"))
        schema_errs = schemas.errors("request", r)
        problems = []
        if not schema_errs:
            problems.append("the schema accepts it")
        if rc != 2 or expect not in out:
            problems.append(f"d2k run exit {rc} (expected 2) printing '{expect}': {out.strip()[:300]}")
        report.case(f"{name} refused (schema: {schema_errs[0] if schema_errs else '-'})", not problems, "; ".join(problems))
    shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- drift between the schema files and the C++

DRIFT_CASES = [
    # (name, file, change, the pointer `d2k schema check` must name)
    ("dtype dropped", "definition.schema.json",
     lambda s: s["$defs"]["dtype"]["enum"].remove("bool"), "/$defs/dtype/enum"),
    ("dtype invented", "definition.schema.json",
     lambda s: s["$defs"]["dtype"]["enum"].append("float4_e2m1"), "/$defs/dtype/enum"),
    ("generator kind dropped", "definition.schema.json",
     lambda s: s["$defs"]["generator"]["allOf"].pop(), "/$defs/generator"),
    ("generator bound changed", "definition.schema.json",
     lambda s: s["$defs"]["generator"]["allOf"][0]["then"]["properties"]["std"].update(minimum=1), "/$defs/generator"),
    ("override field dropped", "definition.schema.json",
     lambda s: s["$defs"]["generator_override"]["else"]["properties"].pop("std"), "/$defs/generator_override"),
    ("compare rule invented", "definition.schema.json",
     lambda s: s["$defs"]["compare_rules"]["properties"]["rule"]["enum"].append("cosine"), "/$defs/compare_rules"),
    ("cost unit dropped", "definition.schema.json",
     lambda s: s["$defs"]["cost"]["properties"]["flops"]["propertyNames"]["enum"].remove("int32"),
     "/$defs/cost/properties/flops/propertyNames/enum"),
    ("track invented", "definition.schema.json",
     lambda s: s["$defs"]["tracks"]["propertyNames"]["enum"].append("opencl"), "/$defs/tracks/propertyNames/enum"),
    ("status dropped", "trace.schema.json",
     lambda s: s["properties"]["status"]["enum"].remove("TIMEOUT"), "/properties/status/enum"),
    ("performance field dropped", "trace.schema.json",
     lambda s: s["$defs"]["performance"]["properties"].pop("settle_s"), "/$defs/performance/properties"),
    ("rubric anchor changed", "rubric.schema.json",
     lambda s: s["$defs"]["anchors"]["required"].__setitem__(2, "60"), "/$defs/anchors/required"),
    ("design level renamed", "design.schema.json",
     lambda s: s["required"].__setitem__(1, "level_2_dataflow"), "/required"),
    ("request builtin invented", "request.schema.json",
     lambda s: s["$defs"]["builtin_target"]["enum"].append("cublas"), "/$defs/builtin_target/enum"),
]


def test_drift(a, schemas, report):
    rc, out = run_d2k(a.d2k, "schema", "check", a.schemas)
    report.case("d2k schema check docs/schema agrees", rc == 0, out.strip()[:2000])
    work = pathlib.Path(a.work)
    for name, fname, change, pointer in DRIFT_CASES:
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(a.schemas, work)
        doc = json.loads((work / fname).read_text())
        change(doc)
        (work / fname).write_text(json.dumps(doc))
        rc, out = run_d2k(a.d2k, "schema", "check", str(work))
        expect = f"{fname}: {pointer}:"
        report.case(f"drift: {name}", rc == 1 and expect in out, f"exit {rc}, expected 1 naming '{expect}': {out[:400]}")
    shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- d2k validate design-levels

LEVEL_CASES = [
    # (name, change to design_levels.json, change to the task's design.json, to its rubric.json,
    #  the finding d2k must print, whether the schema sees it too (None: a rule across fields or files))
    ("anchor missing", lambda l: l["level_2_dataflow_design"]["anchors"].pop("50"), None, None,
     "design_levels.json: level_2_dataflow_design.anchors.50: missing anchor", "design_levels"),
    ("anchor unknown", lambda l: l["level_1_high_level_algorithmic_insights"]["anchors"].update({"60": "x"}), None, None,
     "design_levels.json: level_1_high_level_algorithmic_insights.anchors.60: unknown anchor", "design_levels"),
    ("anchors missing", lambda l: l["level_3_low_level_optimization_tricks"].pop("anchors"), None, None,
     "design_levels.json: level_3_low_level_optimization_tricks.anchors: missing required field", "design_levels"),
    ("title empty", lambda l: l["level_1_high_level_algorithmic_insights"].update(title=" "), None, None,
     "design_levels.json: level_1_high_level_algorithmic_insights.title: empty", "design_levels"),
    ("level missing", lambda l: l.pop("level_3_low_level_optimization_tricks"), None, None,
     "design_levels.json: level_3_low_level_optimization_tricks: missing level", "design_levels"),
    ("id missing", lambda l: l["level_2_dataflow_design"].pop("id"), None, None,
     "design_levels.json: level_2_dataflow_design.id: missing required field", "design_levels"),
    ("id with a dot", lambda l: l["level_2_dataflow_design"].update(id="L.2"), None, None,
     "design_levels.json: level_2_dataflow_design.id: 'L.2' must be letters and digits", "design_levels"),
    ("id duplicate", lambda l: l["level_2_dataflow_design"].update(id="L1"), None, None,
     "design_levels.json: level_2_dataflow_design.id: duplicate id 'L1'", None),
    ("workspace not cumulative", lambda l: l["level_2_dataflow_design"].update(workspace="L2"), None, None,
     "design_levels.json: level_2_dataflow_design.workspace: 'L2' should be 'L1+L2'", None),
    ("not JSON", "{", None, None, "design_levels.json:1: JSON syntax error", None),
    ("item id without the level prefix", None, lambda d: d["level_2_dataflow_design"][0].update(id="tiles"), None,
     "design.json: level_2_dataflow_design[0].id: 'tiles' must start with 'L2.'", "design"),
    ("item id duplicate", None,
     lambda d: d["level_1_high_level_algorithmic_insights"].append(dict(d["level_1_high_level_algorithmic_insights"][0])),
     None, "duplicate id", None),
    ("design level missing", None, lambda d: d.pop("level_3_low_level_optimization_tricks"), None,
     "design.json: level_3_low_level_optimization_tricks: missing or empty", "design"),
    ("design item empty", None, lambda d: d["level_1_high_level_algorithmic_insights"][0].update(recognise=""), None,
     "design.json: level_1_high_level_algorithmic_insights[0].recognise: empty", "design"),
    ("rubric level missing", None, None, lambda r: r.pop("level_2"),
     "rubric.json: level_2.design.0: missing anchor", "rubric"),
    ("rubric anchor missing", None, None, lambda r: r["level_3"]["implementation"].pop("100"),
     "rubric.json: level_3.implementation.100: missing anchor", "rubric"),
    ("rubric missing", None, None, "delete", "rubric.json: file is missing", None),
    ("design missing", None, "delete", None, "design.json: file is missing", None),
]


def test_levels(a, schemas, report):
    src = pathlib.Path(a.dataset)
    work = pathlib.Path(a.work)
    task = "fused_add_rmsnorm"
    rc, out = run_d2k(a.d2k, "--dataset", a.dataset, "validate", "design-levels")
    report.case("the dataset's levels and every task's guidance pass", rc == 0 and "OK" in out, out[-1500:])

    def change_file(path, change, kind):
        if change is None:
            return []
        if change == "delete":
            path.unlink()
            return []
        if isinstance(change, str):
            path.write_text(change)
            return []
        doc = json.loads(path.read_text())
        change(doc)
        path.write_text(json.dumps(doc, indent=1))
        return schemas.errors(kind, doc)

    for name, lv, design, rubric, expect, schema_kind in LEVEL_CASES:
        shutil.rmtree(work, ignore_errors=True)
        (work / task).mkdir(parents=True)
        shutil.copy(src / "design_levels.json", work / "design_levels.json")
        for f in ("design.json", "rubric.json"):
            shutil.copy(src / task / f, work / task / f)
        errs = change_file(work / "design_levels.json", lv, "design_levels")
        errs += change_file(work / task / "design.json", design, "design")
        errs += change_file(work / task / "rubric.json", rubric, "rubric")
        rc, out = run_d2k(a.d2k, "validate", "design-levels", str(work / "design_levels.json"))
        problems = []
        if rc != 1 or expect not in out:
            problems.append(f"exit {rc} (expected 1) printing '{expect}': {out.strip()[:400]}")
        if schema_kind and not errs:
            problems.append(f"the {schema_kind} schema accepts it")
        report.case(f"design-levels: {name}", not problems, "; ".join(problems))
    shutil.rmtree(work, ignore_errors=True)


def test_traces(a, schemas, report):
    for f in a.files:
        lines, errs = validate_lines(schemas, "trace", f)
        timed = sum(1 for t in lines if t.get("performance"))
        report.case(f"{f}: {len(lines)} trace(s), {timed} timed, validate", lines and not errs, "; ".join(errs[:5]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["dataset", "tasks", "documents", "drift", "levels", "traces"])
    p.add_argument("files", nargs="*", help="trace files (traces)")
    p.add_argument("--schemas", required=True, help="docs/schema")
    p.add_argument("--dataset", help="the dataset folder (every mode but traces)")
    p.add_argument("--d2k", help="the d2k binary")
    p.add_argument("--corpus", help="task_mutations.json (tasks)")
    p.add_argument("--requests", help="the folder of request fixtures (documents)")
    p.add_argument("--work", help="a scratch folder (emptied)")
    a = p.parse_intermixed_args()
    schemas = Schemas(a.schemas)
    report = Report()
    {"dataset": test_dataset, "tasks": test_tasks, "documents": test_documents, "drift": test_drift,
     "levels": test_levels, "traces": test_traces}[a.mode](a, schemas, report)
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
