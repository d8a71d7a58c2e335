"""What the commands share: option groups, one error style, building pipelines from options.

Not a command: every ``bgsub`` command module imports from here and from the
library, never from another command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bgsub.options import add_frame_arguments, parse_size  # noqa: F401 (shared with the desktop app)
from bgsub.settings import DEFAULT_ALGO
from bgsub.warmup import compile_first, compile_note  # noqa: F401 (the commands use them from here)

__all__ = [
    "DEFAULT_OUTPUT_ROOT",
    "add_algorithm_arguments",
    "add_frame_arguments",
    "build_region",
    "check_positive",
    "error",
    "describe_params",
    "summarize_params",
    "parse_size",
]

#: Where outputs go when no --out is given.
DEFAULT_OUTPUT_ROOT = Path("bgsub-output")


def error(command: str, message: str, code: int) -> int:
    """Print ``bgsub COMMAND: error: MESSAGE`` on stderr and return ``code``.

    Exit codes: 2 for usage and parameter errors, 1 for runtime failures.
    """
    print(f"bgsub {command}: error: {message}", file=sys.stderr)
    return code


def check_positive(value, option: str, minimum: int = 1) -> None:
    """``ValueError('--option must be >= minimum, got value')`` unless None or >= minimum."""
    if value is not None and value < minimum:
        raise ValueError(f"{option} must be >= {minimum}, got {value}")


def describe_params(algo: str, params: dict) -> str:
    """``algo k=v k=v ...``."""
    return " ".join([algo] + [f"{k}={v}" for k, v in params.items()])


def summarize_params(algo: str, params: dict) -> str:
    """``algo`` and only the parameters that differ from its defaults: ``olkn width=12 (others default)``,
    ``olkn (default parameters)``; :func:`describe_params` lists them all (``--verbose``)."""
    from bgsub.registry import default_params

    try:
        defaults = default_params(algo)
    except (KeyError, ValueError):
        return describe_params(algo, params)
    changed = {k: v for k, v in params.items() if k not in defaults or defaults[k] != v}
    if not changed:
        return f"{algo} (default parameters)"
    return describe_params(algo, changed) + " (others default)"


def algorithm_names() -> str:
    """The registered algorithms, ``olkn, norma, ...`` (:func:`bgsub.registry.algorithms`)."""
    from bgsub.registry import algorithms

    return ", ".join(algorithms())


def add_algorithm_arguments(parser: argparse.ArgumentParser) -> None:
    """``--algo``, ``--preset``, ``--config``, ``--set``."""
    parser.add_argument(
        "--algo", default=None, metavar="NAME",
        help=f"background subtractor: {algorithm_names()} (default: {DEFAULT_ALGO}, "
             "or the config file's 'algo')",
    )
    parser.add_argument("--preset", default=None, metavar="NAME",
                        help="start from a named parameter preset of the algorithm")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE.toml",
                        help="TOML file with 'algo' and a [params] table (or a table named after the algo)")
    parser.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE",
                        help="set one parameter, e.g. --set width=12 (repeatable; overrides --config)")


def build_region(args: argparse.Namespace):
    """The :class:`bgsub.pipeline.Region` of ``--roi``/``--scale``; ValueError naming the option."""
    from bgsub.pipeline import Region, load_roi

    roi = load_roi(args.roi) if getattr(args, "roi", None) is not None else None
    return Region(roi, getattr(args, "scale", 1.0))
