"""``learners-bench svmd-*``: the experiments of the SVMD paper's section 6 (Vishwanathan et al. 2006).

::

    learners-bench svmd-usps-binary      [--json] [--plots DIR] [--limit N]   # Fig. 3
    learners-bench svmd-usps-multiclass  ...                                  # Fig. 4
    learners-bench svmd-counting         ...                                  # Fig. 6
    learners-bench svmd-novelty          ...                                  # Fig. 7 left
    learners-bench svmd-mnist            [--buffers 256,1024,4096] ...        # Fig. 7 right
    learners-bench svmd-taxonomy         ...                                  # section 6.4, on digits
    learners-bench svmd-... --set lam=0.1   # override a parameter of every method of the run

Every run is one single pass, in a fixed order, over the data of
``$OLK_DATA_DIR/learn`` (``usps.h5``, ``mnist.npz``); the figure is the *average
error*: online mistakes (each row predicted before it is learnt) over rows seen.
Three learners as in the paper: ``SVMD`` (its lambda), ``SVMD_lambda0`` (the
single-step variant) and ``NORMA``, the online SVM with the scheduled decay
``eta_t = eta0 tau / (tau + t)`` (SVMD's step with the schedule in place of SMD; the NORMA
estimators' ``learning_rate="decay"`` differs with nu and multiclass, see docs/svmd.md).

Settings the paper does not state, chosen here and printed with the results:
USPS pixels rescaled from [0, 1] to [-1, 1] (the classic USPS range, where the
paper's sigma = 8 is sensible; our Gaussian width is ``sqrt(2) * 8``); the USPS
training set (7291 digits, file order) for the stationary runs; ``c`` for the
binary and counting runs (``1/(500 n)`` as for 10 classes); MNIST inputs scaled to
unit norm and ``eta0 = 0.01`` (with the degree-9 kernel, ``k(x, x) = 512``, a
larger ``eta0`` makes SMD collapse eta within a few steps); the novelty run's
``nu`` and ``c``. If the data file is absent the command says so and exits 0
(``{"skipped": reason}`` with ``--json``).
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import numpy as np

from learners.bench.report import Timer, plots_dir, table

USPS_WIDTH = math.sqrt(2.0) * 8.0  # the paper's sigma = 8 in exp(-||x-x'||^2 / (2 sigma^2))

#: A small hand-made taxonomy of the ten digits (WIPO-alpha is not available): by shape.
DIGIT_TAXONOMY = {
    "digit": None,
    "loops": "digit", "strokes": "digit", "curves": "digit",
    0: "loops", 6: "loops", 8: "loops", 9: "loops",
    1: "strokes", 4: "strokes", 7: "strokes",
    2: "curves", 3: "curves", 5: "curves",
}

#: Counting-sequence events where the paper's Fig. 7 (left) shows eta rising.
NOVELTY_EVENTS = (6, 60, 120, 150, 180, 300, 1200, 1500, 3000)


class DataMissing(Exception):
    """The data file a command needs is absent."""


def data_dir():
    return Path(os.environ.get("OLK_DATA_DIR", "../shared/data")) / "learn"


def load_usps(both=False):
    """USPS in [-1, 1]: the training set, or training + test (``both``) in file order."""
    path = data_dir() / "usps.h5"
    if not path.is_file():
        raise DataMissing(f"{path} not found (set OLK_DATA_DIR to the folder holding learn/usps.h5)")
    import h5py

    with h5py.File(path, "r") as f:
        parts = ["train", "test"] if both else ["train"]
        X = np.concatenate([f[p + "/data"][:] for p in parts]).astype(np.float64)
        y = np.concatenate([f[p + "/target"][:] for p in parts]).astype(np.int64)
    return 2.0 * X - 1.0, y


def counting_sequence(X, y, per_digit=600):
    """The paper's Fig. 5: ``per_digit`` samples of each digit in the order of a 3-digit counter run twice."""
    pools = {d: list(np.flatnonzero(y == d)[:per_digit]) for d in range(10)}
    for d, pool in pools.items():
        if len(pool) < per_digit:
            raise ValueError(f"only {len(pool)} samples of digit {d}, the counting sequence needs {per_digit}")
    order = [pools[int(ch)].pop(0) for ch in "".join(f"{i:03d}" for i in range(1000)) * 2]
    return X[order], y[order]


def load_mnist():
    path = data_dir() / "mnist.npz"
    if not path.is_file():
        raise DataMissing(f"{path} not found (set OLK_DATA_DIR to the folder holding learn/mnist.npz)")
    with np.load(path, allow_pickle=False) as d:
        X = d["x_train"].reshape(d["x_train"].shape[0], -1).astype(np.float64)
        y = d["y_train"].astype(np.int64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norms > 0, norms, 1.0), y


#: ``--set PARAM=VALUE`` overrides, applied to every method of a run.
_OVERRIDES = {}


def _parse_overrides(items):
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects PARAM=VALUE, got {item!r}")
        try:
            out[key.strip()] = float(value) if value.strip().lower() != "none" else None
        except ValueError as exc:
            raise ValueError(f"--set {key}: expected a number or None, got {value!r}") from exc
    return out


def _classifier(**kw):
    from learners.svmd import SVMDClassifier

    return SVMDClassifier(**dict(dict(fit_intercept=False, store_eta_trace=True, **kw), **_OVERRIDES))


def _trio(common, decay, tau):
    """SVMD with ``decay``, its single-step variant, and the online SVM with step decay ``tau``."""
    return {"SVMD": dict(common, decay=decay), "SVMD_lambda0": dict(common, decay=0.0),
            "NORMA": dict(common, decay=decay, tau=tau)}


def _run_classifiers(configs, X, y, log, extra=None):
    out = {}
    for name, kw in configs.items():
        clf = _classifier(**kw)
        with Timer() as t:
            pred = clf.learn_stream(X, y)
        wrong = (pred != y).astype(np.float64)
        curve = np.cumsum(wrong) / np.arange(1, len(y) + 1)
        out[name] = {"average_error": float(curve[-1]), "final_eta": float(clf.eta_), "seconds": t.seconds,
                     "curve": curve, "eta": clf.eta_trace_.copy(), "pred": pred}
        if extra is not None:
            out[name].update(extra(pred))
        log(f"{name}: average error {curve[-1]:.4f}, final eta {clf.eta_:.3g} ({t.seconds:.1f} s)")
    return out


def _limit(X, y, args):
    return (X[:args.limit], y[:args.limit]) if args.limit else (X, y)


# ------------------------------------------------------------------ commands
def usps_binary(args, log):
    X, y = _limit(*load_usps(), args)
    yb = np.where(y >= 5, 1, -1)  # 0-4 vs 5-9
    c = 1.0 / (500 * len(y))
    common = dict(kernel="gaussian", width=USPS_WIDTH, budget=512, nu=0.05, eta0=1.0, mu=1.0, lam=c)
    settings = dict(common, decay=0.95, tau=10.0, n=len(y))
    return _run_classifiers(_trio(common, 0.95, 10.0), X, yb, log), settings


def usps_multiclass(args, log):
    X, y = _limit(*load_usps(), args)
    c = 1.0 / (500 * len(y))
    common = dict(kernel="gaussian", width=USPS_WIDTH, budget=512, eta0=0.1, mu=0.1, lam=c)
    settings = dict(common, decay=0.99, tau=100.0, n=len(y))
    return _run_classifiers(_trio(common, 0.99, 100.0), X, y, log), settings


def counting(args, log):
    X, y = _limit(*counting_sequence(*load_usps(both=True)), args)
    c = 1.0 / (500 * len(y))
    common = dict(kernel="gaussian", width=USPS_WIDTH, budget=512, nu=0.05, eta0=1.0, mu=1.0, lam=c)
    settings = dict(common, decay=0.95, tau=100.0, n=len(y))
    return _run_classifiers(_trio(common, 0.95, 100.0), X, y, log), settings


def novelty(args, log):
    from learners.svmd import SVMDOneClass

    X, y = _limit(*counting_sequence(*load_usps(both=True)), args)
    common = dict(kernel="gaussian", width=USPS_WIDTH, budget=512, nu=0.05, eta0=1.0, mu=1.0, lam=1.0,
                  store_eta_trace=True)
    configs = {"SVMD": dict(common, decay=1.0), "SVMD_lambda0": dict(common, decay=0.0),
               "NORMA": dict(common, decay=1.0, tau=100.0)}
    out = {}
    for name, kw in configs.items():
        occ = SVMDOneClass(**dict(kw, **_OVERRIDES))
        with Timer() as t:
            f = occ.learn_stream(X)
        novel = (f < 0).astype(np.float64)
        curve = np.cumsum(novel) / np.arange(1, len(y) + 1)
        eta = occ.eta_trace_.copy()
        rises = {str(e): float(eta[e] / eta[e - 2]) for e in NOVELTY_EVENTS if e < len(eta)}
        out[name] = {"average_error": float(curve[-1]), "final_eta": float(occ.eta_), "seconds": t.seconds,
                     "eta_ratio_at_events": rises, "curve": curve, "eta": eta}
        log(f"{name}: fraction flagged novel {curve[-1]:.4f}, final eta {occ.eta_:.3g} ({t.seconds:.1f} s)")
    return out, dict(common, decay=1.0, tau=100.0, n=len(y))


def mnist(args, log):
    X, y = _limit(*load_mnist(), args)
    c = 1.0 / (500 * len(y))
    out = {}
    tail = min(4500, len(y))
    for B in args.buffers:
        clf = _classifier(kernel="polynomial", degree=9, coef0=1.0, budget=B, eta0=0.01, mu=0.01, decay=1.0,
                          lam=c)
        with Timer() as t:
            pred = clf.learn_stream(X, y)
        wrong = (pred != y).astype(np.float64)
        curve = np.cumsum(wrong) / np.arange(1, len(y) + 1)
        out[f"buffer_{B}"] = {"average_error": float(curve[-1]), "last_4500_error": float(wrong[-tail:].mean()),
                              "final_eta": float(clf.eta_), "seconds": t.seconds, "curve": curve,
                              "eta": clf.eta_trace_.copy()}
        log(f"buffer {B}: average error {curve[-1]:.4f}, last {tail} {wrong[-tail:].mean():.4f} "
            f"({t.seconds:.1f} s)")
    return out, dict(kernel="polynomial", degree=9, coef0=1.0, eta0=0.01, mu=0.01, decay=1.0, lam=c, n=len(y),
                     inputs="unit norm")


def taxonomy(args, log):
    from learners.taxonomy import Taxonomy

    X, y = _limit(*load_usps(), args)
    labels = np.arange(10)
    delta = Taxonomy(DIGIT_TAXONOMY).distance_matrix(labels)
    common = dict(kernel="gaussian", width=USPS_WIDTH, budget=1024, eta0=1.0, mu=0.1, decay=0.999,
                  lam=1.0 / len(y))
    configs = {"SVMD_graph": dict(common, loss="graph", taxonomy=DIGIT_TAXONOMY),
               "SVMD_multiclass": dict(common, loss="hinge")}

    def delta_loss(pred):
        return {"average_delta_loss": float(delta[y, pred].mean())}

    out = _run_classifiers(configs, X, y, log, extra=delta_loss)
    return out, dict(common, taxonomy="digits by shape: loops 0689, strokes 147, curves 235", n=len(y))


COMMANDS = {
    "svmd-usps-binary": (usps_binary, "SVMD paper Fig. 3: nu-SVM, USPS 0-4 vs 5-9, single pass"),
    "svmd-usps-multiclass": (usps_multiclass, "SVMD paper Fig. 4: 10-class USPS, single pass"),
    "svmd-counting": (counting, "SVMD paper Fig. 6: nu-SVMD on the non-stationary USPS counting sequence"),
    "svmd-novelty": (novelty, "SVMD paper Fig. 7 left: novelty detection's step size on the counting sequence"),
    "svmd-mnist": (mnist, "SVMD paper Fig. 7 right: MNIST, degree-9 polynomial kernel, buffer sizes"),
    "svmd-taxonomy": (taxonomy, "SVMD paper section 6.4 on digits: graph (taxonomy) loss vs multiclass hinge"),
}


def add_subcommands(sub):
    """Register the ``svmd-*`` commands on ``learners-bench``'s subparsers."""
    for name, (_, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="print one JSON object of the final figures")
        p.add_argument("--plots", metavar="DIR", help="write a PNG figure into DIR")
        p.add_argument("--limit", type=int, default=0, help="use only the first N rows (a quick check)")
        p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PARAM=VALUE",
                       help="override an estimator parameter of every method, e.g. --set lam=0.1 (repeatable)")
        if name == "svmd-mnist":
            p.add_argument("--buffers", type=str, default="256,1024,4096", help="buffer sizes (default %(default)s)")


def _final(result):
    keep = ("average_error", "last_4500_error", "average_delta_loss", "final_eta", "seconds", "eta_ratio_at_events")
    return {name: {k: v for k, v in r.items() if k in keep} for name, r in result.items()}


def _report(command, result, settings):
    rows = [[name] + [f"{r[k]:.4f}" if k in r else "" for k in ("average_error", "last_4500_error",
                                                                   "average_delta_loss")]
            + [f"{r.get('final_eta', float('nan')):.3g}", f"{r['seconds']:.1f}"] for name, r in result.items()]
    head = ["method", "average error" if command != "svmd-novelty" else "fraction novel", "last 4500",
            "avg delta loss", "final eta", "seconds"]
    return f"{command}  settings: {settings}\n" + table(head, rows)


def _plot(command, result, folder):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(7.5, 2.8), dpi=80)
    for name, r in result.items():
        t = np.arange(1, len(r["curve"]) + 1)
        axes[0].plot(t, r["curve"], label=name, lw=1)
        axes[1].plot(t, r["eta"], label=name, lw=1)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("iterations")
    axes[0].set_ylabel("fraction flagged novel" if command == "svmd-novelty" else "current average error")
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("iterations")
    axes[1].set_ylabel("step size eta")
    axes[0].legend(fontsize=7)
    fig.suptitle(command, fontsize=9)
    fig.tight_layout()
    path = Path(folder) / f"{command}.png"
    fig.savefig(path)
    plt.close(fig)
    _shrink_png(path)
    return path


def _shrink_png(path):
    """Re-save as a 64-colour palette PNG (about a third of the size; the figures are committed)."""
    from PIL import Image

    with Image.open(path) as im:
        small = im.convert("RGB").quantize(colors=64)
    small.save(path, optimize=True)


def main(args, log) -> int:
    prog = f"learners-bench {args.command}"
    if args.limit < 0:
        print(f"{prog}: error: --limit must be >= 0, got {args.limit}", file=sys.stderr)
        return 2
    if args.command == "svmd-mnist":
        try:
            args.buffers = [int(b) for b in args.buffers.split(",") if b.strip()]
        except ValueError:
            print(f"{prog}: error: --buffers must be comma-separated integers, got {args.buffers!r}",
                  file=sys.stderr)
            return 2
        if not args.buffers or min(args.buffers) < 1:
            print(f"{prog}: error: --buffers must list sizes >= 1, got {args.buffers}", file=sys.stderr)
            return 2
    try:
        _OVERRIDES.clear()
        _OVERRIDES.update(_parse_overrides(args.overrides))
        folder = plots_dir(args.plots) if args.plots else None
        result, settings = COMMANDS[args.command][0](args, log)
        settings.update(_OVERRIDES)
    except DataMissing as exc:
        log(f"{prog}: skipped: {exc}")
        if args.json:
            print(json.dumps({"skipped": str(exc)}))
        return 0
    except (ValueError, TypeError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"{prog}: error: {exc.name or exc} is needed: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    text = _report(args.command, result, settings)
    if args.json:
        print(text, file=sys.stderr)
        print(json.dumps(_final(result)))
    else:
        print(text)
    if folder is not None:
        try:
            log(f"wrote {_plot(args.command, result, folder)}")
        except ImportError as exc:
            print(f"{prog}: error: no plots: {exc.name or exc} is needed: pip install -e '.[bench]'",
                  file=sys.stderr)
            return 2
    return 0
