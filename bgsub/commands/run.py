"""``bgsub run SOURCE``: subtract the background of a camera, video, image folder or sequence.

Argument parsing and one :class:`bgsub.pipeline.Pipeline`: masks as
``DIR/bin%06d.png`` (CDnet numbering from 1), a mask video, an overlay video,
the objects of each frame (JSONL or CSV, with track ids), a live window,
checkpoints of the model; a region of interest and a processing scale. A
progress bar for files, the live frame rate for cameras; Ctrl-C stops cleanly
with everything written so far complete. When the source is a CDnet sequence
with ground truth, prints its CDnet scores.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from bgsub.commands import _common as common
from bgsub.devices import add_device_argument
from bgsub.metrics import format_metrics
from bgsub.pipeline import Callback, Checkpoints, MaskFiles, MaskVideo, ObjectsFile, OverlayVideo, Pipeline, Scores
from bgsub.pipeline import describe_error
from bgsub.pipeline.paths import check_outputs, check_writable, source_path
from bgsub.settings import ConfigError, resolve_algorithm
from bgsub.sources import SourceError, StartPastEndError, list_cameras, open_source

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source", nargs="?",
        help="camera index (0), video file, folder of images, or CDnet sequence folder",
    )
    common.add_algorithm_arguments(parser)
    add_device_argument(parser)
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write one mask per frame as DIR/bin%%06d.png (default: bgsub-output/<source "
                             "name> when no other output is asked for)")
    parser.add_argument("--mask-video", type=Path, default=None, metavar="FILE",
                        help="also write the masks as a video (.mp4, .avi, or .mkv for lossless FFV1)")
    parser.add_argument("--overlay", type=Path, default=None, metavar="FILE.mp4",
                        help="write the input with the mask tinted and the objects boxed, as a video")
    parser.add_argument("--objects", type=Path, default=None, metavar="FILE.jsonl|FILE.csv",
                        help="write every foreground object of every frame: frame, track id, box, area, centroid")
    common.add_frame_arguments(parser)
    parser.add_argument("--show", action="store_true",
                        help="show frame and mask in a window while running (needs the gui extra)")
    parser.add_argument("--start", type=int, default=1, metavar="N", help="first frame to process (files)")
    parser.add_argument("--max-frames", type=int, default=None, metavar="N", help="stop after N frames")
    parser.add_argument("--checkpoint", type=Path, default=None, metavar="FILE.npz",
                        help="save the model (atomically) every --checkpoint-every frames and at the end")
    parser.add_argument("--checkpoint-every", type=int, default=100, metavar="N",
                        help="frames between checkpoints (default 100)")
    parser.add_argument("--resume", type=Path, default=None, metavar="FILE.npz",
                        help="continue from a checkpoint: its algorithm and parameters, from the frame after it")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, fps line or parameter line")
    parser.add_argument("--verbose", action="store_true",
                        help="list every parameter of the algorithm (default: only those that differ from its "
                             "defaults)")
    parser.add_argument("--list-cameras", action="store_true", help="list the camera indices that open, then exit")


class _CameraStatus:
    """A one-line live fps display for cameras (stderr, refreshed twice a second)."""

    def __init__(self, name: str, stream=sys.stderr) -> None:
        self.name = name
        self.stream = stream
        self.n = 0
        self.t0 = time.perf_counter()
        self.t_last = self.t0
        self.n_last = 0
        self.fps = 0.0

    def __call__(self, out) -> None:
        self.n += 1
        now = time.perf_counter()
        if now - self.t_last >= 0.5:
            self.fps = (self.n - self.n_last) / (now - self.t_last)
            self.t_last, self.n_last = now, self.n
            fg = float(np.count_nonzero(out.mask)) / out.mask.size * 100
            self.stream.write(f"\r{self.name}: {self.n} frames, {self.fps:5.1f} fps, foreground {fg:4.1f} %  "
                              "(Ctrl-C stops)")
            self.stream.flush()

    def close(self) -> None:
        if self.n:
            self.stream.write("\n")
            self.stream.flush()


def _subtractor(args):
    """``(algo, params, subtractor, frames already seen)`` from --resume or --algo/--set/--config."""
    import bgsub
    from bgsub.registry import create

    if args.resume is not None:
        given = [o for o, v in (("--algo", args.algo), ("--set", args.assignments), ("--config", args.config),
                                ("--preset", args.preset)) if v]
        if given:
            raise ConfigError(f"--resume takes the algorithm and parameters from the checkpoint; "
                              f"leave out {', '.join(given)}")
        sub = bgsub.load(args.resume, device=getattr(args, "device", "cpu"))
        from bgsub.checkpoint import algorithm_name

        params = dict(sub.get_params()) if callable(getattr(sub, "get_params", None)) else {}
        return algorithm_name(sub), params, sub, int(sub.n_frames_)
    algo, params = resolve_algorithm(args.algo, args.assignments, args.config, args.preset)
    return algo, params, create(algo, device=getattr(args, "device", "cpu"), **params), 0


def _inputs(args) -> list:
    """What ``run`` reads, labelled for messages: the source (a file or folder), --roi, --config, --resume."""
    return [("input", source_path(args.source)), ("--roi", args.roi), ("--config", args.config),
            ("--resume", args.resume)]


def _outputs(args, out) -> list:
    """What ``run`` writes, by option; ``out`` is the mask folder (given or the default)."""
    return [("--out", out), ("--mask-video", args.mask_video), ("--overlay", args.overlay),
            ("--objects", args.objects), ("--checkpoint", args.checkpoint)]


def check_run_outputs(args, out) -> None:
    """Refuse, before any frame is read, an output that is, contains or lies inside an input, two outputs
    naming one file, and an output that cannot be written (OutputError, a ValueError)."""
    outputs = _outputs(args, out)
    check_outputs(_inputs(args), outputs, may_replace=[("--checkpoint", "--resume")])
    for option, path in outputs:
        if path is not None:
            check_writable(option, path, folder=option == "--out")


def _mask_folder(args, source):
    """``--out``, or the default folder when no other output is asked for."""
    if args.out is None and not (args.mask_video or args.overlay or args.objects or args.show or args.checkpoint):
        return common.DEFAULT_OUTPUT_ROOT / source.name
    return args.out


def _build_sinks(args, source, subtractor) -> dict:
    """The sinks the options ask for, by name; those that can refuse an option come first."""
    out = _mask_folder(args, source)
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the masks")
    named: dict = {}
    if args.checkpoint is not None:
        named["checkpoint"] = Checkpoints(subtractor, args.checkpoint, args.checkpoint_every)
    if args.show:
        from bgsub.pipeline.preview import Preview

        named["preview"] = Preview(source.describe())
    fps = source.fps or 25.0
    if args.mask_video is not None:
        named["video"] = MaskVideo(args.mask_video, fps)
    if args.overlay is not None:
        named["overlay"] = OverlayVideo(args.overlay, fps)
    if out is not None:
        named["masks"] = MaskFiles(out, resume=args.resume is not None)
    if args.objects is not None:
        named["objects"] = ObjectsFile(args.objects)
    named["scores"] = Scores(roc=False)
    return named


def _past_the_end(args, seen: int, reason: str) -> str:
    """Why nothing is left to process: ``--start`` past the end, or a checkpoint that saw the source to its end."""
    if seen:
        return (f"--resume {args.resume}: the model has already processed {seen} frames from frame {args.start} "
                f"on, and {reason}: nothing is left to do")
    return f"--start {args.start}: {reason}; give a smaller --start"


def main(args: argparse.Namespace) -> int:
    if args.list_cameras:
        found = list_cameras()
        print("cameras: " + (", ".join(map(str, found)) if found else "none found (indices 0-7 tried)"))
        return 0
    if args.source is None:
        return common.error("run", "give a SOURCE (camera index, video file, image folder or CDnet folder)", 2)
    try:
        common.check_positive(args.max_frames, "--max-frames")
        common.check_positive(args.start, "--start")
        common.check_positive(args.checkpoint_every, "--checkpoint-every")
        common.check_positive(args.min_area, "--min-area", 0)
        region = common.build_region(args)
        check_run_outputs(args, args.out)
        algo, params, subtractor, seen = _subtractor(args)
        pipeline = Pipeline(subtractor, region=region, min_area=args.min_area)
        if "process_scale" in params:  # --scale set it (the header says so)
            params = {**params, "process_scale": subtractor.params["process_scale"]}
    except ValueError as exc:
        return common.error("run", str(exc), 2)
    try:
        source = open_source(args.source, start=args.start, skip=seen, max_frames=args.max_frames)
    except StartPastEndError as exc:
        return common.error("run", _past_the_end(args, seen, str(exc)), 2)
    except SourceError as exc:
        return common.error("run", str(exc), 1)
    with source:
        try:
            if args.out is None:
                check_run_outputs(args, _mask_folder(args, source))
            named = _build_sinks(args, source, subtractor)
        except ValueError as exc:
            return common.error("run", str(exc), 2)
        except OSError as exc:
            return common.error("run", describe_error(exc), 1)
        sinks = list(named.values())
        resumed = (f" (resumed from {args.resume}: {seen} frames from frame {args.start} on already processed)"
                   if args.resume else "")
        if not args.quiet:
            described = (common.describe_params if args.verbose else common.summarize_params)(algo, params)
            print(f"{source.describe()} -> {described}{resumed}", file=sys.stderr)
        bar = status = None
        # numba's first compile is a step of its own, before the bar: not a frame's time
        common.compile_first(subtractor, algo, params, quiet=args.quiet)
        if not args.quiet:
            if source.is_live:
                status = _CameraStatus(source.describe())
                sinks.append(Callback(status))
            else:
                from tqdm import tqdm

                bar = tqdm(total=source.frame_count, unit="frame", desc=source.name, dynamic_ncols=True)
                sinks.append(Callback(lambda out: bar.update(1)))
        pipeline.sinks = sinks
        try:
            result = pipeline.run(source)
        finally:
            if bar is not None:
                bar.close()
            if status is not None:
                status.close()
    masks = named.get("masks")
    if masks is not None and masks.stale_removed:
        print(f"removed {masks.stale_removed} masks of an earlier run from {masks.folder}", file=sys.stderr)
    if result.error is not None:
        written = f"; {masks.count} masks written to {masks.folder}" if masks is not None else ""
        return common.error("run", f"stopped at {result.error}{written}", 1)
    if result.frames == 0 and not result.interrupted and not source.is_live:
        end = getattr(source, "positions", None)
        where = f"{source.describe()}" + (f" (it ends at frame {end})" if end is not None else "")
        what = "after them" if seen else f"at frame {args.start} or after it"
        return common.error("run", _past_the_end(args, seen, f"{where} has no frame {what}"), 2)
    how = "stopped" if result.interrupted else "done"
    after = getattr(source, "skipped_to", None)
    resumed_at = f" (resumed after frame {after} from {args.resume})" if args.resume and after else ""
    print(f"{how}: {result.frames} frames in {result.seconds:.1f} s ({result.fps:.1f} fps overall, "
          f"{result.subtract_fps:.1f} fps subtraction){resumed_at}", file=sys.stderr)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if masks is not None and masks.count:
        print(f"masks: {masks.folder}/bin{result.first_index:06d}.png .. bin{result.last_index:06d}.png "
              f"({masks.count} files)")
    for key, what in (("video", "mask video"), ("overlay", "overlay video")):
        if key in named and named[key].count:
            print(f"{what}: {named[key].path} ({named[key].count} frames)")
    if "objects" in named:
        print(f"objects: {named['objects'].path} ({named['objects'].count} rows)")
    if "checkpoint" in named and named["checkpoint"].saved:
        print(f"checkpoint: {named['checkpoint'].path} (after frame {result.last_index})")
    if result.metrics is not None:
        print(f"CDnet scores over {result.scored_frames} scored frames: {format_metrics(result.metrics)}")
    preview = named.get("preview")
    return 130 if result.interrupted and not (preview is not None and preview.closed) else 0
