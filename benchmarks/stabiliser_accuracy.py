"""How often the stabiliser finds the camera's shift: every frame of the jittered dev sequences.

``bgsub eval --augment jitter`` shifts every frame of a sequence by a known integer
offset (``bgsub.augment``). The stabiliser registers each frame to the stream's first,
so the shift it should report for frame ``n`` is ``shift(n) - shift(first)``. This
script counts, per sequence, the frames where ``stabilise="match"`` (the gradient
correlation of ``bgsub.pipeline.registration``, with the subtractor's own code)
reports exactly that, and the time it takes per frame::

    python benchmarks/stabiliser_accuracy.py --data ../shared/data/bgs

Sequences whose camera moves by itself (UCSD's birds and chopper) are listed too:
there the augmentation's shift is not the whole motion, so a miss is not an error.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import bgsub
from bgsub.augment import augment
from bgsub.cdnet import load_sequence
from bgsub.commands.eval import resolve_sequences


def measure(path: str, mode: str) -> tuple[int, int, float]:
    """``(frames right, frames, ms per frame)`` of stabiliser ``mode`` on the jittered copy of ``path``."""
    seq = augment(load_sequence(path), "jitter")
    sub = bgsub.create("olkn", stabilise=mode)
    first = seq.shift(seq.frames[0])
    right = 0
    elapsed = 0.0
    for k, n in enumerate(seq.frames):
        img = sub._prepare(seq.read_frame(n))
        t = time.perf_counter()
        sub._stabiliser.apply(img, sub.params)
        if k >= 2:  # the first takes the reference, the second builds the estimator
            elapsed += time.perf_counter() - t
        if k == 0:
            continue
        dx, dy = seq.shift(n)
        right += sub._shift == (dx - first[0], dy - first[1])
    return right, len(seq.frames) - 1, 1000 * elapsed / max(len(seq.frames) - 2, 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/bgs", help="folder holding the CDnet-layout sequences")
    args = ap.parse_args(argv)
    if not Path(args.data).is_dir():
        print(f"no sequences at {args.data}: pass --data", file=sys.stderr)
        return 2
    print("| sequence | frames | right | ms/frame |")
    print("|---|---|---|---|")
    totals = np.zeros(2)
    for path in resolve_sequences([args.data]):
        right, frames, ms = measure(str(path), "match")
        totals += (frames, right)
        print(f"| {Path(path).name} | {frames} | {right} | {ms:.2f} |")
    frames, right = totals
    print(f"| **all** | {frames:.0f} | {right:.0f} ({right / frames:.1%}) | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
