"""The main window: views on top, metrics below, controls on the left.

The window is given a :class:`bgsub_gui.model.Session` (Qt-free) and runs it through a
:class:`bgsub_gui.worker.SessionController`; it never processes frames itself. All
views are updated from the worker's signals.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEventLoop, QSettings, Qt, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from bgsub import registry
from .model import FrameResult, ParamChange, Session, SourceInfo, warm_up
from .panels import ControlPanel, MetricsPanel
from .views import FrameViews
from .worker import PlayState, SessionController

__all__ = ["MainWindow", "RecentSources", "VIDEO_FILTER"]

HELP_TEXT = """Space: play / pause
Right: process one frame
R: restart from the first frame, with a fresh model
O: draw the mask over the input frame
B: draw the objects (bounding boxes with track ids) over the input frame
0: threshold back to 0 (the subtractor's own decision)
A: score levels follow the scores (off once you drag the levels)
Ctrl+O: open a video file; Ctrl+Shift+O: open a folder (images or CDnet)
Ctrl+B: open the bundled sample; Ctrl+S: save masks to a folder
File > Record overlay video / Save objects: save while running (the file appears when you stop)
Ctrl+Q: quit

Mouse: drag to pan, wheel to zoom (the three views move together);
drag the coloured bar's handles to set the score map's levels.
Drop a video file or a folder onto the window to open it.
Parameters marked \u21bb reset the model when changed; the others apply live."""

VIDEO_FILTER = "Videos (*.mp4 *.avi *.mkv *.mov *.m4v *.webm *.mpg *.mpeg *.wmv);;All files (*)"


class RecentSources:
    """The most recently opened sources, newest first, kept in QSettings.

    Parameters
    ----------
    settings : QSettings
    key : str
    limit : int
        How many are kept.
    """

    def __init__(self, settings: QSettings, key: str = "recentSources", limit: int = 8) -> None:
        self.settings = settings
        self.key = key
        self.limit = limit

    def items(self) -> list[str]:
        value = self.settings.value(self.key, [])
        if isinstance(value, str):  # QSettings returns a lone item as a string
            value = [value]
        return [str(v) for v in (value or []) if str(v)]

    def add(self, spec: str) -> None:
        items = [spec] + [s for s in self.items() if s != spec]
        self.settings.setValue(self.key, items[: self.limit])
        self.settings.sync()

    def clear(self) -> None:
        self.settings.remove(self.key)
        self.settings.sync()


class MainWindow(QMainWindow):
    """The background-subtraction window.

    Parameters
    ----------
    session : Session
        The model; handed to the worker thread.
    settings : QSettings or None
        Where recent sources are kept (default: the app's user settings).
    camera_lister : callable or None
        ``() -> list[int]``, the camera indices that open; default
        :func:`bgsub.sources.list_cameras`.
    sample_locator : callable or None
        ``() -> Path`` of the bundled sample; default
        :func:`bgsub.sample.sample_sequence`.

    Signals
    -------
    resultShown(object)
        A :class:`FrameResult` was drawn.
    """

    resultShown = Signal(object)

    def __init__(
        self,
        session: Session,
        settings: QSettings | None = None,
        camera_lister=None,
        sample_locator=None,
    ) -> None:
        super().__init__()
        self.setWindowTitle("bgsub — background subtraction")
        self.setAcceptDrops(True)
        self.settings = settings if settings is not None else QSettings("olk-bgsub", "bgsub-gui")
        self.recent = RecentSources(self.settings)
        self._camera_lister = camera_lister
        self._sample_locator = sample_locator
        self.source_info: SourceInfo | None = None
        self.last_result: FrameResult | None = None
        self.last_error: str | None = None
        self.state = PlayState.IDLE
        self._closed = False
        self._stopped = True

        self._warmed: set = set()
        self.warm_up(session.algo, session.params)
        # The window's own copy of the algorithm and parameters, kept current from the
        # worker's signals: the session belongs to the worker thread from here on.
        self.algo: str = session.algo
        self.params: dict = dict(session.params)
        self.controller = SessionController(session, self)
        worker = self.controller.worker
        # The worker emits from its own thread. Every receiver here is a @Slot: PySide6 >= 6.8 can
        # crash delivering a cross-thread signal to an undecorated method (PYSIDE-3124).
        slots = {"resultReady": self._on_result_ready, "sourceOpened": self._on_source_opened,
                 "modelReset": self._on_model_reset, "paramChanged": self._on_param_changed,
                 "paramRejected": self.controls_show_param, "algorithmRejected": self._on_algorithm_rejected,
                 "stateChanged": self._on_state, "error": self.show_error, "info": self.show_message,
                 "frameLimitReached": self._on_frame_limit, "modelLoaded": self._on_model_loaded,
                 "outputChanged": self._on_output_changed}
        for signal, slot in slots.items():
            getattr(worker, signal).connect(slot)

        self.views = FrameViews()
        self.metrics = MetricsPanel()
        self.controls = ControlPanel()
        self.controls.show_algorithm(session.algo, session.params, session.device)
        self.controls.set_score_range(*session.score_range)
        self.views.set_score_range(*session.score_range)
        self.controls.set_threshold(session.threshold)
        self.controls.set_min_area(session.min_area)

        self.error_banner = QLabel("")
        self.error_banner.setObjectName("errorBanner")
        self.error_banner.setWordWrap(True)
        self.error_banner.setStyleSheet(
            "background: #fde2e1; color: #8a1111; border: 1px solid #e0a0a0; padding: 4px;"
        )
        self.error_banner.hide()

        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.views)
        right.addWidget(self.metrics)
        right.setStretchFactor(0, 1)
        right.setStretchFactor(1, 1)
        scroll = QScrollArea()
        scroll.setWidget(self.controls)
        scroll.setWidgetResizable(True)
        scroll.setMinimumWidth(300)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(scroll)
        main.addWidget(right)
        main.setStretchFactor(1, 1)
        central = QWidget()
        box = QVBoxLayout(central)
        box.setContentsMargins(4, 4, 4, 4)
        box.addWidget(self.error_banner)
        box.addWidget(main, 1)
        self.setCentralWidget(central)

        self._build_actions()
        self._wire_controls()
        self.views.autoLevelsChanged.connect(self._on_auto_levels_changed)
        self.statusBar().showMessage("Open a video, a folder, a camera or the bundled sample (File menu).")
        self.resize(1400, 880)

    # ------------------------------------------------------------------ setup

    def _action(self, text: str, slot, shortcut=None, checkable: bool = False) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.setCheckable(checkable)
        action.triggered.connect(slot)
        self.addAction(action)
        return action

    def _build_actions(self) -> None:
        self.open_file_action = self._action("Open &video file…", self.choose_file, QKeySequence.StandardKey.Open)
        self.open_folder_action = self._action("Open &folder (images or CDnet)…", self.choose_folder, "Ctrl+Shift+O")
        self.open_sample_action = self._action("Open bundled &sample", self.open_sample, "Ctrl+B")
        self.save_action = self._action("Save &masks to a folder…", self._toggle_save, "Ctrl+S", checkable=True)
        self.overlay_video_action = self._action("Record &overlay video…", self._toggle_overlay_video,
                                                 checkable=True)
        self.objects_file_action = self._action("Save ob&jects (JSONL/CSV)…", self._toggle_objects_file,
                                                checkable=True)
        self.save_model_action = self._action("Save mo&del…", self.choose_save_model)
        self.load_model_action = self._action("&Load model…", self.choose_load_model)
        self.quit_action = self._action("&Quit", self.close, QKeySequence.StandardKey.Quit)
        self.play_action = self._action("&Play / pause", self.toggle_play, "Space")
        self.step_action = self._action("&Step one frame", self.controller.step, "Right")
        self.restart_action = self._action("&Restart", self.controller.restart, "R")
        self.overlay_action = self._action("Mask &overlay", self._set_overlay, "O", checkable=True)
        self.threshold_zero_action = self._action("Threshold to &0", lambda: self._set_threshold(0.0), "0")

        menu = self.menuBar().addMenu("&File")
        menu.addAction(self.open_file_action)
        menu.addAction(self.open_folder_action)
        self.camera_menu = QMenu("Open &camera", self)
        self.camera_menu.aboutToShow.connect(self._fill_camera_menu)
        menu.addMenu(self.camera_menu)
        menu.addAction(self.open_sample_action)
        self.recent_menu = QMenu("&Recent sources", self)
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        menu.addMenu(self.recent_menu)
        menu.addSeparator()
        menu.addAction(self.save_action)
        menu.addAction(self.overlay_video_action)
        menu.addAction(self.objects_file_action)
        menu.addAction(self.save_model_action)
        menu.addAction(self.load_model_action)
        menu.addSeparator()
        menu.addAction(self.quit_action)

        menu = self.menuBar().addMenu("&Playback")
        for a in (self.play_action, self.step_action, self.restart_action):
            menu.addAction(a)
        menu = self.menuBar().addMenu("&View")
        menu.addAction(self.overlay_action)
        self.boxes_action = self._action("Object &boxes", self.set_show_objects, "B", checkable=True)
        menu.addAction(self.boxes_action)
        menu.addAction(self.threshold_zero_action)
        self.auto_levels_action = self._action("&Auto score levels", self._set_auto_levels, "A", checkable=True)
        self.auto_levels_action.setChecked(True)
        menu.addAction(self.auto_levels_action)
        menu = self.menuBar().addMenu("&Help")
        menu.addAction(self._action("&Keyboard and mouse", self.show_help, QKeySequence.StandardKey.HelpContents))

    def _wire_controls(self) -> None:
        c = self.controls
        c.open_button.clicked.connect(self._open_menu)
        c.play_button.clicked.connect(lambda checked: self.controller.play() if checked else self.controller.pause())
        c.step_button.clicked.connect(self.controller.step)
        c.restart_button.clicked.connect(self.controller.restart)
        c.algorithmChosen.connect(self.set_algorithm)
        c.deviceChosen.connect(self.controller.set_device)
        c.paramEdited.connect(self._on_param_edited)
        c.thresholdChanged.connect(self._set_threshold)
        c.overlayToggled.connect(self._set_overlay)
        c.realtimeToggled.connect(self.controller.set_realtime)
        c.saveToggled.connect(self._toggle_save)
        c.objectsToggled.connect(self.set_show_objects)
        c.minAreaChanged.connect(self.controller.set_min_area)
        c.overlayVideoToggled.connect(self._toggle_overlay_video)
        c.objectsFileToggled.connect(self._toggle_objects_file)

    def _open_menu(self) -> None:
        menu = QMenu(self)
        menu.addAction(self.open_file_action)
        menu.addAction(self.open_folder_action)
        menu.addMenu(self.camera_menu)
        menu.addAction(self.open_sample_action)
        menu.addMenu(self.recent_menu)
        menu.popup(self.controls.open_button.mapToGlobal(self.controls.open_button.rect().bottomLeft()))

    # ------------------------------------------------------------------ sources

    def open_source(self, spec: Any) -> None:
        """Open a camera index, a video file, an image folder or a CDnet folder."""
        if isinstance(spec, os.PathLike):
            spec = os.fspath(spec)
        self.clear_error()
        self.statusBar().showMessage(f"opening {spec}…")
        self.controller.open_source(spec)

    def open_sample(self) -> None:
        """Open the bundled CDnet-layout sample (it has ground truth)."""
        try:
            locator = self._sample_locator
            if locator is None:
                from bgsub.sample import sample_sequence as locator
            path = locator()
        except Exception as exc:
            self.show_error(f"cannot find the bundled sample: {exc}")
            return
        self.open_source(str(path))

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a video file", self._last_dir(), VIDEO_FILTER)
        if path:
            self.open_source(path)

    def choose_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(
            self, "Open a folder of images or a CDnet sequence (with input/)", self._last_dir()
        )
        if path:
            self.open_source(path)

    def _last_dir(self) -> str:
        for spec in self.recent.items():
            p = Path(spec)
            if p.exists():
                return str(p.parent if p.is_file() else p)
        return str(Path.home())

    def _fill_camera_menu(self) -> None:
        self.camera_menu.clear()
        lister = self._camera_lister
        try:
            if lister is None:
                from bgsub.sources import list_cameras as lister
            cameras = list(lister())
        except Exception as exc:
            cameras = []
            self.show_error(f"cannot list cameras: {exc}")
        if not cameras:
            action = self.camera_menu.addAction("No camera found (tried indices 0–7)")
            action.setEnabled(False)
            return
        for index in cameras:
            self.camera_menu.addAction(f"Camera {index}", lambda i=index: self.open_source(i))

    def camera_menu_entries(self) -> list[str]:
        """Texts of the camera menu (filled the way opening the menu fills it)."""
        self._fill_camera_menu()
        return [a.text() for a in self.camera_menu.actions()]

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        items = self.recent.items()
        if not items:
            self.recent_menu.addAction("(none yet)").setEnabled(False)
            return
        for spec in items:
            self.recent_menu.addAction(spec, lambda s=spec: self.open_source(s))
        self.recent_menu.addSeparator()
        self.recent_menu.addAction("Clear list", self.recent.clear)

    # drag and drop ------------------------------------------------------------

    def dragEnterEvent(self, event) -> None:  # noqa: N802 (Qt API)
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event) -> None:  # noqa: N802 (Qt API)
        for url in event.mimeData().urls():
            if url.isLocalFile():
                self.open_source(url.toLocalFile())
                event.acceptProposedAction()
                return
        event.ignore()

    # ------------------------------------------------------------------ requests

    def play(self) -> None:
        self.controller.play()

    def pause(self) -> None:
        self.controller.pause()

    def toggle_play(self) -> None:
        if self.state == PlayState.PLAYING:
            self.controller.pause()
        else:
            self.controller.play()

    def set_algorithm(self, algo: str, params: dict | None = None) -> None:
        """Switch algorithm (new model); the threshold goes back to 0, as scores change scale."""
        self.controls.show_algorithm(algo, params)
        try:
            self.warm_up(algo, {**registry.default_params(algo), **(params or {})})
            self.algo, self.params = algo, {**registry.default_params(algo), **(params or {})}
        except ValueError:
            pass  # a bad value: the worker refuses it and says why
        self.controller.set_algorithm(algo, params)
        self._set_threshold(0.0)

    def set_param(self, name: str, value: Any) -> None:
        """Change a parameter as if typed in its widget."""
        self.controls.params.set_value(name, value)
        self._on_param_edited(name, value)

    def _on_param_edited(self, name: str, value: Any) -> None:
        specs = {p.name: p for p in registry.param_specs(self.algo)}
        if name in specs and not specs[name].live:
            self.warm_up(self.algo, {**self.params, name: value})
        self.controller.set_param(name, value)

    def choose_save_model(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save the model", os.path.join(self._last_dir(), "model.npz"),
                                              "bgsub model (*.npz)")
        if path:
            self.save_model(path)

    def choose_load_model(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load a model", self._last_dir(), "bgsub model (*.npz)")
        if path:
            self.load_model(path)

    def save_model(self, path: str | os.PathLike) -> None:
        """Save the current model (``.npz``; kernel subtractors only) -- the worker does it between frames."""
        self.controller.save_model(os.fspath(path))

    def load_model(self, path: str | os.PathLike) -> None:
        """Continue with the model saved in ``path`` (its algorithm, parameters and state)."""
        self.controller.load_model(os.fspath(path))

    def warm_up(self, algo: str, params: dict) -> None:
        """Compile ``algo``'s kernels for ``params`` here, in the GUI thread (see :func:`bgsub_gui.model.warm_up`).

        Done once per algorithm and parameter set; a failure is left for the
        worker to report when it builds the model.
        """
        key = (algo, tuple(sorted((k, repr(v)) for k, v in params.items())))
        if key in self._warmed:
            return
        try:
            seconds = warm_up(algo, params, on_compile=self._show_now)
        except Exception:
            return
        self._warmed.add(key)
        if seconds > 1.0:
            self.statusBar().showMessage(f"{algo} prepared in {seconds:.1f} s (compiled on first use)")

    def _show_now(self, message: str) -> None:
        """Show ``message`` in the status bar before the GUI thread blocks (numba compiling)."""
        self.statusBar().showMessage(message)
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)

    def _set_threshold(self, value: float) -> None:
        self.controls.set_threshold(value)
        self.controller.set_threshold(value)
        self.statusBar().showMessage(f"threshold {value:g}: F, recall, precision count again from the next frame")

    def _set_overlay(self, enabled: bool) -> None:
        for w in (self.overlay_action, self.controls.overlay_check):
            w.blockSignals(True)
            w.setChecked(bool(enabled))
            w.blockSignals(False)
        self.views.set_overlay(enabled)

    def _set_auto_levels(self, enabled: bool) -> None:
        self.views.set_auto_levels(enabled)

    def _on_auto_levels_changed(self, enabled: bool) -> None:
        self.auto_levels_action.blockSignals(True)
        self.auto_levels_action.setChecked(enabled)
        self.auto_levels_action.blockSignals(False)

    def show_help(self) -> None:
        """A non-modal note on the keys and the mouse."""
        box = QMessageBox(QMessageBox.Icon.Information, "bgsub-gui: keyboard and mouse", HELP_TEXT,
                          QMessageBox.StandardButton.Close, self)
        box.setModal(False)
        box.show()
        self._help_box = box

    def _toggle_save(self, enabled: bool) -> None:
        folder = None
        if enabled:
            folder = QFileDialog.getExistingDirectory(self, "Save masks (bin%06d.png) into", self._last_dir())
            folder = folder or None
        self.set_save_folder(folder)

    def set_save_folder(self, folder: str | os.PathLike | None) -> None:
        """Write masks into ``folder`` from the next frame on (None stops)."""
        folder = os.fspath(folder) if folder is not None else None
        self.controller.set_save_folder(folder)
        self.controls.set_saving(folder)
        self.save_action.blockSignals(True)
        self.save_action.setChecked(folder is not None)
        self.save_action.blockSignals(False)

    def set_show_objects(self, enabled: bool) -> None:
        """Draw the objects' boxes and track ids over the input frame (found from the next frame on)."""
        enabled = bool(enabled)
        self.boxes_action.blockSignals(True)
        self.boxes_action.setChecked(enabled)
        self.boxes_action.blockSignals(False)
        self.controls.set_show_objects(enabled)
        self.controller.set_show_objects(enabled)
        self.views.set_show_objects(enabled)

    def set_min_area(self, pixels: int) -> None:
        """Drop foreground blobs smaller than ``pixels`` (as if typed in its widget)."""
        self.controls.set_min_area(pixels)
        self.controller.set_min_area(pixels)

    #: File dialog of each recording: title, suggested name, filter.
    _RECORDING_DIALOGS = {
        "overlay": ("Record the overlay video (mask tinted, objects boxed) to", "overlay.mp4",
                    "Videos (*.mp4 *.avi *.mkv)"),
        "objects": ("Save every frame's objects to", "objects.jsonl", "Objects (*.jsonl *.csv)"),
    }

    def _toggle_recording(self, kind: str, enabled: bool) -> None:
        path = None
        if enabled:
            title, name, filter_ = self._RECORDING_DIALOGS[kind]
            path, _ = QFileDialog.getSaveFileName(self, title, os.path.join(self._last_dir(), name), filter_)
            if not path:  # cancelled
                self._on_output_changed(kind, None)
                return
        (self.set_overlay_video if kind == "overlay" else self.set_objects_file)(path)

    def _toggle_overlay_video(self, enabled: bool) -> None:
        self._toggle_recording("overlay", enabled)

    def _toggle_objects_file(self, enabled: bool) -> None:
        self._toggle_recording("objects", enabled)

    def set_overlay_video(self, path: str | os.PathLike | None) -> None:
        """Record the input with the mask tinted and the objects boxed into the video ``path``; None stops.

        Through the pipeline's :class:`bgsub.pipeline.OverlayVideo` sink, from the
        next frame on; the file appears under its name when the recording stops
        (None here, another source, or closing the window).
        """
        self.controller.set_overlay_video(os.fspath(path) if path is not None else None)

    def set_objects_file(self, path: str | os.PathLike | None) -> None:
        """Save every frame's objects (track ids, boxes) to ``path`` (``.jsonl`` or ``.csv``); None stops."""
        self.controller.set_objects_file(os.fspath(path) if path is not None else None)

    @Slot(str, object)
    def _on_output_changed(self, kind: str, path) -> None:
        self.controls.set_output(kind, path)
        action = {"masks": self.save_action, "overlay": self.overlay_video_action,
                  "objects": self.objects_file_action}[kind]
        action.blockSignals(True)
        action.setChecked(path is not None)
        action.blockSignals(False)

    # ------------------------------------------------------------------ worker signals

    @Slot()
    def _on_result_ready(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Draw the newest processed frame now, if one is waiting."""
        result = self.controller.take_result()
        if result is None:
            return
        previous = self.last_result
        self.last_result = result
        if result.decode_errors and (previous is None or result.decode_errors > previous.decode_errors):
            self.statusBar().showMessage(
                f"{result.decode_errors} frame(s) of {self.source_info.name if self.source_info else 'the source'} "
                "could not be decoded and were skipped"
            )
        self.views.show_result(result)
        self.metrics.show_result(result)
        self.resultShown.emit(result)

    @Slot(object)
    def _on_source_opened(self, info: SourceInfo) -> None:
        self.source_info = info
        self.clear_error()
        self.recent.add(info.spec)
        details = [info.kind]
        if info.frame_count:
            details.append(f"{info.frame_count} frames")
        if info.fps:
            details.append(f"{info.fps:g} fps")
        details.append("ground truth" if info.has_groundtruth else "no ground truth")
        self.controls.source_label.setText(f"<b>{info.name}</b><br>{', '.join(details)}")
        self.controls.source_label.setToolTip(info.spec)
        self.setWindowTitle(f"bgsub — {info.name}")
        self.statusBar().showMessage(f"opened {info.spec}")

    @Slot(str, object)
    def _on_model_reset(self, reason: str, score_range: tuple[float, float]) -> None:
        self.views.clear()
        self.metrics.reset(self.source_info)
        self.controls.set_score_range(*score_range)
        self.views.set_score_range(*score_range)
        self.statusBar().showMessage(reason)

    @Slot(object)
    def _on_param_changed(self, change: ParamChange) -> None:
        self.params[change.name] = change.value
        self.controls.params.set_value(change.name, change.value)
        self.controls.set_score_range(*change.score_range)
        if change.live:
            self.statusBar().showMessage(change.message)

    @Slot(str, object)
    def _on_algorithm_rejected(self, algo: str, params: dict) -> None:
        self.algo, self.params = algo, dict(params)
        self.controls.show_algorithm(algo, params, self.controller.session.device)

    @Slot(str, object)
    def _on_model_loaded(self, algo: str, params: dict) -> None:
        self.algo, self.params = algo, dict(params)
        self.controls.show_algorithm(algo, params, self.controller.session.device)

    @Slot(str, object)
    def controls_show_param(self, name: str, value: Any) -> None:
        """Show ``value`` in parameter ``name``'s widget (after a rejected change)."""
        self.params[name] = value
        self.controls.params.set_value(name, value)

    @Slot(int)
    def _on_frame_limit(self, frames: int) -> None:
        self.statusBar().showMessage(f"paused after {frames} frames (the frame limit)")

    @Slot(str)
    def _on_state(self, state: str) -> None:
        self.state = state
        self.controls.set_playing(state == PlayState.PLAYING)
        if state == PlayState.ENDED:
            self.statusBar().showMessage("end of the source: Restart (R) to play it again")

    @Slot(str)
    def show_error(self, message: str) -> None:
        """Show ``message`` in the window (banner and status bar)."""
        self.last_error = message
        self.error_banner.setText(message)
        self.error_banner.show()
        self.statusBar().showMessage(message)

    def clear_error(self) -> None:
        self.last_error = None
        self.error_banner.hide()
        self.error_banner.setText("")

    @Slot(str)
    def show_message(self, message: str) -> None:
        self.statusBar().showMessage(message)

    # ------------------------------------------------------------------ closing

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> bool:
        """Stop the worker thread and close the source; True when it stopped (a second call: the first's answer)."""
        if self._closed:
            return self._stopped
        self._closed = True
        self._stopped = self.controller.stop()
        return self._stopped
