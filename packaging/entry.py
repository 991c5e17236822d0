"""Entry point of the packaged `stockade` executable: `--version`, then the normal command line."""

from __future__ import annotations

import sys


def _build_info() -> str:
    """The version stamp `packaging/build` wrote into the bundle (resources/BUILD_INFO)."""
    from stockade.paths import resources_dir

    stamp = resources_dir() / "BUILD_INFO"
    try:
        fields = dict(
            line.split("=", 1)
            for line in stamp.read_text(encoding="utf-8").splitlines()
            if "=" in line
        )
    except OSError:
        # A source run has no stamp; the installed package metadata still knows the version.
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"stockade {version('stockade')} (not a packaged build)"
        except PackageNotFoundError:
            return "stockade (version unknown: no build stamp and no package metadata)"
    return (
        f"stockade {fields.get('version', '?')} "
        f"(built {fields.get('built', '?')}, commit {fields.get('commit', '?')}, "
        f"{fields.get('platform', '?')}, Python {fields.get('python', '?')})"
    )


def main() -> int:
    """Answer `--version`; hand everything else to the `stockade` command line."""
    if sys.argv[1:] in (["--version"], ["-V"]):
        print(_build_info())
        return 0
    from stockade.cli.main import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
