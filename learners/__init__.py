"""Online learning with kernels: NORMA and OLK, with the baselines they are compared to.

Estimators (scikit-learn API; ``partial_fit`` consumes rows in order as a stream):

- :class:`NORMAClassifier`, :class:`NORMARegressor`, :class:`NORMAOneClass`
  (Kivinen, Smola, Williamson 2004);
- :class:`OLKClassifier`, :class:`OLKRegressor`, :class:`OLKOneClass`
  (Li et al., IEEE TNNLS 2013);
- the baselines those papers compare against: :class:`Perceptron`,
  :class:`KernelPerceptron`, :class:`KernelPerceptronRegressor`,
  :class:`BudgetOnlineSVM`, :class:`Projectron`, :class:`KRLS`, :class:`LSSVM`
  (batch SVMs come from scikit-learn).

The update rules themselves live once, as numba-jitted step functions, in
:mod:`learners.steps`; kernels in :mod:`learners.kernels`; the bounded expansion
in :mod:`learners.expansion`.
"""

from learners import baselines
from learners.baselines import (
    KRLS,
    LSSVM,
    BudgetOnlineSVM,
    KernelPerceptron,
    KernelPerceptronRegressor,
    Perceptron,
    Projectron,
)
from learners.norma import NORMAClassifier, NORMAOneClass, NORMARegressor
from learners.olk import OLKClassifier, OLKOneClass, OLKRegressor

__version__ = "0.1.0"

__all__ = [
    "NORMAClassifier",
    "NORMAOneClass",
    "NORMARegressor",
    "OLKClassifier",
    "OLKOneClass",
    "OLKRegressor",
    *baselines.__all__,
]
