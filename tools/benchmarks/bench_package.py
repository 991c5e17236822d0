"""Packaged-build benchmark: sizes of the bundle and the Debian package, and start-up to a written
screenshot, through the bundle and through the installed /usr/bin/stockade, side by side.

Cold start here means a new process (nothing of Stockade running), from spawn to exit after
`stockade FILE --screenshot PNG` wrote its image, with a fresh `STOCKADE_HOME` each time. The
OS file cache is left as it is (dropping it needs root and disturbs the shared machine); one
unmeasured run of each first makes every sample see the same warm cache. The bundle and the
installed package are sampled alternately, so load on the shared machine hits both alike. Also
reported, without a target: the start of a plain subcommand (`stockade validate`).
`ratio` is value/target, so at or below 1 meets the target.

Missing pieces are made: the bundle with `packaging/build`, the package with
`packaging/build --deb` (unless STOCKADE_BENCH_NO_BUILD=1, then a row says what was skipped).
The installed-binary rows need the package installed: when it is not and this runs as root,
the benchmark installs it with `dpkg -i` and removes it again with `dpkg -r` afterwards.
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
BUNDLE = DIST / "stockade"
INSTALLED = Path("/usr/bin/stockade")
SAMPLE = ROOT / "resources" / "samples" / "ecommerce-platform.thf"
RUNS = 7
SIZE_TARGET_MB = 200.0
DEB_TARGET_MB = 80.0
INSTALLED_TARGET_MB = 200.0
START_TARGET_S = 3.0
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _row(metric_name: str, metric: str, value: Any, unit: str, target: float | None) -> dict[str, Any]:
    ratio = None
    if target is not None and isinstance(value, int | float):
        ratio = round(value / target, 3)
    return {"benchmark": metric_name, "metric": metric, "value": value, "unit": unit,
            "target": target, "ratio": ratio}


def _bundle_executable() -> Path:
    return BUNDLE / ("stockade.exe" if os.name == "nt" else "stockade")


def bundle_size_mb(bundle: Path) -> float:
    """Bytes of every file in the bundle (symlinks counted as links, not twice), in MiB."""
    total = 0
    for path in bundle.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        total += path.stat().st_size
    return total / (1024 * 1024)


def _debs() -> list[Path]:
    return sorted(DIST.glob("stockade_*.deb"))


def _build(*args: str) -> str | None:
    """Run packaging/build; None when it succeeded, else why not."""
    if os.environ.get("STOCKADE_BENCH_NO_BUILD") == "1":
        return "not built (STOCKADE_BENCH_NO_BUILD=1)"
    print(f"package: running packaging/build {' '.join(args)}", file=sys.stderr, flush=True)
    result = subprocess.run([str(ROOT / "packaging" / "build"), *args], cwd=ROOT, check=False,
                            capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        return f"packaging/build failed: {result.stderr.strip()[-300:]}"
    return None


def _ensure_artifacts() -> str | None:
    """The bundle (and on Debian the package) exist afterwards; None when all is there."""
    want_deb = shutil.which("dpkg-deb") is not None
    if _bundle_executable().is_file() and (_debs() or not want_deb):
        return None
    return _build("--deb") if want_deb else _build()


def _package_installed() -> bool:
    result = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "stockade"],
                            capture_output=True, text=True, check=False)
    return result.returncode == 0 and "install ok installed" in result.stdout


@contextmanager
def _installed_package(deb: Path | None) -> Iterator[str | None]:
    """Yield None when /usr/bin/stockade is the package's (installing it for the run if need
    be), else the reason the installed rows are skipped."""
    if shutil.which("dpkg-query") is None:
        yield "not a Debian system"
        return
    if _package_installed():
        yield None  # the user's installation: measured, left alone
        return
    if deb is None:
        yield "no dist/stockade_*.deb"
        return
    if os.geteuid() != 0:
        yield "the package is not installed and installing it needs root"
        return
    result = subprocess.run(["dpkg", "-i", str(deb)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        subprocess.run(["dpkg", "-r", "stockade"], capture_output=True, check=False)
        yield f"dpkg -i failed: {result.stderr.strip()[-200:]}"
        return
    try:
        yield None
    finally:
        subprocess.run(["dpkg", "-r", "stockade"], capture_output=True, check=False)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith("STOCKADE_")}
    env.update({"STOCKADE_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"})
    return env


def _timed(executable: Path, args: list[str], work: Path, home: Path) -> float:
    started = time.perf_counter()
    result = subprocess.run([str(executable), *args], cwd=work, env=_env(home),
                            capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{executable} {' '.join(args)} exited {result.returncode}: "
                           f"{result.stderr.strip()[-500:]}")
    return elapsed


def start_to_screenshot(executable: Path, work: Path, label: str) -> float:
    """One new process from spawn to exit with its screenshot written."""
    home = Path(tempfile.mkdtemp(prefix=f"home-{label}-", dir=work))
    shot = home / "shot.png"
    elapsed = _timed(executable, [SAMPLE.name, "--screenshot", str(shot)], work, home)
    if not shot.is_file() or shot.read_bytes()[:8] != PNG_SIGNATURE:
        raise RuntimeError(f"{executable}: no PNG written")
    return elapsed


def _installed_tree_mb() -> float:
    """What dpkg says the package occupies (Installed-Size, KiB), in MiB."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${Installed-Size}", "stockade"],
                         capture_output=True, text=True, check=False).stdout.strip()
    return int(out) / 1024 if out.isdigit() else float("nan")


def run() -> list[dict[str, Any]]:
    """Rows: sizes; median start to screenshot (bundle, installed); median `validate` start."""
    skipped = _ensure_artifacts()
    if skipped is not None and not _bundle_executable().is_file():
        return [_row("package_bundle", "skipped", skipped, "-", None)]
    rows = [_row("package_bundle_size", "megabytes", round(bundle_size_mb(BUNDLE), 1), "MB",
                 SIZE_TARGET_MB)]
    debs = _debs()
    deb = debs[-1] if debs else None
    if deb is not None:
        rows.append(_row("package_deb_size", f"compressed ({deb.name})",
                         round(deb.stat().st_size / (1024 * 1024), 1), "MB", DEB_TARGET_MB))
    with tempfile.TemporaryDirectory(prefix="stockade-bench-package-") as tmp, \
            _installed_package(deb) as not_installed:
        work = Path(tmp)
        shutil.copy(SAMPLE, work / SAMPLE.name)
        subjects = {"bundle": _bundle_executable()}
        if not_installed is None:
            subjects["installed"] = INSTALLED
            rows.append(_row("package_installed_tree", "Installed-Size (dpkg)",
                             round(_installed_tree_mb(), 1), "MB", INSTALLED_TARGET_MB))
        else:
            rows.append(_row("package_installed", "skipped", not_installed, "-", None))
        for label, executable in subjects.items():
            start_to_screenshot(executable, work, label)  # unmeasured: the same warm cache
        shots: dict[str, list[float]] = {label: [] for label in subjects}
        for _ in range(RUNS):
            for label, executable in subjects.items():
                shots[label].append(start_to_screenshot(executable, work, label))
        validate = [_timed(subjects["bundle"], ["validate", SAMPLE.name], work,
                           work / "home-validate") for _ in range(RUNS)]
    rows.append(_row("package_start_to_screenshot", f"bundle, median_seconds_of_{RUNS}",
                     round(statistics.median(shots["bundle"]), 3), "s", START_TARGET_S))
    if "installed" in shots:
        rows.append(_row("package_start_to_screenshot",
                         f"installed /usr/bin/stockade, median_seconds_of_{RUNS}",
                         round(statistics.median(shots["installed"]), 3), "s", START_TARGET_S))
    rows.append(_row("package_cli_validate_start", f"bundle, median_seconds_of_{RUNS}",
                     round(statistics.median(validate), 3), "s", None))
    return rows


if __name__ == "__main__":
    for row in run():
        print(json.dumps(row))
