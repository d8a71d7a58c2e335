"""Side panels: the controls (transport, algorithm, parameters) and the metrics (ROC).

The parameter form is generated from :func:`bgsub.registry.param_specs`, so a
newly registered algorithm gets its widgets without any change here. Every
widget says its unit and accepted range; a parameter that cannot change on a
running model (``ParamSpec.live`` False) is marked, and changing it resets the
model.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from bgsub import registry

from .model import FrameResult, SourceInfo, device_problem

__all__ = ["ParameterForm", "ControlPanel", "MetricsPanel", "RESET_MARK", "describe_range", "param_label_html"]

#: Mark next to parameters whose change rebuilds the model.
RESET_MARK = "\u21bb"
_INT_LIMIT = 2**31 - 1


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def describe_range(spec: registry.ParamSpec) -> str:
    """``"[0, 255] pixel value"``-style text for a parameter's accepted values."""
    if spec.type is bool:
        return "on / off"
    if spec.choices:
        return "one of " + ", ".join(spec.choices)
    if spec.type in (int, float):
        lo = "-inf" if spec.low is None else _fmt(spec.type(spec.low))
        hi = "inf" if spec.high is None else _fmt(spec.type(spec.high))
        unit = f" {spec.unit}" if spec.unit else ""
        return f"[{lo}, {hi}]{unit}"
    return spec.unit or "text"


def param_label_html(spec: registry.ParamSpec, mark: str = "") -> str:
    """Rich-text label: the name, then (grey, small) its accepted range and unit."""
    extra = ""
    if spec.type in (int, float):
        extra = describe_range(spec)
    elif spec.unit:
        extra = spec.unit
    name = html.escape(spec.name) + html.escape(mark)
    if not extra:
        return name
    return f"{name}<br><span style='color:#777; font-size:small'>{html.escape(extra)}</span>"


class ParameterForm(QWidget):
    """One widget per parameter of an algorithm, built from its ParamSpecs.

    Signals
    -------
    paramEdited(str, object)
        The user set a parameter (name, value of the spec's type).
    """

    paramEdited = Signal(str, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QFormLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self._widgets: dict[str, QWidget] = {}
        self._specs: dict[str, registry.ParamSpec] = {}
        self._quiet = False
        self.algo: str | None = None

    def build(self, algo: str, values: dict[str, Any] | None = None) -> None:
        """Replace the widgets with those of ``algo``, showing ``values``."""
        while self._layout.rowCount():
            self._layout.removeRow(0)
        self._widgets.clear()
        self._specs = {p.name: p for p in registry.param_specs(algo)}
        self.algo = algo
        values = {**registry.default_params(algo), **(values or {})}
        any_reset = False
        for spec in self._specs.values():
            widget = self._make_widget(spec, values[spec.name])
            widget.setObjectName(f"param_{spec.name}")
            mark = "" if spec.live else f" {RESET_MARK}"
            label = QLabel(param_label_html(spec, mark))
            label.setWordWrap(True)
            tip = f"{spec.doc}\nAccepted: {describe_range(spec)}; default {_fmt(spec.default)}."
            if not spec.live:
                tip += "\nChanging it resets the model (the learned background is lost)."
                any_reset = True
            else:
                tip += "\nApplied to the running model."
            label.setToolTip(tip)
            widget.setToolTip(tip)
            self._layout.addRow(label, widget)
            self._widgets[spec.name] = widget
        if not self._specs:
            note = QLabel(f"{algo} runs with its authors' published defaults: no parameters to set")
            note.setObjectName("param_none")
            note.setWordWrap(True)
            note.setStyleSheet("color: #666;")
            self._layout.addRow(note)
        if any_reset:
            note = QLabel(f"{RESET_MARK} changing it resets the model")
            note.setStyleSheet("color: #666;")
            self._layout.addRow(note)

    def _make_widget(self, spec: registry.ParamSpec, value: Any) -> QWidget:
        name = spec.name
        if spec.type is bool:
            box = QCheckBox()
            box.setChecked(bool(value))
            box.toggled.connect(lambda checked, n=name: self._emit(n, bool(checked)))
            return box
        if spec.type is str:
            if spec.choices:
                combo = QComboBox()
                combo.addItems(list(spec.choices))
                combo.setCurrentText(str(value))
                combo.currentTextChanged.connect(lambda text, n=name: self._emit(n, text))
                return combo
            edit = QLineEdit(str(value))
            edit.editingFinished.connect(lambda n=name, e=edit: self._emit(n, e.text()))
            return edit
        is_int = spec.type is int
        lo = spec.low if spec.low is not None else (-_INT_LIMIT if is_int else None)
        hi = spec.high if spec.high is not None else (_INT_LIMIT if is_int else None)
        if is_int:
            lo = max(int(lo), -_INT_LIMIT)
            hi = min(int(hi), _INT_LIMIT)
        spin = pg.SpinBox(
            value=value,
            bounds=(lo, hi),
            int=is_int,
            dec=True,
            step=1 if is_int else 0.5,
            minStep=1 if is_int else 1e-6,
            decimals=6,
            compactHeight=False,
        )
        spin.sigValueChanged.connect(lambda sb, n=name, t=spec.type: self._emit(n, t(sb.value())))
        return spin

    def _emit(self, name: str, value: Any) -> None:
        if not self._quiet:
            self.paramEdited.emit(name, value)

    def widget(self, name: str) -> QWidget:
        """The widget of parameter ``name``."""
        return self._widgets[name]

    def names(self) -> list[str]:
        return list(self._widgets)

    def set_value(self, name: str, value: Any) -> None:
        """Show ``value`` without emitting ``paramEdited``."""
        widget = self._widgets.get(name)
        if widget is None:
            return
        self._quiet = True
        try:
            if isinstance(widget, QCheckBox):
                widget.setChecked(bool(value))
            elif isinstance(widget, QComboBox):
                widget.setCurrentText(str(value))
            elif isinstance(widget, QLineEdit):
                widget.setText(str(value))
            else:
                widget.setValue(value, delaySignal=False)
        finally:
            self._quiet = False


class ControlPanel(QWidget):
    """Transport buttons, algorithm choice, parameters, threshold and display options.

    Signals
    -------
    algorithmChosen(str)
    deviceChosen(str)
        Run the learners on ``"cpu"`` or ``"cuda"`` (offered where :func:`bgsub_gui.model.device_problem` finds
        nothing missing).
    paramEdited(str, object)
    thresholdChanged(float)
    overlayToggled(bool)
    realtimeToggled(bool)
    saveToggled(bool)
    objectsToggled(bool)
        Draw the objects' boxes and track ids.
    minAreaChanged(int)
    overlayVideoToggled(bool)
        Record the overlay video (the window asks where).
    objectsFileToggled(bool)
        Save the objects file (the window asks where).
    """

    algorithmChosen = Signal(str)
    deviceChosen = Signal(str)
    paramEdited = Signal(str, object)
    thresholdChanged = Signal(float)
    overlayToggled = Signal(bool)
    realtimeToggled = Signal(bool)
    saveToggled = Signal(bool)
    objectsToggled = Signal(bool)
    minAreaChanged = Signal(int)
    overlayVideoToggled = Signal(bool)
    objectsFileToggled = Signal(bool)

    #: Texts of the output check boxes when not recording.
    OUTPUT_TEXTS = {"masks": "Save masks to a folder…", "overlay": "Record overlay video…",
                    "objects": "Save objects (JSONL/CSV)…"}
    #: The device choice's tooltip where the GPU engine runs the algorithm.
    DEVICE_TIP = ("Where the per-pixel learners run: cpu, or cuda (an NVIDIA GPU; olkn and norma, without texture "
                  "features). Changing it starts a new model.")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)

        self.source_label = QLabel("No source")
        self.source_label.setObjectName("sourceLabel")
        self.source_label.setWordWrap(True)
        self.source_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        source_box = QGroupBox("Source")
        sl = QVBoxLayout(source_box)
        sl.addWidget(self.source_label)
        self.open_button = QPushButton("Open…")
        self.open_button.setObjectName("openButton")
        sl.addWidget(self.open_button)
        layout.addWidget(source_box)

        transport = QHBoxLayout()
        self.play_button = QPushButton("Play")
        self.play_button.setObjectName("playButton")
        self.play_button.setCheckable(True)
        self.step_button = QPushButton("Step")
        self.restart_button = QPushButton("Restart")
        self.play_button.setToolTip("Play / pause (Space)")
        self.step_button.setToolTip("Process one frame (Right arrow)")
        self.restart_button.setToolTip("Back to the first frame with a fresh model (R)")
        self.open_button.setToolTip("Open a video (Ctrl+O), a folder (Ctrl+Shift+O), a camera or the sample (Ctrl+B)")
        for b in (self.play_button, self.step_button, self.restart_button):
            transport.addWidget(b)
        layout.addLayout(transport)

        mask_box = QGroupBox("Mask")
        ml = QFormLayout(mask_box)
        self.threshold_spin = pg.SpinBox(value=0.0, bounds=(-1.0, 1.0), step=0.01, decimals=4, compactHeight=False)
        self.threshold_spin.setObjectName("thresholdSpin")
        self.threshold_spin.setToolTip(
            "Score threshold of the mask, in score units: foreground where score > threshold.\n"
            "0 is the subtractor's own decision (with its mask post-processing, if any);\n"
            "any other value thresholds the raw score map. The ROC's marked point is this threshold.\n"
            "Press 0 to come back to 0."
        )
        self.threshold_spin.sigValueChanged.connect(lambda sb: self.thresholdChanged.emit(float(sb.value())))
        self.threshold_range = QLabel("")
        self.threshold_range.setStyleSheet("color: #555;")
        ml.addRow("threshold (score)", self.threshold_spin)
        ml.addRow("", self.threshold_range)
        self.overlay_check = QCheckBox("Overlay mask on frame")
        self.overlay_check.toggled.connect(self.overlayToggled)
        ml.addRow(self.overlay_check)
        self.realtime_check = QCheckBox("Pace files at their frame rate")
        self.realtime_check.setToolTip("Off: process files as fast as possible. Cameras always run live.")
        self.realtime_check.toggled.connect(self.realtimeToggled)
        ml.addRow(self.realtime_check)
        self.boxes_check = QCheckBox("Show objects (boxes, track ids)")
        self.boxes_check.setObjectName("boxesCheck")
        self.boxes_check.setToolTip("Draw each foreground blob's bounding box and track id over the input frame (B)")
        self.boxes_check.toggled.connect(self.objectsToggled)
        ml.addRow(self.boxes_check)
        self.min_area_spin = pg.SpinBox(value=0, bounds=(0, _INT_LIMIT), int=True, step=1, minStep=1,
                                        compactHeight=False)
        self.min_area_spin.setObjectName("minAreaSpin")
        self.min_area_spin.setToolTip("Drop foreground blobs smaller than this many pixels (0: keep all)")
        self.min_area_spin.sigValueChanged.connect(lambda sb: self.minAreaChanged.emit(int(sb.value())))
        ml.addRow("min area (pixels)", self.min_area_spin)
        layout.addWidget(mask_box)

        out_box = QGroupBox("Save while running")
        ol = QVBoxLayout(out_box)
        self.save_check = QCheckBox(self.OUTPUT_TEXTS["masks"])
        self.save_check.setObjectName("saveCheck")
        self.save_check.toggled.connect(self.saveToggled)
        self.overlay_video_check = QCheckBox(self.OUTPUT_TEXTS["overlay"])
        self.overlay_video_check.setObjectName("overlayVideoCheck")
        self.overlay_video_check.setToolTip("The input with the mask tinted and the objects boxed, as a video; "
                                            "the file appears when you stop")
        self.overlay_video_check.toggled.connect(self.overlayVideoToggled)
        self.objects_check = QCheckBox(self.OUTPUT_TEXTS["objects"])
        self.objects_check.setObjectName("objectsCheck")
        self.objects_check.setToolTip("Every object of every frame: frame, track id, box, area, centroid; "
                                      "the file appears when you stop")
        self.objects_check.toggled.connect(self.objectsFileToggled)
        self._output_checks = {"masks": self.save_check, "overlay": self.overlay_video_check,
                               "objects": self.objects_check}
        self._output_tips = {kind: box.toolTip() for kind, box in self._output_checks.items()}
        for box in self._output_checks.values():
            ol.addWidget(box)
        layout.addWidget(out_box)

        algo_box = QGroupBox("Algorithm")
        al = QVBoxLayout(algo_box)
        self.algo_combo = QComboBox()
        self.algo_combo.setObjectName("algoCombo")
        for name in registry.algorithms():
            self.algo_combo.addItem(name)
        self.algo_combo.currentTextChanged.connect(self._on_algorithm)
        al.addWidget(self.algo_combo)
        self.algo_doc = QLabel("")
        self.algo_doc.setWordWrap(True)
        self.algo_doc.setStyleSheet("color: #555;")
        al.addWidget(self.algo_doc)
        device_row = QHBoxLayout()
        device_row.addWidget(QLabel("device"))
        self.device_combo = QComboBox()
        self.device_combo.setObjectName("deviceCombo")
        self.device_combo.addItems(["cpu", "cuda"])
        self.device_combo.setToolTip(self.DEVICE_TIP)
        self.device_combo.currentTextChanged.connect(self._on_device)
        device_row.addWidget(self.device_combo, 1)
        al.addLayout(device_row)
        #: Why the GPU cannot run the algorithm shown (None: it can).
        self.device_problem: str | None = None
        self.params = ParameterForm()
        self.params.paramEdited.connect(self.paramEdited)
        al.addWidget(self.params)
        layout.addWidget(algo_box)

        layout.addStretch(1)

    def _on_algorithm(self, algo: str) -> None:
        if algo and algo != self.params.algo:
            self.show_algorithm(algo)
            self.algorithmChosen.emit(algo)

    def _on_device(self, device: str) -> None:
        if device:
            self.deviceChosen.emit(device)

    def show_device(self, device: str, algo: str, values: dict[str, Any] | None = None) -> None:
        """Show ``device`` in the device choice, without emitting; the choice is enabled only where ``algo`` with
        ``values`` runs on the GPU here (else it shows cpu, and its tooltip says what is missing)."""
        self.device_problem = device_problem(algo, values)
        if self.device_problem is not None:
            device = "cpu"
        self.device_combo.blockSignals(True)
        self.device_combo.setCurrentText(device)
        self.device_combo.blockSignals(False)
        self.device_combo.setEnabled(self.device_problem is None)
        self.device_combo.setToolTip(self.DEVICE_TIP if self.device_problem is None
                                     else f"cuda cannot run here: {self.device_problem}")

    def show_algorithm(self, algo: str, values: dict[str, Any] | None = None, device: str | None = None) -> None:
        """Show ``algo`` in the combo and its parameter widgets, and ``device`` (None: the one shown) in the
        device choice (:meth:`show_device`), without emitting."""
        self.algo_combo.blockSignals(True)
        self.algo_combo.setCurrentText(algo)
        self.algo_combo.blockSignals(False)
        doc = ""
        try:
            doc = registry.algorithm_info(algo).doc  # one line about the algorithm
        except Exception:
            pass
        self.algo_doc.setText(doc)
        self.algo_doc.setVisible(bool(doc))
        self.params.build(algo, values)
        self.show_device(device or self.device_combo.currentText(), algo, values)

    def set_score_range(self, lo: float, hi: float) -> None:
        """Bound the threshold to the score map's range.

        A threshold outside the new range is brought back into it, and
        ``thresholdChanged`` says so, so that the model uses what is shown.
        """
        value = float(self.threshold_spin.value())
        self.threshold_spin.setOpts(bounds=(lo, hi), step=max((hi - lo) / 200.0, 1e-6))
        self.threshold_range.setText(f"scores lie in [{lo:g}, {hi:g}]")
        clipped = min(max(value, lo), hi)
        self.set_threshold(clipped)
        if clipped != value:
            self.thresholdChanged.emit(clipped)

    def set_threshold(self, value: float) -> None:
        self.threshold_spin.blockSignals(True)
        self.threshold_spin.setValue(value, delaySignal=False)
        self.threshold_spin.blockSignals(False)

    def set_playing(self, playing: bool) -> None:
        self.play_button.blockSignals(True)
        self.play_button.setChecked(playing)
        self.play_button.setText("Pause" if playing else "Play")
        self.play_button.blockSignals(False)

    def set_saving(self, folder: str | None) -> None:
        self.set_output("masks", folder)

    def set_output(self, kind: str, path: str | None) -> None:
        """Show whether the ``"masks"``, ``"overlay"`` or ``"objects"`` output runs, and where to, without emitting."""
        box = self._output_checks[kind]
        box.blockSignals(True)
        box.setChecked(path is not None)
        verb = {"masks": "Saving masks to", "overlay": "Recording overlay to", "objects": "Saving objects to"}[kind]
        box.setText(f"{verb} {Path(path).name}" if path else self.OUTPUT_TEXTS[kind])
        box.setToolTip(str(path) if path else self._output_tips[kind])
        box.blockSignals(False)

    def set_show_objects(self, enabled: bool) -> None:
        self.boxes_check.blockSignals(True)
        self.boxes_check.setChecked(bool(enabled))
        self.boxes_check.blockSignals(False)

    def set_min_area(self, pixels: int) -> None:
        self.min_area_spin.blockSignals(True)
        self.min_area_spin.setValue(int(pixels), delaySignal=False)
        self.min_area_spin.blockSignals(False)


def _finite(x: Any) -> bool:
    return x is not None and math.isfinite(float(x))


def _pct(x: float | None) -> str:
    return f"{100.0 * x:.1f} %" if _finite(x) else "—"


class MetricsPanel(QWidget):
    """The ROC curve with its AUC and operating point, and the running numbers."""

    NO_GT = "No ground truth: the ROC curve and F need a CDnet-layout folder with groundtruth/."

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)

        self.roc_plot = pg.PlotWidget(background="w")
        self.roc_plot.setObjectName("rocPlot")
        self.roc_plot.setTitle("ROC (scored frames so far)", color="k")
        self.roc_plot.setLabel("bottom", "false-positive rate")
        self.roc_plot.setLabel("left", "true-positive rate")
        self.roc_plot.setXRange(0, 1, padding=0.02)
        self.roc_plot.setYRange(0, 1, padding=0.02)
        self.roc_plot.setMouseEnabled(False, False)
        self.roc_plot.showGrid(x=True, y=True, alpha=0.2)
        self.roc_plot.plot([0, 1], [0, 1], pen=pg.mkPen((150, 150, 150), style=Qt.PenStyle.DashLine))
        self.roc_curve = self.roc_plot.plot([], [], pen=pg.mkPen((30, 90, 200), width=2))
        self.roc_point = pg.ScatterPlotItem(size=11, brush=pg.mkBrush(220, 30, 30), pen=pg.mkPen("k"))
        self.roc_plot.addItem(self.roc_point)
        self.roc_note = pg.TextItem("", color=(90, 90, 90), anchor=(0.5, 0.5))
        self.roc_note.setPos(0.5, 0.5)
        self.roc_plot.addItem(self.roc_note)
        self.roc_plot.setMinimumWidth(260)
        layout.addWidget(self.roc_plot, 1)

        numbers = QGroupBox("Metrics")
        grid = QGridLayout(numbers)
        self.labels: dict[str, QLabel] = {}
        rows = [
            ("auc", "AUC"),
            ("operating", "threshold → (FPR, TPR)"),
            ("F", "F-measure"),
            ("recall", "recall"),
            ("precision", "precision"),
            ("PWC", "PWC (% wrong)"),
            ("scored", "scored frames"),
            ("frame", "frame"),
            ("fps", "processing rate"),
            ("foreground", "foreground pixels"),
            ("dropped", "camera frames dropped"),
            ("lost", "frames lost (decode errors)"),
        ]
        for r, (key, text) in enumerate(rows):
            name = QLabel(text)
            value = QLabel("—")
            value.setObjectName(f"metric_{key}")
            value.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            value.setMinimumWidth(110)
            grid.addWidget(name, r, 0)
            grid.addWidget(value, r, 1)
            self.labels[key] = value
        self.gt_note = QLabel("")
        self.gt_note.setWordWrap(True)
        self.gt_note.setStyleSheet("color: #666;")
        grid.addWidget(self.gt_note, len(rows), 0, 1, 2)
        grid.setRowStretch(len(rows) + 1, 1)
        layout.addWidget(numbers)
        self.reset(None)

    def reset(self, info: SourceInfo | None) -> None:
        """Clear the curve and the numbers (a new source or model)."""
        self.roc_curve.setData([], [])
        self.roc_point.setData([], [])
        has_gt = bool(info and info.has_groundtruth)
        if has_gt:
            first, last = info.temporal_roi
            self.roc_note.setText("waiting for scored frames…")
            self.gt_note.setText(f"Ground truth: frames {first}–{last} are scored (CDnet rules).")
        else:
            self.roc_note.setText("no ground truth")
            self.gt_note.setText(self.NO_GT if info is not None else "")
        for key, label in self.labels.items():
            label.setText("—")

    def show_result(self, result: FrameResult) -> None:
        """Update the curve and the numbers from one processed frame."""
        lab = self.labels
        roc = result.roc
        if roc is not None and roc.fpr.size:
            self.roc_note.setText("")
            self.roc_curve.setData(roc.fpr, roc.tpr)
            self.roc_point.setData([roc.operating_point[0]], [roc.operating_point[1]])
            lab["auc"].setText(f"{roc.auc:.4f}")
            lab["operating"].setText(
                f"{roc.threshold:g} → ({roc.operating_point[0]:.3f}, {roc.operating_point[1]:.3f})"
            )
        m = result.metrics
        if m is not None:
            lab["F"].setText(f"{m['F']:.4f}" if _finite(m.get("F")) else "—")
            lab["recall"].setText(_pct(m.get("recall")))
            lab["precision"].setText(_pct(m.get("precision")))
            lab["PWC"].setText(f"{m['PWC']:.3f} %" if _finite(m.get("PWC")) else "—")
        lab["scored"].setText(str(result.scored_frames))
        lab["frame"].setText(f"{result.index} ({result.processed} processed)")
        lab["fps"].setText(f"{result.fps:.1f} frames/s" if result.fps > 0 else "—")
        lab["foreground"].setText(_pct(result.foreground_fraction))
        lab["dropped"].setText(str(result.dropped))
        lab["lost"].setText(str(result.decode_errors))

    def auc_text(self) -> str:
        return self.labels["auc"].text()
