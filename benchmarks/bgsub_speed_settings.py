"""Interleaved fps of olkn settings against OpenCV KNN on the same 160 highway frames (320x240).

Compares the current defaults with the earlier setting (the paper's offset rule, no
diffusion, no bootstrap spread) and with other settings, in the same rounds, so the
ratios are comparable on a loaded machine (absolute fps are not).

Usage::

    python benchmarks/bgsub_speed_settings.py [HIGHWAY_DIR]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import cv2
import numpy as np

SETTINGS = {
    "olkn (defaults)": {},
    "olkn, earlier setting": dict(rho_rule="paper", diffuse_prob=0.0, init_radius=1),
    "olkn blink_gain=0.5": dict(blink_gain=0.5),
    "olkn fill_holes=300": dict(fill_holes=300),
}


def main(argv=None) -> int:
    import bgsub
    from bgsub.cdnet import load_sequence

    argv = sys.argv[1:] if argv is None else argv
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[2] / "shared/data/bgs/cdnet2014/highway"
    seq = load_sequence(root)
    frames = [cv2.resize(seq.read_frame(n), (320, 240)) for n in range(470, 630)]
    makers = {k: (lambda p=p: bgsub.create("olkn", **p)) for k, p in SETTINGS.items()}
    makers["knn"] = lambda: bgsub.create("knn")
    fps = {k: [] for k in makers}
    for _ in range(5):
        for k, make in makers.items():
            sub = make()
            for f in frames[:10]:
                sub.apply(f)
            t = time.perf_counter()
            for f in frames[10:]:
                sub.apply(f)
            fps[k].append((len(frames) - 10) / (time.perf_counter() - t))
    knn = np.array(fps["knn"])
    for k, v in fps.items():
        print(f"{k:24s} {np.median(v):7.1f} fps   x KNN {np.median(np.array(v) / knn):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
