"""UI benchmarks on the path users take, each in a fresh process.

1. `stockade MODEL --screenshot X.png --tab tree|diagram` on the generator's 10k- and
   50k-element models: seconds from process start to the written screenshot and peak RSS,
   the Diagram tab side by side with the Tree tab in the same run (difference and ratio).
   Targets (10k): the Diagram tab adds at most 1 s and peaks under 500 MB.
2. The window's largest stall while the diagram is panned and zoomed: the real window shows
   the Diagram tab, a scripted sequence zooms in and out and pans (what ctrl+wheel and a
   drag do), and a 10 ms timer records how late it fires. Target: under 100 ms.

`run()` returns rows for the bench runner; `python tools/benchmarks/bench_ui.py` prints them.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SIZES = (10_000, 50_000)
RUNS = {10_000: 3, 50_000: 2}
ADDED_SECONDS_TARGET = 1.0
PEAK_MB_TARGET = 500.0
STALL_TARGET_MS = 100.0
TIMER_MS = 10
STEP_GAP_S = 0.04
_ROOT = Path(__file__).resolve().parents[2]


def _stall_child(model_path: str) -> None:
    """Runs inside the subprocess: open the model, show the diagram, pan and zoom it."""
    import asyncio

    import qasync
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from stockade.ui.app import SCREENSHOT_SIZE, create_main_window

    app = QApplication([sys.argv[0]])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    window = create_main_window(probe_keyring=False)
    window.resize(*SCREENSHOT_SIZE)
    window.show()
    lateness: list[float] = []
    last = [0.0]

    def tick() -> None:
        now = time.perf_counter()
        lateness.append(max(0.0, now - last[0] - TIMER_MS / 1000))
        last[0] = now

    async def scenario() -> dict[str, Any]:
        opened = await window.open_file(model_path)
        window.show_tab("diagram")
        await asyncio.sleep(0.5)  # the first build and paint are the open cost, not a stall
        view = window.diagram_view
        timer = QTimer()
        timer.setInterval(TIMER_MS)
        timer.timeout.connect(tick)
        last[0] = time.perf_counter()
        timer.start()
        steps = 0
        h, v = view.horizontalScrollBar(), view.verticalScrollBar()
        for direction in (1, -1):
            for _ in range(20):  # from the whole model to reading distance, or back
                (view.zoom_in if direction > 0 else view.zoom_out)()
                steps += 1
                await asyncio.sleep(STEP_GAP_S)
                for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)):
                    h.setValue(h.value() + dx * view.viewport().width() // 3)
                    v.setValue(v.value() + dy * view.viewport().height() // 3)
                    steps += 1
                    await asyncio.sleep(STEP_GAP_S)
        timer.stop()
        ticks = sorted(lateness)
        return {
            "opened": opened,
            "steps": steps,
            "max_stall_ms": ticks[-1] * 1000 if ticks else 0.0,
            "p95_stall_ms": ticks[int(len(ticks) * 0.95)] * 1000 if ticks else 0.0,
        }

    with loop:
        report = loop.run_until_complete(scenario())
    print(json.dumps(report))


def _env(home: Path, pycache: Path) -> dict[str, str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", STOCKADE_HOME=str(home))
    # An installed app starts from compiled bytecode; a private cache (warmed by an unmeasured
    # first run) gives the child that without writing into the source tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _screenshot_run(model: Path, tab: str, folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of `stockade MODEL --screenshot … --tab TAB`."""
    stockade = Path(sys.executable).with_name("stockade")
    command = [str(stockade), str(model), "--screenshot", str(folder / f"{tab}.png"), "--tab", tab]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=folder, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"stockade --screenshot --tab {tab} failed: {stderr[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024  # Linux reports kilobytes


def _stalls(model: Path, env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, __file__, "--stall-child", str(model)],
        capture_output=True, text=True, timeout=900, env=env, check=False, cwd=_ROOT,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"the stall benchmark child failed: {result.stderr.strip()[-2000:]}")
    report: dict[str, Any] = json.loads(lines[-1])
    if not report["opened"]:
        raise RuntimeError("the stall benchmark child could not open the generated model")
    return report


def _row(name: str, metric: str, value: float, unit: str, target: float | None) -> dict[str, Any]:
    return {
        "benchmark": name,
        "metric": metric,
        "value": round(value, 3),
        "unit": unit,
        "target": target,
        "ratio": round(value / target, 3) if target else None,
    }


def _write_model(size: int, path: Path) -> None:
    """Generate and save the model in a child process. A child's peak RSS as `wait4` reports
    it is at least the peak of the process that started it (Linux carries it across fork and
    exec), so this process must never hold a large model itself."""
    script = (
        "import sys; from pathlib import Path; "
        "from tools.benchmarks.generate import generate_model; "
        "from stockade.thf.writer import save; "
        "save(generate_model(int(sys.argv[1])), Path(sys.argv[2]))"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT / "desktop"), str(_ROOT)])
    subprocess.run([sys.executable, "-c", script, str(size), str(path)], check=True, env=env,
                   cwd=_ROOT)


def run(include_streaming: bool = True) -> list[dict[str, Any]]:
    """Tree vs diagram (time, ratio, peak RSS) on 10k and 50k models, and pan/zoom stalls;
    then the chat pane's streaming figures (`ui_streaming.py`)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="stockade-bench-ui-") as tmp:
        folder = Path(tmp)
        home = folder / "home"
        home.mkdir()
        env = _env(home, folder / "pycache")
        for size in SIZES:
            label = f"{size // 1000}k"
            model = folder / f"model-{label}.thf"
            _write_model(size, model)
            _screenshot_run(model, "tree", folder, env)  # warm-up: bytecode cache, file cache
            samples: dict[str, list[tuple[float, float]]] = {"tree": [], "diagram": []}
            for _ in range(RUNS[size]):
                for tab in ("tree", "diagram"):  # alternated, so load drifts hit both alike
                    samples[tab].append(_screenshot_run(model, tab, folder, env))
            tree_s = statistics.median(s for s, _ in samples["tree"])
            diagram_s = statistics.median(s for s, _ in samples["diagram"])
            tree_mb = statistics.median(m for _, m in samples["tree"])
            diagram_mb = statistics.median(m for _, m in samples["diagram"])
            big = size == 10_000
            rows += [
                _row(f"ui_open_tree_tab_{label}", "median_seconds", tree_s, "s", None),
                _row(f"ui_open_diagram_tab_{label}", "median_seconds", diagram_s, "s", None),
                _row(f"ui_diagram_added_{label}", "diagram_minus_tree", diagram_s - tree_s, "s",
                     ADDED_SECONDS_TARGET if big else None),
                _row(f"ui_diagram_vs_tree_{label}", "time_ratio", diagram_s / tree_s, "x", None),
                _row(f"ui_peak_rss_tree_tab_{label}", "median_peak", tree_mb, "MB", None),
                _row(f"ui_peak_rss_diagram_tab_{label}", "median_peak", diagram_mb, "MB",
                     PEAK_MB_TARGET if big else None),
            ]
            stalls = _stalls(model, env)
            rows += [
                _row(f"ui_pan_zoom_max_stall_{label}", f"max_over_{stalls['steps']}_steps",
                     stalls["max_stall_ms"], "ms", STALL_TARGET_MS if big else None),
                _row(f"ui_pan_zoom_p95_stall_{label}", "p95_timer_lateness",
                     stalls["p95_stall_ms"], "ms", None),
            ]
    if include_streaming:
        rows.extend(_streaming_rows())
    return rows


def _streaming_rows() -> list[dict[str, Any]]:
    """The chat pane's streaming-drift figures (`ui_streaming.py`)."""
    from tools.benchmarks.ui_streaming import rows as streaming_rows

    try:
        return streaming_rows()
    except (RuntimeError, subprocess.TimeoutExpired) as err:
        # One failing figure must not hide the others; say so loudly on stderr.
        print(f"ui streaming benchmark failed: {err}", file=sys.stderr)
        return []


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--stall-child":
        _stall_child(sys.argv[2])
    else:
        for row in run():
            print(json.dumps(row))
