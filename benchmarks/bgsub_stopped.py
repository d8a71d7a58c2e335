"""How long a stopped object stays detected: the absorption trap of a last-B-frames model.

A 40x40 colour scene with sensor noise; at frame 100 an object arrives and stays
for good. Prints, for each setting, the recall on the object (raw mask, before
post-processing) in windows after its arrival, and the first frame after which
recall stays below 0.5 ("absorbed after"). Results are in docs/tuning.md.

Usage::

    python benchmarks/bgsub_stopped.py
"""

from __future__ import annotations

import json
import sys

import numpy as np


def absorption(params: dict, T: int = 1100, t_in: int = 100, seed: int = 5) -> dict:
    import bgsub

    sub = bgsub.createOLKN(**params)
    rng = np.random.default_rng(seed)
    H = W = 40
    base = rng.integers(60, 120, size=(1, 1, 3)) + np.zeros((H, W, 3))
    rec = []
    for t in range(T):
        fr = base + rng.normal(0, 3, size=(H, W, 3))
        if t >= t_in:
            fr[10:30, 10:30] = (200, 40, 40)
        sub.apply(np.clip(np.round(fr), 0, 255).astype(np.uint8))
        if t >= t_in:
            rec.append(float((sub.getRawMask()[10:30, 10:30] == 255).mean()))
    rec = np.array(rec)
    below = np.nonzero(rec >= 0.5)[0]
    absorbed = int(below[-1] + 1) if len(below) else 0
    windows = {f"{a}-{b}": round(float(rec[a:b].mean()), 3) for a, b in ((0, 20), (20, 50), (50, 100),
                                                                          (100, 200), (200, 400), (400, 1000))}
    return {"absorbed_after_frames": absorbed if absorbed < len(rec) else None, "recall": windows}


def main() -> int:
    settings = {
        "paper preset (width 40)": dict(preset="paper", width=40.0),
        "default, fg_update_prob=1": dict(fg_update_prob=1.0),
        "default, fg_update_prob=0.1": dict(fg_update_prob=0.1),
        "default (fg_update_prob=0.02)": {},
        "default, fg_update_prob=0": dict(fg_update_prob=0.0),
        "default, diffuse_prob=0": dict(diffuse_prob=0.0),
        "default, rho_rule=paper": dict(rho_rule="paper"),
        "default, rho_rule=paper, diffuse_prob=0, init_radius=1": dict(rho_rule="paper", diffuse_prob=0.0,
                                                                        init_radius=1),
    }
    out = {name: absorption(p) for name, p in settings.items()}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
