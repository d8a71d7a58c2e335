"""The synthetic data of the OLK paper (Li et al., IEEE TNNLS 2013, section IV).

Each generator draws its samples independently from a ``numpy`` random generator
seeded by ``random_state``, exactly as the paper describes:

- :func:`make_example1` (Example 1, classification): ``y = sign(u)``,
  ``u ~ U(-0.5, 0.5)``; ``x ~ N((1, 1), I)`` if ``y = +1``, ``x ~ N((-1, -1), I)`` if
  ``y = -1`` (each coordinate normal with standard deviation 1).
- :func:`make_example2` (Example 2, regression): ``x ~ U(-pi, pi)``,
  ``f(x) = 0.2 sin(5x) + 0.5 sin(x)``; training targets ``y = f(x) + v`` with
  ``v ~ U(-0.5, 0.5)``, test targets noise-free ``y = f(x)``.
- :func:`make_example3` (Example 3, novelty): ``y = sign(u)``,
  ``u ~ U(-0.05, 0.95)`` (so 95 % normal, 5 % novel on average);
  ``x ~ N((2, 2), I)`` if ``y = +1`` (normal), ``x ~ N((-2, -2), I)`` if ``y = -1``
  (novelty); 100 points, used both to train and to test.

The paper does not give the test-set sizes of Examples 1 and 2; the callers choose
them (``n_test``).
"""

from __future__ import annotations

import numbers

import numpy as np

from learners._docs import doc

#: The docstring of the generators of training and test samples.
_TRAIN_TEST_DOC = """{title}

    Parameters
    ----------
    n : int
        Number of training samples (>= 1).
    n_test : int, default=0
        Number of test samples ({test}).
    random_state : int, numpy Generator or None

    Returns
    -------
    {returns}
    """


def _train_test_rng(n, n_test, random_state):
    """Check ``n`` and ``n_test``; the random generator."""
    _check_n("n", n)
    _check_n("n_test", n_test, minimum=0)
    return _rng(random_state)


def _rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def _check_n(name, n, minimum=1):
    if not (isinstance(n, numbers.Integral) and not isinstance(n, bool) and n >= minimum):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {n!r}")


def _two_gaussians(n, rng, low, high, mean):
    """Labels ``sign(u)``, ``u ~ U(low, high)``; inputs ``N(+-mean (1, 1), I)``."""
    u = rng.uniform(low, high, size=n)
    y = np.where(u >= 0.0, 1, -1)  # u = 0 has probability 0
    X = rng.normal(size=(n, 2)) + mean * y[:, None]
    return X, y


@doc(_TRAIN_TEST_DOC, title="Two-Gaussian classification of the OLK paper's Example 1.",
     test="drawn from the same distribution after the training ones",
     returns="X : ndarray of shape (n, 2)\n    y : ndarray of shape (n,), int in {-1, +1}\n"
             "    X_test : ndarray of shape (n_test, 2)\n    y_test : ndarray of shape (n_test,)")
def make_example1(n, n_test=0, random_state=None):
    rng = _train_test_rng(n, n_test, random_state)
    X, y = _two_gaussians(n, rng, -0.5, 0.5, 1.0)
    X_test, y_test = _two_gaussians(n_test, rng, -0.5, 0.5, 1.0)
    return X, y, X_test, y_test


def example2_function(x):
    """The regression target of Example 2, ``0.2 sin(5x) + 0.5 sin(x)``."""
    x = np.asarray(x, dtype=np.float64)
    return 0.2 * np.sin(5.0 * x) + 0.5 * np.sin(x)


@doc(_TRAIN_TEST_DOC, title="Noisy sine regression of the OLK paper's Example 2.", test="noise-free targets",
     returns="X : ndarray of shape (n, 1), ``U(-pi, pi)``\n    y : ndarray of shape (n,), ``f(x) + U(-0.5, 0.5)``\n"
             "    X_test : ndarray of shape (n_test, 1)\n    y_test : ndarray of shape (n_test,), ``f(x)``")
def make_example2(n, n_test=0, random_state=None):
    rng = _train_test_rng(n, n_test, random_state)
    X = rng.uniform(-np.pi, np.pi, size=(n, 1))
    y = example2_function(X[:, 0]) + rng.uniform(-0.5, 0.5, size=n)
    X_test = rng.uniform(-np.pi, np.pi, size=(n_test, 1))
    y_test = example2_function(X_test[:, 0])
    return X, y, X_test, y_test


def make_example3(n=100, random_state=None):
    """95/5 novelty data of the OLK paper's Example 3.

    Parameters
    ----------
    n : int, default=100
        Number of samples (the paper uses 100).
    random_state : int, numpy Generator or None

    Returns
    -------
    X : ndarray of shape (n, 2)
    y : ndarray of shape (n,), +1 normal, -1 novelty
    """
    _check_n("n", n)
    rng = _rng(random_state)
    return _two_gaussians(n, rng, -0.05, 0.95, 2.0)
