"""The lecture's online learners (seed 002) against plain transcriptions, and their guarantees."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from learners import online_em
from learners.bench.lecture import mixture_sample
from learners.hedge import hedge_eta, hedge_regret_bound
from learners.kernel_rule import KernelRuleClassifier
from learners.kernels import EMPTY_LUT, KERNELS, gram, kernel_value, self_kernel
from learners.mixture import OnlineBernoulliMixture, OnlineGaussianMixture
from learners.weighted_majority import WeightedMajority
from tests.learners import _reference_lecture as ref

RNG = np.random.default_rng(0)


# ---------------------------------------------------------------- kernels
@pytest.mark.parametrize("name", ["cauchy", "epanechnikov"])
@pytest.mark.parametrize("dim", [1, 3])
def test_new_kernels_match_formula_everywhere(name, dim):
    X = RNG.normal(size=(6, dim))
    Y = RNG.normal(size=(5, dim))
    width = 1.3
    want = np.array([[ref.kernel(name, x, y, width) for y in Y] for x in X])
    got = np.array([[kernel_value(KERNELS[name], x, y, width, 3.0, 1.0, EMPTY_LUT) for y in Y] for x in X])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gram(X, Y, kernel=name, width=width), want, rtol=1e-12, atol=1e-15)
    assert self_kernel(KERNELS[name], X[0], width, 3.0, 1.0, EMPTY_LUT) == 1.0
    assert (want > 0).any()


def test_existing_kernel_ids_are_stable():
    assert [KERNELS[k] for k in ("gaussian", "laplacian", "polynomial", "linear")] == [0, 1, 2, 3]
    assert KERNELS["cauchy"] == 5 and KERNELS["epanechnikov"] == 6


@pytest.mark.parametrize("name", ["cauchy", "epanechnikov"])
def test_every_kernel_estimator_accepts_the_new_kernels(name):
    from learners import KernelPerceptron, NORMAClassifier, OLKClassifier

    X = RNG.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    for est in (OLKClassifier(kernel=name, width=1.0), NORMAClassifier(kernel=name, width=1.0),
                KernelPerceptron(kernel=name, width=1.0)):
        assert est.fit(X, y).score(X, y) > 0.7, type(est).__name__


# ---------------------------------------------------------------- weighted majority
def test_hedge_matches_the_transcription():
    Y = RNG.random((40, 5))
    t = (RNG.random(40) > 0.4).astype(float)
    eta = 0.7
    wm = WeightedMajority("precomputed", eta=eta).partial_fit(Y[:13], t[:13]).partial_fit(Y[13:], t[13:])
    p, w, costs = ref.weighted_majority(Y.tolist(), t.tolist(), eta)
    np.testing.assert_allclose(wm.weights_, w, rtol=1e-12)
    np.testing.assert_allclose(wm.expert_losses_, costs, rtol=1e-12)
    np.testing.assert_allclose(wm.forecasts_, p[13:], rtol=1e-12)
    assert wm.cumulative_loss_ == pytest.approx(sum(abs(a - b) for a, b in zip(p, t)), rel=1e-12)
    assert wm.regret_ == pytest.approx(wm.cumulative_loss_ - min(costs), rel=1e-12)


@pytest.mark.parametrize("M", [2, 16])
def test_regret_bound_holds_against_an_adaptive_adversary(M):
    """The outcome is always the one the forecaster thinks less likely; experts switch quality mid-way."""
    N = 1500
    rng = np.random.default_rng(M)
    Y = (rng.random((N, M)) > 0.5).astype(float)
    wm = WeightedMajority("precomputed", eta=hedge_eta(N, M))
    w = np.full(M, 1.0 / M)
    t = np.empty(N)
    for n in range(N):
        t[n] = 0.0 if Y[n] @ w >= 0.5 else 1.0
        if n < N // 2:
            Y[n, 0] = t[n]  # expert 0 is right in the first half ...
        else:
            Y[n, M - 1] = t[n]  # ... expert M-1 in the second
        wm.partial_fit(Y[n:n + 1], t[n:n + 1])
        w = wm.weights_
    bound = hedge_regret_bound(N, M)
    assert wm.cumulative_loss_ > N / 4  # the adversary keeps the forecaster busy
    assert wm.regret_ <= bound
    assert wm.regret_ <= 2 * math.sqrt(N * math.log(M))  # the lecture's form of the bound
    assert wm.regret_ > 0


def test_weighted_majority_with_estimators_and_callables():
    X = RNG.normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    experts = [lambda Z: (Z[:, 0] > 0).astype(float), lambda Z: (Z[:, 1] > 0).astype(float)]
    wm = WeightedMajority(experts, eta=1.0, random_state=0).fit(X, y)
    assert wm.weights_[0] > 0.99 and wm.expert_losses_[0] == 0
    assert (wm.predict(X) == y).mean() > 0.98
    assert WeightedMajority(experts, eta=1.0, randomized=False).fit(X, y).score(X, y) == 1.0
    np.testing.assert_allclose(wm.predict_proba(X).sum(axis=1), 1.0)
    with pytest.raises(ValueError, match=r"eta must be > 0, got -1"):
        WeightedMajority(experts, eta=-1).fit(X, y)
    with pytest.raises(ValueError, match="Only binary classification"):
        WeightedMajority(experts).fit(X, y + (X[:, 1] > 1))
    with pytest.raises(ValueError, match=r"\[0, 1\].*clip=True"):
        WeightedMajority("precomputed", clip=False).fit(X, y)
    # any two labels: the outcome is 1 for classes_[1]
    words = np.where(y == 1, "yes", "no")
    named = WeightedMajority(experts, eta=1.0, randomized=False).fit(X, words)
    assert named.classes_.tolist() == ["no", "yes"] and named.score(X, words) == 1.0
    np.testing.assert_allclose(named.weights_, wm.weights_)


def test_weighted_majority_clips_votes_outside_the_unit_interval():
    """-1/+1 votes and scores are projected onto [0, 1]: the same game as their 0/1 votes."""
    Y = RNG.integers(0, 2, size=(60, 4)).astype(float)
    t = (RNG.random(60) > 0.5).astype(int)
    plain = WeightedMajority(eta=0.3).fit(Y, t)
    signed = WeightedMajority(eta=0.3).fit(3.0 * (2.0 * Y - 1.0), t)
    np.testing.assert_allclose(signed.weights_, plain.weights_)
    assert signed.n_features_in_ == 4


# ---------------------------------------------------------------- kernel rule
@pytest.mark.parametrize("name", ["gaussian", "cauchy", "epanechnikov"])
@pytest.mark.parametrize("budget", [None, 7])
def test_kernel_rule_matches_the_transcription(name, budget):
    X = RNG.normal(size=(30, 2))
    y = (X[:, 0] + 0.3 * RNG.normal(size=30) > 0).astype(int)
    clf = KernelRuleClassifier(kernel=name, width=0.9, budget=budget)
    clf.partial_fit(X[:11], y[:11], classes=[0, 1]).partial_fit(X[11:], y[11:])
    Q = RNG.normal(size=(12, 2))
    want = np.array([ref.kernel_rule_decision(X.tolist(), y.tolist(), q, name, 0.9, budget) for q in Q])
    np.testing.assert_allclose(clf.decision_function(Q), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(clf.predict(Q), np.where(want > 0, 1, 0))
    assert clf.n_support_ == (30 if budget is None else budget)


def test_kernel_rule_width_under_and_over_smoothing():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(400, 2))
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 < 0.5).astype(int)
    y = np.where(rng.random(400) < 0.2, 1 - y, y)  # label noise: a narrow kernel follows it
    Xt = rng.uniform(-1, 1, size=(400, 2))
    yt = (Xt[:, 0] ** 2 + Xt[:, 1] ** 2 < 0.5).astype(int)
    err = {w: 1 - KernelRuleClassifier(width=w).fit(X, y).score(Xt, yt) for w in (0.01, 0.2, 5.0)}
    assert err[0.2] < err[0.01] - 0.05 and err[0.2] < err[5.0] - 0.05
    with pytest.raises(ValueError, match="width must be > 0"):
        KernelRuleClassifier(width=0).fit(X, y)


# ---------------------------------------------------------------- online EM: steps
def _gaussian_stream(n=120, D=2):
    rng = np.random.default_rng(3)
    centres = np.array([[0.0] * D, [4.0] * D, [-4.0] + [3.0] * (D - 1)])
    return centres[rng.integers(0, 3, n)] + rng.normal(size=(n, D))


@pytest.mark.parametrize("cov", ["diag", "spherical"])
@pytest.mark.parametrize("birth", [math.inf, 4.0])
def test_gaussian_step_matches_the_transcription(cov, birth):
    X = _gaussian_stream()
    K, D = 3, X.shape[1]
    spherical = cov == "spherical"
    s0 = np.array([0.4, 0.3, 0.3])
    s1 = np.array([[0.0, 0.0], [1.2, 1.2], [-1.2, 0.9]])  # = w * mu
    V = 1 if spherical else D
    s2 = np.array([[s1[k] @ s1[k] / s0[k] + 2 * s0[k]] for k in range(K)]) if spherical else \
        s1 ** 2 / s0[:, None] + s0[:, None]
    S = (s0.tolist(), s1.tolist(), s2.reshape(K, V).tolist())
    mu, ivar, nrm = np.empty((K, D)), np.empty((K, V)), np.empty(K)
    s2 = s2.reshape(K, V).copy()
    online_em.gaussian_m_step_all(s0, s1, s2, spherical, 0.01, mu, ivar, nrm)
    d2, resp = np.empty(K), np.empty(K)
    for n, x in enumerate(X, start=4):
        eta = online_em.learning_rate(n, 0.02)
        a, t, m = online_em.gaussian_step(x, eta, s0, s1, s2, spherical, 0.01, mu, ivar, nrm, birth, 2.0, d2, resp)
        S, want_ll = ref.gaussian_step(S, x.tolist(), eta, cov, 0.01, birth, 2.0)
        assert online_em.log_likelihood(a, t, m, D) == pytest.approx(want_ll, rel=1e-9)
    np.testing.assert_allclose(s0, S[0], rtol=1e-9)
    np.testing.assert_allclose(s1, S[1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(s2, S[2], rtol=1e-9)
    params = ref.gaussian_params(S, cov, 0.01)
    np.testing.assert_allclose(mu, [p[1] for p in params], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ivar[:, 0], [1 / p[2][0] for p in params], rtol=1e-9)



@pytest.mark.parametrize("cov", ["diag", "spherical"])
@pytest.mark.parametrize("birth", [math.inf, 4.0])
def test_gaussian_step_batch_matches_the_transcription(cov, birth):
    """The batched step (n mixtures, one sample each, component-major statistics, the M
    step recomputed every step) is the transcription column by column, and the per-sample
    step (which caches the M step) to rounding."""
    n, K, T = 5, 3, 60
    streams = [_gaussian_stream(T) + 2.0 * j for j in range(n)]  # mixture j sees its own stream
    D = streams[0].shape[1]
    spherical = cov == "spherical"
    V = 1 if spherical else D
    s0 = np.array([0.4, 0.3, 0.3])
    s1 = np.array([[0.0, 0.0], [1.2, 1.2], [-1.2, 0.9]])
    s2 = (np.array([[s1[k] @ s1[k] / s0[k] + 2 * s0[k]] for k in range(K)]) if spherical else
          s1 ** 2 / s0[:, None] + s0[:, None]).reshape(K, V)
    S = [(s0.tolist(), s1.tolist(), s2.tolist()) for _ in range(n)]
    b0, b1, b2 = (np.repeat(a[..., None], n, axis=-1) for a in (s0, s1, s2))
    mu, ivar, nrm = np.empty((K, D)), np.empty((K, V)), np.empty(K)
    online_em.gaussian_m_step_all(s0, s1, s2, spherical, 0.01, mu, ivar, nrm)
    one = [tuple(a.copy() for a in (s0, s1, s2, mu, ivar, nrm)) for _ in range(n)]  # per-sample step's state
    par = np.empty(online_em.N_PAR)
    d2, resp, work = np.empty((K, n)), np.empty((K, n)), np.empty((online_em.N_WORK, n))
    births = 0
    for t in range(T):
        eta = online_em.learning_rate(t + 4, 0.02)
        X = np.stack([s[t] for s in streams], axis=1)  # (D, n)
        online_em.batch_constants(eta, 0.01, birth, 2.0, D, par)
        online_em.gaussian_step_batch(X, b0, b1, b2, spherical, par, d2, resp, work)
        births += int((work[0] > birth).sum())
        for j in range(n):
            S[j], _ = ref.gaussian_step(S[j], X[:, j].tolist(), eta, cov, 0.01, birth, 2.0)
            a0, a1, a2, mu, ivar, nrm = one[j]
            online_em.gaussian_step(np.ascontiguousarray(X[:, j]), eta, a0, a1, a2, spherical, 0.01, mu, ivar, nrm,
                                    birth, 2.0, np.empty(K), np.empty(K))
    assert (births > 0) == (birth < math.inf)
    for j in range(n):
        np.testing.assert_allclose(b0[:, j], S[j][0], rtol=1e-9)
        np.testing.assert_allclose(b1[..., j], S[j][1], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(b2[..., j], S[j][2], rtol=1e-9)
        for got, want in zip((b0[:, j], b1[..., j], b2[..., j]), one[j]):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)



@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gaussian_e_batch_exponentials_same_alone_or_among_many(dtype):
    """The batched E step takes its exponentials in a SIMD pass when many mixtures have two
    components within TAIL and in a scalar loop when few do: the same numbers either way,
    and exp(-gap/2) to rel 1e-11 (float64)."""
    K, D, n = 2, 3, 40
    rng = np.random.default_rng(7)
    x = rng.uniform(50, 200, (D, n)).astype(dtype)
    s0 = np.tile(np.array([[0.7], [0.3]]), (1, n)).astype(dtype)
    mu = np.stack([x, x + 40.0]).astype(dtype)  # the second component far (beyond TAIL) ...
    mu[1, :, 0] = x[:, 0] + 3.0  # ... except for mixture 0
    s1 = (mu * s0[:, None, :]).astype(dtype)
    s2 = (((mu ** 2).sum(axis=1, keepdims=True) + 3 * 20.0) * s0[:, None, :]).astype(dtype)  # variance 20
    par = np.empty(online_em.N_PAR, dtype)
    online_em.batch_constants(0.1, 0.0, 16.0, 100.0, D, par)
    out = []
    for m in (n, 1):  # scalar loop (1 of 40 mixtures), then the SIMD pass (mixture 0 alone)
        d2, resp, work = np.empty((K, m), dtype), np.empty((K, m), dtype), np.empty((online_em.N_WORK, m), dtype)
        online_em.gaussian_e_batch(np.ascontiguousarray(x[:, :m]), np.ascontiguousarray(s0[:, :m]),
                                   np.ascontiguousarray(s1[..., :m]), np.ascontiguousarray(s2[..., :m]), True, par,
                                   d2, resp, work)
        out.append((d2[:, 0].copy(), resp[:, 0].copy()))
        assert work[3, 0] == 2 and (m == 1 or (work[3, 1:] == 1).all())
    np.testing.assert_array_equal(out[0][1], out[1][1])
    d2, resp = out[0]
    dens = np.array([0.7, 0.3]) * np.exp(-0.5 * (d2 - d2.min()))  # equal variances: equal normalisers
    # (float32: the variances s2/s0 - |mu|^2 cancel some digits, so the normalisers differ slightly)
    np.testing.assert_allclose(resp, dens / dens.sum(), rtol=1e-11 if dtype == np.float64 else 1e-3)


def test_gaussian_full_step_matches_the_transcription():
    X = _gaussian_stream(80)
    est = OnlineGaussianMixture(3, covariance_type="full", learning_rate=0.01, random_state=0).partial_fit(X[:10])
    S = (est._s0.tolist(), est._s1.tolist(), est._s2.tolist())
    est.partial_fit(X[10:])
    lls = []
    for n, x in enumerate(X[10:], start=3 + 10 + 1):  # K pseudo-samples, then the first batch
        S, ll = ref.gaussian_full_step(S, x.tolist(), max(1 / n, 0.01), 1e-6)
        lls.append(ll)
    np.testing.assert_allclose(est._s0, S[0], rtol=1e-9)
    np.testing.assert_allclose(est._s2, S[2], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.stream_log_likelihood_, lls, rtol=1e-9)


def test_bernoulli_step_matches_the_transcription():
    rng = np.random.default_rng(5)
    X = (rng.random((60, 8)) < np.where(rng.random((60, 1)) < 0.5, 0.2, 0.8)).astype(float)
    # replay from the initial guess of a fresh estimator
    fresh = OnlineBernoulliMixture(2, random_state=0)
    fresh._initialise(X, fresh._check_params())
    S = (fresh._s0.tolist(), fresh._s1.tolist())
    lls = []
    for n, x in enumerate(X, start=3):
        S, ll = ref.bernoulli_step(S, x.tolist(), 1 / n, 1e-6)
        lls.append(ll)
    full = OnlineBernoulliMixture(2, random_state=0).partial_fit(X)
    np.testing.assert_allclose(full._s0, S[0], rtol=1e-9)
    np.testing.assert_allclose(full._s1, S[1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(full.stream_log_likelihood_, lls, rtol=1e-9)
    np.testing.assert_allclose(full.means_, np.array(S[1]) / np.array(S[0])[:, None], rtol=1e-9)


# ---------------------------------------------------------------- online EM: estimators
def _mixture_sample(n, seed):
    return mixture_sample(n, np.random.default_rng(seed))


@pytest.mark.parametrize("cov", ["full", "diag", "spherical"])
def test_online_gmm_converges_to_batch_em(cov):
    """One pass over 20000 samples, eta = 1/n: within 0.005 (weights), 0.02 (means), 0.03 (covariances)
    of scikit-learn's batch GaussianMixture on the same data; mean log-likelihood within 1e-3 nats.
    (Measured: 7e-5, 8e-4, 2e-3 and 5e-7 at 30000 samples.)"""
    from sklearn.mixture import GaussianMixture

    X = _mixture_sample(20000, 0)
    online = OnlineGaussianMixture(3, covariance_type=cov, random_state=0)
    for start in range(0, len(X), 2000):
        online.partial_fit(X[start:start + 2000])
    batch = GaussianMixture(3, covariance_type=cov, random_state=0).fit(X)
    order = [int(np.argmin(((batch.means_ - m) ** 2).sum(axis=1))) for m in online.means_]
    assert sorted(order) == [0, 1, 2]
    np.testing.assert_allclose(online.weights_, batch.weights_[order], atol=0.005)
    np.testing.assert_allclose(online.means_, batch.means_[order], atol=0.02)
    np.testing.assert_allclose(online.covariances_, batch.covariances_[order], atol=0.03)
    assert abs(online.score(X) - batch.score(X)) < 1e-3
    # the prequential log-likelihood of the stream tracks the batch optimum
    assert abs(online.stream_log_likelihood_.mean() - batch.score(X[-2000:])) < 0.01
    np.testing.assert_allclose(online.predict_proba(X[:50]).sum(axis=1), 1.0)
    assert (np.array(order)[online.predict(X)] == batch.predict(X)).mean() > 0.99
    assert online.n_samples_seen_ == len(X)


def test_online_gmm_learning_rate_floor_tracks_drift():
    rng = np.random.default_rng(2)
    A = rng.normal(0.0, 1.0, size=(3000, 1))
    B = rng.normal(6.0, 1.0, size=(3000, 1))
    slow = OnlineGaussianMixture(1, random_state=0).fit(A).partial_fit(B)
    fast = OnlineGaussianMixture(1, learning_rate=0.01, random_state=0).fit(A).partial_fit(B)
    assert abs(slow.means_[0, 0] - 3.0) < 0.3  # 1/n: the average of both halves
    assert abs(fast.means_[0, 0] - 6.0) < 0.2  # floor 0.01: the recent half


def test_online_mixture_errors():
    X = _mixture_sample(10, 1)
    with pytest.raises(ValueError, match="covariance_type must be one of"):
        OnlineGaussianMixture(2, covariance_type="tied").fit(X)
    with pytest.raises(ValueError, match="at least n_components=20 rows"):
        OnlineGaussianMixture(20).fit(X)
    with pytest.raises(ValueError, match=r"learning_rate must be in \[0, 1\], got 2"):
        OnlineGaussianMixture(2, learning_rate=2).fit(X)
    with pytest.raises(ValueError, match="binary inputs"):
        OnlineBernoulliMixture(2, binarize=None).fit(X)
    # the default binarises at 0, as scikit-learn's BernoulliNB: the same model as on (X > 0)
    a = OnlineBernoulliMixture(2, random_state=0).fit(X)
    b = OnlineBernoulliMixture(2, random_state=0, binarize=None).fit((X > 0).astype(float))
    np.testing.assert_allclose(a.means_, b.means_)
    np.testing.assert_allclose(a.score_samples(X), b.score_samples((X > 0).astype(float)))


def _usps():
    root = Path(os.environ.get("OLK_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data"))
    path = root / "learn" / "usps.h5"
    if not path.is_file():
        pytest.skip(f"USPS not found at {path} (set OLK_DATA_DIR to the shared data folder)")
    h5py = pytest.importorskip("h5py")
    with h5py.File(path, "r") as f:
        return (f["train/data"][:] > 0.5).astype(np.float64), (f["test/data"][:] > 0.5).astype(np.float64)


def _batch_bernoulli_em(X, K, iters, seed):
    """Plain batch EM for a Bernoulli mixture (Bishop 9.3.3), the reference optimum."""
    rng = np.random.default_rng(seed)
    mu = rng.uniform(0.25, 0.75, size=(K, X.shape[1]))
    w = np.full(K, 1.0 / K)
    for _ in range(iters):
        m = np.clip(mu, 1e-6, 1 - 1e-6)
        L = np.log(w) + X @ np.log(m).T + (1 - X) @ np.log(1 - m).T
        top = L.max(axis=1, keepdims=True)
        R = np.exp(L - top)
        R /= R.sum(axis=1, keepdims=True)
        Nk = R.sum(axis=0)
        w, mu = Nk / len(X), (R.T @ X) / Nk[:, None]
    return w, mu


def _bernoulli_loglik(X, w, mu):
    m = np.clip(mu, 1e-6, 1 - 1e-6)
    L = np.log(w) + X @ np.log(m).T + (1 - X) @ np.log(1 - m).T
    top = L.max(axis=1)
    return float(np.mean(top + np.log(np.exp(L - top[:, None]).sum(axis=1))))


def test_bernoulli_mixture_on_binarised_usps():
    """Two passes of online EM come within 10 nats/digit of batch EM on held-out digits and far above one
    Bernoulli (measured, K = 10, 256 binary pixels: online -98.7 after two passes (-100.8 after one),
    batch EM -93.0 after 10 iterations (-92.8 after 30), a single Bernoulli -124.4)."""
    train, test = _usps()
    online = OnlineBernoulliMixture(10, random_state=0).fit(train).partial_fit(train)
    w, mu = _batch_bernoulli_em(train, 10, 5, 0)
    batch = _bernoulli_loglik(test, w, mu)
    single = _bernoulli_loglik(test, np.ones(1), train.mean(axis=0, keepdims=True))
    got = online.score(test)
    assert got == pytest.approx(_bernoulli_loglik(test, online.weights_, online.means_), rel=1e-9)
    assert got > batch - 10.0
    assert got > single + 20.0
