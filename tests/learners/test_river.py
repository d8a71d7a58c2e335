"""learners.river: our estimators inside river's pipelines and progressive validation; the streams benchmark."""

from __future__ import annotations

import json

import numpy as np
import pytest

river = pytest.importorskip("river", reason="river is an optional extra: pip install 'olk-bgsub[river]'")

from river import compose, datasets, evaluate, metrics, preprocessing  # noqa: E402
from river.checks import check_estimator  # noqa: E402

import learners  # noqa: E402
from learners import (  # noqa: E402
    KRLS,
    LSSVM,
    KernelPerceptron,
    KernelRuleClassifier,
    NORMAClassifier,
    OLKClassifier,
    OLKOneClass,
    OLKRegressor,
    OnlineGaussianMixture,
    Perceptron,
    SVMDClassifier,
    WeightedMajority,
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


#: What to_river refuses: batch-only LSSVM and the mixtures (neither classifier, regressor nor detector).
REFUSED = {"LSSVM", "OnlineGaussianMixture", "OnlineBernoulliMixture"}
#: Classifiers without learn_one: every row goes through scikit-learn's input checks in partial_fit and
#: predict (a few ms a row), and river's memory check alone feeds 4000 rows.
ONE_ROW_BATCHES = {"Perceptron", "KernelPerceptron", "Projectron", "BudgetOnlineSVM", "WeightedMajority"}
ACCEPTED = [pytest.param(name, marks=pytest.mark.slow) if name in ONE_ROW_BATCHES else name
            for name in learners.__all__ if name not in REFUSED]


class _CreditCardStandIn:
    """Offline stand-in for river's ``datasets.CreditCard`` (a download river's anomaly checks read):
    30 features, about 2 % anomalies drawn from a wider distribution, label 1."""

    def take(self, n):
        rng = np.random.default_rng(0)
        for _ in range(n):
            anomaly = rng.random() < 0.02
            v = rng.normal(size=30) * (4.0 if anomaly else 1.0)
            yield {f"V{i}": float(v[i]) for i in range(30)}, int(anomaly)


@pytest.mark.parametrize("name", ACCEPTED)
def test_rivers_own_checks_pass(name, monkeypatch):
    """river.checks.check_estimator on every estimator to_river accepts, skipping only the three
    emerging/disappearing-feature checks that river's own scikit-learn adapter skips."""
    monkeypatch.setattr(datasets, "CreditCard", _CreditCardStandIn)
    model = to_river(getattr(learners, name)())
    assert model._unit_test_skips() == {"check_emerging_features", "check_disappearing_features",
                                        "check_radically_disappearing_features"}
    check_estimator(model)


def test_multiclass_flag_follows_what_the_estimator_learns():
    assert to_river(OLKClassifier())._multiclass and to_river(NORMAClassifier())._multiclass
    assert not to_river(NORMAClassifier(loss="nu"))._multiclass  # nu-classification is binary
    assert not to_river(KernelRuleClassifier())._multiclass and not to_river(Perceptron())._multiclass
    assert not to_river(OLKClassifier(), classes=["a", "b"])._multiclass
    assert not to_river(SVMDClassifier())._multiclass  # fixes its labels first: binary unless told more
    assert to_river(SVMDClassifier(), classes=[0, 1, 2])._multiclass


@pytest.mark.parametrize("est", [KernelRuleClassifier(), SVMDClassifier(), Perceptron(), KernelPerceptron(),
                                 WeightedMajority(randomized=False)], ids=lambda e: type(e).__name__)
def test_binary_classifiers_give_both_labels_from_the_first_row(est):
    clf = to_river(est)
    assert clf.predict_proba_one({"a": 0.2, "b": 0.7}) == {False: 0.5, True: 0.5}
    assert clf.predict_one({"a": 0.2, "b": 0.7}) is False
    clf.learn_one({"a": 0.9, "b": 0.8}, True)
    proba = clf.predict_proba_one({"a": 0.9, "b": 0.8})
    assert set(proba) == {False, True} and sum(proba.values()) == pytest.approx(1.0)
    clf.learn_one({"a": 0.1, "b": 0.0}, False)
    assert set(clf.predict_proba_one({"a": 0.1, "b": 0.0})) == {False, True}


def test_labels_other_than_booleans_need_classes_where_the_estimator_fixes_them():
    with pytest.raises(ValueError, match=r"fixes its labels on the first row.*classes=\[\.\.\.\]"):
        to_river(Perceptron()).learn_one({"a": 1.0}, "spam")
    clf = to_river(Perceptron(), classes=["ham", "spam"])
    assert clf.predict_proba_one({"a": 1.0}) == {"ham": 0.5, "spam": 0.5}
    clf.learn_one({"a": 1.0}, "spam")
    assert set(clf.predict_proba_one({"a": 1.0})) == {"ham", "spam"}
    # a binary classifier that takes labels as they come: the labels it has seen, no False/True added
    rule = to_river(KernelRuleClassifier())
    rule.learn_one({"a": 1.0}, "spam")
    assert rule.predict_proba_one({"a": 1.0}) == {"spam": 1.0}
    rule.learn_one({"a": -1.0}, "ham")
    assert set(rule.predict_proba_one({"a": 1.0})) == {"ham", "spam"}
    # estimators that take labels as they come need no classes; river's multiclass convention
    multi = to_river(OLKClassifier())
    for label, a in (("x", 0.0), ("y", 3.0), ("z", 6.0)):
        multi.learn_one({"a": a}, label)
    assert set(multi.predict_proba_one({"a": 3.0})) == {"x", "y", "z"}
    assert multi.predict_one({"a": 6.1}) == "z"


def test_refuses_what_cannot_learn_one_row_at_a_time():
    with pytest.raises(TypeError, match="LSSVM learns from a whole batch at once.*neither learn_one nor partial_fit"):
        to_river(LSSVM())
    with pytest.raises(TypeError, match="LSSVM learns from a whole batch"):
        RiverRegressor(LSSVM())
    with pytest.raises(TypeError, match="to_river takes a classifier, regressor or novelty detector"):
        to_river(OnlineGaussianMixture())
    assert isinstance(to_river(KRLS()), RiverRegressor)


def test_weighted_majority_learns_through_river():
    """Rows are the experts' votes; expert "b" is always right, so its weight grows."""
    rng = np.random.default_rng(0)
    clf = to_river(WeightedMajority(eta=1.0, randomized=False))
    for _ in range(40):
        truth = bool(rng.random() > 0.5)
        clf.learn_one({"a": float(rng.random() > 0.5), "b": float(truth), "c": 0.5}, truth)
    wm = clf.model_
    assert wm.n_rounds_ == 40 and wm.n_features_in_ == 3 and wm.weights_.argmax() == 1
    assert clf.predict_one({"a": 0.0, "b": 1.0, "c": 0.5}) is True
    assert clf.predict_proba_one({"a": 1.0, "b": 0.0, "c": 0.5})[False] > 0.9


def test_adapters_predict_rivers_defaults_before_learning_and_clone_fresh():
    clf = to_river(OLKClassifier())
    assert isinstance(clf, RiverClassifier)
    # a multiclass classifier knows no label before the first row
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
