"""scikit-learn's estimator checks for the six estimators.

Expected failures (each with its reason; xfail is strict, so a check that starts
passing is reported):

- NORMARegressor / ``check_regressors_train``: the check wants R^2 > 0.5 after one
  ``fit`` on 200 standardised 10-D points. One pass of NORMA's stochastic gradient
  with the default step ``eta = 0.1`` does not get there (with the old default
  ``width=1`` it reached R^2 ~ 0.14); with ``width=3, eta=0.5`` the same check passes
  (asserted below).

Everything else passes as is, including the order-sensitive checks: the estimators
are deterministic functions of the row order (``fit`` restarts, ``partial_fit``
continues), which is what the subset-invariance and idempotence checks compare.
Checks that need pandas or the array API are skipped by scikit-learn itself when
those are absent. They use ``parametrize_with_checks(expected_failed_checks=,
xfail_strict=)`` of scikit-learn 1.8, the lowest version pyproject.toml admits; they
were run on 1.8.0 and 1.9.1.
"""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import check_regressors_train, parametrize_with_checks

from learners import NORMAClassifier, NORMAOneClass, NORMARegressor, OLKClassifier, OLKOneClass, OLKRegressor

EXPECTED_FAILURES = {
    "NORMARegressor": {
        "check_regressors_train": "one SGD pass with the default eta=0.1 on 10-D data stays below R^2 0.5 "
                                  "(passes with width=3, eta=0.5, see "
                                  "test_normaregressor_passes_regressors_train_when_scaled)",
    },
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks(
    [NORMAClassifier(), NORMARegressor(), NORMAOneClass(), OLKClassifier(), OLKRegressor(), OLKOneClass()],
    expected_failed_checks=_expected_failed_checks,
    xfail_strict=True,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_normaregressor_passes_regressors_train_when_scaled():
    check_regressors_train("NORMARegressor", NORMARegressor(width=3.0, eta=0.5))
