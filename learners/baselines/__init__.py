"""Baselines the OLK and NORMA papers compare against, with the same estimator conventions.

Online learners (``partial_fit`` makes one pass in order, ``fit`` starts afresh):

- :class:`Perceptron`: linear perceptron, optional step ``eta0 exp(-t / decay)``;
- :class:`KernelPerceptron`: kernel perceptron classifier;
- :class:`KernelPerceptronRegressor`: its regression form (kernel LMS);
- :class:`BudgetOnlineSVM`: the lecture notes' budget online SVM (margin ``beta``,
  at most ``budget`` support vectors);
- :class:`Projectron`: Orabona, Keshet & Caputo's bounded kernel perceptron;
- :class:`KRLS`: Engel, Mannor & Meir's kernel recursive least squares.

Batch: :class:`LSSVM` (closed-form least-squares SVM regression). Batch SVMs come
from scikit-learn (``sklearn.svm.SVC``, ``SVR``, ``OneClassSVM``; their
``gamma = 1 / width**2`` in our width convention).
"""

from learners.baselines.budget_svm import BudgetOnlineSVM
from learners.baselines.kernel_perceptron import KernelPerceptron, KernelPerceptronRegressor
from learners.baselines.krls import KRLS
from learners.baselines.lssvm import LSSVM
from learners.baselines.perceptron import Perceptron
from learners.baselines.projectron import Projectron

__all__ = [
    "BudgetOnlineSVM",
    "KRLS",
    "KernelPerceptron",
    "KernelPerceptronRegressor",
    "LSSVM",
    "Perceptron",
    "Projectron",
]
