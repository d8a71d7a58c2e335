"""``bgsub bench``: the same frames, in memory, through every subtractor; fps and ratio to KNN.

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

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import cv2
import numpy as np

from bgsub.commands._common import check_positive, error, parse_size

__all__ = ["add_arguments", "main", "load_frames", "benchmark"]

DEFAULT_SIZES = ("320x240", "1280x720", "1920x1080")
DEFAULT_ALGOS = ("olkn", "norma", "knn", "mog2")
#: Untimed frames before the timed ones (OpenCV's KNN runs its first frames up to 1.5x slower).
DEFAULT_WARMUP = 60


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bgsub.commands._common import algorithm_names

    parser.add_argument("--algo", dest="algos", action="append", default=None, metavar="NAME[:PRESET][,K=V...]",
                        help=f"algorithm to time ({algorithm_names()}), optionally with one of its presets and "
                             "parameters, e.g. olkn:fast or olkn,score_map=exact (repeatable; default: olkn, norma, "
                             "knn, mog2)")
    parser.add_argument("--size", dest="sizes", action="append", default=None, metavar="WxH",
                        help="frame size (repeatable; default: 320x240, 1280x720 and 1920x1080)")
    parser.add_argument("--frames", type=int, default=None, metavar="N",
                        help="timed frames per round (default: 150 at 320x240, scaled down for larger frames)")
    parser.add_argument("--rounds", type=int, default=3, metavar="R", help="interleaved rounds (default 3)")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, metavar="N",
                        help=f"untimed frames each subtractor runs before the timed ones (default {DEFAULT_WARMUP}: "
                             "past olkn's 50-frame warm-up and OpenCV KNN's slower first frames)")
    parser.add_argument("--data", type=Path, default=None, metavar="DIR",
                        help="shared data folder holding bgs/cdnet2014/highway (default: $OLK_DATA_DIR or "
                             "../shared/data); a synthetic clip is used when absent")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


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
        data = Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"
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


def _resolve(algo: str) -> tuple[str, dict]:
    """``NAME[:PRESET][,KEY=VALUE...]`` as the algorithm's name and full parameters (ValueError, one line,
    for an unknown algorithm, preset or parameter)."""
    import bgsub
    from bgsub.settings import resolve_algorithm

    spec, *assignments = algo.split(",")
    name, _, preset = spec.partition(":")
    if name not in bgsub.algorithms():
        raise ValueError(f"unknown algorithm {name!r}; choose from {', '.join(bgsub.algorithms())}")
    return resolve_algorithm(name, assignments, None, preset or None)


def _time_algo(algo: str, frames: list[np.ndarray], warmup: list[np.ndarray]) -> float:
    """fps of ``algo``'s ``apply`` on ``frames``, run through the frame pipeline with no sinks."""
    import bgsub
    from bgsub.pipeline import Pipeline

    name, params = _resolve(algo)
    pipeline = Pipeline(bgsub.create(name, **params))
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


def main(args: argparse.Namespace) -> int:
    try:
        algos = tuple(args.algos or DEFAULT_ALGOS)
        for a in algos:
            _resolve(a)  # an unknown algorithm, preset or parameter: a one-line error here
        sizes = [parse_size(s, "--size", 8, "320x240") for s in (args.sizes or DEFAULT_SIZES)]
        check_positive(args.rounds, "--rounds")
        check_positive(args.frames, "--frames")
        check_positive(args.warmup, "--warmup", 0)
    except ValueError as exc:
        return error("bench", str(exc), 2)
    log = None if args.json else (lambda m: print(m, file=sys.stderr, flush=True))
    rep = benchmark(algos, sizes, args.frames, args.rounds, args.data, log, args.warmup)
    if args.json:
        print(json.dumps(rep))
        return 0
    print(f"frames: {rep['source']}; {rep['warmup']} untimed warm-up frames; {rep['rounds']} interleaved rounds; "
          f"numba threads {rep['numba_threads']}, OpenCV threads {rep['opencv_threads']}")
    width = max(10, *(len(a) for a in algos))
    for s in rep["sizes"]:
        print(f"\n{s['size']} ({s['frames']} timed frames)")
        print(f"{'algo':<{width}} {'fps':>9} {'x KNN':>7}")
        for r in s["results"]:
            ratio = r.get("ratio_to_knn")
            ratio = "-" if ratio is None else f"{ratio:.2f}"  # without knn in the run
            print(f"{r['algo']:<{width}} {r['fps']:>9.1f} {ratio:>7}")
    return 0
