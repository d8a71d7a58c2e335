"""``bgsub demo``: the whole job on the bundled sample clip, with no arguments.

Headless (no display, no GUI extra, or ``--no-gui``): runs the subtractor on the
bundled sample (``videos/sample``, a synthetic street scene with exact ground
truth; see :mod:`bgsub.sample`), writes one mask per frame to a folder it
prints (``bgsub-output/demo`` by default) and prints the CDnet scores. With
``--compare`` it scores every registered algorithm on the same clip.

With a display and the ``gui`` extra installed, it opens the desktop app on the
sample instead (``--no-gui`` keeps it in the terminal).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from bgsub.commands._common import (DEFAULT_OUTPUT_ROOT, add_algorithm_arguments, compile_first, describe_params, error,
                                    summarize_params)
from bgsub.metrics import format_metrics
from bgsub.pipeline import Callback, MaskFiles, Pipeline, Scores
from bgsub.settings import ConfigError, resolve_algorithm
from bgsub.sources import SourceError, open_source

__all__ = ["gui_available", "gui_unavailable_reason", "add_arguments", "main"]


def gui_unavailable_reason() -> str | None:
    """Why the desktop app cannot open here (no display, no gui extra), or None when it can."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform in ("win32", "darwin")):
        return "no display ($DISPLAY and $WAYLAND_DISPLAY are not set)"
    missing = [m for m in ("PySide6", "pyqtgraph") if importlib.util.find_spec(m) is None]
    if missing or importlib.util.find_spec("bgsub_gui") is None or importlib.util.find_spec("bgsub_gui.app") is None:
        return "the desktop app is not installed (pip install -e '.[gui]')"
    return None


def gui_available() -> bool:
    """True when a display is set and the desktop app can be imported."""
    return gui_unavailable_reason() is None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_algorithm_arguments(parser)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUTPUT_ROOT / "demo", metavar="DIR",
                        help="where the masks go (default: bgsub-output/demo)")
    parser.add_argument("--no-gui", action="store_true",
                        help="stay in the terminal even when a display and the gui extra are present")
    parser.add_argument("--compare", action="store_true",
                        help="also score every other registered algorithm on the sample (masks not kept)")
    parser.add_argument("--picture", type=Path, default=None, metavar="FILE.png",
                        help="also save one frame, its ground truth and its mask side by side")
    parser.add_argument("--picture-frame", type=int, default=250, metavar="N",
                        help="the frame --picture shows (default 250)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or parameter line")
    parser.add_argument("--verbose", action="store_true",
                        help="list every parameter of the algorithm (default: only those that differ from its "
                             "defaults)")


def compose_picture(image, groundtruth, mask, algo: str, index: int):
    """``[input | ground truth | mask]`` with captions, BGR uint8."""
    import cv2
    import numpy as np

    h, w = image.shape[:2]
    panels = [image, cv2.cvtColor(groundtruth, cv2.COLOR_GRAY2BGR), cv2.cvtColor(mask, cv2.COLOR_GRAY2BGR)]
    captions = [f"input, frame {index}", "ground truth", f"mask: {algo}"]
    bar = max(16, h // 12)
    out = []
    for panel, caption in zip(panels, captions):
        canvas = np.full((h + bar, w, 3), 32, np.uint8)
        canvas[bar:] = panel
        scale = bar / 30
        cv2.putText(canvas, caption, (4, bar - 5), cv2.FONT_HERSHEY_SIMPLEX, scale, (235, 235, 235), 1, cv2.LINE_AA)
        out.append(canvas)
    gap = np.full((h + bar, 4, 3), 255, np.uint8)
    return np.hstack([out[0], gap, out[1], gap, out[2]])


def _run_one(seq_path: Path, algo: str, params: dict, out: Path | None, quiet: bool,
             keep_frame: int | None = None, kept: dict | None = None):
    """The sample through one pipeline: masks into ``out``, scores; frame ``keep_frame`` kept for the picture."""
    from bgsub.registry import create

    subtractor = create(algo, **params)
    with open_source(seq_path) as source:
        sinks: list = [Scores(roc=False)]
        if out is not None:
            sinks.append(MaskFiles(out))
        bar = None
        # numba's first compile is a step of its own, before the bar: not a frame's time
        compile_first(subtractor, algo, params, quiet=quiet)
        if not quiet:
            from tqdm import tqdm

            bar = tqdm(total=source.frame_count, unit="frame", desc=algo, dynamic_ncols=True)
            sinks.append(Callback(lambda o: bar.update(1)))
        if keep_frame is not None and kept is not None:
            def keep(o):
                if o.index == keep_frame:
                    kept.update(image=o.image, groundtruth=o.groundtruth, mask=o.mask.copy(), index=o.index)

            sinks.append(Callback(keep))
        try:
            result = Pipeline(subtractor, sinks=sinks).run(source)
        finally:
            if bar is not None:
                bar.close()
    return result


def _check_outputs(args, sample: Path) -> None:
    """Refuse, before the clip is processed, outputs on or inside the sample (or the config), a --picture in a
    format OpenCV cannot write or in a folder that cannot be written, and a mask folder holding masks bgsub did
    not write (ValueError)."""
    import cv2

    from bgsub.pipeline.paths import OutputError, check_mask_folder, check_outputs, check_writable

    check_outputs([("sample", sample), ("--config", args.config)], [("--out", args.out), ("--picture", args.picture)])
    check_writable("--out", args.out, folder=True)
    if args.picture is not None:
        check_writable("--picture", args.picture)
        if not cv2.haveImageWriter(str(args.picture)):
            kind = args.picture.suffix or "a name without a suffix"
            raise OutputError(f"--picture {args.picture}: OpenCV cannot write {kind}; end the name in .png or .jpg")
    check_mask_folder("--out", args.out)


def main(args: argparse.Namespace) -> int:
    from bgsub.sample import sample_sequence

    try:
        algo, params = resolve_algorithm(args.algo, args.assignments, args.config, args.preset)
    except ConfigError as exc:
        return error("demo", str(exc), 2)
    if not args.no_gui:
        reason = gui_unavailable_reason()
        if reason is None:
            from bgsub_gui.app import main as gui_main

            argv = ["sample", "--algo", algo] + [a for kv in args.assignments for a in ("--set", kv)]
            print("opening the desktop app on the bundled sample (bgsub demo --no-gui stays in the terminal)",
                  file=sys.stderr)
            return int(gui_main(argv) or 0)
        print(f"staying in the terminal: {reason}", file=sys.stderr)

    seq = sample_sequence()
    try:
        _check_outputs(args, seq)
    except ValueError as exc:
        return error("demo", str(exc), 2)
    if args.picture is not None:
        from bgsub.cdnet import load_sequence

        frames = load_sequence(seq).frames
        if args.picture_frame not in frames:
            return error("demo", f"--picture-frame must be a frame of the sample, {frames[0]}..{frames[-1]}; "
                                 f"got {args.picture_frame}", 2)
    print(f"sample: {seq} (synthetic street scene, 320x240, ground truth; scored frames from "
          f"temporalROI.txt)", file=sys.stderr)
    if not args.quiet:
        described = (describe_params if args.verbose else summarize_params)(algo, params)
        print(f"algorithm: {described}", file=sys.stderr)
    kept: dict = {}
    try:
        result = _run_one(seq, algo, params, args.out, args.quiet,
                          args.picture_frame if args.picture else None, kept)
    except (SourceError, OSError, ValueError) as exc:
        return error("demo", str(exc), 1)
    if result.error is not None:
        return error("demo", f"stopped at {result.error}", 1)
    if result.interrupted:
        print(f"stopped after {result.frames} frames; masks so far in {args.out}", file=sys.stderr)
        return 130
    if args.picture is not None:
        from bgsub.writers import make_folder, write_image_atomic

        try:
            make_folder(args.picture.parent, f"folder of {args.picture.name}")
            write_image_atomic(args.picture, compose_picture(kept["image"], kept["groundtruth"], kept["mask"],
                                                             algo, kept["index"]))
        except OSError as exc:
            return error("demo", f"--picture {args.picture}: {exc}", 1)
        print(f"picture: {args.picture}")
    rows = [(algo, result)]
    print(f"masks: {args.out.resolve()} ({result.frames} files bin{result.first_index:06d}.png .. "
          f"bin{result.last_index:06d}.png)")
    if args.compare:
        from bgsub.registry import algorithms, default_params

        for other in algorithms():
            if other == algo:
                continue
            r = _run_one(seq, other, default_params(other), None, args.quiet)
            if r.interrupted or r.error:
                return error("demo", f"{other} stopped at {r.error}", 1) if r.error else 130
            rows.append((other, r))
    print(f"CDnet scores on the sample ({result.scored_frames} scored frames):")
    width = max(len(name) for name, _ in rows)
    for name, r in rows:
        if r.metrics is None:
            print(f"  {name:<{width}}  (no ground truth scored)")
            continue
        print(f"  {name:<{width}}  {format_metrics(r.metrics)}  {r.fps:.0f} fps")
    return 0
