"""Interop benchmark: automatic layout and OTM/Threat Dragon import, 1k and 10k elements.

The synthetic models of `generate.py` have their element and boundary positions removed, then
`layout_missing_positions` places them all. The same models are exported as OTM and Threat
Dragon JSON and imported back (detection, parse, mapping, validation; positions kept). Times
are medians of several runs in this process.

`python tools/benchmarks/bench_interop.py` prints the rows on its own.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
SIZES = (1_000, 10_000)
RUNS = {1_000: 9, 10_000: 5}
TARGET_LAYOUT_10K_S = 1.0
TARGET_IMPORT_10K_S = 5.0


def _row(
    metric: str, value: Any, unit: str, target: Any = None, ratio: Any = None
) -> dict[str, Any]:
    return {
        "benchmark": "interop",
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

    from stockade.importers.convert import import_bytes
    from stockade.importers.otm import export_otm
    from stockade.importers.threat_dragon import export_threat_dragon
    from stockade.thf.layout import layout_missing_positions

    rows = [_row("machine load average (1 min) at start", round(os.getloadavg()[0], 2), "procs")]
    for size in SIZES:
        model = generate_model(size)
        bare = model.model_copy(
            update={
                "elements": [e.model_copy(update={"position": None}) for e in model.elements],
                "trust_boundaries": [
                    b.model_copy(update={"position": None, "size": None})
                    for b in model.trust_boundaries
                ],
            }
        )
        times = []
        for _ in range(RUNS[size]):
            gc.collect()
            started = time.perf_counter()
            placed = layout_missing_positions(bare)
            times.append(time.perf_counter() - started)
            assert all(e.position is not None for e in placed.elements)
        median = statistics.median(times)
        is_10k = size == 10_000
        rows.append(
            _row(
                f"{size // 1000}k elements, {len(bare.data_flows)} flows: layout "
                f"(median of {RUNS[size]})",
                median,
                "s",
                TARGET_LAYOUT_10K_S if is_10k else None,
                f"{median / TARGET_LAYOUT_10K_S:.2f}x target" if is_10k else None,
            )
        )
        for label, export in (("OTM", export_otm), ("Threat Dragon", export_threat_dragon)):
            raw = export(model).encode("utf-8")
            times = []
            for _ in range(RUNS[size]):
                gc.collect()
                started = time.perf_counter()
                imported = import_bytes(raw)
                times.append(time.perf_counter() - started)
            assert len(imported.model.elements) == size
            median = statistics.median(times)
            rows.append(
                _row(
                    f"{size // 1000}k elements: import {label} JSON, {len(raw) / 1e6:.1f} MB "
                    f"(median of {RUNS[size]})",
                    median,
                    "s",
                    TARGET_IMPORT_10K_S if is_10k else None,
                    f"{median / TARGET_IMPORT_10K_S:.2f}x target" if is_10k else None,
                )
            )
    return rows


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    from tools.benchmarks.main import print_table

    print_table(run())
