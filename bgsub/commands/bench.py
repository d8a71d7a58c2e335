"""``bgsub bench``: the same frames, in memory, through every subtractor; fps and ratio to KNN.

Argument parsing and the table; the timing (frames, warm-up, interleaved
rounds, medians) is :mod:`bgsub.benchmark`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bgsub.benchmark import DEFAULT_WARMUP, benchmark, load_frames, resolve_spec  # noqa: F401 (load_frames re-exported)
from bgsub.commands._common import algorithm_names, check_positive, error, parse_size
from bgsub.devices import add_device_argument, check_device_for, spec_device, with_device

__all__ = ["add_arguments", "main", "load_frames", "benchmark"]

DEFAULT_SIZES = ("320x240", "1280x720", "1920x1080")
DEFAULT_ALGOS = ("olkn", "norma", "knn", "mog2")


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
    add_device_argument(parser, "; cuda times olkn and norma on the GPU (NAME@cuda) beside their CPU engine "
                                "and the others")


def main(args: argparse.Namespace) -> int:
    try:
        algos = with_device(tuple(args.algos or DEFAULT_ALGOS), getattr(args, "device", "cpu"))
        for a in algos:
            resolve_spec(a)  # an unknown algorithm, preset or parameter: a one-line error here
            check_device_for(*resolve_spec(a), spec_device(a))  # (and a device that cannot run it here)
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
