"""Build step of the Python tracks, run by d2k in its sandbox: byte-compiles every .py of a
solution folder (nothing is executed, nothing is written) and checks that solution.py defines
run at module level. Prints one JSON line:
  {"ok": true} | {"error": "syntax", "file", "line", "message"} | {"error": "no_run", "file", "message"}
"""

import ast
import json
import os
import sys


def main(folder):
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
            source = f.read()
        try:
            compile(source, name, "exec", dont_inherit=True)
        except SyntaxError as e:
            return {"error": "syntax", "file": name, "line": e.lineno or 0,
                    "message": "%s: %s" % (type(e).__name__, e.msg)}
        except ValueError as e:  # null bytes
            return {"error": "syntax", "file": name, "line": 0, "message": str(e)}
    with open(os.path.join(folder, "solution.py"), "rb") as f:
        tree = ast.parse(f.read(), "solution.py")
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "run":
            return {"ok": True}
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "run" for t in targets):
                return {"ok": True}
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name) == "run" for a in node.names):
                return {"ok": True}
    return {"error": "no_run", "file": "solution.py",
            "message": "solution.py defines no run(...) at module level (the entry point d2k calls)"}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
