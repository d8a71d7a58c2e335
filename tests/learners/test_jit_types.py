"""The drivers hand each jitted function one argument type: read-only, strided or integer inputs (and a
model whose arrays are read-only, as after unpickling onto a read-only memory map) compile no new
variant and give exactly the results of plain C-contiguous float64 inputs."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from learners import (
    KernelRuleClassifier,
    NORMAClassifier,
    NORMAOneClass,
    NORMARegressor,
    OLKClassifier,
    OLKOneClass,
    OLKRegressor,
    OnlineBernoulliMixture,
    OnlineGaussianMixture,
    SVMDClassifier,
    SVMDOneClass,
    _ovr,
    _stream,
    kernel_rule,
    kernels,
    online_em,
    svmd_steps,
)
from learners._arrays import jit_array, jit_arrays

#: The jitted functions the estimators call from Python.
DRIVEN = [_stream.olk_fit_stream, _stream.norma_fit_stream, _stream.expansion_decision, _stream.finite_row,
          _stream.score_row, _ovr.olk_c_ovr_fit_stream, _ovr.norma_ovr_fit_stream, _ovr.ovr_decision,
          kernel_rule.kernel_rule_fit_stream, svmd_steps.svmd_fit_stream, svmd_steps.svmd_decision,
          online_em.gaussian_full_fit_stream, online_em.gaussian_full_score_rows, online_em.bernoulli_fit_stream,
          online_em.bernoulli_score_rows, kernels._gram_serial]

#: Fitted arrays of each model, made read-only to stand for a model loaded onto read-only memory.
STATE = ("_sv", "_coef", "_ring", "_state", "_offsets", "_alpha", "_beta", "_kappa", "_delta", "_s0", "_s1", "_s2")


def _data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(np.int64), np.round(3 * X[:, 1]).astype(np.int64), rng.integers(0, 3, n)


def _readonly(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


def _strided(a):
    """The values of ``a`` in a Fortran-ordered array: its rows are strided 1-D arrays."""
    return np.asfortranarray(a)


def _frozen(model):
    """A copy of ``model`` whose fitted arrays are read-only."""
    model = copy.deepcopy(model)
    for name in STATE:
        value = model.__dict__.get(name)
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    cache = model.__dict__.get("_cache")
    for value in cache or ():
        value.setflags(write=False)
    return model


def _scores(model, X):
    if hasattr(model, "decision_function"):
        return model.decision_function(X)
    if hasattr(model, "score_samples"):
        return model.score_samples(X)
    return model.predict(X)


def _signatures():
    return {f.py_func.__qualname__: set(f.signatures) for f in DRIVEN}


def _fits():
    """``(name, fit(X, y) -> model, target)`` of every driver."""
    X, labels, counts, three = _data()
    return [
        ("olk_c", lambda X, y: OLKClassifier(width=1.0).fit(X, y), labels),
        ("olk_r", lambda X, y: OLKRegressor(width=1.0).fit(X, y), counts),
        ("olk_n", lambda X, y: OLKOneClass(width=1.0).fit(X), None),
        ("norma_c", lambda X, y: NORMAClassifier(width=1.0).fit(X, y), labels),
        ("norma_r", lambda X, y: NORMARegressor(width=1.0).fit(X, y), counts),
        ("norma_n", lambda X, y: NORMAOneClass(width=1.0).fit(X), None),
        ("olk_ovr", lambda X, y: OLKClassifier(width=1.0).fit(X, y), three),
        ("norma_ovr", lambda X, y: NORMAClassifier(width=1.0).fit(X, y), three),
        ("kernel_rule", lambda X, y: KernelRuleClassifier(width=1.0).fit(X, y), labels),
        ("svmd_c", lambda X, y: SVMDClassifier(width=1.0).fit(X, y), labels),
        ("svmd_n", lambda X, y: SVMDOneClass(width=1.0).fit(X), None),
        ("gauss", lambda X, y: OnlineGaussianMixture(2, random_state=0).fit(X), None),
        ("bernoulli", lambda X, y: OnlineBernoulliMixture(2, random_state=0).fit(X), None),
    ]


def test_jit_array_copies_only_what_the_jitted_functions_cannot_take():
    a = np.zeros((3, 2))
    assert jit_array(a) is a
    for odd in (_readonly(a), a.T, a[:, :1], a.astype(np.float32), a.astype(np.int64)):
        got = jit_array(odd)
        assert got.flags.c_contiguous and got.flags.writeable and got.dtype == np.float64
        np.testing.assert_array_equal(got, odd)
    ring = _readonly(np.array([1, 2]))
    (got,) = jit_arrays(ring)
    assert got.dtype == np.int64 and got.flags.writeable and ring.flags.writeable is False


def _rows(model, rows, targets, readonly):
    """``learn_one`` then ``score_one`` / ``predict_one`` of each row (as a read-only copy with ``readonly``)."""
    out = []
    for x, label in zip(rows, targets):
        model.learn_one(x, label)
        out.append((model.score_one(_readonly(x) if readonly else x), model.predict_one(x)))
    return out


@pytest.mark.parametrize("case", range(len(_fits())), ids=[name for name, _, _ in _fits()])
def test_odd_inputs_compile_nothing_new_and_give_the_same_results(case):
    name, fit, target = _fits()[case]
    X, *_ = _data()
    Xq = _data(seed=1)[0]
    # single rows: the binary kernel estimators (SVMD wants its classes first, the mixtures have none)
    single = not name.startswith(("svmd", "gauss", "bernoulli")) and "ovr" not in name
    # plain inputs: compile (or load) the one variant of each function
    y = None if target is None else target.astype(np.float64) if name.endswith("_r") else target
    plain = fit(X, y)
    want = _scores(plain, Xq)
    gram = kernels.gram(X, Xq)
    targets = [None] * len(Xq) if target is None else target[:len(Xq)]
    if single:
        want_rows = _rows(copy.deepcopy(plain), Xq, targets, readonly=False)
    before = _signatures()
    # read-only X and y, integer targets, a read-only model, read-only and strided single rows
    X_user = _readonly(X)
    odd = fit(X_user, None if target is None else _readonly(target))
    np.testing.assert_array_equal(_scores(odd, _readonly(Xq)), want)
    np.testing.assert_array_equal(_scores(_frozen(plain), Xq), want)
    np.testing.assert_array_equal(kernels.gram(_readonly(X), _strided(Xq)), gram)
    if single:
        assert _rows(copy.deepcopy(plain), _strided(Xq), targets, readonly=True) == want_rows
    added = {name: sorted(map(str, sigs - before[name])) for name, sigs in _signatures().items() if sigs - before[name]}
    assert not added, f"variants compiled for odd inputs: {added}"
    np.testing.assert_array_equal(X_user, X)


@pytest.mark.parametrize("case", range(len(_fits())), ids=[name for name, _, _ in _fits()])
def test_a_model_with_read_only_arrays_learns_as_its_writable_copy(case):
    """Learning on a model whose fitted arrays are read-only (loaded onto read-only memory) takes writable copies
    of them first: the same model as learning on the original, no numba error."""
    name, fit, target = _fits()[case]
    X, *_ = _data()
    Xq = _data(seed=1)[0]
    y = None if target is None else target.astype(np.float64) if name.endswith("_r") else target
    plain = fit(X, y)
    frozen = _frozen(plain)
    yq = None if target is None else y[:len(Xq)]
    want = copy.deepcopy(plain).partial_fit(Xq) if yq is None else copy.deepcopy(plain).partial_fit(Xq, yq)
    got = frozen.partial_fit(Xq) if yq is None else frozen.partial_fit(Xq, yq)
    np.testing.assert_array_equal(_scores(got, X), _scores(want, X))
