"""Document benchmark: load+validate and save times, peak memory, and cost over a bare parse.

Models of 1k, 10k and 50k elements (with 1.5x flows, 0.5x threats, boundaries, layers, groups)
are generated and written with Stockade's writer; every figure is then measured in a fresh
subprocess so earlier work (imports, caches, garbage) does not colour it. Times are medians of
rounds in which every operation runs once, so the two sides of each ratio are measured side by
side as the machine's speed moves (PyYAML's loader only at 1k and 10k: it takes about a minute
at 50k).

The bare-parse ratios compare `read_text` (parse + validate, as the app and the command line
read a file) with a plain parse of the same bytes: by yaml-rs, the parser Stockade uses for
any YAML, and by PyYAML's C loader. Two more rows show where the read's time goes: the same
read in a build without the compiled block reader (every file through yaml-rs), and the
compiled reader's bare parse (docs/adr/0010-compiled-block-reader.md). Stockade pauses the
cyclic garbage collector while reading (see thf/reader.py), so the yaml-rs comparison is made
both ways: against a plain `yaml_rs.loads` call, and against one with the collector paused
too (the like-for-like cost of validation).

Then the read tools' warm and cold latencies on a 50,000-entity document
(`read_tool_latency`, whose docstring says how they are measured).

`python tools/benchmarks/bench_thf.py` prints the rows on its own.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SIZES = (1_000, 10_000, 50_000)
RUNS = {1_000: 9, 10_000: 5, 50_000: 5}
PYYAML_SIZES = (1_000, 10_000)  # PyYAML's C loader takes about a minute at 50k elements
TARGET_LOAD_10K_S = 1.0
TARGET_SAVE_10K_S = 1.0
TARGET_VALIDATION_OVERHEAD = 1.3  # load+validate at most 1.3x a bare parse (issue 15)

ROOT = Path(__file__).resolve().parent.parent.parent


def _child_times(path: str, runs: int, with_pyyaml: bool) -> dict[str, Any]:
    """Runs inside the subprocess: medians of every timed operation on one file."""
    import gc
    import time

    import yaml
    import yaml_rs

    from stockade.thf.reader import read_text
    from stockade.thf.writer import save

    data = Path(path).read_bytes()
    text = data.decode("utf-8")

    def once(operation: Any) -> float:
        # The result is freed after the clock stops: a caller keeps what it loaded, and
        # freeing it is not part of loading (the same rule for every parser measured).
        gc.collect()
        started = time.perf_counter()
        result = operation()
        elapsed = time.perf_counter() - started
        del result
        return elapsed

    def medians(operations: dict[str, Any], count: int) -> dict[str, float]:
        # Round by round, each operation once per round, so a ratio's two sides are measured
        # side by side: the machine's speed moves by up to 2x within a minute.
        times: dict[str, list[float]] = {name: [] for name in operations}
        for _ in range(count):
            for name, operation in operations.items():
                times[name].append(once(operation))
        return {name: statistics.median(values) for name, values in times.items()}

    def bare_paused() -> Any:
        gc.disable()
        try:
            return yaml_rs.loads(text, parse_datetime=False)
        finally:
            gc.enable()

    from stockade.thf import reader

    compiled = reader._load_block_subset

    def load_yaml_rs_only() -> Any:
        reader._load_block_subset = None
        try:
            return read_text(data)
        finally:
            reader._load_block_subset = compiled

    model = read_text(data)
    out = Path(path).with_suffix(".saved.thf")
    operations: dict[str, Any] = {
        "load": lambda: read_text(data),
        "load_yaml_rs_only": load_yaml_rs_only,
        "bare_yaml_rs": lambda: yaml_rs.loads(text, parse_datetime=False),
        "bare_yaml_rs_paused": bare_paused,
        "save": lambda: save(model, out),
    }
    if compiled is not None:
        operations["bare_block"] = lambda: compiled(text)
    result: dict[str, Any] = {
        "bare_block": None,
        **medians(operations, runs),
        "bare_pyyaml_c": (
            medians({"c": lambda: yaml.load(text, Loader=yaml.CSafeLoader)}, 5)["c"]
            if with_pyyaml else None
        ),
        "bytes": len(data),
        "entities": sum(len(getattr(model, s)) for s in ("elements", "data_flows", "threats")),
    }
    out.unlink()
    return result


def _peak_rss_kib() -> int:
    """This process's own peak resident memory. Linux's `ru_maxrss` also counts the peak of
    the process that started it (carried across fork and exec), which here is the benchmark
    holding its generated models; `VmHWM` is the peak of this process's own memory."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _child_memory(path: str) -> dict[str, Any]:
    """Runs inside a fresh subprocess: resident memory before and after one load."""
    from stockade.thf.reader import read_text

    data = Path(path).read_bytes()
    # The document models and their validators are imported by the first read: read a tiny
    # document first, so "over imports" is the load's own memory.
    read_text(
        "version: '1.0'\nmetadata:\n  title: T\n  author: A\n  created: 2026-01-01\n"
        "  modified: 2026-01-01\n"
    )
    before = _peak_rss_kib()
    model = read_text(data)
    after = _peak_rss_kib()
    assert model.version == "1.0"
    return {"rss_before_kib": before, "rss_peak_kib": after}


def _run_child(*args: str) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "desktop"), str(ROOT)])
    completed = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _row(
    metric: str, value: Any, unit: str, target: Any = None, ratio: Any = None
) -> dict[str, Any]:
    return {
        "benchmark": "thf",
        "metric": metric,
        "value": value,
        "unit": unit,
        "target": target,
        "ratio": ratio,
    }


def run() -> list[dict[str, Any]]:
    for path in (str(ROOT), str(ROOT / "desktop")):
        if path not in sys.path:
            sys.path.insert(0, path)
    from tools.benchmarks.generate import generate_model

    from stockade.thf.writer import save

    rows: list[dict[str, Any]] = [
        _row("machine load average (1 min) at start", round(os.getloadavg()[0], 2), "procs")
    ]
    with tempfile.TemporaryDirectory(prefix="stockade-bench-thf-") as folder:
        for size in SIZES:
            path = Path(folder) / f"model-{size}.thf"
            save(generate_model(size), path)
            times = _run_child(
                "--times", str(path), str(RUNS[size]), "1" if size in PYYAML_SIZES else "0"
            )
            memory = _run_child("--memory", str(path))
            label = f"{size // 1000}k"
            megabytes = times["bytes"] / 1e6
            is_10k = size == 10_000
            load = times["load"]
            rows.append(_row(f"{label} file size", round(megabytes, 2), "MB"))
            rows.append(
                _row(
                    f"{label} load+validate (median of {RUNS[size]})",
                    load,
                    "s",
                    TARGET_LOAD_10K_S if is_10k else None,
                    f"{load / TARGET_LOAD_10K_S:.2f}x target" if is_10k else None,
                )
            )
            rows.append(
                _row(
                    f"{label} save (median of {RUNS[size]})",
                    times["save"],
                    "s",
                    TARGET_SAVE_10K_S if is_10k else None,
                    f"{times['save'] / TARGET_SAVE_10K_S:.2f}x target" if is_10k else None,
                )
            )
            rows.append(
                _row(
                    f"{label} load+validate, yaml-rs only (a build without the compiled reader)",
                    times["load_yaml_rs_only"],
                    "s",
                    None,
                    f"load = {load / times['load_yaml_rs_only']:.2f}x this",
                )
            )
            if times["bare_block"] is not None:
                rows.append(
                    _row(
                        f"{label} bare parse, compiled block reader (search texts not collected)",
                        times["bare_block"],
                        "s",
                        None,
                        f"load = {load / times['bare_block']:.2f}x this",
                    )
                )
            rows.append(
                _row(
                    f"{label} bare parse yaml-rs",
                    times["bare_yaml_rs"],
                    "s",
                    None,
                    f"load = {load / times['bare_yaml_rs']:.2f}x this",
                )
            )
            rows.append(
                _row(
                    f"{label} bare parse yaml-rs, GC paused",
                    times["bare_yaml_rs_paused"],
                    "s",
                    None,
                    f"load = {load / times['bare_yaml_rs_paused']:.2f}x this",
                )
            )
            for basis, key in (("", "bare_yaml_rs"), (", GC paused", "bare_yaml_rs_paused")):
                overhead = load / times[key]
                rows.append(
                    _row(
                        f"{label} load / bare yaml-rs parse{basis}",
                        round(overhead, 2),
                        "x",
                        TARGET_VALIDATION_OVERHEAD,
                        f"{overhead / TARGET_VALIDATION_OVERHEAD:.2f}x target",
                    )
                )
            if times["bare_pyyaml_c"] is not None:
                rows.append(
                    _row(
                        f"{label} bare parse PyYAML CSafeLoader",
                        times["bare_pyyaml_c"],
                        "s",
                        None,
                        f"load = {load / times['bare_pyyaml_c']:.2f}x this",
                    )
                )
            peak = memory["rss_peak_kib"] / 1024
            added = (memory["rss_peak_kib"] - memory["rss_before_kib"]) / 1024
            rows.append(
                _row(
                    f"{label} peak RSS of one load",
                    round(peak, 1),
                    "MiB",
                    None,
                    f"+{added:.1f} MiB over imports",
                )
            )
    from tools.benchmarks.read_tool_latency import read_tool_rows

    return rows + read_tool_rows()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--times"]:
        print(json.dumps(_child_times(argv[1], int(argv[2]), argv[3] == "1")))
        return 0
    if argv[:1] == ["--memory"]:
        print(json.dumps(_child_memory(argv[1])))
        return 0
    sys.path.insert(0, str(ROOT / "tools" / "benchmarks"))
    from main import print_table

    print_table(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
