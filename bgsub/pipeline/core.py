"""The frame pipeline: source -> pre-processing -> subtractor -> post-processing -> sinks.

Every command (``run``, ``eval``, ``batch``, ``demo``, ``bench``) and the
desktop app's session process frames here and nowhere else.
:meth:`Pipeline.process` turns one :class:`bgsub.sources.Frame` into one
:class:`FrameOutput`; :meth:`Pipeline.run` is the frame loop over a source.

Frame policy (one for every command): a frame the source cannot decode is
skipped and counted (``decode_errors``); a frame that cannot be processed --
its size changes, the subtractor rejects it, an output cannot be written --
stops that input with a one-line message in :attr:`PipelineResult.error`, and
every output written before it is kept and complete. Nothing is raised.

Threads (:meth:`Pipeline.run`): decoding, subtraction and writing overlap. A
reader thread pulls frames from the source a few frames ahead (OpenCV's
decoders and image readers release the GIL), the calling thread runs the
subtractor (its numba kernels release the GIL too) and the sinks that must see
the frames in step (scores, checkpoints, callbacks, the preview), and a writer
thread encodes and writes the file sinks marked ``background`` (mask PNGs,
videos, object files), in frame order. The frame policy is unchanged: a
source error or a failed write stops the input at that frame, and the outputs
written before it are complete.
"""

from __future__ import annotations

import queue
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

from bgsub.pipeline.objects import DetectedObject, Tracker, find_objects
from bgsub.pipeline.region import Region
from bgsub.sources import Frame, SourceError

__all__ = ["FrameOutput", "PipelineResult", "Pipeline", "describe_error"]


@dataclass
class FrameOutput:
    """One processed frame.

    Attributes
    ----------
    index : int
        Frame number (CDnet numbering from 1).
    image : ndarray of uint8, shape (H, W, 3)
        The input frame.
    mask : ndarray of uint8, shape (H, W)
        Final mask at the input's size: 0 background, 255 foreground.
    score : ndarray of float32, shape (H, W), or None
        Score map at the input's size (> 0 foreground) when asked for and available.
    score_range : tuple of float
        ``(low, high)`` of the score map.
    objects : list of DetectedObject or None
        Connected components (``min_area`` and up), with track ids, when asked for.
    groundtruth, roi : ndarray or None
        The frame's CDnet labels and region of interest, when it has them.
    scored : bool
        True when the frame has ground truth inside the temporal ROI.
    """

    index: int
    image: np.ndarray
    mask: np.ndarray
    score: np.ndarray | None = None
    score_range: tuple[float, float] = (-1.0, 1.0)
    objects: list[DetectedObject] | None = None
    groundtruth: np.ndarray | None = None
    roi: np.ndarray | None = None
    scored: bool = False


@dataclass
class PipelineResult:
    """What one :meth:`Pipeline.run` did.

    Attributes
    ----------
    frames : int
        Frames processed (one mask each).
    seconds, fps : float
        Wall time of the pass and ``frames / seconds``.
    subtract_fps : float
        Frames per second of the subtractor alone (time inside ``apply``).
    interrupted : bool
        Stopped by Ctrl-C, a sink (closed preview window) or ``should_stop``.
    error : str or None
        Why the input stopped early (see the frame policy); None when it did not.
    first_index, last_index : int or None
        Numbers of the first and last frame processed.
    metrics : dict or None
        CDnet metrics of the first :class:`~bgsub.pipeline.sinks.Scores` sink.
    scored_frames : int
        Frames in ``metrics``.
    decode_errors : int
        Frames the source skipped because they did not decode.
    expected_frames : int or None
        Frames the source announced.
    source_summary : str
        The source's own account.
    warnings : list of str
    """

    frames: int = 0
    seconds: float = 0.0
    fps: float = 0.0
    subtract_fps: float = 0.0
    interrupted: bool = False
    error: str | None = None
    first_index: int | None = None
    last_index: int | None = None
    metrics: dict[str, float] | None = None
    scored_frames: int = 0
    decode_errors: int = 0
    expected_frames: int | None = None
    source_summary: str = ""
    warnings: list[str] = field(default_factory=list)


def describe_error(exc: BaseException) -> str:
    """One line for a user: the message, with the kind of error when it is not a plain ValueError/OSError."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        text = f"{exc.filename}: {exc.strerror}"
    if isinstance(exc, (ValueError, OSError)):
        return text.splitlines()[0] if text else type(exc).__name__
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


class _Frames:
    """A bare iterable of frames or images seen as a source."""

    def __init__(self, items: Iterable) -> None:
        self._items = items
        self.sequence = None
        self.frame_count = len(items) if hasattr(items, "__len__") else None
        self.decode_errors = 0
        self.frames_read = 0
        self.incomplete = False

    def __iter__(self):
        for k, item in enumerate(self._items, 1):
            self.frames_read = k
            yield item if isinstance(item, Frame) else Frame(k, item)

    def summary(self) -> str:
        return f"{self.frames_read} frames"


#: Frames the reader thread decodes ahead of the subtractor, and frames the writer thread may lag behind.
READ_AHEAD = 4
WRITE_BEHIND = 8


class _ReadAhead:
    """Iterates a source on a reader thread, up to ``depth`` frames ahead of the consumer.

    ``next()`` returns the frames in order and re-raises, in the consumer's
    thread, whatever the source raised (``SourceError`` included). The source's
    iterator is created, advanced and closed on the reader thread only.
    """

    def __init__(self, source, depth: int = READ_AHEAD) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._read, args=(source,), name="bgsub-reader", daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _read(self, source) -> None:
        iterator = None
        try:
            iterator = iter(source)
            for frame in iterator:
                if not self._put(("frame", frame)):
                    return
            self._put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            self._put(("error", exc))
        finally:
            closer = getattr(iterator, "close", None)
            if closer is not None:
                closer()

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == "frame":
            return value
        self._done = True
        if kind == "end":
            raise StopIteration
        raise value

    def close(self) -> None:
        """Stop the reader (after the frame it is decoding) and wait for it; the source's iterator is closed."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()


class _WriteBehind:
    """Calls the ``background`` sinks' ``write`` on a writer thread, frame by frame in order.

    The first exception stops the writing (nothing after it is written) and is
    kept in :attr:`error` with its frame number; a sink returning ``False`` sets
    :attr:`stop`.
    """

    def __init__(self, sinks, depth: int = WRITE_BEHIND) -> None:
        self.sinks = list(sinks)
        self.error: tuple[int, BaseException] | None = None
        self.stop = False
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._write, name="bgsub-writer", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        while True:
            out = self._queue.get()
            try:
                if out is None:
                    return
                if self.error is None:
                    for sink in self.sinks:
                        if sink.write(out) is False:
                            self.stop = True
            except BaseException as exc:  # noqa: BLE001 - reported by the pipeline
                self.error = (out.index, exc)
            finally:
                self._queue.task_done()

    def put(self, out: FrameOutput) -> None:
        self._queue.put(out)

    def flush(self) -> None:
        """Wait until everything queued so far is written (or failed)."""
        self._queue.join()

    def finish(self) -> None:
        """Write everything queued, then end the thread."""
        self._queue.put(None)
        self._thread.join()


def exact_scores(subtractor) -> None:
    """Ask ``subtractor`` for exact score maps from its next frame on.

    A kernel subtractor with ``score_map="bounded"`` (olkn's default) sums a pixel's expansion only
    where its decisions need it, so its score map elsewhere is exact in sign only; ROC curves and
    score thresholds need the values. Subtractors without that parameter are left alone.
    """
    params = getattr(subtractor, "params", None)
    if isinstance(params, dict) and params.get("score_map") == "bounded":
        subtractor.set_params(score_map="exact")


class Pipeline:
    """A subtractor with its pre-processing, post-processing and sinks.

    Parameters
    ----------
    subtractor
        Anything with ``apply(image) -> mask`` (uint8 0/255), optionally
        ``getScoreMap()`` and ``score_range``.
    region : Region, optional
        ROI and processing scale (default: the whole frame at full size). A subtractor that scales its frames
        itself (a ``process_scale`` parameter: olkn, norma, svmd) is given a scale below 1 as its
        ``process_scale`` (replacing its own), so that a frame is resized once, inside the model; the region
        then only crops. Other subtractors (OpenCV's, oem) get frames the region resized.
    threshold : float
        Score threshold of the mask; 0 keeps the subtractor's own mask.
    min_area : int
        Drop foreground components smaller than this (pixels at the input's size).
    track : bool
        Give objects track ids (:class:`~bgsub.pipeline.objects.Tracker`).
    sinks : list of Sink
        Where each frame's output goes, in order.
    keep_score : bool
        Put the score map in every :class:`FrameOutput` even when no sink needs it.
    keep_objects : bool
        Find the objects of every frame even when no sink needs them (a live view drawing boxes).
    """

    def __init__(self, subtractor, *, region: Region | None = None, threshold: float = 0.0, min_area: int = 0,
                 track: bool = True, sinks: Iterable = (), keep_score: bool = False,
                 keep_objects: bool = False) -> None:
        if min_area < 0:
            raise ValueError(f"--min-area must be >= 0, got {min_area}")
        self.subtractor = subtractor
        self.region = region if region is not None else Region()
        if self.region.scale != 1.0 and "process_scale" in (getattr(subtractor, "params", None) or {}):
            scale, own = self.region.scale, subtractor.params["process_scale"]
            if scale != own and getattr(subtractor, "n_frames_", 0) > 0:
                raise ValueError(f"--scale {scale:g} does not match the model's process_scale {own:g} (a resumed "
                                 f"model): give --scale {own:g} or leave --scale out")
            try:
                subtractor.set_params(process_scale=scale)
            except ValueError as e:
                raise ValueError(f"--scale {scale:g} does not suit {_algorithm(subtractor)}: {e}") from None
            self.region = self.region.cropping()
        self.threshold = float(threshold)
        self.min_area = int(min_area)
        self.sinks = list(sinks)
        self.keep_score = keep_score
        self.keep_objects = keep_objects
        self.tracker = Tracker() if track else None
        #: The CDnet sequence of the source (temporal ROI), set by :meth:`run` or by the caller.
        self.sequence = None
        self.apply_seconds = 0.0
        self._stop = False
        self._writer: _WriteBehind | None = None

    @property
    def score_range(self) -> tuple[float, float]:
        lo, hi = getattr(self.subtractor, "score_range", (-1.0, 1.0))
        return float(lo), float(hi)

    def _wants(self, attr: str) -> bool:
        return any(getattr(s, attr, False) for s in self.sinks)

    def process(self, frame: Frame) -> FrameOutput:
        """Run one frame through every stage and sink; returns what it made.

        Raises whatever a stage raises (the caller's policy decides); :meth:`run`
        turns it into :attr:`PipelineResult.error`.
        """
        sub = self.subtractor
        work = self.region.prepare(frame.image)
        want_score = self.keep_score or self.threshold != 0.0 or self._wants("needs_score")
        if want_score:
            exact_scores(sub)
        t0 = time.perf_counter()
        mask = sub.apply(work)
        self.apply_seconds += time.perf_counter() - t0
        score = None
        if want_score and callable(getattr(sub, "getScoreMap", None)):
            score = sub.getScoreMap()
            if score is not None:
                if self.threshold != 0.0:
                    mask = np.where(score > self.threshold, np.uint8(255), np.uint8(0))
                score = self.region.restore_score(score, self.score_range[0])
        mask = self.region.restore_mask(mask)
        objects = None
        if self.min_area > 0 or self.keep_objects or self._wants("needs_objects"):
            mask, objects = find_objects(mask, self.min_area, frame.index)
            if self.tracker is not None:
                self.tracker.update(objects)
        seq = self.sequence
        scored = frame.groundtruth is not None and (seq is None or bool(seq.is_scored(frame.index)))
        out = FrameOutput(frame.index, frame.image, mask, score, self.score_range, objects,
                          frame.groundtruth, frame.roi, scored)
        self._stop = False
        writer = self._writer
        queued = False
        for sink in self.sinks:
            if writer is not None:
                if sink.background:
                    continue
                saves_next = getattr(sink, "saves_next", None)
                if saves_next is not None and saves_next() and not queued:
                    writer.put(out)
                    writer.flush()
                    queued = True
            if sink.write(out) is False:
                self._stop = True
        if writer is not None:
            if not queued:
                writer.put(out)
            self._stop = self._stop or writer.stop
        return out

    def close(self, ok: bool = True) -> None:
        """Close every sink (finalising files); the first error is raised after all were tried."""
        first = None
        for sink in self.sinks:
            try:
                sink.close(ok)
            except Exception as exc:  # noqa: BLE001 - report after closing the others
                first = first or exc
        if first is not None:
            raise first

    def run(self, source, *, should_stop: Callable[[], bool] | None = None, catch_interrupt: bool = True,
            close: bool = True, threads: bool = True) -> PipelineResult:
        """Every frame of ``source`` through :meth:`process`; the frame policy applies.

        Parameters
        ----------
        source : FrameSource or iterable of Frame or images
        should_stop : callable, optional
            Polled before each frame; True stops the run (``interrupted``).
        catch_interrupt : bool
            Turn Ctrl-C into a clean stop after the current frame's outputs are
            complete (main thread only); a second Ctrl-C interrupts at once.
        close : bool
            Close the sinks at the end (finalises videos and object files).
        threads : bool
            Decode on a reader thread (frame sources, not in-memory lists) and
            write the ``background`` sinks on a writer thread, overlapping the
            subtraction (see the module docstring); False does everything in
            the calling thread.
        """
        read_ahead = threads and hasattr(source, "summary")
        if not hasattr(source, "summary"):
            source = _Frames(source)
        self.sequence = getattr(source, "sequence", None)
        result = PipelineResult(expected_frames=getattr(source, "frame_count", None))
        stop_requested = [False]
        previous_handler = None
        if catch_interrupt and threading.current_thread() is threading.main_thread():
            def _on_sigint(signum, _frame):
                if stop_requested[0]:
                    raise KeyboardInterrupt
                stop_requested[0] = True

            previous_handler = signal.signal(signal.SIGINT, _on_sigint)
        self.apply_seconds = 0.0
        start = time.perf_counter()
        iterator = _ReadAhead(source) if read_ahead else iter(source)
        if threads and any(s.background for s in self.sinks):
            self._writer = _WriteBehind(s for s in self.sinks if s.background)
        try:
            while True:
                if stop_requested[0] or (should_stop is not None and should_stop()):
                    result.interrupted = True
                    break
                try:
                    frame = next(iterator)
                except StopIteration:
                    break
                except SourceError as exc:
                    at = getattr(exc, "index", None)  # BadFrameError knows its frame
                    if at is None:
                        at = (getattr(source, "start", 1) + getattr(source, "frames_read", result.frames)
                              + getattr(source, "decode_errors", 0))
                    result.error = f"frame {at}: {exc}"
                    break
                try:
                    self.process(frame)
                except Exception as exc:  # noqa: BLE001 - the frame policy: stop this input, say why
                    result.error = f"frame {frame.index}: {describe_error(exc)}"
                    break
                if self._writer is not None and self._writer.error is not None:
                    break
                result.frames += 1
                if result.first_index is None:
                    result.first_index = frame.index
                result.last_index = frame.index
                if self._stop:
                    result.interrupted = True
                    break
        except KeyboardInterrupt:
            if not catch_interrupt:
                raise
            result.interrupted = True
        finally:
            if previous_handler is not None:
                signal.signal(signal.SIGINT, previous_handler)
            closer = getattr(iterator, "close", None)
            if closer is not None:
                closer()
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.finish()
                if writer.error is not None and result.error is None:
                    at, exc = writer.error
                    result.error = f"frame {at}: {describe_error(exc)}"
            if close:
                try:
                    self.close(ok=result.error is None)
                except Exception as exc:  # noqa: BLE001
                    result.error = result.error or f"finishing the outputs: {describe_error(exc)}"
        result.seconds = time.perf_counter() - start
        result.fps = result.frames / result.seconds if result.seconds > 0 else 0.0
        result.subtract_fps = result.frames / self.apply_seconds if self.apply_seconds > 0 else 0.0
        result.decode_errors = int(getattr(source, "decode_errors", 0) or 0)
        result.source_summary = source.summary()
        if not result.interrupted and result.error is None and getattr(source, "incomplete", False):
            result.warnings.append(source.summary())
        from bgsub.pipeline.sinks import Scores

        scores = next((s for s in self.sinks if isinstance(s, Scores)), None)
        if scores is not None:
            result.metrics = scores.metrics()
            result.scored_frames = scores.frames
        return result


def _algorithm(subtractor) -> str:
    """The registry name of ``subtractor``'s algorithm where it has one, else its class's name."""
    from bgsub.checkpoint import CheckpointError, algorithm_name

    try:
        return algorithm_name(subtractor)
    except CheckpointError:
        return type(subtractor).__name__
