"""Sealed change summaries: what each committed change did, readable in the audit viewer and
exports, but never stored in the clear.

The runner describes every commit at entity level (`thf.diff.describe`: "Added threat 't-4'
(Card data replay)"). Those lines hold document text, so they are sealed with AES-256-GCM under
a key derived from the snapshot key (its own HKDF label), bound to the run, the call and the
document digest the commit produced, and stored beside the `document.committed` event, whose
payload carries only their count and the digest of the sealed bytes. Without a snapshot key
(a session-only keyring, passphrase mode) the count alone is kept.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from stockade.governance.sealing import SealError, derive_key, seal, unseal
from stockade.governance.trajectory import TrajectoryEvent

CHANGES_KEY_LABEL = b"stockade change summary v1"
MAX_CHANGE_LINES = 100
MAX_LINE_LENGTH = 300


def _binding(run_id: str, call_id: str, document_after: str) -> str:
    return f"{run_id}|changes|{call_id}|{document_after}"


def seal_changes(master: bytes, run_id: str, call_id: str, document_after: str,
                 lines: list[str]) -> bytes:
    """The sealed summary of one commit (at most `MAX_CHANGE_LINES` lines, each capped)."""
    kept = [line[:MAX_LINE_LENGTH] for line in lines[:MAX_CHANGE_LINES]]
    if len(lines) > MAX_CHANGE_LINES:
        kept.append(f"… and {len(lines) - MAX_CHANGE_LINES} more changes")
    body = json.dumps(kept, ensure_ascii=False).encode("utf-8")
    return seal(body, derive_key(master, CHANGES_KEY_LABEL),
                _binding(run_id, call_id, document_after))


def sealed_digest(sealed: bytes) -> str:
    return "sha256:" + hashlib.sha256(sealed).hexdigest()


def open_changes(master: bytes, event: TrajectoryEvent, sealed: bytes) -> list[str] | None:
    """The summary lines of a `document.committed` event, or None when they do not open (another
    key, or sealed bytes that are not the ones its payload names)."""
    payload: dict[str, Any] = event.payload
    if payload.get("changes_digest") != sealed_digest(sealed):
        return None
    try:
        body = unseal(sealed, derive_key(master, CHANGES_KEY_LABEL), _binding(
            event.run_id, str(payload.get("call_id")), str(payload.get("document_after"))))
        lines = json.loads(body.decode("utf-8"))
    except (SealError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        return None
    return lines
