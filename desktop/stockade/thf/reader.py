"""Safe reading of `.thf` files: bounded YAML 1.2 parse, then validation into a `ThreatModel`.

The parser is yaml-rs (see docs/adr/0001-yaml-parser.md). Text in the plain block subset that
Stockade's and ThreatForge's desktop writers emit is read by a compiled reader that returns
exactly what yaml-rs would, and leaves every other text, and every error, to yaml-rs
(`thf/_blockyaml.c`, docs/adr/0010-compiled-block-reader.md). Safety limits, each with its own
plain message:
- size: more than `MAX_FILE_BYTES` is refused before anything is parsed;
- encoding: UTF-8 only (a leading byte-order mark is allowed);
- duplicate mapping keys are refused (the parser's own check);
- aliases: expansion is bounded by the parser's replay limits, so a "billion laughs" file
  fails in well under a second;
- tags: none. The parser would silently drop unknown tags and build sets from `!!set`, so a
  cheap pre-scan finds every possible tag position and, only when one is found, an exact
  token scan decides.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml_rs

from stockade.thf.capture import CAPTURE, CapturedColumns, SearchTexts
from stockade.thf.collector import collector_paused
from stockade.thf.columns import remember_search_texts
from stockade.thf.errors import CompatibilityWarning, ThfError, ThfErrorCode
from stockade.thf.validate import compatibility_warnings, validate_document

_load_block_subset: Callable[..., Any] | None
try:
    from stockade.thf._blockyaml import loads as _load_block_subset
except ImportError:  # a build made without a C compiler: yaml-rs reads every file
    _load_block_subset = None

if TYPE_CHECKING:
    from stockade.thf.model import ThreatModel

# The document models (pydantic), the sidecar merge and PyYAML's scanner are imported where
# they are needed: `check_file_with_warnings` on a valid file needs none of them, and they are
# most of a command's start-up.

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest file the reader accepts (a 10k-element model is about 6-8 MB)."""

# Writers never emit anchors; these bounds only need to admit hand-written reuse.
_ALIAS_LIMITS = yaml_rs.AliasLimits(
    max_total_replayed_events=200_000,
    max_replay_stack_depth=16,
    max_alias_expansions_per_anchor=10_000,
)

# A tag can only start at a line start or after whitespace or a flow/block indicator.
_BEFORE_TAG = frozenset(" \t\r\n[]{},:?-")
_DOCUMENT_MARKER = re.compile(r"^---(?:[ \t]|$)", re.MULTILINE)
_LINE_COLUMN = re.compile(r"line (\d+), column (\d+)")

_PARSE_FAILED = "This file is not valid YAML, so it cannot be opened as a threat model"


def read_text(data: str | bytes) -> ThreatModel:
    """Parse and validate a whole `.thf` document held in memory; raise `ThfError`."""
    return _read(data, with_warnings=False)[0]


def read_text_with_warnings(
    data: str | bytes,
) -> tuple[ThreatModel, tuple[CompatibilityWarning, ...]]:
    """Like `read_text`, plus what ThreatForge's desktop reader would refuse in the file."""
    return _read(data, with_warnings=True)


def read_file_with_warnings(
    path: str | os.PathLike[str], *, merge_sidecar: bool = True
) -> tuple[ThreatModel, tuple[CompatibilityWarning, ...]]:
    """Like `read_file`, plus the compatibility warnings of `read_text_with_warnings`."""
    model, warnings = read_text_with_warnings(_read_bounded(Path(path)))
    if merge_sidecar:
        from stockade.thf.sidecar import merge_sidecar_layouts

        model = merge_sidecar_layouts(model, path)
    return model, warnings


class FileCheck(NamedTuple):
    """What `check_file_with_warnings` found in a valid file: section sizes and warnings."""

    counts: dict[str, int]
    warnings: tuple[CompatibilityWarning, ...]


def check_file_with_warnings(path: str | os.PathLike[str]) -> FileCheck:
    """Whether the file at `path` opens, as `read_file_with_warnings` decides, without
    building the document when the parsed data is plainly valid (`thf.check`).

    Raises the same `ThfError` as `read_file_with_warnings` for a file that does not open:
    anything the quick check is unsure of is read the full way.
    """
    from stockade.thf.check import is_plainly_valid, section_counts

    raw = _read_bounded(Path(path))
    with collector_paused():
        parsed = _parse(_text_of(raw))
        warnings = compatibility_warnings(parsed) if is_plainly_valid(parsed) else None
        if warnings is None:
            model = validate_document(parsed)  # raises the one error, if there is one
            warnings = compatibility_warnings(parsed)
            from stockade.thf.sidecar import merge_sidecar_layouts

            merge_sidecar_layouts(model, path)  # as a read would (it may log a refusal)
        return FileCheck(section_counts(parsed), warnings)


def _read(
    data: str | bytes, *, with_warnings: bool
) -> tuple[ThreatModel, tuple[CompatibilityWarning, ...]]:
    text = _text_of(data)
    with collector_paused(promote_survivors=True):
        parsed, search_texts, captured = _parse_with_captures(text)
        try:
            model = validate_document(parsed, captured=captured)
            if search_texts:
                remember_search_texts(model, search_texts)
            return model, compatibility_warnings(parsed) if with_warnings else ()
        finally:
            # Free the parse tree before the collector resumes, so its first pass only
            # walks the model and not a million short-lived parser objects as well.
            del parsed


def _text_of(data: str | bytes) -> str:
    """The document text: size-bounded, strictly decoded, without a byte-order mark."""
    if isinstance(data, bytes):
        if len(data) > MAX_FILE_BYTES:
            raise _too_large()
        return _decode(data)
    # Each character is at most four UTF-8 bytes, so most texts need no encoding to check.
    if len(data) * 4 > MAX_FILE_BYTES and len(data.encode("utf-8", "surrogatepass")) > (
        MAX_FILE_BYTES
    ):
        raise _too_large()
    return data[1:] if data.startswith("\ufeff") else data


def read_file(path: str | os.PathLike[str], *, merge_sidecar: bool = True) -> ThreatModel:
    """Read a `.thf` file; with `merge_sidecar`, fill layout from a legacy sidecar (§1.11)."""
    raw = _read_bounded(Path(path))
    model = read_text(raw)
    if merge_sidecar:
        from stockade.thf.sidecar import merge_sidecar_layouts

        model = merge_sidecar_layouts(model, path)
    return model


def _read_bounded(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise _too_large()
            # Read one byte past the bound: the file may have grown since fstat.
            raw = handle.read(MAX_FILE_BYTES + 1)
    except ThfError:
        raise
    except FileNotFoundError:
        raise _io_error("the file does not exist") from None
    except IsADirectoryError:
        raise _io_error("it is a folder, not a file") from None
    except PermissionError:
        raise _io_error("permission to read it was denied") from None
    except OSError:
        raise _io_error("the system could not read it") from None
    if len(raw) > MAX_FILE_BYTES:
        raise _too_large()
    return raw


def _io_error(reason: str) -> ThfError:
    return ThfError(ThfErrorCode.PARSE, f"This file cannot be opened: {reason}.")


def _too_large() -> ThfError:
    return ThfError(
        ThfErrorCode.PARSE,
        f"This file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB, the most a threat "
        "model may be; it was not opened.",
    )


def _decode(raw: bytes) -> str:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ThfError(
            ThfErrorCode.PARSE,
            f"This file is not UTF-8 text (the first bad byte is at offset {exc.start}), "
            "so it cannot be opened.",
        ) from None


def block_reader_available() -> bool:
    """Whether this build has the compiled reader of the plain block subset."""
    return _load_block_subset is not None


def _parse_with_captures(text: str) -> tuple[Any, SearchTexts | None, CapturedColumns | None]:
    """The parsed document and, when the compiled reader read it, what it collected on the
    way (`thf.capture`): the search texts of the large sections, and id and reference
    columns."""
    if _load_block_subset is not None:
        try:
            captured = _load_block_subset(text, CAPTURE)
        except MemoryError:
            captured = None
        if captured is not None:
            parsed, texts, columns = captured
            return parsed, texts, columns
    return _parse(text), None, None


def _parse(text: str) -> Any:
    if _load_block_subset is not None:
        # Inside the subset there are no tags, aliases, duplicate keys or second documents,
        # so none of the checks below could refuse what it returns.
        try:
            subset = _load_block_subset(text)
        except MemoryError:
            subset = None  # yaml-rs tries, and reports what it makes of it
        if subset is not None:
            return subset
    try:
        parsed = yaml_rs.loads(
            text,
            parse_datetime=False,
            alias_limits=_ALIAS_LIMITS,
            duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.Error,
        )
    except yaml_rs.YAMLDecodeError as exc:
        raise _parse_error(str(exc)) from None
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError):
        raise ThfError(ThfErrorCode.PARSE, _PARSE_FAILED + ".") from None
    if _may_have_tag(text) and _has_tag(text):
        raise _tag_error()
    if isinstance(parsed, list) and len(_DOCUMENT_MARKER.findall(text)) > 1:
        raise ThfError(
            ThfErrorCode.PARSE,
            "This file holds more than one YAML document; a threat model is exactly one.",
        )
    return parsed


def _parse_error(detail: str) -> ThfError:
    lowered = detail.lower()
    if "invalid tag" in lowered:
        return _tag_error()
    if "duplicate" in lowered and "key" in lowered:
        reason = "a key appears twice in the same mapping"
    elif "alias" in lowered or "anchor" in lowered:
        reason = "its YAML aliases expand to far too much data (a known denial-of-service pattern)"
    else:
        reason = ""
    where = _LINE_COLUMN.search(detail)
    place = f" (line {where.group(1)}, column {where.group(2)})" if where else ""
    if reason:
        return ThfError(ThfErrorCode.PARSE, f"This file cannot be opened: {reason}{place}.")
    return ThfError(ThfErrorCode.PARSE, f"{_PARSE_FAILED}{place}.")


def _may_have_tag(text: str) -> bool:
    """Cheap pre-scan: is there a `!` where a tag could start? Text like "Hello !" also hits."""
    # str.find is a C memchr scan; most files contain no `!` at all.
    position = text.find("!")
    while position != -1:
        if position == 0 or text[position - 1] in _BEFORE_TAG:
            return True
        position = text.find("!", position + 1)
    return False


def _tag_error() -> ThfError:
    return ThfError(
        ThfErrorCode.PARSE,
        "This file uses YAML tags (a `!` before a value), which threat models never "
        "contain; it was not opened.",
    )


def _has_tag(text: str) -> bool:
    """Exact check: does the token stream contain a tag? Only run when the pre-scan hits."""
    import yaml

    try:
        return any(
            isinstance(token, yaml.TagToken)
            for token in yaml.scan(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        )
    except yaml.YAMLError:
        # The tokenizer disagrees with the parser about this text; fail closed.
        return True
