"""Wrap the one-folder bundle dist/stockade/ in a Debian package, with dpkg-deb and no network.

    python packaging/deb/build_deb.py BUNDLE BUILD_INFO OUT_DIR     (run by `packaging/build --deb`)

Layout: the bundle under /opt/stockade, /usr/bin/stockade a link to its executable, the desktop
entry, the icon in the hicolor theme (SVG and every PNG size), and the `application/x-thf+yaml`
type for `*.thf`. Nothing runs at install time: the desktop-file-utils, shared-mime-info and
hicolor-icon-theme packages refresh their caches from dpkg triggers on those folders.

Dependencies are read from the bundle rather than listed by hand. Every ELF file's DT_NEEDED
names are resolved as at run time (ldd, the bundle's folder searched first); the files nothing
else links (the executable, Python extensions, Qt plugins) are the roots. What the roots other
than the X11/desktop plugins (the xcb platform and its GL integrations, the portal theme, input
methods) reach is the core: the system libraries it links become Depends, mapped to packages
with `dpkg -S`, libc6 at the build machine's version. What only the desktop plugins reach is
optional, because `stockade validate` and offscreen screenshots run without it: the bundled
copies of system libraries among it (libxcb-cursor, libxkbcommon-x11, ...) are left out of the
package, and they and the system libraries the plugins link become Recommends. Debian then
keeps those X libraries updated; without them the commands still work and only the window
needs `apt install` of the Recommends.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINUX = ROOT / "packaging" / "linux"
ICONS = ROOT / "resources" / "icons"
PACKAGE = "stockade"
PREFIX = Path("opt") / "stockade"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
MAX_DEB_MB = 80
MAX_INSTALLED_MB = 200
DESKTOP_ONLY = re.compile(
    r"/plugins/(platforms/libqxcb|xcbglintegrations/|platformthemes/|platforminputcontexts/)"
    r"|/libQt6XcbQpa\.so"
)
# Present on every desktop that has the plugins above, and what the package's own files need
# to take effect (menu entry, file type, icon), but not needed to run the commands.
DESKTOP_RECOMMENDS = ("shared-mime-info", "desktop-file-utils", "hicolor-icon-theme")
# Parked runs and stored keys need a Secret Service provider; any one of these is enough.
SUGGESTS = "gnome-keyring | kwalletmanager | keepassxc"
DESCRIPTION = """\
Offline threat-model review with a governed AI assistant
 Stockade opens .thf threat models (YAML: elements, data flows, trust
 boundaries, threats, diagrams), shows them as a tree, a detail view and a
 data-flow diagram, and offers an AI assistant whose every edit is proposed,
 reviewed, authorized, metered, audited and undoable.
 .
 The stockade command also validates, formats and reports on models, and runs
 governed assistant turns headless."""


class DebError(Exception):
    """The package could not be built; the message says why."""


def _run(*args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    if result.returncode != 0:
        raise DebError(f"{args[0]} failed ({result.returncode}): {result.stderr.strip()[-600:]}")
    return result.stdout


def _stamp(build_info: Path) -> dict[str, str]:
    text = build_info.read_text(encoding="utf-8")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _is_elf(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


@dataclass
class _Binary:
    """One ELF file of the bundle: the libraries it names (DT_NEEDED) and where each resolves."""

    path: Path
    needed: list[str]
    resolved: dict[str, str]


def _scan(internal: Path, files: Iterable[Path]) -> dict[Path, _Binary]:
    # As at run time: the bundle's own folder is searched before the system's.
    env = dict(os.environ, LD_LIBRARY_PATH=str(internal))
    binaries: dict[Path, _Binary] = {}
    for path in files:
        dump = subprocess.run(["objdump", "-p", str(path)], capture_output=True, text=True,
                              check=False).stdout
        needed = re.findall(r"^\s*NEEDED\s+(\S+)", dump, re.MULTILINE)
        ldd = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=False,
                             env=env).stdout
        resolved = dict(re.findall(r"^\s*(\S+)\s+=>\s+(\S+)", ldd, re.MULTILINE))
        # The dynamic loader is listed by path alone: `/lib64/ld-linux-x86-64.so.2 (0x...)`.
        for loader in re.findall(r"^\s*(/\S+)\s+\(0x", ldd, re.MULTILINE):
            resolved.setdefault(os.path.basename(loader), loader)
        binaries[path.resolve()] = _Binary(path.resolve(), needed, resolved)
    return binaries


def _closure(roots: Iterable[Path], edges: dict[Path, set[Path]]) -> set[Path]:
    seen: set[Path] = set()
    todo = list(roots)
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return seen


def _system_copies(names: Iterable[str], multiarch_dir: str) -> dict[str, str]:
    """Library name -> the system's copy in the native library folder (`ldconfig -p`)."""
    wanted = set(names)
    listing = _run("/sbin/ldconfig", "-p")
    found: dict[str, str] = {}
    for name, path in re.findall(r"^\s*(\S+) \([^)]*\) => (\S+)", listing, re.MULTILINE):
        if name in wanted and os.path.dirname(os.path.realpath(path)) == multiarch_dir:
            found.setdefault(name, path)
    return found


def _owning_packages(paths: set[str]) -> dict[str, str]:
    """Library path -> Debian package (architecture qualifier dropped), via `dpkg -S`."""
    candidates: dict[str, str] = {}
    for path in paths:
        for variant in (path, os.path.realpath(path)):
            candidates.setdefault(variant, path)
            # merged /usr: the dpkg database may list either spelling
            other = variant[4:] if variant.startswith("/usr/") else "/usr" + variant
            candidates.setdefault(other, path)
    result = subprocess.run(["dpkg", "-S", *sorted(candidates)], capture_output=True,
                            text=True, check=False)
    owners: dict[str, str] = {}
    for line in result.stdout.splitlines():
        packages, _sep, owned = line.rpartition(": ")
        if owned in candidates:
            first = packages.split(",")[0].strip().split(":")[0]
            owners.setdefault(candidates[owned], first)
    unowned = sorted(p for p in paths if p not in owners)
    if unowned:
        raise DebError("no Debian package owns these libraries the bundle needs: "
                       + ", ".join(unowned))
    return owners


@dataclass
class Relationships:
    """What the package needs from Debian, and the bundled copies Debian's packages replace."""

    depends: list[str]
    recommends: list[str]
    unbundled: list[Path] = field(default_factory=list)


def relationships(opt_root: Path) -> Relationships:
    """Depends, Recommends and the desktop-only libraries to take from Debian (see the module
    docstring). `opt_root` is the staged copy of the bundle."""
    internal = opt_root / "_internal"
    files = [p for p in opt_root.rglob("*") if p.is_file() and not p.is_symlink() and _is_elf(p)]
    binaries = _scan(internal, files)
    bundle_root = opt_root.resolve()
    edges: dict[Path, set[Path]] = {}
    system_needs: dict[Path, set[str]] = {}
    missing: list[str] = []
    for binary in binaries.values():
        for name in binary.needed:
            target = binary.resolved.get(name)
            if target is None or target == "not":
                missing.append(f"{name} (needed by {binary.path.relative_to(bundle_root)})")
            elif Path(target).resolve().is_relative_to(bundle_root):
                edges.setdefault(binary.path, set()).add(Path(target).resolve())
            else:
                system_needs.setdefault(binary.path, set()).add(target)
    if missing:
        raise DebError("libraries neither bundled nor on the build machine: "
                       + "; ".join(sorted(set(missing))))
    # Roots: what nothing in the bundle links (the executable, Python extensions, Qt plugins).
    linked = set().union(*edges.values()) if edges else set()
    roots = [path for path in binaries if path not in linked]
    desktop_roots = [p for p in roots if DESKTOP_ONLY.search(p.as_posix())]
    core = _closure([p for p in roots if p not in desktop_roots], edges)
    desktop = _closure(desktop_roots, edges) - core

    # Copies of system libraries (PyInstaller put them at the top of _internal) that only the
    # desktop plugins use: the package takes Debian's instead, which get security updates.
    libc = binaries[(opt_root / "stockade").resolve()].resolved.get("libc.so.6", "")
    multiarch_dir = os.path.dirname(os.path.realpath(libc))
    candidates = {p.name: p for p in desktop if p.parent == internal.resolve()}
    system_copies = _system_copies(candidates, multiarch_dir)
    unbundled = [candidates[name] for name in sorted(system_copies)]
    for path in unbundled:
        # The bundled copy's own system needs are now its Debian package's business.
        system_needs.pop(path, None)

    core_libs = {lib for path in core for lib in system_needs.get(path, ())}
    desktop_libs = {lib for path in desktop for lib in system_needs.get(path, ())}
    desktop_libs |= set(system_copies.values())
    owners = _owning_packages(core_libs | desktop_libs)
    depends = {owners[p] for p in core_libs}
    recommends = {owners[p] for p in desktop_libs} - depends
    glibc = _run("dpkg-query", "-W", "-f=${Version}", "libc6").split("-")[0]
    depends.discard("libc6")
    return Relationships(
        depends=[f"libc6 (>= {glibc})", *sorted(depends)],
        recommends=[*sorted(recommends), *DESKTOP_RECOMMENDS],
        unbundled=unbundled,
    )


def _unresolved(opt_root: Path) -> list[str]:
    """Libraries a staged binary needs that neither the bundle nor this machine provides."""
    internal = opt_root / "_internal"
    env = dict(os.environ, LD_LIBRARY_PATH=str(internal))
    problems = []
    for path in opt_root.rglob("*"):
        if path.is_file() and not path.is_symlink() and _is_elf(path):
            ldd = subprocess.run(["ldd", str(path)], capture_output=True, text=True,
                                 check=False, env=env).stdout
            problems += [f"{name} ({path.relative_to(opt_root)})"
                         for name in re.findall(r"^\s*(\S+) => not found", ldd, re.MULTILINE)]
    return problems


def _maintainer() -> str:
    # DEBFULLNAME/DEBEMAIL: the variables Debian's own tools (dch, dh_make) read.
    name = os.environ.get("DEBFULLNAME", "Stockade developers")
    email = os.environ.get("DEBEMAIL", "stockade@invalid")
    return f"{name} <{email}>"


def _tree_kib(root: Path) -> int:
    """Installed-Size: KiB of the files (rounded up per file, as dpkg-gencontrol counts)."""
    total = 0
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file():
            total += 1
        else:
            total += (path.stat().st_size + 1023) // 1024
    return total


def _copyright(stamp: dict[str, str]) -> str:
    notice = (ROOT / "resources" / "NOTICE").read_text(encoding="utf-8")
    return f"""Stockade {stamp.get('version', '?')} (commit {stamp.get('commit', '?')})

Copyright: the Stockade developers
Stockade is licensed under the Apache License, Version 2.0; on Debian systems the full text
is in /usr/share/common-licenses/Apache-2.0.

/opt/stockade is a PyInstaller bundle. Besides Stockade it carries the Python {stamp.get('python', '')}
runtime (Python Software Foundation License), Qt 6 and PySide6 (GNU LGPL version 3, see
/usr/share/common-licenses/LGPL-3), and the Python packages listed in Stockade's pyproject.toml
under their own licences. The application icon was drawn for Stockade (Apache-2.0).

{notice}"""


def _changelog(stamp: dict[str, str]) -> bytes:
    """The one-entry changelog Debian policy asks for, dated at the build."""
    built = _dt.datetime.strptime(stamp.get("built", "1970-01-01T00:00:00Z"),
                                  "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.UTC)
    text = (f"{PACKAGE} ({stamp['version']}) unstable; urgency=medium\n\n"
            f"  * Built from commit {stamp.get('commit', '?')} by packaging/build --deb.\n\n"
            f" -- {_maintainer()}  {built.strftime('%a, %d %b %Y %H:%M:%S +0000')}\n")
    # mtime 0 and no file name in the header: the same stamp gives the same bytes.
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def stage(bundle: Path, stamp: dict[str, str], root: Path) -> None:
    """Lay out the installed tree under `root` (everything but DEBIAN/)."""
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(bundle, root / PREFIX, symlinks=True)
    (root / "usr" / "bin").mkdir(parents=True)
    # /usr/bin -> /opt crosses top-level folders: an absolute link (Debian policy 10.5).
    (root / "usr" / "bin" / "stockade").symlink_to(Path("/") / PREFIX / "stockade")
    share = root / "usr" / "share"
    (share / "applications").mkdir(parents=True)
    shutil.copy(LINUX / "stockade.desktop", share / "applications" / "stockade.desktop")
    (share / "mime" / "packages").mkdir(parents=True)
    shutil.copy(LINUX / "stockade-mime.xml", share / "mime" / "packages" / "stockade.xml")
    hicolor = share / "icons" / "hicolor"
    for size in PNG_SIZES:
        target = hicolor / f"{size}x{size}" / "apps"
        target.mkdir(parents=True)
        shutil.copy(ICONS / f"stockade-{size}.png", target / "stockade.png")
    (hicolor / "scalable" / "apps").mkdir(parents=True)
    shutil.copy(ICONS / "stockade.svg", hicolor / "scalable" / "apps" / "stockade.svg")
    doc = share / "doc" / PACKAGE
    doc.mkdir(parents=True)
    (doc / "copyright").write_text(_copyright(stamp), encoding="utf-8")
    # A native package (the version has no Debian revision): changelog.gz, not .Debian.gz.
    (doc / "changelog.gz").write_bytes(_changelog(stamp))
    for path in root.rglob("*"):
        if not path.is_symlink():
            # dpkg-deb keeps modes as they are: folders and programs 0755, everything else
            # (shared libraries too: the loader maps them, nothing executes them) 0644.
            library = ".so" in path.name
            executable = path.is_dir() or (path.stat().st_mode & 0o111 and not library)
            path.chmod(0o755 if executable else 0o644)


def control(stamp: dict[str, str], depends: list[str], recommends: list[str],
            installed_kib: int, architecture: str) -> str:
    fields = {
        "Package": PACKAGE,
        "Version": stamp["version"],
        "Architecture": architecture,
        "Maintainer": _maintainer(),
        "Installed-Size": str(installed_kib),
        "Depends": ", ".join(depends),
        "Recommends": ", ".join(recommends),
        "Suggests": SUGGESTS,
        "Section": "utils",
        "Priority": "optional",
        "Description": DESCRIPTION,
    }
    return "".join(f"{key}: {value}\n" for key, value in fields.items())


def md5sums(root: Path) -> str:
    """DEBIAN/md5sums: every installed file (not the control files themselves)."""
    lines = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.parts[len(root.parts)] != "DEBIAN":
            digest = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
            lines.append(f"{digest}  {path.relative_to(root).as_posix()}\n")
    return "".join(lines)


def build(bundle: Path, build_info: Path, out_dir: Path, work: Path) -> Path:
    if shutil.which("dpkg-deb") is None:
        raise DebError("dpkg-deb is not installed (it comes with dpkg on Debian and Ubuntu)")
    if not (bundle / "stockade").is_file():
        raise DebError(f"no bundle at {bundle}; run packaging/build first")
    stamp = _stamp(build_info)
    architecture = _run("dpkg", "--print-architecture").strip()
    root = work / "root"
    stage(bundle, stamp, root)
    needs = relationships(root / PREFIX)
    for path in needs.unbundled:
        path.unlink()
    problems = _unresolved(root / PREFIX)
    if problems:
        raise DebError("after taking the desktop libraries from Debian, these do not resolve: "
                       + ", ".join(problems))
    installed_kib = _tree_kib(root)
    if installed_kib >= MAX_INSTALLED_MB * 1024:
        raise DebError(f"the installed tree would be {installed_kib // 1024} MB, over the "
                       f"{MAX_INSTALLED_MB} MB limit")
    debian = root / "DEBIAN"
    debian.mkdir()
    (debian / "control").write_text(
        control(stamp, needs.depends, needs.recommends, installed_kib, architecture),
        encoding="utf-8")
    (debian / "md5sums").write_text(md5sums(root), encoding="utf-8")
    for path in debian.iterdir():
        path.chmod(0o644)
    out_dir.mkdir(parents=True, exist_ok=True)
    deb = out_dir / f"{PACKAGE}_{stamp['version']}_{architecture}.deb"
    # The commit's time for every file, so the same commit gives the same package contents.
    env = dict(os.environ)
    if "SOURCE_DATE_EPOCH" not in env:
        commit_time = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%ct"],
                                     capture_output=True, text=True, check=False).stdout.strip()
        if commit_time.isdigit():
            env["SOURCE_DATE_EPOCH"] = commit_time
    _run("dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(root), str(deb), env=env)
    size_mb = deb.stat().st_size / (1024 * 1024)
    if size_mb >= MAX_DEB_MB:
        raise DebError(f"{deb.name} is {size_mb:.1f} MB, over the {MAX_DEB_MB} MB limit")
    print(f"packaging/build: taken from Debian instead of bundled: "
          f"{', '.join(p.name for p in needs.unbundled) or 'nothing'}")
    shutil.rmtree(root)
    return deb


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    bundle, build_info, out_dir = (Path(a).resolve() for a in argv)
    work = ROOT / "build" / "deb"
    try:
        deb = build(bundle, build_info, out_dir, work)
    except DebError as err:
        print(f"packaging/build: FAILED: {err}", file=sys.stderr)
        return 1
    info = _run("dpkg-deb", "--field", str(deb), "Installed-Size", "Depends", "Recommends")
    print(f"packaging/build: {deb.name}: {deb.stat().st_size / (1024 * 1024):.1f} MB")
    for line in info.splitlines():
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
