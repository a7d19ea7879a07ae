#!/usr/bin/env python3
"""Writes TABLE.parquet beside each TABLE.jsonl that `d2k pack` made (docs/pack.md).

The rows are defined once, in C++ (src/pack/pack.h): this script adds nothing and drops nothing.
It takes the column list from --columns (d2k passes its own), checks that every row has exactly
those keys with string values, and writes them as string columns in that order.

Usage: pack_parquet.py --columns task_id,op_type,... TABLE.jsonl [TABLE.jsonl ...]
"""
import argparse
import json
import os
import sys


def convert(path, columns, pa, pq):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if list(row) != columns:
                sys.exit(f"{path}:{n}: columns {list(row)} are not {columns}")
            bad = [k for k, v in row.items() if not isinstance(v, str)]
            if bad:
                sys.exit(f"{path}:{n}: {', '.join(bad)}: not a string")
            rows.append(row)
    schema = pa.schema([(c, pa.string()) for c in columns])
    table = pa.table({c: pa.array([r[c] for r in rows], pa.string()) for c in columns}, schema=schema)
    out = os.path.splitext(path)[0] + ".parquet"
    tmp = out + ".tmp"
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, out)  # a reader never sees half a table
    print(f"{out}: {len(rows)} rows")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--columns", required=True, help="comma-separated column names, in order")
    ap.add_argument("tables", nargs="+", help="JSONL tables written by d2k pack")
    args = ap.parse_args()
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        sys.exit("pack_parquet.py: pyarrow is not installed (scripts/setup.sh installs it: "
                 "python3 -m pip install pyarrow)")
    columns = args.columns.split(",")
    for t in args.tables:
        convert(t, columns, pa, pq)


if __name__ == "__main__":
    main()
