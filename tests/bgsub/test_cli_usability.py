"""What a user of the command lines meets first: ``python -m bgsub``, ``--version`` everywhere, the algorithms in
``--help``, a short parameter line, the numba compile as a step before the progress bar, and ``bgsub eval``
saying why nothing was scored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

import bgsub
from bgsub.cli import main as cli

REPO = Path(__file__).resolve().parents[2]


def _frames(folder: Path, n: int = 4, size=(32, 24)) -> Path:
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    for i in range(1, n + 1):
        img = rng.integers(60, 200, (size[1], size[0], 3), dtype=np.uint8)
        img[4:10, 2 * i:2 * i + 6] = 250
        cv2.imwrite(str(folder / f"in{i:06d}.png"), img)
    return folder


def _sequence(root: Path, n: int, first_scored: int) -> Path:
    """A CDnet-layout sequence of ``n`` 32x24 frames whose scored range starts at ``first_scored``."""
    _frames(root / "input", n)
    (root / "groundtruth").mkdir()
    for i in range(1, n + 1):
        cv2.imwrite(str(root / "groundtruth" / f"gt{i:06d}.png"), np.zeros((24, 32), np.uint8))
    (root / "temporalROI.txt").write_text(f"{first_scored} {n}\n")
    return root


def test_python_m_bgsub_is_the_command():
    done = subprocess.run([sys.executable, "-m", "bgsub", "--version"], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == f"bgsub {bgsub.__version__}"


@pytest.mark.parametrize("module,prog", [("bgsub_gui.app", "bgsub-gui"), ("learners.bench.cli", "learners-bench")])
def test_every_command_has_a_version(module, prog, capsys):
    import importlib

    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"{prog} {bgsub.__version__}"


@pytest.mark.parametrize("command", ["run", "eval", "demo", "batch"])
def test_algo_help_lists_every_registered_algorithm(command, capsys):
    with pytest.raises(SystemExit):
        cli([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    listed = text[text.rindex("--algo NAME"):][:400]  # its help, not the usage line
    for name in bgsub.algorithms():
        assert name in listed, (name, listed)


def test_the_parameter_line_is_short_full_with_verbose_and_absent_with_quiet(tmp_path, capsys):
    frames = _frames(tmp_path / "frames")
    assert cli(["run", str(frames), "--algo", "olkn", "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "-> olkn (default parameters)" in err and "width=" not in err
    assert cli(["run", str(frames), "--algo", "olkn", "--set", "width=12", "--out", str(tmp_path / "b")]) == 0
    assert "-> olkn width=12.0 (others default)" in capsys.readouterr().err
    assert cli(["run", str(frames), "--algo", "olkn", "--verbose", "--out", str(tmp_path / "c")]) == 0
    line = next(x for x in capsys.readouterr().err.splitlines() if "-> olkn" in x)
    assert all(f"{k}=" in line for k in bgsub.default_params("olkn"))
    assert cli(["run", str(frames), "--algo", "olkn", "--quiet", "--out", str(tmp_path / "d")]) == 0
    err = capsys.readouterr().err
    assert "olkn" not in err and "width" not in err


def test_the_compile_is_a_step_before_the_progress_bar(tmp_path, capsys, monkeypatch):
    """With the kernels not in numba's cache, the run says so and compiles them before the bar starts, so the
    bar's first rate is a frame's; the throwaway warm-up leaves the run's masks as they are without it."""
    import bgsub.commands._common as common
    import bgsub.models.base as base

    frames = _frames(tmp_path / "frames")
    monkeypatch.setattr(base, "is_cached", lambda dispatcher: False)  # as with an empty cache
    assert cli(["run", str(frames), "--algo", "olkn", "--out", str(tmp_path / "warm")]) == 0
    err = capsys.readouterr().err
    compiling = err.index("numba is compiling the frame kernels")
    compiled = err.index("frame kernels compiled in")
    bar = err.index("%|")
    assert compiling < compiled < bar

    monkeypatch.setattr(common, "compile_first", lambda *a, **k: None)
    assert cli(["run", str(frames), "--algo", "olkn", "--out", str(tmp_path / "cold"), "--quiet"]) == 0
    for i in range(1, 5):
        name = f"bin{i:06d}.png"
        assert np.array_equal(cv2.imread(str(tmp_path / "warm" / name)), cv2.imread(str(tmp_path / "cold" / name)))


def test_eval_says_when_max_frames_ends_before_the_scored_frames(tmp_path, capsys):
    late = _sequence(tmp_path / "late", n=8, first_scored=6)
    assert cli(["eval", str(late), "--algo", "knn", "--max-frames", "3", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bgsub eval: error: late: --max-frames 3 stops at frame 3, before its scored frames 6-8")
    assert "give --max-frames 6 or more" in err

    early = _sequence(tmp_path / "early", n=8, first_scored=2)
    assert cli(["eval", str(late), str(early), "--algo", "knn", "--max-frames", "3", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "early" in captured.out and "late" not in captured.out  # the one that can be scored, is
    assert "bgsub eval: error: late not scored: --max-frames 3 stops at frame 3" in captured.err
    assert "1 of 2 sequences failed" in captured.err
    assert cli(["eval", str(late), "--algo", "knn", "--max-frames", "6", "--quiet"]) == 0
