"""Short clips as long streams: each sequence played forwards and backwards until it is long.

The UCSD dynamic-background clips last 25-71 frames, so the dev data cannot show what
a subtractor does after hundreds of frames of water or leaves (a long waving-trees
video, for one). This script plays each clip
forwards, then backwards, then forwards again ... (``1 2 .. n n-1 .. 2 1 2 ..``) for
``--length`` frames, scores every frame that has ground truth after the clip's own
warm-up, and prints, for each quarter of the stream, the F-measure and the false
positive rate (the share of scored background pixels marked foreground; CDnet's rules,
:func:`bgsub.metrics.frame_counts`): a
subtractor whose background model drifts on a dynamic scene gets worse quarter by
quarter.

Objects go back and forth along the same path too: a boat comes back through its own
wake, which a background model should have learnt, and a car along a road the model
has seen it on. The false-positive rate is the cleaner measure of the background's
drift; F mixes it with what the playback does to the objects::

    python benchmarks/bgsub_pingpong.py --algo olkn --data ../shared/data/bgs/ucsd
    python benchmarks/bgsub_pingpong.py --algo knn --length 400
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import bgsub
from bgsub.cdnet import load_sequence
from bgsub.metrics import ConfusionCounts, frame_counts


def pingpong(frames: list[int], length: int) -> list[int]:
    """``frames`` forwards, backwards, forwards ... (the ends not repeated), ``length`` of them."""
    cycle = frames + frames[-2:0:-1]
    return [cycle[k % len(cycle)] for k in range(length)]


def quarters(path: str, algo: str, params: dict, length: int) -> list[tuple[float, float]]:
    """``(F, false-positive rate)`` of each quarter of the ping-pong stream of the sequence at ``path``."""
    seq = load_sequence(path)
    frames = list(seq.frames)
    images = {n: seq.read_frame(n) for n in frames}
    truth = {n: seq.read_groundtruth(n) for n in frames if seq.is_scored(n)}
    roi = seq.roi(images[frames[0]].shape[:2])
    sub = bgsub.create(algo, **params)
    counts = [ConfusionCounts() for _ in range(4)]
    for k, n in enumerate(pingpong(frames, length)):
        mask = sub.apply(images[n])
        if n in truth and k >= len(frames) // 5:
            q = min(3, 4 * k // length)
            counts[q] = counts[q] + frame_counts(mask, truth[n], roi)  # the CDnet rules, as bgsub eval scores
    return [(m["F"], m["FPR"]) for m in (c.metrics() for c in counts)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algo", default="olkn")
    ap.add_argument("--set", default="{}", help="parameters as JSON, e.g. '{\"width\": 20}'")
    ap.add_argument("--data", default="../shared/data/bgs/ucsd", help="folder of CDnet-layout sequences")
    ap.add_argument("--length", type=int, default=400, help="frames per stream (default 400)")
    args = ap.parse_args(argv)
    root = Path(args.data)
    paths = sorted(p for p in root.iterdir() if (p / "input").is_dir()) if root.is_dir() else []
    if not paths:
        print(f"no sequences at {args.data}: pass --data", file=sys.stderr)
        return 2
    params = json.loads(args.set)
    print(f"F and false-positive rate (%) of each quarter of {args.length} frames; {args.algo} {params or ''}")
    print("| sequence | first quarter | second | third | last |")
    print("|---|---|---|---|---|")
    table = []
    for path in paths:
        Q = quarters(str(path), args.algo, params, args.length)
        table.append(Q)
        print(f"| {path.name} | " + " | ".join(f"{f:.3f} / {100 * r:.2f}" for f, r in Q) + " |", flush=True)
    means = [(np.nanmean([t[q][0] for t in table]), np.nanmean([t[q][1] for t in table])) for q in range(4)]
    print("| **mean** | " + " | ".join(f"**{f:.3f} / {100 * r:.2f}**" for f, r in means) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
