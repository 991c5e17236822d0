"""Peer benchmark: Stockade and ThreatForge side by side on the same inputs.

With a ThreatForge checkout in `STOCKADE_PEER_DIR` (and node; what it needs is in `peer.py`),
both are measured in this run: each reducer over the two turns of `loop_sequences` (the peer
gets them in its own input vocabulary), and `validate` of a 2-element file as a whole process
(`stockade validate` against node running the peer's reader). Without one, the peer figures
are the ones recorded in docs/performance.md, and every row says so and gives their date.

Rows: the peer's figure, Stockade's, and `Stockade vs ThreatForge` whose value is how many
times ahead Stockade is (rates: Stockade/peer; times: peer/Stockade), with the target 2 for the
reducer and 1 for start-up; `ratio` is value/target, so at or above 1 meets it.

`python tools/benchmarks/bench_peer.py` prints the rows on its own.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
for _path in (str(ROOT / "desktop"), str(HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

TINY_THF = """version: "1.0"
metadata:
  title: Tiny
  author: Bench
  created: "2026-01-01"
  modified: "2026-01-01"
  description: ""
elements:
  - id: web
    type: process
    name: Web
  - id: db
    type: data_store
    name: DB
"""

REDUCER_TARGET = 2.0
STARTUP_TARGET = 1.0
PROCESS_RUNS = 9


def _row(metric: str, value: float, unit: str, target: float | None = None,
         ratio: float | None = None) -> dict[str, Any]:
    return {"benchmark": "peer", "metric": metric, "value": round(value, 3), "unit": unit,
            "target": target, "ratio": None if ratio is None else round(ratio, 3)}


def _bench_loop() -> Any:
    spec = importlib.util.spec_from_file_location("stockade_bench_loop_for_peer", HERE / "bench_loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peer_sequences() -> dict[str, list[dict[str, Any]]]:
    """The two benchmark turns in the peer's input vocabulary."""
    from loop_sequences import peer_input_json, streaming_inputs, tool_heavy_inputs

    from stockade.loop.state import ToolSet
    from stockade.tools.registry import default_registry

    heavy = tool_heavy_inputs(ToolSet.from_registry(default_registry()))
    return {
        "stream": [peer_input_json(i) for i in streaming_inputs()],
        "tool_heavy": [peer_input_json(i) for i in heavy],
    }


def stockade_validate_seconds(thf_file: Path, runs: int = PROCESS_RUNS) -> float:
    """Median wall time of `stockade validate FILE` as a fresh process, run from this tree."""
    from peer import process_seconds

    command = [sys.executable, "-m", "stockade.cli.main", "validate", str(thf_file)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "desktop")}
    return process_seconds(command, runs=runs, what="stockade validate", env=env)


def stockade_help_seconds(runs: int = PROCESS_RUNS) -> float:
    """Median wall time of `stockade --help` as a fresh process, run from this tree."""
    from peer import process_seconds

    command = [sys.executable, "-m", "stockade.cli.main", "--help"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "desktop")}
    return process_seconds(command, runs=runs, what="stockade --help", env=env)


def compare(environ: dict[str, str] | None = None, *, processes: int = 3, rounds: int = 5,
            process_runs: int = PROCESS_RUNS) -> list[dict[str, Any]]:
    """The rows: side by side when the peer can run here, else against the recorded figures."""
    import peer as harness

    ours = _bench_loop().reducer_rates()
    with tempfile.TemporaryDirectory(prefix="stockade-bench-peer-") as tmp:
        tiny = Path(tmp) / "tiny.thf"
        tiny.write_text(TINY_THF, encoding="utf-8")
        our_validate = stockade_validate_seconds(tiny, process_runs)
        our_help = stockade_help_seconds(process_runs)
        try:
            found = harness.find_peer(environ)
            rates = harness.reducer_rates(found, peer_sequences(), processes=processes,
                                          rounds=rounds)
            peer_validate = harness.reader_process_seconds(found, tiny, runs=process_runs)
            source = f"measured in this run ({found.folder}, node {found.node_version})"
            peer_stream = rates["stream"]["inputs_per_s"]
            peer_heavy = rates["tool_heavy"]["inputs_per_s"]
            label = "ThreatForge"
            how = "side by side"
            notes = [f"peer: {source}"] + [
                f"peer's final state, {name}: {r['phase']}/{r['outcome']} after {r['inputs']} inputs"
                for name, r in rates.items()
            ]
        except harness.PeerUnavailable as why:
            recorded = harness.recorded_figures()
            figures = recorded.figures
            peer_stream = figures["reducer_stream"].value
            peer_heavy = figures["reducer_tool_heavy"].value
            peer_validate = figures["validate_tiny_process"].value
            label = f"ThreatForge RECORDED {recorded.recorded.split(' ')[0]}, not measured here"
            how = "vs recorded figures"
            notes = [f"peer not run: {why}", f"recorded: {recorded.recorded}"]
    rows = [
        _row(f"{label}: reduceTurn, streamed reply (10,003 inputs) [in-process]", peer_stream, "inputs/s"),
        _row("Stockade: reduce_turn, streamed reply (10,003 inputs) [in-process]", ours["stream"], "inputs/s"),
        _row(f"Stockade vs ThreatForge, streamed reply ({how})", ours["stream"] / peer_stream,
             "x ahead", REDUCER_TARGET, ours["stream"] / peer_stream / REDUCER_TARGET),
        _row(f"{label}: reduceTurn, tool-heavy turn (927 inputs) [in-process]", peer_heavy, "inputs/s"),
        _row("Stockade: reduce_turn, tool-heavy turn (927 inputs) [in-process]", ours["tool_heavy"], "inputs/s"),
        _row(f"Stockade vs ThreatForge, tool-heavy turn ({how})", ours["tool_heavy"] / peer_heavy,
             "x ahead", REDUCER_TARGET, ours["tool_heavy"] / peer_heavy / REDUCER_TARGET),
        _row(f"{label}: read a 2-element file [node process]", peer_validate, "s"),
        _row("Stockade: stockade validate on a 2-element file [CLI process]", our_validate, "s"),
        _row(f"Stockade vs ThreatForge, start-up ({how})", peer_validate / our_validate,
             "x ahead", STARTUP_TARGET, peer_validate / our_validate / STARTUP_TARGET),
        _row("Stockade: stockade --help [CLI process]", our_help, "s"),
    ]
    for note in notes:
        print(f"peer: {note}", file=sys.stderr)
    return rows


def run() -> list[dict[str, Any]]:
    return compare()


if __name__ == "__main__":
    from main import print_table

    print_table(run())
