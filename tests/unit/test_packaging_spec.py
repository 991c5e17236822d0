"""packaging/stockade.spec is ready for Windows and macOS builds (which cannot run here).

The spec is executed as PyInstaller would, with its build steps (Analysis, EXE, COLLECT,
BUNDLE) recording what they are given, for each target platform in turn.
"""

from __future__ import annotations

import plistlib
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "packaging" / "stockade.spec"


@dataclass
class _Analysis:
    scripts: list[Any] = field(default_factory=list)
    pure: list[Any] = field(default_factory=list)
    binaries: list[Any] = field(default_factory=list)
    datas: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Step:
    kind: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _run_spec(platform: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[_Step]:
    steps: list[_Step] = []

    def recorder(kind: str) -> Any:
        def step(*args: Any, **kwargs: Any) -> _Step:
            recorded = _Step(kind, args, kwargs)
            steps.append(recorded)
            return recorded
        return step

    def analysis(*args: Any, **kwargs: Any) -> _Analysis:
        steps.append(_Step("Analysis", args, kwargs))
        return _Analysis(kwargs=kwargs)

    hooks = types.ModuleType("PyInstaller.utils.hooks")
    hooks.collect_submodules = lambda package: [package]  # type: ignore[attr-defined]
    hooks.copy_metadata = lambda package: [(f"{package}.dist-info", ".")]  # type: ignore[attr-defined]
    bindepend = types.ModuleType("PyInstaller.depend.bindepend")
    bindepend.get_imports = lambda path: []  # type: ignore[attr-defined]
    stamp = tmp_path / "BUILD_INFO"
    stamp.write_text("version=0.1.0\nbuilt=2026-12-01T00:00:00Z\ncommit=abc\n", encoding="utf-8")
    namespace = {
        "SPECPATH": str(SPEC.parent), "Analysis": analysis, "PYZ": recorder("PYZ"),
        "EXE": recorder("EXE"), "COLLECT": recorder("COLLECT"), "BUNDLE": recorder("BUNDLE"),
        "__file__": str(SPEC),
    }
    code = compile(SPEC.read_text(encoding="utf-8"), str(SPEC), "exec")
    with monkeypatch.context() as patch:
        for name, module in (("PyInstaller", types.ModuleType("PyInstaller")),
                             ("PyInstaller.utils", types.ModuleType("PyInstaller.utils")),
                             ("PyInstaller.utils.hooks", hooks),
                             ("PyInstaller.depend", types.ModuleType("PyInstaller.depend")),
                             ("PyInstaller.depend.bindepend", bindepend)):
            patch.setitem(sys.modules, name, module)
        patch.setenv("STOCKADE_BUILD_INFO", str(stamp))
        patch.setattr(sys, "platform", platform)  # only while the spec itself runs
        exec(code, namespace)
    return steps


def _of(steps: list[_Step], kind: str) -> list[_Step]:
    return [step for step in steps if step.kind == kind]


def test_windows_build_is_a_windowed_app_with_the_icon_and_a_console_twin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _run_spec("win32", tmp_path, monkeypatch)
    exes = {step.kwargs["name"]: step.kwargs for step in _of(steps, "EXE")}
    assert set(exes) == {"Stockade", "stockade-cli"}
    assert exes["Stockade"]["console"] is False
    assert exes["stockade-cli"]["console"] is True
    for kwargs in exes.values():
        icon = Path(kwargs["icon"])
        assert icon.suffix == ".ico" and icon.is_file()
        assert kwargs["strip"] is False
    collect = _of(steps, "COLLECT")[0]
    assert len([a for a in collect.args if isinstance(a, _Step) and a.kind == "EXE"]) == 2
    assert _of(steps, "BUNDLE") == []


def test_macos_build_is_an_app_bundle_that_declares_thf_documents(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _run_spec("darwin", tmp_path, monkeypatch)
    (exe,) = _of(steps, "EXE")
    assert exe.kwargs["console"] is False
    assert exe.kwargs["argv_emulation"] is False  # Qt gets the open-document events itself
    (bundle,) = _of(steps, "BUNDLE")
    assert bundle.kwargs["name"] == "Stockade.app"
    assert Path(bundle.kwargs["icon"]).suffix == ".icns" and Path(bundle.kwargs["icon"]).is_file()
    plist = bundle.kwargs["info_plist"]
    plistlib.dumps(plist)  # every value is something an Info.plist can hold
    assert plist["CFBundleShortVersionString"] == "0.1.0"
    (document,) = plist["CFBundleDocumentTypes"]
    (declared,) = plist["UTImportedTypeDeclarations"]
    assert document["LSItemContentTypes"] == [declared["UTTypeIdentifier"]]
    assert document["CFBundleTypeRole"] == "Editor"
    tags = declared["UTTypeTagSpecification"]
    assert tags["public.filename-extension"] == ["thf"]
    assert tags["public.mime-type"] == ["application/x-thf+yaml"]


def test_linux_build_is_one_executable_with_the_network_module_for_the_handoff(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _run_spec("linux", tmp_path, monkeypatch)
    (exe,) = _of(steps, "EXE")
    assert exe.kwargs["name"] == "stockade"
    assert _of(steps, "BUNDLE") == []
    analysis = _of(steps, "Analysis")[0].kwargs
    assert "PySide6.QtNetwork" in analysis["hiddenimports"]
    assert "PySide6.QtNetwork" not in analysis["excludes"]
    assert "keyrings.alt" in analysis["excludes"]
