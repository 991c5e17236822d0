"""Runs ThreatForge (the peer) side by side with Stockade, from a checkout named at run time.

Nothing of the peer is vendored or copied: `STOCKADE_PEER_DIR` names a ThreatForge checkout,
and the modules below are loaded from it when the benchmark runs. What that checkout needs:

- node (20 or newer, as ThreatForge requires) on PATH, or its path in `STOCKADE_PEER_NODE`;
- its dependencies installed (`npm ci` in the checkout), because its TypeScript sources are
  bundled with the checkout's own esbuild (`node_modules/.bin/esbuild`, which also resolves its
  `@/...` imports through the checkout's tsconfig.json);
- these modules, with these exports (ThreatForge's layout; see docs/performance.md, "Peer"):
  `src/lib/ai/loop/turn-machine` (`reduceTurn`, `createIdleTurnState`),
  `src/lib/ai/loop/limits` (`DEFAULT_TURN_LIMITS`, optional),
  `src/lib/ai/tools/tool-registry` (`createAiToolRegistry`) and
  `src/lib/thf-yaml` (`readThreatModelText`).

A module may be `.ts`/`.mts` (bundled) or `.js`/`.mjs` (imported as is, no esbuild needed).
Our own drivers (`peer/driver.mjs`, `peer/reader.mjs`) feed the peer the same inputs Stockade
reduces and time it. Without a usable checkout, `recorded_figures` reads the peer figures
recorded in docs/performance.md instead, with their date.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PEER_ENV = "STOCKADE_PEER_DIR"
NODE_ENV = "STOCKADE_PEER_NODE"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PERFORMANCE_DOC = ROOT / "docs" / "performance.md"

MODULES: dict[str, tuple[str, tuple[str, ...], bool]] = {
    # name: (path in the checkout without suffix, exports, required)
    "turn_machine": ("src/lib/ai/loop/turn-machine", ("reduceTurn", "createIdleTurnState"), True),
    "limits": ("src/lib/ai/loop/limits", ("DEFAULT_TURN_LIMITS",), False),
    "tools": ("src/lib/ai/tools/tool-registry", ("createAiToolRegistry",), True),
    "reader": ("src/lib/thf-yaml", ("readThreatModelText",), True),
}
SUFFIXES = (".ts", ".mts", ".js", ".mjs")
TYPESCRIPT = (".ts", ".mts")


class PeerUnavailable(Exception):
    """The peer cannot be run here; the message says what is missing."""


@dataclass(frozen=True)
class Peer:
    folder: Path
    node: str
    node_version: str
    modules: dict[str, Path]


def find_peer(environ: Mapping[str, str] | None = None) -> Peer:
    """The checkout named by `STOCKADE_PEER_DIR`, checked; raises `PeerUnavailable`."""
    env = os.environ if environ is None else environ
    named = env.get(PEER_ENV)
    if not named:
        raise PeerUnavailable(f"{PEER_ENV} is not set")
    folder = Path(named).expanduser().resolve()
    if not folder.is_dir():
        raise PeerUnavailable(f"{PEER_ENV}={named} is not a folder")
    node = env.get(NODE_ENV) or shutil.which("node")
    if not node:
        raise PeerUnavailable(f"node is not on PATH (or set {NODE_ENV})")
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True,
                                 check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise PeerUnavailable(f"{node} --version failed: {exc}") from None
    modules: dict[str, Path] = {}
    for name, (stem, _, required) in MODULES.items():
        found = next((folder / (stem + s) for s in SUFFIXES if (folder / (stem + s)).is_file()), None)
        if found is not None:
            modules[name] = found
        elif required:
            raise PeerUnavailable(f"{folder} has no {stem}{{{','.join(SUFFIXES)}}}")
    return Peer(folder, node, version, modules)


def _entry(peer: Peer, names: Sequence[str], out_dir: Path) -> Path:
    """A module re-exporting `names`' exports from the checkout: bundled if any is TypeScript."""
    lines = [
        f"export {{ {', '.join(MODULES[name][1])} }} from {json.dumps(str(peer.modules[name]))};"
        for name in names
        if name in peer.modules
    ]
    source = out_dir / f"entry-{'-'.join(names)}.mjs"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if not any(peer.modules[n].suffix in TYPESCRIPT for n in names if n in peer.modules):
        return source
    esbuild = peer.folder / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists():
        raise PeerUnavailable(f"{esbuild} is missing: run `npm ci` in {peer.folder}")
    bundle = source.with_suffix(".bundle.mjs")
    done = subprocess.run(
        [str(esbuild), str(source), "--bundle", "--platform=node", "--format=esm",
         f"--outfile={bundle}", "--log-level=error"],
        cwd=peer.folder, capture_output=True, text=True, check=False, timeout=600,
    )
    if done.returncode != 0:
        raise PeerUnavailable(f"esbuild could not bundle the peer: {done.stderr.strip()[:500]}")
    return bundle


def reducer_rates(
    peer: Peer, sequences: Mapping[str, list[dict[str, Any]]], *, processes: int = 3,
    rounds: int = 5,
) -> dict[str, dict[str, Any]]:
    """inputs/s of the peer's `reduceTurn` on each sequence: the median of `rounds` timed rounds
    (after one warm-up) in each of `processes` fresh node processes."""
    with tempfile.TemporaryDirectory(prefix="stockade-peer-") as tmp:
        out_dir = Path(tmp)
        entry = _entry(peer, ("turn_machine", "limits", "tools"), out_dir)
        inputs = out_dir / "inputs.json"
        inputs.write_text(json.dumps({"sequences": sequences}), encoding="utf-8")
        per_process: dict[str, list[float]] = {name: [] for name in sequences}
        last: dict[str, Any] = {}
        for _ in range(processes):
            done = subprocess.run(
                [peer.node, str(HERE / "peer" / "driver.mjs"), str(entry), str(inputs), str(rounds)],
                capture_output=True, text=True, check=False, timeout=600,
            )
            if done.returncode != 0:
                raise PeerUnavailable(f"the peer's reducer failed: {done.stderr.strip()[-500:]}")
            last = json.loads(done.stdout)
            for name in sequences:
                per_process[name].append(statistics.median(last[name]["seconds"]))
    return {
        name: {
            "inputs": last[name]["inputs"],
            "inputs_per_s": last[name]["inputs"] / statistics.median(per_process[name]),
            "phase": last[name]["phase"],
            "outcome": last[name]["outcome"],
        }
        for name in sequences
    }


def reader_process_seconds(peer: Peer, thf_file: Path, *, runs: int = 9) -> float:
    """Median wall time of a fresh node process reading `thf_file` with the peer's reader (the
    bundle is built first and not timed, as Stockade's install is not)."""
    with tempfile.TemporaryDirectory(prefix="stockade-peer-") as tmp:
        entry = _entry(peer, ("reader",), Path(tmp))
        command = [peer.node, str(HERE / "peer" / "reader.mjs"), str(entry), str(thf_file)]
        return process_seconds(command, runs=runs, what="the peer's reader")


def process_seconds(command: Sequence[str], *, runs: int, what: str,
                    env: Mapping[str, str] | None = None) -> float:
    """Median wall time of `command` as a fresh process (after one unmeasured run, so every
    measured run sees the same warm file cache); raises `PeerUnavailable` if it fails."""
    times = []
    for attempt in range(runs + 1):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120,
                              env=None if env is None else dict(env))
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise PeerUnavailable(f"{what} failed: {(done.stderr or done.stdout).strip()[-500:]}")
        if attempt:
            times.append(elapsed)
    return statistics.median(times)


@dataclass(frozen=True)
class RecordedFigure:
    key: str
    work: str
    value: float
    unit: str


@dataclass(frozen=True)
class RecordedFigures:
    recorded: str  # the date and conditions, as docs/performance.md states them
    figures: dict[str, RecordedFigure]


_SECTION = "## Peer figures (recorded)"


def recorded_figures(doc: Path = PERFORMANCE_DOC) -> RecordedFigures:
    """The peer figures recorded in docs/performance.md (section `Peer figures (recorded)`):
    its `Recorded:` line and the rows of its table (`| key | work | value | unit |`)."""
    text = doc.read_text(encoding="utf-8")
    start = text.find(_SECTION)
    if start < 0:
        raise ValueError(f"{doc} has no '{_SECTION}' section")
    section = text[start + len(_SECTION):]
    end = section.find("\n## ")
    section = section if end < 0 else section[:end]
    recorded = re.search(r"^Recorded: (.+)$", section, re.MULTILINE)
    if recorded is None:
        raise ValueError(f"the '{_SECTION}' section of {doc} has no 'Recorded:' line")
    figures = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"[a-z0-9_]+", cells[0]) and cells[0] != "key":
            key, work, value, unit = cells
            figures[key] = RecordedFigure(key, work.replace("`", ""), float(value.replace(",", "")), unit)
    if not figures:
        raise ValueError(f"the '{_SECTION}' section of {doc} has no figures")
    return RecordedFigures(recorded.group(1).strip(), figures)
