"""Online kernel classifiers in scikit-learn: a Pipeline, cross-validation and a grid search over the width.

::

    python examples/sklearn_pipeline.py            # breast_cancer (bundled with scikit-learn)
    python examples/sklearn_pipeline.py --quick    # a smaller grid

Every estimator of :mod:`learners` is a scikit-learn estimator: ``fit`` learns online, one row at a time, in
one pass (``partial_fit`` goes on from there), and it fits in ``Pipeline``, ``GridSearchCV`` and
``cross_val_score`` like any other.
"""

from __future__ import annotations

import argparse
import sys

from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from learners import NORMAClassifier, OLKClassifier


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sklearn_pipeline.py", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a two-point grid, 3 folds")
    parser.add_argument("--jobs", type=int, default=1, help="GridSearchCV's n_jobs (default 1)")
    args = parser.parse_args(argv)

    X, y = load_breast_cancer(return_X_y=True)
    folds = StratifiedKFold(3 if args.quick else 5, shuffle=True, random_state=0)
    for estimator in (OLKClassifier(), NORMAClassifier()):
        pipe = make_pipeline(StandardScaler(), estimator)
        scores = cross_val_score(pipe, X, y, cv=folds)
        print(f"{type(estimator).__name__}: cross-validated accuracy {scores.mean():.3f} ± {scores.std():.3f}")

    widths = [2.0, 5.0] if args.quick else [1.0, 2.0, 5.0, 10.0]
    grid = GridSearchCV(make_pipeline(StandardScaler(), OLKClassifier()),
                        {"olkclassifier__width": widths}, cv=folds, n_jobs=args.jobs)
    grid.fit(X, y)
    print(f"grid search over width {widths}: best {grid.best_params_['olkclassifier__width']:g}, "
          f"accuracy {grid.best_score_:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
