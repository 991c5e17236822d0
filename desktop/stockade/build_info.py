"""The version line `stockade --version` prints: package version plus the packaged build stamp."""

from __future__ import annotations

from stockade import __version__
from stockade.paths import resources_dir

BUILD_INFO_FILE = "BUILD_INFO"
"""Written into a packaged build's resources by `packaging/build`; absent in a source tree."""


def build_stamp() -> dict[str, str] | None:
    """The packaged build's stamp (`version`, `built`, `commit`, `platform`, `python`), or None
    when Stockade runs from a source tree."""
    try:
        text = (resources_dir() / BUILD_INFO_FILE).read_text(encoding="utf-8")
    except OSError:
        return None
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def version_line() -> str:
    """`stockade <version> (built …, commit …)` for a packaged build, else a source-run note."""
    fields = build_stamp()
    if fields is None:
        return f"stockade {__version__} (run from source, not a packaged build)"
    return (
        f"stockade {fields.get('version', __version__)} "
        f"(built {fields.get('built', '?')}, commit {fields.get('commit', '?')}, "
        f"{fields.get('platform', '?')}, Python {fields.get('python', '?')})"
    )
