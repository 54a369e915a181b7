"""Command-line entry point: ``nocturne`` launches the window; sub-commands run headless."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from nocturne_desktop import __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nocturne", description=__doc__)
    p.add_argument("--version", action="version", version=f"Nocturne {__version__}")
    p.add_argument("--data-dir", help="folder holding the memory database (default: user data)")
    p.add_subparsers(dest="command", metavar="COMMAND")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        import importlib

        try:
            ui_app = importlib.import_module("nocturne_desktop.ui.app")
        except ModuleNotFoundError:
            print("Nocturne: window not built yet", file=sys.stderr)
            return 0
        return int(ui_app.run(args))
    parser.error(f"unknown command {args.command!r}")
    return 2
