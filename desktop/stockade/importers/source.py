"""Reading a foreign file safely: bounded size, UTF-8 text, and parsers that refuse attacks.

- size: at most `MAX_SOURCE_BYTES` (the `.thf` bound), checked before anything is parsed;
- JSON: the standard library parser; nesting deeper than the interpreter allows is refused
  with a plain message instead of a traceback;
- XML: defusedxml, with document type declarations refused outright, so neither external
  entities (nothing is read from the filesystem or network) nor entity expansion can happen;
- YAML: yaml-rs with the same alias-expansion bounds as `.thf` files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element as XmlElement
from xml.etree.ElementTree import ParseError

import yaml_rs
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as defused_fromstring

from stockade.importers.result import FORMAT_NAMES, ImportFailure, SourceFormat
from stockade.thf.reader import MAX_FILE_BYTES

MAX_SOURCE_BYTES = MAX_FILE_BYTES
"""Largest source file an import reads, the same bound as a `.thf` file."""

_ALIAS_LIMITS = yaml_rs.AliasLimits(
    max_total_replayed_events=200_000,
    max_replay_stack_depth=16,
    max_alias_expansions_per_anchor=10_000,
)


def read_source(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes, refusing a file larger than `MAX_SOURCE_BYTES` before reading it."""
    target = Path(path)
    try:
        with target.open("rb") as handle:
            if os.fstat(handle.fileno()).st_size > MAX_SOURCE_BYTES:
                raise too_large()
            raw = handle.read(MAX_SOURCE_BYTES + 1)
    except ImportFailure:
        raise
    except FileNotFoundError:
        raise ImportFailure("The source file does not exist.") from None
    except IsADirectoryError:
        raise ImportFailure("The source is a folder, not a file.") from None
    except PermissionError:
        raise ImportFailure("Permission to read the source file was denied.") from None
    except OSError:
        raise ImportFailure("The system could not read the source file.") from None
    if len(raw) > MAX_SOURCE_BYTES:
        raise too_large()
    return raw


def too_large() -> ImportFailure:
    return ImportFailure(
        f"The source file is larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MB, the most an "
        "import reads; nothing was imported."
    )


def _name(fmt: SourceFormat) -> str:
    return FORMAT_NAMES[fmt]


def decode_text(raw: bytes, fmt: SourceFormat) -> str:
    """UTF-8 text (a byte-order mark is dropped), or a failure naming the format."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFailure(
            f"This {_name(fmt)} file is not UTF-8 text (the first bad byte is at offset "
            f"{exc.start}), so it cannot be imported.",
            format=fmt,
        ) from None


def parse_json(raw: bytes, fmt: SourceFormat) -> Any:
    """The parsed JSON document, or a failure naming the format and the position."""
    text = decode_text(raw, fmt)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFailure(
            f"This {_name(fmt)} file is not valid JSON (line {exc.lineno}, column {exc.colno}): "
            f"{exc.msg.lower()}.",
            format=fmt,
        ) from None
    except RecursionError:
        raise ImportFailure(
            f"This {_name(fmt)} file nests its JSON too deeply to be a real model; it was "
            "not imported.",
            format=fmt,
        ) from None


def parse_yaml(raw: bytes, fmt: SourceFormat) -> Any:
    """The parsed YAML 1.2 document (no tags acted on, aliases bounded)."""
    text = decode_text(raw, fmt)
    try:
        return yaml_rs.loads(
            text,
            parse_datetime=False,
            alias_limits=_ALIAS_LIMITS,
            duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error,
        )
    except yaml_rs.YAMLDecodeError as exc:
        detail = str(exc).lower()
        reason = (
            "its aliases expand to far too much data"
            if "alias" in detail or "anchor" in detail
            else "it is not valid YAML"
        )
        raise ImportFailure(
            f"This {_name(fmt)} file cannot be imported: {reason}.", format=fmt
        ) from None
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError):
        raise ImportFailure(
            f"This {_name(fmt)} file cannot be imported: it is not valid YAML.", format=fmt
        ) from None


def parse_xml(raw: bytes, fmt: SourceFormat) -> XmlElement:
    """The XML root element; document type declarations (and so all entities) are refused."""
    try:
        return defused_fromstring(raw, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException:
        raise ImportFailure(
            f"This {_name(fmt)} file declares an XML document type or entities, which "
            "real files never contain (it is how entity-expansion and file-disclosure attacks "
            "work); it was not imported.",
            format=fmt,
        ) from None
    except ParseError as exc:
        line, column = getattr(exc, "position", (0, 0))
        raise ImportFailure(
            f"This {_name(fmt)} file is not well-formed XML (line {line}, column {column + 1}).",
            format=fmt,
        ) from None
    except (ValueError, RecursionError, MemoryError):
        raise ImportFailure(f"This {_name(fmt)} file is not readable XML.", format=fmt) from None
