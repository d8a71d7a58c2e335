"""Run a :class:`bgsub_gui.model.Session` on a worker thread, so the window never waits.

:class:`SessionWorker` lives in a :class:`QThread`; a zero-interval timer in that
thread processes one frame per tick, and requests from the window (play, step,
parameter changes...) arrive as queued signals between two frames.
:class:`SessionController` is the window's side: it owns the thread, forwards
requests, and hands over the newest result only.

Results are not queued: the worker keeps the newest :class:`bgsub_gui.model.FrameResult`
and signals ``resultReady`` once; the window takes it when it gets to it. Every
processed frame still counts in the metrics; only drawing skips frames.
"""

from __future__ import annotations

import threading
import time
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from bgsub.sources import SourceError

from .model import FrameResult, Session

__all__ = ["SessionWorker", "SessionController", "PlayState"]

#: Worker threads that did not end in time (a read that never returns): kept referenced, so
#: that Qt never destroys a running QThread; each ends by itself if its read ever returns.
_ABANDONED: list = []


class PlayState:
    """Names of the worker's states, as sent by ``stateChanged``."""

    IDLE = "idle"  # no source
    PAUSED = "paused"
    PLAYING = "playing"
    ENDED = "ended"  # end of file or folder
    FAILED = "failed"  # the source failed; open another one


def _user_message(exc: BaseException) -> str:
    if isinstance(exc, (SourceError, ValueError, OSError)):
        return str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {exc}"


class SessionWorker(QObject):
    """Drives a :class:`Session` from the thread it was moved to.

    Parameters
    ----------
    session : Session
        Used only from the worker's thread once the thread runs.

    Signals
    -------
    resultReady()
        A new result can be taken with :meth:`take_result`.
    sourceOpened(SourceInfo)
    modelReset(str, object)
        The model was rebuilt: why, and the new ``score_range``.
    paramChanged(object)
        A :class:`bgsub_gui.model.ParamChange` after a parameter request.
    paramRejected(str, object)
        A parameter request failed (``error`` says why); the value still in use.
    algorithmRejected(str, object)
        An algorithm switch failed; the algorithm and parameters still in use.
    stateChanged(str)
        A :class:`PlayState` value.
    error(str)
        A message for the user (bad source, decode error, bad value).
    info(str)
        A status message.
    frameLimitReached(int)
        Playback paused after the frame limit (frames processed).
    modelLoaded(str, object)
        A saved model was loaded: its algorithm and parameters.
    outputChanged(str, object)
        An output (``"masks"``, ``"overlay"``, ``"objects"``) started (its path) or stopped (None).
    """

    resultReady = Signal()
    sourceOpened = Signal(object)
    modelReset = Signal(str, object)
    paramChanged = Signal(object)
    paramRejected = Signal(str, object)
    algorithmRejected = Signal(str, object)
    stateChanged = Signal(str)
    error = Signal(str)
    info = Signal(str)
    frameLimitReached = Signal(int)
    modelLoaded = Signal(str, object)
    outputChanged = Signal(str, object)

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self._lock = threading.Lock()
        self._latest: FrameResult | None = None
        self._unread = False
        self._timer: QTimer | None = None
        self._state = PlayState.IDLE
        self._frame_limit: int | None = None
        self._realtime = False
        self._next_due = 0.0
        # The open source, for abort_source() from the window's thread (under _lock).
        self._source = None
        self._stopping = threading.Event()

    # -- the window's side (any thread) --------------------------------------

    def take_result(self) -> FrameResult | None:
        """The newest result not yet taken (None if there is none). Thread-safe."""
        with self._lock:
            result, self._latest = self._latest, None
            self._unread = False
            return result

    @property
    def state(self) -> str:
        return self._state

    def abort_source(self) -> None:
        """Close the open source from any thread, without waiting for a read under way. Thread-safe."""
        with self._lock:
            source = self._source
        if source is not None:
            try:
                source.close()
            except Exception:
                traceback.print_exc()

    def _track_source(self) -> None:
        with self._lock:
            self._source = self.session.source

    # -- the worker thread's side --------------------------------------------

    def _publish(self, result: FrameResult) -> None:
        with self._lock:
            self._latest = result
            notify = not self._unread
            self._unread = True
        if notify:
            self.resultReady.emit()

    def _model_reset(self, reason: str) -> None:
        self.modelReset.emit(reason, self.session.score_range)

    def _set_state(self, state: str) -> None:
        if state != self._state:
            self._state = state
            self.stateChanged.emit(state)

    @Slot(str, object)
    def handle(self, slot: str, args: Any) -> None:
        """Run a request of :class:`SessionController`, ``slot(*args)`` (a slot of this class), in the worker's
        thread."""
        getattr(self, slot)(*args)

    @Slot()
    def start(self) -> None:
        """Create the frame timer; runs in the worker thread when it starts."""
        self._timer = QTimer()
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._tick)

    def _attempt(self, call: Callable[..., Any], *args: Any, doing: str = "") -> tuple[bool, Any]:
        """``(True, call(*args))``, or ``(False, None)`` after telling the window why it failed.

        ``doing`` (e.g. ``"save the model"``) prefixes the message as ``cannot <doing>: …``.
        A failure is reported in the window, never a crash of the worker thread.
        """
        try:
            return True, call(*args)
        except Exception as exc:
            self.error.emit(f"cannot {doing}: {_user_message(exc)}" if doing else _user_message(exc))
            return False, None

    def _schedule(self) -> None:
        if self._timer is not None and self._state == PlayState.PLAYING:
            self._timer.start()

    @Slot(object)
    def open_source(self, spec: Any) -> None:
        self.pause()
        self._finish_outputs()  # a recording belongs to one source
        try:
            info = self.session.open(spec)
        except Exception as exc:  # reported in the window, never a crash
            self._track_source()
            self._set_state(PlayState.FAILED)
            self.error.emit(f"cannot open {spec}: {_user_message(exc)}")
            return
        self._track_source()
        self._set_state(PlayState.PAUSED)
        self.sourceOpened.emit(info)
        self._model_reset(f"opened {info.name}")

    @Slot()
    def play(self) -> None:
        if self.session.source is None:
            if self._state != PlayState.FAILED:
                self.error.emit("no source is open: open a video, a folder or a camera first")
            return
        if self._state == PlayState.ENDED:
            return
        self._next_due = time.perf_counter()
        self._set_state(PlayState.PLAYING)
        self._schedule()

    @Slot()
    def pause(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        if self._state == PlayState.PLAYING:
            self._set_state(PlayState.PAUSED)

    @Slot()
    def step(self) -> None:
        """Process exactly one frame, then pause."""
        self.pause()
        if self.session.source is None:
            self.error.emit("no source is open: open a video, a folder or a camera first")
            return
        self._process_one(wait=2.0)

    @Slot()
    def restart(self) -> None:
        """Back to the first frame with a fresh model; plays on if it was playing or had ended."""
        was_playing = self._state in (PlayState.PLAYING, PlayState.ENDED)
        self.pause()
        try:
            self.session.restart()
        except Exception as exc:
            self._track_source()
            self._set_state(PlayState.FAILED)
            self.error.emit(f"cannot restart: {_user_message(exc)}")
            return
        self._track_source()
        if self.session.source is not None:
            self._set_state(PlayState.PAUSED)
        self._model_reset("restarted from the first frame")
        if was_playing:
            self.play()

    @Slot(str, object)
    def set_algorithm(self, algo: str, params: Any) -> None:
        ok, _ = self._attempt(self.session.set_algorithm, algo, params, doing=f"switch to {algo}")
        if not ok:
            self.algorithmRejected.emit(self.session.algo, dict(self.session.params))
            return
        self._model_reset(f"algorithm {algo}: new model")

    @Slot(str)
    def set_device(self, device: str) -> None:
        ok, _ = self._attempt(self.session.set_device, device, doing=f"run on {device}")
        if not ok:  # the window shows the session's algorithm and device again
            self.algorithmRejected.emit(self.session.algo, dict(self.session.params))
            return
        self._model_reset(f"device {device}: new model")

    @Slot(str, object)
    def set_param(self, name: str, value: Any) -> None:
        ok, change = self._attempt(self.session.set_param, name, value)
        if not ok:
            self.paramRejected.emit(name, self.session.params.get(name))
            return
        self.paramChanged.emit(change)
        if not change.live:
            self._model_reset(change.message)

    @Slot(float)
    def set_threshold(self, value: float) -> None:
        self._attempt(self.session.set_threshold, value)

    @Slot(object)
    def set_save_folder(self, folder: Any) -> None:
        if not self._attempt(self.session.set_save_folder, folder)[0]:
            self.outputChanged.emit("masks", self.session.save_folder)
            return
        if folder is None:
            self.info.emit("stopped saving masks")
        else:
            self.info.emit(f"saving masks to {self.session.save_folder} as bin%06d.png")
        self.outputChanged.emit("masks", None if folder is None else str(self.session.save_folder))

    @Slot(str, object)
    def set_recording(self, kind: str, path: Any) -> None:
        """Start (``path``) or stop (None) the ``"overlay"`` video or the ``"objects"`` file."""
        setter = {"overlay": self.session.set_overlay_video, "objects": self.session.set_objects_file}[kind]
        ok, finished = self._attempt(setter, path,
                                     doing=f"save {'the overlay video' if kind == 'overlay' else 'the objects'}")
        if not ok:
            running = self.session.output(kind)
            self.outputChanged.emit(kind, str(running.path) if running is not None else None)
            return
        if finished is not None:
            self._say_finished(kind, finished)
        if path is not None:
            self.info.emit(f"recording the {'overlay video' if kind == 'overlay' else 'objects'} to {path} "
                           "(the file appears when you stop)")
        self.outputChanged.emit(kind, None if path is None else str(path))

    def _say_finished(self, kind: str, sink) -> None:
        what = f"overlay video {sink.path} ({sink.count} frames)" if kind == "overlay" else \
            f"objects {sink.path} ({sink.count} rows)"
        self.info.emit(f"saved {what}")

    def _finish_outputs(self) -> None:
        """Stop the overlay video and the objects file (a new source, or closing), saying where they went."""
        for kind in ("overlay", "objects"):
            if self.session.output(kind) is not None:
                self.set_recording(kind, None)

    @Slot(bool)
    def set_show_objects(self, enabled: bool) -> None:
        """Find (and so draw) every frame's objects from the next frame on."""
        self.session.set_show_objects(enabled)

    @Slot(int)
    def set_min_area(self, pixels: int) -> None:
        self._attempt(self.session.set_min_area, pixels)

    @Slot(object)
    def set_frame_limit(self, limit: Any) -> None:
        """Pause after ``limit`` frames processed by the current model (None: no limit)."""
        self._frame_limit = None if limit is None else int(limit)

    @Slot(bool)
    def set_realtime(self, realtime: bool) -> None:
        """Pace files at their nominal frame rate (True) or as fast as possible."""
        self._realtime = bool(realtime)
        self._next_due = time.perf_counter()

    @Slot(str)
    def save_model(self, path: str) -> None:
        """Save the current model to ``path`` (``.npz`` checkpoint)."""
        ok, saved = self._attempt(self.session.save_model, path, doing="save the model")
        if not ok:
            return
        self.info.emit(f"model saved to {saved} after {self.session.subtractor.n_frames_} frames")

    @Slot(str)
    def load_model(self, path: str) -> None:
        """Replace the model by the one saved in ``path``; it continues from its own frame count."""
        ok, algo = self._attempt(self.session.load_model, path, doing="load the model")
        if not ok:
            return
        self.modelLoaded.emit(algo, dict(self.session.params))
        self._model_reset(f"model loaded from {path} ({algo}, {self.session.subtractor.n_frames_} frames seen)")

    @Slot()
    def shutdown(self) -> None:
        """Stop playing, close the source and end the thread's event loop."""
        self.pause()
        if self._timer is not None:
            self._timer.timeout.disconnect(self._tick)
            self._timer.deleteLater()
            self._timer = None
        self._finish_outputs()
        try:
            self.session.close()
        except Exception:
            traceback.print_exc()
        with self._lock:
            self._source = None
        self._set_state(PlayState.IDLE)
        thread = QThread.currentThread()
        if thread is not None:
            thread.quit()

    def _tick(self) -> None:
        if self._state != PlayState.PLAYING or self._stopping.is_set():
            return
        info = self.session.info
        if self._realtime and info is not None and not info.is_live and info.fps:
            now = time.perf_counter()
            if now < self._next_due:
                self._timer.start(max(1, int((self._next_due - now) * 1000)))
                return
            self._next_due = max(self._next_due + 1.0 / info.fps, now - 0.5)
        self._timer.setInterval(0)
        if self._process_one(wait=0.05) and self._state == PlayState.PLAYING:
            self._schedule()

    def _process_one(self, wait: float) -> bool:
        """Process one frame; False when playing must stop."""
        try:
            result = self.session.step(timeout=wait)
        except StopIteration:
            self.pause()
            info = self.session.info
            if info is not None and info.is_live:
                self._set_state(PlayState.FAILED)
                self.error.emit(
                    f"{info.name} stopped delivering frames: was it unplugged or taken by another "
                    "program? Open it again from File > Open camera"
                )
            else:
                self._set_state(PlayState.ENDED)
                source = self.session.source
                if source is not None and getattr(source, "incomplete", False):
                    # A truncated or partly corrupt file: say how many frames were lost.
                    self.error.emit(source.summary())
                else:
                    self.info.emit(f"end of {info.name if info else 'the source'}")
            return False
        except Exception as exc:
            self.pause()
            self._set_state(PlayState.FAILED)
            self.error.emit(_user_message(exc))
            return False
        if result is None:  # a camera that was slow to deliver: try again
            return True
        self._publish(result)
        if self._frame_limit is not None and result.processed >= self._frame_limit:
            self.pause()
            self.frameLimitReached.emit(result.processed)
            return False
        return True


class SessionController(QObject):
    """The window's handle on a :class:`SessionWorker` running in its own thread.

    Every method only sends a request; the outcome arrives through the worker's
    signals (:attr:`worker`).

    Parameters
    ----------
    session : Session
        Handed to the worker; do not touch it from the window's thread afterwards.
    """

    #: A request for the worker: the name of one of its slots and the arguments, delivered in its thread.
    _request = Signal(str, object)

    def __init__(self, session: Session, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.thread = QThread()
        self.thread.setObjectName("bgsub-gui-worker")
        self.worker = SessionWorker(session)
        self.worker.moveToThread(self.thread)
        self.thread.started.connect(self.worker.start)
        self._request.connect(self.worker.handle)
        self.thread.start()

    @property
    def session(self) -> Session:
        """The session (read it only while the worker is idle, e.g. in tests)."""
        return self.worker.session

    def _send(self, slot: str, *args: Any) -> None:
        self._request.emit(slot, args)

    def open_source(self, spec: Any) -> None:
        self._send("open_source", spec)

    def play(self) -> None:
        self._send("play")

    def pause(self) -> None:
        self._send("pause")

    def step(self) -> None:
        self._send("step")

    def restart(self) -> None:
        self._send("restart")

    def set_algorithm(self, algo: str, params: dict | None = None) -> None:
        self._send("set_algorithm", algo, dict(params or {}))

    def set_device(self, device: str) -> None:
        self._send("set_device", device)

    def set_param(self, name: str, value: Any) -> None:
        self._send("set_param", name, value)

    def set_threshold(self, value: float) -> None:
        self._send("set_threshold", float(value))

    def set_save_folder(self, folder: Any) -> None:
        self._send("set_save_folder", folder)

    def set_overlay_video(self, path: str | None) -> None:
        self._send("set_recording", "overlay", path)

    def set_objects_file(self, path: str | None) -> None:
        self._send("set_recording", "objects", path)

    def set_show_objects(self, enabled: bool) -> None:
        self._send("set_show_objects", bool(enabled))

    def set_min_area(self, pixels: int) -> None:
        self._send("set_min_area", int(pixels))

    def set_frame_limit(self, limit: int | None) -> None:
        self._send("set_frame_limit", limit)

    def set_realtime(self, realtime: bool) -> None:
        self._send("set_realtime", bool(realtime))

    def save_model(self, path: str) -> None:
        self._send("save_model", str(path))

    def load_model(self, path: str) -> None:
        self._send("load_model", str(path))

    def take_result(self) -> FrameResult | None:
        return self.worker.take_result()

    def stop(self, timeout_ms: int = 2500) -> bool:
        """Close the source and end the thread, returning within about ``timeout_ms``.

        The shutdown request is queued (never a blocking call: the worker may be
        stuck in a read). If the thread has not ended after ``timeout_ms - 500``
        ms, the source is closed from here (which unblocks a read that can be
        unblocked) and the thread gets 500 ms more. A thread still running then is
        left to end by itself (kept referenced); returns False in that case.
        """
        if not self.thread.isRunning():
            return True
        self.worker._stopping.set()
        self._send("shutdown")
        if self.thread.wait(max(0, timeout_ms - 500)):
            return True
        self.worker.abort_source()
        if self.thread.wait(500):
            return True
        self.thread.setParent(None)
        self.worker.setParent(None)
        _ABANDONED.append((self.thread, self.worker))
        return False
