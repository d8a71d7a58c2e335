"""End to end: ``bgsub run`` on a 1080p video against a plain OpenCV KNN loop doing the same decode and write.

The video is made once from the CDnet highway frames, upscaled to 1920x1080
(``--make``, written under /tmp; never committed). Each round runs, back to
back on the same file:

- ``bgsub run VIDEO --out DIR --quiet --algo A`` for every ``A`` asked for (a
  subprocess; its own "fps overall" line is the figure, so start-up and numba's
  cache loading are not counted);
- the plain loop: ``cv2.VideoCapture.read`` -> ``KNN.apply`` -> ``cv2.imwrite``
  of ``bin%06d.png`` at PNG compression 1, one thread;
- the same loop writing its PNGs as ``bgsub run`` does
  (:data:`bgsub.writers.MASK_PNG_PARAMS`: no row filter, run-length deflate).

The ratios of each pipeline to the two plain loops are taken per round (the
same machine load) and their medians printed. ``--threads`` adds, per algorithm, the
same pipeline in this process with its reader and writer threads on and off
(``Pipeline.run(threads=...)``), to show what the overlap buys. Usage::

    python benchmarks/bgsub_e2e.py --make /tmp/highway1080.mp4 --frames 120
    python benchmarks/bgsub_e2e.py --video /tmp/highway1080.mp4 --algo olkn --algo norma --rounds 3
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2

from bgsub.commands.bench import load_frames
from bgsub.writers import MASK_PNG_PARAMS


def make_video(path: Path, n: int, size=(1920, 1080)) -> None:
    frames, origin = load_frames(n)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25.0, size)
    if not writer.isOpened():
        raise SystemExit(f"cannot write {path}")
    for f in frames:
        writer.write(cv2.resize(f, size, interpolation=cv2.INTER_LINEAR))
    writer.release()
    print(f"{path}: {n} frames of {origin} at {size[0]}x{size[1]}", file=sys.stderr)


def plain_knn(video: Path, out: Path, params: list[int]) -> float:
    """fps of the plain OpenCV loop: decode, KNN, write each mask as a PNG with ``params``."""
    out.mkdir(parents=True, exist_ok=True)
    knn = cv2.createBackgroundSubtractorKNN()
    cap = cv2.VideoCapture(str(video))
    n = 0
    t0 = time.perf_counter()
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        n += 1
        cv2.imwrite(str(out / f"bin{n:06d}.png"), knn.apply(frame), params)
    seconds = time.perf_counter() - t0
    cap.release()
    return n / seconds


def bgsub_run(video: Path, out: Path, algo: str, extra: list[str]) -> float:
    """fps overall of ``bgsub run`` as it reports it."""
    cmd = [sys.executable, "-m", "bgsub.cli", "run", str(video), "--out", str(out), "--quiet", "--algo", algo,
           *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    m = re.search(r"\(([\d.]+) fps overall", proc.stderr)
    if proc.returncode != 0 or m is None:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return float(m.group(1))


def pipeline_fps(video: Path, out: Path, algo: str, preset: str | None, threads: bool) -> float:
    """fps of ``Pipeline.run`` (video source -> subtractor -> mask PNGs) in this process."""
    import bgsub
    from bgsub.pipeline import MaskFiles, Pipeline
    from bgsub.settings import resolve_algorithm
    from bgsub.sources import open_source

    name, params = resolve_algorithm(algo, [], None, preset)
    with open_source(str(video)) as source:
        result = Pipeline(bgsub.create(name, **params), sinks=[MaskFiles(out)]).run(source, threads=threads)
    return result.fps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--video", type=Path, default=Path("/tmp/highway1080.mp4"))
    ap.add_argument("--make", type=Path, default=None, help="make the 1080p video here first")
    ap.add_argument("--frames", type=int, default=120, help="frames of the video made by --make")
    ap.add_argument("--algo", action="append", default=None, help="default: olkn")
    ap.add_argument("--set", action="append", default=[], help="passed to bgsub run as --set")
    ap.add_argument("--preset", default=None, help="passed to bgsub run as --preset")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (0 with --make: only make the video)")
    ap.add_argument("--threads", action="store_true", help="also time the pipeline in process, threads on and off")
    a = ap.parse_args()
    if a.rounds < 0 or a.frames < 1 or (a.rounds == 0 and a.make is None):
        ap.error(f"--rounds must be >= 0 (0 only with --make) and --frames >= 1, got {a.rounds} and {a.frames}")
    if a.make is not None:
        make_video(a.make, a.frames)
        a.video = a.make
    if a.rounds == 0:
        return
    algos = a.algo or ["olkn"]
    extra = [x for s in a.set for x in ("--set", s)] + (["--preset", a.preset] if a.preset else [])
    plain = {"plain KNN loop": [cv2.IMWRITE_PNG_COMPRESSION, 1], "plain, bgsub's PNG": MASK_PNG_PARAMS}
    fps = {k: [] for k in [*algos, *plain]}
    tmp = Path(tempfile.mkdtemp(prefix="bgsub-e2e-"))
    try:
        for r in range(a.rounds):
            for key, params in (plain.items() if r % 2 == 0 else reversed(plain.items())):
                fps[key].append(plain_knn(a.video, tmp / "knn", params))
            for algo in algos:
                fps[algo].append(bgsub_run(a.video, tmp / algo, algo, extra))
                if a.threads:
                    for on in ((True, False) if r % 2 == 0 else (False, True)):
                        key = f"{algo} threads {'on' if on else 'off'}"
                        fps.setdefault(key, []).append(pipeline_fps(a.video, tmp / key, algo, a.preset, on))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} fps" for k, v in fps.items()), file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{a.video} ({a.rounds} interleaved rounds; load {os.getloadavg()[0]:.1f})")
    print(f"{'pipeline':<22} {'fps':>7} {'x plain KNN':>12} {'x plain, same PNG':>18}")
    for k, v in fps.items():
        ratios = [statistics.median(x / y for x, y in zip(v, fps[p])) for p in plain]
        print(f"{k:<22} {statistics.median(v):>7.2f} {ratios[0]:>12.2f} {ratios[1]:>18.2f}")


if __name__ == "__main__":
    main()
