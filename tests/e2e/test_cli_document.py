"""End-to-end: `stockade validate`, `fmt` and `report` through the real console script."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stockade.cli import main as cli_main
from tests.conftest import THF_FIXTURES
from tests.e2e.conftest import REPO_ROOT, cli_env, run_cli

SAMPLES = REPO_ROOT / "resources" / "samples"

VALID_FIXTURES = (
    "v1.0-minimal.thf",
    "v1.0-canonical-full.thf",
    "v1.0-unknown-fields.thf",
    "v1.0-browser-roundtrip.thf",
    "legacy-sidecar/model.thf",
    "architecture-canonical-full.thf",
    "architecture-only.thf",
    "e2e/large-model.thf",
)

# MANIFEST.md, "Invalid fixtures": Stockade's code for the reference's error class, plus the
# structured fields and, where the manifest pins it, the exact message.
INVALID_FIXTURES: dict[str, dict[str, Any]] = {
    "invalid/unsupported-version.thf": {
        "code": "unsupported_version",
        "message": "Unsupported schema version '2.0'. Supported versions: [\"1.0\"]",
    },
    "invalid/duplicate-element-id.thf": {
        "code": "duplicate_id",
        "id": "app",
        "section": "elements",
        "message": "Duplicate ID 'app' in section 'elements'",
    },
    "invalid/unknown-flow-target.thf": {
        "code": "invalid_reference",
        "field": "data_flows[flow-1].to",
        "reference": "missing-db",
        "message": "Invalid reference in 'data_flows[flow-1].to': 'missing-db' not found. "
        'Valid IDs: ["app"]',
    },
    "invalid/truncated.thf": {"code": "parse"},
    "invalid/missing-metadata.thf": {"code": "missing_section"},
    "invalid/duplicate-layer-id.thf": {
        "code": "duplicate_id",
        "id": "data",
        "section": "layers",
        "message": "Duplicate ID 'data' in section 'layers'",
    },
    "invalid/duplicate-group-id.thf": {
        "code": "duplicate_id",
        "id": "cluster",
        "section": "groups",
        "message": "Duplicate ID 'cluster' in section 'groups'",
    },
    "invalid/duplicate-relationship-id.thf": {
        "code": "duplicate_id",
        "id": "rel-1",
        "section": "relationships",
        "message": "Duplicate ID 'rel-1' in section 'relationships'",
    },
    "invalid/group-id-collides-with-element.thf": {
        "code": "duplicate_id",
        "id": "web-app",
        "section": "groups",
        "message": "Duplicate ID 'web-app' in section 'groups'",
    },
    "invalid/relationship-id-collides-with-flow.thf": {
        "code": "duplicate_id",
        "id": "flow-1",
        "section": "relationships",
        "message": "Duplicate ID 'flow-1' in section 'relationships'",
    },
    "invalid/unknown-element-layer.thf": {
        "code": "invalid_reference",
        "field": "elements[app].layer",
        "reference": "presentation",
        "message": "Invalid reference in 'elements[app].layer': 'presentation' not found. "
        'Valid IDs: ["data"]',
    },
    "invalid/unknown-element-group.thf": {
        "code": "invalid_reference",
        "field": "elements[app].group",
        "reference": "backend",
        "message": "Invalid reference in 'elements[app].group': 'backend' not found. "
        'Valid IDs: ["frontend"]',
    },
    "invalid/unknown-group-parent.thf": {
        "code": "invalid_reference",
        "field": "groups[cluster-1].parent",
        "reference": "missing-cluster",
        "message": "Invalid reference in 'groups[cluster-1].parent': 'missing-cluster' not "
        'found. Valid IDs: ["cluster-1"]',
    },
    "invalid/unknown-relationship-endpoint.thf": {
        "code": "invalid_reference",
        "field": "relationships[rel-1].to",
        "reference": "missing-service",
        "message": "Invalid reference in 'relationships[rel-1].to': 'missing-service' not "
        'found. Valid IDs: ["app"]',
    },
    "invalid/circular-group-nesting.thf": {
        "code": "circular_group_nesting",
        "id": "group-a",
        "message": "Circular group nesting detected at group 'group-a'",
    },
}

ERROR_KEYS = {"code", "message", "section", "id", "field", "reference", "suggestion"}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """An empty folder of its own (tmp_path also holds the test's data folder)."""
    path = tmp_path / "work"
    path.mkdir()
    return path


def _copy(name: str, folder: Path) -> Path:
    target = folder / Path(name).name
    shutil.copyfile(THF_FIXTURES / name, target)
    return target


def _assert_one_plain_line(stderr: str) -> None:
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr


# --- validate ---------------------------------------------------------------------------------


def test_fixture_tables_cover_every_fixture_file() -> None:
    on_disk = {p.relative_to(THF_FIXTURES).as_posix() for p in THF_FIXTURES.rglob("*.thf")}
    assert on_disk == set(VALID_FIXTURES) | set(INVALID_FIXTURES)


def test_validate_json_gives_the_manifest_outcome_for_every_fixture() -> None:
    names = [*VALID_FIXTURES, *INVALID_FIXTURES]
    result = run_cli("validate", "--json", *names, cwd=THF_FIXTURES)
    assert result.returncode == 1, result.stderr
    entries = json.loads(result.stdout)
    assert [e["path"] for e in entries] == [str(Path(n)) for n in names]
    for entry, name in zip(entries, names, strict=True):
        assert set(entry) == {"path", "ok", "error", "warnings"}
        if name in VALID_FIXTURES:
            assert entry == {"path": str(Path(name)), "ok": True, "error": None, "warnings": []}, name
            continue
        expected = INVALID_FIXTURES[name]
        assert entry["ok"] is False, name
        assert set(entry["error"]) == ERROR_KEYS, name
        for key, value in expected.items():
            assert entry["error"][key] == value, (name, key)
        assert str(THF_FIXTURES) not in entry["error"]["message"]


def test_validate_valid_files_exits_zero_with_one_count_line_per_file() -> None:
    result = run_cli(
        "validate", "v1.0-canonical-full.thf", "architecture-only.thf", cwd=THF_FIXTURES
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "v1.0-canonical-full.thf: ok (5 elements, 3 flows, 3 threats)",
        "architecture-only.thf: ok (2 elements, 0 flows, 0 threats)",
    ]


def test_validate_invalid_file_prints_code_and_message_and_exits_one() -> None:
    result = run_cli("validate", "invalid/duplicate-element-id.thf", cwd=THF_FIXTURES)
    assert result.returncode == 1
    assert result.stdout.strip() == (
        "invalid/duplicate-element-id.thf: duplicate_id: Duplicate ID 'app' in section 'elements'"
    )
    assert "Traceback" not in result.stderr


def test_validate_missing_file_is_a_usage_error(work: Path) -> None:
    result = run_cli("validate", str(work / "nope.thf"))
    assert result.returncode == 2
    _assert_one_plain_line(result.stderr)
    assert "nope.thf" in result.stderr


@pytest.mark.parametrize(
    "args",
    [("validate",), ("validate", "--frobnicate", "x.thf"), ("fmt",), ("report", "x.thf")],
    ids=["no-files", "unknown-option", "fmt-no-files", "report-no-output"],
)
def test_argument_errors_exit_two_with_one_line(args: tuple[str, ...]) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    _assert_one_plain_line(result.stderr)
    assert result.stderr.startswith(f"stockade {args[0]}: ")
    assert result.stdout == ""


def test_help_lists_the_document_commands() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("validate", "fmt", "report"):
        assert command in result.stdout


def test_app_mode_rejects_an_unknown_tab_as_usage_error() -> None:
    result = run_cli("model.thf", "--tab", "nonsense")
    assert result.returncode == 2
    _assert_one_plain_line(result.stderr)


def test_python_dash_m_entry_point_runs_the_same_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "stockade.cli.main", "validate", "v1.0-minimal.thf"],
        cwd=THF_FIXTURES,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("v1.0-minimal.thf: ok (1 element, 0 flows, 0 threats)")


# --- fmt --------------------------------------------------------------------------------------


def test_fmt_check_on_a_non_canonical_file_exits_one_and_changes_nothing(work: Path) -> None:
    path = _copy("v1.0-minimal.thf", work)
    before = path.read_bytes()
    stat_before = path.stat()
    result = run_cli("fmt", "--check", str(path))
    assert result.returncode == 1
    assert "not canonical" in result.stdout
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == stat_before.st_mtime_ns
    assert sorted(work.iterdir()) == [path]


def test_fmt_rewrites_atomically_keeps_unknown_fields_and_is_then_canonical(
    work: Path,
) -> None:
    from stockade.thf.reader import read_file

    path = _copy("v1.0-unknown-fields.thf", work)
    original = read_file(path)
    inode_before = path.stat().st_ino
    result = run_cli("fmt", "--json", str(path))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        {"path": str(path), "status": "reformatted", "error": None}
    ]
    text = path.read_text(encoding="utf-8")
    for reserved in ("unknown_future_section", "unknown_future_flag", "unknown_future_note"):
        assert reserved in text
    assert read_file(path) == original
    # Replaced by rename, not rewritten in place, and no temporary file left behind.
    assert path.stat().st_ino != inode_before
    assert sorted(work.iterdir()) == [path]
    again = run_cli("fmt", "--check", str(path))
    assert again.returncode == 0, again.stdout
    assert "already canonical" in again.stdout


def test_fmt_reports_an_invalid_file_and_leaves_it_untouched(work: Path) -> None:
    good = _copy("v1.0-minimal.thf", work)
    bad = _copy("invalid/truncated.thf", work)
    bad_before = bad.read_bytes()
    result = run_cli("fmt", "--json", str(bad), str(good))
    assert result.returncode == 1
    entries = json.loads(result.stdout)
    assert entries[0]["path"] == str(bad)
    assert entries[0]["status"] == "invalid"
    assert entries[0]["error"]["code"] == "parse"
    assert entries[1] == {"path": str(good), "status": "reformatted", "error": None}
    assert bad.read_bytes() == bad_before


def test_every_starter_template_is_valid_and_canonical() -> None:
    paths = sorted(SAMPLES.glob("*.thf"))
    assert len(paths) == 6
    check = run_cli("fmt", "--check", "--json", *map(str, paths))
    assert check.returncode == 0, check.stdout
    assert {e["status"] for e in json.loads(check.stdout)} == {"unchanged"}


# --- report -----------------------------------------------------------------------------------


def test_report_writes_html_csv_and_json_by_suffix(work: Path) -> None:
    source = THF_FIXTURES / "v1.0-canonical-full.thf"
    outputs = {fmt: work / f"report.{fmt}" for fmt in ("html", "csv", "json")}
    for fmt, out in outputs.items():
        result = run_cli("report", str(source), "-o", str(out))
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"wrote {out} ({fmt}:")
    page = outputs["html"].read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "Payment Processing Service" in page
    assert "<script" not in page.lower()
    rows = list(csv.DictReader(io.StringIO(outputs["csv"].read_text(encoding="utf-8"))))
    assert [r["id"] for r in rows] == ["threat-1", "threat-2", "threat-3"]
    data = json.loads(outputs["json"].read_text(encoding="utf-8"))
    assert data["counts"]["threats"] == 3
    assert data["threats"][2]["target"]["element"] == {"id": "web-app", "name": "Web Application"}
    assert sorted(p.name for p in work.iterdir()) == [
        "report.csv",
        "report.html",
        "report.json",
    ]


def test_report_json_flag_prints_a_summary_document(work: Path) -> None:
    out = work / "r.html"
    result = run_cli("report", "--json", str(SAMPLES / "mobile-banking.thf"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["ok"] is True
    assert summary["format"] == "html"
    assert summary["error"] is None
    assert summary["counts"]["elements"] == 12
    assert summary["counts"]["threats"] == 5


def test_report_with_an_unknown_suffix_is_a_usage_error_and_writes_nothing(work: Path) -> None:
    out = work / "report.docx"
    result = run_cli("report", str(THF_FIXTURES / "v1.0-minimal.thf"), "-o", str(out))
    assert result.returncode == 2
    _assert_one_plain_line(result.stderr)
    assert ".docx" in result.stderr
    assert not out.exists()


def test_report_of_an_invalid_document_exits_one_and_writes_nothing(work: Path) -> None:
    out = work / "report.html"
    result = run_cli(
        "report", "--json", str(THF_FIXTURES / "invalid/circular-group-nesting.thf"), "-o", str(out)
    )
    assert result.returncode == 1
    body = json.loads(result.stdout)
    assert body["ok"] is False
    assert body["error"]["code"] == "circular_group_nesting"
    assert not out.exists()


# --- entry point behaviour (in-process) -------------------------------------------------------


def test_unexpected_exception_prints_one_line_and_logs_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stockade_home: Path
) -> None:
    from stockade.cli import validate

    def explode(args: object) -> int:
        raise RuntimeError("boom in validate")

    monkeypatch.setattr(validate, "run", explode)
    code = cli_main.main(["validate", str(THF_FIXTURES / "v1.0-minimal.thf")])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.startswith("stockade: internal error: RuntimeError: boom in validate")
    assert "Traceback" not in captured.err
    log_file = stockade_home / "logs" / "cli.log"
    assert str(log_file) in captured.err
    logged = log_file.read_text(encoding="utf-8")
    assert "Traceback" in logged
    assert "boom in validate" in logged


def test_an_unexpected_exception_never_prints_or_logs_a_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stockade_home: Path
) -> None:
    from stockade.cli import validate

    key = "sk-ant-api03-" + "Ab3" * 20

    def explode(args: object) -> int:
        raise RuntimeError(f"request failed with key {key}")

    monkeypatch.setattr(validate, "run", explode)
    monkeypatch.setattr(sys, "argv", ["stockade", "validate", key])
    code = cli_main.main(["validate", str(THF_FIXTURES / "v1.0-minimal.thf")])
    captured = capsys.readouterr()
    assert code == 1
    assert "request failed with key" in captured.err and key not in captured.err
    logged = (stockade_home / "logs" / "cli.log").read_text(encoding="utf-8")
    assert "request failed with key" in logged and key not in logged
    assert "sk-ant" not in logged


def test_a_missing_subcommand_module_is_skipped_but_a_broken_one_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib

    real_import = importlib.import_module

    def fake_import(name: str, package: str | None = None) -> Any:
        if name == "stockade.cli.audit":
            raise ModuleNotFoundError("No module named 'stockade.cli.audit'", name=name)
        if name == "stockade.cli.runs":
            raise ModuleNotFoundError("No module named 'sqlcipher'", name="sqlcipher")
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", fake_import)
    with pytest.raises(ModuleNotFoundError) as info:
        cli_main._import_command("runs")
    assert info.value.name == "sqlcipher"
    assert cli_main._import_command("audit") is None
    assert cli_main._import_command("validate") is not None


def test_a_command_missing_from_this_build_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_main, "_import_command", lambda name: None)
    assert cli_main.main(["audit", "verify"]) == 2
    assert "not available" in capsys.readouterr().err


def test_exit_codes_match_the_command_line_contract() -> None:
    from stockade.cli.common import ExitCode

    assert [int(c) for c in ExitCode] == [0, 1, 2, 3]


def test_app_mode_hands_file_screenshot_and_tab_to_the_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import types

    calls: list[tuple[Any, ...]] = []
    fake = types.ModuleType("stockade.ui.app")

    def run_app(file: str | None, *, screenshot: str | None, tab: str | None) -> int:
        calls.append((file, screenshot, tab))
        return 0

    fake.run_app = run_app  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "stockade.ui.app", fake)
    assert cli_main.main(["model.thf", "--screenshot", "out.png", "--tab", "diagram"]) == 0
    assert cli_main.main([]) == 0
    assert calls == [("model.thf", "out.png", "diagram"), (None, None, None)]


def test_app_mode_without_the_desktop_app_says_so_and_exits_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib

    real_import = importlib.import_module

    def no_ui(name: str, package: str | None = None) -> Any:
        if name == "stockade.ui.app":
            raise ModuleNotFoundError("No module named 'PySide6'", name="PySide6")
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", no_ui)
    assert cli_main.main(["model.thf"]) == 1
    err = capsys.readouterr().err
    assert "desktop app is not available" in err
    assert "Traceback" not in err


def test_version_names_the_release_and_says_when_it_is_not_a_packaged_build() -> None:
    import stockade

    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.startswith(f"stockade {stockade.__version__} ")
    assert "not a packaged build" in result.stdout



@pytest.mark.parametrize(("command", "options", "suffix"), [
    ("report", (), ".html"),
    ("diagram", (), ".svg"),
    ("export", ("--format", "otm"), ".json"),
])
def test_a_file_writing_command_refuses_an_output_it_cannot_write_before_any_work(
    tmp_path: Path, command: str, options: tuple[str, ...], suffix: str
) -> None:
    model = tmp_path / "model.thf"
    shutil.copy(THF_FIXTURES / "v1.0-canonical-full.thf", model)
    missing = tmp_path / "no-such-folder" / f"out{suffix}"
    result = run_cli(command, model, *options, "-o", missing)
    assert result.returncode == 2
    assert f"{command}: no such folder for the output: {missing.parent}" in result.stderr
    taken = tmp_path / f"taken{suffix}"
    taken.mkdir()
    result = run_cli(command, model, *options, "-o", taken)
    assert result.returncode == 2
    assert f"{command}: the output is a folder: {taken}" in result.stderr
    written = {p.name for p in tmp_path.iterdir()} - {"stockade-home"}
    assert written == {"model.thf", f"taken{suffix}"} and not any(taken.iterdir())


def test_import_refuses_an_output_it_cannot_write_before_reading_the_source(
    tmp_path: Path,
) -> None:
    source = REPO_ROOT / "tests/fixtures/foreign/otm/iriusrisk-OpenThreatModel/EXAMPLE.json"
    result = run_cli("import", source, "-o", tmp_path / "model.yaml")
    assert result.returncode == 2
    assert "import: name the output .thf:" in result.stderr
    result = run_cli("import", source, "-o", tmp_path / "missing" / "model.thf")
    assert result.returncode == 2
    assert f"import: no such folder for the output: {tmp_path / 'missing'}" in result.stderr
    assert {p.name for p in tmp_path.iterdir()} <= {"stockade-home"}
