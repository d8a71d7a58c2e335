"""The online-learning lecture (seed 002): weighted majority, online EM, the kernel rule.

Three experiments, averaged over seeds:

- ``WM``: weighted majority (Hedge, ``eta = sqrt(8 ln M / N)``) over ``M = 16``
  experts on ``N = 4000`` rounds whose outcome is always the one the forecaster
  finds less likely (an adaptive adversary); expert 0 is right on the first half,
  expert 1 on the second, the others guess. Regret after ``n`` rounds against
  ``sqrt(n ln M)`` (and the bound ``sqrt(N ln M / 2)``).
- ``OnlineEM``: one online-EM pass (``eta = 1/n``) over a stream of 20000 draws
  from a 3-component 2-D Gaussian mixture; at checkpoints, the mean
  log-likelihood of 5000 held-out draws under the online model and under
  scikit-learn's batch ``GaussianMixture`` fitted to the same prefix.
- ``KernelRule``: test error of the kernel rule against its width on a noisy
  disc (2000 training points, 20 % of the labels flipped; 2000 test points,
  clean) for the Gaussian, Cauchy and Epanechnikov kernels: small widths follow
  the noise, large ones the class proportions.
"""

from __future__ import annotations

import math
import time

import numpy as np

from learners.bench.methods import Method
from learners.bench.report import band, fmt, mean_std, pyplot, save_figure, table
from learners.hedge import hedge_eta, hedge_regret_bound

WM_ROUNDS = 4000
WM_EXPERTS = 16
EM_STREAM = 20000
EM_CHECKPOINTS = (500, 1000, 2000, 5000, 10000, 20000)
WIDTHS = tuple(float(w) for w in np.round(np.logspace(-2.5, 1.0, 15), 4))
KERNELS = ("gaussian", "cauchy", "epanechnikov")


def methods():
    return [
        Method("WM", "learners.weighted_majority:WeightedMajority", dict(experts="precomputed"),
               note="eta = sqrt(8 ln M / N)"),
        Method("OnlineEM", "learners.mixture:OnlineGaussianMixture", dict(n_components=3, covariance_type="full"),
               note="eta_n = 1/n, vs scikit-learn GaussianMixture"),
        Method("KernelRule", "learners.kernel_rule:KernelRuleClassifier", dict(), note="width sweep"),
    ]


def add_arguments(parser):
    parser.set_defaults(seeds=5)


def _wm_run(method, seed):
    rng = np.random.default_rng(seed)
    N, M = WM_ROUNDS, WM_EXPERTS
    Y = (rng.random((N, M)) > 0.5).astype(float)
    wm = method.build(eta=hedge_eta(N, M))
    w = np.full(M, 1.0 / M)
    regret = np.empty(N)
    loss = 0.0
    experts = np.zeros(M)
    for n in range(N):
        good = 0 if n < N // 2 else 1
        others = np.delete(np.arange(M), good)
        p_others = Y[n, others] @ w[others]
        # the outcome maximising |p - t| given that the good expert predicts it:
        # t = 0 costs p_others, t = 1 costs 1 - p_others - w_good
        t = 0.0 if p_others >= 1.0 - p_others - w[good] else 1.0
        Y[n, good] = t
        wm.partial_fit(Y[n:n + 1], [t])
        w = wm.weights_
        regret[n] = wm.regret_
        loss = wm.cumulative_loss_
        experts = wm.expert_losses_
    return regret, loss, experts.min()


def mixture_sample(n, rng):
    """``n`` draws of the 3-component 2-D Gaussian mixture of the online-EM experiment (and tests)."""
    means = np.array([[0.0, 0.0], [5.0, 5.0], [-5.0, 5.0]])
    covs = [np.array([[1.0, 0.3], [0.3, 0.5]]), np.eye(2) * 0.7, np.array([[2.0, -0.5], [-0.5, 1.0]])]
    z = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    X = np.empty((n, 2))
    for k in range(3):
        X[z == k] = rng.multivariate_normal(means[k], covs[k], size=int((z == k).sum()))
    return X


def _em_run(method, seed):
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(seed)
    X = mixture_sample(EM_STREAM, rng)
    test = mixture_sample(5000, rng)
    online = method.build(random_state=seed)
    cov = method.params.get("covariance_type", "full")
    on, ba, secs = [], [], 0.0
    start = 0
    for stop in EM_CHECKPOINTS:
        t0 = time.perf_counter()
        online.partial_fit(X[start:stop])
        secs += time.perf_counter() - t0
        start = stop
        on.append(online.score(test))
        ba.append(GaussianMixture(online.n_components, covariance_type=cov, random_state=seed).fit(X[:stop])
                  .score(test))
    return np.array(on), np.array(ba), secs


def _disc(n, rng, noise):
    X = rng.uniform(-1, 1, size=(n, 2))
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 < 0.5).astype(int)
    flip = rng.random(n) < noise
    return X, np.where(flip, 1 - y, y)


def _kr_run(method, seed):
    rng = np.random.default_rng(seed)
    X, y = _disc(2000, rng, 0.2)
    Xt, yt = _disc(2000, rng, 0.0)
    return {k: np.array([1.0 - method.build(kernel=k, width=w).fit(X, y).score(Xt, yt) for w in WIDTHS])
            for k in KERNELS}


def run(args, available, log):
    names = {m.name: m for m in available}
    seeds = range(args.seed_offset, args.seed_offset + args.seeds)
    out = {"seeds": args.seeds}
    if "WM" in names:
        runs = [_wm_run(names["WM"], s) for s in seeds]
        out["wm_regret"] = np.array([r[0] for r in runs])
        out["wm_loss"] = [r[1] for r in runs]
        out["wm_best"] = [r[2] for r in runs]
        log(f"WM: {len(runs)} seeds")
    if "OnlineEM" in names:
        runs = [_em_run(names["OnlineEM"], s) for s in seeds]
        out["em_online"] = np.array([r[0] for r in runs])
        out["em_batch"] = np.array([r[1] for r in runs])
        out["em_seconds"] = [r[2] for r in runs]
        log(f"OnlineEM: {len(runs)} seeds")
    if "KernelRule" in names:
        runs = [_kr_run(names["KernelRule"], s) for s in seeds]
        out["kr_error"] = {k: np.array([r[k] for r in runs]) for k in KERNELS}
        log(f"KernelRule: {len(runs)} seeds")
    return out


def final(result):
    fig = {}
    if "wm_regret" in result:
        N, M = WM_ROUNDS, WM_EXPERTS
        fig["WM"] = {"regret": mean_std(result["wm_regret"][:, -1])[0],
                     "regret_over_sqrt_N_lnM": mean_std(result["wm_regret"][:, -1])[0] / math.sqrt(N * math.log(M)),
                     "bound": hedge_regret_bound(N, M), "rounds": N, "experts": M}
    if "em_online" in result:
        fig["OnlineEM"] = {"online_loglik": mean_std(result["em_online"][:, -1])[0],
                           "batch_loglik": mean_std(result["em_batch"][:, -1])[0],
                           "gap": mean_std(result["em_batch"][:, -1] - result["em_online"][:, -1])[0],
                           "stream": EM_STREAM, "seconds": mean_std(result["em_seconds"])[0]}
    if "kr_error" in result:
        fig["KernelRule"] = {}
        for k, e in result["kr_error"].items():
            m = e.mean(axis=0)
            i = int(np.argmin(m))
            fig["KernelRule"][k] = {"best_width": WIDTHS[i], "best_error": float(m[i]),
                                    "error_smallest_width": float(m[0]), "error_largest_width": float(m[-1])}
    return fig


def report(result, available, unavailable):
    lines = [f"Lecture (seed 002), {result['seeds']} seeds"]
    fin = final(result)
    if "WM" in fin:
        N, M = WM_ROUNDS, WM_EXPERTS
        rows = []
        for n in (250, 1000, 2000, 3000, 4000):
            r = result["wm_regret"][:, n - 1]
            rows.append([str(n), fmt(*mean_std(r), digits=1), fmt(math.sqrt(n * math.log(M)), digits=1),
                         fmt(*mean_std(r / math.sqrt(n * math.log(M))), digits=3)])
        lines += ["", f"Weighted majority, M = {M}, eta = sqrt(8 ln M / N) = {hedge_eta(N, M):.4f}, "
                  f"bound sqrt(N ln M / 2) = {hedge_regret_bound(N, M):.1f}",
                  table(["n", "regret", "sqrt(n ln M)", "ratio"], rows)]
    if "OnlineEM" in fin:
        rows = [[str(n), fmt(*mean_std(result["em_online"][:, i])), fmt(*mean_std(result["em_batch"][:, i])),
                 fmt(*mean_std(result["em_batch"][:, i] - result["em_online"][:, i]), digits=4)]
                for i, n in enumerate(EM_CHECKPOINTS)]
        lines += ["", "Online EM (eta = 1/n) vs batch EM: mean held-out log-likelihood after n samples",
                  table(["n", "online", "batch", "gap"], rows)]
    if "KernelRule" in fin:
        rows = [[f"{w:g}"] + [fmt(*mean_std(result["kr_error"][k][:, i])) for k in KERNELS]
                for i, w in enumerate(WIDTHS)]
        lines += ["", "Kernel rule: test error against the width (20 % label noise in training)",
                  table(["width"] + list(KERNELS), rows)]
    for name, why in unavailable.items():
        lines.append(f"{name}: skipped ({why})")
    return "\n".join(lines)


def _finish(plt, fig, ax, path, **axes_settings):
    """Set the axes' labels and scales, add the legend, save the figure to ``path`` and close it."""
    ax.set(**axes_settings)
    ax.legend()
    path = save_figure(fig, path)
    plt.close(fig)
    return path


def plot(result, available, folder):
    plt = pyplot()
    paths = []
    if "wm_regret" in result:
        fig, ax = plt.subplots(figsize=(5.5, 4))
        n = np.arange(1, WM_ROUNDS + 1)
        band(ax, n, result["wm_regret"], "regret")
        ax.plot(n, np.sqrt(n * math.log(WM_EXPERTS)), "k--", label="sqrt(n ln M)")
        ax.axhline(hedge_regret_bound(WM_ROUNDS, WM_EXPERTS), color="grey", lw=0.8, label="bound sqrt(N ln M / 2)")
        paths.append(_finish(plt, fig, ax, folder / "lecture_regret.png", xlabel="rounds n", ylabel="regret"))
    if "em_online" in result:
        fig, ax = plt.subplots(figsize=(5.5, 4))
        band(ax, EM_CHECKPOINTS, result["em_online"], "online EM")
        band(ax, EM_CHECKPOINTS, result["em_batch"], "batch EM")
        paths.append(_finish(plt, fig, ax, folder / "lecture_em.png", xscale="log", xlabel="samples seen",
                             ylabel="held-out mean log-likelihood"))
    if "kr_error" in result:
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for k in KERNELS:
            band(ax, WIDTHS, result["kr_error"][k], k)
        paths.append(_finish(plt, fig, ax, folder / "lecture_kernel_rule.png", xscale="log", xlabel="width h",
                             ylabel="test error"))
    return paths
