"""One olkn frame from one state, again and again: the bounded frame kernel against variants of it.

A whole stream cannot compare two versions of ``olkn_frame_bounded`` whose outputs differ (the
models part after one frame), and ``bgsub bench`` swings by ±0.05 of KNN's speed from run to run.
This script runs the default olkn on CDnet highway frames (``--start``, 60 of them), prepares the
next frame as ``apply`` does, copies the model's state, and then times the frame kernel on that
frame and state: the module in the tree and each variant given (a copy of
``bgsub/models/_bounded_frame.py``, edited), interleaved, the state restored before every call, after
``--warmup`` untimed calls of each (so that every kernel's split of the rows between the threads is learnt).
It prints each one's median and minimum time and whether its masks, offsets, blink
accumulators, samples, coefficients and rings are those of the module in the tree::

    python benchmarks/bounded_frame_ab.py --size 1280x720 --reps 15 /tmp/variant.py

Variants may take the kernel's arguments of an earlier version (the ``(H, W)`` scratch arguments
``todo``, ``todo_q``, ``todo_f``, and no ``filling``), so that
the module at an earlier commit (``git show REV:bgsub/models/_bounded_frame.py > /tmp/old.py``)
can be timed beside the current one. Each variant is compiled afresh in a temporary folder
(about half a minute each).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

import bgsub
from bgsub.cdnet import load_sequence
from bgsub.models import _bounded_frame as bf
from bgsub.models import _state
from bgsub.models.base import _prob
from bgsub.models.params import BLINK_DOWN

OUTPUTS = ("samples", "coef", "ring", "rho", "blink", "mask")


def _load(path: str, k: int, folder: str):
    """The variant at ``path``, loaded from a copy in ``folder`` (numba caches its compiled code beside the file,
    and a cache written by an earlier run of a dynamically loaded module does not load again)."""
    copy = os.path.join(folder, f"bounded_frame_variant_{k}.py")
    shutil.copyfile(path, copy)
    spec = importlib.util.spec_from_file_location(f"bounded_frame_variant_{k}", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _arguments(module) -> tuple[str, ...]:
    code = module.olkn_frame_bounded.py_func.__code__
    return code.co_varnames[:code.co_argcount]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="*", help="copies of bgsub/models/_bounded_frame.py to time beside it")
    ap.add_argument("--size", default="1280x720", help="WxH the highway frames are resized to")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=40,
                    help="untimed calls of each kernel first, interleaved (the bands' split learns each kernel's rows)")
    ap.add_argument("--start", type=int, default=470, help="first highway frame of the 60 that build the state")
    ap.add_argument("--data", type=Path, default=None,
                    help="shared data folder holding bgs/cdnet2014/highway (default: $OLK_DATA_DIR or ../shared/data)")
    args = ap.parse_args(argv)
    data = args.data or Path(os.environ.get("OLK_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
    highway = data / "bgs" / "cdnet2014" / "highway"
    if not highway.is_dir():
        print(f"CDnet highway not found at {highway}: pass --data or set OLK_DATA_DIR", file=sys.stderr)
        return 2
    W, H = (int(v) for v in args.size.lower().split("x"))
    folder = tempfile.mkdtemp(prefix="bounded_frame_ab_")
    try:
        modules = [bf] + [_load(path, k, folder) for k, path in enumerate(args.variants, 1)]
        return _run(args, highway, modules, W, H)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(args, highway, modules, W, H) -> int:
    seq = load_sequence(highway)
    numbers = sorted(seq.input_paths)[args.start:args.start + 61]
    frames = [cv2.resize(seq.read_frame(n), (W, H)) for n in numbers]
    sub = bgsub.create("olkn")
    for frame in frames[:60]:
        sub.apply(frame)
    p = sub.params
    img = sub._input_stages(frames[60])
    state = dict(samples=sub.samples_, coef=sub.coef_, ring=sub.ring_, rho=sub.rho_, blink=sub.blink_, ref=sub._ref,
                 ref_sum=sub._ref_sum, ref_mass=sub._ref_mass, score=sub._score, mask=sub._rawmask,
                 prev=sub.prev_mask_, post=sub.post_mask_, stepped=sub._stepped, summed=sub._summed)
    work = {k: v.copy() for k, v in state.items()}
    scratch = (np.zeros((H, W), np.int32), np.zeros((H, W), np.int32), np.zeros((H, W)))
    rates = (_prob(p["update_prob"]), _prob(p["fg_update_prob"]), _prob(p["diffuse_prob"]))

    def once(module) -> float:
        for k in state:
            work[k][...] = state[k]
        names = _arguments(module)
        feedback = (work["blink"], work["prev"], work["post"], p["blink_gain"], p["blink_up"], BLINK_DOWN)
        t = time.perf_counter()
        if "cache" in names:  # the argument groups of bgsub.models._state (the bands' driver where there is one)
            getattr(module, "frame_bounded", module.olkn_frame_bounded)(
                img, tuple(work[k] for k in ("samples", "coef", "ring", "rho")), sub.scale_, sub.lut(),
                _state.olkn_rule(p), _state.policy(*rates, p, sub.n_frames_), feedback,
                (work["score"], work["mask"], work["stepped"]),
                (work["ref"], work["ref_sum"], work["ref_mass"], bf.gaussian_slope(p["width"]), False, False,
                 work["summed"]))
        else:  # a variant with every argument on its own
            module.olkn_frame_bounded(
                img, work["samples"], work["coef"], work["ring"], work["rho"], sub.scale_, sub.lut(),
                *_state.olkn_rule(p), *rates, _state.DIFFUSE_RADIUS, p["seed"], sub.n_frames_, work["score"],
                work["mask"], work["prev"], work["stepped"], *feedback, work["ref"], work["ref_sum"],
                work["ref_mass"], bf.gaussian_slope(p["width"]), False, *((False,) if "filling" in names else ()),
                work["summed"], *(scratch if "todo" in names else ()))
        return time.perf_counter() - t

    # The split of the rows between the threads is learnt per kernel (bgsub.models._bands): the tree's learnt it
    # during the frames above, a variant's starts from equal bands. An unchanged copy of the module took 1.05x the
    # tree's time at 1920x1080 (1.01-1.03x at 1280x720) timed without these calls, 1.05x after 10 of them, the same
    # after 40
    for _ in range(args.warmup):
        for module in modules:
            once(module)
    times = [[] for _ in modules]
    outputs = []
    for r in range(args.reps):
        for k, module in enumerate(modules):
            times[k].append(once(module))
            if r == 0:
                outputs.append({n: work[n].copy() for n in OUTPUTS}
                               | {"summed": work["summed"].sum() / (H * W), "stepped": work["stepped"].sum() / (H * W)})
    print(f"{W}x{H}, highway frame {numbers[60]} after {numbers[0]}-{numbers[59]}, {args.reps} interleaved repetitions, "
          f"load {os.getloadavg()[0]:.1f}")
    for k, name in enumerate(["bgsub/models/_bounded_frame.py"] + args.variants):
        same = all(np.array_equal(outputs[0][n], outputs[k][n]) for n in OUTPUTS)
        print(f"{name[-40:]:40s} median {np.median(times[k]) * 1e3:6.2f} ms  min {np.min(times[k]) * 1e3:6.2f} ms  "
              f"summed {outputs[k]['summed']:.4f}  stepped {outputs[k]['stepped']:.4f}  same as the tree's: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
