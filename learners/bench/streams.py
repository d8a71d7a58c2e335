"""``learners-bench streams``: prequential accuracy and time per row, ours next to river's.

Measured the way a river user measures: one pass over each stream, one row per
call, test-then-train (``predict_one(x)`` then ``learn_one(x, y)``; the first row
is learnt but not scored), every model behind the same online
``river.preprocessing.StandardScaler``. Streams: river's bundled Phishing and
Bananas (their order), scikit-learn's bundled breast cancer, wine, iris and digits
(shuffled once with seed 0: the files are sorted by class). Models: our
``OLKClassifier`` and ``NORMAClassifier`` and the baselines ``KernelPerceptron``,
``Projectron``, ``BudgetOnlineSVM`` (binary streams only), all at their defaults;
river's ``LogisticRegression`` and ``PAClassifier`` (one-vs-rest on multiclass
streams), ``HoeffdingTreeClassifier``, ``KNNClassifier`` and ``ARFClassifier``
(seed 0), at theirs. Also printed: the majority-class rate of each stream (the
accuracy of always answering the commonest label).

Time per row is the wall time of the whole loop (scaler, prediction, update)
divided by the rows, after an untimed warm-up on 20 rows with a throwaway model
(numba loads its compiled code then); it depends on the machine and its load.

::

    learners-bench streams [--streams phishing,bananas,...] [--models OLK,NORMA,...] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

import numpy as np

STREAMS = ("phishing", "bananas", "breast_cancer", "wine", "iris", "digits")
OURS = ("OLK", "NORMA", "KernelPerceptron", "Projectron", "BudgetOnlineSVM")
THEIRS = ("river.LogisticRegression", "river.PAClassifier", "river.HoeffdingTree", "river.KNN", "river.ARF")


def _river():
    try:
        import river  # noqa: F401
    except ImportError:
        raise ValueError("the streams benchmark compares with river and reads its bundled data sets: "
                         "pip install 'olk-bgsub[river]' (or pip install river)") from None


def load_stream(name):
    """``(rows, labels)``: a list of dicts and a list of labels, in stream order."""
    if name in ("phishing", "bananas"):
        from river import datasets

        data = datasets.Phishing() if name == "phishing" else datasets.Bananas()
        rows, labels = [], []
        for x, y in data:
            rows.append(dict(x))
            labels.append(y)
        return rows, labels
    from sklearn import datasets as skd

    loader = {"breast_cancer": skd.load_breast_cancer, "wine": skd.load_wine, "iris": skd.load_iris,
              "digits": skd.load_digits}[name]
    X, y = loader(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    keys = [f"x{j}" for j in range(X.shape[1])]
    return [dict(zip(keys, map(float, X[i]))) for i in order], [int(y[i]) for i in order]


def make_model(name, classes):
    """The model ``name`` behind river's online StandardScaler; None if it does not apply to ``classes``."""
    from river import forest, linear_model, multiclass, neighbors, preprocessing, tree

    from learners import BudgetOnlineSVM, KernelPerceptron, NORMAClassifier, OLKClassifier, Projectron
    from learners.river import to_river

    binary = len(classes) == 2
    if name == "OLK":
        model = to_river(OLKClassifier())
    elif name == "NORMA":
        model = to_river(NORMAClassifier())
    elif name in ("KernelPerceptron", "Projectron", "BudgetOnlineSVM"):
        if not binary:
            return None
        cls = {"KernelPerceptron": KernelPerceptron, "Projectron": Projectron, "BudgetOnlineSVM": BudgetOnlineSVM}
        model = to_river(cls[name](), classes=sorted(classes))
    elif name in ("river.LogisticRegression", "river.PAClassifier"):
        base = linear_model.LogisticRegression() if name.endswith("LogisticRegression") else \
            linear_model.PAClassifier()
        model = base if binary else multiclass.OneVsRestClassifier(base)
    elif name == "river.HoeffdingTree":
        model = tree.HoeffdingTreeClassifier()
    elif name == "river.KNN":
        model = neighbors.KNNClassifier()
    elif name == "river.ARF":
        model = forest.ARFClassifier(seed=0)
    else:
        raise ValueError(f"unknown model {name!r}; models: {', '.join(OURS + THEIRS)}")
    return preprocessing.StandardScaler() | model


def prequential(model, rows, labels):
    """``(accuracy, seconds)`` of one test-then-train pass (the first row is not scored)."""
    hits = 0
    t0 = time.perf_counter()
    for i, (x, y) in enumerate(zip(rows, labels)):
        if i:
            hits += model.predict_one(x) == y
        model.learn_one(x, y)
    seconds = time.perf_counter() - t0
    return hits / (len(rows) - 1), seconds


def run(streams, models, log):
    """``{stream: {"rows", "features", "classes", "majority", "models": {model: {"accuracy", "us_per_row"}}}}``."""
    result = {}
    for s in streams:
        rows, labels = load_stream(s)
        classes = sorted(set(labels))
        entry = {"rows": len(rows), "features": len(rows[0]), "classes": len(classes),
                 "majority": Counter(labels[1:]).most_common(1)[0][1] / (len(labels) - 1), "models": {}}
        for m in models:
            model = make_model(m, classes)
            if model is None:
                continue
            # untimed warm-up on a throwaway model: loads numba's compiled code once
            prequential(make_model(m, classes), rows[:20], labels[:20])
            acc, seconds = prequential(model, rows, labels)
            entry["models"][m] = {"accuracy": acc, "us_per_row": seconds / len(rows) * 1e6}
            log(f"{s:14s} {m:26s} accuracy {100 * acc:6.2f} %  {seconds / len(rows) * 1e6:9.1f} us/row")
        result[s] = entry
    return result


def report(result, models):
    """Markdown table: accuracy % (us per row) per model and stream."""
    streams = list(result)
    head = "| model | " + " | ".join(f"{s} ({result[s]['rows']}x{result[s]['features']}, "
                                       f"{result[s]['classes']} cl.)" for s in streams) + " |"
    lines = [head, "|" + "---|" * (len(streams) + 1)]
    lines.append("| majority class | " + " | ".join(f"{100 * result[s]['majority']:.1f}" for s in streams) + " |")
    for m in models:
        cells = []
        for s in streams:
            r = result[s]["models"].get(m)
            cells.append("n/a" if r is None else f"{100 * r['accuracy']:.1f} ({r['us_per_row']:.0f} µs)")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _names(text, allowed, what):
    names = [n.strip() for n in text.split(",") if n.strip()] if text else list(allowed)
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise ValueError(f"unknown {what} {unknown}; choose from {', '.join(allowed)}")
    return names


def main(argv=None):
    """Run the benchmark; returns the exit status (2 on bad options or without river)."""
    parser = argparse.ArgumentParser(prog="learners-bench streams", description=__doc__.strip().splitlines()[0])
    parser.add_argument("--streams", default="", help=f"comma-separated subset of {', '.join(STREAMS)}")
    parser.add_argument("--models", default="", help=f"comma-separated subset of {', '.join(OURS + THEIRS)}")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the table goes to stderr)")
    args = parser.parse_args(argv)
    try:
        _river()
        streams = _names(args.streams, STREAMS, "streams")
        models = _names(args.models, OURS + THEIRS, "models")
    except ValueError as exc:
        print(f"learners-bench streams: error: {exc}", file=sys.stderr)
        return 2

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    result = run(streams, models, log)
    text = report(result, models)
    if args.json:
        print(text, file=sys.stderr)
        print(json.dumps(result))
    else:
        print(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
