"""End-to-end: `stockade import`, `export`, and `validate`/`fmt` beside ThreatForge, as processes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, THF_FIXTURES
from tests.e2e.conftest import REPO_ROOT, run_cli

FOREIGN = FIXTURES / "foreign"
TD_SAMPLE = FOREIGN / "threat-dragon/td.vue/src/service/demo/three-tier-web-app.json"
TM7_ZIP = (
    FOREIGN / "tm7/iriusrisk-startleft/startleft/tests/resources/mtmt/mtmt-invalid-format-zip.tm7"
)
CANONICAL = ("v1.0-canonical-full.thf", "architecture-canonical-full.thf", "architecture-only.thf")


def test_import_json_reports_format_counts_and_warnings_and_writes_a_valid_file(
    tmp_path: Path,
) -> None:
    out = tmp_path / "three-tier.thf"
    result = run_cli("import", TD_SAMPLE, "-o", out, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {"source", "format", "output", "counts", "warnings"} <= set(report)
    assert report["format"] == "threat-dragon"
    assert report["counts"] == {"elements": 4, "data_flows": 4, "trust_boundaries": 2, "threats": 2}
    assert [w["code"] for w in report["warnings"]] == ["bidirectional_split"]
    check = run_cli("validate", "--strict", out)
    assert check.returncode == 0, check.stdout
    assert run_cli("fmt", "--check", out).returncode == 0


def test_import_of_a_broken_source_exits_one_with_one_line_and_writes_nothing(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.thf"
    out.write_text("keep me")
    result = run_cli("import", TM7_ZIP, "-o", out)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert "Microsoft Threat Modeling Tool (TM7)" in line and "zip archive" in line
    assert "Traceback" not in result.stderr
    assert out.read_text() == "keep me"


@pytest.mark.parametrize(
    "args",
    [
        ("import", "missing.json", "-o", "x.thf"),
        ("import", str(TD_SAMPLE), "-o", "x.txt"),
        ("import", str(TD_SAMPLE), "-o", "x.thf", "--format", "visio"),
        ("export", "x.thf", "-o", "y.json"),
    ],
)
def test_import_and_export_usage_errors_exit_two(args: tuple[str, ...], tmp_path: Path) -> None:
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_export_then_import_keeps_the_counts_for_both_formats(tmp_path: Path) -> None:
    sample = REPO_ROOT / "resources/samples/ecommerce-platform.thf"
    before = json.loads(run_cli("report", sample, "-o", tmp_path / "r.json", "--json").stdout)
    for fmt in ("otm", "threat-dragon"):
        exported = tmp_path / f"out.{fmt}.json"
        result = run_cli("export", sample, "-o", exported, "--format", fmt, "--json")
        assert result.returncode == 0, result.stderr
        back = json.loads(
            run_cli("import", exported, "-o", tmp_path / f"{fmt}.thf", "--json").stdout
        )
        assert back["format"] == fmt
        counts = {k: before["counts"][k] for k in back["counts"]}
        assert back["counts"] == counts


def test_validate_names_a_foreign_file_and_how_to_import_it() -> None:
    result = run_cli("validate", "--json", TD_SAMPLE)
    assert result.returncode == 1
    (entry,) = json.loads(result.stdout)
    assert entry["error"]["code"] == "foreign_format"
    assert "OWASP Threat Dragon (version 2.3.0)" in entry["error"]["message"]
    assert "stockade import" in entry["error"]["message"]


def test_threatforge_canonical_files_pass_fmt_check_and_fmt_keeps_their_bytes(
    tmp_path: Path,
) -> None:
    copies = []
    for name in CANONICAL:
        copies.append(tmp_path / name)
        shutil.copy(THF_FIXTURES / name, copies[-1])
    assert run_cli("fmt", "--check", *copies).returncode == 0
    assert run_cli("fmt", *copies).returncode == 0
    for name, copy in zip(CANONICAL, copies, strict=True):
        assert copy.read_bytes() == (THF_FIXTURES / name).read_bytes()


def test_validate_strict_fails_on_an_uppercase_severity_and_passes_a_clean_file(
    tmp_path: Path,
) -> None:
    clean = THF_FIXTURES / "v1.0-canonical-full.thf"
    shouting = tmp_path / "shouting.thf"
    shouting.write_text(clean.read_text().replace("severity: high", "severity: High"))
    assert run_cli("validate", "--strict", clean).returncode == 0
    lenient = run_cli("validate", "--json", shouting)
    assert lenient.returncode == 0
    (entry,) = json.loads(lenient.stdout)
    assert entry["ok"] is True
    assert [(w["code"], w["field"]) for w in entry["warnings"]] == [
        ("severity_case", "threats[threat-1].severity")
    ]
    assert set(entry["warnings"][0]) == {"code", "message", "section", "id", "field"}
    strict = run_cli("validate", "--strict", shouting)
    assert strict.returncode == 1
    assert "fails --strict" in strict.stdout and "severity_case" in strict.stdout


def test_null_sections_open_as_empty_and_fmt_writes_empty_lists(tmp_path: Path) -> None:
    doc = tmp_path / "nulls.thf"
    doc.write_text(
        "version: '1.0'\nmetadata:\n  title: T\n  author: A\n  created: 2026-01-01\n"
        "  modified: 2026-01-01\nelements:\ndata_flows:\nthreats:\ntrust_boundaries:\ndiagrams:\n"
    )
    assert run_cli("validate", doc).returncode == 0
    assert run_cli("fmt", doc).returncode == 0
    text = doc.read_text()
    for section in ("elements", "data_flows", "trust_boundaries", "threats", "diagrams"):
        assert f"\n{section}: []\n" in text


def test_validate_adds_a_did_you_mean_line_for_a_broken_reference(tmp_path: Path) -> None:
    doc = tmp_path / "typo.thf"
    text = (THF_FIXTURES / "v1.0-canonical-full.thf").read_text()
    doc.write_text(text.replace("  to: payment-db\n", "  to: payment-bd\n", 1))
    result = run_cli("validate", doc)
    assert result.returncode == 1
    lines = result.stdout.strip().splitlines()
    assert "Invalid reference in" in lines[0] and "'payment-bd' not found" in lines[0]
    assert lines[1].endswith("hint: Did you mean 'payment-db'?")
