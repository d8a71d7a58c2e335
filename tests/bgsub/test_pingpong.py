"""The long-stream check (benchmarks/bgsub_pingpong.py): playback order and the quarter table."""

from __future__ import annotations


import pytest

from bgsub.sample import sample_sequence
from tests._scripts import load_benchmark

pingpong = load_benchmark("bgsub_pingpong")


def test_playback_goes_forwards_and_backwards_without_repeating_the_ends():
    assert pingpong.pingpong([1, 2, 3], 9) == [1, 2, 3, 2, 1, 2, 3, 2, 1]
    assert pingpong.pingpong([5, 6], 5) == [5, 6, 5, 6, 5]
    assert pingpong.pingpong([4], 3) == [4, 4, 4]


#: olkn's defaults on the bundled sample played to 480 frames (seeded: the same masks every run), F and
#: false-positive rate (%) of each quarter, as the script prints them (3 and 2 decimals).
SAMPLE_QUARTERS_OLKN = [(0.779, 0.75), (0.794, 1.76), (0.778, 2.02), (0.800, 1.64)]


def test_quarter_table_on_the_bundled_sample(tmp_path, capsys):
    (tmp_path / "sample").symlink_to(sample_sequence(), target_is_directory=True)
    assert pingpong.main(["--algo", "olkn", "--data", str(tmp_path), "--length", "480"]) == 0
    out = capsys.readouterr().out.splitlines()
    row = next(line for line in out if line.startswith("| sample |"))
    cells = [c.strip() for c in row.strip("|").split("|")][1:]
    assert len(cells) == 4
    got = [tuple(float(v) for v in cell.split(" / ")) for cell in cells]
    for (F, fpr), (want_F, want_fpr) in zip(got, SAMPLE_QUARTERS_OLKN):
        # the printed precision: a change of 0.002 in F or 0.02 points of false positives fails
        assert F == pytest.approx(want_F, abs=0.0015) and fpr == pytest.approx(want_fpr, abs=0.015), got
    assert out[-1].startswith("| **mean** |")


def test_a_folder_without_sequences_says_so(tmp_path, capsys):
    assert pingpong.main(["--data", str(tmp_path / "missing")]) == 2
    assert "no sequences at" in capsys.readouterr().err
