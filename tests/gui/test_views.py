"""Image views and panels on their own, fed with results of a real session."""

from __future__ import annotations

import numpy as np
import pytest

from PySide6.QtWidgets import QLabel

from bgsub import registry
from bgsub_gui.model import Session
from bgsub_gui.panels import MetricsPanel, ParameterForm, describe_range, param_label_html
from bgsub_gui.views import FrameViews, overlay_mask, symmetric_levels


@pytest.fixture
def results(tiny_sequence):
    session = Session(algo="mog2")
    session.open(tiny_sequence)
    out = [session.step() for _ in range(12)]
    session.close()
    return out


def test_symmetric_levels_centre_zero_and_stay_in_range():
    score = np.linspace(-0.5, 2.0, 1001, dtype=np.float32).reshape(7, 143)
    lo, hi = symmetric_levels(score, (-5.0, 5.0), quantile=100.0)
    assert (lo, hi) == pytest.approx((-2.0, 2.0))
    assert symmetric_levels(score * 10, (-5.0, 5.0)) == (-5.0, 5.0)
    flat = np.zeros((3, 3), np.float32)
    lo, hi = symmetric_levels(flat, (-1.0, 1.0))
    assert lo < 0 < hi  # never an empty range
    nan = np.full((2, 2), np.nan, np.float32)
    assert symmetric_levels(nan, (-1.0, 1.0))[1] > 0


def test_overlay_tints_only_the_foreground():
    rgb = np.full((4, 5, 3), 100, np.uint8)
    mask = np.zeros((4, 5), np.uint8)
    mask[1, 2] = 255
    out = overlay_mask(rgb, mask)
    assert out[1, 2, 0] > 100 and out[1, 2, 1] < 100
    assert (out[mask == 0] == 100).all()
    assert (rgb == 100).all()  # the input is untouched


def test_views_show_a_result_and_levels_follow_until_the_user_moves_them(qtbot, results):
    views = FrameViews()
    qtbot.addWidget(views)
    views.show_result(results[5])
    assert views.frame_item.image.shape == (48, 64, 3)
    # BGR from OpenCV shown as RGB
    assert np.array_equal(views.frame_item.image, results[5].image[..., ::-1])
    assert np.array_equal(views.mask_item.image, results[5].mask)
    lo, hi = views.histogram.getLevels()
    assert lo == pytest.approx(-hi) and hi > 0
    assert views.auto_levels
    with qtbot.waitSignal(views.autoLevelsChanged) as blocker:
        views.histogram.region.setRegion((-0.3, 0.7))  # as a drag of the handles does
    assert blocker.args == [False] and not views.auto_levels
    views.show_result(results[6])
    assert views.histogram.getLevels() == pytest.approx((-0.3, 0.7))
    views.set_auto_levels(True)
    assert views.histogram.getLevels()[0] == pytest.approx(-views.histogram.getLevels()[1])


def test_metrics_panel_shows_the_numbers(qtbot, results):
    panel = MetricsPanel()
    qtbot.addWidget(panel)
    last = results[-1]
    panel.show_result(last)
    assert panel.labels["auc"].text() == f"{last.roc.auc:.4f}"
    assert panel.labels["F"].text() == f"{last.metrics['F']:.4f}"
    assert panel.labels["frame"].text().startswith("12 ")
    assert panel.labels["foreground"].text().endswith("%")
    panel.reset(None)
    assert panel.labels["auc"].text() == "—"
    assert len(panel.roc_curve.getData()[0] or []) == 0


def test_parameter_form_matches_the_specs_and_marks_resets(qtbot):
    for algo in registry.algorithms():
        form = ParameterForm()
        qtbot.addWidget(form)
        form.build(algo)
        specs = registry.param_specs(algo)
        assert form.names() == [p.name for p in specs]
        for spec in specs:
            text = param_label_html(spec, "")
            assert spec.name in text
            if spec.type in (int, float) and spec.unit:
                assert spec.unit.split()[0] in text
        if not specs:  # BGSLibrary's peers: published defaults, said in the form
            assert "published defaults" in form.findChild(QLabel, "param_none").text()
            continue
        with qtbot.waitSignal(form.paramEdited) as blocker:
            numeric = next(p for p in specs if p.type in (int, float))
            hi = numeric.high if numeric.high is not None else numeric.default + 1
            form.widget(numeric.name).setValue(hi)
        assert blocker.args[0] == numeric.name
        assert isinstance(blocker.args[1], numeric.type)


def test_describe_range():
    spec = registry.ParamSpec("history", int, 500, "frames", "frames", 1, 100000)
    assert describe_range(spec) == "[1, 100000] frames"
    assert describe_range(registry.ParamSpec("flag", bool, True, "x")) == "on / off"
    assert describe_range(registry.ParamSpec("c", str, "a", "x", choices=("a", "b"))) == "one of a, b"
