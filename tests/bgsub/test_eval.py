"""``bgsub eval`` and ``bgsub bench`` end to end, on real files."""

from __future__ import annotations

import json
import math

import cv2
import numpy as np
import pytest

from bgsub.cli import main as cli_main
from bgsub.evaluation import evaluate_sequence
from bgsub.cdnet import load_sequence
from bgsub.metrics import frame_counts
from bgsub.sources import open_source
from bgsub.writers import MaskWriter


def _write_sequence(root, n=40, first=11, size=(48, 64), last=None):
    """A CDnet-layout folder: noisy background, a square crossing it, exact ground truth."""
    rng = np.random.default_rng(0)
    H, W = size
    (root / "input").mkdir(parents=True)
    (root / "groundtruth").mkdir()
    yy, xx = np.mgrid[0:H, 0:W]
    base = np.stack([60 + xx, 100 + yy, 140 + 0 * xx], -1).astype(float)
    for t in range(1, n + 1):
        fr = base + rng.normal(0, 2, base.shape)
        gt = np.zeros((H, W), np.uint8)
        if t >= first - 3:  # the object enters near the end of the warm-up
            x0 = (2 * t) % (W - 14)
            fr[10:24, x0:x0 + 14] = (230, 30, 30)
            gt[10:24, x0:x0 + 14] = 255
        gt[0:2, :] = 170  # unknown: ignored
        cv2.imwrite(str(root / "input" / f"in{t:06d}.png"), np.clip(fr, 0, 255).astype(np.uint8))
        cv2.imwrite(str(root / "groundtruth" / f"gt{t:06d}.png"), gt)
    roi = np.full((H, W), 255, np.uint8)
    roi[:, -4:] = 0
    cv2.imwrite(str(root / "ROI.bmp"), roi)
    (root / "temporalROI.txt").write_text(f"{first} {last or n + 50}\n")  # clipped to the frames present
    return root


def test_eval_json_on_a_written_sequence(tmp_path, capsys):
    seq = _write_sequence(tmp_path / "cam1")
    out = tmp_path / "masks"
    rc = cli_main(["eval", str(seq), "--algo", "olkn", "--json", "--out", str(out), "--set", "width=25"])
    assert rc == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["algo"] == "olkn" and rep["params"]["width"] == 25.0
    (row,) = rep["sequences"]
    assert set(row) == {"name", "frames", "processed", "F", "recall", "precision", "specificity", "FPR", "FNR",
                        "PWC", "auc", "fps"}
    assert row["name"] == "cam1" and row["frames"] == 30  # 11..40, clipped to the frames present
    assert row["processed"] == 40 and rep["failed"] == []
    assert row["F"] > 0.8 and row["auc"] > 0.9 and row["fps"] > 0
    assert rep["mean"]["F"] == pytest.approx(row["F"])
    masks = sorted((out / "cam1").glob("bin*.png"))
    assert len(masks) == 40 and masks[0].name == "bin000001.png"
    # the written masks score exactly what eval reported
    s = load_sequence(seq)
    total = None
    for n in range(11, 41):
        m = cv2.imread(str(out / "cam1" / f"bin{n:06d}.png"), cv2.IMREAD_GRAYSCALE)
        gt = s.read_groundtruth(n)
        c = frame_counts(m, gt, s.roi(gt.shape))
        total = c if total is None else total + c
    assert total.metrics()["F"] == pytest.approx(row["F"])


def test_eval_table_and_opencv_peer(tmp_path, capsys):
    root = tmp_path / "data"
    _write_sequence(root / "a", n=25, first=5)
    _write_sequence(root / "b", n=25, first=5)
    assert cli_main(["eval", str(root), "--algo", "knn", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "a " in text and "b " in text and "mean" in text
    header = text.splitlines()[1].split()
    assert header[:3] == ["sequence", "scored", "processed"]
    row_a = next(line.split() for line in text.splitlines() if line.startswith("a "))
    assert row_a[1:3] == ["21", "25"]  # frames 5..25 scored, all 25 processed


def test_eval_scores_every_sequence_it_can_and_reports_the_failed_ones(tmp_path, capsys):
    root = tmp_path / "data"
    _write_sequence(root / "a", n=20, first=5)
    bad = _write_sequence(root / "b", n=20, first=5)
    (bad / "input" / "in000012.png").write_bytes(b"not an image")  # undecodable: skipped and counted
    cv2.imwrite(str(bad / "input" / "in000015.png"), np.zeros((30, 30, 3), np.uint8))  # size change: stops
    _write_sequence(root / "c", n=20, first=5)
    out = tmp_path / "masks"
    rc = cli_main(["eval", str(root), "--algo", "knn", "--json", "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 1 and "Traceback" not in captured.err
    rep = json.loads(captured.out)
    assert [r["name"] for r in rep["sequences"]] == ["a", "c"]
    (failed,) = rep["failed"]
    assert failed["name"] == "b" and "frame 15" in failed["error"] and "30x30" in failed["error"]
    assert "bgsub eval: error: b not scored:" in captured.err
    assert "1 of 3 sequences failed" in captured.err
    assert rep["mean"]["F"] == pytest.approx((rep["sequences"][0]["F"] + rep["sequences"][1]["F"]) / 2)


def test_eval_out_replaces_the_masks_of_an_earlier_run(tmp_path, capsys):
    seq = _write_sequence(tmp_path / "cam", n=12, first=3)
    out = tmp_path / "masks"
    earlier = MaskWriter(out / "cam")
    for n in (1, 13, 500):  # an earlier, longer run's masks
        earlier.write(n, np.full((48, 64), 255, np.uint8))
    assert cli_main(["eval", str(seq), "--algo", "knn", "--out", str(out), "--quiet", "--max-frames", "8"]) == 0
    assert sorted(p.name for p in (out / "cam").iterdir()) == [f"bin{n:06d}.png" for n in range(1, 9)]


def test_eval_errors_are_clear(tmp_path, capsys):
    assert cli_main(["eval", str(tmp_path / "missing"), "--algo", "olkn"]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli_main(["eval", str(tmp_path / "empty")]) == 2
    assert "not a CDnet-layout sequence" in capsys.readouterr().err
    seq = _write_sequence(tmp_path / "s", n=5, first=1)
    assert cli_main(["eval", str(seq), "--algo", "nope"]) == 2
    assert "unknown algorithm" in capsys.readouterr().err
    assert cli_main(["eval", str(seq), "--set", "width=-3"]) == 2
    assert "width must be >=" in capsys.readouterr().err


def test_evaluate_sequence_goes_through_the_pipeline(tmp_path):
    path = _write_sequence(tmp_path / "s", n=12, first=3)

    class AllBackground:
        score_range = (-1.0, 1.0)

        def apply(self, frame):
            return np.zeros(frame.shape[:2], np.uint8)

        def getScoreMap(self):
            return np.full((48, 64), -1.0, np.float32)

    with open_source(path) as source:
        r = evaluate_sequence(source, AllBackground())
    assert r["frames"] == 10 and r["processed"] == 12 and r["error"] is None
    assert r["recall"] == 0.0 and math.isnan(r["precision"]) and r["fps"] > 0


def test_eval_on_real_sbi_sequence(shared_data, capsys):
    seq = shared_data / "bgs" / "sbi" / "IBMtest2"
    if not seq.is_dir():
        pytest.skip("SBI IBMtest2 not present")
    assert cli_main(["eval", str(seq), "--algo", "olkn", "--json", "--max-frames", "45"]) == 0
    row = json.loads(capsys.readouterr().out)["sequences"][0]
    assert row["frames"] == 45 - 19 + 1 and 0.3 < row["F"] <= 1.0 and 0.5 < row["auc"] <= 1.0


def test_bench_json_small_says_it_used_the_synthetic_clip(capsys):
    rc = cli_main(["bench", "--json", "--size", "64x48", "--frames", "5", "--rounds", "1",
                   "--algo", "olkn", "--algo", "knn", "--data", "/nonexistent"])
    assert rc == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["source"].startswith("synthetic clip (CDnet highway not found at /nonexistent")
    (size,) = rep["sizes"]
    assert size["size"] == "64x48"
    algos = {r["algo"]: r for r in size["results"]}
    assert algos["olkn"]["fps"] > 0 and algos["olkn"]["ratio_to_knn"] > 0
    assert len(algos["olkn"]["fps_rounds"]) == 1


def test_bench_text_output_names_the_frames(capsys):
    assert cli_main(["bench", "--size", "32x24", "--frames", "3", "--rounds", "1", "--algo", "knn",
                     "--data", "/nonexistent"]) == 0
    assert "frames: synthetic clip (CDnet highway not found" in capsys.readouterr().out
    assert cli_main(["bench", "--rounds", "0"]) == 2
    assert "bgsub bench: error: --rounds must be >= 1, got 0" in capsys.readouterr().err
    assert cli_main(["bench", "--warmup", "-1"]) == 2
    assert "bgsub bench: error: --warmup must be >= 0, got -1" in capsys.readouterr().err


def test_bench_warms_every_subtractor_up_before_timing(capsys, monkeypatch):
    from bgsub import benchmark as bench

    seen = []
    monkeypatch.setattr(bench, "_time_algo", lambda a, timed, warm: seen.append((len(warm), len(timed))) or 1.0)
    assert bench.DEFAULT_WARMUP == 60  # past olkn's warmup_frames 50
    rep = bench.benchmark(["olkn", "knn"], [(32, 24)], n_frames=3, rounds=1, data="/nonexistent")
    assert rep["warmup"] == 60 and seen == [(60, 3), (60, 3)]
    seen.clear()
    assert cli_main(["bench", "--size", "32x24", "--frames", "3", "--rounds", "1", "--warmup", "0", "--algo", "knn",
                     "--data", "/nonexistent"]) == 0
    assert seen == [(0, 3)] and "0 untimed warm-up frames" in capsys.readouterr().out


def test_bench_times_a_preset_and_refuses_an_unknown_one(capsys):
    assert cli_main(["bench", "--json", "--size", "64x48", "--frames", "4", "--rounds", "1", "--algo", "olkn:fast",
                     "--algo", "knn", "--data", "/nonexistent"]) == 0
    (size,) = json.loads(capsys.readouterr().out)["sizes"]
    assert [r["algo"] for r in size["results"]] == ["olkn:fast", "knn"]
    assert size["results"][0]["fps"] > 0
    assert cli_main(["bench", "--algo", "olkn:nosuch", "--data", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bgsub bench: error: ") and "nosuch" in err and len(err.strip().splitlines()) == 1


def test_eval_roi_scale_and_min_area(tmp_path, capsys):
    seq = _write_sequence(tmp_path / "cam", n=30, first=11)
    roi = np.zeros((48, 64), np.uint8)
    roi[:, 32:] = 255
    cv2.imwrite(str(tmp_path / "roi.png"), roi)
    out = tmp_path / "masks"
    assert cli_main(["eval", str(seq), "--algo", "knn", "--json", "--roi", str(tmp_path / "roi.png"),
                     "--scale", "0.5", "--out", str(out)]) == 0
    row = json.loads(capsys.readouterr().out)["sequences"][0]
    assert row["frames"] == 20 and 0 < row["recall"] < 1  # the square is found only in the right half
    for n in range(1, 31):
        m = cv2.imread(str(out / "cam" / f"bin{n:06d}.png"), cv2.IMREAD_GRAYSCALE)
        assert m.shape == (48, 64) and not m[:, :32].any()
    # no blob reaches 10 000 pixels: nothing is foreground
    assert cli_main(["eval", str(seq), "--algo", "knn", "--json", "--min-area", "10000"]) == 0
    row = json.loads(capsys.readouterr().out)["sequences"][0]
    assert row["recall"] == 0.0
    assert cli_main(["eval", str(seq), "--scale", "1.5"]) == 2
    assert "bgsub eval: error: --scale must be in (0, 1], got 1.5" in capsys.readouterr().err


def test_bench_takes_parameters_and_runs_without_knn(capsys):
    assert cli_main(["bench", "--size", "32x24", "--frames", "3", "--rounds", "1", "--algo", "olkn,score_map=exact",
                     "--algo", "olkn:fast,median=5", "--data", "/nonexistent"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("olkn")]
    assert [r[0] for r in rows] == ["olkn,score_map=exact", "olkn:fast,median=5"]
    assert all(float(r[1]) > 0 and r[2] == "-" for r in rows)  # no KNN in the run: no ratio
    assert cli_main(["bench", "--algo", "olkn,score_map=nope", "--data", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bgsub bench: error: ") and "score_map" in err and len(err.strip().splitlines()) == 1
