"""Benchmark runner: `tools/bench [thf|loop|governance|ui|interop|package|peer|all]` prints one aligned table.

Each benchmark lives in `tools/benchmarks/bench_<name>.py` and defines `run() -> list[dict]`
with rows `{benchmark, metric, value, unit, target, ratio}`. Modules are imported by file
path so a missing one only prints "not available yet".

With more than one benchmark (`all`), each runs in a fresh Python process: what one leaves
in memory (the 50k-entity models) would otherwise slow the next one's garbage collections,
and Linux reports a child's peak RSS as at least its parent's at the moment it was started,
so the app-window memory rows measured the runner, not the app.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BENCHMARKS = ("thf", "loop", "governance", "ui", "interop", "package", "peer")
COLUMNS = ("benchmark", "metric", "value", "unit", "target", "ratio")


def _load(name: str) -> Any | None:
    path = HERE / f"bench_{name}.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"stockade_bench_{name}", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def print_table(rows: list[dict[str, Any]]) -> None:
    cells = [[_cell(row.get(column)) for column in COLUMNS] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(COLUMNS)]
    numeric = {2, 4}

    def line(values: list[str]) -> str:
        return "  ".join(
            v.rjust(widths[i]) if i in numeric else v.ljust(widths[i]) for i, v in enumerate(values)
        ).rstrip()

    print(line(list(COLUMNS)))
    print(line(["-" * w for w in widths]))
    for row in cells:
        print(line(row))


def main(argv: list[str]) -> int:
    wanted = argv or ["all"]
    if any(name not in (*BENCHMARKS, "all") for name in wanted):
        print(f"usage: tools/bench [{'|'.join((*BENCHMARKS, 'all'))}]...", file=sys.stderr)
        return 2
    names = list(BENCHMARKS) if "all" in wanted else wanted
    # Benchmarks import `tools.benchmarks.generate` and the stockade package.
    for path in (str(ROOT), str(ROOT / "desktop")):
        if path not in sys.path:
            sys.path.insert(0, path)
    rows: list[dict[str, Any]] = []
    for name in names:
        module = _load(name)
        if module is None or not hasattr(module, "run"):
            print(f"{name}: not available yet", file=sys.stderr)
            continue
        started = time.perf_counter()
        print(f"{name}: running…", file=sys.stderr, flush=True)
        if len(names) == 1:
            rows.extend(module.run())
        else:
            rows.extend(_run_apart(name))
        print(f"{name}: done in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if rows:
        print_table(rows)
    return 0


def _run_apart(name: str) -> list[dict[str, Any]]:
    """One benchmark's rows from a fresh process of this runner (see the module docstring)."""
    result = subprocess.run([sys.executable, __file__, "--rows", name], stdout=subprocess.PIPE,
                            text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{name}: the benchmark failed (exit {result.returncode})")
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def _rows(name: str) -> int:
    for path in (str(ROOT), str(ROOT / "desktop")):
        if path not in sys.path:
            sys.path.insert(0, path)
    module = _load(name)
    assert module is not None
    # Whatever the benchmark or its children print goes to stderr; stdout carries the rows.
    rows_out = os.fdopen(os.dup(1), "w")
    sys.stdout.flush()
    os.dup2(2, 1)
    rows = module.run()
    json.dump(rows, rows_out)
    rows_out.close()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rows"]:
        raise SystemExit(_rows(sys.argv[2]))
    raise SystemExit(main(sys.argv[1:]))
