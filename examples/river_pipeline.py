"""An online kernel classifier in a river pipeline, scored prequentially (test, then train, row by row).

::

    python examples/river_pipeline.py                 # river's Phishing data set (bundled with river)
    python examples/river_pipeline.py --rows 300 --model norma

``pip install "olk-bgsub[river]"``. :func:`learners.river.to_river` wraps any estimator of :mod:`learners`
for river's pipelines and evaluators; here after river's own ``StandardScaler``.
"""

from __future__ import annotations

import argparse
import itertools
import sys


def build(model: str):
    from river import preprocessing

    from learners import NORMAClassifier, OLKClassifier
    from learners.river import to_river

    estimator = {"olk": OLKClassifier(), "norma": NORMAClassifier()}[model]
    return preprocessing.StandardScaler() | to_river(estimator)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="river_pipeline.py", description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("olk", "norma"), default="olk", help="the kernel classifier")
    parser.add_argument("--rows", type=int, default=None, metavar="N", help="only the first N rows")
    args = parser.parse_args(argv)
    try:
        from river import datasets, evaluate, metrics
    except ImportError:
        print("river_pipeline.py: error: needs river: pip install 'olk-bgsub[river]'", file=sys.stderr)
        return 2

    model = build(args.model)
    rows = datasets.Phishing()
    if args.rows is not None:
        rows = itertools.islice(rows, args.rows)
    accuracy = evaluate.progressive_val_score(rows, model, metrics.Accuracy())
    print(f"{model}")
    print(f"prequential accuracy on Phishing: {accuracy.get():.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
