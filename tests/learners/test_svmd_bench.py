"""``learners-bench svmd-*`` on small slices: JSON shapes, plots, the counting sequence, missing data."""

import json
from pathlib import Path

import numpy as np
import pytest

from learners.bench import svmd
from learners.bench.cli import main

PNG = b"\x89PNG\r\n\x1a\n"
DATA = Path(__import__("os").environ.get("OLK_DATA_DIR", "../shared/data")) / "learn"
needs_usps = pytest.mark.skipif(not (DATA / "usps.h5").is_file(), reason=f"{DATA / 'usps.h5'} not found")
needs_mnist = pytest.mark.skipif(not (DATA / "mnist.npz").is_file(), reason=f"{DATA / 'mnist.npz'} not found")


def _json(capsys, argv):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_counting_sequence_is_a_three_digit_counter_run_twice():
    y = np.repeat(np.arange(10), 600)
    X = np.arange(6000, dtype=float)[:, None]
    Xs, ys = svmd.counting_sequence(X, y)
    assert "".join(map(str, ys[:12])) == "000001002003"
    assert "".join(map(str, ys[2997:3003])) == "999000"
    assert np.all(np.bincount(ys) == 600) and len(np.unique(Xs)) == 6000
    with pytest.raises(ValueError, match="only 5 samples of digit 0"):
        svmd.counting_sequence(X[:5], np.zeros(5, int))


@needs_usps
@pytest.mark.parametrize("command", ["svmd-usps-binary", "svmd-usps-multiclass", "svmd-counting", "svmd-novelty"])
def test_usps_commands_json(capsys, tmp_path, command):
    res = _json(capsys, [command, "--limit", "150", "--plots", str(tmp_path)])
    assert set(res) == {"SVMD", "SVMD_lambda0", "NORMA"}
    for fig in res.values():
        assert 0.0 <= fig["average_error"] <= 1.0 and fig["final_eta"] > 0
    assert (tmp_path / f"{command}.png").read_bytes()[:8] == PNG


@needs_usps
def test_taxonomy_command_reports_delta_loss(capsys):
    res = _json(capsys, ["svmd-taxonomy", "--limit", "120"])
    assert set(res) == {"SVMD_graph", "SVMD_multiclass"}
    assert all(r["average_delta_loss"] >= 0 for r in res.values())


@needs_mnist
def test_mnist_command_json(capsys):
    res = _json(capsys, ["svmd-mnist", "--limit", "120", "--buffers", "16,32"])
    assert set(res) == {"buffer_16", "buffer_32"}
    assert set(res["buffer_16"]) == {"average_error", "last_4500_error", "final_eta", "seconds"}


def test_missing_data_is_skipped_with_the_reason(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("OLK_DATA_DIR", str(tmp_path))
    res = _json(capsys, ["svmd-usps-binary"])
    assert "usps.h5 not found" in res["skipped"]


def test_bad_options_exit_2(capsys):
    assert main(["svmd-mnist", "--buffers", "0"]) == 2
    assert main(["svmd-counting", "--limit", "-1"]) == 2
    assert "--limit must be >= 0" in capsys.readouterr().err


@needs_usps
def test_set_overrides_every_method(capsys):
    res = _json(capsys, ["svmd-usps-multiclass", "--limit", "60", "--set", "mu=0"])
    assert res["SVMD"]["final_eta"] == pytest.approx(0.1)  # mu = 0: eta stays eta0
    assert main(["svmd-usps-binary", "--set", "lam"]) == 2


def test_missing_h5py_is_a_one_line_error(capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "h5py":
            raise ImportError("No module named 'h5py'", name="h5py")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    if not (DATA / "usps.h5").is_file():
        pytest.skip(f"{DATA / 'usps.h5'} not found")
    assert main(["svmd-usps-binary", "--limit", "10"]) == 2
    assert "h5py is needed: pip install" in capsys.readouterr().err
