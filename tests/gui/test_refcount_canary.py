"""Canary for Qt bindings that mis-count references to None while dispatching events."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QApplication


def test_processing_events_does_not_drain_none_references(qapp: QApplication) -> None:
    before = sys.getrefcount(None)
    for _ in range(100):
        QApplication.processEvents()
    assert sys.getrefcount(None) >= before
