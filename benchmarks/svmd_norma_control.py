"""The SVMD benchmarks' control (SVMD's step with ``tau``) against the NORMA estimators with ``learning_rate="decay"``.

    python benchmarks/svmd_norma_control.py [N]     # N: only the first N rows of each stream

Single pass over the data and settings of ``learners-bench svmd-usps-binary``,
``svmd-usps-multiclass`` and ``svmd-novelty``; prints the average error (online
mistakes / rows; novelty: fraction flagged) of both and the fraction of rows on
which they disagree. docs/svmd.md ("The control") explains the differences.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from learners import NORMAClassifier, NORMAOneClass, SVMDClassifier, SVMDOneClass
from learners.bench import svmd as B


def main(n=0):
    X, y = B.load_usps()
    if n:
        X, y = X[:n], y[:n]
    c = 1.0 / (500 * len(y))
    yb = np.where(y >= 5, 1, -1)
    common = dict(width=B.USPS_WIDTH, budget=512, lam=c)
    runs = {  # name: labels, the control's SMD settings, shared settings, the NORMA loss
        "usps-binary": (yb, dict(nu=0.05, mu=1.0, decay=0.95), dict(common, eta0=1.0, tau=10.0),
                        dict(loss="nu", nu=0.05)),
        "usps-multiclass": (y, dict(mu=0.1, decay=0.99), dict(common, eta0=0.1, tau=100.0), dict(loss="hinge")),
        "usps-binary, fixed margin": (yb, dict(mu=1.0, decay=0.95), dict(common, eta0=1.0, tau=10.0),
                                      dict(loss="hinge")),
    }
    for name, (labels, smd, kw, loss) in runs.items():
        t0 = time.perf_counter()
        control = SVMDClassifier(fit_intercept=False, **smd, **kw).learn_stream(X, labels)
        t1 = time.perf_counter()
        norma = NORMAClassifier(width=kw["width"], budget=kw["budget"], eta=kw["eta0"], lam=kw["lam"],
                                learning_rate="decay", tau=kw["tau"], margin=1.0, fit_intercept=False, **loss)
        s = norma.partial_fit(X, labels, classes=np.unique(labels), return_scores=True)
        pred = norma.classes_[np.argmax(s, axis=1)] if s.ndim == 2 else norma.classes_[(s > 0).astype(np.intp)]
        t2 = time.perf_counter()
        print(f"{name} (n={len(labels)}): control {np.mean(control != labels):.4f} ({t1 - t0:.1f} s), "
              f"NORMA decay {np.mean(pred != labels):.4f} ({t2 - t1:.1f} s), "
              f"rows predicted differently {np.mean(control != pred):.4f}")

    Xc, _ = B.counting_sequence(*B.load_usps(both=True))
    if n:
        Xc = Xc[:n]
    kw = dict(width=B.USPS_WIDTH, budget=512, nu=0.05)
    t0 = time.perf_counter()
    control = SVMDOneClass(eta0=1.0, mu=1.0, decay=1.0, lam=1.0, tau=100.0, **kw).learn_stream(Xc) < 0
    t1 = time.perf_counter()
    occ = NORMAOneClass(eta=1.0, lam=0.999, learning_rate="decay", tau=100.0, **kw)  # NORMA needs eta * lam < 1
    flagged = np.empty(len(Xc), dtype=bool)
    for i, x in enumerate(Xc):
        rho = occ.rho_ if i else 0.0
        flagged[i] = occ.learn_one(x, return_score=True) < rho
    t2 = time.perf_counter()
    print(f"novelty (n={len(Xc)}): control flags {control.mean():.4f} ({t1 - t0:.1f} s), NORMA decay (lam=0.999) "
          f"flags {flagged.mean():.4f} ({t2 - t1:.1f} s), rows flagged differently {np.mean(control != flagged):.4f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    except B.DataMissing as exc:
        print(f"skipped: {exc}")
        sys.exit(0)
