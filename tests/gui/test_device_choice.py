"""The algorithm panel's device choice (cpu / cuda), in a real window offscreen.

Where CUDA cannot run (no numba-cuda, no GPU, an algorithm the GPU engine does not run) the choice is disabled
and its tooltip says what is missing; where numba-cuda is installed, its CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``) stands in for a GPU, and switching to cuda runs frames on the GPU engine.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

# The simulator is chosen when numba.cuda is first imported: before the window's first device check.
if "numba.cuda" not in sys.modules:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from tests.gui.conftest import make_cdnet_sequence  # noqa: E402
from tests.gui.test_main_window import TIMEOUT_MS, open_and_wait, play_frames  # noqa: E402

HAS_NUMBA_CUDA = importlib.util.find_spec("numba_cuda") is not None


def cuda_problem() -> str | None:
    from bgsub_gui.model import device_problem

    return device_problem("olkn")


def test_the_choice_is_disabled_with_the_reason_where_cuda_cannot_run(qtbot, make_window, monkeypatch):
    window = make_window("knn")
    combo = window.controls.device_combo
    assert [combo.itemText(i) for i in range(combo.count())] == ["cpu", "cuda"]
    # knn runs on the CPU only, wherever it runs
    assert combo.currentText() == "cpu" and not combo.isEnabled()
    assert "runs on the CPU only" in combo.toolTip() and "\n" not in combo.toolTip()

    # olkn without numba-cuda: still disabled, saying what to install
    import numba

    monkeypatch.setitem(sys.modules, "numba.cuda", None)
    monkeypatch.delattr(numba, "cuda", raising=False)
    window.controls.algo_combo.setCurrentText("olkn")
    qtbot.waitUntil(lambda: window.controller.session.algo == "olkn", timeout=TIMEOUT_MS)
    assert window.controls.params.algo == "olkn"
    assert not combo.isEnabled() and combo.currentText() == "cpu"
    assert "numba-cuda" in combo.toolTip() and 'pip install -e ".[cuda]"' in combo.toolTip()
    assert window.controller.session.device == "cpu"


@pytest.mark.skipif(not HAS_NUMBA_CUDA, reason="numba-cuda is not installed (pip install -e \".[cuda]\")")
def test_switching_to_cuda_runs_frames_on_the_gpu_engine(qtbot, make_window, tmp_path):
    problem = cuda_problem()
    if problem is not None:  # numba.cuda was imported without the simulator, and there is no GPU
        pytest.skip(f"no CUDA runtime: {problem}")
    seq = make_cdnet_sequence(tmp_path / "small", n_frames=8, width=16, height=12, first_scored=2)
    window = make_window("olkn")
    combo = window.controls.device_combo
    assert combo.isEnabled() and combo.currentText() == "cpu"
    assert "NVIDIA GPU" in combo.toolTip()
    open_and_wait(qtbot, window, seq)
    session = window.controller.session
    cpu_model = session.subtractor

    combo.setCurrentText("cuda")  # as a user picks it
    qtbot.waitUntil(lambda: session.device == "cuda" and session.subtractor is not cpu_model, timeout=TIMEOUT_MS)
    assert type(session.subtractor).__name__ == "CudaOLKNSubtractor"
    qtbot.waitUntil(lambda: "device cuda" in window.statusBar().currentMessage(), timeout=TIMEOUT_MS)
    play_frames(qtbot, window, 3)
    result = window.last_result
    assert result.processed == 3 and result.mask.shape == (12, 16)
    assert session.subtractor.device == "cuda" and session.subtractor.n_frames_ == 3

    # an algorithm the GPU engine does not run goes to the CPU, and the choice says why
    window.controls.algo_combo.setCurrentText("knn")
    qtbot.waitUntil(lambda: session.algo == "knn", timeout=TIMEOUT_MS)
    assert session.device == "cpu"
    assert combo.currentText() == "cpu" and not combo.isEnabled() and "CPU only" in combo.toolTip()


@pytest.mark.skipif(not HAS_NUMBA_CUDA, reason="numba-cuda is not installed (pip install -e \".[cuda]\")")
def test_the_session_keeps_its_device_for_loaded_models_and_refuses_what_cannot_run(tmp_path):
    from bgsub_gui.model import Session

    problem = cuda_problem()
    if problem is not None:
        pytest.skip(f"no CUDA runtime: {problem}")
    seq = make_cdnet_sequence(tmp_path / "small", n_frames=4, width=16, height=12, first_scored=2)
    gpu = Session(algo="olkn", device="cuda")
    gpu.open(seq)
    for _ in range(2):
        assert gpu.step() is not None
    path = gpu.save_model(tmp_path / "model.npz")
    assert gpu.subtractor.device == "cuda"
    cpu = Session(algo="knn")
    assert cpu.load_model(path) == "olkn" and cpu.device == "cpu"
    assert type(cpu.subtractor).__name__ == "OLKNSubtractor"
    assert gpu.load_model(path) == "olkn" and gpu.subtractor.device == "cuda"
    with pytest.raises(ValueError, match="runs on the CPU only"):
        Session(algo="knn").set_device("cuda")
    knn = Session(algo="knn")
    try:
        knn.set_device("cuda")
    except ValueError:
        pass
    assert knn.device == "cpu"  # refused: nothing changed
