"""The long-stream check (benchmarks/bgsub_pingpong.py): playback order and the quarter table."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from bgsub.sample import sample_sequence

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bgsub_pingpong.py"
_spec = importlib.util.spec_from_file_location("bgsub_pingpong", _PATH)
pingpong = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pingpong)


def test_playback_goes_forwards_and_backwards_without_repeating_the_ends():
    assert pingpong.pingpong([1, 2, 3], 9) == [1, 2, 3, 2, 1, 2, 3, 2, 1]
    assert pingpong.pingpong([5, 6], 5) == [5, 6, 5, 6, 5]
    assert pingpong.pingpong([4], 3) == [4, 4, 4]


def test_quarter_table_on_the_bundled_sample(tmp_path, capsys):
    (tmp_path / "sample").symlink_to(sample_sequence(), target_is_directory=True)
    assert pingpong.main(["--algo", "knn", "--data", str(tmp_path), "--length", "480"]) == 0
    out = capsys.readouterr().out.splitlines()
    row = next(line for line in out if line.startswith("| sample |"))
    cells = [c.strip() for c in row.strip("|").split("|")][1:]
    assert len(cells) == 4
    for cell in cells:
        F, fpr = (float(v) for v in cell.split(" / "))
        assert 0 <= F <= 1 and 0 <= fpr <= 100
    assert any(float(c.split(" / ")[0]) > 0.3 for c in cells)  # the sample's objects are found
    assert out[-1].startswith("| **mean** |")


def test_a_folder_without_sequences_says_so(tmp_path, capsys):
    assert pingpong.main(["--data", str(tmp_path / "missing")]) == 2
    assert "no sequences at" in capsys.readouterr().err
