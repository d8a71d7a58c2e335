"""The stabiliser's shifts against another revision's, frame by frame, and the time of each estimate.

Both versions of ``bgsub.pipeline.registration`` (this checkout's and the one at ``--baseline``, read
with ``git show``) run behind the subtractor's own :class:`bgsub.pipeline.stages.Stabiliser` on the
same frames, in one process, the order of the two alternating from frame to frame. Every estimate is
compared (``(dx, dy)``, saturated ones included) and timed::

    python benchmarks/stabiliser_exactness.py --data ../shared/data/bgs --baseline main
    python benchmarks/stabiliser_exactness.py --bench --baseline main

The dev data: every sequence under ``--data``, plain, jittered and with illumination steps
(``bgsub.augment``), each at its own size and upscaled to 1280 pixels wide (bilinear), as the
registration module's docstring counts them. ``--bench``: ``bgsub bench``'s CDnet highway frames at
320x240, 1280x720 and 1920x1080 (resized as ``benchmarks/bgsub_profile.py`` does), medians.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from bgsub.augment import augment
from bgsub.cdnet import load_sequence
from bgsub.evaluation import resolve_sequences
from bgsub.pipeline import registration, stages

PARAMS = {"stabilise": "match"}
VARIANTS = (None, "jitter", "illumination")


def baseline_module(rev: str, tmp: str):
    """``bgsub/pipeline/registration.py`` at git revision ``rev``, imported as its own module (compiled without
    numba's cache)."""
    root = Path(__file__).resolve().parents[1]
    src = subprocess.run(["git", "show", f"{rev}:bgsub/pipeline/registration.py"], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    path = Path(tmp) / "registration_baseline.py"
    path.write_text(src.replace("cache=True", "cache=False"))  # a temporary file: nothing to cache
    spec = importlib.util.spec_from_file_location("registration_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


class Run:
    """A :class:`stages.Stabiliser` whose estimator is ``module``'s, recording each estimate and its time."""

    def __init__(self, module) -> None:
        times, shifts = [], []

        class Timed(module.ShiftEstimator):
            def estimate(self, grey):
                t = time.perf_counter()
                r = super().estimate(grey)
                times.append(time.perf_counter() - t)
                shifts.append(r)
                return r

        self.cls, self.times, self.shifts = Timed, times, shifts
        self.stabiliser = stages.Stabiliser()

    def apply(self, img: np.ndarray) -> None:
        saved = stages.ShiftEstimator
        stages.ShiftEstimator = self.cls
        try:
            self.stabiliser.apply(img, PARAMS)
        finally:
            stages.ShiftEstimator = saved


def warm_up(*modules) -> None:
    """Each module's kernels compiled before anything is timed (the baseline's are not cached)."""
    rng = np.random.default_rng(0)
    for H, W in ((120, 160), (240, 320), (720, 1280)):
        ref = cv2.GaussianBlur(rng.integers(0, 256, (H, W), dtype=np.uint8), (0, 0), 2)
        for mod in modules:
            est = mod.ShiftEstimator(ref, stages.STABILISE_MAX)
            for k in range(3):
                est.estimate(np.roll(ref, k, axis=1))


def compare(frames, old, new) -> tuple[int, int, int, float, float]:
    """``(frames, estimates, differing estimates, old ms, new ms)`` (mean ms an estimate) over ``frames``
    (prepared ``(H, W, C)`` images)."""
    a, b = Run(old), Run(new)
    count = 0
    for k, img in enumerate(frames):
        for run in ((a, b) if k % 2 == 0 else (b, a)):
            run.apply(img)
        count += 1
    n = len(a.shifts)
    if n != len(b.shifts):
        raise AssertionError(f"{len(a.shifts)} estimates against {len(b.shifts)}")
    differ = sum(x != y for x, y in zip(a.shifts, b.shifts))
    return count, n, differ, 1000 * float(np.mean(a.times or [0])), 1000 * float(np.mean(b.times or [0]))


def _resized(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    return img if img.shape[1::-1] == size else cv2.resize(img, size, interpolation=cv2.INTER_LINEAR)


def dev(data: str, old, new) -> int:
    print("| sequence | variant | size | frames | estimates | differing | baseline ms | this ms |")
    print("|---|---|---|---|---|---|---|---|")
    totals = np.zeros(5)  # frames, estimates, differing, baseline ms, this ms
    for path in resolve_sequences([data]):
        for variant in VARIANTS:
            seq = augment(load_sequence(path), variant)
            H, W = seq.read_frame(seq.frames[0]).shape[:2]
            up = (1280, round(H * 1280 / W))
            for size in ((W, H), up):
                frames = (stages.prepare(_resized(seq.read_frame(n), size), 1.0, "bgr") for n in seq.frames)
                count, n, differ, ms_old, ms_new = compare(frames, old, new)
                totals += (count, n, differ, n * ms_old, n * ms_new)
                print(f"| {Path(path).name} | {variant or 'plain'} | {size[0]}x{size[1]} | {count} | {n} | {differ} "
                      f"| {ms_old:.3f} | {ms_new:.3f} |", flush=True)
    count, n, differ, t_old, t_new = totals
    print(f"| **all** | | | {count:.0f} | {n:.0f} | {differ:.0f} | {t_old / n:.3f} | {t_new / n:.3f} |")
    return 0 if differ == 0 else 1


def bench(old, new, frames: int, rounds: int) -> int:
    from bgsub.benchmark import load_frames

    src, origin = load_frames(frames)
    print(f"frames: {origin}; ms per estimate, median of each round (interleaved)\n")
    print("| size | frames | differing | baseline ms | this ms | × |")
    print("|---|---|---|---|---|---|")
    worst = 0
    for w, h in ((320, 240), (1280, 720), (1920, 1080)):
        imgs = [cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA if w < f.shape[1] else cv2.INTER_LINEAR)
                for f in src]
        med_old, med_new, differ = [], [], 0
        for _ in range(rounds):
            a, b = Run(old), Run(new)
            for k, img in enumerate(imgs):
                for run in ((a, b) if k % 2 == 0 else (b, a)):
                    run.apply(img)
            differ += sum(x != y for x, y in zip(a.shifts, b.shifts))
            med_old.append(1000 * float(np.median(a.times)))
            med_new.append(1000 * float(np.median(b.times)))
        mo, mn = float(np.median(med_old)), float(np.median(med_new))
        worst = max(worst, differ)
        print(f"| {w}x{h} | {rounds} x {len(imgs) - 1} | {differ} | {mo:.3f} | {mn:.3f} | {mo / mn:.2f} |")
    return 0 if worst == 0 else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/bgs", help="folder holding the CDnet-layout sequences")
    ap.add_argument("--baseline", default="main", help="git revision to compare with (default main)")
    ap.add_argument("--bench", action="store_true", help="time bgsub bench's frames instead of the dev data")
    ap.add_argument("--frames", type=int, default=100, help="--bench: frames per size (default 100)")
    ap.add_argument("--rounds", type=int, default=3, help="--bench: rounds per size (default 3)")
    args = ap.parse_args(argv)
    if not args.bench and not Path(args.data).is_dir():
        print(f"no sequences at {args.data}: pass --data", file=sys.stderr)
        return 2
    if args.frames < 3 or args.rounds < 1:
        print(f"--frames must be >= 3 and --rounds >= 1, got {args.frames} and {args.rounds}", file=sys.stderr)
        return 2
    cv2.setNumThreads(2)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            old = baseline_module(args.baseline, tmp)
        except subprocess.CalledProcessError as e:
            print(f"cannot read the baseline at {args.baseline!r}: {e.stderr.strip()}", file=sys.stderr)
            return 2
        warm_up(old, registration)
        if args.bench:
            return bench(old, registration, args.frames, args.rounds)
        return dev(args.data, old, registration)


if __name__ == "__main__":
    sys.exit(main())
