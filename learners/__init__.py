"""Online learning with kernels: NORMA and OLK, with the baselines they are compared to.

Estimators (scikit-learn API; ``partial_fit`` consumes rows in order as a stream):

- :class:`NORMAClassifier`, :class:`NORMARegressor`, :class:`NORMAOneClass`
  (Kivinen, Smola, Williamson 2004);
- :class:`OLKClassifier`, :class:`OLKRegressor`, :class:`OLKOneClass`
  (Li et al., IEEE TNNLS 2013);
- :class:`SVMDClassifier`, :class:`SVMDOneClass` (Vishwanathan, Schraudolph &
  Smola 2006: the online SVM with step sizes adapted by stochastic meta-descent);
- the baselines those papers compare against: :class:`Perceptron`,
  :class:`KernelPerceptron`, :class:`KernelPerceptronRegressor`,
  :class:`BudgetOnlineSVM`, :class:`Projectron`, :class:`KRLS`, :class:`LSSVM`
  (batch SVMs come from scikit-learn).

The update rules themselves live once, as numba-jitted step functions, in
:mod:`learners.steps`; kernels in :mod:`learners.kernels`; the bounded expansion
in :mod:`learners.expansion`.
"""

import importlib

from learners._numba_cache import install as _install_numba_cache

# Before any jitted function of learners or bgsub is decorated: their cache is stamped with all their sources.
_install_numba_cache()

__version__ = "0.1.0"

# Estimators are imported on first use (PEP 562), so that ``learners.steps`` and the
# other numba modules, which the background subtractors use, load without pulling in
# scikit-learn.
_EXPORTS = {
    "NORMAClassifier": "learners.norma",
    "NORMAOneClass": "learners.norma",
    "NORMARegressor": "learners.norma",
    "OLKClassifier": "learners.olk",
    "OLKOneClass": "learners.olk",
    "OLKRegressor": "learners.olk",
    "SVMDClassifier": "learners.svmd",
    "SVMDOneClass": "learners.svmd",
    "BudgetOnlineSVM": "learners.baselines",
    "KRLS": "learners.baselines",
    "KernelPerceptron": "learners.baselines",
    "KernelPerceptronRegressor": "learners.baselines",
    "LSSVM": "learners.baselines",
    "Perceptron": "learners.baselines",
    "Projectron": "learners.baselines",
    "WeightedMajority": "learners.weighted_majority",
    "OnlineGaussianMixture": "learners.mixture",
    "OnlineBernoulliMixture": "learners.mixture",
    "KernelRuleClassifier": "learners.kernel_rule",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'learners' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
