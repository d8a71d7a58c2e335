"""Command-line options shared by the ``bgsub`` commands and the desktop app (``bgsub-gui``).

``--roi``, ``--scale``, ``--min-area`` (:func:`add_frame_arguments`) and ``WIDTHxHEIGHT`` sizes
(:func:`parse_size`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_frame_arguments", "parse_size"]


def parse_size(text: str, option: str, minimum: int, example: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` as ``(w, h)``; ValueError naming ``option`` when malformed or under ``minimum``."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"{option} takes WIDTHxHEIGHT, e.g. {example}; got {text!r}") from None
    if w < minimum or h < minimum:
        raise ValueError(f"{option} must be at least {minimum}x{minimum}, got {text!r}")
    return w, h


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
