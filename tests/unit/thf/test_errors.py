"""The typed errors: JSON shape, id-list rendering, and surviving a process boundary."""

from __future__ import annotations

import pickle

from stockade.thf import SaveError, ThfError, ThfErrorCode
from stockade.thf.errors import render_id_list


def test_id_list_is_rendered_like_the_reference() -> None:
    assert render_id_list([]) == "[]"
    assert render_id_list(["a", "b"]) == '["a", "b"]'
    assert render_id_list(['q"uote', "back\\slash", "new\nline"]) == (
        '["q\\"uote", "back\\\\slash", "new\\nline"]'
    )


def test_codes_are_the_agreed_strings() -> None:
    assert [c.value for c in ThfErrorCode] == [
        "parse",
        "missing_section",
        "invalid_field",
        "unsupported_version",
        "duplicate_id",
        "invalid_reference",
        "circular_group_nesting",
    ]


def test_not_applicable_fields_are_null_in_json() -> None:
    err = ThfError(ThfErrorCode.PARSE, "Bad file.")
    assert err.to_json() == {
        "code": "parse",
        "message": "Bad file.",
        "section": None,
        "id": None,
        "field": None,
        "reference": None,
        "suggestion": None,
    }
    assert str(err) == "Bad file."


def test_errors_survive_pickling_with_every_field() -> None:
    err = ThfError.invalid_reference("a[b].c", "ghost", ["x", "y"], section="a", id="b")
    again = pickle.loads(pickle.dumps(err))
    assert again.to_json() == err.to_json()
    assert again.valid_ids == ("x", "y")
    saved = pickle.loads(pickle.dumps(SaveError("Disk full.", reason="disk_full")))
    assert (str(saved), saved.reason) == ("Disk full.", "disk_full")
