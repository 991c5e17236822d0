"""The compiled block-subset reader returns exactly what yaml-rs returns, or declines (None).

`thf/_blockyaml.c` reads the plain block YAML that `.thf` writers emit and declines everything
else, which `thf/reader.py` then gives to yaml-rs. Its one obligation: whatever it returns is
what `yaml_rs.loads(text, parse_datetime=False)` returns for the same text, value for value
and type for type (`True` is not `1`, `1` is not `1.0`, key order counts). These tests compare
the two on the fixtures, on everything the writer writes, on generated near-YAML documents
(indentation slips, comments, block scalars, quoting, escapes, tricky tokens) and on mutations
of real files, and check that the reader in the product uses it and reads the same models and
errors with and without it.
"""

from __future__ import annotations

import math
import os
from typing import Any

import pytest
import yaml_rs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context, event

from stockade.thf import ThfError, read_text, to_yaml, validate_document
from stockade.thf import reader as reader_module
from tests.conftest import THF_FIXTURES, examples
from tests.unit.thf.support import CANONICAL_FIXTURES, fixture_bytes
from tests.unit.thf.test_properties import TRICKY, documents

if reader_module._load_block_subset is None:
    if os.environ.get("STOCKADE_ALLOW_NO_BLOCK_READER") != "1":
        pytest.fail(
            "the compiled block reader (stockade.thf._blockyaml) is not built: tools/_setup.sh "
            "builds it with the package (needs a C compiler); set "
            "STOCKADE_ALLOW_NO_BLOCK_READER=1 to test a build without it",
            pytrace=False,
        )
    pytest.skip("this build has no compiled block reader", allow_module_level=True)

from stockade.thf._blockyaml import loads as block_loads


def same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down, key order included, -0.0 apart from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(
            type(k) is type(j) and same(a[k], b[j]) for k, j in zip(a, b, strict=True)
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
        )
    return bool(a == b)


def full_parse(text: str) -> Any:
    """What yaml-rs makes of the text, or the exception it raises."""
    try:
        return yaml_rs.loads(text, parse_datetime=False)
    except Exception as exc:  # yaml-rs raises several kinds; any of them is "refused"
        return exc


def check(text: str) -> bool:
    """Assert the compiled reader agrees with yaml-rs on `text`; whether it took the text."""
    fast = block_loads(text)
    if currently_in_test_context():
        event("declined" if fast is None else "read")
    if fast is None:
        return False
    expected = full_parse(text)
    assert not isinstance(expected, Exception), (text, expected)
    assert same(fast, expected), (text, fast, expected)
    return True


ALL_FIXTURES = sorted(p for p in THF_FIXTURES.rglob("*.thf"))


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: str(p.relative_to(THF_FIXTURES)))
def test_every_fixture_reads_as_yaml_rs_reads_it(path: Any) -> None:
    text = path.read_bytes().decode("utf-8", "replace").removeprefix("\ufeff")
    check(text)


@pytest.mark.parametrize("name", CANONICAL_FIXTURES)
def test_canonical_fixtures_are_inside_the_subset(name: str) -> None:
    assert check(fixture_bytes(name).decode("utf-8"))


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_whatever_the_writer_writes_reads_as_yaml_rs_reads_it(document: dict[str, Any]) -> None:
    check(to_yaml(validate_document(document)))


PLAIN_WORDS = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 -_./()éß中🙂"), max_size=20
).map(lambda s: "a" + s.strip())


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(PLAIN_WORDS, min_size=1, max_size=5),
    st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=3),
    st.lists(st.integers(0, 2**32 - 1), max_size=3),
)
def test_ordinary_models_are_inside_the_subset(
    words: list[str], numbers: list[float], counts: list[int]
) -> None:
    # Plain words, positions and counts are what real models are made of; if these fell
    # back to yaml-rs the compiled reader would be dead weight.
    elements = [
        {"id": f"e{i}", "type": "process", "name": word, "description": word + "\nline two",
         "technologies": [word], "position": {"x": float(i), "y": 2.5}}
        for i, word in enumerate(words)
    ]
    document: dict[str, Any] = {
        "version": "1.0",
        "metadata": {"title": words[0], "author": "A", "created": "2026-01-01",
                     "modified": "2026-01-02", "last_edit_timestamp": 17},
        "elements": elements,
        "diagrams": [{"id": f"d{i}", "name": "D", "viewport": {"x": x, "y": x, "zoom": 1.0}}
                     for i, x in enumerate(numbers) if x == 0 or 1e-300 < abs(x) < 1e300],
        "data_flows": [{"id": f"f{i}", "from": "e0", "to": "e0", "flow_number": n}
                       for i, n in enumerate(counts)],
    }
    text = to_yaml(validate_document(document))
    assert check(text), text


# Generated near-YAML: documents made of the subset's own constructs, with slips a hand or
# another tool could make. Every one is compared; about half fall inside the subset.
KEYS = ["id", "name", "x", "y", "a-b", "a_b", "Key9", "e1", "inf", "nan", "yes", "on", "n"]
ODD_KEYS = ["true", "null", "_x", "1a", "a b", "'q'", '"q"', "é", "a.b", "<<", "? k", "-k", ""]
TOKENS = [
    "plain text", "text (with) [brackets] {and} , commas", "a:b", "http://x/y?q=1#frag",
    "C:\\path", "50%", "a'b", 'a"b', "a # not comment? no: comment", "a#b", "ends with colon:",
    "x: y", "2026-01-01", "2026-1-01", "2026-01-01T10:00", "10:20:30", "0", "-0", "7", "-12",
    "012", "1_000", "+5", "0x1F", "0o17", "0b11", "9223372036854775807",
    "123456789012345678", "1234567890123456789", "0.5", "-0.0", "1.", ".5", "1e20", "1.5e-7",
    "1E5", "2e+3", "1e400", "1e-400", "5e-324", "1e", ".inf", "-.inf", ".nan", ".NaN", "~",
    "~x", "null", "Null", "NULL", "nUll", "true", "True", "TRUE", "tRue", "false", "FALSE",
    "y", "Yes", "off", "&anchor x", "*alias", "!tag x", "!!str x", "%x", "@x", "`x", "?x",
    "? x", "-x", "- x", "--", "---", "...", "[]", "[ ]", "[a]", "{}", "{a: 1}", "|", ">",
    "|-", "é", "中文", "🙂 emoji", "nbsp\u00a0", "\u00a0lead", "ß", "/path", "(x)", "$v",
    "^x", "=x", ";x", "<x", ")x", "\\x", "_x", "_1", "__1", "_.5", ".x", "+x", ",x",
    "a  double  space", "trailing   ", "'single'", "'it''s'", "''", "'unclosed",
    '"double"', '"esc \\n \\t \\\\ \\" \\/ \\0 \\a \\b \\e \\f \\v \\r \\ "', '""',
    '"\\x41\\xe9\\u00e9\\u4e2d\\U0001F642"', '"\\ud800"', '"\\U00110000"', '"\\N\\_\\L\\P"',
    '"\\q"', '"\\x4"', '"unclosed', '"a" trailing', "'a' trailing", '"a" # c', "'a':",
    "[] # c", "{} x", "nul\x00", "bell\x07", "del\x7f", "c1\u0085", "ls\u2028", "bom\ufeff",
    "nonchar\uffff", "tab\there", "cr\rx", "50% of traffic", "3rd party", "24/7", "2FA",
    "5xx", "1 000", "1e5 x", "0x1G", "1_000 units", "-5 apples", "12:30", "1.2.3", "1,000",
    "1.5é", "2026-01-01 notes", "0 days", "-0x1", "1.e5", "9." + "9" * 70, "1_", "+.5",
]
BLOCK_LINES = ["text", "  indented", "# not a comment", "- not an item", "key: not a key",
               "", " ", "   ", "é", "tab\tin", "trailing "]
HEADERS = ["|", "|-", "|+", "|2", "|2-", "|-2", "|+1", "|1", "|9", "|0", "|--", "|-+", ">",
           ">-", "| # c", "|x"]


CLEAN_TOKENS = [t for t in TOKENS if not any(c in t for c in "\x00\x07\x7f\x85\u2028\ufeff\uffff\t\r")]
CLEAN_HEADERS = ["|", "|-", "|+", "|2", "|2-", "|-2", "|+1", "|1"]
CLEAN_BLOCK_LINES = [line for line in BLOCK_LINES if "\t" not in line and not line.endswith(" ")]


@st.composite
def near_yaml(draw: st.DrawFn) -> str:
    """A document of the subset's constructs; unless `clean`, with slips now and then."""
    clean = draw(st.booleans())
    lines: list[str] = []

    def rarely() -> bool:
        return not clean and draw(st.integers(0, 14)) == 0

    def slip(indent: int) -> int:
        return indent + (draw(st.sampled_from([-2, -1, 1, 2])) if rarely() else 0)

    def noise(indent: int) -> None:
        kind = draw(st.sampled_from(["none"] * 8 + ["blank", "spaces", "comment"]))
        if kind == "blank":
            lines.append("")
        elif kind == "spaces":
            lines.append(" " * draw(st.integers(1, indent + 4)))
        elif kind == "comment":
            lines.append(" " * draw(st.integers(0, indent + 4)) + "# " + scalar_text())
        if rarely():
            lines.append(" " * indent + "\tx: 1")

    def scalar_text() -> str:
        if rarely():
            return draw(st.one_of(st.sampled_from(TOKENS), st.sampled_from(TRICKY),
                                  st.text(max_size=8)))
        return draw(st.one_of(st.sampled_from(CLEAN_TOKENS), PLAIN_WORDS))

    def block_scalar(parent: int) -> None:
        content = parent + (draw(st.sampled_from([1, 4, 0])) if rarely() else 2)
        for _ in range(draw(st.integers(0 if rarely() else 1, 4))):
            line = draw(st.sampled_from(BLOCK_LINES if rarely() else CLEAN_BLOCK_LINES))
            extra = draw(st.sampled_from([1, 2, -1])) if rarely() else 0
            lines.append(" " * max(0, content + extra) + line if line.strip() else line)

    def value(indent: int, depth: int, prefix: str) -> None:
        kinds = ["scalar"] * 5 + ["block"] * 2 + ["empty", "null"]
        if depth < 4:
            kinds += ["mapping"] * 3 + ["sequence"] * 3
        kind = draw(st.sampled_from(kinds))
        if kind == "scalar":
            lines.append(prefix + " " + scalar_text())
        elif kind == "block":
            lines.append(prefix + " " + draw(st.sampled_from(HEADERS if rarely() else CLEAN_HEADERS)))
            block_scalar(indent)
        elif kind == "empty":
            lines.append(prefix + " " + draw(st.sampled_from(["[]", "{}", "[ ]", "{ }"] if rarely()
                                                             else ["[]", "{}", "[]  "])))
        elif kind == "null":
            lines.append(prefix + draw(st.sampled_from(["", " ", "  "])))
        elif kind == "mapping":
            lines.append(prefix)
            mapping(slip(indent + draw(st.sampled_from([2, 2, 4, 1]))), depth + 1)
        else:
            lines.append(prefix)
            sequence(slip(indent + draw(st.sampled_from([0, 2]))), depth + 1)

    def mapping(indent: int, depth: int, first_inline: str | None = None) -> None:
        keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=4, unique=not rarely()))
        for position, key in enumerate(keys):
            if rarely():
                key = draw(st.sampled_from(ODD_KEYS))
            separator = draw(st.sampled_from([" :", ":\t"])) if rarely() else ":"
            if position == 0 and first_inline is not None:
                prefix = first_inline + key + separator
            else:
                prefix = " " * max(0, slip(indent)) + key + separator
            value(indent, depth, prefix)
            noise(indent)

    def sequence(indent: int, depth: int) -> None:
        pad = " " * max(0, indent)
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(["scalar", "scalar", "mapping", "mapping"]))
            if rarely():
                lines.append(pad + draw(st.sampled_from(["-", "- - a", "-x", "- # c", "- |"])))
            elif kind == "scalar" or depth >= 5:
                lines.append(pad + "- " + scalar_text())
            else:
                gap = draw(st.sampled_from([" ", " ", "  "]))
                mapping(indent + 1 + len(gap), depth + 1, first_inline=pad + "-" + gap)
            noise(indent)

    if draw(st.booleans()):
        lines.append("# header " + scalar_text())
    mapping(0, 0)
    text = "\n".join(lines)
    ends = ["\n", "\n\n", "\n  \n", "\n# end\n"]
    return text + draw(st.sampled_from([*ends, "", "\n---\n"] if rarely() else ends))


@settings(max_examples=examples(300), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(near_yaml())
def test_near_yaml_reads_as_yaml_rs_reads_it_or_is_declined(text: str) -> None:
    check(text)


@settings(max_examples=examples(600), deadline=None)
@given(st.one_of(st.sampled_from(TOKENS), st.sampled_from(TRICKY), st.text(max_size=12)),
       st.sampled_from(["v: {}\n", "v:\n- {}\n", "v:\n  - {}\n", "v:\n  {}: 1\n", "{}: 1\n"]))
def test_single_tokens_read_as_yaml_rs_reads_them(token: str, shape: str) -> None:
    check(shape.format(token))


SEED = fixture_bytes("v1.0-canonical-full.thf").decode("utf-8")
MUTATIONS = ["", " ", "  ", "\n", "-", "- ", ":", ": ", "#", " #", "'", '"', "\\", "|", "|-",
             "\t", "\r", "[", "]", "{", "}", "&", "*", "!", "~", "0", "1.5", "é", "\u2028", "---"]


EDITS = st.tuples(st.integers(0, len(SEED)), st.integers(0, 6), st.sampled_from(MUTATIONS))


def mutated(edits: list[tuple[int, int, str]]) -> str:
    """The seed file with each edit's characters removed and its text inserted, in turn."""
    text = SEED
    for position, removed, inserted in edits:
        at = position % (len(text) + 1)
        text = text[:at] + inserted + text[at + removed:]
    return text


@settings(max_examples=examples(800), deadline=None)
@given(st.lists(EDITS, min_size=1, max_size=4))
def test_mutated_files_read_as_yaml_rs_reads_them_or_are_declined(
    edits: list[tuple[int, int, str]],
) -> None:
    check(mutated(edits))


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\na: 2\n",            # duplicate keys: yaml-rs's error, not a silent overwrite
        "a:\n  b: 1\n  b: 2\n",
        "- a\n",                   # a sequence at the root
        "a: 1",                    # no final line break
        "",
        "# only a comment\n",
        "a: 1\n---\nb: 2\n",       # a second document
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: [1, 2]\n",
        "a: >\n  folded\n",
        "a: plain\n  continued\n",
        "a: 'multi\n  line'\n",
        "a: 1 # comment\n",
        "a:\r\n",
        "\ta: 1\n",
        "a: |\n\n",                # an empty block scalar
        "a:\n" + "".join(" " * d + "b:\n" for d in range(1, 70)) + " " * 70 + "c: 1\n",
    ],
)
def test_outside_the_subset_is_declined(text: str) -> None:
    assert block_loads(text) is None


def test_a_block_scalar_keeps_its_lines_and_chomps_as_yaml_does() -> None:
    text = "a: |\n  one\n\n   two\n\nb: |+\n  x\n\n\nc: |2-\n    y\n  z\n"
    assert check(text)
    assert block_loads(text) == {"a": "one\n\n two\n", "b": "x\n\n\n", "c": "  y\nz"}


def test_the_reader_takes_the_compiled_path_for_subset_text(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def spy(text: str, *capture: Any) -> Any:
        calls.append(text)
        return block_loads(text, *capture)

    monkeypatch.setattr(reader_module, "_load_block_subset", spy)
    data = fixture_bytes("v1.0-canonical-full.thf")
    assert read_text(data) is not None
    assert len(calls) == 1


def outcome(data: bytes | str) -> Any:
    try:
        return read_text(data)
    except ThfError as exc:
        return (exc.code, str(exc), exc.section, exc.id, exc.field)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(EDITS, max_size=3))
def test_reading_gives_the_same_model_or_error_with_and_without_the_compiled_path(
    edits: list[tuple[int, int, str]],
) -> None:
    text = mutated(edits)
    with_it = outcome(text)
    saved = reader_module._load_block_subset
    reader_module._load_block_subset = None
    try:
        without_it = outcome(text)
    finally:
        reader_module._load_block_subset = saved
    assert with_it == without_it
