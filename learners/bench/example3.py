"""Example 3 of the OLK paper: novelty detection on 95/5 data, ROC curves.

Data: :func:`learners.datasets.make_example3` (100 points, 5 % novelties on
average), used both to learn (one online pass, labels unused) and to score, as in
the paper. The score of a point is ``-decision_function`` (larger = more novel);
the ROC curve sweeps a threshold over it with the novelties as positives. Seeds
whose draw holds no novelty (probability 0.6 %) have no ROC and are left out of the
averages (the table says how many seeds counted). Also reported: the true and
false positive rates at the method's own threshold (``predict == -1``).

Parameters: OLK_N ``r = 0.001, p = 1, C = 0.2, nu = 0.1`` (the paper's) with its
rho rule (69); NORMA's are not given in the paper: we use nu-NORMA with the same
``p = 1, nu = 0.1`` and Example 1's ``lambda = 0.01, eta = 0.1``. A batch
one-class SVM (scikit-learn ``OneClassSVM``, ``nu = 0.1``, ``p = 1``) is available
as a reference with ``--methods OLK_N,NORMA,SVM`` (the default runs the paper's two).
Both online methods run without a budget.
"""

from __future__ import annotations

import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.svm import OneClassSVM

from learners.bench.common import check_common, each_seed, warm_up
from learners.bench.methods import Method
from learners.bench.protocol import timed_fit
from learners.bench.report import finish_figure, fmt, fmt_g, mean_std, pyplot, report_text, table
from learners.datasets import make_example3

FPR_GRID = np.linspace(0.0, 1.0, 101)


def one_class_svm(nu=0.1, width=1.0):
    """scikit-learn's OneClassSVM with the Gaussian ``exp(-||x-y||^2 / width^2)``."""
    return OneClassSVM(nu=nu, kernel="rbf", gamma=1.0 / width**2)


def methods():
    """The methods of Example 3."""
    return [
        Method("OLK_N", "learners.olk:OLKOneClass", dict(kernel="gaussian", width=1.0, C=0.2, nu=0.1, r=0.001, budget=None), note="paper IV-C"),
        Method("NORMA", "learners.norma:NORMAOneClass", dict(kernel="gaussian", width=1.0, nu=0.1, lam=0.01, eta=0.1, budget=None),
               note="not in the paper: OLK_N's p and nu, Example 1's lambda and eta"),
        Method("SVM", one_class_svm, dict(nu=0.1, width=1.0), online=False,
               note="batch reference (scikit-learn), not in the paper's Fig. 8", default=False),
    ]


def add_arguments(parser):
    parser.add_argument("--n", type=int, default=100, help="points per data set (the paper: 100)")


def check(args):
    check_common(args)
    if args.n < 2:
        raise ValueError(f"--n must be >= 2, got {args.n}")


def run(args, available, log):
    names = [m.name for m in available]
    auc = {n: [] for n in names}
    tpr_curves = {n: [] for n in names}
    op = {n: [] for n in names}
    seconds = {n: [] for n in names}
    Xw, _ = make_example3(30, random_state=10**6)
    warm_up(available, Xw)
    skipped = 0
    for seed in each_seed(args, "example3", log):
        X, y = make_example3(args.n, random_state=seed)
        novel = y == -1
        both = 0 < novel.sum() < len(y)
        skipped += not both
        for m in available:
            seconds[m.name].append(timed_fit(m.build, X))
            est = m.build().fit(X)
            score = -est.decision_function(X)
            flagged = est.predict(X) == -1
            if both:
                auc[m.name].append(roc_auc_score(novel, score))
                fpr, tpr, _ = roc_curve(novel, score)
                tpr_curves[m.name].append(np.interp(FPR_GRID, fpr, tpr))
                op[m.name].append((np.mean(flagged[~novel]), np.mean(flagged[novel])))
    return dict(auc=auc, tpr=tpr_curves, op=op, seconds=seconds, seeds=args.seeds, skipped=skipped, n=args.n)


def final(result):
    """Final figures per method: ``{"auc", "seconds"}`` (means)."""
    return {n: {"auc": mean_std(result["auc"][n])[0], "seconds": mean_std(result["seconds"][n])[0]} for n in result["auc"]}


def report(result, available, unavailable):
    used = result["seeds"] - result["skipped"]
    lines = [
        f"Example 3 (novelty detection), {result['n']} points, {used} of {result['seeds']} seeds with novelties; "
        "mean ± standard deviation over seeds",
        "",
    ]
    rows = []
    for m in available:
        op = np.asarray(result["op"][m.name]).reshape(-1, 2)
        rows.append(
            [
                m.name,
                fmt(*mean_std(result["auc"][m.name])),
                fmt(*mean_std(op[:, 1])) if len(op) else "n/a",
                fmt(*mean_std(op[:, 0])) if len(op) else "n/a",
                fmt_g(*mean_std(result["seconds"][m.name])),
                ", ".join(f"{k}={v}" for k, v in m.params.items()),
            ]
        )
    lines.append(table(["method", "AUC", "TPR at own threshold", "FPR at own threshold", "seconds (fit)", "parameters"], rows))
    return report_text(lines, unavailable)


def plot(result, available, folder):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 5))
    for m in available:
        curves = np.asarray(result["tpr"][m.name])
        if not len(curves):
            continue
        mean = curves.mean(axis=0)
        (line,) = ax.plot(FPR_GRID, mean, label=f"{m.name} (AUC {mean_std(result['auc'][m.name])[0]:.3f})")
        if len(curves) > 1:
            sd = curves.std(axis=0, ddof=1)
            ax.fill_between(FPR_GRID, mean - sd, np.minimum(mean + sd, 1), color=line.get_color(), alpha=0.12, linewidth=0)
        op = np.asarray(result["op"][m.name]).mean(axis=0)
        ax.plot(op[0], op[1], "o", color=line.get_color())
    ax.plot([0, 1], [0, 1], ":", color="gray")
    ax.set(xlabel="false positive rate", ylabel="true positive rate", xlim=(0, 1), ylim=(0, 1.02))
    ax.set_title(f"ROC, OLK paper Example 3 (paper Fig. 8)\nmean over {result['seeds'] - result['skipped']} seeds; dots: own threshold", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return finish_figure(fig, folder / "example3.png")
