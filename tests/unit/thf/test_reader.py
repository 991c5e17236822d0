"""Safe reading: size, encoding, duplicate keys, aliases, tags, YAML 1.2 scalars, I/O errors."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from stockade.thf import MAX_FILE_BYTES, ThfError, ThfErrorCode, read_file, read_text, to_yaml
from tests.unit.thf.support import fixture_bytes, fixture_path, model_of

HEAD = (
    'version: "1.0"\nmetadata:\n  title: T\n  author: A\n'
    "  created: 2026-01-01\n  modified: 2026-01-01\n"
)


def billion_laughs() -> str:
    lines = ['lol0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"lol{level}: &a{level} [{refs}]")
    return HEAD + "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_quickly_with_a_clear_error() -> None:
    started = time.monotonic()
    with pytest.raises(ThfError) as caught:
        read_text(billion_laughs())
    elapsed = time.monotonic() - started
    assert caught.value.code is ThfErrorCode.PARSE
    assert "aliases" in caught.value.message
    # Generous bound: the point is "seconds, not hours or out-of-memory".
    assert elapsed < 10


def test_small_alias_reuse_in_unknown_fields_is_accepted() -> None:
    text = HEAD + "shared: &s {k: 1}\ncopy: *s\n"
    model = read_text(text)
    assert model.extras == {"shared": {"k": 1}, "copy": {"k": 1}}


def test_oversized_bytes_are_refused_before_parsing() -> None:
    data = b"#" * (MAX_FILE_BYTES + 1)
    with pytest.raises(ThfError) as caught:
        read_text(data)
    assert caught.value.code is ThfErrorCode.PARSE
    assert "larger than 64 MB" in caught.value.message


def test_oversized_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.thf"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 10)  # sparse: no real disk use
    with pytest.raises(ThfError) as caught:
        read_file(path)
    assert "larger than" in caught.value.message


@pytest.mark.parametrize(
    "text",
    [
        HEAD + "elements:\n- id: a\n  type: process\n  name: A\n  name: B\n",
        HEAD.replace("  author: A\n", "  author: A\n  author: B\n"),
        HEAD + "extra: {k: 1, k: 2}\n",
        HEAD + 'version: "1.0"\n',
    ],
)
def test_duplicate_mapping_keys_are_refused(text: str) -> None:
    with pytest.raises(ThfError) as caught:
        read_text(text)
    assert caught.value.code is ThfErrorCode.PARSE
    assert "key appears twice" in caught.value.message


@pytest.mark.parametrize(
    "text",
    [
        HEAD + "extra: !!python/object:os.system x\n",
        HEAD + "extra: !custom value\n",
        HEAD + "extra: !!set {a, b}\n",
        HEAD + "extra: !!binary aGVsbG8=\n",
        "--- !root\n" + HEAD,
        HEAD + "extra: [!x a]\n",
    ],
)
def test_yaml_tags_are_refused(text: str) -> None:
    with pytest.raises(ThfError) as caught:
        read_text(text)
    assert caught.value.code is ThfErrorCode.PARSE
    assert "tags" in caught.value.message


def test_exclamation_marks_in_text_are_not_mistaken_for_tags() -> None:
    text = HEAD + "extra: Watch out !\nnote: 'Quoted ! bang'\nplain: hey!there\n"
    assert read_text(text).extras == {
        "extra": "Watch out !",
        "note": "Quoted ! bang",
        "plain": "hey!there",
    }


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "y", "n", "Yes", "NO"])
def test_yaml_1_1_booleans_stay_strings(word: str) -> None:
    model = read_text(HEAD + f"elements:\n- id: app\n  type: {word}\n  name: {word}\n")
    assert model.elements[0].type == word and model.elements[0].name == word


def test_quoted_y_key_from_the_browser_writer_is_read() -> None:
    text = (
        HEAD
        + 'elements:\n  - id: app\n    type: process\n    name: A\n    position:\n      x: 1\n      "y": 2\n'
    )
    position = read_text(text).elements[0].position
    assert position is not None and (position.x, position.y) == (1.0, 2.0)


def test_utf8_byte_order_mark_is_accepted() -> None:
    data = b"\xef\xbb\xbf" + fixture_bytes("v1.0-minimal.thf")
    assert read_text(data).metadata.title == "Minimal Model"


def test_invalid_utf8_is_a_parse_error() -> None:
    data = fixture_bytes("v1.0-minimal.thf").replace(b"Minimal", b"Min\xffimal")
    with pytest.raises(ThfError) as caught:
        read_text(data)
    assert caught.value.code is ThfErrorCode.PARSE
    assert "UTF-8" in caught.value.message


def test_more_than_one_document_is_a_parse_error() -> None:
    with pytest.raises(ThfError) as caught:
        read_text("---\n" + HEAD + "---\n" + HEAD)
    assert caught.value.code is ThfErrorCode.PARSE
    assert "more than one" in caught.value.message


def test_syntax_error_message_gives_line_and_column_only() -> None:
    with pytest.raises(ThfError) as caught:
        read_text(HEAD + "elements: [unclosed\n")
    message = caught.value.message
    assert caught.value.code is ThfErrorCode.PARSE
    assert "line " in message and "column " in message
    assert "^" not in message and "\n" not in message


@pytest.mark.parametrize("text", ["", "# just a comment\n", "- a\n- b\n", "42\n", "just text\n"])
def test_non_mapping_root_is_a_missing_section(text: str) -> None:
    with pytest.raises(ThfError) as caught:
        read_text(text)
    assert caught.value.code is ThfErrorCode.MISSING_SECTION


def test_missing_file_error_names_no_path(tmp_path: Path) -> None:
    path = tmp_path / "secret-folder" / "absent.thf"
    with pytest.raises(ThfError) as caught:
        read_file(path)
    assert caught.value.code is ThfErrorCode.PARSE
    assert "does not exist" in caught.value.message
    assert "secret-folder" not in caught.value.message and "absent" not in caught.value.message


def test_folder_instead_of_file_is_a_plain_error(tmp_path: Path) -> None:
    with pytest.raises(ThfError) as caught:
        read_file(tmp_path)
    assert caught.value.code is ThfErrorCode.PARSE
    assert str(tmp_path) not in caught.value.message


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read unreadable files")
def test_unreadable_file_is_a_plain_error(tmp_path: Path) -> None:
    path = tmp_path / "locked.thf"
    path.write_bytes(fixture_bytes("v1.0-minimal.thf"))
    path.chmod(0)
    with pytest.raises(ThfError) as caught:
        read_file(path)
    assert "permission" in caught.value.message


def test_read_file_and_read_text_agree(tmp_path: Path) -> None:
    path = tmp_path / "m.thf"
    path.write_text(to_yaml(model_of(elements=[{"id": "a", "type": "p", "name": "A"}])))
    assert read_file(path) == read_text(path.read_bytes())


def test_str_and_bytes_input_agree() -> None:
    data = fixture_bytes("architecture-canonical-full.thf")
    assert read_text(data) == read_text(data.decode())


def test_reading_leaves_the_garbage_collector_as_it_was() -> None:
    import gc

    assert gc.isenabled()
    read_file(fixture_path("v1.0-canonical-full.thf"))
    assert gc.isenabled()
    gc.disable()
    try:
        read_file(fixture_path("v1.0-canonical-full.thf"))
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("field", ["name", "flow_number"])
def test_enormous_integer_in_a_typed_field_is_an_invalid_field(field: str) -> None:
    huge = "1" * 5000
    text = (
        HEAD + "elements:\n- id: a\n  type: p\n  name: n\n"
        "data_flows:\n- id: f\n  from: a\n  to: a\n"
    )
    if field == "name":
        text = text.replace("  name: n\n", f"  name: {huge}\n")
    else:
        text += f"  flow_number: {huge}\n"
    with pytest.raises(ThfError) as caught:
        read_text(text)
    assert caught.value.code is ThfErrorCode.INVALID_FIELD
    assert huge not in caught.value.message


def test_reading_never_undoes_someone_elses_frozen_objects() -> None:
    import gc

    keep = [object() for _ in range(10)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        read_file(fixture_path("v1.0-canonical-full.thf"))
        # Frozen objects may be freed meanwhile; an unfreeze would drop the count to zero.
        assert gc.get_freeze_count() > frozen // 2
    finally:
        gc.unfreeze()
    del keep
