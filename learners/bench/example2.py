"""Example 2 of the OLK paper: online regression of ``0.2 sin(5x) + 0.5 sin(x)``.

Data: :func:`learners.datasets.make_example2` (uniform noise in [-0.5, 0.5] on the
training targets, noise-free test targets). For every seed the online methods learn
one stream of ``max(grid)`` points (the paper: 10 ... 700) and are scored at each
grid point by the RMSE against the true function on ``--n-test`` test points (1000
by default; the paper does not give the size); LS-SVM is refitted on the first ``n``
points. The time of a method is one fit on all points. Also OLK_R's number of
non-zero coefficients after all points against ``epsilon`` (the paper's Fig. 1).

Parameters (the paper's, section IV-B): OLK_R ``p = 0.5, epsilon = 0.5, C = 1,
r = 0.001``; NORMA ``p = 0.5, lambda = 0.01, eta = 0.1`` with the
epsilon-insensitive loss (the paper does not give NORMA's epsilon: we use OLK_R's
0.5); kernel perceptron ``p = 0.5, eta = 0.02`` (the paper does not say which
regression rule: we use the perceptron's unregularised stochastic-gradient step on
the squared loss, kernel LMS); KRLS ``p = 0.5, nu = 0.001``; LS-SVM ``p = 0.5,
C = 10``. OLK_R and NORMA run without a budget.
"""

from __future__ import annotations

import numpy as np

from learners.baselines import KRLS, LSSVM, KernelPerceptronRegressor
from learners.bench.common import each_seed, warm_up
from learners.bench.methods import Method
from learners.bench.protocol import batch_curve, chunked_online, n_nonzero, timed_fit
from learners.bench.report import (band, curve_panel, curve_table, finish_figure, fit_time_bars, fmt, fmt_g, mean_std, pyplot,
                                    report_text, table)
from learners.datasets import make_example2

GRID = [10, 20, 50, 100, 200, 300, 400, 500, 600, 700]
EPSILONS = [round(0.05 * i, 2) for i in range(21)]
N_TEST = 1000
#: The options of :func:`learners.bench.common.add_common_arguments` this example takes.
OPTIONS = dict(grid=GRID, n_test=N_TEST, sweep=(
    "--epsilons", EPSILONS, "OLK_R epsilon values for the sparsity curve (default 0,0.05,...,1)"))


def methods():
    """The methods of Example 2 with the paper's parameters."""
    return [
        Method("OLK_R", "learners.olk:OLKRegressor", dict(kernel="gaussian", width=0.5, epsilon=0.5, C=1.0, r=0.001, budget=None), note="paper IV-B"),
        Method("NORMA", "learners.norma:NORMARegressor",
               dict(loss="epsilon_insensitive", kernel="gaussian", width=0.5, lam=0.01, eta=0.1, epsilon=0.5, budget=None),
               note="paper IV-B; epsilon not given, OLK_R's used"),
        Method("KernelPerceptron", KernelPerceptronRegressor, dict(width=0.5, eta=0.02), note="paper IV-B; kernel LMS rule"),
        Method("KRLS", KRLS, dict(width=0.5, nu=0.001), note="paper IV-B"),
        Method("LS-SVM", LSSVM, dict(width=0.5, C=10.0), online=False, note="paper IV-B"),
    ]


def run(args, available, log):
    """Run every seed; returns the raw per-seed curves."""
    grid = args.grid_points
    rmse, seconds, nonzero = ({m.name: [] for m in available} for _ in range(3))
    eps_curve = []
    olk = next((m for m in available if m.name == "OLK_R"), None)

    Xw, yw, _, _ = make_example2(30, 0, random_state=10**6)
    warm_up(available, Xw, yw)

    for seed in each_seed(args, "example2", log):
        X, y, Xt, ft = make_example2(grid[-1], args.n_test, random_state=seed)

        def score(est):
            return float(np.sqrt(np.mean((est.predict(Xt) - ft) ** 2)))

        for m in available:
            if m.online:
                curve, _ = chunked_online(m.build(), X, y, grid, score)
            else:
                curve = batch_curve(m.build, X, y, grid, score)
            rmse[m.name].append(curve)
            seconds[m.name].append(timed_fit(m.build, X, y))
            nonzero[m.name].append(n_nonzero(m.build().fit(X, y)))
        if olk is not None and args.sweep_values:
            eps_curve.append([n_nonzero(olk.build(epsilon=e).fit(X, y)) for e in args.sweep_values])
    return dict(grid=grid, rmse=rmse, seconds=seconds, nonzero=nonzero, epsilons=args.sweep_values, eps_curve=eps_curve,
                n_test=args.n_test, seeds=args.seeds)


def final(result):
    """Final-point figures per method: ``{"rmse", "seconds"}`` (means)."""
    return {
        name: {"rmse": mean_std(np.asarray(r)[:, -1])[0], "seconds": mean_std(result["seconds"][name])[0]}
        for name, r in result["rmse"].items()
    }


def report(result, available, unavailable):
    grid = result["grid"]
    lines = [
        f"Example 2 (regression), {result['seeds']} seeds, n = {grid[-1]} learning points, "
        f"{result['n_test']} noise-free test points; mean ± standard deviation over seeds",
        "",
    ]
    rows = [
        [
            m.name,
            fmt(*mean_std(np.asarray(result["rmse"][m.name])[:, -1]), digits=4),
            fmt_g(*mean_std(result["nonzero"][m.name])),
            fmt_g(*mean_std(result["seconds"][m.name])),
            ", ".join(f"{k}={v}" for k, v in m.params.items()),
        ]
        for m in available
    ]
    lines.append(table(["method", "test RMSE", "non-zero coefficients", "seconds (fit)", "parameters"], rows))
    lines += ["", "test RMSE against the number of learning points (mean over seeds)", ""]
    lines.append(curve_table(grid, available, result["rmse"], 4))
    if result["eps_curve"]:
        curve = np.asarray(result["eps_curve"])
        lines += ["", f"OLK_R non-zero coefficients after n = {grid[-1]} points against epsilon (mean ± sd)", ""]
        rows = [[f"{e:g}", fmt_g(*mean_std(curve[:, i]))] for i, e in enumerate(result["epsilons"])]
        lines.append(table(["epsilon", "non-zero coefficients"], rows))
    return report_text(lines, unavailable)


def plot(result, available, folder):
    plt = pyplot()
    grid = np.asarray(result["grid"])
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    curve_panel(ax, grid, available, result["rmse"], "test RMSE", "RMSE (paper Fig. 6)", marker=".")
    top = max(np.nanmax(np.nanmean(np.asarray(result["rmse"][m.name]), axis=0)) for m in available)
    if top > 0.6:  # KRLS interpolates the noise at small n: keep the rest readable
        ax.set_ylim(0, 0.6)
        ax.set_title("RMSE (paper Fig. 6); axis clipped at 0.6")
    else:
        ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax = axes[1]
    if result["eps_curve"]:
        band(ax, np.asarray(result["epsilons"]), result["eps_curve"], "OLK_R", marker=".")
    ax.set(xlabel="epsilon", ylabel="non-zero coefficients", title=f"OLK_R sparsity, n = {grid[-1]} (paper Fig. 1)")
    ax = axes[2]
    fit_time_bars(ax, available, result["seconds"], f"Fit time, n = {grid[-1]}")
    return finish_figure(fig, folder / "example2.png", f"OLK paper Example 2, mean ± sd over {result['seeds']} seeds")
