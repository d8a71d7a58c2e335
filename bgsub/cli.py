"""``bgsub`` command line: one sub-command per module.

Each sub-command module defines ``add_arguments(parser)`` and ``main(args) -> int``.
Errors look the same in every command: ``bgsub CMD: error: ...`` on stderr,
exit status 2 for usage and parameter errors, 1 for runtime failures.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help)
SUBCOMMANDS = {
    "demo": ("bgsub.commands.demo", "process the bundled sample clip and print its scores"),
    "run": ("bgsub.commands.run", "subtract the background of a camera, video file or image folder"),
    "batch": ("bgsub.commands.batch", "process every video and sequence under a folder, in parallel"),
    "eval": ("bgsub.commands.eval", "score CDnet-layout sequences against their ground truth"),
    "bench": ("bgsub.commands.bench", "time the subtractors and OpenCV's on the same frames"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bgsub",
        description="Background subtraction with online kernel learning (OLK_N, NORMA).",
    )
    from bgsub import __version__

    parser.add_argument("--version", action="version", version=f"bgsub {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        p = sub.add_parser(name, help=help_text, description=help_text, prog=f"bgsub {name}")
        module.add_arguments(p)
        p.set_defaults(_main=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_main", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args._main(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
