"""Timing the subtractors (what ``bgsub bench`` runs): the same frames, in memory, through each; fps and ratio to KNN.

Frames come from CDnet ``highway`` when the shared data is present (``--data``,
``$OLK_DATA_DIR`` or ``../shared/data`` beside the checkout), else from a
synthetic street-like clip; they are resized to each benchmark size and kept in
memory, so only ``apply`` is timed. Every subtractor first runs ``--warmup``
frames (default :data:`DEFAULT_WARMUP`), untimed: the timed frames are those of a
running model, past olkn's warm-up (``warmup_frames`` 50, in which every background
pixel learns) and past OpenCV KNN's first frames, which it runs up to 1.5x slower
than later ones (measured: 320x240 to 1920x1080 highway frames, frames 11-30 against
71-90). The algorithms run in rounds, interleaved,
and each round times every algorithm on the same frames back to back; the
reported fps is the median over rounds and the ratio to OpenCV KNN is the
median of the per-round ratios, which keeps comparisons fair on a loaded
machine.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import cv2
import numpy as np

from bgsub.devices import spec_device, without_device

__all__ = ["DEFAULT_WARMUP", "load_frames", "resolve_spec", "benchmark"]

#: Untimed frames before the timed ones (OpenCV's KNN runs its first frames up to 1.5x slower).
DEFAULT_WARMUP = 60


def _synthetic_frames(n: int, w: int = 320, h: int = 240, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([60 + 0.3 * xx, 90 + 0.2 * yy, 120 + 0.1 * (xx + yy)], axis=-1)
    out = []
    for t in range(n):
        fr = base + rng.normal(0, 4, base.shape)
        for k in range(3):
            x0 = int((t * (3 + 2 * k) + 80 * k) % (w + 60)) - 60
            y0 = 40 + 60 * k
            fr[max(0, y0):y0 + 40, max(0, x0):max(0, x0 + 60)] = (30 + 70 * k, 200 - 50 * k, 90)
        out.append(np.clip(fr, 0, 255).astype(np.uint8))
    return out


def load_frames(n: int, data: Path | None = None) -> tuple[list[np.ndarray], str]:
    """``n`` BGR frames and where they came from (highway, else synthetic)."""
    if data is None:
        env = os.environ.get("OLK_DATA_DIR")
        data = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    hw = Path(data) / "bgs" / "cdnet2014" / "highway"
    if not hw.is_dir():
        return _synthetic_frames(n), f"synthetic clip (CDnet highway not found at {hw})"
    if hw.is_dir():
        from bgsub.cdnet import load_sequence

        seq = load_sequence(hw)
        # frames from the scored part (traffic present)
        start = max(0, seq.temporal_roi[0] - 1)
        numbers = seq.frames[start:start + n]
        if len(numbers) == n:
            return [seq.read_frame(k) for k in numbers], f"CDnet highway frames {numbers[0]}-{numbers[-1]}"
    return _synthetic_frames(n), f"synthetic clip (CDnet highway at {hw} has fewer than {n} scored frames)"


def resolve_spec(algo: str) -> tuple[str, dict]:
    """``NAME[:PRESET][,KEY=VALUE...]`` as the algorithm's name and full parameters (ValueError, one line,
    for an unknown algorithm, preset or parameter)."""
    import bgsub
    from bgsub.settings import resolve_algorithm

    spec, *assignments = without_device(algo).split(",")  # (NAME@DEVICE: where it runs, bgsub.devices)
    name, _, preset = spec.partition(":")
    if name not in bgsub.algorithms():
        raise ValueError(f"unknown algorithm {name!r}; choose from {', '.join(bgsub.algorithms())}")
    return resolve_algorithm(name, assignments, None, preset or None)


def _time_algo(algo: str, frames: list[np.ndarray], warmup: list[np.ndarray]) -> float:
    """fps of ``algo``'s ``apply`` on ``frames``, run through the frame pipeline with no sinks."""
    import bgsub
    from bgsub.pipeline import Pipeline

    name, params = resolve_spec(algo)
    pipeline = Pipeline(bgsub.create(name, device=spec_device(algo), **params))
    pipeline.run(warmup, catch_interrupt=False)
    result = pipeline.run(frames, catch_interrupt=False)
    if result.error is not None:
        raise RuntimeError(f"{algo} failed at {result.error}")
    return result.subtract_fps


def benchmark(algos, sizes, n_frames=None, rounds=3, data=None, log=None, warmup=DEFAULT_WARMUP) -> dict:
    """Time ``algos`` at each size, each after ``warmup`` untimed frames; returns the JSON-ready report."""
    counts = {}
    for (w, h) in sizes:
        counts[(w, h)] = n_frames or max(20, int(150 * (320 * 240) / (w * h)))
    n_max = max(counts.values()) + warmup
    src, origin = load_frames(n_max, data)
    if log:
        log(f"frames: {origin}")
    report = {"source": origin, "rounds": rounds, "warmup": warmup, "cpu_count": os.cpu_count(),
              "numba_threads": _numba_threads(), "opencv_threads": cv2.getNumThreads(), "sizes": []}
    for (w, h) in sizes:
        n = counts[(w, h)]
        frames = [cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA if w < f.shape[1] else cv2.INTER_LINEAR)
                  for f in src[: n + warmup]]
        warm, timed = frames[:warmup], frames[warmup:warmup + n]
        fps = {a: [] for a in algos}
        for r in range(rounds):
            order = list(algos[r % len(algos):]) + list(algos[:r % len(algos)])
            for a in order:
                fps[a].append(_time_algo(a, timed, warm))
                if log:
                    log(f"{w}x{h} round {r + 1}/{rounds} {a}: {fps[a][-1]:.1f} fps")
        rows = []
        for a in algos:
            row = {"algo": a, "fps": statistics.median(fps[a]), "fps_rounds": fps[a]}
            if "knn" in fps:
                row["ratio_to_knn"] = statistics.median(x / k for x, k in zip(fps[a], fps["knn"]))
            rows.append(row)
        report["sizes"].append({"size": f"{w}x{h}", "frames": n, "results": rows})
    return report


def _numba_threads() -> int:
    try:
        import numba

        return int(numba.get_num_threads())
    except Exception:  # pragma: no cover
        return 0
