"""scikit-learn's estimator checks on every estimator of :mod:`learners`, with no expected failure.

The estimators whose inputs are restricted say so the scikit-learn way, through
``__sklearn_tags__``: the binary classifiers ``classifier_tags.multi_class = False``
(the checks then give them two labels); ``WeightedMajority`` with
``experts="precomputed"`` ``classifier_tags.poor_score`` (its ``X`` is the experts'
predictions, not features) and ``non_deterministic`` while its randomised
``predict`` is unseeded; ``OnlineBernoulliMixture`` binarises its inputs at 0 as
scikit-learn's ``BernoulliNB`` does (``binarize=None`` takes only 0/1 inputs and
declares ``input_tags.positive_only``).

The checks include the order-sensitive ones: the estimators are deterministic
functions of the row order (``fit`` restarts, ``partial_fit`` continues), which is
what the subset-invariance and idempotence checks compare. Checks that need pandas
or the array API are skipped by scikit-learn itself when those are absent. They use
``parametrize_with_checks`` of scikit-learn 1.8, the lowest version pyproject.toml
admits; they were run on 1.9.1.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks

import learners
from learners import OnlineBernoulliMixture, WeightedMajority

#: One default instance of each estimator the package exports.
ESTIMATORS = [getattr(learners, name)() for name in learners.__all__]


def test_every_exported_estimator_is_checked():
    assert len(ESTIMATORS) == 19
    assert len({type(e) for e in ESTIMATORS}) == 19


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_tags_declare_the_input_rules():
    assert get_tags(WeightedMajority()).classifier_tags.multi_class is False
    assert get_tags(WeightedMajority()).classifier_tags.poor_score is True
    assert get_tags(WeightedMajority(experts=[np.mean])).classifier_tags.poor_score is False
    assert get_tags(WeightedMajority()).non_deterministic is True
    assert get_tags(WeightedMajority(random_state=0)).non_deterministic is False
    assert get_tags(WeightedMajority(randomized=False)).non_deterministic is False
    assert get_tags(OnlineBernoulliMixture()).input_tags.positive_only is False
    strict = OnlineBernoulliMixture(binarize=None)
    assert get_tags(strict).input_tags.positive_only is True
    with pytest.raises(ValueError, match="Negative values in data"):
        clone(strict).fit(-np.ones((4, 2)))


def test_weighted_majority_learns_with_any_two_labels_and_sets_n_features_in():
    rng = np.random.default_rng(0)
    votes = (rng.random((80, 3)) > 0.5).astype(float)
    truth = votes[:, 1]  # expert 1 is always right
    labels = np.where(truth == 1, "spam", "ham")
    wm = WeightedMajority(eta=1.0, randomized=False).fit(votes, labels)
    assert wm.n_features_in_ == 3 and wm.classes_.tolist() == ["ham", "spam"]
    assert wm.weights_.argmax() == 1 and wm.score(votes, labels) == 1.0
    assert np.allclose(wm.predict_proba(votes[:5])[:, 1], wm.predict_proba(votes[:5]).max(axis=1) * truth[:5]
                       + (1 - wm.predict_proba(votes[:5]).max(axis=1)) * (1 - truth[:5]))
    # a first partial_fit row of outcome 0 or 1 plays the 0/1 game; other single labels need classes
    assert WeightedMajority().partial_fit(votes[:1], [1]).classes_.tolist() == [0, 1]
    with pytest.raises(ValueError, match="classes="):
        WeightedMajority().partial_fit(votes[:1], ["spam"])
    assert WeightedMajority().partial_fit(votes[:1], ["spam"], classes=["ham", "spam"]).n_rounds_ == 1
