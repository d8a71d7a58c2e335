"""``bgsub run SOURCE``: subtract the background of a camera, video, image folder or sequence.

Writes one mask per frame as ``DIR/bin%06d.png`` (CDnet numbering from 1)
and/or a mask video; shows a progress bar for files and the live frame rate for
cameras; Ctrl-C stops cleanly with everything written so far complete (each
PNG is renamed into place when whole; the mask video is finalised). When the
source is a CDnet sequence with ground truth, prints its CDnet scores.

The pieces are reusable: :func:`resolve_algorithm` (``--algo``, ``--config``,
``--preset``, ``--set`` into a name and checked parameters) and
:func:`process` (one source through one subtractor into writers) serve
``bgsub batch`` and ``bgsub demo`` too.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from bgsub.sources import Frame, FrameSource, SourceError, list_cameras, open_source
from bgsub.writers import MaskVideoWriter, MaskWriter

__all__ = [
    "DEFAULT_ALGO",
    "ConfigError",
    "RunResult",
    "add_algorithm_arguments",
    "load_config",
    "resolve_algorithm",
    "process",
    "format_metrics",
    "add_arguments",
    "main",
]

DEFAULT_ALGO = "olkn"
#: Where outputs go when no --out is given.
DEFAULT_OUTPUT_ROOT = Path("bgsub-output")


class ConfigError(ValueError):
    """A bad --algo/--set/--config/--preset; the message says what to fix."""


# --------------------------------------------------------------------------
# Algorithm and parameters
# --------------------------------------------------------------------------


def add_algorithm_arguments(parser: argparse.ArgumentParser) -> None:
    """``--algo``, ``--preset``, ``--config``, ``--set`` (shared by run, batch, demo)."""
    parser.add_argument(
        "--algo", default=None, metavar="NAME",
        help=f"background subtractor: olkn, norma, knn or mog2 (default: {DEFAULT_ALGO}, "
             "or the config file's 'algo')",
    )
    parser.add_argument("--preset", default=None, metavar="NAME",
                        help="start from a named parameter preset of the algorithm")
    parser.add_argument("--config", type=Path, default=None, metavar="FILE.toml",
                        help="TOML file with 'algo' and a [params] table (or a table named after the algo)")
    parser.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE",
                        help="set one parameter, e.g. --set width=12 (repeatable; overrides --config)")


def load_config(path: str | os.PathLike) -> dict[str, Any]:
    """Read a TOML run configuration.

    Accepted keys: ``algo = "olkn"``, ``preset = "NAME"``, a ``[params]`` table,
    and tables named after algorithms (``[olkn]``, ``[knn]``...) whose values
    apply when that algorithm runs.

    Raises
    ------
    ConfigError
        When the file is missing or not valid TOML.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    return data


def resolve_algorithm(
    algo: str | None = None,
    assignments: list[str] | None = None,
    config: str | os.PathLike | None = None,
    preset: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """The algorithm name and its full, checked parameters.

    Precedence (later wins): the algorithm's defaults, the preset, the config
    file's values, ``--set`` assignments. ``algo`` (``--algo``) beats the config
    file's ``algo``.

    Raises
    ------
    ConfigError
        With the reason (unknown algorithm or parameter, value out of range...).
    """
    from bgsub.registry import algorithms, default_params, parse_assignments, validate_params

    data: dict[str, Any] = {}
    if config is not None:
        data = load_config(config)
    name = algo or data.get("algo") or DEFAULT_ALGO
    if not isinstance(name, str):
        raise ConfigError(f"'algo' must be a name such as \"olkn\", got {name!r}")
    known = algorithms()
    if name not in known:
        raise ConfigError(f"unknown algorithm {name!r}; choose one of {', '.join(known)}")
    preset = preset or data.get("preset")
    try:
        params = default_params(name, preset)
        from_file: dict[str, Any] = {}
        for table in ("params", name):
            values = data.get(table, {})
            if not isinstance(values, dict):
                raise ConfigError(f"[{table}] in {config} must be a table of parameter values")
            from_file.update(values)
        if from_file:
            try:
                params.update(validate_params(name, from_file))
            except ValueError as exc:
                raise ConfigError(f"{config}: {exc}") from None
        params.update(parse_assignments(name, assignments))
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return name, params


# --------------------------------------------------------------------------
# Processing
# --------------------------------------------------------------------------


@dataclass
class RunResult:
    """What one pass of :func:`process` did.

    Attributes
    ----------
    frames : int
        Frames processed (one mask each).
    seconds : float
        Wall time of the pass (decoding, subtraction, writing).
    fps : float
        ``frames / seconds``.
    subtract_fps : float
        Frames per second of the subtractor alone (time inside ``apply``).
    interrupted : bool
        True when stopped by Ctrl-C, a closed window or ``should_stop``.
    first_index, last_index : int or None
        Frame numbers of the first and last frame processed.
    metrics : dict or None
        CDnet metrics over the scored frames, when the source had ground truth.
    scored_frames : int
        Frames that entered the metrics.
    masks_written : int
        PNG masks written.
    video_frames : int
        Frames written to the mask video.
    source_summary : str
        The source's own account (frames read, any lost).
    """

    frames: int = 0
    seconds: float = 0.0
    fps: float = 0.0
    subtract_fps: float = 0.0
    interrupted: bool = False
    first_index: int | None = None
    last_index: int | None = None
    metrics: dict[str, float] | None = None
    scored_frames: int = 0
    masks_written: int = 0
    video_frames: int = 0
    source_summary: str = ""
    decode_errors: int = 0
    expected_frames: int | None = None
    warnings: list[str] = field(default_factory=list)


def process(
    source: FrameSource,
    subtractor,
    *,
    masks: MaskWriter | None = None,
    video: MaskVideoWriter | None = None,
    score: bool = True,
    on_frame: Callable[[Frame, np.ndarray], Any] | None = None,
    should_stop: Callable[[], bool] | None = None,
    catch_interrupt: bool = True,
) -> RunResult:
    """Run every frame of ``source`` through ``subtractor`` into the writers.

    Parameters
    ----------
    source : FrameSource
    subtractor
        Anything with ``apply(image) -> mask`` (uint8 0/255).
    masks : MaskWriter, optional
        Receives every mask as ``bin%06d.png`` under the frame's number.
    video : MaskVideoWriter, optional
        Receives every mask; closed by the caller.
    score : bool
        Score frames inside the sequence's temporal ROI when they carry ground
        truth (CDnet rules, :mod:`bgsub.metrics`).
    on_frame : callable, optional
        ``on_frame(frame, mask)`` after each frame (progress, display); a
        return value of ``False`` stops the pass.
    should_stop : callable, optional
        Polled before each frame; True stops the pass.
    catch_interrupt : bool
        Turn Ctrl-C into a clean stop (``interrupted=True``) after the current
        frame's outputs are complete.

    Returns
    -------
    RunResult
    """
    result = RunResult(expected_frames=source.frame_count)
    scorer = None
    seq = source.sequence
    if score and seq is not None and seq.has_groundtruth:
        from bgsub.metrics import SequenceScorer

        scorer = SequenceScorer(keep_frames=False)
    # Ctrl-C sets a flag taken between frames, so the frame being processed
    # is written whole; a second Ctrl-C interrupts at once (every PNG is
    # atomic anyway, and the caller closes the video writer).
    stop_requested = [False]
    previous_handler = None
    if catch_interrupt and threading.current_thread() is threading.main_thread():
        def _on_sigint(signum, _frame):
            if stop_requested[0]:
                raise KeyboardInterrupt
            stop_requested[0] = True

        previous_handler = signal.signal(signal.SIGINT, _on_sigint)
    t_apply = 0.0
    start = time.perf_counter()
    iterator = iter(source)
    try:
        while True:
            if stop_requested[0] or (should_stop is not None and should_stop()):
                result.interrupted = True
                break
            try:
                frame = next(iterator)
            except StopIteration:
                break
            t0 = time.perf_counter()
            mask = subtractor.apply(frame.image)
            t_apply += time.perf_counter() - t0
            if masks is not None:
                masks.write(frame.index, mask)
                result.masks_written += 1
            if video is not None:
                video.write(mask)
                result.video_frames += 1
            result.frames += 1
            if result.first_index is None:
                result.first_index = frame.index
            result.last_index = frame.index
            if scorer is not None and frame.groundtruth is not None and seq.is_scored(frame.index):
                scorer.add(frame.index, mask, frame.groundtruth, frame.roi)
                result.scored_frames += 1
            if on_frame is not None and on_frame(frame, mask) is False:
                result.interrupted = True
                break
    except KeyboardInterrupt:
        if not catch_interrupt:
            raise
        result.interrupted = True
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGINT, previous_handler)
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
    result.seconds = time.perf_counter() - start
    result.fps = result.frames / result.seconds if result.seconds > 0 else 0.0
    result.subtract_fps = result.frames / t_apply if t_apply > 0 else 0.0
    result.decode_errors = source.decode_errors
    result.source_summary = source.summary()
    if not result.interrupted and source.incomplete:
        result.warnings.append(source.summary())
    if scorer is not None and result.scored_frames:
        result.metrics = scorer.metrics()
    return result


def format_metrics(metrics: dict[str, float]) -> str:
    """One line of CDnet metrics: ``F=0.812 recall=... precision=... PWC=...``."""
    parts = []
    for key in ("F", "recall", "precision", "specificity", "FPR", "FNR", "PWC"):
        if key in metrics:
            v = metrics[key]
            parts.append(f"{key}={'nan' if v is None or (isinstance(v, float) and math.isnan(v)) else f'{v:.3f}'}")
    return " ".join(parts)


# --------------------------------------------------------------------------
# Display (--show)
# --------------------------------------------------------------------------


class _Preview:
    """A minimal Qt window showing the frame and its mask side by side."""

    def __init__(self, title: str) -> None:
        try:
            from PySide6 import QtCore, QtGui, QtWidgets
        except ImportError:
            raise ConfigError(
                "--show needs the desktop extra: pip install -e '.[gui]' (PySide6); "
                "or leave out --show and look at the written masks"
            ) from None
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM") or sys.platform in ("win32", "darwin")):
            raise ConfigError("--show needs a display (no $DISPLAY or $WAYLAND_DISPLAY is set)")
        self._QtGui = QtGui
        self.app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([sys.argv[0]])
        self.label = QtWidgets.QLabel()
        self.label.setWindowTitle(f"bgsub - {title}  (close the window to stop)")
        self.label.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.closed = False
        preview = self

        class _Filter(QtCore.QObject):
            def eventFilter(self, obj, event):  # noqa: N802 - Qt name
                if event.type() == QtCore.QEvent.Type.Close:
                    preview.closed = True
                return False

        self._filter = _Filter()
        self.label.installEventFilter(self._filter)
        self.label.show()
        self.shown = 0

    def update(self, frame: Frame, mask: np.ndarray) -> bool:
        if self.closed:
            return False
        import cv2

        side = np.hstack([frame.image, cv2.cvtColor(mask, cv2.COLOR_GRAY2BGR)])
        rgb = np.ascontiguousarray(side[:, :, ::-1])
        h, w = rgb.shape[:2]
        img = self._QtGui.QImage(rgb.data, w, h, 3 * w, self._QtGui.QImage.Format.Format_RGB888).copy()
        self.label.setPixmap(self._QtGui.QPixmap.fromImage(img))
        self.app.processEvents()
        self.shown += 1
        return not self.closed

    def close(self) -> None:
        self.label.close()
        self.app.processEvents()


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source", nargs="?",
        help="camera index (0), video file, folder of images, or CDnet sequence folder",
    )
    add_algorithm_arguments(parser)
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write one mask per frame as DIR/bin%%06d.png (default: "
                             "bgsub-output/<source name> when neither --mask-video nor --show is given)")
    parser.add_argument("--mask-video", type=Path, default=None, metavar="FILE",
                        help="also write the masks as a video (.mp4, .avi, or .mkv for lossless FFV1)")
    parser.add_argument("--show", action="store_true",
                        help="show frame and mask in a window while running (needs the gui extra)")
    parser.add_argument("--start", type=int, default=1, metavar="N", help="first frame to process (files)")
    parser.add_argument("--max-frames", type=int, default=None, metavar="N", help="stop after N frames")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or fps line")
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

    def __call__(self, frame: Frame, mask: np.ndarray) -> None:
        self.n += 1
        now = time.perf_counter()
        if now - self.t_last >= 0.5:
            self.fps = (self.n - self.n_last) / (now - self.t_last)
            self.t_last, self.n_last = now, self.n
            fg = float(np.count_nonzero(mask)) / mask.size * 100
            self.stream.write(f"\r{self.name}: {self.n} frames, {self.fps:5.1f} fps, foreground {fg:4.1f} %  "
                              "(Ctrl-C stops)")
            self.stream.flush()

    def close(self) -> None:
        if self.n:
            self.stream.write("\n")
            self.stream.flush()


def _chain(*callbacks):
    callbacks = [c for c in callbacks if c is not None]

    def call(frame, mask):
        ok = True
        for c in callbacks:
            if c(frame, mask) is False:
                ok = False
        return ok

    return call if callbacks else None


def main(args: argparse.Namespace) -> int:
    if args.list_cameras:
        found = list_cameras()
        print("cameras: " + (", ".join(map(str, found)) if found else "none found (indices 0-7 tried)"))
        return 0
    if args.source is None:
        print("bgsub run: give a SOURCE (camera index, video file, image folder or CDnet folder)",
              file=sys.stderr)
        return 2
    try:
        algo, params = resolve_algorithm(args.algo, args.assignments, args.config, args.preset)
    except ConfigError as exc:
        print(f"bgsub run: {exc}", file=sys.stderr)
        return 2
    try:
        source = open_source(args.source, start=args.start, max_frames=args.max_frames)
    except SourceError as exc:
        print(f"bgsub run: {exc}", file=sys.stderr)
        return 1
    out = args.out
    if out is None and args.mask_video is None and not args.show:
        out = DEFAULT_OUTPUT_ROOT / source.name
    preview = None
    masks = video = None
    with source:
        try:
            from bgsub.registry import create

            subtractor = create(algo, **params)
            if args.show:
                preview = _Preview(source.describe())
            if out is not None:
                if out.exists() and not out.is_dir():
                    raise ConfigError(f"--out {out} is a file; give a folder for the masks")
                masks = MaskWriter(out)
                stale = masks.remove_stale()
                if stale:
                    print(f"removed {stale} masks of an earlier run from {out}", file=sys.stderr)
            if args.mask_video is not None:
                video = MaskVideoWriter(args.mask_video, source.fps or 25.0)
        except (ConfigError, ValueError, OSError) as exc:
            print(f"bgsub run: {exc}", file=sys.stderr)
            return 2
        print(f"{source.describe()} -> {algo} "
              + " ".join(f"{k}={v}" for k, v in params.items()), file=sys.stderr)
        bar = status = None
        if not args.quiet:
            if source.is_live:
                status = _CameraStatus(source.describe())
            else:
                from tqdm import tqdm

                bar = tqdm(total=source.frame_count, unit="frame", desc=source.name, dynamic_ncols=True)

        def tick(frame, mask):
            bar.update(1)

        try:
            result = process(
                source, subtractor, masks=masks, video=video,
                on_frame=_chain(tick if bar is not None else None, status,
                                preview.update if preview is not None else None),
            )
        except (SourceError, OSError) as exc:
            if bar is not None:
                bar.close()
                bar = None
            written = f"; {masks.count} masks written to {masks.folder}" if masks is not None else ""
            print(f"bgsub run: stopped at frame {source.frames_read + 1}: {exc}{written}", file=sys.stderr)
            return 1
        finally:
            if bar is not None:
                bar.close()
            if status is not None:
                status.close()
            if video is not None:
                video.close()
            if preview is not None:
                preview.close()
    how = "stopped" if result.interrupted else "done"
    print(f"{how}: {result.frames} frames in {result.seconds:.1f} s ({result.fps:.1f} fps overall, "
          f"{result.subtract_fps:.1f} fps subtraction)", file=sys.stderr)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if masks is not None and result.masks_written:
        print(f"masks: {masks.folder}/bin{result.first_index:06d}.png .. bin{result.last_index:06d}.png "
              f"({result.masks_written} files)")
    if video is not None and result.video_frames:
        print(f"mask video: {video.path} ({result.video_frames} frames)")
    if result.metrics is not None:
        print(f"CDnet scores over {result.scored_frames} scored frames: {format_metrics(result.metrics)}")
    return 130 if result.interrupted and not (preview is not None and preview.closed) else 0
