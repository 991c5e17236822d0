"""Packaged-build benchmark: size of dist/stockade/ and its start-up time to a written screenshot.

Cold start here means a new process of the bundle (nothing of Stockade running), from spawn to
exit after `stockade FILE --screenshot PNG` wrote its image, with a fresh `STOCKADE_HOME` each
time. The OS file cache is left as it is (dropping it needs root and disturbs the shared
machine); one unmeasured run first makes every sample see the same warm cache. Also reported,
without a target: the start of a plain subcommand (`stockade validate`). `ratio` is
value/target, so at or below 1 meets the target. When there is no bundle, it is built with
packaging/build, unless STOCKADE_BENCH_NO_BUILD=1, in which case a row says it was skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "dist" / "stockade"
SAMPLE = ROOT / "resources" / "samples" / "ecommerce-platform.thf"
RUNS = 7
SIZE_TARGET_MB = 200.0
START_TARGET_S = 3.0
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _row(metric_name: str, metric: str, value: Any, unit: str, target: float | None) -> dict[str, Any]:
    ratio = None
    if target is not None and isinstance(value, int | float):
        ratio = round(value / target, 3)
    return {"benchmark": metric_name, "metric": metric, "value": value, "unit": unit,
            "target": target, "ratio": ratio}


def _executable() -> Path:
    return BUNDLE / ("stockade.exe" if os.name == "nt" else "stockade")


def bundle_size_mb(bundle: Path) -> float:
    """Bytes of every file in the bundle (symlinks counted as links, not twice), in MiB."""
    total = 0
    for path in bundle.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        total += path.stat().st_size
    return total / (1024 * 1024)


def _ensure_bundle() -> str | None:
    """Build the bundle when it is missing; None when it is there, else why it is not."""
    if _executable().is_file():
        return None
    if os.environ.get("STOCKADE_BENCH_NO_BUILD") == "1":
        return "no dist/stockade (STOCKADE_BENCH_NO_BUILD=1)"
    print("package: no dist/stockade, running packaging/build", file=sys.stderr, flush=True)
    result = subprocess.run([str(ROOT / "packaging" / "build")], cwd=ROOT, check=False,
                            capture_output=True, text=True, timeout=1800)
    if result.returncode != 0 or not _executable().is_file():
        return f"packaging/build failed: {result.stderr.strip()[-300:]}"
    return None


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith("STOCKADE_")}
    env.update({"STOCKADE_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"})
    return env


def _timed(args: list[str], work: Path, home: Path) -> float:
    started = time.perf_counter()
    result = subprocess.run([str(_executable()), *args], cwd=work, env=_env(home),
                            capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"stockade {' '.join(args)} exited {result.returncode}: "
                           f"{result.stderr.strip()[-500:]}")
    return elapsed


def start_to_screenshot(work: Path, index: int) -> float:
    """One new bundle process from spawn to exit with its screenshot written."""
    home = work / f"home-{index}"
    shot = work / f"shot-{index}.png"
    elapsed = _timed([SAMPLE.name, "--screenshot", shot.name], work, home)
    if not shot.is_file() or shot.read_bytes()[:8] != PNG_SIGNATURE:
        raise RuntimeError(f"run {index}: no PNG written")
    return elapsed


def run() -> list[dict[str, Any]]:
    """Rows: bundle size, median start to screenshot, median start of `stockade validate`."""
    skipped = _ensure_bundle()
    if skipped is not None:
        return [_row("package_bundle", "skipped", skipped, "-", None)]
    rows = [_row("package_bundle_size", "megabytes", round(bundle_size_mb(BUNDLE), 1), "MB",
                 SIZE_TARGET_MB)]
    with tempfile.TemporaryDirectory(prefix="stockade-bench-package-") as tmp:
        work = Path(tmp)
        shutil.copy(SAMPLE, work / SAMPLE.name)
        start_to_screenshot(work, 0)  # unmeasured: the same file cache for every sample
        shots = [start_to_screenshot(work, i) for i in range(1, RUNS + 1)]
        validate = [_timed(["validate", SAMPLE.name], work, work / "home-validate")
                    for _ in range(RUNS)]
    rows.append(_row("package_start_to_screenshot", f"median_seconds_of_{RUNS}",
                     round(statistics.median(shots), 3), "s", START_TARGET_S))
    rows.append(_row("package_cli_validate_start", f"median_seconds_of_{RUNS}",
                     round(statistics.median(validate), 3), "s", None))
    return rows


if __name__ == "__main__":
    for row in run():
        print(json.dumps(row))
