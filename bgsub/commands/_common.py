"""What the commands share: option groups, one error style, building pipelines from options.

Not a command: every ``bgsub`` command module imports from here and from the
library, never from another command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from bgsub.settings import DEFAULT_ALGO

__all__ = [
    "DEFAULT_OUTPUT_ROOT",
    "add_algorithm_arguments",
    "add_frame_arguments",
    "build_region",
    "check_positive",
    "error",
    "describe_params",
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


def parse_size(text: str, option: str, minimum: int, example: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` as ``(w, h)``; ValueError naming ``option`` when malformed or under ``minimum``."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"{option} takes WIDTHxHEIGHT, e.g. {example}; got {text!r}") from None
    if w < minimum or h < minimum:
        raise ValueError(f"{option} must be at least {minimum}x{minimum}, got {text!r}")
    return w, h


def compile_note(subtractor) -> str | None:
    """What to tell a user whose first frame will wait for numba to compile ``subtractor``'s kernels (they are
    not in numba's cache for the installed sources), else None."""
    missing = subtractor.uncompiled_kernels() if hasattr(subtractor, "uncompiled_kernels") else []
    if not missing:
        return None
    return (f"numba is compiling the frame kernels ({', '.join(missing)}) before the first frame: about a minute "
            "on a 2-core machine, once; later runs load them from its cache")


#: ``(H, W)`` of the throwaway frames :func:`run_throwaway_frames` feeds.
WARM_UP_SIZE = (16, 16)


def run_throwaway_frames(subtractor, frames: int, score_map: bool = False) -> None:
    """Feed ``frames`` random tiny colour frames to ``subtractor`` (and read its score map after each where
    ``score_map``), so that numba compiles or loads its kernels now instead of at the first real frame."""
    rng = np.random.default_rng(0)
    h, w = WARM_UP_SIZE
    for _ in range(frames):
        subtractor.apply(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        if score_map and hasattr(subtractor, "getScoreMap"):
            subtractor.getScoreMap()


def describe_params(algo: str, params: dict) -> str:
    """``algo k=v k=v ...``."""
    return " ".join([algo] + [f"{k}={v}" for k, v in params.items()])


def add_algorithm_arguments(parser: argparse.ArgumentParser) -> None:
    """``--algo``, ``--preset``, ``--config``, ``--set``."""
    parser.add_argument(
        "--algo", default=None, metavar="NAME",
        help=f"background subtractor: olkn, norma, knn or mog2 (default: {DEFAULT_ALGO}, "
             "or the config file's 'algo')",
    )
    parser.add_argument("--preset", default=None, metavar="NAME",
                        help="start from a named parameter preset of the algorithm")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE.toml",
                        help="TOML file with 'algo' and a [params] table (or a table named after the algo)")
    parser.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE",
                        help="set one parameter, e.g. --set width=12 (repeatable; overrides --config)")


def add_frame_arguments(parser: argparse.ArgumentParser, *, objects: bool = True) -> None:
    """Pre- and post-processing: ``--roi``, ``--scale``, ``--min-area``."""
    parser.add_argument("--roi", type=Path, default=None, metavar="MASK.png",
                        help="process only the white pixels of this mask (frame size); nothing outside "
                             "is ever foreground, and nothing outside its bounding box is computed")
    parser.add_argument("--scale", type=float, default=1.0, metavar="S",
                        help="process at S times the input's resolution, 0 < S <= 1 (masks come back at "
                             "the input size; the usual way to run HD), default 1")
    if objects:
        parser.add_argument("--min-area", type=int, default=0, metavar="PIXELS",
                            help="drop foreground blobs smaller than this many pixels (default 0: keep all)")


def build_region(args: argparse.Namespace):
    """The :class:`bgsub.pipeline.Region` of ``--roi``/``--scale``; ValueError naming the option."""
    from bgsub.pipeline import Region, load_roi

    roi = load_roi(args.roi) if getattr(args, "roi", None) is not None else None
    return Region(roi, getattr(args, "scale", 1.0))
