"""A property of the whole application layer: whatever mix of parking, deciding, resuming and
tampering with the database happens, no call ever runs without a verified decision event for
that exact (run, call, input digest, iteration), and no approval runs a call twice.

Each example is a fresh data folder and a sequence of operations through the real
`AssistantService` (scripted providers, a real SQLite file, the keyed chain): start a turn that
parks on a change; approve or deny a call as a user would; forge a decision row (no MAC, or a
MAC copied from another row); edit a pending call's input digest; put an older sealed snapshot
back after a resume (rollback); resume. Refusals are expected; the invariant is checked on the
audit trail afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.assistant.config import TurnConfig
from stockade.assistant.errors import REFUSALS
from stockade.assistant.policy import ApprovePolicy
from stockade.assistant.service import AssistantService
from stockade.governance.services import open_governance
from stockade.governance.worker import GovernanceWorker
from stockade.loop.history import DocumentSession
from stockade.thf.reader import read_file
from tests.conftest import THF_FIXTURES, examples
from tests.unit.assistant.conftest import config
from tests.unit.assistant.conftest import settings as app_settings
from tests.unit.governance.conftest import DictSecrets
from tests.unit.governance.scripted import ScriptedProvider, add_threat, text_reply, tool_reply

# Weighted towards the user's own steps, so many examples get as far as running something.
OPS = st.lists(st.tuples(
    st.sampled_from(["start", "start", "approve", "deny", "resume", "decide_all_and_resume",
                     "decide_all_and_resume", "forge", "forge_copied_mac", "edit_pending",
                     "rollback", "rollback"]),
    st.integers(0, 3), st.booleans()), min_size=1, max_size=16)


@dataclass
class World:
    """One example's data folder, service and what the attacker kept of earlier states."""

    home: Path
    service: AssistantService
    model_file: Path
    replies: list[list[Any]] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    kept: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    calls: int = 0

    def provider(self, _config: TurnConfig, _session: DocumentSession) -> ScriptedProvider:
        return ScriptedProvider(*self.replies)

    def db(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.home / "stockade.db")
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn

    def run_id(self, pick: int) -> str | None:
        return self.runs[pick % len(self.runs)] if self.runs else None

    def keep(self, run_id: str) -> None:
        """What an attacker copies of a parked run: its row and its pending calls."""
        conn = self.db()
        try:
            row = conn.execute("SELECT snapshot, seal_version, document_digest FROM run "
                               "WHERE run_id = ?", (run_id,)).fetchone()
            pending = conn.execute("SELECT call_id, position, tool, input_digest, destructive, "
                                   "iteration FROM pending_call WHERE run_id = ?",
                                   (run_id,)).fetchall()
        finally:
            conn.close()
        if row is not None and row[0] is not None:
            self.kept.setdefault(run_id, []).append((row, pending))


def _turn_reply(world: World, resuming: bool, again: bool) -> list[list[Any]]:
    world.calls += 1
    if resuming and not again:
        return [text_reply("done")]
    return [tool_reply((f"c{world.calls}", "add_threat", add_threat(f"Threat {world.calls}"))),
            text_reply("done")]


def _park_if_waiting(world: World, turn: Any) -> None:
    if turn.waiting:
        asyncio.run(world.service.park(turn))
        world.keep(turn.run_id)


def _pending(world: World, run_id: str) -> list[str]:
    conn = world.db()
    try:
        return [r[0] for r in conn.execute(
            "SELECT call_id FROM pending_call WHERE run_id = ? ORDER BY position", (run_id,))]
    finally:
        conn.close()


def _service_step(world: World, op: str, run_id: str | None, call_id: str,
                  flag: bool) -> None:
    """What a user does through the service; a refusal is an outcome, not a failure."""
    try:
        if op == "start":
            world.replies = _turn_reply(world, False, True)
            turn = asyncio.run(world.service.start_turn(
                config(ApprovePolicy.READ), DocumentSession(read_file(world.model_file)),
                document_path=str(world.model_file), prompt="go"))
            world.runs.append(turn.run_id)
            _park_if_waiting(world, turn)
        elif op in ("approve", "deny") and run_id is not None:
            asyncio.run(world.service.decide(run_id, call_id, approve=op == "approve",
                                             actor="user:ana", reason=None))
        elif op == "decide_all_and_resume" and run_id is not None:
            for pending in _pending(world, run_id):  # the user decides every call (flag: how)
                with contextlib.suppress(*REFUSALS):
                    asyncio.run(world.service.decide(run_id, pending, approve=flag,
                                                     actor="user:ana", reason=None))
            _service_step(world, "resume", run_id, call_id, not flag)
        elif op == "resume" and run_id is not None:
            world.replies = _turn_reply(world, True, flag)
            turn = asyncio.run(world.service.resume(run_id, settings=app_settings()))
            _park_if_waiting(world, turn)
    except REFUSALS:
        pass


def _attack(world: World, op: str, run_id: str, call_id: str, pick: int) -> None:
    """What someone who can write the database file does (errors here are test bugs)."""
    conn = world.db()
    try:
        if op == "forge":
            conn.execute("INSERT OR REPLACE INTO decision(run_id, call_id, decision, actor, "
                         "decided_ms, input_digest, iteration) VALUES (?, ?, 'approved', "
                         "'mallory', 0, (SELECT input_digest FROM pending_call WHERE run_id = ? "
                         "AND call_id = ?), 1)", (run_id, call_id, run_id, call_id))
        elif op == "forge_copied_mac":
            donor = conn.execute("SELECT event_seq, mac FROM decision WHERE mac IS NOT NULL "
                                 "AND decision = 'approved' LIMIT 1").fetchone()
            if donor is not None:
                conn.execute("INSERT OR REPLACE INTO decision(run_id, call_id, decision, actor, "
                             "decided_ms, input_digest, iteration, event_seq, mac) VALUES "
                             "(?, ?, 'approved', 'user:ana', 0, (SELECT input_digest FROM "
                             "pending_call WHERE run_id = ? AND call_id = ?), 1, ?, ?)",
                             (run_id, call_id, run_id, call_id, donor[0], donor[1]))
        elif op == "edit_pending":
            conn.execute("UPDATE pending_call SET input_digest = ? WHERE run_id = ? AND "
                         "call_id = ?", ("sha256:" + "e" * 64, run_id, call_id))
        elif op == "rollback" and world.kept.get(run_id):
            (snapshot, version, digest), rows = world.kept[run_id][pick % len(world.kept[run_id])]
            conn.execute("UPDATE run SET status = 'parked', claimed = 0, snapshot = ?, "
                         "seal_version = ?, document_digest = ?, outcome = NULL, reason = NULL, "
                         "owner_pid = NULL, owner_host = NULL WHERE run_id = ?",
                         (snapshot, version, digest, run_id))
            conn.execute("DELETE FROM pending_call WHERE run_id = ?", (run_id,))
            conn.executemany("INSERT INTO pending_call(run_id, call_id, position, tool, "
                             "input_digest, destructive, iteration) VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(run_id, *r) for r in rows])
        conn.commit()
    finally:
        conn.close()


def _apply(world: World, op: str, pick: int, flag: bool) -> None:
    run_id = world.run_id(pick)
    pending = _pending(world, run_id) if run_id is not None else []
    call_id = pending[pick % len(pending)] if pending else f"c{pick}"
    if op in ("start", "approve", "deny", "resume", "decide_all_and_resume"):
        _service_step(world, op, run_id, call_id, flag)
    elif run_id is not None:
        _attack(world, op, run_id, call_id, pick)


def _check(world: World) -> None:
    gov = open_governance(secrets=SECRETS[world.home], recover=False)
    try:
        assert gov.trajectory.verify_chain().ok
        events = [e for run_id in world.runs for e in gov.trajectory.events(run_id)]
    finally:
        gov.close()
    started = Counter()
    for event in events:
        if event.kind != "tool.started":
            continue
        key = (event.run_id, event.payload["call_id"])
        started[key] += 1
        approvals = [a for a in events if a.kind == "tool.approved" and a.run_id == event.run_id
                     and a.seq < event.seq
                     and a.payload.get("call_id") == event.payload["call_id"]
                     and a.payload.get("input_digest") == event.payload["input_digest"]
                     and a.payload.get("iteration") == event.payload["iteration"]]
        assert approvals, f"{key} ran without a decision event for its digest and iteration"
        assert all(a.payload.get("actor") in ("user:ana", "policy") for a in approvals)
    assert all(count == 1 for count in started.values()), started


SECRETS: dict[Path, DictSecrets] = {}


@settings(max_examples=examples(50), deadline=None)
@given(OPS)
def test_no_call_runs_without_a_verified_decision_for_exactly_it(ops: list[tuple[str, int, bool]]
                                                               ) -> None:
    home = Path(tempfile.mkdtemp(prefix="stockade-prop-"))
    saved = os.environ.get("STOCKADE_HOME")
    os.environ["STOCKADE_HOME"] = str(home)
    secrets = SECRETS[home] = DictSecrets()
    model_file = home / "model.thf"
    shutil.copy(THF_FIXTURES / "v1.0-minimal.thf", model_file)
    worker = GovernanceWorker(lambda: open_governance(secrets=secrets, recover=False))
    world = World(home, AssistantService(worker), model_file)
    world.service.provider_factory = world.provider
    try:
        for op, pick, flag in ops:
            _apply(world, op, pick, flag)
        world.service.close()
        _check(world)
    finally:
        world.service.close()
        SECRETS.pop(home, None)
        if saved is None:
            os.environ.pop("STOCKADE_HOME", None)
        else:
            os.environ["STOCKADE_HOME"] = saved
        shutil.rmtree(home, ignore_errors=True)
