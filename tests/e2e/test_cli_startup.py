"""Start-up of the command line: `stockade --help` is built without importing any subcommand
module, and the summaries it shows are exactly those the modules register."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from stockade.cli import main as cli_main


def test_each_summary_is_the_help_its_module_registers() -> None:
    for name, summary in cli_main.COMMAND_SUMMARIES.items():
        module = importlib.import_module(f"stockade.cli.{cli_main.COMMAND_MODULES.get(name, name)}")
        subparsers = argparse.ArgumentParser().add_subparsers()
        module.add_parser(subparsers)
        (action,) = subparsers._choices_actions
        assert (action.dest, action.help) == (name, summary)


def test_help_lists_every_command_with_its_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["--help"]) == 0
    words = " ".join(capsys.readouterr().out.split())  # argparse wraps long summaries
    for name, summary in cli_main.COMMAND_SUMMARIES.items():
        assert f" {name} {summary}" in words, name


def test_help_leaves_out_a_command_missing_from_this_build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_main, "_command_available", lambda name: name != "audit")
    assert cli_main.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "validate" in out and "verify or export the audit trajectory" not in out


def _modules_after(argv: list[str]) -> set[str]:
    code = (
        "import json, sys\n"
        "from stockade.cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "finally:\n"
        "    print('MODULES=' + json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES="))
    return set(json.loads(line.removeprefix("MODULES=")))


def test_help_imports_no_subcommand_module_and_no_document_model() -> None:
    loaded = _modules_after(["--help"])
    modules = {f"stockade.cli.{cli_main.COMMAND_MODULES.get(n, n)}" for n in cli_main.COMMANDS}
    assert not modules & loaded
    assert "pydantic" not in loaded and "stockade.thf" not in loaded


def test_validate_imports_neither_governance_nor_providers_nor_tools() -> None:
    loaded = _modules_after(["validate", "--help"])
    assert "stockade.cli.validate" in loaded
    for package in ("stockade.governance", "stockade.providers", "stockade.loop",
                    "stockade.tools", "stockade.store", "anthropic", "openai"):
        assert package not in loaded, package


def test_validate_of_a_valid_file_builds_no_document_model(tmp_path: Path) -> None:
    valid = tmp_path / "tiny.thf"
    valid.write_text(
        'version: "1.0"\nmetadata:\n  title: Tiny\n  author: me\n  created: 2026-01-01\n'
        "  modified: 2026-01-01\nelements:\n  - id: a\n    type: process\n    name: A\n",
        encoding="utf-8",
    )
    loaded = _modules_after(["validate", str(valid)])
    # `dataclasses` imports `inspect` (and with it `ast`, `dis`, `tokenize`): about 5 ms of a
    # 120 ms process here, so the records on this path are named tuples.
    for module in ("pydantic", "stockade.thf.model", "stockade.thf.writer", "yaml",
                   "dataclasses", "inspect"):
        assert module not in loaded, module
    # An invalid one is read the full way, for its exact message.
    invalid = tmp_path / "bad.thf"
    invalid.write_text(valid.read_text(encoding="utf-8").replace("name: A", "name: [A]"), "utf-8")
    assert "stockade.thf.model" in _modules_after(["validate", str(invalid)])
