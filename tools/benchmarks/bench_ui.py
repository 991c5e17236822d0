"""UI benchmarks: how long until the main window shows a 10,000-element model, and until its
diagram is drawn on first switching to the Diagram tab (offscreen).

Each measurement runs in a fresh subprocess so import and start-up costs count the way a user
feels them. `run()` returns rows for the bench runner; `python tools/benchmarks/bench_ui.py`
prints them.
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

ELEMENTS = 10_000
RUNS = 3
TARGET_SECONDS = 2.5
DIAGRAM_TARGET_SECONDS = 2.5
"""Our own budget for first switching to the Diagram tab (it is drawn on first show)."""
_ROOT = Path(__file__).resolve().parents[2]


def _child(model_path: str) -> None:
    """Runs inside the subprocess: start the app, open the model, report when it is on screen."""
    started = time.perf_counter()
    import asyncio

    import qasync
    from PySide6.QtWidgets import QApplication

    from stockade.ui.app import create_main_window

    app = QApplication([sys.argv[0]])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    window = create_main_window(probe_keyring=False)
    window.show()

    async def open_and_settle() -> bool:
        opened = await window.open_file(model_path)
        # Shown means painted: let the pending layout and paint events run once.
        QApplication.processEvents()
        window.grab()
        return opened

    with loop:
        opened = loop.run_until_complete(open_and_settle())
        elapsed = time.perf_counter() - started
        diagram_started = time.perf_counter()
        window.show_tab("diagram")
        QApplication.processEvents()
        window.grab()
        diagram_seconds = time.perf_counter() - diagram_started
    print(json.dumps({"opened": opened, "seconds": elapsed, "diagram_seconds": diagram_seconds}))


def _measure(model_path: Path, home: Path, pycache: Path) -> dict[str, float]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", STOCKADE_HOME=str(home))
    # An installed app starts from compiled bytecode; a private cache (warmed by an unmeasured
    # first run) gives the child that without writing into the source tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    result = subprocess.run(
        [sys.executable, __file__, "--child", str(model_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
        cwd=_ROOT,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"the UI benchmark child failed: {result.stderr.strip()[-2000:]}")
    report = json.loads(lines[-1])
    if not report["opened"]:
        raise RuntimeError("the UI benchmark child could not open the generated model")
    return {"window": float(report["seconds"]), "diagram": float(report["diagram_seconds"])}


def run() -> list[dict[str, Any]]:
    """Median seconds from process start to the window showing the 10k-element model."""
    if str(_ROOT) not in sys.path:
        sys.path.insert(0, str(_ROOT))
    from tools.benchmarks.generate import generate_model

    from stockade.thf.writer import save

    with tempfile.TemporaryDirectory(prefix="stockade-bench-ui-") as tmp:
        folder = Path(tmp)
        model_path = folder / "model-10k.thf"
        save(generate_model(ELEMENTS), model_path)
        home = folder / "home"
        home.mkdir()
        pycache = folder / "pycache"
        _measure(model_path, home, pycache)  # warm-up: fills the bytecode cache
        samples = [_measure(model_path, home, pycache) for _ in range(RUNS)]
    rows = []
    for key, name, target in (
        ("window", "ui_window_shown_10k_elements", TARGET_SECONDS),
        ("diagram", "ui_diagram_drawn_10k_elements", DIAGRAM_TARGET_SECONDS),
    ):
        median = statistics.median(sample[key] for sample in samples)
        rows.append(
            {
                "benchmark": name,
                "metric": "median_seconds",
                "value": round(median, 3),
                "unit": "s",
                "target": target,
                "ratio": round(median / target, 3),
            }
        )
    rows.extend(_streaming_rows())
    return rows


def _streaming_rows() -> list[dict[str, Any]]:
    """The chat pane's streaming-drift figures (`ui_streaming.py`)."""
    from tools.benchmarks.ui_streaming import rows as streaming_rows

    try:
        return streaming_rows()
    except RuntimeError as err:
        # One failing figure must not hide the others; say so loudly on stderr.
        print(f"ui streaming benchmark failed: {err}", file=sys.stderr)
        return []


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(sys.argv[2])
    else:
        for row in run():
            print(json.dumps(row))
