"""``learners-bench`` on tiny settings: every subcommand, its JSON, table, plots and errors."""

import json
import shutil
import subprocess

import numpy as np
import pytest

from learners.baselines import KernelPerceptron, Perceptron
from learners.bench import example1
from learners.bench.cli import main
from learners.bench.methods import Method
from learners.bench.protocol import prequential_classification
from learners.datasets import make_example1

PNG = b"\x89PNG\r\n\x1a\n"


def run_json(capsys, argv):
    assert main(argv + ["--json"]) == 0
    out = capsys.readouterr().out
    return json.loads(out)


def test_example1_json_and_plots(capsys, tmp_path):
    res = run_json(capsys, ["example1", "--seeds", "2", "--grid", "20,40", "--n-test", "60",
                            "--thresholds", "0,0.01", "--plots", str(tmp_path)])
    assert set(res) == {"OLK_C", "NORMA", "Perceptron", "KernelPerceptron", "Projectron", "SVM"}
    for name, fig in res.items():
        assert set(fig) == {"test_error", "mistakes", "seconds"}
        assert 0.0 <= fig["test_error"] <= 1.0
        assert 0.0 <= fig["mistakes"] <= 40
        assert fig["seconds"] > 0
        if name != "SVM":
            assert fig["mistakes"] >= 1  # the first point, predicted with f = 0, always counts
    assert (tmp_path / "example1.png").read_bytes()[:8] == PNG


def test_example1_table(capsys):
    assert main(["example1", "--seeds", "2", "--grid", "10,30", "--n-test", "30",
                 "--methods", "Perceptron,Projectron", "--set", "Perceptron.decay=None"]) == 0
    out = capsys.readouterr().out
    assert "Example 1 (classification), 2 seeds, n = 30" in out
    assert "decay=None" in out and "± " in out
    assert "| Projectron" in out and "OLK_C" not in out


def test_example2_json_and_plots(capsys, tmp_path):
    res = run_json(capsys, ["example2", "--seeds", "2", "--grid", "10,30", "--n-test", "50",
                            "--epsilons", "0,0.5", "--plots", str(tmp_path)])
    assert set(res) == {"OLK_R", "NORMA", "KernelPerceptron", "KRLS", "LS-SVM"}
    for fig in res.values():
        assert set(fig) == {"rmse", "seconds"}
        assert 0.0 < fig["rmse"] < 5.0 and fig["seconds"] > 0
    assert (tmp_path / "example2.png").read_bytes()[:8] == PNG


def test_example2_epsilon_controls_sparsity(capsys):
    assert main(["example2", "--seeds", "1", "--grid", "60", "--n-test", "20", "--methods", "OLK_R",
                 "--epsilons", "0,1.5"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| 0 ") or line.startswith("| 1.5 ")]
    # epsilon = 0 keeps a term for every point; beyond |f| + max noise none is added
    assert rows[0].split("|")[2].strip().startswith("60")
    assert rows[1].split("|")[2].strip().startswith("0")


def test_example3_json_and_plot(capsys, tmp_path):
    res = run_json(capsys, ["example3", "--seeds", "3", "--plots", str(tmp_path), "--methods", "OLK_N,NORMA,SVM"])
    assert set(res) == {"OLK_N", "NORMA", "SVM"}
    for fig in res.values():
        assert set(fig) == {"auc", "seconds"}
        assert 0.0 <= fig["auc"] <= 1.0
    assert (tmp_path / "example3.png").read_bytes()[:8] == PNG


def test_unavailable_method_is_reported_not_fatal(capsys, monkeypatch):
    original = example1.methods

    def methods():
        return [m for m in original() if m.name == "Perceptron"] + [Method("Ghost", "learners.no_such_module:Ghost")]

    monkeypatch.setattr(example1, "methods", methods)
    assert main(["example1", "--seeds", "1", "--grid", "10", "--n-test", "10", "--json"]) == 0
    cap = capsys.readouterr()
    assert set(json.loads(cap.out)) == {"Perceptron"}
    assert "Ghost unavailable" in cap.err and "Ghost: not run" in cap.err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["example1", "--seeds", "0"], "--seeds must be >= 1, got 0"),
        (["example1", "--grid", "10,abc"], "comma-separated integers"),
        (["example1", "--grid", "0,10"], "positive integers"),
        (["example2", "--set", "KRLS.nu"], "METHOD.param=value"),
        (["example2", "--set", "Nope.x=1"], "unknown method 'Nope'"),
        (["example3", "--methods", "OLK_C"], "unknown method"),
        (["example3", "--set", "OLK_N.bogus=1"], "OLK_N: bad parameters"),
        (["example1", "--thresholds", "-1"], "--thresholds must be >= 0"),
    ],
)
def test_bad_options(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_plot_folder_that_cannot_be_created(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["example3", "--seeds", "1", "--plots", str(blocker / "sub")]) == 2
    assert "cannot create the plot folder" in capsys.readouterr().err


def test_prequential_mistakes_match_the_learner_count():
    X, y, Xt, yt = make_example1(120, 30, random_state=5)
    for est in (Perceptron(), KernelPerceptron(width=1.2)):
        res = prequential_classification(est, X, y, [60, 120], Xt, yt)
        assert res["mistakes"][-1] == est.n_mistakes_
        assert res["test_error"][-1] == pytest.approx(np.mean(est.predict(Xt) != yt))


@pytest.mark.skipif(shutil.which("learners-bench") is None, reason="console script not installed")
def test_console_script():
    proc = subprocess.run(["learners-bench", "example3", "--seeds", "1", "--json"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) == {"OLK_N", "NORMA"}  # the one-class SVM is opt-in
