"""Write the build stamp (resources/BUILD_INFO in a bundle) and the checksums of a build.

    python packaging/write_stamp.py stamp build/BUILD_INFO     version, time, commit, platform
    python packaging/write_stamp.py checksums dist             dist/SHA256SUMS of every file

Plain Python so the same steps run on Linux, macOS and Windows (packaging/build calls both;
docs/packaging.md gives the commands for a build by hand). The commit gets `+dirty` when
desktop/, resources/ or packaging/ differ from it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import platform
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKSUMS = "SHA256SUMS"


def _commit() -> str:
    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=False)

    head = git("rev-parse", "--short=12", "HEAD")
    if head.returncode != 0:
        return "unknown"
    dirty = git("diff", "--quiet", "HEAD", "--", "desktop", "resources", "packaging")
    return head.stdout.strip() + ("+dirty" if dirty.returncode != 0 else "")


def write_stamp(path: Path) -> str:
    built = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = (f"version={version('stockade')}\nbuilt={built}\ncommit={_commit()}\n"
            f"platform={platform.system()}-{platform.machine()}\n"
            f"python={platform.python_version()}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")
    return text


def write_checksums(folder: Path) -> Path:
    """`sha256sum -c` format, paths relative to `folder`, sorted, symlinks not followed."""
    target = folder / CHECKSUMS
    lines = []
    for path in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix()):
        if path.is_symlink() or not path.is_file() or path == target:
            continue
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        lines.append(f"{digest.hexdigest()}  {path.relative_to(folder).as_posix()}\n")
    target.write_text("".join(lines), encoding="utf-8", newline="\n")
    return target


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "stamp":
        print(write_stamp(Path(argv[1])), end="")
        return 0
    if len(argv) == 2 and argv[0] == "checksums":
        target = write_checksums(Path(argv[1]))
        print(f"{target} ({sum(1 for _ in target.open(encoding='utf-8'))} files)")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
