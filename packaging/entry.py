"""Entry point of the packaged `stockade` executable: the normal `stockade` command line."""

from __future__ import annotations

import sys


def main() -> int:
    """Hand everything (including `--version`) to the `stockade` command line."""
    from stockade.cli.main import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
