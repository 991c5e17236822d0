"""Every control a keyboard or screen-reader user reaches has an accessible name; Tab leaves
the prompt box; the chat and forms stay readable on a dark palette."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QColor, QGuiApplication, QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

from stockade.ui.main_window import AppTab
from tests.e2e.conftest import REPO_ROOT
from tests.gui.conftest import WindowDriver

SAMPLE = REPO_ROOT / "resources" / "samples" / "ecommerce-platform.thf"
_CONTROLS = (QAbstractButton, QAbstractItemView, QAbstractSpinBox, QComboBox, QLineEdit,
             QPlainTextEdit, QTextEdit)


def _unnamed(root: QWidget) -> list[str]:
    missing = []
    for widget in root.findChildren(QWidget):
        if not isinstance(widget, _CONTROLS) or not widget.isVisible():
            continue
        # Parts of a named composite control (a view's header and corner button, the line
        # edit inside an editable combo box) are announced through that control.
        if isinstance(widget, QHeaderView) or widget.objectName().startswith("qt_") or \
                isinstance(widget.parentWidget(), QComboBox | QAbstractSpinBox):
            continue
        if widget.focusPolicy() == Qt.FocusPolicy.NoFocus and isinstance(widget, QAbstractButton) \
                and not widget.isEnabled():
            continue
        interface = QAccessible.queryAccessibleInterface(widget)
        name = interface.text(QAccessible.Text.Name) if interface is not None else ""
        if not name.strip():
            missing.append(f"{type(widget).__name__} {widget.objectName() or '(no objectName)'}")
    return missing


def test_every_visible_control_has_an_accessible_name(driver: WindowDriver) -> None:
    assert driver.open(SAMPLE)
    window = driver.window
    window.find_bar.start()
    missing: list[str] = []
    for tab in (AppTab.TREE, AppTab.DIAGRAM, AppTab.SUMMARY):
        window.show_tab(tab)
        for section, entity_id in (("elements", "web-app"), ("data_flows", "flow-customer-browser-cdn"),
                                   ("threats", "threat-sqli")):
            window.select_entity(section, entity_id)
            missing += _unnamed(window)
    assert not missing, "\n".join(sorted(set(missing)))


def test_tab_leaves_the_prompt_box(driver: WindowDriver) -> None:
    assert driver.open(SAMPLE)
    prompt = driver.window.findChild(QPlainTextEdit, "chatPromptEdit")
    assert prompt is not None
    driver.window.activateWindow()
    prompt.setFocus()
    driver.qtbot.waitUntil(prompt.hasFocus)
    QTest.keyClicks(prompt, "look at the API")
    QTest.keyClick(prompt, Qt.Key.Key_Tab)
    assert not prompt.hasFocus()
    assert prompt.toPlainText() == "look at the API"  # no tab character typed


def _contrast(a: QColor, b: QColor) -> float:
    def luminance(c: QColor) -> float:
        def channel(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF())

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_users_prompt_is_readable_on_a_dark_palette(driver: WindowDriver) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    light = QGuiApplication.palette()
    dark = QPalette()
    for role, color in ((QPalette.ColorRole.Window, "#1f2124"), (QPalette.ColorRole.WindowText, "#e8eaed"),
                        (QPalette.ColorRole.Base, "#17181a"), (QPalette.ColorRole.AlternateBase, "#2a2c30"),
                        (QPalette.ColorRole.Text, "#e8eaed"), (QPalette.ColorRole.Button, "#2a2c30"),
                        (QPalette.ColorRole.ButtonText, "#e8eaed"), (QPalette.ColorRole.Mid, "#5f6368")):
        dark.setColor(role, QColor(color))
    app.setPalette(dark)
    try:
        from stockade.ui.assistant.chat_pane import TurnView

        view = TurnView("Which flows leave the DMZ?", driver.window)
        view.resize(320, 80)
        view.show()
        image = view.prompt_label.grab().toImage()
        background = image.pixelColor(2, image.height() // 2)
        ink = min((image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height())),
                  key=lambda c: -_contrast(c, background))
        assert _contrast(ink, background) >= 4.5
        from stockade.ui.common.colors import readable

        assert _contrast(QColor(readable("#b91c1c")), dark.color(QPalette.ColorRole.Window)) >= 4.5
        view.deleteLater()
    finally:
        app.setPalette(light)
