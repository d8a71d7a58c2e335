"""Example 1 of the OLK paper: online classification of two Gaussians.

Data: :func:`learners.datasets.make_example1`. For every seed the methods learn the
same stream of ``max(grid)`` points (the paper: 50 ... 1500) and are scored on the
same test set (``--n-test``, 1000 by default; the paper does not give its size).

Reported per method: cumulative online mistakes (prequential, see
:mod:`learners.bench.protocol`; for the batch SVM, the training errors of the fit on
the first ``n`` points), the test error, the number of support vectors, and the
seconds of one fit on all points. Also OLK_C's support vectors against ``n`` for
several thresholds ``Thr_sv`` (the paper's Fig. 2 of section IV-A).

Parameters: the paper's Table I (cross-validated there). The table's text is
garbled in our copy; we read its rows as SVM ``p = 1, C = 2``; OLK_C ``p = 1.2,
C = 0.8, r = 0.001``; NORMA ``p = 1, lambda = 0.01, eta = 0.1``; Perceptron
``eta = exp(-t/50)``; kernel perceptron ``p = 1.2, eta = 0.1``; Projectron
``p = 1.2, eta = 0.02``. (The project's ALGORITHMS.md lists OLK_C as ``p = 1,
C = 2``, which is the SVM row; ``--set OLK_C.width=1 --set OLK_C.C=2`` runs that.)
OLK_C and NORMA run without a budget (``budget=None``), as in the paper.
"""

from __future__ import annotations

import numpy as np
from sklearn.svm import SVC

from learners.baselines import KernelPerceptron, Perceptron, Projectron
from learners.bench.common import each_seed, warm_up
from learners.bench.methods import Method
from learners.bench.protocol import batch_classification, chunked_online, n_terms, prequential_classification, timed_fit
from learners.bench.report import (band, curve_panel, curve_table, finish_figure, fit_time_bars, fmt, fmt_g, mean_std, pyplot,
                                    report_text, table)
from learners.datasets import make_example1

GRID = [50, 100] + list(range(200, 1501, 100))
THRESHOLDS = [0.0, 0.001, 0.002, 0.01]
N_TEST = 1000
#: The options of :func:`learners.bench.common.add_common_arguments` this example takes.
OPTIONS = dict(grid=GRID, n_test=N_TEST, sweep=(
    "--thresholds", THRESHOLDS, "OLK_C Thr_sv values for the support-vector curve (default %(default)s)"))


#: Error of the Bayes-optimal rule sign(x1 + x2): Phi(-sqrt(2)).
BAYES_ERROR = 0.07864960352514251


def bayes_predict(X):
    """The Bayes-optimal classifier of Example 1 (equal priors, means +-(1, 1), identity covariance)."""
    return np.where(X[:, 0] + X[:, 1] >= 0.0, 1, -1)


def svc(C=2.0, width=1.0):
    """scikit-learn's SVC with the Gaussian ``exp(-||x-y||^2 / width^2)``."""
    return SVC(C=C, kernel="rbf", gamma=1.0 / width**2)


def methods():
    """The methods of Example 1 with the paper's Table I parameters."""
    return [
        Method("OLK_C", "learners.olk:OLKClassifier", dict(kernel="gaussian", width=1.2, C=0.8, r=0.001, budget=None), note="Table I"),
        Method("NORMA", "learners.norma:NORMAClassifier", dict(loss="hinge", kernel="gaussian", width=1.0, lam=0.01, eta=0.1, fit_intercept=True, budget=None), note="Table I"),
        Method("Perceptron", Perceptron, dict(eta0=1.0, decay=50.0), note="Table I: eta_t = exp(-t/50)"),
        Method("KernelPerceptron", KernelPerceptron, dict(width=1.2, eta=0.1), note="Table I"),
        Method("Projectron", Projectron, dict(width=1.2, eta=0.02), note="Table I"),
        Method("SVM", svc, dict(C=2.0, width=1.0), online=False, note="Table I; scikit-learn SVC (libsvm SMO)"),
    ]


def run(args, available, log):
    """Run every seed; returns the raw per-seed curves."""
    grid = args.grid_points
    curves = {m.name: {k: [] for k in ("mistakes", "test_error", "n_support")} for m in available}
    seconds = {m.name: [] for m in available}
    sv_thr = {thr: [] for thr in args.sweep_values}
    olk = next((m for m in available if m.name == "OLK_C"), None)
    bayes = []

    # warm-up (numba compilation and imports are not timed)
    Xw, yw, _, _ = make_example1(30, 0, random_state=10**6)
    warm_up(available, Xw, yw)

    for seed in each_seed(args, "example1", log):
        X, y, Xt, yt = make_example1(grid[-1], args.n_test, random_state=seed)
        bayes.append(float(np.mean(bayes_predict(Xt) != yt)))
        for m in available:
            if m.online:
                res = prequential_classification(m.build(), X, y, grid, Xt, yt)
                seconds[m.name].append(timed_fit(m.build, X, y))
            else:
                res = batch_classification(m.build, X, y, grid, Xt, yt)
                seconds[m.name].append(timed_fit(m.build, X, y))
            for k in curves[m.name]:
                curves[m.name][k].append(res[k])
        if olk is not None:
            for thr in args.sweep_values:
                _, sizes = chunked_online(olk.build(sv_threshold=thr), X, y, grid, lambda e: 0.0, size=n_terms)
                sv_thr[thr].append(sizes)
    return dict(
        grid=grid,
        curves=curves,
        seconds=seconds,
        sv_thresholds=sv_thr,
        bayes=bayes,
        n_test=args.n_test,
        seeds=args.seeds,
    )


def final(result):
    """Final-point figures per method: ``{"test_error", "mistakes", "seconds"}`` (means)."""
    out = {}
    for name, c in result["curves"].items():
        out[name] = {
            "test_error": mean_std(np.asarray(c["test_error"])[:, -1])[0],
            "mistakes": mean_std(np.asarray(c["mistakes"])[:, -1])[0],
            "seconds": mean_std(result["seconds"][name])[0],
        }
    return out


def report(result, available, unavailable):
    grid = result["grid"]
    n = grid[-1]
    lines = [
        f"Example 1 (classification), {result['seeds']} seeds, n = {n} learning points, "
        f"{result['n_test']} test points; mean ± standard deviation over seeds",
        "",
    ]
    rows = []
    for m in available:
        c = result["curves"][m.name]
        rows.append(
            [
                m.name,
                fmt(*mean_std(np.asarray(c["test_error"])[:, -1])),
                fmt_g(*mean_std(np.asarray(c["mistakes"])[:, -1])),
                fmt_g(*mean_std(np.asarray(c["n_support"])[:, -1])),
                fmt_g(*mean_std(result["seconds"][m.name])),
                ", ".join(f"{k}={v}" for k, v in m.params.items()),
            ]
        )
    lines.append(
        table(["method", "test error", "mistakes (SVM: training errors)", "support vectors", "seconds (fit)", "parameters"], rows)
    )
    lines += [
        "",
        f"Bayes-optimal rule sign(x1 + x2) on the same test sets: {fmt(*mean_std(result['bayes']))} "
        f"(expected {BAYES_ERROR:.4f}; {BAYES_ERROR * n:.0f} expected mistakes in {n} points)",
    ]
    for key, title, digits in (("mistakes", "cumulative mistakes", 1), ("test_error", "test error", 3)):
        lines += ["", f"{title} against the number of learning points (mean over seeds)", ""]
        lines.append(curve_table(grid, available, {m.name: result["curves"][m.name][key] for m in available}, digits))
    if any(result["sv_thresholds"][t] for t in result["sv_thresholds"]):
        lines += ["", "OLK_C support vectors against the number of learning points, per Thr_sv (mean over seeds)", ""]
        thrs = list(result["sv_thresholds"])
        rows = [
            [str(g)] + [fmt(np.mean(np.asarray(result["sv_thresholds"][t])[:, i]), digits=1) for t in thrs]
            for i, g in enumerate(grid)
        ]
        lines.append(table(["n"] + [f"Thr_sv={t:g}" for t in thrs], rows))
    return report_text(lines, unavailable)


def plot(result, available, folder):
    plt = pyplot()
    grid = np.asarray(result["grid"])
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    ax = axes[0, 0]
    curve_panel(ax, grid, available, {m.name: result["curves"][m.name]["mistakes"] for m in available},
                "cumulative mistakes", "Mistakes (paper Fig. 3)",
                label=lambda m: m.name + (" (training errors)" if not m.online else ""))
    ax.legend(fontsize=8)
    ax = axes[0, 1]
    curve_panel(ax, grid, available, {m.name: result["curves"][m.name]["test_error"] for m in available},
                "test error", "Test error")
    ax.axhline(np.mean(result["bayes"]), color="black", linestyle="--", linewidth=1, label="Bayes rule")
    ax.legend(fontsize=8)
    ax = axes[1, 0]
    for t, runs in result["sv_thresholds"].items():
        if runs:
            band(ax, grid, runs, f"Thr_sv = {t:g}")
    ax.set(xlabel="number of learning points", ylabel="support vectors", title="OLK_C support vectors (paper Fig. 2)")
    ax.legend(fontsize=8)
    ax = axes[1, 1]
    fit_time_bars(ax, available, result["seconds"], f"Fit time, n = {grid[-1]} (paper Fig. 4)")
    return finish_figure(fig, folder / "example1.png", f"OLK paper Example 1, mean ± sd over {result['seeds']} seeds")
