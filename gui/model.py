"""The app's session, free of Qt: a frame source, a subtractor and running metrics.

A :class:`Session` owns one open :class:`bgsub.sources.FrameSource`, one
subtractor built by :func:`bgsub.registry.create` and, when the source has CDnet
ground truth, the running confusion counts and a streaming ROC curve. It turns
one frame into one immutable :class:`FrameResult` that the views draw. Frames go
through one :class:`bgsub.pipeline.Pipeline`, whose sinks also save what the user
asks for while it runs: masks, an overlay video, the objects file. The Qt
worker (:mod:`bgsub_gui.worker`) drives it from its own thread; tests drive it directly.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from bgsub import registry
from bgsub.checkpoint import algorithm_name
# warm_up: the window runs a throwaway subtractor in the GUI thread before the worker thread processes frames,
# which keeps numba's imports out of the worker (with PySide6 6.11, a worker thread importing numba's modules
# while the GUI thread ran Qt's event loop crashed the process in about one test run in six).
from bgsub.warmup import WARM_UP_SIZE, warm_up  # noqa: F401 (WARM_UP_SIZE: the size of its frames)
from bgsub.checkpoint import load as load_checkpoint
from bgsub.metrics import ConfusionCounts
from bgsub.pipeline import (DetectedObject, MaskFiles, ObjectsFile, OverlayVideo, Pipeline, Region, Scores, Sink,
                            check_model_scale)
from bgsub.pipeline.paths import check_mask_folder, check_outputs, check_writable, source_path
from bgsub.sources import SourceError, open_source

__all__ = [
    "ParamChange",
    "RocSnapshot",
    "FrameResult",
    "SourceInfo",
    "LatestFrameReader",
    "Session",
    "default_algorithm",
    "device_problem",
    "warm_up",
]

#: Algorithm picked when none is asked for: the paper's OLK_N when registered.
PREFERRED_ALGORITHMS = ("olkn", "norma", "knn", "mog2")


def default_algorithm() -> str:
    """The first of ``olkn, norma, knn, mog2`` that is registered."""
    names = registry.algorithms()
    for name in PREFERRED_ALGORITHMS:
        if name in names:
            return name
    if not names:
        raise RuntimeError("no background subtractor is registered")
    return names[0]


def device_problem(algo: str, params: dict[str, Any] | None = None, device: str = "cuda") -> str | None:
    """None where ``algo`` with ``params`` runs on ``device`` here, else the one line that says what is missing
    (numba-cuda, a usable GPU, an algorithm or option the GPU engine runs:
    :func:`bgsub.devices.check_device_for`, which builds the subtractor once, without a frame)."""
    from bgsub.devices import check_device_for

    try:
        check_device_for(algo, dict(params or {}), device)
    except ValueError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class ParamChange:
    """What a parameter change did.

    Attributes
    ----------
    name : str
        The parameter.
    value : Any
        Its new, checked value.
    live : bool
        True when it was applied to the running model; False when the model was
        rebuilt (its learned background is lost).
    message : str
        One line for the status bar.
    score_range : tuple of float
        ``(low, high)`` of the score map afterwards (it may depend on parameters).
    """

    name: str
    value: Any
    live: bool
    message: str
    score_range: tuple[float, float] = (-1.0, 1.0)


@dataclass(frozen=True)
class RocSnapshot:
    """The ROC curve accumulated so far.

    Attributes
    ----------
    fpr, tpr : ndarray of float, shape (n_points,)
        False- and true-positive rates, one point per score threshold.
    auc : float
        Area under the curve, in [0, 1].
    operating_point : tuple of float
        ``(fpr, tpr)`` at the current threshold.
    threshold : float
        The current threshold (score units).
    """

    fpr: np.ndarray
    tpr: np.ndarray
    auc: float
    operating_point: tuple[float, float]
    threshold: float


@dataclass(frozen=True)
class SourceInfo:
    """What the window shows about the open source.

    Attributes
    ----------
    spec : str
        What was opened (path or camera index), as given.
    name, kind : str
        The source's name and kind (``camera``, ``video``, ``images``, ``cdnet``).
    is_live : bool
        True for a camera: frames are dropped rather than queued.
    fps : float or None
        Nominal frame rate of the source.
    frame_count : int or None
        Number of frames when known.
    has_groundtruth : bool
        True when frames come with CDnet ground truth (ROC and F are computed).
    temporal_roi : tuple of int or None
        ``(first, last)`` scored frames of a CDnet sequence.
    """

    spec: str
    name: str
    kind: str
    is_live: bool
    fps: float | None
    frame_count: int | None
    has_groundtruth: bool
    temporal_roi: tuple[int, int] | None


@dataclass(frozen=True)
class FrameResult:
    """One processed frame, ready to draw.

    Attributes
    ----------
    index : int
        1-based frame number in the source.
    processed : int
        Frames processed since the model was (re)built.
    image : ndarray of uint8, shape (H, W, 3)
        The input frame, BGR.
    mask : ndarray of uint8, shape (H, W)
        Foreground mask at the current threshold: 0 background, 255 foreground.
    score : ndarray of float32, shape (H, W), or None
        The subtractor's score map (positive = foreground), when it has one.
    score_range : tuple of float
        ``(low, high)`` of the score map.
    threshold : float
        Score threshold that made ``mask`` (0: the subtractor's own mask).
    foreground_fraction : float
        Fraction of pixels in ``mask`` that are foreground.
    fps : float
        Frames processed per second (smoothed over the last frames).
    dropped : int
        Camera frames dropped so far because processing was slower than the camera.
    decode_errors : int
        Frames of the source lost so far because they could not be decoded.
    scored : bool
        True when this frame had ground truth inside the temporal ROI.
    counts : ConfusionCounts or None
        Confusion counts summed over the scored frames since the threshold or the
        model last changed; None without ground truth.
    metrics : dict or None
        ``counts.metrics()`` (recall, precision, F, PWC, ...); None without counts.
    scored_frames : int
        Number of frames summed in ``counts``.
    roc : RocSnapshot or None
        The ROC curve so far; None until scored pixels of both classes (motion
        and background) were seen.
    objects : tuple of DetectedObject or None
        The foreground objects (boxes, track ids), when objects are shown,
        recorded or ``min_area`` is set; None otherwise.
    """

    index: int
    processed: int
    image: np.ndarray
    mask: np.ndarray
    score: np.ndarray | None
    score_range: tuple[float, float]
    threshold: float
    foreground_fraction: float
    fps: float
    dropped: int
    decode_errors: int
    scored: bool
    counts: ConfusionCounts | None
    metrics: dict | None
    scored_frames: int
    roc: RocSnapshot | None
    objects: tuple[DetectedObject, ...] | None = None


class LatestFrameReader:
    """Read a live source on its own thread and keep only the newest frame.

    A camera delivers frames at its own pace; when the subtractor is slower, a
    plain read loop would fall further and further behind. This reader drains the
    camera continuously and :meth:`get` returns the newest frame, counting the
    ones nobody took in :attr:`dropped`.

    Parameters
    ----------
    frames : iterator of Frame
        The live source's frames.
    """

    def __init__(self, frames: Iterator) -> None:
        self._frames = frames
        self._lock = threading.Condition()
        self._latest = None
        self._done = False
        self._error: BaseException | None = None
        self._stop = threading.Event()
        #: Frames read but replaced by a newer one before anyone took them.
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="bgsub-gui-camera", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for frame in self._frames:
                with self._lock:
                    if self._latest is not None:
                        self.dropped += 1
                    self._latest = frame
                    self._lock.notify_all()
                if self._stop.is_set():
                    break
        except BaseException as exc:  # reported to the reader's caller by get()
            with self._lock:
                self._error = exc
        finally:
            with self._lock:
                self._done = True
                self._lock.notify_all()

    def get(self, timeout: float = 1.0):
        """The newest unread frame; None when none came within ``timeout`` seconds.

        Raises
        ------
        StopIteration
            When the source ended and every frame was taken.
        Exception
            Whatever the source raised while reading (e.g. the camera was unplugged).
        """
        with self._lock:
            if self._latest is None and not self._done:
                self._lock.wait(timeout)
            frame, self._latest = self._latest, None
            if frame is not None:
                return frame
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            if self._done:
                raise StopIteration
            return None

    @property
    def running(self) -> bool:
        """True while the reading thread is alive."""
        return self._thread.is_alive()

    def stop(self, timeout: float = 2.0) -> None:
        """Ask the reading thread to end and wait up to ``timeout`` seconds for it."""
        self._stop.set()
        self._thread.join(timeout)


def _describe_change(spec: registry.ParamSpec, value: Any, live: bool) -> str:
    unit = f" {spec.unit}" if spec.unit else ""
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    if live:
        return f"{spec.name} = {shown}{unit} (applied to the running model)"
    return f"{spec.name} = {shown}{unit}: the model was reset (this parameter cannot change while running)"


class Session:
    """One source, one subtractor, the running metrics.

    Not thread-safe: one thread (the GUI's worker, or a test) calls its methods.

    Parameters
    ----------
    algo : str or None
        Registered algorithm name (:func:`bgsub.registry.algorithms`); None picks
        :func:`default_algorithm`.
    params : dict or None
        Parameters for ``algo``; the others take their defaults.
    threshold : float
        Score threshold of the mask; 0 is the subtractor's own decision.
    source_opener : callable
        ``open_source(spec) -> FrameSource``; :func:`bgsub.sources.open_source`.
    clock : callable
        Monotonic seconds, for the frame rate.
    roi : ndarray of bool, shape (H, W), optional
        Process only these pixels (:class:`bgsub.pipeline.Region`).
    scale : float
        Processing resolution relative to the input, in (0, 1].
    min_area : int
        Drop foreground blobs smaller than this many pixels.
    device : {"cpu", "cuda"}
        Where olkn's and norma's learners run (:mod:`bgsub.devices`).

    Attributes
    ----------
    algo : str
        The algorithm in use.
    device : str
        Where the model's learners run: ``"cuda"`` (the GPU engine) or ``"cpu"``.
    params : dict
        Every parameter of ``algo`` with its current value.
    subtractor : object
        The subtractor (rebuilt by :meth:`reset_model`).
    source : FrameSource or None
        The open source.
    info : SourceInfo or None
        Description of ``source``.
    threshold : float
        Current score threshold.
    processed : int
        Frames processed since the model was built.
    """

    def __init__(
        self,
        algo: str | None = None,
        params: dict[str, Any] | None = None,
        threshold: float = 0.0,
        source_opener: Callable[..., Any] = open_source,
        clock: Callable[[], float] = time.perf_counter,
        roi: np.ndarray | None = None,
        scale: float = 1.0,
        min_area: int = 0,
        device: str = "cpu",
    ) -> None:
        self._open = source_opener
        self._clock = clock
        self.source = None
        self.info: SourceInfo | None = None
        self._frames: Iterator | None = None
        self._reader: LatestFrameReader | None = None
        #: Sinks saving what the user asked for, by kind: "masks", "overlay", "objects".
        self._outputs: dict[str, Sink] = {}
        self._show_objects = False
        self.algo = algo or default_algorithm()
        self.params = registry.default_params(self.algo)
        self.params.update(registry.validate_params(self.algo, dict(params or {})))
        self.threshold = self._check_threshold(threshold)
        Region(roi, scale)  # ValueError for a bad ROI or scale, before anything runs
        check_model_scale(self.algo, float(scale))
        if min_area < 0:
            raise ValueError(f"min_area must be >= 0, got {min_area}")
        self._roi, self._scale, self._min_area = roi, float(scale), int(min_area)
        self.device = device
        self.subtractor = None
        self.reset_model()

    # ------------------------------------------------------------------ source

    def open(self, spec: str | int | os.PathLike) -> SourceInfo:
        """Open a camera index, video file, image folder or CDnet folder.

        The previous source is closed, the model reset. Raises
        :class:`bgsub.sources.SourceError` (with a message for the user) when the
        source cannot be opened; the previous source is then already closed.
        """
        self.close()
        # A recording belongs to one source: finish the overlay video and the objects file.
        for kind in ("overlay", "objects"):
            self._stop_output(kind)
        self.info = None
        if isinstance(spec, os.PathLike):
            spec = os.fspath(spec)
        source = self._open(spec)
        seq = getattr(source, "sequence", None)
        has_gt = bool(seq is not None and seq.has_groundtruth and seq.temporal_roi[1] >= seq.temporal_roi[0])
        self.source = source
        self.info = SourceInfo(
            spec=str(spec),
            name=str(getattr(source, "name", spec)),
            kind=str(getattr(source, "kind", "")),
            is_live=bool(getattr(source, "is_live", False)),
            fps=getattr(source, "fps", None),
            frame_count=getattr(source, "frame_count", None),
            has_groundtruth=has_gt,
            temporal_roi=tuple(seq.temporal_roi) if has_gt else None,
        )
        self._start_reading()
        self.reset_model()
        return self.info

    def _start_reading(self) -> None:
        self._frames = iter(self.source)
        if self.info is not None and self.info.is_live:
            self._reader = LatestFrameReader(self._frames)

    def close(self) -> None:
        """Close the source (if any); the model and metrics stay."""
        if self._reader is not None:
            # Let the camera thread finish its read before the device is released
            # under it (a read lasts one frame period; a hung device gets 2 s).
            self._reader.stop(timeout=2.0)
            self._reader = None
        if self.source is not None:
            try:
                self.source.close()
            finally:
                self.source = None
                self._frames = None

    def restart(self) -> None:
        """Go back to the first frame (files and folders) with a fresh model.

        A camera cannot rewind: only the model and metrics are reset.
        """
        if self.info is not None and self.source is not None and not self.info.is_live:
            spec = self.info.spec
            self.close()
            source = self._open(spec)
            self.source = source
            self._start_reading()
        self.reset_model()

    # ------------------------------------------------------------------ model

    def reset_model(self) -> None:
        """Rebuild the subtractor from :attr:`params` on :attr:`device`; clear metrics and rate."""
        self._install(registry.create(self.algo, device=self.device, **self.params))

    def _install(self, subtractor) -> None:
        self.subtractor = subtractor
        self.processed = 0
        self._fps = 0.0
        self._last_time: float | None = None
        self._scores = Scores(roc=True)
        self._pipeline = Pipeline(subtractor, region=Region(self._roi, self._scale), threshold=self.threshold,
                                  min_area=self._min_area, keep_score=True, keep_objects=self._show_objects,
                                  sinks=[self._scores])
        self._pipeline.sequence = getattr(self.source, "sequence", None)
        self._update_sinks()

    def _update_sinks(self) -> None:
        self._pipeline.sinks = [self._scores, *self._outputs.values()]

    def _reset_counts(self) -> None:
        self._scores.reset_counts()

    def set_algorithm(self, algo: str, params: dict[str, Any] | None = None) -> None:
        """Switch to ``algo`` (its defaults, updated by ``params``); resets the model.

        Raises ValueError (and changes nothing) for an unknown algorithm or a bad value.
        """
        values = registry.default_params(algo)
        values.update(registry.validate_params(algo, dict(params or {})))
        # on the GPU while the algorithm runs there (else on the CPU: the device choice follows)
        device = self.device
        try:
            subtractor = registry.create(algo, device=device, **values)
        except ValueError:  # the device's refusal (a bad value is refused on the CPU too)
            if device == "cpu":
                raise
            device = "cpu"
            subtractor = registry.create(algo, **values)
        self.algo = algo
        self.params = values
        self.device = device
        self._install(subtractor)

    def set_device(self, device: str) -> None:
        """Run the model on ``device`` (``"cpu"`` or ``"cuda"``): the subtractor is rebuilt there (a new model).

        Raises ValueError, one line saying what is missing (numba-cuda, a GPU, an algorithm the GPU engine
        runs), and changes nothing where it cannot run there.
        """
        subtractor = registry.create(self.algo, device=device, **self.params)
        self.device = device
        self._install(subtractor)

    def save_model(self, path: str | os.PathLike) -> Path:
        """Save the model to ``path`` (an ``.npz`` checkpoint, written atomically); returns where.

        A path that is the source, lies inside it, or cannot be written is refused
        with a ``ValueError`` before anything is written.
        """
        self.check_output("model", path)
        return self.subtractor.save(path)

    def load_model(self, path: str | os.PathLike) -> str:
        """Replace the model by the checkpoint at ``path`` (see :func:`bgsub.load`); return its algorithm.

        The loaded model goes on from its own frame count, on :attr:`device` where it runs there (else on the
        CPU); the metrics start again. Raises :class:`bgsub.CheckpointError` or ``OSError`` (and changes nothing) for
        a file that is not a readable checkpoint.
        """
        subtractor = load_checkpoint(path)
        algo = algorithm_name(subtractor)
        device = self.device
        if device != "cpu":  # on the GPU where the model runs there
            from bgsub.models._cuda_engine import to_device

            try:
                subtractor = to_device(subtractor, device)
            except ValueError:  # what the GPU engine does not run stays on the CPU
                device = "cpu"
        values = registry.default_params(algo)
        values.update(registry.validate_params(algo, subtractor.get_params()))
        self.algo = algo
        self.params = values
        self.device = device
        self._install(subtractor)
        return algo

    def set_param(self, name: str, value: Any) -> ParamChange:
        """Change one parameter of the current algorithm.

        A ``live`` parameter is set on the running subtractor (through its
        ``set_params`` method, else its attribute of that name); any other one
        rebuilds the model. Raises ValueError for an unknown name or a value out
        of range (the message says the accepted range).
        """
        specs = {p.name: p for p in registry.param_specs(self.algo)}
        if name not in specs:
            raise ValueError(f"{self.algo} has no parameter {name!r}; its parameters are {', '.join(specs)}")
        spec = specs[name]
        value = spec.check(value)
        previous = self.params.get(name)
        self.params[name] = value
        try:
            live = spec.live and self._apply_live(name, value)
            if not live:
                self.reset_model()
        except Exception:
            # A value the subtractor refuses (e.g. C <= nu): keep the old one.
            self.params[name] = previous
            raise
        return ParamChange(name, value, live, _describe_change(spec, value, live), self.score_range)

    def _apply_live(self, name: str, value: Any) -> bool:
        """Set ``name`` on the running subtractor; False when it cannot (or it reset)."""
        sub = self.subtractor
        setter = getattr(sub, "set_params", None)
        if callable(setter):
            was_reset = setter(**{name: value})
            return not (isinstance(was_reset, bool) and was_reset)
        if hasattr(sub, name) and not callable(getattr(sub, name)):
            setattr(sub, name, value)
            return True
        return False

    @staticmethod
    def _check_threshold(value: float) -> float:
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"threshold must be a finite number, got {value!r}")
        return value

    def set_threshold(self, value: float) -> None:
        """Score threshold of the mask (0: the subtractor's own); restarts the F counts."""
        self.threshold = self._check_threshold(value)
        self._pipeline.threshold = self.threshold
        self._reset_counts()

    @property
    def show_objects(self) -> bool:
        """Whether every :class:`FrameResult` carries the frame's objects (for drawing boxes)."""
        return self._show_objects

    def set_show_objects(self, enabled: bool) -> None:
        """Find the objects (boxes, track ids) of every frame from the next one on, or stop."""
        self._show_objects = bool(enabled)
        self._pipeline.keep_objects = self._show_objects

    @property
    def min_area(self) -> int:
        """Foreground blobs smaller than this many pixels are dropped (0: none)."""
        return self._min_area

    def set_min_area(self, pixels: int) -> None:
        """Drop foreground blobs smaller than ``pixels`` from the next frame on (the model is kept)."""
        if isinstance(pixels, bool) or int(pixels) != pixels or pixels < 0:
            raise ValueError(f"min area must be a whole number >= 0, got {pixels!r}")
        self._min_area = int(pixels)
        self._pipeline.min_area = self._min_area

    @property
    def score_range(self) -> tuple[float, float]:
        """``(low, high)`` of the subtractor's score map."""
        lo, hi = getattr(self.subtractor, "score_range", (-1.0, 1.0))
        return float(lo), float(hi)

    # ------------------------------------------------------------------ saving

    def _stop_output(self, kind: str) -> Sink | None:
        """Finish (close) the ``kind`` output, if any, and return it."""
        sink = self._outputs.pop(kind, None)
        if sink is not None:
            self._update_sinks()
            sink.close()
        return sink

    def _start_output(self, kind: str, make: Callable[[], Sink] | None) -> Sink | None:
        """Finish the ``kind`` output, then start ``make()`` (None: stop); returns the finished one."""
        new = make() if make is not None else None  # a bad path raises before anything stops
        old = self._stop_output(kind)
        if new is not None:
            self._outputs[kind] = new
            self._update_sinks()
        return old

    def check_output(self, kind: str, path: str | os.PathLike, *, folder: bool = False) -> None:
        """Refuse an output ``path`` that is, contains or lies inside the open source (or another
        running output of another kind), or that cannot be written.

        Raises :class:`bgsub.pipeline.paths.OutputError` (a ``ValueError``) with a message for the user.
        """
        inputs = [("input", source_path(self.info.spec) if self.info is not None else None)]
        others = [(f"the {other} output", getattr(sink, "folder", None) or getattr(sink, "path", None))
                  for other, sink in self._outputs.items() if other != kind]
        check_outputs(inputs + others, [(f"the {kind} output", path)])
        check_writable(f"the {kind} output", path, folder=folder)

    def set_save_folder(self, folder: str | os.PathLike | None) -> None:
        """Write every following mask into ``folder`` as ``bin%06d.png``; None stops.

        A folder on, around or inside the source, or holding ``bin%06d.png`` files
        bgsub did not write (which the masks would overwrite), is refused with a ``ValueError``.
        """
        if folder is not None:
            self.check_output("masks", folder, folder=True)
            check_mask_folder("the masks output", folder)
        self._start_output("masks", (lambda: MaskFiles(folder, replace=False)) if folder is not None else None)

    @property
    def save_folder(self) -> Path | None:
        """The folder masks are written to, or None."""
        saver = self._outputs.get("masks")
        return saver.folder if saver is not None else None

    @property
    def masks_saved(self) -> int:
        """Masks written into :attr:`save_folder` since it was set."""
        saver = self._outputs.get("masks")
        return saver.count if saver is not None else 0

    def set_overlay_video(self, path: str | os.PathLike | None) -> Sink | None:
        """Record every following frame, mask tinted and objects boxed, into the video ``path``; None stops.

        The video (``.mp4``, ``.avi``, ``.mkv``) appears under its name when the
        recording stops (:meth:`finish_outputs`, another source, None here).
        Returns the recording that was finished, if any (its ``path`` and ``count``).
        """
        fps = (self.info.fps if self.info is not None else None) or 25.0
        if path is not None:
            self.check_output("overlay", path)
        return self._start_output("overlay", (lambda: OverlayVideo(path, fps)) if path is not None else None)

    def set_objects_file(self, path: str | os.PathLike | None) -> Sink | None:
        """Write every following frame's objects (track ids, boxes) to ``path`` (``.jsonl``/``.csv``); None stops.

        Like :meth:`set_overlay_video`, the file appears when the recording stops.
        """
        if path is not None:
            self.check_output("objects", path)
        return self._start_output("objects", (lambda: ObjectsFile(path)) if path is not None else None)

    def output(self, kind: str) -> Sink | None:
        """The running ``"masks"``, ``"overlay"`` or ``"objects"`` output (``path``/``folder``, ``count``), or None."""
        return self._outputs.get(kind)

    def finish_outputs(self) -> list[Sink]:
        """Stop every output, finalising the videos and object files; returns them."""
        return [sink for sink in (self._stop_output(kind) for kind in list(self._outputs)) if sink is not None]

    # ------------------------------------------------------------------ frames

    @property
    def dropped(self) -> int:
        """Camera frames dropped because processing was slower than the camera."""
        return self._reader.dropped if self._reader is not None else 0

    def read(self, timeout: float = 1.0):
        """The next frame to process; None when a camera gave none within ``timeout``.

        Raises
        ------
        StopIteration
            At the end of a file or folder.
        bgsub.sources.SourceError
            When no source is open, or the source failed (unplugged camera,
            undecodable frame).
        """
        if self.source is None or self._frames is None:
            raise SourceError("no source is open: open a video, a folder or a camera first")
        if self._reader is not None:
            return self._reader.get(timeout)
        return next(self._frames)

    def step(self, timeout: float = 1.0) -> FrameResult | None:
        """Read and process one frame; None when a camera gave none in time.

        Raises StopIteration at the end of the source.
        """
        frame = self.read(timeout)
        if frame is None:
            return None
        return self.process(frame)

    def process(self, frame) -> FrameResult:
        """Run one :class:`bgsub.sources.Frame` through the pipeline; update metrics and the rate."""
        out = self._pipeline.process(frame)
        self.processed += 1

        now = self._clock()
        if self._last_time is not None:
            dt = max(now - self._last_time, 1e-9)
            rate = 1.0 / dt
            self._fps = rate if self._fps == 0.0 else 0.9 * self._fps + 0.1 * rate
        self._last_time = now

        scores = self._scores
        roc = None
        if scores.roc is not None and scores.roc.positives and scores.roc.negatives:
            fpr, tpr, _ = scores.roc.curve()
            op = scores.roc.operating_point(self.threshold)
            roc = RocSnapshot(
                fpr=np.asarray(fpr, dtype=float),
                tpr=np.asarray(tpr, dtype=float),
                auc=float(scores.roc.auc()),
                operating_point=(float(op[0]), float(op[1])),
                threshold=self.threshold,
            )
        counts = scores.counts if scores.frames else None
        return FrameResult(
            index=int(frame.index),
            processed=self.processed,
            image=out.image,
            mask=out.mask,
            score=out.score,
            score_range=self.score_range,
            threshold=self.threshold,
            foreground_fraction=float(np.count_nonzero(out.mask)) / out.mask.size,
            fps=self._fps,
            dropped=self.dropped,
            decode_errors=int(getattr(self.source, "decode_errors", 0) or 0),
            scored=out.scored,
            counts=counts,
            metrics=scores.metrics(),
            scored_frames=scores.frames,
            roc=roc,
            objects=tuple(out.objects) if out.objects is not None else None,
        )
