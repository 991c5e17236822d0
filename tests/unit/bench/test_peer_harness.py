"""`tools/bench peer`: the harness loads a peer from the folder it is given at run time, feeds
its reducer the benchmark turns and times its reader as a process; without a peer it prints the
recorded figures, labelled as such. The peer here is a tiny stand-in the test writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tools.benchmarks import bench_peer, peer

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (tools/_setup.sh installs it)")

STAND_IN_MACHINE = """
// A stand-in turn machine: counts what it is fed and settles on an end_turn stop.
export function createIdleTurnState() { return { phase: "idle", outcome: null, seen: [] }; }
export function reduceTurn(state, input) {
  const seen = [...state.seen, input.type];
  if (state.phase === "settled") return state;
  if (input.type === "submit") {
    if (!input.toolSet || typeof input.limits?.maxIterations !== "number") {
      throw new Error("submit without the peer's tool set and limits");
    }
    return { ...state, phase: "requesting", seen };
  }
  if (input.type === "message_stop" && input.stopReason === "end_turn") {
    return { ...state, phase: "settled", outcome: "completed", seen };
  }
  return { ...state, seen };
}
"""
STAND_IN_TOOLS = """
export function createAiToolRegistry() { return { list: () => [], get: () => undefined }; }
"""
STAND_IN_READER = """
export function readThreatModelText(text) {
  if (!text.startsWith("version:")) throw new Error("not a threat model");
  return { elements: text.split("\\n").filter((line) => line.startsWith("  - id:")) };
}
"""


def write_stand_in(folder: Path) -> Path:
    files = {
        "src/lib/ai/loop/turn-machine.mjs": STAND_IN_MACHINE,
        "src/lib/ai/tools/tool-registry.mjs": STAND_IN_TOOLS,
        "src/lib/thf-yaml.js": STAND_IN_READER,
        "package.json": json.dumps({"type": "module"}),
    }
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def test_without_a_peer_the_recorded_figures_are_printed_and_labelled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorded = peer.recorded_figures()
    assert recorded.recorded.startswith("2026-")
    assert recorded.figures["reducer_stream"].value == 385_000
    assert recorded.figures["reducer_tool_heavy"].value == 67_000
    rows = bench_peer.compare({}, process_runs=1)
    peer_rows = [r for r in rows if r["metric"].startswith("ThreatForge")]
    assert len(peer_rows) == 3
    assert all("RECORDED 2026-" in r["metric"] and "not measured here" in r["metric"] for r in peer_rows)
    assert [r["value"] for r in peer_rows] == [385_000, 67_000, 0.126]
    versus = [r for r in rows if r["metric"].startswith("Stockade vs")]
    assert all("vs recorded figures" in r["metric"] for r in versus)
    stream = next(r for r in rows if r["metric"].startswith("Stockade: reduce_turn, streamed"))
    assert versus[0]["value"] == pytest.approx(stream["value"] / 385_000, rel=1e-3)
    assert "STOCKADE_PEER_DIR is not set" in capsys.readouterr().err


def test_an_incomplete_checkout_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(peer.PeerUnavailable, match="is not a folder"):
        peer.find_peer({"STOCKADE_PEER_DIR": str(tmp_path / "missing")})
    (tmp_path / "src/lib/ai/loop").mkdir(parents=True)
    with pytest.raises(peer.PeerUnavailable, match="turn-machine"):
        peer.find_peer({"STOCKADE_PEER_DIR": str(tmp_path), "STOCKADE_PEER_NODE": NODE or "node"})


@needs_node
def test_a_typescript_checkout_without_its_dependencies_says_to_install_them(tmp_path: Path) -> None:
    folder = write_stand_in(tmp_path)
    typescript = folder / "src/lib/ai/loop/turn-machine.ts"
    (folder / "src/lib/ai/loop/turn-machine.mjs").rename(typescript)
    found = peer.find_peer({"STOCKADE_PEER_DIR": str(folder)})
    assert found.modules["turn_machine"] == typescript
    with pytest.raises(peer.PeerUnavailable, match="npm ci"):
        peer.reducer_rates(found, {"stream": [{"type": "submit"}]}, processes=1, rounds=1)


@needs_node
def test_the_stand_in_peer_is_run_side_by_side_from_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = write_stand_in(tmp_path / "threatforge")
    env = {"STOCKADE_PEER_DIR": str(folder)}
    found = peer.find_peer(env)
    assert found.node_version.startswith("v") and "limits" not in found.modules

    sequences = bench_peer.peer_sequences()
    rates = peer.reducer_rates(found, sequences, processes=1, rounds=2)
    skipped = sum(1 for i in sequences["tool_heavy"] if i["type"] == "skip")
    assert rates["stream"]["inputs"] == 10_003
    assert rates["tool_heavy"]["inputs"] == 927 - skipped
    assert all(r["outcome"] == "completed" and r["inputs_per_s"] > 0 for r in rates.values())

    rows = bench_peer.compare(env, processes=1, rounds=1, process_runs=1)
    by_metric = {r["metric"]: r for r in rows}
    assert not any("RECORDED" in m for m in by_metric)
    peer_stream = by_metric["ThreatForge: reduceTurn, streamed reply (10,003 inputs) [in-process]"]["value"]
    ours = by_metric["Stockade: reduce_turn, streamed reply (10,003 inputs) [in-process]"]["value"]
    versus = by_metric["Stockade vs ThreatForge, streamed reply (side by side)"]
    assert versus["value"] == pytest.approx(ours / peer_stream, rel=1e-2)
    assert versus["ratio"] == pytest.approx(versus["value"] / 2, rel=1e-2)
    assert by_metric["ThreatForge: read a 2-element file [node process]"]["value"] > 0
    err = capsys.readouterr().err
    assert f"measured in this run ({folder.resolve()}" in err
    assert "tool_heavy: settled/completed" in err
