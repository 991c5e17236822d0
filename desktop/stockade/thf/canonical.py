"""Canonical JSON (sorted keys, no whitespace, UTF-8) and the `sha256:` digest over it."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

_PLAIN = frozenset({str, int, bool, type(None)})  # exact types that pass through unchanged


def _normalize(value: Any) -> Any:
    # Integral floats print as integers so that 1 and 1.0 digest the same, as in JSON.
    # Plain dicts, lists and scalars (nearly everything digested) are handled inline without a
    # call per leaf; anything else (floats, subclasses, bad types) goes through `_normalize_other`.
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:
        return {
            (k if type(k) is str else str(k)): (v if type(v) in _PLAIN else _normalize(v))
            for k, v in value.items()
        }
    if kind is list or kind is tuple:
        return [v if type(v) in _PLAIN else _normalize(v) for v in value]
    return _normalize_other(value)


def _normalize_other(value: Any) -> Any:
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


# Built once: `json.dumps` with options builds a new encoder on every call.
_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
# And `JSONEncoder.encode` builds its C encoder on every call (about half the cost of encoding
# a tool input): this is that encoder, made once with the same options. Its cycle check is off
# because a normalized value is a fresh tree (`_normalize` rebuilds every container and fails
# on a cycle itself).
_make_c_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE = None if _make_c_encoder is None else _make_c_encoder(
    None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", True, False, False
)


def canonical_json(value: Any) -> str:
    """Keys sorted by code point, no whitespace, non-ASCII kept raw, integers without `.0`."""
    if _C_ENCODE is None:
        return _ENCODER.encode(_normalize(value))
    return "".join(_C_ENCODE(_normalize(value), 0))


def digest(value: Any) -> str:
    """`sha256:` + hex of the canonical JSON bytes of `value`."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def json_ready_digest(value: Any) -> str:
    """`digest(value)` for a value made only of exact JSON types with string keys (dict, list,
    str, int, float, bool, None: what pydantic's JSON-mode dump makes), without rebuilding it.

    Such a value differs from its normalized form only in integral floats below 2**53, and each
    of those prints ending in `.0`; text without `.0` anywhere (nearly every tool input) is the
    canonical text already. Anything else goes through `digest` (same bytes, same errors).
    """
    if _C_ENCODE is not None:
        try:
            text = "".join(_C_ENCODE(value, 0))
        except (TypeError, ValueError, RecursionError):
            return digest(value)  # raises as `digest` does
        if ".0" not in text:
            return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    return digest(value)


def canonical_bytes_digest(data: bytes) -> str:
    """`digest(value)` given the UTF-8 bytes of `canonical_json(value)` already."""
    return "sha256:" + hashlib.sha256(data).hexdigest()
