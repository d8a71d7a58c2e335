"""SVMDClassifier and SVMDOneClass: the transcription through the estimator API, conventions, errors."""

from __future__ import annotations

import numpy as np
import pytest
import sklearn
from sklearn.base import clone

from learners import SVMDClassifier, SVMDOneClass
from learners.taxonomy import Taxonomy
from tests.learners._svmd_reference import SVMDReference


def _blobs(n=200, K=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, size=n)
    centres = np.array([[np.cos(2 * np.pi * k / K), np.sin(2 * np.pi * k / K)] for k in range(K)]) * 2.0
    return centres[y] + 0.4 * rng.normal(size=(n, 2)), y


def _feed(est, X, y, sizes=(1, 7, 50)):
    i = k = 0
    classes = np.unique(y) if y is not None else None
    while i < X.shape[0]:
        j = min(X.shape[0], i + sizes[k % len(sizes)])
        if y is None:
            est.partial_fit(X[i:j])
        else:
            est.partial_fit(X[i:j], y[i:j], classes=classes)
        i, k = j, k + 1
    return est


@pytest.mark.parametrize("loss,K", [("hinge", 2), ("hinge", 3), ("logistic", 2), ("logistic", 3)])
def test_classifier_stream_in_batches_equals_transcription(loss, K):
    X, y = _blobs(150, K)
    labels = np.array(["a", "b", "c"])[:K][y]
    est = _feed(SVMDClassifier(loss=loss, width=1.2, eta0=0.5, mu=0.3, decay=0.9, lam=0.02, fit_intercept=True,
                               budget=None, store_eta_trace=True), X, labels)
    ref_loss = {("hinge", 2): "binary", ("hinge", 3): "multiclass", ("logistic", 2): "logistic",
                ("logistic", 3): "multiclass_logistic"}[(loss, K)]
    ref = SVMDReference(ref_loss, n_outputs=1 if K == 2 else K, width=1.2, eta0=0.5, c=0.02, mu=0.3, decay=0.9,
                        use_offset=True)
    etas = []
    for xi, yi in zip(X, y):
        ref.step(xi, (1.0 if yi == 1 else -1.0) if K == 2 else int(yi))
        etas.append(ref.eta)
    assert np.allclose(est.eta_trace_, etas, rtol=1e-9, atol=1e-12)
    assert est.eta_ == pytest.approx(etas[-1], rel=1e-9)
    d = est.decision_function(X[:5])
    want = np.array([[f for f in ref._values(ref.alphas, list(x))] for x in X[:5]]) + np.array(ref.b)
    assert np.allclose(d, want[:, 0] if K == 2 else want, atol=1e-9)
    assert est.n_steps_ == 150 and est.eta_trace_.shape == (150,)


def test_decision_function_is_f_and_f_minus_one_without_nu_and_offset():
    X, y = _blobs(80, 2)
    clf = SVMDClassifier(fit_intercept=False, budget=None).fit(X, y)
    f = (clf._raw_values(X[:4]))[:, 0]
    assert np.allclose(clf.decision_function(X[:4]), f)
    assert clf.offset_ == 0.0 and clf.margin_ == 1.0
    occ = SVMDOneClass(budget=None).fit(X)
    assert np.allclose(occ.decision_function(X[:4]), occ.score_samples(X[:4]) - 1.0)


def test_one_class_nu_margin_learnt_and_fraction_of_novelties_near_nu():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 2))
    occ = SVMDOneClass(width=1.5, nu=0.1, mu=0.05, decay=0.99, lam=0.01).fit(X)
    frac = np.mean(occ.predict(X[-1000:]) == -1)
    assert occ.margin_ != 1.0
    assert 0.02 < frac < 0.3
    assert occ.predict([[8.0, 8.0]])[0] == -1


def test_multiclass_predicts_blobs_and_decay_schedule_is_eq59():
    X, y = _blobs(600, 4)
    clf = SVMDClassifier(width=1.0).fit(X[:500], y[:500])
    assert np.mean(clf.predict(X[500:]) == y[500:]) > 0.9
    assert clf.decision_function(X[:3]).shape == (3, 4) and clf.dual_coef_.shape[1] == 4
    ctl = SVMDClassifier(eta0=0.5, tau=20.0, store_eta_trace=True).fit(X[:50], y[:50])
    assert np.allclose(ctl.eta_trace_, 0.5 * 20.0 / (20.0 + np.arange(1, 51)))


def test_graph_loss_uses_the_taxonomy_distance_and_kernel():
    tax = {"root": None, "odd": "root", "even": "root", 0: "even", 2: "even", 1: "odd", 3: "odd"}
    tree = Taxonomy(tax)
    assert tree.distance_matrix([0, 2, 1]).tolist() == [[0.0, 1.0, 2.0], [1.0, 0.0, 2.0], [2.0, 2.0, 0.0]]
    assert tree.label_kernel([0, 2, 1]).tolist() == [[3.0, 2.0, 1.0], [2.0, 3.0, 1.0], [1.0, 1.0, 3.0]]
    X, y = _blobs(400, 4)
    clf = SVMDClassifier(loss="graph", taxonomy=tax).fit(X[:300], y[:300])
    assert np.mean(clf.predict(X[300:]) == y[300:]) > 0.85
    with pytest.raises(ValueError, match="not nodes of the taxonomy"):
        SVMDClassifier(loss="graph", taxonomy={0: None, 1: 0}).fit(X, y)
    with pytest.raises(ValueError, match="cycle"):
        Taxonomy({0: 1, 1: 0}).ancestors(0)


def test_budget_bounds_the_expansion_and_clone_restarts():
    X, y = _blobs(300, 3)
    clf = SVMDClassifier(budget=16, loss="logistic").fit(X, y)
    assert clf.n_support_ == 16 and clf.support_vectors_.shape == (16, 2)
    assert np.allclose(clf.support_vectors_[-1], X[-1])  # logistic adds every row: the newest is last
    assert not hasattr(clone(clf), "eta_")


@pytest.mark.parametrize("kwargs,match", [
    ({"eta0": 0}, "eta0 must be > 0, got 0"),
    ({"decay": 1.5}, r"decay must be in \[0, 1\], got 1.5"),
    ({"nu": 1.0}, r"nu must be in \(0, 1\), got 1"),
    ({"loss": "logistic", "nu": 0.1}, "works with loss='hinge' only"),
    ({"loss": "graph"}, "needs taxonomy="),
    ({"width": -1}, "width must be > 0, got -1"),
])
def test_bad_parameters_say_what_was_wrong(kwargs, match):
    X, y = _blobs(10, 2)
    with pytest.raises(ValueError, match=match):
        SVMDClassifier(**kwargs).fit(X, y)


@pytest.mark.skipif(tuple(int(p) for p in sklearn.__version__.split(".")[:2]) < (1, 6),
                    reason="check_estimator(on_fail=None) needs scikit-learn >= 1.6")
@pytest.mark.parametrize("est", [SVMDClassifier(), SVMDClassifier(loss="logistic"), SVMDClassifier(nu=0.1),
                                 SVMDOneClass(), SVMDOneClass(nu=0.2)], ids=repr)
def test_check_estimator(est):
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(est, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed


@pytest.mark.parametrize("kernel,loss", [("polynomial", "hinge"), ("gaussian", "logistic")])
def test_blocked_learning_on_many_features_equals_the_row_by_row_stream(kernel, loss):
    from learners import svmd_steps as S
    from learners.kernels import KERNELS

    rng = np.random.default_rng(4)
    X = rng.uniform(size=(600, 20)) / 4.0
    y = (X[:, 0] + X[:, 1] > X[:, 2] + 0.25).astype(int) + (X[:, 3] > 0.125)
    est = SVMDClassifier(kernel=kernel, loss=loss, degree=3, width=1.0, budget=64, store_eta_trace=True).fit(X, y)
    K = 3
    sv, alpha, beta = np.zeros((64, 20)), np.zeros((64, K)), np.zeros((64, K))
    ring, state, offset = np.zeros(2, dtype=np.int64), S.new_state(1.0), S.new_offset(K, 1.0)
    params = S.make_params(0.01, 0.1, 0.95, use_offset=True)
    eta_out = np.empty(600)
    code = S.MULTICLASS_HINGE if loss == "hinge" else S.MULTICLASS_LOGISTIC
    S.svmd_fit_stream(code, X, y.astype(float), np.zeros((K, K)), (sv, alpha, beta, ring, state, offset), np.eye(K),
                      params, KERNELS[kernel], 1.0, 3.0, 1.0, np.empty((600, K)), eta_out, np.empty(600))
    assert ring[1] == 64 and est.n_support_ == 64
    assert np.allclose(est.eta_trace_, eta_out, rtol=1e-9)
    assert np.allclose(est.dual_coef_, alpha[(ring[0] + np.arange(64)) % 64], rtol=1e-7, atol=1e-10)


def test_one_class_single_rows_as_in_river():
    X, _ = _blobs(60, 2)
    occ = SVMDOneClass(nu=0.1, budget=None).fit(X[:50])
    assert occ.score_one(X[50]) == pytest.approx(occ.decision_function(X[50:51])[0], rel=1e-12)
    assert occ.predict_one(X[51]) == occ.predict(X[51:52])[0]
    before = occ.n_steps_
    scores = occ.partial_fit(X[52:55], return_scores=True)
    assert scores.shape == (3,) and occ.n_steps_ == before + 3
    occ.learn_one(X[55])
    assert occ.n_steps_ == before + 4


def test_save_and_load_continue_the_same_stream(tmp_path):
    X, y = _blobs(120, 3)
    est = SVMDClassifier(budget=32).fit(X[:100], y[:100])
    back = SVMDClassifier.load(est.save(tmp_path / "svmd.npz"))
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    est.partial_fit(X[100:], y[100:])
    back.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    assert back.eta_ == est.eta_


@pytest.mark.parametrize("budget", [None, 25])
def test_norma_with_step_decay_is_the_papers_control(budget):
    """Binary hinge, fixed margin 1, no offset: SVMD with ``tau`` is NORMA with ``learning_rate="decay"``."""
    from learners import NORMAClassifier

    X, y = _blobs(200, 2, seed=3)
    svmd = SVMDClassifier(width=1.3, eta0=0.7, lam=0.05, tau=10.0, fit_intercept=False, budget=budget,
                          store_eta_trace=True).fit(X, y)
    norma = NORMAClassifier(width=1.3, eta=0.7, lam=0.05, learning_rate="decay", tau=10.0, margin=1.0,
                            fit_intercept=False, budget=budget).fit(X, y)
    assert np.allclose(svmd.eta_trace_, 0.7 * 10.0 / (10.0 + np.arange(1, 201)), rtol=1e-12)
    assert svmd.n_support_ == norma.n_support_
    np.testing.assert_allclose(svmd.decision_function(X), norma.decision_function(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("K", [2, 3])
def test_classifier_single_rows_follow_the_batch_stream(K):
    X, y = _blobs(90, K, seed=1)
    labels = np.array(["a", "b", "c"])[:K][y]
    batch = SVMDClassifier(loss="logistic", width=1.1, budget=40)
    scores = batch.partial_fit(X, labels, classes=["a", "b", "c"][:K], return_scores=True)
    one = SVMDClassifier(loss="logistic", width=1.1, budget=40)
    for i, (x, label) in enumerate(zip(X, labels)):
        row = {"u": x[0], "v": x[1]}
        s = one.learn_one(row, label, classes=["a", "b", "c"][:K] if i == 0 else None, return_score=True)
        assert np.allclose(s, scores[i], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(one.decision_function(X), batch.decision_function(X), rtol=1e-12, atol=1e-14)
    row = {"v": X[5, 1], "u": X[5, 0]}
    assert np.allclose(one.score_one(row), batch.decision_function(X[5:6])[0], rtol=1e-12)
    assert one.predict_one(row) == batch.predict(X[5:6])[0] and isinstance(one.predict_one(row), str)
    proba = one.predict_proba_one(row)
    assert list(proba) == ["a", "b", "c"][:K]
    assert np.allclose(list(proba.values()), batch.predict_proba(X[5:6])[0], rtol=1e-12)


def test_classifier_single_row_needs_the_labels_first():
    with pytest.raises(ValueError, match=r"pass classes=\[...\] to the first learn_one"):
        SVMDClassifier().learn_one([0.0, 1.0], 1)
    clf = SVMDClassifier().learn_one([0.0, 1.0], 1, classes=[0, 1])
    with pytest.raises(ValueError, match=r"labels \[7\] that are not among the classes \[0, 1\]"):
        clf.learn_one([0.0, 1.0], 7)
    with pytest.raises(sklearn.exceptions.NotFittedError):
        SVMDClassifier().predict_one([0.0, 1.0])


@pytest.mark.parametrize("K", [2, 4])
def test_logistic_predict_proba_is_the_models_own(K):
    X, y = _blobs(150, K, seed=2)
    clf = SVMDClassifier(loss="logistic", width=1.0).fit(X, y)
    f = clf.decision_function(X[:10])
    p = clf.predict_proba(X[:10])
    assert p.shape == (10, K) and np.allclose(p.sum(axis=1), 1.0)
    if K == 2:
        want = 1.0 / (1.0 + np.exp(-f))
        assert np.allclose(p[:, 1], want, rtol=1e-12)
    else:
        e = np.exp(f - f.max(axis=1, keepdims=True))
        assert np.allclose(p, e / e.sum(axis=1, keepdims=True), rtol=1e-12)
    assert np.array_equal(clf.classes_[p.argmax(axis=1)], clf.predict(X[:10]))
    hinge = SVMDClassifier(loss="hinge").fit(X, y)
    assert not hasattr(hinge, "predict_proba") and not hasattr(hinge, "predict_proba_one")


def test_classifier_with_a_taxonomy_saves_it_as_json(tmp_path):
    from learners._persist import read_checkpoint

    tax = {"root": None, "odd": "root", "even": "root", 0: "even", 2: "even", 1: "odd", 3: "odd"}
    X, y = _blobs(120, 4)
    est = SVMDClassifier(loss="graph", taxonomy=tax, budget=50).fit(X[:100], y[:100])
    path = est.save(tmp_path / "graph.npz")
    meta, _ = read_checkpoint(path)  # np.load(allow_pickle=False): no object arrays
    assert meta["params"]["taxonomy"] == {"dict_items": [[k, v] for k, v in tax.items()]}
    back = SVMDClassifier.load(path)
    assert back.taxonomy == tax and all(type(k) is type(j) for k, j in zip(back.taxonomy, tax))
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    est.partial_fit(X[100:], y[100:])
    back.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_svmd_classifier_in_river_with_its_labels_given():
    pytest.importorskip("river")
    from learners.river import to_river

    X, y = _blobs(60, 3, seed=4)
    model = to_river(SVMDClassifier(loss="logistic", width=1.0), classes=[0, 1, 2])
    rows = [{"a": a, "b": b} for a, b in X]
    for row, label in zip(rows, y):
        model.learn_one(row, int(label))
    batch = SVMDClassifier(loss="logistic", width=1.0).partial_fit(X, y, classes=[0, 1, 2])
    assert model.predict_one(rows[3]) == batch.predict(X[3:4])[0]
    assert np.allclose(list(model.predict_proba_one(rows[3]).values()), batch.predict_proba(X[3:4])[0], rtol=1e-12)
