"""learners.river: our estimators inside river's pipelines and progressive validation; the streams benchmark."""

from __future__ import annotations

import json

import numpy as np
import pytest

river = pytest.importorskip("river", reason="river is an optional extra: pip install 'olk-bgsub[river]'")

from river import compose, datasets, evaluate, metrics, preprocessing  # noqa: E402

from learners import (  # noqa: E402
    KernelPerceptron,
    NORMAClassifier,
    OLKClassifier,
    OLKOneClass,
    OLKRegressor,
)
from learners.bench import cli  # noqa: E402
from learners.river import RiverAnomalyDetector, RiverClassifier, RiverRegressor, to_river  # noqa: E402


def test_progressive_val_score_on_phishing_beats_the_majority_class():
    stream = list(datasets.Phishing())[:400]
    majority = max(np.mean([y for _, y in stream]), 1 - np.mean([y for _, y in stream]))
    for est in (OLKClassifier(), NORMAClassifier()):
        model = preprocessing.StandardScaler() | to_river(est)
        acc = evaluate.progressive_val_score(stream, model, metrics.Accuracy())
        assert acc.get() > majority + 0.15, (type(est).__name__, acc.get())
        assert not hasattr(est, "classes_")  # the wrapped estimator stays untouched; model_ learns
        loss = evaluate.progressive_val_score(stream, model.clone(), metrics.LogLoss())
        assert loss.get() < 0.6


def test_adapters_predict_rivers_defaults_before_learning_and_clone_fresh():
    clf = to_river(OLKClassifier())
    assert isinstance(clf, RiverClassifier)
    assert clf.predict_one({"a": 1.0}) is None and clf.predict_proba_one({"a": 1.0}) == {}
    clf.learn_one({"a": 1.0}, True)
    clf.learn_one({"a": -1.0}, False)
    assert clf.predict_one({"a": 0.9}) is True
    assert set(clf.predict_proba_one({"a": 0.9})) == {False, True}
    fresh = clf.clone()
    assert fresh.predict_one({"a": 1.0}) is None
    reg = to_river(OLKRegressor())
    assert isinstance(reg, RiverRegressor) and reg.predict_one({"a": 1.0}) == 0.0
    det = to_river(OLKOneClass())
    assert isinstance(det, RiverAnomalyDetector) and det.score_one({"a": 1.0}) == 0.0
    with pytest.raises(TypeError, match="to_river takes"):
        to_river(preprocessing.StandardScaler())


def test_regressor_and_anomaly_detector_in_pipelines():
    rng = np.random.default_rng(0)
    rows = [{"u": float(u), "v": float(v)} for u, v in rng.normal(size=(300, 2))]
    targets = [np.sin(2 * r["u"]) + 0.5 * r["v"] for r in rows]
    model = preprocessing.StandardScaler() | to_river(OLKRegressor())
    mae = evaluate.progressive_val_score(list(zip(rows, targets)), model, metrics.MAE())
    assert mae.get() < 0.5 * np.mean(np.abs(np.array(targets) - np.mean(targets)))
    det = to_river(OLKOneClass(width=1.0))
    for r in rows:
        det.learn_one(r)
    assert det.score_one({"u": 6.0, "v": 6.0}) > det.score_one({"u": 0.0, "v": 0.0})


def test_baselines_run_through_partial_fit_with_classes():
    stream = list(datasets.Phishing())[:150]
    model = compose.Pipeline(preprocessing.StandardScaler(), to_river(KernelPerceptron(), classes=[False, True]))
    acc = evaluate.progressive_val_score(stream, model, metrics.Accuracy())
    assert acc.get() > 0.7


def test_streams_benchmark_cli_prints_json(capsys):
    assert cli.main(["streams", "--streams", "iris", "--models", "OLK,river.KNN", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    iris = out["iris"]
    assert iris["rows"] == 150 and iris["classes"] == 3
    assert set(iris["models"]) == {"OLK", "river.KNN"}
    assert iris["models"]["OLK"]["accuracy"] > iris["majority"] + 0.3
    assert cli.main(["streams", "--models", "nope"]) == 2
    assert "unknown models" in capsys.readouterr().err
