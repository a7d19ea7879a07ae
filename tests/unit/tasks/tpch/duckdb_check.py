#!/usr/bin/env python3
"""The TPC-H golden references against DuckDB on the same generated rows.

tpch_dump_rows (dump_rows.cpp) writes each check workload's lineitem columns (integers as the task stores them)
and the golden outputs of the task's reference.so; this script loads the rows into DuckDB with
TPC-H's SQL types (DATE, DECIMAL(15,2)), runs the query text committed in the task's test folder (SQL_DIR) with the
workload's parameters substituted, and compares: sums exactly, averages within the task's
tolerance. Exit 0 when every workload agrees, 1 on a disagreement, 77 (ctest's skip code) when
the duckdb module is missing (scripts/setup.sh provides it).

Usage: duckdb_check.py QUERY ROWS_DIR SQL_DIR   (QUERY: q6 or q1; SQL_DIR holds QUERY.sql)
"""
import datetime
import decimal
import json
import pathlib
import sys

try:
    import duckdb
except ImportError:
    print("SKIP: python module duckdb not found (scripts/setup.sh unpacks it into the third-party folder)")
    sys.exit(77)

SQL_DIR = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else pathlib.Path(__file__).resolve().parent
EPOCH = datetime.date(1970, 1, 1)

# How each stored column becomes its TPC-H SQL type.
COLUMN_SQL = {
    "l_shipdate": "(date '1970-01-01' + l_shipdate::INTEGER) AS l_shipdate",
    "l_discount": "(l_discount * 0.01)::DECIMAL(15,2) AS l_discount",
    "l_tax": "(l_tax * 0.01)::DECIMAL(15,2) AS l_tax",
    "l_extendedprice": "(l_extendedprice * 0.01)::DECIMAL(15,2) AS l_extendedprice",
    "l_quantity": "l_quantity::DECIMAL(15,2) AS l_quantity",
    "l_returnflag": "chr(l_returnflag::INTEGER) AS l_returnflag",
    "l_linestatus": "chr(l_linestatus::INTEGER) AS l_linestatus",
}


def day(n):
    return (EPOCH + datetime.timedelta(days=int(n))).isoformat()


def load(con, csv):
    cols = open(csv).readline().strip().split(",")
    con.execute(f"CREATE OR REPLACE TABLE raw AS SELECT * FROM read_csv('{csv}', header=true, all_varchar=false)")
    con.execute("CREATE OR REPLACE VIEW lineitem AS SELECT " + ", ".join(COLUMN_SQL[c] for c in cols) + " FROM raw")


def substitute(text, params):
    for k in sorted(params, key=len, reverse=True):  # :10 before :1
        text = text.replace(":" + k, str(params[k]))
    return text


def q6_query(s):
    """The official text when the parameters have qgen's form, else the bounds form."""
    lo = EPOCH + datetime.timedelta(days=s["date_lo"])
    one_year = lo.month == 1 and lo.day == 1 and s["date_hi"] == (datetime.date(lo.year + 1, 1, 1) - EPOCH).days
    band = s["discount_hi"] - s["discount_lo"] == 2 and s["discount_lo"] >= 0
    if one_year and band:
        params = {"1": lo.isoformat(), "2": f"{(s['discount_lo'] + 1) / 100:.2f}", "3": s["quantity_lt"]}
        return "q6.sql", substitute((SQL_DIR / "q6.sql").read_text(), params)
    params = {"date_lo": day(s["date_lo"]), "date_hi": day(s["date_hi"]),
              "discount_lo": f"{s['discount_lo'] / 100:.2f}", "discount_hi": f"{s['discount_hi'] / 100:.2f}",
              "quantity_lt": s["quantity_lt"]}
    return "q6_bounds.sql", substitute((SQL_DIR / "q6_bounds.sql").read_text(), params)


def q6_compare(rows, meta):
    (revenue,) = rows[0]
    engine = 0 if revenue is None else int(decimal.Decimal(revenue) * 10000)  # SQL's sum of nothing is NULL
    golden = meta["golden"]["revenue"][0]
    return engine == golden, f"duckdb {engine} golden {golden}"


def q1_query(s):
    delta = (datetime.date(1998, 12, 1) - EPOCH).days - s["shipdate_max"]
    return "q1.sql", substitute((SQL_DIR / "q1.sql").read_text(), {"1": delta})


Q1_FLAGS, Q1_STATUS = "ANR", "FO"
AVG_RTOL = 1e-12


def q1_compare(rows, meta):
    """Row g of the golden is (flag g // 2, status g % 2); DuckDB lists only non-empty groups, in
    ORDER BY order, which must be ascending g."""
    gold = meta["golden"]
    seen, problems, last = set(), [], -1
    for r in rows:
        g = 2 * Q1_FLAGS.index(r[0]) + Q1_STATUS.index(r[1])
        if g <= last:
            problems.append(f"row {r[0]}{r[1]} out of ORDER BY")
        last = g
        seen.add(g)
        hi, lo = gold["sum_charge"][2 * g], gold["sum_charge"][2 * g + 1]
        exact = {
            "sum_qty": (int(r[2]), gold["sum_qty"][g]),
            "sum_base_price": (int(r[3] * 100), gold["sum_base_price"][g]),
            "sum_disc_price": (int(r[4] * 10**4), gold["sum_disc_price"][g]),
            "sum_charge": (int(r[5] * 10**6), (hi << 64) + (lo % (1 << 64))),
            "count_order": (int(r[9]), gold["count_order"][g]),
        }
        for k, (e, v) in exact.items():
            if e != v:
                problems.append(f"{r[0]}{r[1]} {k}: duckdb {e} golden {v}")
        for k, e, scale in (("avg_qty", r[6], 1), ("avg_price", r[7], 100), ("avg_disc", r[8], 100)):
            v = gold[k][g]
            if abs(float(e) * scale - v) > AVG_RTOL * abs(v) * 10:  # DuckDB's average: its own rounding
                problems.append(f"{r[0]}{r[1]} {k}: duckdb {float(e) * scale!r} golden {v!r}")
    for g in range(6):
        if g not in seen and gold["count_order"][g] != 0:
            problems.append(f"group {g} missing in duckdb but has {gold['count_order'][g]} rows in the golden")
    return not problems, "; ".join(problems) if problems else f"{len(rows)} groups equal"


QUERIES = {"q6": (q6_query, q6_compare), "q1": (q1_query, q1_compare)}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in QUERIES:
        print(__doc__)
        return 2
    make_query, compare = QUERIES[sys.argv[1]]
    rows_dir = pathlib.Path(sys.argv[2])
    metas = sorted(rows_dir.glob("*.json"))
    if not metas:
        print(f"FAIL: no workloads in {rows_dir}")
        return 1
    con = duckdb.connect()
    failed, official, agreed = 0, 0, 0
    for m in metas:
        meta = json.loads(m.read_text())
        load(con, str(m.with_suffix(".csv")))
        name, sql = make_query(meta["scalars"])
        official += name == f"{sys.argv[1]}.sql"
        ok, what = compare(con.execute(sql).fetchall(), meta)
        print(f"{'PASS' if ok else 'FAIL'} {meta['uuid']} ({meta['rows']} rows, {name}): {what}")
        failed += not ok
        agreed += ok
    if official == 0:
        print(f"FAIL: no workload ran the official {sys.argv[1]}.sql text")
        failed += 1
    print(f"duckdb {duckdb.__version__}: {agreed} of {len(metas)} workloads agree")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
