"""Help → About: which build this is, on which Qt, and where it keeps its data."""

from __future__ import annotations

from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from stockade.diagnostics import AboutFacts, about_facts

TAGLINE = ("Offline review of .thf threat models, with an AI assistant whose every edit is "
           "proposed, approved, metered, audited and undoable.")


def toolkit_versions() -> dict[str, str]:
    """The versions only the UI layer can tell: the Qt it runs on and its Python binding."""
    import PySide6

    return {
        "Qt": f"{qVersion()} (platform {QApplication.platformName() or 'unknown'})",
        "PySide6": PySide6.__version__,
    }


class AboutDialog(QDialog):
    """Window-modal, opened with `open()`; every value can be selected and copied."""

    def __init__(self, parent: QWidget | None, facts: AboutFacts | None = None,
                 toolkit: dict[str, str] | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.setWindowTitle("About Stockade")
        self.facts = facts if facts is not None else about_facts()
        toolkit = toolkit if toolkit is not None else toolkit_versions()

        heading = QHBoxLayout()
        icon = QApplication.windowIcon()
        if not icon.isNull():
            picture = QLabel(self)
            picture.setObjectName("aboutIcon")
            picture.setPixmap(icon.pixmap(64, 64))
            heading.addWidget(picture, 0, Qt.AlignmentFlag.AlignTop)
        title = QLabel(f"<b>Stockade {self.facts.version}</b><br>{TAGLINE}", self)
        title.setObjectName("aboutTitle")
        title.setWordWrap(True)
        heading.addWidget(title, 1)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        rows = [
            ("Build", "aboutBuild", self.facts.build),
            ("Qt", "aboutQt", toolkit.get("Qt", "?")),
            ("PySide6", "aboutPySide", toolkit.get("PySide6", "?")),
            ("Python", "aboutPython", self.facts.python),
            ("Platform", "aboutPlatform", self.facts.platform),
            ("Data folder", "aboutDataFolder", str(self.facts.data_folder)),
            ("Store", "aboutStore", self.facts.store_description),
            ("Logs", "aboutLogFolder", str(self.facts.log_folder)),
        ]
        for label, name, value in rows:
            field = QLabel(value, self)
            field.setObjectName(name)
            field.setWordWrap(True)
            field.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            form.addRow(f"{label}:", field)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.setObjectName("aboutButtons")
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addLayout(heading)
        layout.addSpacing(8)
        layout.addLayout(form)
        layout.addWidget(buttons)
        self.setMinimumWidth(560)
        self.finished.connect(self.deleteLater)

    def value(self, name: str) -> str:
        """The text of one row by its object name (what a test or a screen reader reads)."""
        field = self.findChild(QLabel, name)
        return field.text() if field is not None else ""
