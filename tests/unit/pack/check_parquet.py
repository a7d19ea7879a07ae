#!/usr/bin/env python3
"""Runs `d2k pack` and reads every Parquet table back with pandas, comparing each field of each
row with the dataset's own files, read here independently of d2k.

Usage: check_parquet.py D2K DATASET
"""
import json
import os
import subprocess
import sys
import tempfile

import pandas as pd
import pyarrow.parquet as pq

FRAMEWORKS = ("cuda", "cutlass", "triton")
DESIGN_KEYS = ("level_1_high_level_algorithmic_insights", "level_2_dataflow_design",
               "level_3_low_level_optimization_tricks")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def expected_row(task_dir, framework):
    definition = json.loads(read(os.path.join(task_dir, "definition.json")))
    design = json.loads(read(os.path.join(task_dir, "design.json")))
    starter_dir = os.path.join(task_dir, "starter", framework)
    starter = {}
    for dirpath, _, names in os.walk(starter_dir):
        for n in names:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, starter_dir)
            if not any(part.startswith(".") or part == "__pycache__" for part in rel.split(os.sep)):
                starter[rel.replace(os.sep, "/")] = read(p)
    workloads = [json.loads(l) for l in read(os.path.join(task_dir, "workloads.jsonl")).splitlines() if l.strip()]
    row = {
        "task_id": f"{os.path.basename(task_dir)}__{framework}",
        "op_type": definition.get("op_type", ""),
        "description": definition.get("description", ""),
        "spec": read(os.path.join(task_dir, "spec.md")),
        "starter": starter,
        "rubric": json.loads(read(os.path.join(task_dir, "rubric.json"))),
        "workloads": workloads,
        "definition": definition,
    }
    for i, k in enumerate(DESIGN_KEYS, 1):
        row[f"design_level_{i}"] = design[k]
    return row


JSON_COLUMNS = {"starter", "design_level_1", "design_level_2", "design_level_3", "rubric", "workloads", "definition"}


def main():
    d2k, dataset = sys.argv[1], sys.argv[2]
    failures = 0
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([d2k, "--dataset", dataset, "pack", "--out", out], check=True)
        tasks = sorted(t for t in os.listdir(dataset) if os.path.isfile(os.path.join(dataset, t, "definition.json")))
        for fw in FRAMEWORKS:
            path = os.path.join(out, f"frontier_sol_{fw}.parquet")
            schema = pq.read_schema(path)
            if any(str(t) != "string" for t in schema.types):
                print(f"FAIL {path}: not all columns are strings: {schema}")
                failures += 1
            df = pd.read_parquet(path)
            want_tasks = [t for t in tasks if os.path.isdir(os.path.join(dataset, t, "starter", fw))]
            got_ids = list(df["task_id"])
            if got_ids != [f"{t}__{fw}" for t in want_tasks]:
                print(f"FAIL {path}: rows {got_ids}, expected one per task with a {fw} starter")
                failures += 1
                continue
            versions = set(df["dataset_version"])
            if len(versions) != 1 or len(next(iter(versions))) != 16:
                print(f"FAIL {path}: dataset_version {versions}")
                failures += 1
            for t, (_, row) in zip(want_tasks, df.iterrows()):
                want = expected_row(os.path.join(dataset, t), fw)
                for col, value in want.items():
                    got = json.loads(row[col]) if col in JSON_COLUMNS else row[col]
                    if got != value:
                        print(f"FAIL {path}: {t} {col} differs from the dataset")
                        failures += 1
            print(f"{path}: {len(df)} rows compared field by field")
    print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
