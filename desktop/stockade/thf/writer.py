"""Canonical `.thf` writing: a small YAML emitter with the reference's byte format, and atomic save.

The body is byte-identical to what the reference desktop writer (serde_yaml 0.9 over libyaml)
produces for the same model: 2-space indentation, sequences not indented under their key,
strings plain unless they would read back as another type or contain YAML indicators (then
single-quoted, or double-quoted with escapes when single quotes cannot carry them), multi-line
text as literal block scalars, floats always with a fractional part, `[]` for empty lists,
keys in model field order, unset optional keys omitted.

Unlike the reference, unknown fields are kept: they follow the known keys at every level, in
the order they were read. Where libyaml's output would not read back to the same string
(a carriage return inside text, a plain scalar such as `1_000` that a YAML 1.2 reader takes
for a number), this emitter picks a quoting that does.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import math
import os
import re
import stat
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

import yaml_rs

from stockade.thf.collector import collector_paused
from stockade.thf.errors import SaveError
from stockade.thf.model import ThfModel, ThreatModel

# No build version here: canonical bytes must not change when Stockade is upgraded, or every
# `stockade fmt --check` in a team's CI would fail after an upgrade.
HEADER = (
    "# Stockade threat model, format 1.0\n"
    "# Saved in canonical form: comments are not kept, unknown fields are.\n"
)

# Root sections and entity lists the reference skips when empty (so that documents written
# before these fields existed re-serialise byte-identically). Every other list is always written.
_SKIP_WHEN_EMPTY: dict[str, frozenset[str]] = {
    "ThreatModel": frozenset({"layers", "groups", "relationships"}),
    "Element": frozenset({"technologies", "tags"}),
}


class UnwritableTextError(ValueError):
    """The model holds text no YAML file can carry (a lone surrogate code point)."""


def to_yaml(model: ThreatModel) -> str:
    """The whole file: header comment, then the canonical body."""
    out: list[str] = [HEADER]
    with collector_paused():
        _emit_record(model, 0, out)
    return "".join(out)


def to_yaml_body(model: ThreatModel) -> str:
    """The canonical body only (what byte-identity comparisons use)."""
    out: list[str] = []
    with collector_paused():
        _emit_record(model, 0, out)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Records (typed models)


# Per (record class, indent): (attribute, "<pad>key:", "key:", is_float_field, skip_when_empty).
_PLANS: dict[tuple[type, int], tuple[tuple[str, str, str, bool, bool], ...]] = {}


def _plan_for(cls: type[ThfModel], indent: int) -> tuple[tuple[str, str, str, bool, bool], ...]:
    plan = _PLANS.get((cls, indent))
    if plan is None:
        skip = _SKIP_WHEN_EMPTY.get(cls.__name__, frozenset())
        pad = " " * indent
        plan = tuple(
            (
                name,
                pad + _key_text(info.alias or name),
                _key_text(info.alias or name),
                _is_float_field(info.annotation),
                name in skip,
            )
            for name, info in cls.model_fields.items()
        )
        _PLANS[(cls, indent)] = plan
    return plan


def _is_float_field(annotation: Any) -> bool:
    if annotation is float:
        return True
    if get_origin(annotation) in (Union, UnionType):
        return float in get_args(annotation)
    return False


def _emit_record(record: ThfModel, indent: int, out: list[str], first_inline: bool = False) -> None:
    """Write a record's fields as block mapping lines at `indent`.

    With `first_inline`, the first line's indentation is left to the caller (after `- `).
    The common value types are handled inline: this loop runs for every field of every
    entity, so a function call per field would dominate the time to save a large model.
    """
    fields = record.__dict__
    first = first_inline
    plain = _SURELY_PLAIN.fullmatch
    reserved = _RESERVED_WORDS
    for attr, prefix, bare_key, number, skip_empty in _plan_for(type(record), indent):
        value = fields.get(attr)
        if value is None:
            continue
        kind = value.__class__
        if skip_empty and kind is list and not value:
            continue
        head = bare_key if first else prefix
        first = False
        if kind is str or isinstance(value, str):
            if plain(value) and value not in reserved:
                out.append(f"{head} {value}\n")
            else:
                out.append(f"{head} {_string_text(value, indent)}\n")
        elif kind is float or (number and kind is int):
            text = repr(float(value))
            if "e" in text or "n" in text:
                text = format_float(float(value))
            out.append(f"{head} {text}\n")
        elif kind is list and value and all(item.__class__ is str for item in value):
            out.append(head + "\n")
            pad = " " * indent
            for item in value:
                if plain(item) and item not in reserved:
                    out.append(f"{pad}- {item}\n")
                else:
                    out.append(f"{pad}- {_string_text(item, indent)}\n")
        else:
            out.append(head)
            _emit_value_after_key(value, indent, out)
    extra = record.__pydantic_extra__
    if extra:
        pad = " " * indent
        for key, value in extra.items():
            out.append(_key_text(key) if first else pad + _key_text(key))
            first = False
            _emit_value_after_key(value, indent, out)
    if first:
        # A record with nothing to write (cannot happen for valid models: ids are required).
        out.append("{}\n")


def _emit_value_after_key(value: Any, indent: int, out: list[str]) -> None:
    """Emit what follows `key:` for a mapping entry at `indent`."""
    if isinstance(value, str):
        out.append(" ")
        out.append(_scalar_text(value, indent))
        out.append("\n")
    elif isinstance(value, list):
        if not value:
            out.append(" []\n")
        else:
            out.append("\n")
            _emit_sequence(value, indent, out)
    elif isinstance(value, ThfModel):
        out.append("\n")
        _emit_record(value, indent + 2, out)
    elif isinstance(value, dict):
        if not value:
            out.append(" {}\n")
        else:
            out.append("\n")
            _emit_mapping(value, indent + 2, out)
    else:
        out.append(" ")
        out.append(_non_string_scalar(value))
        out.append("\n")


def _emit_sequence(items: list[Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    if items and isinstance(items[0], ThfModel):
        dash = pad + "- "
        inner = indent + 2
        for item in items:
            if isinstance(item, ThfModel):
                out.append(dash)
                _emit_record(item, inner, out, first_inline=True)
            else:
                out.append(pad + "-")
                _emit_item(item, indent, out)
        return
    for item in items:
        out.append(pad + "-")
        _emit_item(item, indent, out)


def _emit_item(item: Any, indent: int, out: list[str]) -> None:
    """Emit a sequence item after its `-` at column `indent`."""
    if isinstance(item, str):
        out.append(" ")
        out.append(_scalar_text(item, indent))
        out.append("\n")
    elif isinstance(item, ThfModel):
        out.append(" ")
        _emit_record(item, indent + 2, out, first_inline=True)
    elif isinstance(item, dict):
        if not item:
            out.append(" {}\n")
        else:
            out.append(" ")
            _emit_mapping(item, indent + 2, out, first_inline=True)
    elif isinstance(item, list):
        if not item:
            out.append(" []\n")
        else:
            out.append(" -")
            _emit_item(item[0], indent + 2, out)
            _emit_sequence(item[1:], indent + 2, out)
    else:
        out.append(" ")
        out.append(_non_string_scalar(item))
        out.append("\n")


def _emit_mapping(
    mapping: dict[Any, Any], indent: int, out: list[str], first_inline: bool = False
) -> None:
    pad = " " * indent
    first = first_inline
    for key, value in mapping.items():
        text = _key_text(key) if isinstance(key, str) else _non_string_key(key)
        out.append(text if first else pad + text)
        first = False
        _emit_value_after_key(value, indent, out)


# ---------------------------------------------------------------------------------------------
# Scalars


def _non_string_scalar(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    raise TypeError(f"cannot write a value of type {type(value).__name__} to a threat model")


def _non_string_key(key: Any) -> str:
    if isinstance(key, (bool, int, float)) or key is None:
        return _non_string_scalar(key) + ":"
    raise TypeError(f"cannot write a key of type {type(key).__name__} to a threat model")


def format_float(value: float) -> str:
    """A float as the reference writes it: shortest round-trip digits, always a fraction or
    exponent (`100.0`, `0.85`, `1e20`, `1.5e-7`), `.inf`, `-.inf`, `.nan`."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" not in text and "n" not in text:
        # Python's fixed notation (1e-4 <= |x| < 1e16) already matches; the rest differ.
        return text
    sign = "-" if text.startswith("-") else ""
    mantissa, _, exponent_text = text.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + int(exponent_text or "0") - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0") or "0"
    length = len(digits)
    if point - length >= 0 and point <= 16:
        body = digits + "0" * (point - length) + ".0"
    elif 0 < point <= 16:
        body = digits[:point] + "." + digits[point:]
    elif -5 < point <= 0:
        body = "0." + "0" * (-point) + digits
    elif length == 1:
        body = f"{digits}e{point - 1}"
    else:
        body = f"{digits[0]}.{digits[1:]}e{point - 1}"
    return sign + body


# Strings that are certainly written plain: start with a letter, then ordinary characters with
# single spaces between words. Everything else goes through the full analysis below.
_SURELY_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_./()<>@+=,-]*(?: [A-Za-z0-9_./()<>@+=,-]+)*")
_RESERVED_WORDS = frozenset(
    {"true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL", "~", ""}
)


def _key_text(key: str) -> str:
    """A mapping key followed by `:`."""
    if _SURELY_PLAIN.fullmatch(key) and key not in _RESERVED_WORDS:
        return key + ":"
    return _complex_key_text(key)


@lru_cache(maxsize=4096)
def _complex_key_text(key: str) -> str:
    style = _string_style(key, simple_key=True)
    if style == "plain":
        text = key
    elif style == "single":
        text = _single_quoted(key)
    else:
        text = _double_quoted(key)
    # A YAML implicit key is limited to 1024 characters; longer keys use the explicit form.
    if len(text) > 1024:
        return "? " + _double_quoted(key) + "\n:"
    return text + ":"


def _scalar_text(value: str, indent: int) -> str:
    """A string value after `key: ` or `- ` for a node whose parent sits at `indent`."""
    if _SURELY_PLAIN.fullmatch(value) and value not in _RESERVED_WORDS:
        return value
    return _string_text(value, indent)


@lru_cache(maxsize=65536)
def _string_text(value: str, indent: int) -> str:
    style = _string_style(value, simple_key=False)
    if style == "plain":
        return value
    if style == "single":
        return _single_quoted(value)
    if style == "literal":
        return _literal(value, indent + 2)
    return _double_quoted(value)


def _string_style(value: str, *, simple_key: bool) -> str:
    """Choose plain / single / double / literal the way serde_yaml and libyaml would."""
    if "\n" in value:
        multiline_ok = not simple_key and _block_allowed(value)
        return "literal" if multiline_ok else "double"
    if value in _RESERVED_WORDS or _looks_like_number(value):
        # serde_yaml forces single quotes on anything that would read back as another type.
        return "single" if _single_allowed(value) else "double"
    plain_ok, single_ok = _plain_and_single_allowed(value)
    if plain_ok and not _read_as_non_string(value):
        return "plain"
    return "single" if single_ok else "double"


_BREAKS = frozenset("\r\n\x85\u2028\u2029")
_FIRST_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")


def _printable(ch: str) -> bool:
    # libyaml's notion: LF, ASCII printable, and the BMP minus surrogates, BOM and U+FFFE/F.
    # Characters beyond U+FFFF count as non-printable, so they are written as escapes.
    code = ord(ch)
    return (
        code == 0x0A
        or 0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or (0xE000 <= code <= 0xFFFD and code != 0xFEFF)
    )


def _plain_and_single_allowed(value: str) -> tuple[bool, bool]:
    """libyaml's scalar analysis for a one-line string in block context."""
    if value.startswith(("---", "...")):
        return False, _single_allowed(value)
    indicators = False
    special = False
    breaks = False
    length = len(value)
    for index, ch in enumerate(value):
        followed_by_space = index + 1 >= length or value[index + 1] in " \t\r\n\x85\u2028\u2029"
        if index == 0:
            if ch in _FIRST_INDICATORS or (ch in "?:-" and followed_by_space):
                indicators = True
        else:
            if (ch == ":" and followed_by_space) or (
                ch == "#" and value[index - 1] in " \t\r\n\x85\u2028\u2029"
            ):
                indicators = True
        if ch in _BREAKS:
            breaks = True
        elif not _printable(ch):
            special = True
    if special or breaks:
        # libyaml would single-quote a string with a bare CR; it reads back as a space, so
        # such text is double-quoted with escapes instead.
        return False, False
    leading_or_trailing_space = value[0] == " " or value[-1] == " "
    plain = not (indicators or leading_or_trailing_space)
    return plain, True


def _single_allowed(value: str) -> bool:
    return all(_printable(ch) and ch not in _BREAKS for ch in value)


def _block_allowed(value: str) -> bool:
    """Can this multi-line text be a literal block scalar and read back identically?"""
    if value.endswith(" "):
        return False
    previous = ""
    for ch in value:
        if ch == "\n":
            if previous == " ":
                return False  # trailing space on a line
        elif ch in _BREAKS or not _printable(ch):
            return False
        previous = ch
    return True


_INT_FORMS = (
    re.compile(r"[-+]?[0-9]+"),
    re.compile(r"[-+]?0x[0-9a-fA-F]+"),
    re.compile(r"[-+]?0o[0-7]+"),
    re.compile(r"[-+]?0b[01]+"),
)
_FLOAT_SPECIAL = frozenset(
    {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"}
    | {".nan", ".NaN", ".NAN"}
)
_RUST_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _looks_like_number(value: str) -> bool:
    """serde_yaml's inference: would this string parse as an integer or a finite float?"""
    if not value or value[0] not in "0123456789+-.":
        return False
    if value in _FLOAT_SPECIAL:
        return True
    if any(form.fullmatch(value) for form in _INT_FORMS):
        return True
    return bool(_RUST_FLOAT.fullmatch(value)) and math.isfinite(float(value))


@lru_cache(maxsize=4096)
def _read_as_non_string(value: str) -> bool:
    """Would the YAML 1.2 reader take this plain text for something other than this string?

    Only text that starts like a number can; serde_yaml writes some of these plain
    (for example `1_000`), which yaml-rs would read as an integer.
    """
    if not value or value[0] not in "0123456789+-.":
        return False
    try:
        parsed = yaml_rs.loads("v: " + value, parse_datetime=False)
    except ValueError:
        return True
    return not (isinstance(parsed, dict) and parsed.get("v") == value)


def _single_quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


_ESCAPES = {
    "\x00": "\\0",
    "\x07": "\\a",
    "\x08": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\x0b": "\\v",
    "\x0c": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    '"': '\\"',
    "\\": "\\\\",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


def _double_quoted(value: str) -> str:
    parts = ['"']
    for ch in value:
        if ch in _ESCAPES:
            parts.append(_ESCAPES[ch])
        elif _printable(ch) and ch != "\ufeff":
            parts.append(ch)
        else:
            code = ord(ch)
            if 0xD800 <= code <= 0xDFFF:
                # Only text built in code can hold a lone surrogate; no reader accepts one.
                raise UnwritableTextError("text contains a lone surrogate code point")
            if code <= 0xFF:
                parts.append(f"\\x{code:02X}")
            elif code <= 0xFFFF:
                parts.append(f"\\u{code:04X}")
            else:
                parts.append(f"\\U{code:08X}")
    parts.append('"')
    return "".join(parts)


def _literal(value: str, content_indent: int) -> str:
    """A literal block scalar: header (with hints) and its lines, without the final newline."""
    header = "|"
    if value[0] in " \n":
        header += "2"
    if not value.endswith("\n"):
        header += "-"
    elif value == "\n" or value.endswith("\n\n"):
        header += "+"
    pad = " " * content_indent
    body = value[:-1] if value.endswith("\n") else value
    lines = [pad + line if line else "" for line in body.split("\n")]
    return header + "\n" + "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Atomic save


def save(model: ThreatModel, path: str | os.PathLike[str]) -> None:
    """Write `model` to `path` atomically: the old file stays intact until the new one is
    complete and on disk. Raise `SaveError` with a plain message if anything fails."""
    try:
        text = to_yaml(model)
    except UnwritableTextError:
        raise SaveError(
            f"Could not save {Path(path).name}: the model contains text that is not valid "
            "Unicode. The previous version of the file is unchanged.",
            reason="invalid_text",
        ) from None
    save_text(text, path)


def save_text(text: str, path: str | os.PathLike[str]) -> None:
    """Atomically replace `path` with `text` (UTF-8); see `save`."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise SaveError(
            f"Could not save {target.name}: the model contains text that is not valid "
            "Unicode. The previous version of the file is unchanged.",
            reason="invalid_text",
        ) from None
    mode = replacement_mode(target)
    descriptor = -1
    temp_name: str | None = None
    try:
        descriptor, temp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=folder
        )
        _write_all(descriptor, data)
        os.fchmod(descriptor, mode)
        os.fsync(descriptor)
        os.close(descriptor)
        descriptor = -1
        os.replace(temp_name, target)
        temp_name = None
        _fsync_folder(folder)
        _remove_stale_temp_files(folder, target.name)
    except OSError as exc:
        raise SaveError(_save_message(exc, target.name), reason=_reason(exc)) from None
    finally:
        if descriptor != -1:
            os.close(descriptor)
        if temp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)


STALE_TEMP_SECONDS = 600.0
"""A temp file of ours this old was left by a save that was killed; a live save takes seconds."""


def _remove_stale_temp_files(folder: Path, name: str) -> None:
    """Best-effort clean-up of temp files that an interrupted earlier save of `name` left."""
    now = time.time()
    with contextlib.suppress(OSError):
        for leftover in folder.glob(f".{glob.escape(name)}.*.tmp"):
            with contextlib.suppress(OSError):
                if now - leftover.lstat().st_mtime > STALE_TEMP_SECONDS and leftover.is_file():
                    leftover.unlink()


def replacement_mode(target: Path) -> int:
    """Permissions for a file written over `target`: its own, or this user's default if new."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        # A new file gets the usual permissions for this user (mkstemp's own are 0600).
        return 0o666 & ~_current_umask()


def _current_umask() -> int:
    # Reading the umask with os.umask() means setting it for a moment, which races with
    # other threads creating files; Linux reports it read-only instead.
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]


def _fsync_folder(folder: Path) -> None:
    # Makes the rename itself durable; not every platform can open a folder.
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def _reason(exc: OSError) -> str:
    return {
        errno.ENOSPC: "disk_full",
        errno.EDQUOT: "disk_full",
        errno.EACCES: "permission",
        errno.EPERM: "permission",
        errno.EROFS: "read_only",
        errno.ENOENT: "missing_folder",
    }.get(exc.errno or 0, "io")


def _save_message(exc: OSError, name: str) -> str:
    reason = _reason(exc)
    if reason == "disk_full":
        detail = "the disk is full"
    elif reason in ("permission", "read_only"):
        detail = "the folder is read-only or you do not have permission to write there"
    elif reason == "missing_folder":
        detail = "its folder does not exist"
    else:
        detail = "the system reported an input/output error"
    return f"Could not save {name}: {detail}. The previous version of the file is unchanged."
