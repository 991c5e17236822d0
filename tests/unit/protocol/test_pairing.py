"""Tool call/result pairing checks (spec 5.1, SEC-P-07)."""

from __future__ import annotations

from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.protocol.pairing import PairingViolation, PairingViolationKind, check_tool_pairing
from tests.unit.protocol.builders import assistant, calls, results, user

DUP = PairingViolationKind.DUPLICATE_TOOL_CALL_ID
ORPHAN = PairingViolationKind.ORPHAN_TOOL_RESULT
UNANSWERED = PairingViolationKind.UNANSWERED_TOOL_CALL


def test_a_well_paired_history_has_no_violations() -> None:
    history = [user("q"), calls("a", "b"), results("a", "b"), assistant("done")]
    assert check_tool_pairing(history) == []


def test_a_result_for_an_unknown_call_is_an_orphan() -> None:
    assert check_tool_pairing([user("q"), results("ghost")]) == [
        PairingViolation(ORPHAN, "ghost", 1)
    ]


def test_a_call_never_answered_is_reported() -> None:
    assert check_tool_pairing([user("q"), calls("a")]) == [PairingViolation(UNANSWERED, "a", 1)]


def test_a_result_in_the_same_message_as_its_call_is_an_orphan() -> None:
    same = Message(
        role="assistant",
        content=(
            ToolCallBlock(id="a", name="t", input={}),
            ToolResultBlock(tool_call_id="a", content="r"),
        ),
    )
    assert check_tool_pairing([same]) == [
        PairingViolation(ORPHAN, "a", 0),
        PairingViolation(UNANSWERED, "a", 0),
    ]


def test_a_result_before_its_call_is_an_orphan() -> None:
    violations = check_tool_pairing([results("a"), calls("a"), results("a")])
    assert violations == [PairingViolation(ORPHAN, "a", 0)]


def test_a_reused_call_id_is_a_duplicate() -> None:
    history = [calls("a"), results("a"), calls("a"), results("a")]
    assert check_tool_pairing(history) == [PairingViolation(DUP, "a", 2)]


def test_slicing_off_the_head_of_a_history_is_detected() -> None:
    history = [user("q"), calls("a"), results("a"), assistant("done")]
    assert check_tool_pairing(history[2:]) == [PairingViolation(ORPHAN, "a", 0)]


def test_orphans_and_duplicates_come_in_scan_order_then_unanswered_in_first_seen_order() -> None:
    history = [calls("x"), results("ghost"), calls("y"), calls("x")]
    assert check_tool_pairing(history) == [
        PairingViolation(ORPHAN, "ghost", 1),
        PairingViolation(DUP, "x", 3),
        PairingViolation(UNANSWERED, "x", 0),
        PairingViolation(UNANSWERED, "y", 2),
    ]


def test_text_blocks_are_ignored() -> None:
    assert check_tool_pairing([Message(role="user", content=(TextBlock(text=""),))]) == []
