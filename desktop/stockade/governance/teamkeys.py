"""The team's snapshot key: one key per team, handed out by its administrator, never generated here.

Parked runs of a team are sealed under the team's key so that any member holding it (imported
into their keyring with `stockade keys import-team-key TEAM`) can show and resume them on
their own machine. Unlike the single-user key, it is never created on first park: a key made
on one machine would seal runs nobody else could open.
"""

from __future__ import annotations

import base64
import binascii
import os
import re

from stockade.governance.sealing import (
    SNAPSHOT_KEY_ENV,
    KeyMode,
    SealError,
    SecretStore,
    SnapshotKeyMissing,
    SnapshotKeys,
    SnapshotKeyUnreadable,
)

TEAM_KEY_PREFIX = "team-key-"
TEAM_KEY_BYTES = 32
_TEAM = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


def team_key_name(team: str) -> str:
    """The keyring name of a team's snapshot key."""
    if not _TEAM.match(team):
        raise ValueError(f"{team!r} is not a team id")
    return TEAM_KEY_PREFIX + team


def decode_team_key(text: str) -> bytes:
    """A team key from its base64 text; `SealError` for anything but 32 bytes."""
    try:
        key = base64.b64decode(text.strip().encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise SealError("the team key is not valid base64") from None
    if len(key) != TEAM_KEY_BYTES:
        raise SealError(f"the team key must decode to {TEAM_KEY_BYTES} bytes, not {len(key)}")
    return key


def new_team_key() -> str:
    """A fresh random team key as base64 (for the administrator to hand out)."""
    return base64.b64encode(os.urandom(TEAM_KEY_BYTES)).decode("ascii")


class TeamSnapshotKeys(SnapshotKeys):
    """`SnapshotKeys` for a team store: the team's key from the keyring (or the operator's
    `STOCKADE_SNAPSHOT_KEY` on a headless machine), never one made up locally."""

    def __init__(self, secrets: SecretStore, team: str) -> None:
        super().__init__(secrets)
        self.team = team
        self._name = team_key_name(team)

    def mode(self) -> KeyMode:
        """Never a passphrase: a run sealed under one member's passphrase is no team's run."""
        return KeyMode.ENVIRONMENT if os.environ.get(SNAPSHOT_KEY_ENV) else KeyMode.KEYRING

    def existing(self) -> bytes:
        from_env = os.environ.get(SNAPSHOT_KEY_ENV)
        if from_env:
            return decode_team_key(from_env)
        try:
            text = self._secrets.get_secret(self._name)
        except Exception as exc:  # keyring backends raise their own types
            raise SnapshotKeyUnreadable(
                f"the keyring could not be read for team {self.team}'s key "
                f"({type(exc).__name__})") from None
        if not text:
            raise SnapshotKeyMissing(
                f"this keyring does not hold team {self.team}'s key, so the team's parked runs "
                f"cannot be sealed or opened here; import it with `stockade keys "
                f"import-team-key {self.team}` (your team's administrator hands it out)")
        return decode_team_key(text)

    def for_sealing(self) -> bytes:
        return self.existing()
