"""Canonical JSON (sorted keys, no whitespace, UTF-8) and the `sha256:` digest over it."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any


def _normalize(value: Any) -> Any:
    # Integral floats print as integers so that 1 and 1.0 digest the same, as in JSON.
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("canonical JSON cannot hold NaN or infinity")
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, dict):
        return {str(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    raise TypeError(f"canonical JSON cannot hold {type(value).__name__}")


def canonical_json(value: Any) -> str:
    """Keys sorted by code point, no whitespace, non-ASCII kept raw, integers without `.0`."""
    return json.dumps(
        _normalize(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def digest(value: Any) -> str:
    """`sha256:` + hex of the canonical JSON bytes of `value`."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
