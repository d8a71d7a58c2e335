"""Compile (or load from numba's cache) a subtractor's frame kernels before the real frames.

numba compiles a subtractor's jitted kernels on first use: the first run after an
install or an upgrade waits about a minute for olkn's on a 2-core machine, later
runs load them from numba's cache in milliseconds. Running a throwaway subtractor
on a few tiny frames first moves that wait out of the first real frame, so that a
progress bar or a frame rate measures frames, not the compiler. The command line
(``bgsub run``, ``demo``, ``batch``) and the desktop app use these helpers.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, TextIO

import numpy as np

__all__ = ["WARM_UP_SIZE", "compile_note", "run_throwaway_frames", "warm_up", "compile_first"]

#: ``(H, W)`` of the throwaway frames :func:`run_throwaway_frames` feeds.
WARM_UP_SIZE = (16, 16)


def compile_note(subtractor) -> str | None:
    """What to tell a user whose first frame will wait for numba to compile ``subtractor``'s kernels (they are
    not in numba's cache for the installed sources), else None."""
    missing = subtractor.uncompiled_kernels() if hasattr(subtractor, "uncompiled_kernels") else []
    if not missing:
        return None
    return (f"numba is compiling the frame kernels ({', '.join(missing)}) before the first frame: about a minute "
            "on a 2-core machine, once; later runs load them from its cache")


def run_throwaway_frames(subtractor, frames: int, score_map: bool = False) -> None:
    """Feed ``frames`` random tiny colour frames to ``subtractor`` (and read its score map after each where
    ``score_map``), so that numba compiles or loads its kernels now instead of at the first real frame."""
    rng = np.random.default_rng(0)
    h, w = WARM_UP_SIZE
    for _ in range(frames):
        subtractor.apply(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        if score_map and hasattr(subtractor, "getScoreMap"):
            subtractor.getScoreMap()


def warm_up(algo: str, params: dict[str, Any] | None = None, frames: int = 3,
            on_compile: Callable[[str], None] | None = None) -> float:
    """Run a throwaway ``algo`` subtractor (built with ``params``) on ``frames`` tiny frames, reading its score map.

    Where numba's cache does not hold its kernels, ``on_compile`` (if given) is first called with a sentence
    saying so (:func:`compile_note`). Returns the seconds it took (milliseconds once compiled).
    """
    from bgsub.registry import create

    start = time.perf_counter()
    subtractor = create(algo, **dict(params or {}))
    note = compile_note(subtractor) if on_compile is not None else None
    if note:
        on_compile(note)
    run_throwaway_frames(subtractor, frames, score_map=True)
    return time.perf_counter() - start


def compile_first(subtractor, algo: str, params: dict[str, Any], *, quiet: bool = False,
                  stream: TextIO | None = None, frames: int = 3) -> float | None:
    """Where ``subtractor``'s kernels are not in numba's cache, compile them now, as a step of its own (and
    where they are, load them now).

    A throwaway ``algo`` subtractor with ``params`` (``subtractor`` itself is not touched) runs ``frames``
    tiny frames; unless ``quiet``, one line on ``stream`` (default stderr) says that the frame kernels are
    compiling, before the wait, and one says how long it took, after it. Call it before a progress bar
    starts, so that the bar's rate and time left count frames, not the compiler.

    Returns
    -------
    float or None
        Seconds spent compiling, or None when there was nothing to compile.
    """
    if not hasattr(subtractor, "uncompiled_kernels"):
        return None  # not numba's (OpenCV's): nothing to compile
    note = compile_note(subtractor)
    out = sys.stderr if stream is None else stream
    if note and not quiet:
        print(f"{note}…", file=out, flush=True)
    start = time.perf_counter()
    warm_up(algo, params, frames)  # with the kernels cached: loads them (under a second), silently
    seconds = time.perf_counter() - start
    if note and not quiet:
        print(f"frame kernels compiled in {seconds:.0f} s", file=out, flush=True)
    return seconds if note else None
